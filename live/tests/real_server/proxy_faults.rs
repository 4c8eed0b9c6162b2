//! The faults the proxy strikes by itself, against a real ZooKeeper and the
//! real `zookeeper-client` crate connected through the proxy: a request lost
//! before the server applies it, a reply lost after, the link healing after
//! `down_ms`, the session sniffed from the handshake, and that session
//! expired behind the client's back (`zk_live::takeover`).
//!
//! Run: `scripts/zk-server start; cargo test --release --workspace --test
//! real_server -- --ignored proxy_faults::` (`ZK_ADDR` overrides 127.0.0.1:2181).

use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use zk_live::proxy::{FaultProxy, RequestHook, RequestLoss};
use zk_live::takeover::{expire_session, Takeover};
use zk_live::zk_addr_from_env;
use zookeeper_client as zkc;

const SESSION_TIMEOUT: Duration = Duration::from_secs(10);
const DOWN_MS: u64 = 800;
const WAIT: Duration = Duration::from_secs(10);

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

async fn connect(addr: &str) -> zkc::Client {
    zkc::Client::connector()
        .with_session_timeout(SESSION_TIMEOUT)
        .with_connection_timeout(Duration::from_secs(2))
        .with_fail_eagerly()
        .connect(addr)
        .await
        .unwrap_or_else(|error| {
            panic!("no ZooKeeper at {addr} (start one with scripts/zk-server start): {error}")
        })
}

/// A fresh top-level path for one test of this run.
fn fresh_root(test: &str) -> String {
    let millis = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis();
    format!("/proxy-faults-{test}-{millis}")
}

fn persistent() -> zkc::CreateOptions<'static> {
    zkc::CreateMode::Persistent.with_acls(zkc::Acls::anyone_all())
}

fn ephemeral() -> zkc::CreateOptions<'static> {
    zkc::CreateMode::Ephemeral.with_acls(zkc::Acls::anyone_all())
}

/// A hook losing the request numbered `chosen` as `loss`.
fn lose(chosen: u64, loss: RequestLoss) -> RequestHook {
    Arc::new(move |number| (number == chosen).then_some(loss))
}

/// Waits until `client` is connected again.
async fn wait_connected(client: &zkc::Client) {
    let mut states = client.state_watcher();
    let connected = async {
        while states.peek_state() != zkc::SessionState::SyncConnected {
            states.changed().await;
        }
    };
    tokio::time::timeout(WAIT, connected)
        .await
        .expect("the client reconnected");
}

/// Removes `root` and its children (best effort).
async fn remove(observer: &zkc::Client, root: &str) {
    if let Ok((children, _)) = observer.get_children(root).await {
        for child in children {
            let _ = observer.delete(&format!("{root}/{child}"), None).await;
        }
    }
    let _ = observer.delete(root, None).await;
}

/// Creates `{root}/lost` through a proxy that loses that create as `loss`;
/// returns whether the node exists afterwards (seen by a direct client),
/// after checking that the client got ConnectionLoss, that the link was
/// down for `DOWN_MS` and that the client's next request succeeds.
async fn lose_a_create(test: &str, loss: RequestLoss) -> bool {
    let server = zk_addr_from_env();
    let proxy = FaultProxy::start(&server).await.unwrap();
    let client = connect(&proxy.addr().to_string()).await;
    let observer = connect(&server).await;
    let root = fresh_root(test);
    client.create(&root, b"", &persistent()).await.unwrap();
    let chosen = proxy.requests_numbered() + 1;
    proxy.set_request_hook(lose(chosen, loss));
    let struck_at = Instant::now();
    let lost = client
        .create(&format!("{root}/lost"), b"", &persistent())
        .await;
    assert!(matches!(lost, Err(zkc::Error::ConnectionLoss)), "{lost:?}");
    assert_eq!(proxy.losses_struck(), 1);
    let exists = observer
        .check_stat(&format!("{root}/lost"))
        .await
        .unwrap()
        .is_some();
    wait_connected(&client).await;
    assert!(struck_at.elapsed() >= Duration::from_millis(DOWN_MS));
    let after = client
        .create(&format!("{root}/after"), b"", &persistent())
        .await;
    assert!(after.is_ok(), "{after:?}");
    assert_eq!(proxy.losses_struck(), 1, "only the chosen request");
    remove(&observer, &root).await;
    exists
}

#[test]
#[ignore = "needs a real ZooKeeper: scripts/zk-server start; cargo test --release --workspace --test real_server -- --ignored proxy_faults::"]
fn a_request_lost_before_apply_is_not_applied() {
    runtime().block_on(async {
        let loss = RequestLoss::BeforeApply { down_ms: DOWN_MS };
        assert!(!lose_a_create("before", loss).await);
    });
}

#[test]
#[ignore = "needs a real ZooKeeper: scripts/zk-server start; cargo test --release --workspace --test real_server -- --ignored proxy_faults::"]
fn a_reply_lost_after_apply_leaves_the_node() {
    runtime().block_on(async {
        let loss = RequestLoss::AfterApply { down_ms: DOWN_MS };
        assert!(lose_a_create("after", loss).await);
    });
}

#[test]
#[ignore = "needs a real ZooKeeper: scripts/zk-server start; cargo test --release --workspace --test real_server -- --ignored proxy_faults::"]
fn a_drop_for_down_ms_loses_the_connection_and_heals() {
    runtime().block_on(async {
        let proxy = FaultProxy::start(&zk_addr_from_env()).await.unwrap();
        let client = connect(&proxy.addr().to_string()).await;
        let mut states = client.state_watcher();
        let dropped_at = Instant::now();
        proxy.drop_for(DOWN_MS);
        let state = tokio::time::timeout(WAIT, states.changed()).await;
        assert_eq!(state.ok(), Some(zkc::SessionState::Disconnected));
        wait_connected(&client).await;
        assert!(dropped_at.elapsed() >= Duration::from_millis(DOWN_MS));
        assert!(client.check_stat("/").await.unwrap().is_some());
    });
}

#[test]
#[ignore = "needs a real ZooKeeper: scripts/zk-server start; cargo test --release --workspace --test real_server -- --ignored proxy_faults::"]
fn a_session_taken_over_expires_for_its_client() {
    runtime().block_on(async {
        let server = zk_addr_from_env();
        let proxy = FaultProxy::start(&server).await.unwrap();
        let client = connect(&proxy.addr().to_string()).await;
        let observer = connect(&server).await;
        let root = fresh_root("expire");
        observer.create(&root, b"", &persistent()).await.unwrap();
        let owned = format!("{root}/owned");
        client.create(&owned, b"", &ephemeral()).await.unwrap();
        let session = proxy.wait_session(WAIT).await.expect("a session sniffed");
        assert_eq!(session.session_id, client.session().id().0);
        assert_eq!(
            session.timeout_ms as u128,
            client.session_timeout().as_millis()
        );

        let mut states = client.state_watcher();
        let taken = expire_session(&server, &session).await.unwrap();
        assert_eq!(taken, Takeover::Expired);
        let expired = async { while states.changed().await != zkc::SessionState::Expired {} };
        tokio::time::timeout(WAIT, expired)
            .await
            .expect("the client was told Expired");
        assert_eq!(observer.check_stat(&owned).await.unwrap(), None);
        let again = expire_session(&server, &session).await.unwrap();
        assert_eq!(again, Takeover::AlreadyGone);
        remove(&observer, &root).await;
    });
}
