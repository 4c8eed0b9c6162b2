//! `Client::lock` in the simulated world, as the real crate 0.11.2 behaves:
//! mutual exclusion under contention, the node deleted in the background
//! when a `LockClient` (or the contention) is dropped, its own node found
//! after a ConnectionLoss on its create, SessionExpired when the session
//! expires while waiting, RuntimeInconsistent once the node is gone.

use crate::{one_client, persistent, run_app, within, SEED};
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use zk_sim::async_recipe::{ApiRecipe, Bridge};
use zk_sim::faults::{Fault, FaultPlan, ScheduledFault, Trigger};
use zk_sim::world::{Simulation, WorldConfig};
use zkcheck_zookeeper_client::{Acls, Client, Error, LockOptions, LockPrefix};

/// The lock's directory; made by the lock's ancestor options.
const DIR: &str = "/app/locks";

fn options() -> LockOptions<'static> {
    LockOptions::new(Acls::anyone_all())
        .with_ancestor_options(persistent())
        .unwrap()
}

fn curator() -> LockPrefix<'static> {
    LockPrefix::new_curator(DIR, "lock-").unwrap()
}

fn clients(clients: usize) -> WorldConfig {
    WorldConfig {
        clients,
        ..WorldConfig::default()
    }
}

/// Client 0 with one fault at 1 s (its next request, for the losses).
fn faulted(clients: usize, fault: Fault) -> WorldConfig {
    WorldConfig {
        faults: FaultPlan::scheduled(vec![ScheduledFault {
            trigger: Trigger::AtMs(1_000.0),
            client: 0,
            fault,
        }]),
        ..self::clients(clients)
    }
}

/// Runs `app(index, out)` as every client's workload and returns what
/// they recorded.
fn run_each<T, F, Fut>(config: WorldConfig, app: F) -> T
where
    T: Default + Send + 'static,
    F: Fn(usize, Arc<Mutex<T>>) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = ()> + Send + 'static,
{
    let recorded = Arc::new(Mutex::new(T::default()));
    let out = recorded.clone();
    let app = Arc::new(app);
    let simulation = Simulation::new(
        config,
        |_, _| ApiRecipe::default(),
        move |client| {
            let (app, out) = (app.clone(), out.clone());
            async move {
                let index = client.index();
                let _bridge = Bridge::start(client);
                app(index, out).await;
            }
        },
    );
    simulation.run(SEED);
    let mut recorded = recorded.lock().unwrap();
    std::mem::take(&mut *recorded)
}

async fn sleep_ms(ms: u64) {
    madsim::time::sleep(Duration::from_millis(ms)).await;
}

/// The names under [`DIR`], sorted.
async fn lock_nodes(client: &Client) -> Vec<String> {
    let mut children = client.list_children(DIR).await.unwrap_or_default();
    children.sort();
    children
}

/// A Curator lock node's name: `_c_{v4 uuid}-lock-{ten digits}`.
fn is_curator_name(name: &str) -> bool {
    let Some(rest) = name.strip_prefix("_c_") else {
        return false;
    };
    let (uuid, tail) = rest.split_at(36.min(rest.len()));
    let groups: Vec<&str> = uuid.split('-').collect();
    let shaped = groups.iter().map(|g| g.len()).eq([8, 4, 4, 4, 12])
        && uuid.chars().all(|c| c == '-' || c.is_ascii_hexdigit())
        && groups[2].starts_with('4');
    let sequence = tail.strip_prefix("-lock-").unwrap_or("");
    shaped && sequence.len() == 10 && sequence.chars().all(|c| c.is_ascii_digit())
}

#[derive(Default, Debug)]
struct Contention {
    /// (client, "acquired" | "released"), in the order they happened.
    events: Vec<(usize, &'static str)>,
    holding: usize,
    overlaps: usize,
    paths: Vec<String>,
    /// The most lock nodes seen while holding (contenders waiting).
    most_nodes: usize,
    done: usize,
    left_at_end: Option<Vec<String>>,
}

#[test]
fn three_contenders_hold_the_lock_one_at_a_time() {
    let seen: Contention = run_each(
        clients(3),
        |index, out: Arc<Mutex<Contention>>| async move {
            let client = Client::connect("zk:2181").await.unwrap();
            for round in 0..2u8 {
                let lock = within(60_000, client.lock(curator(), &[round], options()))
                    .await
                    .expect("acquired in time")
                    .expect("acquired");
                let nodes = lock_nodes(&client).await.len();
                {
                    let mut out = out.lock().unwrap();
                    out.holding += 1;
                    out.overlaps += usize::from(out.holding > 1);
                    out.events.push((index, "acquired"));
                    out.paths.push(lock.lock_path().to_string());
                    out.most_nodes = out.most_nodes.max(nodes);
                }
                sleep_ms(50).await;
                let mut out_guard = out.lock().unwrap();
                out_guard.holding -= 1;
                out_guard.events.push((index, "released"));
                drop(out_guard);
                drop(lock);
            }
            let last = {
                let mut out = out.lock().unwrap();
                out.done += 1;
                out.done == 3
            };
            if last {
                sleep_ms(500).await;
                out.lock().unwrap().left_at_end = Some(lock_nodes(&client).await);
            }
        },
    );
    assert_eq!(seen.overlaps, 0, "{seen:?}");
    assert_eq!(seen.events.len(), 12, "{seen:?}");
    for pair in seen.events.chunks(2) {
        assert_eq!((pair[0].1, pair[1].1), ("acquired", "released"), "{seen:?}");
        assert_eq!(pair[0].0, pair[1].0, "{seen:?}");
    }
    assert!(seen.most_nodes >= 2, "no contender ever waited: {seen:?}");
    let mut paths = seen.paths.clone();
    paths.sort();
    paths.dedup();
    assert_eq!(paths.len(), 6, "{seen:?}");
    for path in &seen.paths {
        let name = path.strip_prefix(&format!("{DIR}/")).unwrap_or("");
        assert!(is_curator_name(name), "{path}");
    }
    assert_eq!(seen.left_at_end, Some(Vec::new()), "every node deleted");
}

#[derive(Default, Debug)]
struct Dropped {
    lock_client_gone: Option<bool>,
    owned_gone: Option<bool>,
    timed_out: Option<bool>,
    left: Option<Vec<String>>,
    held: Option<String>,
}

#[test]
fn dropping_a_lock_deletes_its_node_in_the_background() {
    let seen: Dropped = run_app(one_client(), |out: Arc<Mutex<Dropped>>| async move {
        let client = Client::connect("zk:2181").await.unwrap();
        let lock = client.lock(curator(), b"", options()).await.unwrap();
        let path = lock.lock_path().to_string();
        drop(lock);
        sleep_ms(100).await;
        let lock_client_gone = client.check_stat(&path).await.unwrap().is_none();
        let shared = LockPrefix::new_shared("/app/locks/n-").unwrap();
        let owned = client.lock(shared, b"", options()).await.unwrap();
        let owned = owned.into_owned();
        let owned_path = owned.lock_path().to_string();
        drop(owned);
        sleep_ms(100).await;
        let owned_gone = client.check_stat(&owned_path).await.unwrap().is_none();
        // A timed lock: the contention waits behind `held` and is dropped.
        let held = client.lock(curator(), b"", options()).await.unwrap();
        let timed_out = within(300, client.lock(curator(), b"", options()))
            .await
            .is_none();
        sleep_ms(100).await;
        let left = lock_nodes(&client).await;
        let mut out = out.lock().unwrap();
        out.lock_client_gone = Some(lock_client_gone);
        out.owned_gone = Some(owned_gone);
        out.timed_out = Some(timed_out);
        out.left = Some(left);
        out.held = Some(held.lock_path().to_string());
    });
    assert_eq!(seen.lock_client_gone, Some(true), "{seen:?}");
    assert_eq!(seen.owned_gone, Some(true), "{seen:?}");
    assert_eq!(seen.timed_out, Some(true), "{seen:?}");
    let held = seen.held.as_deref().unwrap_or("");
    let held_name = held.rsplit('/').next().unwrap_or("").to_string();
    assert_eq!(seen.left, Some(vec![held_name]), "{seen:?}");
}

#[derive(Default, Debug)]
struct AfterLoss {
    lock: Option<Result<String, Error>>,
    nodes: Vec<String>,
    owner_is_me: Option<bool>,
}

/// Client 0 takes a lock with `prefix` just after the fault armed at 1 s.
fn lock_after_fault(fault: Fault, prefix: fn() -> LockPrefix<'static>) -> AfterLoss {
    run_app(
        faulted(1, fault),
        move |out: Arc<Mutex<AfterLoss>>| async move {
            let client = Client::connect("zk:2181").await.unwrap();
            client.mkdir(DIR, &persistent()).await.unwrap();
            sleep_ms(1_100).await;
            let lock = within(30_000, client.lock(prefix(), b"mine", options()))
                .await
                .expect("the lock returns (no self-wait)");
            let path = lock.as_ref().map(|lock| lock.lock_path().to_string());
            let owner_is_me = match &path {
                Ok(path) => Some(
                    client.get_data(path).await.unwrap().1.ephemeral_owner == client.session_id().0,
                ),
                Err(_) => None,
            };
            let nodes = lock_nodes(&client).await;
            let mut out = out.lock().unwrap();
            out.lock = Some(path.map_err(|error| error.clone()));
            out.nodes = nodes;
            out.owner_is_me = owner_is_me;
        },
    )
}

#[test]
fn a_lock_whose_create_reply_was_lost_finds_its_own_node() {
    for fault in [
        Fault::LoseReply { down_ms: 2_000 },
        Fault::LoseRequest { down_ms: 2_000 },
    ] {
        let seen = lock_after_fault(fault.clone(), curator);
        let path = seen.lock.clone().expect("locked").expect("no error");
        let name = path.rsplit('/').next().unwrap_or("").to_string();
        assert!(is_curator_name(&name), "{fault:?}: {path}");
        assert_eq!(seen.nodes, vec![name], "{fault:?}: one node, no duplicate");
        assert_eq!(seen.owner_is_me, Some(true), "{fault:?}");
    }
}

/// As the real crate 0.11.2 (conformance `lock-custom-loss`): the node it
/// finds again by a multi-read is parsed against the bare prefix name, which
/// fails (the node is then deleted in the background: the conformance
/// sequence shows it gone a moment later).
#[test]
fn a_custom_lock_after_a_lost_reply_fails_as_the_crate_does() {
    let custom = || LockPrefix::new_custom(format!("{DIR}/x-me-"), "x-").unwrap();
    let seen = lock_after_fault(Fault::LoseReply { down_ms: 2_000 }, custom);
    let error = seen.lock.clone().expect("returned").unwrap_err();
    assert!(
        matches!(&error, Error::UnexpectedError(text) if text.contains("does not contain prefix path x-me-")),
        "{error:?}"
    );
}

#[derive(Default, Debug)]
struct ExpiredWaiter {
    waiter: Option<Result<(), Error>>,
    holder_still_held: Option<bool>,
    waiter_done: bool,
    nodes_after: Option<Vec<String>>,
}

#[test]
fn a_session_expiring_while_waiting_fails_the_lock_with_session_expired() {
    let config = faulted(2, Fault::Expire);
    let seen: ExpiredWaiter =
        run_each(config, |index, out: Arc<Mutex<ExpiredWaiter>>| async move {
            let client = Client::connect("zk:2181").await.unwrap();
            if index == 1 {
                let lock = client.lock(curator(), b"holder", options()).await.unwrap();
                while !out.lock().unwrap().waiter_done {
                    sleep_ms(50).await;
                }
                sleep_ms(500).await;
                let nodes = lock_nodes(&client).await;
                let held = client.check_stat(lock.lock_path()).await;
                let mut out = out.lock().unwrap();
                out.holder_still_held = Some(matches!(held, Ok(Some(_))));
                out.nodes_after = Some(nodes);
                return;
            }
            sleep_ms(200).await;
            let waited = within(60_000, client.lock(curator(), b"waiter", options())).await;
            let mut out = out.lock().unwrap();
            out.waiter = waited.map(|result| result.map(|_| ()));
            out.waiter_done = true;
        });
    assert_eq!(seen.waiter, Some(Err(Error::SessionExpired)), "{seen:?}");
    assert_eq!(seen.holder_still_held, Some(true), "{seen:?}");
    let nodes = seen.nodes_after.clone().unwrap_or_default();
    assert_eq!(nodes.len(), 1, "only the holder's node is left: {seen:?}");
}

#[derive(Default, Debug)]
struct Lost {
    guarded_before: Vec<Result<(), Error>>,
    guarded_after: Vec<Result<(), Error>>,
    created_after: Option<bool>,
    waiter: Option<Result<(), Error>>,
    left: Option<Vec<String>>,
}

#[test]
fn a_lock_node_deleted_behind_its_back_is_runtime_inconsistent() {
    let seen: Lost = run_app(one_client(), |out: Arc<Mutex<Lost>>| async move {
        let client = Client::connect("zk:2181").await.unwrap();
        let lock = client.lock(curator(), b"", options()).await.unwrap();
        let guarded_before = vec![
            lock.create("/app/g", b"", &persistent()).await.map(|_| ()),
            lock.set_data("/app/g", b"1", None).await.map(|_| ()),
        ];
        client.delete(lock.lock_path(), None).await.unwrap();
        let guarded_after = vec![
            lock.create("/app/h", b"", &persistent()).await.map(|_| ()),
            lock.set_data("/app/g", b"2", None).await.map(|_| ()),
            lock.delete("/app/g", None).await,
        ];
        let created_after = client.check_stat("/app/h").await.unwrap().is_some();
        drop(lock);
        // A waiter whose node is deleted while it waits.
        let held = client.lock(curator(), b"", options()).await.unwrap();
        let mut waiter = Box::pin(client.lock(curator(), b"", options()));
        assert!(within(200, &mut waiter).await.is_none(), "it waits");
        let held_name = held
            .lock_path()
            .rsplit('/')
            .next()
            .unwrap_or("")
            .to_string();
        for name in lock_nodes(&client).await {
            if name != held_name {
                client.delete(&format!("{DIR}/{name}"), None).await.unwrap();
            }
        }
        drop(held);
        let waited = within(5_000, waiter).await.map(|result| result.map(|_| ()));
        sleep_ms(100).await;
        let left = lock_nodes(&client).await;
        *out.lock().unwrap() = Lost {
            guarded_before,
            guarded_after,
            created_after: Some(created_after),
            waiter: waited,
            left: Some(left),
        };
    });
    assert_eq!(seen.guarded_before, vec![Ok(()), Ok(())], "{seen:?}");
    assert_eq!(
        seen.guarded_after,
        vec![Err(Error::RuntimeInconsistent); 3],
        "{seen:?}"
    );
    assert_eq!(seen.created_after, Some(false), "{seen:?}");
    assert_eq!(
        seen.waiter,
        Some(Err(Error::RuntimeInconsistent)),
        "{seen:?}"
    );
    assert_eq!(seen.left, Some(Vec::new()), "{seen:?}");
}

#[test]
fn curator_uuids_are_drawn_from_the_run_so_a_replay_names_nodes_alike() {
    let app = |out: Arc<Mutex<Vec<String>>>| async move {
        let client = Client::connect("zk:2181").await.unwrap();
        let first = client.lock(curator(), b"", options()).await.unwrap();
        let second = client.lock(curator(), b"", options());
        let second = within(200, second).await;
        assert!(second.is_none(), "the second waits behind the first");
        let names = lock_nodes(&client).await;
        drop(first);
        *out.lock().unwrap() = names;
    };
    let once: Vec<String> = run_app(one_client(), app);
    let again: Vec<String> = run_app(one_client(), app);
    assert_eq!(once.len(), 2, "{once:?}");
    assert!(once.iter().all(|name| is_curator_name(name)), "{once:?}");
    assert_ne!(once[0][..39], once[1][..39], "two contentions, two UUIDs");
    assert_eq!(once, again, "the same run names its nodes the same way");
}
