//! The simulated `zookeeper-client` API keeps the real crate's semantics:
//! each test runs application code in a simulated world (one madsim run per
//! test) and checks what the calls returned, passed out of the run.

#![cfg(madsim)]

mod lock_semantics;

use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use zk_recipes::zk::{CreateMode as ZkCreateMode, Path, Request};
use zk_sim::async_recipe::{ApiRecipe, Bridge};
use zk_sim::faults::{Fault, FaultPlan, ScheduledFault, Trigger};
use zk_sim::world::{Simulation, WorldConfig};
use zkcheck_zookeeper_client::{
    Acls, CheckWriteError, Client, CreateMode, Error, EventType, MultiWriteError, MultiWriteResult,
    SessionState,
};

const SEED: u64 = 7;

fn one_client() -> WorldConfig {
    WorldConfig {
        clients: 1,
        ..WorldConfig::default()
    }
}

/// Runs `app` as client 0's workload, over the simulated client crate, and
/// returns what it recorded.
fn run_app<T, F, Fut>(config: WorldConfig, app: F) -> T
where
    T: Default + Send + 'static,
    F: Fn(Arc<Mutex<T>>) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = ()> + Send + 'static,
{
    let recorded = Arc::new(Mutex::new(T::default()));
    let out = recorded.clone();
    let app = Arc::new(app);
    let simulation = Simulation::new(
        config,
        |_, _| ApiRecipe::default(),
        move |client| {
            let app = app.clone();
            let out = out.clone();
            async move {
                let _bridge = Bridge::start(client);
                app(out).await;
            }
        },
    );
    simulation.run(SEED);
    let mut recorded = recorded.lock().unwrap();
    std::mem::take(&mut *recorded)
}

fn persistent() -> zkcheck_zookeeper_client::CreateOptions<'static> {
    CreateMode::Persistent.with_acls(Acls::anyone_all())
}

async fn within<T>(ms: u64, future: impl Future<Output = T>) -> Option<T> {
    madsim::time::timeout(Duration::from_millis(ms), future)
        .await
        .ok()
}

#[test]
fn requests_are_ordered_at_the_call_not_at_the_poll() {
    type Seen = Option<(Result<(), Error>, Result<(), Error>, Vec<u8>)>;
    let seen: Seen = run_app(one_client(), |out: Arc<Mutex<Seen>>| async move {
        let client = Client::connect("zk:2181").await.unwrap();
        let options = persistent();
        let first = client.create("/order", b"first", &options);
        let second = client.create("/order", b"second", &options);
        // The second is awaited first: the first was still applied first.
        let second = second.await.map(|_| ());
        let first = first.await.map(|_| ());
        let (data, _) = client.get_data("/order").await.unwrap();
        *out.lock().unwrap() = Some((first, second, data));
    });
    let (first, second, data) = seen.expect("the app ran");
    assert_eq!(first, Ok(()));
    assert_eq!(second, Err(Error::NodeExists));
    assert_eq!(data, b"first");
}

#[test]
fn oneshot_watchers_see_node_events() {
    let events: Vec<(EventType, SessionState, String)> =
        run_app(one_client(), |out: Arc<Mutex<Vec<_>>>| async move {
            let client = Client::connect("zk:2181").await.unwrap();
            client.create("/w", b"0", &persistent()).await.unwrap();
            let (data, stat, data_watcher) = client.get_and_watch_data("/w").await.unwrap();
            assert_eq!((data.as_slice(), stat.version), (&b"0"[..], 0));
            let (children, child_watcher) = client.list_and_watch_children("/w").await.unwrap();
            assert!(children.is_empty());
            client.set_data("/w", b"1", Some(0)).await.unwrap();
            client.create("/w/c", b"", &persistent()).await.unwrap();
            for watcher in [data_watcher, child_watcher] {
                let event = within(5_000, watcher.changed()).await.expect("an event");
                out.lock()
                    .unwrap()
                    .push((event.event_type, event.session_state, event.path));
            }
        });
    assert_eq!(
        events,
        vec![
            (
                EventType::NodeDataChanged,
                SessionState::SyncConnected,
                "/w".to_string()
            ),
            (
                EventType::NodeChildrenChanged,
                SessionState::SyncConnected,
                "/w".to_string()
            ),
        ]
    );
}

#[test]
fn check_and_watch_stat_on_a_missing_node_fires_node_created() {
    type Seen = Option<(bool, EventType, String)>;
    let seen: Seen = run_app(one_client(), |out: Arc<Mutex<Seen>>| async move {
        let client = Client::connect("zk:2181").await.unwrap();
        let (stat, watcher) = client.check_and_watch_stat("/later").await.unwrap();
        client.create("/later", b"", &persistent()).await.unwrap();
        let event = within(5_000, watcher.changed()).await.expect("an event");
        *out.lock().unwrap() = Some((stat.is_none(), event.event_type, event.path));
    });
    assert_eq!(
        seen,
        Some((true, EventType::NodeCreated, "/later".to_string()))
    );
}

#[derive(Default, Debug)]
struct AfterExpiry {
    states: Vec<SessionState>,
    watcher_event: Option<(EventType, SessionState)>,
    request: Option<Result<(), Error>>,
    state: Option<SessionState>,
    changed_after_terminal: Option<bool>,
    old_and_new_session: Option<(i64, i64)>,
    new_session_reads: Option<Result<(), Error>>,
}

#[test]
fn after_an_expiry_requests_fail_watchers_hear_it_and_connect_gets_a_new_session() {
    let mut config = one_client();
    config.faults = FaultPlan::scheduled(vec![ScheduledFault {
        trigger: Trigger::AtMs(1_000.0),
        client: 0,
        fault: Fault::Expire,
    }]);
    let seen: AfterExpiry = run_app(config, |out: Arc<Mutex<AfterExpiry>>| async move {
        let client = Client::connect("zk:2181").await.unwrap();
        client.create("/e", b"", &persistent()).await.unwrap();
        let (_, _, watcher) = client.get_and_watch_data("/e").await.unwrap();
        let mut states = client.state_watcher();
        let mut seen_states = Vec::new();
        while let Some(state) = within(20_000, states.changed()).await {
            seen_states.push(state);
            if state.is_terminated() {
                break;
            }
        }
        let event = within(5_000, watcher.changed()).await;
        let request = client.get_data("/e").await.map(|_| ());
        let changed_after_terminal = within(2_000, states.changed()).await.is_some();
        let fresh = Client::connect("zk:2181").await.unwrap();
        let new_session_reads = fresh.get_data("/e").await.map(|_| ());
        let mut out = out.lock().unwrap();
        out.states = seen_states;
        out.watcher_event = event.map(|event| (event.event_type, event.session_state));
        out.request = Some(request);
        out.state = Some(client.state());
        out.changed_after_terminal = Some(changed_after_terminal);
        out.old_and_new_session = Some((client.session_id().0, fresh.session_id().0));
        out.new_session_reads = Some(new_session_reads);
    });
    assert_eq!(seen.states.last(), Some(&SessionState::Expired), "{seen:?}");
    assert_eq!(
        seen.watcher_event,
        Some((EventType::Session, SessionState::Expired)),
        "{seen:?}"
    );
    assert_eq!(seen.request, Some(Err(Error::SessionExpired)));
    assert_eq!(seen.state, Some(SessionState::Expired));
    assert_eq!(
        seen.changed_after_terminal,
        Some(false),
        "pends after a terminal state"
    );
    let (old, new) = seen.old_and_new_session.expect("reconnected");
    assert_ne!(old, new);
    assert_eq!(seen.new_session_reads, Some(Ok(())));
}

#[test]
fn errors_have_the_real_crates_kinds() {
    let errors: Vec<(&'static str, Result<(), Error>)> =
        run_app(one_client(), |out: Arc<Mutex<Vec<_>>>| async move {
            let client = Client::connect("zk:2181").await.unwrap();
            let options = persistent();
            let ephemeral = CreateMode::Ephemeral.with_acls(Acls::anyone_all());
            client.create("/p", b"", &options).await.unwrap();
            client.create("/p/c", b"", &options).await.unwrap();
            client.create("/eph", b"", &ephemeral).await.unwrap();
            let results = vec![
                ("no node", client.get_data("/missing").await.map(|_| ())),
                (
                    "node exists",
                    client.create("/p", b"", &options).await.map(|_| ()),
                ),
                (
                    "bad version",
                    client.set_data("/p", b"", Some(9)).await.map(|_| ()),
                ),
                ("not empty", client.delete("/p", None).await),
                (
                    "ephemeral parent",
                    client.create("/eph/c", b"", &options).await.map(|_| ()),
                ),
                ("relative", client.get_data("p").await.map(|_| ())),
                ("trailing slash", client.get_data("/p/").await.map(|_| ())),
                ("empty", client.check_stat("").await.map(|_| ())),
                ("root delete", client.delete("/", None).await),
                (
                    "ttl on ephemeral",
                    client
                        .create(
                            "/t",
                            b"",
                            &ephemeral.clone().with_ttl(Duration::from_secs(1)),
                        )
                        .await
                        .map(|_| ()),
                ),
                (
                    "empty acls",
                    client
                        .create("/t", b"", &CreateMode::Persistent.with_acls(Acls::new(&[])))
                        .await
                        .map(|_| ()),
                ),
                ("deleted", client.delete("/p/c", Some(0)).await),
            ];
            *out.lock().unwrap() = results;
        });
    let expected = [
        ("no node", Err(Error::NoNode)),
        ("node exists", Err(Error::NodeExists)),
        ("bad version", Err(Error::BadVersion)),
        ("not empty", Err(Error::NotEmpty)),
        ("ephemeral parent", Err(Error::NoChildrenForEphemerals)),
        (
            "relative",
            Err(Error::BadArguments(&"path must start with '/'")),
        ),
        (
            "trailing slash",
            Err(Error::BadArguments(&"path must not end with '/'")),
        ),
        ("empty", Err(Error::BadArguments(&"path cannot be empty"))),
        (
            "root delete",
            Err(Error::BadArguments(&"can not delete root node")),
        ),
        (
            "ttl on ephemeral",
            Err(Error::BadArguments(
                &"ttl can only be specified with persistent node",
            )),
        ),
        ("empty acls", Err(Error::InvalidAcl)),
        ("deleted", Ok(())),
    ];
    assert_eq!(errors, expected);
}

#[test]
fn sequential_creates_report_their_sequence_and_other_modes_minus_one() {
    let mut config = one_client();
    config.setup = vec![Request::Create {
        path: Path::new("/big").unwrap(),
        data: Vec::new(),
        mode: ZkCreateMode::Persistent,
        acl: zk_recipes::zk::Acls::Open,
    }];
    config.sequence_starts = vec![(Path::new("/big").unwrap(), i32::MAX - 1)];
    let seen: Vec<String> = run_app(config, |out: Arc<Mutex<Vec<String>>>| async move {
        let client = Client::connect("zk:2181").await.unwrap();
        let sequential = CreateMode::PersistentSequential.with_acls(Acls::anyone_all());
        let ttl = persistent().with_ttl(Duration::from_secs(60));
        let container = CreateMode::Container.with_acls(Acls::anyone_all());
        client.create("/q", b"", &persistent()).await.unwrap();
        let mut seen = Vec::new();
        for path in ["/q/n-", "/q/n-", "/q/", "/big/n-"] {
            let (_, sequence) = client.create(path, b"", &sequential).await.unwrap();
            let created = format!("{path}{sequence}");
            let exists = client.check_stat(&created).await.unwrap().is_some();
            seen.push(format!("{created} {} {exists}", sequence.into_i64()));
        }
        let (_, sequence) = client.create("/ttl", b"", &ttl).await.unwrap();
        seen.push(format!("ttl {}", sequence.into_i64()));
        let (_, sequence) = client.create("/container", b"", &container).await.unwrap();
        seen.push(format!("container {}", sequence.into_i64()));
        *out.lock().unwrap() = seen;
    });
    assert_eq!(
        seen,
        [
            "/q/n-0000000000 0 true",
            "/q/n-0000000001 1 true",
            "/q/0000000002 2 true",
            "/big/n-2147483646 2147483646 true",
            "ttl -1",
            "container -1",
        ]
    );
}

#[derive(Default, Debug)]
struct Chrooted {
    path: String,
    bad_chroot_kept: Option<String>,
    from_root: Vec<String>,
    children: Vec<String>,
    sequence: Option<i64>,
    event_path: Option<String>,
    multi_created: Option<String>,
    connect_string_root: Option<String>,
}

#[test]
fn a_chrooted_client_works_under_its_root_and_strips_it() {
    let seen: Chrooted = run_app(one_client(), |out: Arc<Mutex<Chrooted>>| async move {
        let client = Client::connect("zk:2181").await.unwrap();
        client.mkdir("/app/sub", &persistent()).await.unwrap();
        let bad = client.clone().chroot("relative").unwrap_err();
        let app = client.clone().chroot("/app").unwrap();
        app.create("/x", b"", &persistent()).await.unwrap();
        let sequential = CreateMode::EphemeralSequential.with_acls(Acls::anyone_all());
        let (_, sequence) = app.create("/sub/s-", b"", &sequential).await.unwrap();
        let (_, watcher) = app.check_and_watch_stat("/x").await.unwrap();
        app.set_data("/x", b"1", None).await.unwrap();
        let event = within(5_000, watcher.changed()).await;
        let mut writer = app.new_multi_writer();
        writer.add_create("/y", b"", &persistent()).unwrap();
        let results = writer.commit().await.unwrap();
        let from_root = client.list_children("/app").await.unwrap();
        let children = app.list_children("/").await.unwrap();
        let by_string = Client::connect("zk:2181/app").await;
        let mut out = out.lock().unwrap();
        out.path = app.path().to_string();
        out.bad_chroot_kept = Some(bad.path().to_string());
        out.from_root = from_root;
        out.children = children;
        out.sequence = Some(sequence.into_i64());
        out.event_path = event.map(|event| event.path);
        out.multi_created = match results.first() {
            Some(MultiWriteResult::Create { path, .. }) => Some(path.clone()),
            _ => None,
        };
        // A second live handle of the one simulated session is refused; a
        // chroot suffix is read before that.
        out.connect_string_root = Some(match by_string {
            Ok(client) => client.path().to_string(),
            Err(error) => error.to_string(),
        });
    });
    assert_eq!(seen.path, "/app");
    assert_eq!(seen.bad_chroot_kept.as_deref(), Some("/"));
    let mut from_root = seen.from_root.clone();
    from_root.sort();
    assert_eq!(from_root, ["sub", "x", "y"]);
    let mut children = seen.children.clone();
    children.sort();
    assert_eq!(children, ["sub", "x", "y"]);
    assert_eq!(seen.sequence, Some(0));
    assert_eq!(seen.event_path.as_deref(), Some("/x"));
    assert_eq!(seen.multi_created.as_deref(), Some("/y"));
    let connect_error = seen.connect_string_root.unwrap();
    assert!(connect_error.contains("second session"), "{connect_error}");
}

#[derive(Default, Debug)]
struct Multis {
    failed: Option<Result<Vec<MultiWriteResult>, MultiWriteError>>,
    first_op_applied: Option<bool>,
    succeeded: Option<Result<usize, MultiWriteError>>,
    check_failed: Option<Result<Vec<MultiWriteResult>, CheckWriteError>>,
    check_passed: Option<Result<usize, CheckWriteError>>,
    empty: Option<usize>,
}

#[test]
fn a_multi_reports_the_index_of_its_failing_op_and_applies_nothing() {
    let seen: Multis = run_app(one_client(), |out: Arc<Mutex<Multis>>| async move {
        let client = Client::connect("zk:2181").await.unwrap();
        client.create("/m", b"", &persistent()).await.unwrap();
        let mut writer = client.new_multi_writer();
        writer.add_create("/m/a", b"", &persistent()).unwrap();
        writer.add_set_data("/m/missing", b"", None).unwrap();
        writer.add_delete("/m", None).unwrap();
        let failed = writer.commit().await;
        let first_op_applied = client.check_stat("/m/a").await.unwrap().is_some();
        writer.add_create("/m/a", b"", &persistent()).unwrap();
        writer.add_check_version("/m/a", 0).unwrap();
        writer.add_set_data("/m/a", b"1", Some(0)).unwrap();
        let succeeded = writer.commit().await.map(|results| results.len());
        let empty = writer.commit().await.unwrap().len();
        let mut check = client.new_check_writer("/m", Some(5)).unwrap();
        check.add_delete("/m/a", None).unwrap();
        let check_failed = check.commit().await;
        let mut check = client.new_check_writer("/m", None).unwrap();
        check.add_delete("/m/a", None).unwrap();
        let check_passed = check.commit().await.map(|results| results.len());
        *out.lock().unwrap() = Multis {
            failed: Some(failed),
            first_op_applied: Some(first_op_applied),
            succeeded: Some(succeeded),
            check_failed: Some(check_failed),
            check_passed: Some(check_passed),
            empty: Some(empty),
        };
    });
    assert_eq!(
        seen.failed,
        Some(Err(MultiWriteError::OperationFailed {
            index: 1,
            source: Error::NoNode
        }))
    );
    assert_eq!(seen.first_op_applied, Some(false));
    assert_eq!(seen.succeeded, Some(Ok(3)));
    assert_eq!(seen.empty, Some(0));
    assert_eq!(
        seen.check_failed,
        Some(Err(CheckWriteError::CheckFailed {
            source: Error::BadVersion
        }))
    );
    assert_eq!(seen.check_passed, Some(Ok(1)));
}

#[test]
fn an_uncovered_call_fails_naming_it() {
    let errors: Vec<String> = run_app(one_client(), |out: Arc<Mutex<Vec<String>>>| async move {
        let client = Client::connect("zk:2181").await.unwrap();
        let errors = vec![
            client.auth("sasl", b"user").await.unwrap_err().to_string(),
            client.auth("x509", b"").await.unwrap_err().to_string(),
        ];
        *out.lock().unwrap() = errors;
    });
    assert_eq!(errors.len(), 2);
    for (error, scheme) in errors.iter().zip(["sasl", "x509"]) {
        assert!(
            error.contains("does not cover `auth` with scheme") && error.contains(scheme),
            "{error}"
        );
    }
}

/// What an authenticated client saw across a lost addAuth.
#[derive(Debug, Default)]
struct AuthAcrossLoss {
    auth: Option<Result<(), Error>>,
    create: Option<Result<(), Error>>,
    users: Vec<String>,
}

/// As zookeeper-client: an addAuth whose request a dropped connection
/// lost is not failed but sent again, first, on the next connection, so
/// what follows it runs authenticated.
#[test]
fn an_auth_lost_with_its_connection_is_sent_again_first() {
    let mut config = one_client();
    config.faults = FaultPlan::scheduled(vec![ScheduledFault {
        trigger: Trigger::AtMs(1_000.0),
        client: 0,
        fault: Fault::LoseRequest { down_ms: 500 },
    }]);
    let seen: AuthAcrossLoss = run_app(config, |out: Arc<Mutex<AuthAcrossLoss>>| async move {
        let client = Client::connect("zk:2181").await.unwrap();
        madsim::time::sleep(Duration::from_millis(1_001)).await;
        let auth = client.auth("digest", b"alice:secret");
        let creator = CreateMode::Persistent.with_acls(Acls::creator_all());
        let create = client.create("/mine", b"", &creator);
        // Both are sent at the call (before either is awaited).
        let (auth, create) = (auth.await, create.await);
        let users = client.list_auth_users().await.unwrap_or_default();
        let mut out = out.lock().unwrap();
        out.auth = Some(auth);
        out.create = Some(create.map(|_| ()));
        out.users = users
            .iter()
            .map(|user| format!("{}:{}", user.scheme(), user.user()))
            .collect();
    });
    assert_eq!(seen.auth, Some(Ok(())), "{seen:?}");
    // The create was queued behind the lost addAuth: it failed with the
    // connection (the crate fails what was written), the auth did not.
    assert_eq!(seen.create, Some(Err(Error::ConnectionLoss)), "{seen:?}");
    assert_eq!(seen.users, ["digest:alice", "ip:127.0.0.1"], "{seen:?}");
}

/// The connector's identities are the session's from its first request.
#[test]
fn a_connector_s_auth_is_sent_first() {
    let seen: Vec<String> = run_app(one_client(), |out: Arc<Mutex<Vec<String>>>| async move {
        let client = Client::connector()
            .with_auth("digest", b"alice:secret")
            .connect("zk:2181")
            .await
            .unwrap();
        let creator = CreateMode::Persistent.with_acls(Acls::creator_all());
        let created = client.create("/mine", b"", &creator).await.map(|_| ());
        let users = client.list_auth_users().await.unwrap_or_default();
        let refused = Client::connector()
            .with_auth("sasl", b"alice")
            .connect("zk:2181")
            .await
            .map(|_| ())
            .unwrap_err();
        let mut out = out.lock().unwrap();
        out.push(format!("{created:?}"));
        out.extend(users.iter().map(|u| format!("{}:{}", u.scheme(), u.user())));
        out.push(refused.to_string());
    });
    assert_eq!(
        seen[..3],
        ["Ok(())", "digest:alice", "ip:127.0.0.1"],
        "{seen:?}"
    );
    assert!(
        seen[3].contains("`with_auth` with scheme `sasl`"),
        "{seen:?}"
    );
}

#[test]
fn connect_fails_clearly_outside_a_simulated_client() {
    let error: Option<String> = {
        let recorded = Arc::new(Mutex::new(None));
        let out = recorded.clone();
        let simulation = Simulation::new(
            one_client(),
            |_, _| ApiRecipe::default(),
            move |_client| {
                let out = out.clone();
                async move {
                    // No bridge started on this node.
                    let result = Client::connect("zk:2181").await;
                    *out.lock().unwrap() = result.err().map(|error| error.to_string());
                }
            },
        );
        simulation.run(SEED);
        let error = recorded.lock().unwrap().take();
        error
    };
    let error = error.expect("connect failed");
    assert!(
        error.contains("only inside zkcheck's simulation"),
        "{error}"
    );
}
