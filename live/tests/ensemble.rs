//! Conformance against a real ZooKeeper 3.8 ensemble of three servers on
//! loopback: what a client sees when it talks to more than one server.
//!
//! - A session moves between servers: its connection cut, then its server
//!   stopped, it reconnects through another member with the same session id
//!   (the server's `cons` lists it there) and still has its ephemerals and
//!   its watches (re-registered with SetWatches); and a second client resumes
//!   it elsewhere with its id and password.
//! - `sync` then read, through another server than the write's, sees it.
//! - Expiry observed from another server: a session whose server was stopped
//!   expires at the leader, and a session on another member sees its
//!   ephemerals go; a session closed through another server likewise.
//! - A client that saw a newer zxid than a server has is refused by it
//!   ("client must try another server"), and accepted into its session once
//!   that server rejoined and caught up.
//!
//! What cannot be forced, and so is not tested: a follower *in the quorum*
//! that lags behind the client. A follower acknowledges a proposal before it
//! applies the commit, so a client that wrote through the leader and
//! reconnects to a follower at once may meet a follower that has not
//! applied its write yet, and be refused; but whether the follower is still
//! behind when the connect request arrives is a race between two threads of
//! another process, so no test can make it happen on demand (freezing the
//! follower with SIGSTOP only moves the race to SIGCONT, and a restarted
//! member syncs with the leader before it serves a client at all). Nor the
//! in-ensemble way to a serving, lagging server: a member cut off from the
//! quorum serving read-only (`readonlymode.enabled`). ZooKeeper 3.8.0's
//! read-only server answers a new session with NOTREADONLY unless
//! `localSessionsEnabled=true`, which would change the session semantics
//! the other tests here check. What can be forced is the server's check
//! itself: a copy of a member's data from before a write, served alone
//! (`scripts/zk-server start-member --alone`), refuses the client whose
//! last zxid is that write's, exactly as a lagging follower would (the
//! check, in `ZooKeeperServer.processConnectRequest`, is the same for every
//! kind of server); the member itself, restarted, catches up and accepts it.
//!
//! Every wait polls what a server or a client reports, with a deadline.
//!
//! Run: `scripts/zk-server start --ensemble 3`, then
//! `cargo test -p zk-live --test ensemble -- --ignored` (the tests take the
//! ensemble one at a time; `ZK_ENSEMBLE_ADDRS` overrides
//! 127.0.0.1:2191,127.0.0.1:2192,127.0.0.1:2193), then
//! `scripts/zk-server stop --ensemble 3`. Without `--ignored` the tests are
//! ignored; with it and no ensemble they fail saying so.

mod ensemble_support;

use ensemble_support::*;
use std::time::Duration;
use zk_live::admin;
use zk_live::proxy::{FaultProxy, Hole};
use zkc::{EventType, SessionState};
use zookeeper_client as zkc;

/// Long enough that no session here expires unless a test means it to.
const LONG: Duration = Duration::from_secs(30);
/// How long a notification or a reconnect may take.
const PROMPTLY: Duration = Duration::from_secs(15);

#[test]
#[ignore = "needs a ZooKeeper ensemble: scripts/zk-server start --ensemble 3; cargo test -p zk-live --test ensemble -- --ignored"]
fn a_session_moves_between_servers_with_its_ephemerals_and_watches() {
    let ensemble = Ensemble::whole();
    let [a, b, c] = [0, 1, 2];
    let (addr_a, addr_b, addr_c) = (&ensemble.addrs[a], &ensemble.addrs[b], &ensemble.addrs[c]);
    runtime().block_on(async {
        let root = fresh_root("move");
        let observer = connect(&ensemble.addrs[a], LONG).await;
        observer.create(&root, b"", &persistent()).await.unwrap();

        // The moving client knows one address, the proxy's; the proxy
        // decides which member it reaches.
        let proxy = FaultProxy::start(addr_a).await.unwrap();
        let mover = connect(&proxy.addr().to_string(), LONG).await;
        let id = mover.session_id().0;
        let eph = format!("{root}/e");
        mover.create(&eph, b"mine", &ephemeral()).await.unwrap();
        mover
            .create(&format!("{root}/w"), b"", &persistent())
            .await
            .unwrap();
        let (_, _, data_watch) = mover
            .get_and_watch_data(&format!("{root}/w"))
            .await
            .unwrap();
        let (_, created_watch) = mover
            .check_and_watch_stat(&format!("{root}/later"))
            .await
            .unwrap();
        let (_, children_watch) = mover.list_and_watch_children(&root).await.unwrap();
        assert!(
            admin::has_connection_for(addr_a, id).unwrap(),
            "the session starts on {addr_a}"
        );

        // 1. Its connection is cut; it reconnects to B into the same session.
        proxy.redirect(addr_b);
        proxy.cut_all();
        await_connection_on(&mover, addr_b, id).await;
        let observer_c = connect(addr_c, LONG).await;
        assert_owned_by(&observer_c, &eph, id).await;
        // Its watches came along: changes made through C fire them.
        observer_c
            .set_data(&format!("{root}/w"), b"1", None)
            .await
            .unwrap();
        let event = fired(data_watch, "the data watch after moving to B", PROMPTLY).await;
        assert_eq!(event.event_type, EventType::NodeDataChanged);
        observer_c
            .create(&format!("{root}/later"), b"", &persistent())
            .await
            .unwrap();
        let event = fired(
            created_watch,
            "the exists watch after moving to B",
            PROMPTLY,
        )
        .await;
        assert_eq!(event.event_type, EventType::NodeCreated);

        // 2. Its server (B) stops; it reconnects to C, still the same session.
        proxy.redirect(addr_c);
        ensemble.stop_member(b);
        await_connection_on(&mover, addr_c, id).await;
        assert_owned_by(&observer_c, &eph, id).await;
        observer_c
            .create(&format!("{root}/x"), b"", &persistent())
            .await
            .unwrap();
        let event = fired(
            children_watch,
            "the child watch after moving to C",
            PROMPTLY,
        )
        .await;
        assert_eq!(event.event_type, EventType::NodeChildrenChanged);
        // And it still writes as itself.
        let (stat, _) = mover
            .create(&format!("{root}/e2"), b"", &ephemeral())
            .await
            .unwrap();
        assert_eq!(stat.ephemeral_owner, id);
    });
    ensemble.start_member(b);
    ensemble.await_quorum();
}

#[test]
#[ignore = "needs a ZooKeeper ensemble: scripts/zk-server start --ensemble 3; cargo test -p zk-live --test ensemble -- --ignored"]
fn a_session_resumed_elsewhere_by_id_and_password_keeps_its_ephemerals_until_closed() {
    let ensemble = Ensemble::whole();
    let (addr_a, addr_b, addr_c) = (&ensemble.addrs[0], &ensemble.addrs[1], &ensemble.addrs[2]);
    runtime().block_on(async {
        let root = fresh_root("resume");
        let observer = connect(addr_c, LONG).await;
        observer.create(&root, b"", &persistent()).await.unwrap();

        let proxy = FaultProxy::start(addr_a).await.unwrap();
        let original = connect(&proxy.addr().to_string(), LONG).await;
        let id = original.session_id().0;
        let eph = format!("{root}/e");
        original.create(&eph, b"", &ephemeral()).await.unwrap();
        // The original client is cut off from every server (and cannot
        // close the session when it is dropped).
        proxy.black_hole(Hole::Both);

        let resumed = zkc::Client::connector()
            .with_session(original.session().clone())
            .with_session_timeout(LONG)
            .with_fail_eagerly()
            .connect(addr_b)
            .await
            .unwrap_or_else(|error| panic!("resuming session 0x{id:x} at {addr_b}: {error}"));
        assert_eq!(
            resumed.session_id().0,
            id,
            "the same session, not a new one"
        );
        assert!(admin::has_connection_for(addr_b, id).unwrap());
        assert_owned_by(&observer, &eph, id).await;
        let (stat, _) = resumed
            .create(&format!("{root}/e2"), b"", &ephemeral())
            .await
            .unwrap();
        assert_eq!(stat.ephemeral_owner, id);

        // Closed through B: the observer on C sees the ephemerals go.
        let (_, gone) = observer.check_and_watch_stat(&eph).await.unwrap();
        let mut closing = resumed.state_watcher();
        drop(resumed);
        let closed = tokio::time::timeout(PROMPTLY, async {
            loop {
                let state = closing.changed().await;
                if state.is_terminated() {
                    return state;
                }
            }
        })
        .await
        .expect("the server confirms the close");
        assert_eq!(closed, SessionState::Closed);
        let event = fired(
            gone,
            "the ephemeral's watch on C after the close through B",
            PROMPTLY,
        )
        .await;
        assert_eq!(event.event_type, EventType::NodeDeleted);
        assert_eq!(
            observer.list_children(&root).await.unwrap(),
            Vec::<String>::new()
        );
        drop(original);
    });
}

#[test]
#[ignore = "needs a ZooKeeper ensemble: scripts/zk-server start --ensemble 3; cargo test -p zk-live --test ensemble -- --ignored"]
fn sync_then_read_through_another_server_sees_the_write() {
    let ensemble = Ensemble::whole();
    runtime().block_on(async {
        let root = fresh_root("sync");
        let mut clients = Vec::new();
        for addr in &ensemble.addrs {
            clients.push(connect(addr, LONG).await);
        }
        clients[0].create(&root, b"", &persistent()).await.unwrap();
        let node = format!("{root}/n");
        clients[0].create(&node, b"", &persistent()).await.unwrap();
        // Every ordered pair of members, many times: write through one,
        // sync and read through the other.
        let mut round = 0;
        for _ in 0..20 {
            for writer in 0..clients.len() {
                for reader in (0..clients.len()).filter(|&r| r != writer) {
                    round += 1;
                    let value = round.to_string();
                    let written = clients[writer]
                        .set_data(&node, value.as_bytes(), None)
                        .await
                        .unwrap();
                    clients[reader].sync(&node).await.unwrap();
                    let (data, stat) = clients[reader].get_data(&node).await.unwrap();
                    assert_eq!(
                        (String::from_utf8_lossy(&data).to_string(), stat.mzxid),
                        (value, written.mzxid),
                        "round {round}: written through {}, synced and read through {}",
                        ensemble.addrs[writer],
                        ensemble.addrs[reader]
                    );
                }
            }
        }
    });
}

#[test]
#[ignore = "needs a ZooKeeper ensemble: scripts/zk-server start --ensemble 3; cargo test -p zk-live --test ensemble -- --ignored"]
fn a_session_whose_server_stopped_expires_and_another_server_sees_its_ephemerals_go() {
    let ensemble = Ensemble::whole();
    // A follower, so that stopping it leaves the leader (which expires
    // sessions) in place.
    let doomed_at = ensemble.followers()[0];
    let watcher_at = (0..ensemble.size()).find(|&m| m != doomed_at).unwrap();
    let leader = ensemble.leader();
    let timeout = Duration::from_millis(2_000);
    runtime().block_on(async {
        let root = fresh_root("expiry");
        let observer = connect(&ensemble.addrs[watcher_at], LONG).await;
        observer.create(&root, b"", &persistent()).await.unwrap();

        let doomed = connect(&ensemble.addrs[doomed_at], timeout).await;
        let id = doomed.session_id().0;
        let eph = format!("{root}/e");
        doomed.create(&eph, b"", &ephemeral()).await.unwrap();
        let seq = zkc::CreateMode::EphemeralSequential.with_acls(zkc::Acls::anyone_all());
        doomed
            .create(&format!("{root}/lock-"), b"", &seq)
            .await
            .unwrap();
        let (_, gone) = observer.check_and_watch_stat(&eph).await.unwrap();
        let (_, children) = observer.list_and_watch_children(&root).await.unwrap();

        // Its only server stops: nothing hears from the session any more.
        ensemble.stop_member(doomed_at);
        let within = timeout + PROMPTLY;
        let event = fired(gone, "the watch on the expired session's ephemeral", within).await;
        assert_eq!(event.event_type, EventType::NodeDeleted);
        let event = fired(
            children,
            "the child watch on the expired session's lock node",
            within,
        )
        .await;
        assert_eq!(event.event_type, EventType::NodeChildrenChanged);
        // The server's views: no node left, the leader no longer tracks it.
        poll("the expired session's nodes gone", PROMPTLY, || async {
            let left = observer
                .list_children(&root)
                .await
                .map_err(|e| e.to_string())?;
            left.is_empty()
                .then_some(())
                .ok_or(format!("children {left:?}"))
        })
        .await;
        assert!(!admin::tracks_session(&ensemble.addrs[leader], id).unwrap());
        // Nobody can resume it.
        let resumed = zkc::Client::connector()
            .with_session(doomed.session().clone())
            .with_fail_eagerly()
            .connect(&ensemble.addrs[watcher_at])
            .await;
        assert!(
            matches!(resumed, Err(zkc::Error::SessionExpired)),
            "resuming the expired session: {resumed:?}"
        );
    });
    ensemble.start_member(doomed_at);
    ensemble.await_quorum();
}

#[test]
#[ignore = "needs a ZooKeeper ensemble: scripts/zk-server start --ensemble 3; cargo test -p zk-live --test ensemble -- --ignored"]
fn a_client_that_saw_a_newer_zxid_is_refused_by_a_server_behind_it_until_it_caught_up() {
    let ensemble = Ensemble::whole();
    let [x, z] = [0, 2];
    let (addr_x, addr_z) = (ensemble.addrs[x].clone(), ensemble.addrs[z].clone());
    runtime().block_on(async {
        let root = fresh_root("zxid");
        // Z misses the writes that follow.
        ensemble.stop_member(z);
        let proxy = FaultProxy::start(&addr_x).await.unwrap();
        let client = connect(&proxy.addr().to_string(), LONG).await;
        let id = client.session_id().0;
        client.create(&root, b"", &persistent()).await.unwrap();
        let (written, _) = client.create(&format!("{root}/e"), b"new", &ephemeral()).await.unwrap();
        // A read: the client's last zxid is now X's last zxid.
        client.get_data(&format!("{root}/e")).await.unwrap();
        let seen = ensemble.zxid(x);
        assert!(seen >= written.mzxid);

        // Z's data, as it was when Z stopped, serves alone: behind the client.
        ensemble.start_member_alone(z);
        let behind = ensemble.zxid(z);
        assert!(behind < written.mzxid, "Z (zxid 0x{behind:x}) missed the write (0x{:x})", written.mzxid);
        // The client's connection moves there: Z refuses it for its zxid,
        // says so in its log, and the client stays disconnected.
        proxy.redirect(&addr_z);
        proxy.cut_all();
        let refusal = format!(
            "as it has seen zxid 0x{seen:x} our last zxid is 0x{behind:x} client must try another server"
        );
        ensemble.poll_blocking("Z refusing the client for its zxid", PROMPTLY, || {
            let log = ensemble.log_of(z);
            log.contains(&refusal).then_some(()).ok_or_else(|| {
                let refusals: Vec<&str> = log.lines().filter(|l| l.contains("Refusing")).collect();
                format!("the client is {:?}; Z's refusals: {refusals:?}", client.state())
            })
        });
        assert_eq!(client.state(), SessionState::Disconnected);
        assert!(!admin::has_connection_for(&addr_z, id).unwrap());

        // Z rejoins the ensemble on its own data and catches up; the client,
        // still retrying, is accepted there into its session.
        ensemble.stop_member(z);
        ensemble.start_member(z);
        await_connection_on(&client, &addr_z, id).await;
        assert!(ensemble.zxid(z) >= seen);
        let (data, stat) = client.get_data(&format!("{root}/e")).await.unwrap();
        assert_eq!((data, stat.ephemeral_owner), (b"new".to_vec(), id));
    });
    ensemble.await_quorum();
}

/// Waits until the client is connected and `addr`'s server lists a
/// connection of session `id` (`cons`).
async fn await_connection_on(client: &zkc::Client, addr: &str, id: i64) {
    await_state(client, SessionState::SyncConnected, PROMPTLY).await;
    poll(
        &format!("session 0x{id:x} connected at {addr}"),
        PROMPTLY,
        || async {
            match admin::has_connection_for(addr, id) {
                Ok(true) => Ok(()),
                Ok(false) => Err(format!("not in cons; the client is {:?}", client.state())),
                Err(error) => Err(error.to_string()),
            }
        },
    )
    .await;
    assert_eq!(client.session_id().0, id);
}

/// `path` exists and is an ephemeral of session `id`, as `observer`'s
/// server sees it.
async fn assert_owned_by(observer: &zkc::Client, path: &str, id: i64) {
    observer.sync(path).await.unwrap();
    let stat = observer.check_stat(path).await.unwrap();
    assert_eq!(
        stat.map(|s| s.ephemeral_owner),
        Some(id),
        "{path} is still an ephemeral of session 0x{id:x}"
    );
}
