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
//! - Leader loss (the leader's process frozen with SIGSTOP): once the
//!   followers notice, tickTime × syncLimit after the loss, they close every
//!   client connection, a request in flight fails with ConnectionLoss, and
//!   every client reconnects into its session, with its ephemerals, once a
//!   new leader serves.
//! - Session timers under a new leader: a session cut off (its link
//!   black-holed) shortly before the leader stops keeps its ephemerals past
//!   its timeout after the cut-off, because the new leader gives every
//!   session a fresh timeout; it expires that timeout after the election.
//! - A follower cut off from the leader (its quorum link through proxies
//!   the test cuts, `start-member --proxied-quorum`; loopback, no iptables):
//!   it serves stale reads until it notices, tickTime × syncLimit after the
//!   cut, then closes its clients; before it notices it refuses a client
//!   whose zxid is ahead of it.
//! - Reconnect revalidation: a session moving to a follower that lags
//!   behind the leader's commits (its quorum link delayed by a proxy) reads,
//!   in its first read there, what the leader had when it moved; the
//!   watches it sets again are read against that too (a node set then
//!   deleted while it was away: NodeDeleted; deleted then created again:
//!   NodeDataChanged; created then deleted: nothing, still armed).
//!
//! The timings these cases measure (printed with `--nocapture`) follow from
//! the ensemble's zoo.cfg (`scripts/zk-server`: tickTime 200 ms, syncLimit
//! 10, so a follower gives up on a silent leader after 2 s); the assertions
//! are bounds around them, not exact values.
//!
//! How the member faults are made, on loopback and without iptables: the
//! leader is frozen with SIGSTOP (`scripts/zk-server pause-member`), so its
//! sockets stay open and silent as in a partition, and resumed with
//! SIGCONT; a follower is restarted with `start-member --proxied-quorum`,
//! whose zoo.cfg sends its link to the leader through byte-level proxies
//! the test runs (`ensemble_support::link_proxy`), which swallow everything
//! (a cut that nobody is told of) or hold the leader's bytes back (a lagging
//! follower, still in the quorum). Only that member's config changes, and
//! only while the test runs; elections stay direct, and the ensemble CI
//! starts keeps its direct links. A separate ensemble with every link
//! proxied would also allow cutting off the *leader* while it runs, but
//! costs three more JVMs per run; SIGSTOP covers the leader's loss instead.
//!
//! Not tested: a leader cut off from its followers *while it keeps
//! running* (whether it stops serving its own clients before a new leader
//! commits: every link of the leader would have to go through proxies),
//! and the Java client's reconnect timing (these tests use the Rust client,
//! whose backoff differs). Nor the fate of the write in flight at the leader
//! loss beyond its ConnectionLoss (it stays unknown to the client, as it
//! should).
//!
//! What cannot be forced without a proxied member: a follower *in the quorum*
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
//! `cargo test --release --workspace --test real_server -- --ignored ensemble::` (the tests take the
//! ensemble one at a time; `ZK_ENSEMBLE_ADDRS` overrides
//! 127.0.0.1:2191,127.0.0.1:2192,127.0.0.1:2193), then
//! `scripts/zk-server stop --ensemble 3`. Without `--ignored` the tests are
//! ignored; with it and no ensemble they fail saying so.

use crate::ensemble_support::link_proxy::LinkProxy;
use crate::ensemble_support::member_faults::*;
use crate::ensemble_support::*;
use std::time::Duration;
use tokio::time::Instant;
use zk_live::admin;
use zk_live::proxy::{FaultProxy, Hole};
use zkc::{EventType, SessionState};
use zookeeper_client as zkc;

/// Long enough that no session here expires unless a test means it to.
const LONG: Duration = Duration::from_secs(30);
/// How long a notification or a reconnect may take.
const PROMPTLY: Duration = Duration::from_secs(15);
/// tickTime × syncLimit of the ensemble `scripts/zk-server` starts (200 ms
/// × 10): how long a follower waits to hear from its leader before it gives
/// up on it (and the leader on a silent follower).
const LEADER_SILENCE: Duration = Duration::from_millis(2_000);
/// The session timeout of the clients whose sessions an election must keep
/// (the probes used 4 s).
const SHORT: Duration = Duration::from_millis(4_000);

#[test]
#[ignore = "needs a ZooKeeper ensemble: scripts/zk-server start --ensemble 3; cargo test --release --workspace --test real_server -- --ignored ensemble::"]
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
#[ignore = "needs a ZooKeeper ensemble: scripts/zk-server start --ensemble 3; cargo test --release --workspace --test real_server -- --ignored ensemble::"]
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
#[ignore = "needs a ZooKeeper ensemble: scripts/zk-server start --ensemble 3; cargo test --release --workspace --test real_server -- --ignored ensemble::"]
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
        // Every ordered pair of members whose reader is a follower, many
        // times: write through one, sync and read through the other. Not
        // the leader as reader: it serves its own client's sync as a read
        // (its CommitProcessor does not match syncs), which does not wait
        // for a write another member already acknowledged to be applied on
        // the leader, so the read can miss it (seen once in 120 rounds on
        // 2026-12-03; ZOOKEEPER-1675 is the same family).
        let leader = ensemble.leader();
        let mut round = 0;
        for _ in 0..20 {
            for writer in 0..clients.len() {
                for reader in (0..clients.len()).filter(|&r| r != writer && r != leader) {
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
#[ignore = "needs a ZooKeeper ensemble: scripts/zk-server start --ensemble 3; cargo test --release --workspace --test real_server -- --ignored ensemble::"]
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
#[ignore = "needs a ZooKeeper ensemble: scripts/zk-server start --ensemble 3; cargo test --release --workspace --test real_server -- --ignored ensemble::"]
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

#[test]
#[ignore = "needs a ZooKeeper ensemble: scripts/zk-server start --ensemble 3; cargo test --release --workspace --test real_server -- --ignored ensemble::"]
fn when_the_leader_stops_the_followers_drop_every_client_which_reconnects_with_its_ephemerals() {
    let ensemble = Ensemble::whole();
    let leader = ensemble.leader();
    let followers = ensemble.followers();
    runtime().block_on(async {
        let root = fresh_root("leader-loss");
        let setup = connect(&ensemble.addrs[followers[0]], LONG).await;
        setup.create(&root, b"", &persistent()).await.unwrap();
        // On each follower: two idle sessions with an ephemeral each, and
        // one (with a long timeout, so that its own ping timer does not
        // drop it first) that will have a write in flight.
        let mut idle = Vec::new();
        let mut busy = Vec::new();
        for &f in &followers {
            for k in 0..2 {
                let client = connect(&ensemble.addrs[f], SHORT).await;
                let path = format!("{root}/e-{}-{k}", f + 1);
                client.create(&path, b"", &ephemeral()).await.unwrap();
                idle.push((client, path));
            }
            busy.push(connect(&ensemble.addrs[f], LONG).await);
        }
        let clients: Vec<&zkc::Client> = idle.iter().map(|(c, _)| c).chain(&busy).collect();
        let clocks: Vec<_> = clients.iter().map(|c| outage_clock(c)).collect();
        let election = watch_election(
            followers
                .iter()
                .map(|&f| ensemble.addrs[f].clone())
                .collect(),
        );

        let frozen_epoch = ensemble.zxid(leader) >> 32;
        let frozen = Frozen::freeze(&ensemble, leader);
        let stopped_at = Instant::now();
        let writes: Vec<_> = busy
            .iter()
            .enumerate()
            .map(|(k, client)| {
                let (client, path) = (client.clone(), format!("{root}/w-{k}"));
                tokio::spawn(async move { client.create(&path, b"", &persistent()).await })
            })
            .collect();

        // Every client is disconnected once the followers notice.
        let mut outages = Vec::new();
        for (k, clock) in clocks.into_iter().enumerate() {
            let outage = tokio::time::timeout(PROMPTLY + LEADER_SILENCE, clock)
                .await
                .unwrap_or_else(|_| panic!("client {k}: no disconnect and reconnect in time"))
                .unwrap()
                .unwrap_or_else(|| panic!("client {k}: the session ended"));
            outages.push(outage);
        }
        for (k, outage) in outages.iter().enumerate() {
            let lost = outage.lost_at - stopped_at;
            assert!(
                (LEADER_SILENCE / 2..=LEADER_SILENCE * 2).contains(&lost),
                "client {k} disconnected {lost:?} after the leader stopped, not about \
                 tickTime × syncLimit ({LEADER_SILENCE:?})"
            );
        }
        // A request in flight failed with ConnectionLoss. One the crate had
        // not yet taken from its queue when the connection dropped (a loaded
        // machine) is sent after the reconnect: the new leader commits it.
        for write in writes {
            match write.await.unwrap() {
                Err(zkc::Error::ConnectionLoss) => {}
                Ok((stat, _)) if stat.czxid >> 32 > frozen_epoch => {
                    eprintln!(
                        "a write was sent only after the reconnect (czxid {:#x})",
                        stat.czxid
                    )
                }
                result => panic!(
                    "a write in flight when the leader (epoch {frozen_epoch}) stopped: {result:?}"
                ),
            }
        }
        let election = election.await.unwrap();
        let (new_leader, elected_at) = election.leader.expect("a follower leads");
        // Every session is back, with its ephemeral.
        for (client, path) in &idle {
            assert_owned_by(client, path, client.session_id().0).await;
        }
        let lost: Vec<u128> = outages.iter().map(|o| ms(stopped_at, o.lost_at)).collect();
        let back: Vec<u128> = outages.iter().map(|o| ms(stopped_at, o.back_at)).collect();
        let stopped_serving: Vec<Option<u128>> = election
            .stopped_serving_at
            .iter()
            .map(|at| at.map(|at| ms(stopped_at, at)))
            .collect();
        eprintln!(
            "leader loss: ms after SIGSTOP: followers stopped serving {stopped_serving:?}, \
             clients disconnected {lost:?}, member {} led at {}, clients back {back:?}",
            followers[new_leader] + 1,
            ms(stopped_at, elected_at)
        );
        // The election: from the first follower to stop serving to a new
        // leader serving. 7 runs on this machine: 200 to 620 ms; the
        // simulator draws it from `timing.election_ms`, [200, 650] by
        // default (sim/src/world/config.rs). Twice its top is the bound
        // here, for a loaded machine.
        let noticed = election.stopped_serving_at.iter().flatten().min();
        if let Some(&noticed) = noticed {
            let window = ms(noticed, elected_at);
            eprintln!("election: {window} ms from the followers' notice to a leader serving");
            assert!(
                window <= 1_300,
                "the election took {window} ms, far beyond the simulator's [200, 650]"
            );
        }
        // Nobody is served between the followers' notice and the new
        // leader's start (the watcher sees the leader up to a poll late).
        for (k, outage) in outages.iter().enumerate() {
            assert!(
                outage.back_at + Duration::from_millis(200) >= elected_at,
                "client {k} was back {} ms after SIGSTOP, before a new leader served ({} ms)",
                ms(stopped_at, outage.back_at),
                ms(stopped_at, elected_at)
            );
        }
        drop(frozen);
    });
    ensemble.await_quorum();
}

/// A frozen leader (SIGSTOP) closes nothing: a client connected to it
/// hears nothing and gives the connection up at its own read timeout (the
/// crate's 2/5 of the session timeout, 4 s here), well after the followers
/// noticed the leader was gone (tickTime × syncLimit, 2 s) and dropped
/// their own clients. The simulator's `server_freeze` fault does the same
/// (sim/tests/suite/ensemble_freeze.rs).
#[test]
#[ignore = "needs a ZooKeeper ensemble: scripts/zk-server start --ensemble 3; cargo test --release --workspace --test real_server -- --ignored ensemble::"]
fn a_frozen_leader_s_own_clients_hang_until_their_read_timeout() {
    let ensemble = Ensemble::whole();
    let leader = ensemble.leader();
    let follower = ensemble.followers()[0];
    let session_timeout = Duration::from_secs(10);
    let read_timeout = session_timeout * 2 / 5;
    runtime().block_on(async {
        let on_leader = connect(&ensemble.addrs[leader], session_timeout).await;
        let on_follower = connect(&ensemble.addrs[follower], session_timeout).await;
        let frozen = Frozen::freeze(&ensemble, leader);
        let frozen_at = Instant::now();
        // The follower's client: dropped when the followers notice. The
        // leader's: not then; at its read timeout (it reconnects only
        // after the thaw: its one address is the frozen leader's).
        let (follower_lost, leader_lost) = tokio::join!(
            disconnected_at(on_follower.clone(), "the follower's client"),
            disconnected_at(on_leader.clone(), "the frozen leader's client"),
        );
        let (follower_ms, leader_ms) = (ms(frozen_at, follower_lost), ms(frozen_at, leader_lost));
        eprintln!(
            "frozen leader: ms after SIGSTOP: a follower's client disconnected at {follower_ms}, \
             the leader's own at {leader_ms} (read timeout {read_timeout:?})"
        );
        assert!(
            (LEADER_SILENCE / 2..=LEADER_SILENCE * 2).contains(&(follower_lost - frozen_at)),
            "the follower's client disconnected {follower_ms} ms after SIGSTOP"
        );
        let since = leader_lost - frozen_at;
        assert!(
            since >= read_timeout * 3 / 4 && since <= read_timeout + Duration::from_millis(1_500),
            "the frozen leader's client disconnected {leader_ms} ms after SIGSTOP, not at its \
             read timeout ({read_timeout:?})"
        );
        drop(frozen);
    });
    ensemble.await_quorum();
}

#[test]
#[ignore = "needs a ZooKeeper ensemble: scripts/zk-server start --ensemble 3; cargo test --release --workspace --test real_server -- --ignored ensemble::"]
fn a_session_cut_off_before_the_leader_stops_gets_a_fresh_timeout_from_the_new_leader() {
    let ensemble = Ensemble::whole();
    let leader = ensemble.leader();
    let followers = ensemble.followers();
    // How long before the leader stops the victim is cut off (the 1 s).
    let head_start = Duration::from_millis(1_000);
    runtime().block_on(async {
        let root = fresh_root("timers");
        let both: Vec<&str> = followers.iter().map(|&f| ensemble.addrs[f].as_str()).collect();
        let observer = connect(&both.join(","), LONG).await;
        observer.create(&root, b"", &persistent()).await.unwrap();
        let proxy = FaultProxy::start(&ensemble.addrs[followers[0]]).await.unwrap();
        let victim = connect(&proxy.addr().to_string(), SHORT).await;
        let eph = format!("{root}/e");
        victim.create(&eph, b"", &ephemeral()).await.unwrap();

        // Cut off: nothing reaches the servers from the victim any more.
        proxy.black_hole(Hole::Both);
        let cut_at = Instant::now();
        tokio::time::sleep_until(cut_at + head_start).await;
        let election = watch_election(followers.iter().map(|&f| ensemble.addrs[f].clone()).collect());
        let frozen = Frozen::freeze(&ensemble, leader);
        let stopped_at = Instant::now();
        let (_, elected_at) = election.await.unwrap().leader.expect("a follower leads");

        // The ephemeral, read through the observer whenever it is connected.
        let last_present_at = std::cell::Cell::new(None);
        let gone_at = poll("the cut-off session's expiry", PROMPTLY + SHORT, || {
            let (observer, eph, last_present_at) = (&observer, &eph, &last_present_at);
            async move {
                match observer.check_stat(eph).await {
                    Ok(None) => Ok(Instant::now()),
                    Ok(Some(_)) => {
                        last_present_at.set(Some(Instant::now()));
                        Err("present".to_string())
                    }
                    Err(error) => Err(error.to_string()),
                }
            }
        })
        .await;
        let last_present_at = last_present_at
            .get()
            .expect("the observer read the ephemeral after the election");
        eprintln!(
            "session timers: T {} ms, ms after the cut-off: leader stopped {}, new leader {}, \
             ephemeral last seen {}, gone {}",
            SHORT.as_millis(),
            ms(cut_at, stopped_at),
            ms(cut_at, elected_at),
            ms(cut_at, last_present_at),
            ms(cut_at, gone_at)
        );
        assert!(
            last_present_at > cut_at + SHORT,
            "the ephemeral was last seen {} ms after the cut-off, not past the timeout",
            ms(cut_at, last_present_at)
        );
        // A fresh full timeout from the new leader, not the rest of the old.
        let after_election = gone_at - elected_at;
        assert!(
            (SHORT - Duration::from_millis(500)..=SHORT + LEADER_SILENCE).contains(&after_election),
            "the session expired {after_election:?} after the new leader served, not about {SHORT:?}"
        );
        drop(frozen);
        drop(victim);
    });
    ensemble.await_quorum();
}

#[test]
#[ignore = "needs a ZooKeeper ensemble: scripts/zk-server start --ensemble 3; cargo test --release --workspace --test real_server -- --ignored ensemble::"]
fn a_follower_cut_off_from_the_leader_serves_stale_reads_until_it_notices_then_drops_its_clients() {
    let ensemble = Ensemble::whole();
    let leader = ensemble.leader();
    let followers = ensemble.followers();
    let [cut, other] = [followers[0], followers[1]];
    let (addr_cut, addr_other) = (ensemble.addrs[cut].clone(), ensemble.addrs[other].clone());
    let restore = Proxied::stopped(&ensemble, cut);
    runtime().block_on(async {
        let links = start_behind_proxies(&ensemble, cut).await;
        assert_eq!(ensemble.leader(), leader, "the leader stays");

        let root = fresh_root("cut-follower");
        let node = format!("{root}/n");
        let writer = connect(&ensemble.addrs[leader], LONG).await;
        writer.create(&root, b"", &persistent()).await.unwrap();
        writer
            .create(&node, b"before", &persistent())
            .await
            .unwrap();
        let reader = connect(&addr_cut, LONG).await;
        reader.sync(&node).await.unwrap();
        assert_eq!(reader.get_data(&node).await.unwrap().0, b"before");
        // A client of the other follower, soon ahead of the cut-off one.
        let proxy = FaultProxy::start(&addr_other).await.unwrap();
        let mover = connect(&proxy.addr().to_string(), LONG).await;
        // The cut-off follower has applied everything so far (the mover's
        // session included).
        reader.sync(&node).await.unwrap();
        let behind = ensemble.zxid(cut);
        let log_before = ensemble.log_of(cut).len();

        for link in &links {
            link.cut_off();
        }
        let cut_at = Instant::now();
        let reads = stale_reads(reader.clone(), node.clone());
        writer.set_data(&node, b"after", None).await.unwrap();
        let written_at = Instant::now();
        mover.sync(&node).await.unwrap();
        assert_eq!(mover.get_data(&node).await.unwrap().0, b"after");

        // The mover's connection moves to the cut-off follower, which is
        // behind it: refused, before that follower noticed the cut.
        proxy.redirect(&addr_cut);
        proxy.cut_all();
        let refusal = format!("our last zxid is 0x{behind:x} client must try another server");
        let refused_at =
            ensemble.poll_blocking("the cut-off follower refusing the mover", PROMPTLY, || {
                let log = ensemble.log_of(cut);
                log.get(log_before..)
                    .unwrap_or_default()
                    .contains(&refusal)
                    .then(Instant::now)
                    .ok_or_else(|| format!("the mover is {:?}", mover.state()))
            });
        let (reads, lost_at) = reads.await.unwrap();
        let after_write: Vec<&(Instant, Vec<u8>)> =
            reads.iter().filter(|(at, _)| *at > written_at).collect();
        let last_read_at = reads.last().map_or(cut_at, |(at, _)| *at);
        eprintln!(
            "cut-off follower: ms after the cut: write done {}, mover refused by {}, \
             last stale read {}, reader disconnected {} ({} reads after the write)",
            ms(cut_at, written_at),
            ms(cut_at, refused_at),
            ms(cut_at, last_read_at),
            ms(cut_at, lost_at),
            after_write.len()
        );
        assert!(
            !after_write.is_empty(),
            "the cut-off follower answered reads after the write"
        );
        assert!(
            after_write.iter().all(|(_, v)| v == b"before"),
            "every read at the cut-off follower is stale"
        );
        assert!(refused_at < lost_at, "refused before it noticed the cut");
        let noticed = lost_at - cut_at;
        assert!(
            (LEADER_SILENCE / 2..=LEADER_SILENCE * 2).contains(&noticed),
            "the cut-off follower dropped its client {noticed:?} after the cut, not about \
             tickTime × syncLimit ({LEADER_SILENCE:?})"
        );
        ensemble.poll_blocking(
            "the cut-off follower not serving",
            PROMPTLY,
            || match ensemble.mode(cut) {
                None => Ok(()),
                Some(mode) => Err(mode),
            },
        );
    });
    drop(restore);
    ensemble.await_quorum();
}

/// A client whose write waits at a follower cut off from the leader hears
/// nothing more: the follower answers a session in order, so its pings
/// queue behind the write, and the crate gives the connection up at its
/// read timeout (2/5 of a 2 s session, 800 ms, on its 100 ms ticks) while
/// an idle client of the same follower, whose pings are answered, stays
/// until the follower notices the cut (tickTime × syncLimit, 2 s). The
/// simulator does the same (sim/tests/suite/ensemble_freeze.rs,
/// `pings_behind_a_waiting_write_...`).
#[test]
#[ignore = "needs a ZooKeeper ensemble: scripts/zk-server start --ensemble 3; cargo test --release --workspace --test real_server -- --ignored ensemble::"]
fn a_client_whose_write_waits_at_a_cut_off_follower_times_out_before_it_notices() {
    let ensemble = Ensemble::whole();
    let cut = ensemble.followers()[0];
    let addr_cut = ensemble.addrs[cut].clone();
    let session_timeout = Duration::from_secs(2);
    let read_timeout = session_timeout * 2 / 5;
    let restore = Proxied::stopped(&ensemble, cut);
    runtime().block_on(async {
        let links = start_behind_proxies(&ensemble, cut).await;
        let root = fresh_root("pings-behind-a-write");
        let setup = connect(&addr_cut, LONG).await;
        setup.create(&root, b"", &persistent()).await.unwrap();
        let writer = connect(&addr_cut, session_timeout).await;
        let idle = connect(&addr_cut, session_timeout).await;
        for link in &links {
            link.cut_off();
        }
        let cut_at = Instant::now();
        let write = {
            let (writer, path) = (writer.clone(), format!("{root}/w"));
            tokio::spawn(async move { writer.create(&path, b"", &persistent()).await })
        };
        let (writer_lost, idle_lost) = tokio::join!(
            disconnected_at(writer.clone(), "the writing client"),
            disconnected_at(idle.clone(), "the idle client"),
        );
        let (writer_ms, idle_ms) = (ms(cut_at, writer_lost), ms(cut_at, idle_lost));
        eprintln!(
            "pings behind a write: ms after the cut: the writing client disconnected at \
             {writer_ms}, the idle one at {idle_ms} (read timeout {read_timeout:?})"
        );
        assert!(
            writer_lost - cut_at <= read_timeout + Duration::from_millis(400),
            "the writing client disconnected {writer_ms} ms after the cut, not at its read \
             timeout ({read_timeout:?})"
        );
        assert!(
            (LEADER_SILENCE * 3 / 4..=LEADER_SILENCE * 2).contains(&(idle_lost - cut_at)),
            "the idle client disconnected {idle_ms} ms after the cut, not when the follower \
             noticed (about {LEADER_SILENCE:?})"
        );
        // The crate fails what was in flight with the error that ended the
        // connection: its own read timeout, a custom error, not
        // ConnectionLoss (a recipe that retries on ConnectionLoss alone
        // does not retry it; the simulated crate cannot build this error
        // and gives ConnectionLoss: docs/async-recipe.md, known differences).
        let written = write.await.unwrap();
        let timed_out = format!("no response from connection in {}ms", read_timeout.as_millis());
        assert!(
            matches!(&written, Err(error @ zkc::Error::Custom(_)) if error.to_string() == timed_out),
            "the waiting write did not fail with the read timeout: {written:?}"
        );
    });
    drop(restore);
    ensemble.await_quorum();
}

/// A follower whose link from the leader lags 1 s stays in the quorum;
/// one whose link lags 3 s, past tickTime × syncLimit (2 s), hears nothing
/// from its leader for that long, drops out about 2 s after the lag began
/// (closing its clients' connections), syncs again and serves. The
/// simulator's `lag_spike` does the same past the sync limit
/// (sim/tests/suite/ensemble_freeze.rs).
#[test]
#[ignore = "needs a ZooKeeper ensemble: scripts/zk-server start --ensemble 3; cargo test --release --workspace --test real_server -- --ignored ensemble::"]
fn a_follower_lagging_past_the_sync_limit_is_dropped_and_resyncs() {
    let ensemble = Ensemble::whole();
    let lagging = ensemble.followers()[0];
    let addr = ensemble.addrs[lagging].clone();
    let restore = Proxied::stopped(&ensemble, lagging);
    runtime().block_on(async {
        let links = start_behind_proxies(&ensemble, lagging).await;
        let client = connect(&addr, LONG).await;
        let states = |client: zkc::Client| {
            let mut watcher = client.state_watcher();
            tokio::spawn(async move {
                loop {
                    if watcher.changed().await == SessionState::Disconnected {
                        return Instant::now();
                    }
                }
            })
        };
        // Within the sync limit: nothing happens.
        let within = states(client.clone());
        for link in &links {
            link.delay_from_upstream(Duration::from_millis(1_000));
        }
        tokio::time::sleep(Duration::from_millis(3_500)).await;
        assert!(!within.is_finished(), "a 1 s lag dropped the follower's client");
        within.abort();
        // Let the 1 s lag drain, then past it.
        for link in &links {
            link.delay_from_upstream(Duration::ZERO);
        }
        tokio::time::sleep(Duration::from_millis(1_500)).await;
        let past = states(client.clone());
        for link in &links {
            link.delay_from_upstream(Duration::from_millis(3_000));
        }
        let lagged_at = Instant::now();
        let dropped_at = tokio::time::timeout(PROMPTLY, past)
            .await
            .expect("the lagging follower never dropped its client")
            .unwrap();
        let dropped = dropped_at - lagged_at;
        eprintln!(
            "lag past the sync limit: the follower's client disconnected {} ms after a 3 s lag began",
            ms(lagged_at, dropped_at)
        );
        assert!(
            (LEADER_SILENCE * 3 / 4..=LEADER_SILENCE * 2).contains(&dropped),
            "the follower's client disconnected {dropped:?} after the lag began, not about \
             tickTime × syncLimit ({LEADER_SILENCE:?})"
        );
        for link in &links {
            link.delay_from_upstream(Duration::ZERO);
        }
    });
    drop(restore);
    ensemble.await_quorum();
}

#[test]
#[ignore = "needs a ZooKeeper ensemble: scripts/zk-server start --ensemble 3; cargo test --release --workspace --test real_server -- --ignored ensemble::"]
fn a_session_moving_to_a_lagging_follower_first_reads_what_the_leader_had_when_it_moved() {
    let ensemble = Ensemble::whole();
    let leader = ensemble.leader();
    let followers = ensemble.followers();
    let [lagging, other] = [followers[0], followers[1]];
    let (addr_lagging, addr_other) = (
        ensemble.addrs[lagging].clone(),
        ensemble.addrs[other].clone(),
    );
    // How far the lagging follower is behind the leader's commits.
    let lag = Duration::from_millis(1_000);
    let restore = Proxied::stopped(&ensemble, lagging);
    runtime().block_on(async {
        let links = start_behind_proxies(&ensemble, lagging).await;
        let root = fresh_root("revalidate");
        let node = format!("{root}/n");
        let writer = connect(&ensemble.addrs[leader], LONG).await;
        writer.create(&root, b"", &persistent()).await.unwrap();
        writer.create(&node, b"old", &persistent()).await.unwrap();
        // Sessions made before the lag: a probe on the lagging follower, and
        // the mover on the other one, which has read the old value.
        let probe = connect(&addr_lagging, LONG).await;
        let proxy = FaultProxy::start(&addr_other).await.unwrap();
        let mover = connect(&proxy.addr().to_string(), LONG).await;
        let id = mover.session_id().0;
        assert_eq!(mover.get_data(&node).await.unwrap().0, b"old");
        probe.sync(&node).await.unwrap();

        for link in &links {
            link.delay_from_upstream(lag);
        }
        writer.set_data(&node, b"new", None).await.unwrap();
        assert_eq!(
            probe.get_data(&node).await.unwrap().0,
            b"old",
            "the lagging follower has not applied the write yet"
        );
        // The mover, idle, moves to the lagging follower.
        let outage = outage_clock(&mover);
        proxy.redirect(&addr_lagging);
        proxy.cut_all();
        let moved_at = Instant::now();
        await_connection_on(&mover, &addr_lagging, id).await;
        let (first_read, _) = mover.get_data(&node).await.unwrap();
        let back_at = tokio::time::timeout(PROMPTLY, outage)
            .await
            .expect("the mover reconnected")
            .unwrap()
            .expect("the mover's session lives")
            .back_at;
        eprintln!(
            "revalidation: lag {} ms, the moved session served after {} ms, first read {:?}",
            lag.as_millis(),
            ms(moved_at, back_at),
            String::from_utf8_lossy(&first_read)
        );
        assert_eq!(
            first_read, b"new",
            "the moved session's first read includes what the leader had when it moved"
        );
        // The follower answered the move only once the leader's
        // revalidation came, behind the delayed commits.
        assert!(
            back_at - moved_at >= lag / 2,
            "the moved session was served {} ms after the move, before the lagging follower \
             could hear the leader",
            ms(moved_at, back_at)
        );
    });
    drop(restore);
    ensemble.await_quorum();
}

#[test]
#[ignore = "needs a ZooKeeper ensemble: scripts/zk-server start --ensemble 3; cargo test --release --workspace --test real_server -- --ignored ensemble::"]
fn a_moved_session_s_watches_are_read_after_its_revalidation() {
    // What the simulated ensemble does (sim/src/ensemble.rs, `Queued::
    // SetWatches`, and its unit test with the same three sequences): the
    // watches a client sets again as it moves to a lagging follower are
    // compared with what that follower applied once the leader's
    // revalidation came, behind every commit of the meantime.
    let ensemble = Ensemble::whole();
    let leader = ensemble.leader();
    let followers = ensemble.followers();
    let [lagging, other] = [followers[0], followers[1]];
    let (addr_lagging, addr_other) = (
        ensemble.addrs[lagging].clone(),
        ensemble.addrs[other].clone(),
    );
    let lag = Duration::from_millis(1_000);
    let restore = Proxied::stopped(&ensemble, lagging);
    runtime().block_on(async {
        let links = start_behind_proxies(&ensemble, lagging).await;
        let root = fresh_root("rewatch");
        let [set_then_deleted, deleted_then_created, created_then_deleted] =
            ["a", "b", "c"].map(|name| format!("{root}/{name}"));
        let writer = connect(&ensemble.addrs[leader], LONG).await;
        writer.create(&root, b"", &persistent()).await.unwrap();
        for node in [&set_then_deleted, &deleted_then_created] {
            writer.create(node, b"old", &persistent()).await.unwrap();
        }
        let probe = connect(&addr_lagging, LONG).await;
        let proxy = FaultProxy::start(&addr_other).await.unwrap();
        let mover = connect(&proxy.addr().to_string(), LONG).await;
        let id = mover.session_id().0;
        mover.sync(&root).await.unwrap();
        let (_, _, watch_a) = mover.get_and_watch_data(&set_then_deleted).await.unwrap();
        let (_, _, watch_b) = mover
            .get_and_watch_data(&deleted_then_created)
            .await
            .unwrap();
        let (absent, watch_c) = mover
            .check_and_watch_stat(&created_then_deleted)
            .await
            .unwrap();
        assert!(absent.is_none());
        probe.sync(&root).await.unwrap();

        // While the mover is away (its reconnects hang in the proxy's
        // hole): the changes, through the leader.
        proxy.redirect(&addr_lagging);
        proxy.black_hole(Hole::Both);
        proxy.cut_all();
        await_state(&mover, SessionState::Disconnected, PROMPTLY).await;
        for link in &links {
            link.delay_from_upstream(lag);
        }
        writer
            .set_data(&set_then_deleted, b"new", None)
            .await
            .unwrap();
        writer.delete(&set_then_deleted, None).await.unwrap();
        writer.delete(&deleted_then_created, None).await.unwrap();
        writer
            .create(&deleted_then_created, b"again", &persistent())
            .await
            .unwrap();
        writer
            .create(&created_then_deleted, b"", &persistent())
            .await
            .unwrap();
        writer.delete(&created_then_deleted, None).await.unwrap();
        assert!(
            probe.check_stat(&set_then_deleted).await.unwrap().is_some(),
            "the lagging follower has applied none of the changes yet"
        );
        proxy.heal();
        await_connection_on(&mover, &addr_lagging, id).await;
        let a = fired(watch_a, "the set-then-deleted node's data watch", PROMPTLY).await;
        let b = fired(
            watch_b,
            "the deleted-then-created node's data watch",
            PROMPTLY,
        )
        .await;
        eprintln!(
            "rewatch after a move: {:?} and {:?}",
            a.event_type, b.event_type
        );
        assert_eq!(a.event_type, EventType::NodeDeleted);
        assert_eq!(b.event_type, EventType::NodeDataChanged);
        // Created then deleted: nothing, and the watch stays armed.
        let silent = tokio::time::timeout(lag * 2, watch_c.changed()).await;
        let Err(_) = silent else {
            panic!("the created-then-deleted node's exists watch fired: {silent:?}");
        };
        for link in &links {
            link.delay_from_upstream(Duration::ZERO);
        }
    });
    drop(restore);
    ensemble.await_quorum();
}

/// Starts the stopped `member` with its quorum links through proxies (the
/// returned ones) and waits for the quorum.
async fn start_behind_proxies(ensemble: &Ensemble, member: usize) -> Vec<LinkProxy> {
    let links = proxy_quorum_links(ensemble, member).await;
    ensemble.start_member_proxied(member);
    ensemble.await_quorum();
    links
}

/// Proxies from [`Ensemble::quorum_proxy_addr`] to the quorum port of
/// every member but `member`: its links to the leader, once it runs with
/// `--proxied-quorum`.
async fn proxy_quorum_links(ensemble: &Ensemble, member: usize) -> Vec<LinkProxy> {
    let mut links = Vec::new();
    for other in (0..ensemble.size()).filter(|&m| m != member) {
        let listen = ensemble.quorum_proxy_addr(other);
        let link = LinkProxy::start(&listen, &ensemble.quorum_addr(other))
            .await
            .unwrap_or_else(|error| panic!("a quorum proxy on {listen}: {error}"));
        links.push(link);
    }
    links
}

/// What [`stale_reads`] read (when each read answered, the value) and when
/// the client lost its connection.
type Reads = (Vec<(Instant, Vec<u8>)>, Instant);

/// Reads `node` every 20 ms until a read fails.
fn stale_reads(reader: zkc::Client, node: String) -> tokio::task::JoinHandle<Reads> {
    let mut states = reader.state_watcher();
    let lost = tokio::spawn(async move {
        while states.changed().await != SessionState::Disconnected {}
        Instant::now()
    });
    tokio::spawn(async move {
        let mut reads = Vec::new();
        // A read issued while disconnected waits for a reconnection: the
        // loop stops at the disconnection instead.
        while reader.state() == SessionState::SyncConnected {
            let read = tokio::time::timeout(LEADER_SILENCE, reader.get_data(&node)).await;
            let Ok(Ok((value, _))) = read else { break };
            reads.push((Instant::now(), value));
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let lost_at = tokio::time::timeout(PROMPTLY, lost)
            .await
            .expect("the reader disconnected")
            .unwrap();
        (reads, lost_at)
    })
}

/// When `client` (`who`, for the message) turned Disconnected, waiting
/// at most [`PROMPTLY`].
async fn disconnected_at(client: zkc::Client, who: &'static str) -> Instant {
    let mut states = client.state_watcher();
    let waited = tokio::time::timeout(PROMPTLY, async {
        while client.state() != SessionState::Disconnected {
            states.changed().await;
        }
    });
    waited
        .await
        .unwrap_or_else(|_| panic!("{who} was never disconnected"));
    Instant::now()
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
