//! The real side: the `zookeeper-client` crate itself (`upstream`) on a real
//! ZooKeeper, with real tokio, every client behind a fault proxy of its own
//! sequence (`zk_live::proxy::FaultProxy`) so that the connection losses
//! happen exactly where the sequence says.
//!
//! A second session (`Env::other`) connects to the server directly.
//!
//! Faults, as `zk_live`'s live backend realises them:
//! - a reply lost after apply: a black hole towards the client, then (once
//!   the proxy swallowed the reply) towards both sides, then every
//!   connection cut; a request lost before apply: a black hole both ways,
//!   then the cut once the request was swallowed. `heal` closes the hole
//!   and the client reconnects into its session;
//! - an expiry: the client cut off behind a black hole, a second connection
//!   into its session (its id and password) that closes it, then the heal:
//!   the client reconnects and is told its session expired.

use super::{Sequence, Transcript, HOW_TO_RUN};
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use tokio::task::JoinHandle;
use zk_live::proxy::{FaultProxy, Hole};
use zk_live::{zk_addr_from_env, LiveSession};

/// How long the proxy may take to swallow the awaited request or reply.
const SWALLOW_WAIT: Duration = Duration::from_secs(5);
/// How long a cut may take to reach the client.
const DISCONNECT_WAIT: Duration = Duration::from_secs(10);
const POLL: Duration = Duration::from_millis(10);
/// The session timeout of the connection that ends a session.
const TWIN_TIMEOUT_MS: u64 = 10_000;

mod sequences {
    use super::Env;
    crate::conformance_support::sequences::define_sequences!(upstream);
    crate::conformance_support::lock_sequences::define_lock_sequences!(upstream);
    crate::conformance_support::persistent_sequences::define_persistent_sequences!(upstream);
    crate::conformance_support::acl_sequences::define_acl_sequences!(upstream);
    crate::conformance_support::timing_sequences::define_timing_sequences!(upstream);
}

/// A real server and a tokio runtime to drive the real crate.
pub struct RealHarness {
    runtime: tokio::runtime::Runtime,
    server_addr: String,
    /// Distinguishes this run's roots from earlier runs' on the server.
    run_id: u128,
    ttl_enabled: bool,
}

impl RealHarness {
    /// Connects to the server at `ZK_ADDR` (default 127.0.0.1:2181), or
    /// panics saying that the comparison cannot run without one.
    pub fn new() -> RealHarness {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("a tokio runtime");
        let server_addr = zk_addr_from_env();
        let run_id = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |elapsed| elapsed.as_millis());
        let ttl_enabled = runtime.block_on(probe_server(&server_addr, run_id));
        if !ttl_enabled {
            println!(
                "note: the server at {server_addr} does not enable TTL nodes \
                 (extendedTypesEnabled): the TTL steps are skipped on both sides"
            );
        }
        RealHarness {
            runtime,
            server_addr,
            run_id,
            ttl_enabled,
        }
    }

    /// Whether the server creates TTL nodes.
    pub fn ttl_enabled(&self) -> bool {
        self.ttl_enabled
    }

    /// Runs `sequence` on the real crate under a fresh root, then removes
    /// the root.
    pub fn run(&self, sequence: Sequence) -> Transcript {
        let root = format!(
            "/zkcheck-client-conformance-{}-{}",
            sequence.name(),
            self.run_id
        );
        self.runtime.block_on(async {
            let proxy = FaultProxy::start(&self.server_addr)
                .await
                .unwrap_or_else(|error| panic!("real side: {error}"));
            let other = upstream::Client::connect(&self.server_addr)
                .await
                .unwrap_or_else(|error| panic!("real side: the other session: {error}"));
            let env = Env {
                connect_string: proxy.addr().to_string(),
                other,
                server_addr: self.server_addr.clone(),
                root: root.clone(),
                ttl_enabled: self.ttl_enabled,
                proxy: Arc::new(proxy),
                cutter: Mutex::new(None),
                started: Instant::now(),
            };
            let transcript = sequences::run(sequence, &env).await;
            env.proxy.heal();
            remove_tree(&self.server_addr, &root).await;
            transcript
        })
    }
}

/// Checks a server answers, and whether it creates TTL nodes.
async fn probe_server(addr: &str, run_id: u128) -> bool {
    let client = match upstream::Client::connect(addr).await {
        Ok(client) => client,
        Err(error) => panic!(
            "the client conformance comparison did NOT run: no ZooKeeper answers at {addr} \
             ({error}).\nStart one with `scripts/zk-server start` (or set ZK_ADDR) and run\n  \
             {HOW_TO_RUN}"
        ),
    };
    let probe = format!("/zkcheck-client-conformance-ttl-probe-{run_id}");
    let options = upstream::CreateMode::Persistent
        .with_acls(upstream::Acls::anyone_all())
        .with_ttl(Duration::from_secs(60));
    let created = client.create(&probe, b"", &options).await.is_ok();
    if created {
        let _ = client.delete(&probe, None).await;
    }
    created
}

/// Deletes `root` and everything under it (nodes of sessions still closing
/// may reappear for a moment: a few rounds).
async fn remove_tree(addr: &str, root: &str) {
    let Ok(client) = upstream::Client::connect(addr).await else {
        println!("note: could not connect to remove {root}");
        return;
    };
    for _ in 0..50 {
        let mut stack = vec![root.to_string()];
        let mut order = Vec::new();
        while let Some(path) = stack.pop() {
            if let Ok(children) = client.list_children(&path).await {
                stack.extend(children.into_iter().map(|child| format!("{path}/{child}")));
            }
            order.push(path);
        }
        for path in order.iter().rev() {
            let _ = client.delete(path, None).await;
        }
        if matches!(client.check_stat(root).await, Ok(None)) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    println!("note: could not remove {root}");
}

/// What the sequences need of the real side (see `sequences`).
pub struct Env {
    connect_string: String,
    server_addr: String,
    root: String,
    ttl_enabled: bool,
    /// A second session, connected to the server directly.
    other: upstream::Client,
    proxy: Arc<FaultProxy>,
    /// The task that cuts the connections once the armed loss happened.
    cutter: Mutex<Option<JoinHandle<()>>>,
    started: Instant,
}

impl Env {
    pub fn connect_string(&self) -> &str {
        &self.connect_string
    }

    pub fn root(&self) -> &str {
        &self.root
    }

    pub fn ttl_enabled(&self) -> bool {
        self.ttl_enabled
    }

    pub async fn within<F: Future>(&self, ms: u64, future: F) -> Option<F::Output> {
        tokio::time::timeout(Duration::from_millis(ms), future)
            .await
            .ok()
    }

    /// A second client's session (not behind the proxy).
    pub fn other(&self) -> &upstream::Client {
        &self.other
    }

    /// Milliseconds since the sequence began.
    pub fn now_ms(&self) -> u64 {
        self.started.elapsed().as_millis() as u64
    }

    /// The last request before the silence may go now.
    pub async fn before_idle(&self) {}

    /// Waits `timing_sequences::IDLE_MS`, silences the proxy's connection
    /// (bytes held both ways, nothing closed) for `SILENCE_MS`, and
    /// returns when.
    pub async fn silence_after_idle(&self) -> u64 {
        use super::timing_sequences::{IDLE_MS, SILENCE_MS};
        tokio::time::sleep(Duration::from_millis(IDLE_MS)).await;
        self.proxy.silence_for(SILENCE_MS);
        self.now_ms()
    }

    /// The next reply to the client vanishes; then the connection drops.
    pub async fn arm_reply_loss(&self) {
        let proxy = self.proxy.clone();
        let before = proxy.swallowed();
        proxy.black_hole(Hole::ToClient);
        self.start_cutter(async move {
            let swallowed = proxy
                .wait_swallowed(|s| s.replies > before.replies, SWALLOW_WAIT)
                .await;
            proxy.black_hole(Hole::Both);
            proxy.cut_all();
            swallowed.expect("real side: the reply was not lost");
        });
    }

    /// The next request vanishes before the server sees it; then the
    /// connection drops.
    pub async fn arm_request_loss(&self) {
        let proxy = self.proxy.clone();
        let before = proxy.swallowed();
        proxy.black_hole(Hole::Both);
        self.start_cutter(async move {
            let swallowed = proxy
                .wait_swallowed(|s| s.requests > before.requests, SWALLOW_WAIT)
                .await;
            proxy.cut_all();
            swallowed.expect("real side: the request was not lost");
        });
    }

    fn start_cutter(&self, cut: impl Future<Output = ()> + Send + 'static) {
        let task = tokio::spawn(cut);
        *self.cutter.lock().expect("cutter") = Some(task);
    }

    /// Lets the client reconnect (after the armed loss happened).
    pub async fn heal(&self) {
        let task = self.cutter.lock().expect("cutter").take();
        if let Some(task) = task {
            task.await.expect("real side: the cut failed");
        }
        self.proxy.heal();
    }

    /// Ends `client`'s session on the server while it is cut off, then
    /// lets it reconnect (and learn it).
    pub async fn expire(&self, client: &upstream::Client) {
        self.proxy.black_hole(Hole::Both);
        self.proxy.cut_all();
        let deadline = tokio::time::Instant::now() + DISCONNECT_WAIT;
        while client.state() != upstream::SessionState::Disconnected {
            assert!(
                tokio::time::Instant::now() < deadline,
                "real side: the client did not notice the cut within {DISCONNECT_WAIT:?}"
            );
            tokio::time::sleep(POLL).await;
        }
        let session = client.session().clone();
        let mut twin = LiveSession::connect_to(&self.server_addr, TWIN_TIMEOUT_MS, Some(session))
            .await
            .unwrap_or_else(|error| panic!("real side: joining the session: {error}"));
        twin.close()
            .await
            .unwrap_or_else(|error| panic!("real side: closing the session: {error}"));
        self.proxy.heal();
    }
}
