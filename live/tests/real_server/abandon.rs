//! Abandoning a session (client-side expiry, the `client_expiry` policy)
//! against a real ZooKeeper: an abandoned detached session stays on the
//! server, with its ephemeral node, until the server's own timeout, while
//! closing a detached session ends it at once; through the live driver's
//! backend, a session abandoned during an outage is not revived when the
//! outage ends.
//!
//! They need a server: `scripts/zk-server start`, then
//! `cargo test --release --workspace --test real_server -- --ignored abandon::` (each test takes
//! about the session timeout, 2 s, plus the server's expiry tick).

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use zk_live::{zk_addr_from_env, LiveSession, ZkBackend};
use zk_recipes::zk::Acls;
use zk_recipes::zk::{CreateMode, Path, Reply, Request, SessionId, ZkError};
use zk_sim::live::{Backend, LiveState};

/// The session timeout the tests ask for (the test server grants 0.4 s to
/// 4 s).
const TIMEOUT_MS: u64 = 2_000;

/// How long after its timeout the server may take to expire a session
/// (it expires them in tickTime buckets; the test server's tick is 0.2 s).
const EXPIRY_SLACK_MS: u64 = 1_000;

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

fn no_server(addr: &str, error: impl std::fmt::Display) -> ! {
    panic!("no ZooKeeper answers at {addr} (start one with scripts/zk-server start): {error}")
}

async fn observer() -> LiveSession {
    let addr = zk_addr_from_env();
    LiveSession::connect(&addr, 10_000)
        .await
        .unwrap_or_else(|error| no_server(&addr, error))
}

async fn detached() -> LiveSession {
    let addr = zk_addr_from_env();
    LiveSession::connect_detached(&addr, TIMEOUT_MS)
        .await
        .unwrap_or_else(|error| no_server(&addr, error))
}

/// A fresh top-level path for one test of this run (an ephemeral there
/// goes with its session: nothing to clean up).
fn fresh_path(test: &str) -> Path {
    let millis = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis();
    Path::new(format!("/live-abandon-{test}-{millis}")).unwrap()
}

fn create_ephemeral(path: &Path) -> Request {
    Request::Create {
        path: path.clone(),
        data: vec![],
        mode: CreateMode::Ephemeral,
        acl: Acls::Open,
    }
}

/// The owner session of the node at `path`, `None` if it is gone.
async fn owner(observer: &mut LiveSession, path: &Path) -> Option<i64> {
    let read = observer
        .apply(&Request::Exists {
            path: path.clone(),
            watch: false,
        })
        .await;
    match read {
        Ok(Reply::Exists(stat)) => stat.map(|stat| stat.ephemeral_owner),
        other => panic!("reading {path}: {other:?}"),
    }
}

/// Waits until the node at `path` is gone; how long that took, or `None`
/// if it was still there after `patience`.
async fn gone_within(
    observer: &mut LiveSession,
    path: &Path,
    patience: Duration,
) -> Option<Duration> {
    let start = Instant::now();
    while start.elapsed() < patience {
        if owner(observer, path).await.is_none() {
            return Some(start.elapsed());
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    None
}

/// The session abandoned at `abandoned` still holds its node half a
/// timeout later, which goes at the server's own timeout (at most
/// [`EXPIRY_SLACK_MS`] after it, not later: a session the client had
/// reconnected into would live a timeout longer).
async fn survives_then_expires(
    observer: &mut LiveSession,
    path: &Path,
    owner_id: SessionId,
    abandoned: Instant,
) {
    tokio::time::sleep(Duration::from_millis(TIMEOUT_MS / 2)).await;
    assert_eq!(
        owner(observer, path).await,
        Some(owner_id.0),
        "half a session timeout after the abandon the server still holds the session's node"
    );
    let deadline = Duration::from_millis(TIMEOUT_MS + EXPIRY_SLACK_MS);
    let patience = deadline.saturating_sub(abandoned.elapsed());
    let gone = gone_within(observer, path, patience).await;
    assert!(
        gone.is_some(),
        "the server expires the abandoned session (and its node) at its timeout: still there \
         {:?} after the abandon",
        abandoned.elapsed()
    );
}

#[test]
#[ignore = "needs a real ZooKeeper: scripts/zk-server start; cargo test --release --workspace --test real_server -- --ignored abandon::"]
fn an_abandoned_sessions_node_stays_until_the_servers_timeout() {
    runtime().block_on(async {
        let mut observer = observer().await;
        let mut session = detached().await;
        assert!(session.is_detached());
        let path = fresh_path("abandoned");
        session.apply(&create_ephemeral(&path)).await.unwrap();
        session.abandon();
        let abandoned = Instant::now();
        assert!(session.is_closed());
        assert_eq!(
            session.apply(&create_ephemeral(&path)).await,
            Err(ZkError::SessionExpired),
            "an abandoned handle sends nothing"
        );
        survives_then_expires(&mut observer, &path, session.session_id(), abandoned).await;
        observer.close().await.unwrap();
    });
}

#[test]
#[ignore = "needs a real ZooKeeper: scripts/zk-server start; cargo test --release --workspace --test real_server -- --ignored abandon::"]
fn closing_a_detached_session_ends_it_at_once() {
    runtime().block_on(async {
        let mut observer = observer().await;
        let mut session = detached().await;
        let path = fresh_path("closed");
        session.apply(&create_ephemeral(&path)).await.unwrap();
        let started = Instant::now();
        session.close().await.unwrap();
        assert_eq!(
            owner(&mut observer, &path).await,
            None,
            "the close ended the session on the server: its node is gone"
        );
        assert!(
            started.elapsed() < Duration::from_millis(TIMEOUT_MS / 2),
            "closed at once, not at the timeout: {:?}",
            started.elapsed()
        );
        observer.close().await.unwrap();
    });
}

#[test]
#[ignore = "needs a real ZooKeeper: scripts/zk-server start; cargo test --release --workspace --test real_server -- --ignored abandon::"]
fn a_session_abandoned_during_an_outage_is_not_revived_when_it_ends() {
    runtime().block_on(async {
        let mut observer = observer().await;
        let backend = ZkBackend::new(&zk_addr_from_env(), TIMEOUT_MS);
        let mut conn = backend
            .connect_abandonable()
            .await
            .unwrap_or_else(|error| no_server(&zk_addr_from_env(), error));
        let path = fresh_path("outage");
        let (_, created) = conn.apply(&create_ephemeral(&path), None).await;
        created.unwrap();
        // An outage shorter than the server's timeout: were the abandoned
        // client to reconnect when it ends, its session would live a
        // timeout longer.
        conn.disconnect(TIMEOUT_MS * 3 / 4);
        let noticed = Instant::now();
        while conn.state() != LiveState::Disconnected {
            assert!(
                noticed.elapsed() < Duration::from_secs(2),
                "the client library notices the cut"
            );
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        let id = conn.session_id();
        conn.abandon();
        let abandoned = Instant::now();
        drop(conn);
        survives_then_expires(&mut observer, &path, id, abandoned).await;
        backend.close().await;
        observer.close().await.unwrap();
    });
}
