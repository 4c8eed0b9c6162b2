//! The real side of a live run: [`ZkBackend`] implements the simulator's
//! driver [`Backend`] over `zookeeper-client`, one [`LiveSession`] per
//! client session, each behind its own fault-injecting [`FaultProxy`]
//! (loopback only; it lives as long as the session and stops with it).
//!
//! Real faults:
//! - connection loss: the proxy cuts the client's connection; for the
//!   drop's `down_ms` its new connections fall into a black hole (the
//!   handshake is swallowed), then it heals and the client reconnects;
//! - connection loss before / after apply: a black hole toward the server
//!   (the request never arrives) or toward the client (the server applied
//!   it, the reply never arrives), then the cut;
//! - session expiry: a second connection into the victim's session (its id
//!   and password), closed: the server ends the session;
//! - a silent connection: the proxy forwards nothing either way for the
//!   fault's `down_ms` and closes nothing ([`FaultProxy::silence_for`]);
//!   the client library notices at its read timeout, the server expires
//!   the session if the silence outlasts it;
//! - a client pause: nothing passes the client's proxy until it resumes
//!   (no pings: past the session timeout the server expires it).
//!
//! Client-side expiry (the `client_expiry` policy): a session opened with
//! [`Backend::connect_abandonable`] is detached, and abandoning it closes
//! its proxy for good (a black hole, then gone): the client library can
//! neither close it nor reconnect into it, so the server keeps it until
//! its own timeout.
//!
//! A socket the harness cannot open (out of descriptors, ...) is recorded
//! ([`Backend::local_failure`]): the driver stops the run and the verdict
//! is the harness's error, never a recipe's liveness violation.

use crate::descriptors::LocalFailure;
use crate::proxy::{FaultProxy, Hole};
use crate::{LiveError, LiveSession};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::task::JoinHandle;
use zk_recipes::zk::{Path, Reply, Request, SessionId, Stat, WatchedEvent, ZkError, ZkResult};
use zk_sim::live::{
    Backend, BackendError, BoxFuture, Connection, LiveState, NodeInfo, RequestLoss,
};
use zookeeper_client as zkc;

/// How long the proxy may take to swallow the request or reply a
/// per-request fault waits for.
const SWALLOW_TIMEOUT: Duration = Duration::from_secs(5);

/// A real ZooKeeper server for the live driver.
pub struct ZkBackend {
    addr: String,
    session_timeout_ms: u64,
    start: Instant,
    /// A session of the driver's own (not through a proxy) for snapshots.
    observer: tokio::sync::Mutex<Option<LiveSession>>,
    /// The first local resource failure of the run (the proxies' included).
    local_failure: LocalFailure,
}

impl ZkBackend {
    /// A backend for the server at `addr`; client sessions ask for
    /// `session_timeout_ms`.
    pub fn new(addr: &str, session_timeout_ms: u64) -> ZkBackend {
        ZkBackend {
            addr: addr.to_string(),
            session_timeout_ms,
            start: Instant::now(),
            observer: tokio::sync::Mutex::new(None),
            local_failure: LocalFailure::default(),
        }
    }

    /// The server's address.
    pub fn addr(&self) -> &str {
        &self.addr
    }

    /// Where the run's local resource failures are recorded (for proxies
    /// the run opens itself).
    pub fn local_failures(&self) -> LocalFailure {
        self.local_failure.clone()
    }

    /// A session at `addr`; a failure for lack of descriptors is recorded
    /// as the harness's (the client library reports it as a lost connection).
    async fn open_session(
        &self,
        addr: &str,
        session: Option<zkc::SessionInfo>,
    ) -> Result<LiveSession, BackendError> {
        LiveSession::connect_to(addr, self.session_timeout_ms, session)
            .await
            .map_err(|error| self.session_failed(error))
    }

    /// A session could not be opened: maybe for want of a local resource.
    fn session_failed(&self, error: LiveError) -> BackendError {
        self.local_failure.probe("open a ZooKeeper session");
        BackendError(error.to_string())
    }

    /// Closes the observer session.
    pub async fn close(&self) {
        if let Some(mut observer) = self.observer.lock().await.take() {
            let _ = observer.close().await;
        }
    }

    async fn walk(&self, dir: &Path) -> Result<Vec<NodeInfo>, BackendError> {
        let mut observer = self.observer.lock().await;
        if observer.is_none() {
            *observer = Some(self.open_session(&self.addr, None).await?);
        }
        let session = observer.as_mut().expect("connected above");
        let nodes = walk_tree(session, dir).await.map_err(BackendError)?;
        Ok(nodes
            .into_iter()
            .map(|(path, stat)| NodeInfo {
                path,
                czxid: stat.czxid,
                ephemeral_owner: stat.ephemeral_owner,
            })
            .collect())
    }
}

/// `root` and every node below it with its stat, each parent before its
/// children; one read per node (a node without children is not listed).
/// Nodes deleted during the walk are left out.
pub(crate) async fn walk_tree(
    session: &mut LiveSession,
    root: &Path,
) -> Result<Vec<(Path, Stat)>, String> {
    let mut nodes = Vec::new();
    let mut pending = vec![root.clone()];
    while let Some(path) = pending.pop() {
        let read = session
            .apply(&Request::Exists {
                path: path.clone(),
                watch: false,
            })
            .await;
        let stat = match read {
            Ok(Reply::Exists(Some(stat))) => stat,
            Ok(_) => continue,
            Err(error) => return Err(format!("reading {path}: {error:?}")),
        };
        if stat.num_children > 0 {
            let listed = session
                .apply(&Request::GetChildren {
                    path: path.clone(),
                    watch: false,
                })
                .await;
            match listed {
                Ok(Reply::Children(children)) => {
                    pending.extend(children.iter().filter_map(|child| path.child(child).ok()));
                }
                Ok(_) | Err(ZkError::NoNode) => {}
                Err(error) => return Err(format!("listing {path}: {error:?}")),
            }
        }
        nodes.push((path, stat));
    }
    Ok(nodes)
}

impl ZkBackend {
    /// A client session behind a proxy of its own; `detached`: one that
    /// can be abandoned.
    async fn open_client(&self, detached: bool) -> Result<Box<dyn Connection>, BackendError> {
        let proxy = FaultProxy::start_reporting(&self.addr, self.local_failure.clone())
            .await
            .map_err(|error| BackendError(error.to_string()))?;
        let proxy_addr = proxy.addr().to_string();
        let session = if detached {
            LiveSession::connect_detached(&proxy_addr, self.session_timeout_ms)
                .await
                .map_err(|error| self.session_failed(error))?
        } else {
            self.open_session(&proxy_addr, None).await?
        };
        let state = session
            .state_watcher()
            .ok_or_else(|| BackendError("the new session closed at once".to_string()))?;
        let connection: Box<dyn Connection> = Box::new(ZkConnection {
            session,
            state,
            proxy: Arc::new(proxy),
            addr: self.addr.clone(),
            session_timeout_ms: self.session_timeout_ms,
            local_failure: self.local_failure.clone(),
            heal_timer: None,
        });
        Ok(connection)
    }
}

impl Backend for ZkBackend {
    fn connect(&self) -> BoxFuture<'_, Result<Box<dyn Connection>, BackendError>> {
        Box::pin(self.open_client(false))
    }

    fn connect_abandonable(&self) -> BoxFuture<'_, Result<Box<dyn Connection>, BackendError>> {
        Box::pin(self.open_client(true))
    }

    fn snapshot<'a>(&'a self, dir: &'a Path) -> BoxFuture<'a, Result<Vec<NodeInfo>, BackendError>> {
        Box::pin(self.walk(dir))
    }

    fn now_ns(&self) -> u64 {
        self.start.elapsed().as_nanos() as u64
    }

    fn sleep(&self, ms: u64) -> BoxFuture<'static, ()> {
        Box::pin(tokio::time::sleep(Duration::from_millis(ms)))
    }

    fn local_failure(&self) -> Option<String> {
        self.local_failure.get()
    }
}

/// One client session behind its own proxy.
struct ZkConnection {
    session: LiveSession,
    state: zkc::StateWatcher,
    proxy: Arc<FaultProxy>,
    /// The server itself (expiry connects there directly).
    addr: String,
    session_timeout_ms: u64,
    local_failure: LocalFailure,
    /// Ends a drop's down time.
    heal_timer: Option<JoinHandle<()>>,
}

impl ZkConnection {
    /// Cuts the connection; new ones fall into a hole for `down_ms`.
    fn cut(&mut self, down_ms: u64) {
        self.stop_heal_timer();
        self.heal_timer = cut_and_hold(&self.proxy, down_ms);
    }

    fn stop_heal_timer(&mut self) {
        if let Some(timer) = self.heal_timer.take() {
            timer.abort();
        }
    }

    async fn apply_losing(
        &mut self,
        request: &Request,
        loss: RequestLoss,
    ) -> (Vec<WatchedEvent>, ZkResult) {
        let (hole, down_ms) = match loss {
            RequestLoss::BeforeApply { down_ms } => (Hole::ToServer, down_ms),
            RequestLoss::AfterApply { down_ms } => (Hole::ToClient, down_ms),
        };
        let before = self.proxy.swallowed();
        self.stop_heal_timer();
        self.proxy.black_hole(hole);
        let proxy = self.proxy.clone();
        // Cut as soon as the hole swallowed the request (or its reply): the
        // client then sees the connection end with the request in flight.
        let cut = async move {
            let _ = proxy
                .wait_swallowed(
                    |now| match hole {
                        Hole::ToServer => now.requests > before.requests,
                        _ => now.replies > before.replies,
                    },
                    SWALLOW_TIMEOUT,
                )
                .await;
            cut_and_hold(&proxy, down_ms)
        };
        let (applied, heal_timer) = tokio::join!(self.session.apply_and_drain(request), cut);
        self.heal_timer = heal_timer;
        applied
    }
}

/// Ends every connection through `proxy`; new ones fall into a hole for
/// `down_ms` (the returned task heals it), or pass at once if it is 0.
fn cut_and_hold(proxy: &Arc<FaultProxy>, down_ms: u64) -> Option<JoinHandle<()>> {
    let timer = if down_ms == 0 {
        proxy.heal();
        None
    } else {
        proxy.black_hole(Hole::Both);
        let held = proxy.clone();
        Some(tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(down_ms)).await;
            held.heal();
        }))
    };
    proxy.cut_all();
    timer
}

impl Connection for ZkConnection {
    fn session_id(&self) -> SessionId {
        self.session.session_id()
    }

    fn session_timeout_ms(&self) -> u64 {
        self.session.session_timeout_ms()
    }

    fn state(&mut self) -> LiveState {
        // Consumes the state: `changed` then waits for the next change.
        match self.state.state() {
            zkc::SessionState::SyncConnected | zkc::SessionState::ConnectedReadOnly => {
                LiveState::Connected
            }
            zkc::SessionState::Disconnected => LiveState::Disconnected,
            zkc::SessionState::Expired
            | zkc::SessionState::Closed
            | zkc::SessionState::AuthFailed => LiveState::Expired,
        }
    }

    fn apply<'a>(
        &'a mut self,
        request: &'a Request,
        loss: Option<RequestLoss>,
    ) -> BoxFuture<'a, (Vec<WatchedEvent>, ZkResult)> {
        Box::pin(async move {
            let (events, result) = match loss {
                None => self.session.apply_and_drain(request).await,
                Some(loss) => self.apply_losing(request, loss).await,
            };
            (node_events(events), result)
        })
    }

    fn drain_events(&mut self) -> Vec<WatchedEvent> {
        node_events(self.session.drain_events())
    }

    fn changed(&mut self) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            let state = &mut self.state;
            let session = &mut self.session;
            tokio::select! {
                _ = state.changed() => {}
                _ = session.watch_fired() => {}
            }
        })
    }

    fn disconnect(&mut self, down_ms: u64) {
        self.cut(down_ms);
    }

    fn silence(&mut self, down_ms: u64) {
        self.proxy.silence_for(down_ms);
    }

    fn pause(&mut self) {
        self.stop_heal_timer();
        self.proxy.black_hole(Hole::Both);
    }

    fn resume(&mut self) {
        self.proxy.heal();
    }

    fn expire(&mut self) -> BoxFuture<'_, Result<(), BackendError>> {
        Box::pin(async move {
            let info = self
                .session
                .session_info()
                .ok_or_else(|| BackendError("the session is closed".to_string()))?;
            let mut twin = LiveSession::connect_to(&self.addr, self.session_timeout_ms, Some(info))
                .await
                .map_err(|error| {
                    self.local_failure
                        .probe("open a connection to expire a session");
                    BackendError(error.to_string())
                })?;
            twin.close()
                .await
                .map_err(|error| BackendError(error.to_string()))
        })
    }

    fn heal(&mut self) {
        self.stop_heal_timer();
        self.proxy.heal();
        self.proxy.end_silence();
    }

    fn close(&mut self) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            self.heal();
            let _ = self.session.close().await;
        })
    }

    fn abandon(&mut self) {
        // Nothing more reaches the server through the proxy: neither a
        // close (if the session is not detached) nor a reconnect into it.
        self.stop_heal_timer();
        self.proxy.black_hole(Hole::Both);
        self.proxy.cut_all();
        self.session.abandon();
    }
}

impl Drop for ZkConnection {
    fn drop(&mut self) {
        self.stop_heal_timer();
    }
}

/// The node events among `events` (state changes are read from the state).
fn node_events(events: Vec<WatchedEvent>) -> Vec<WatchedEvent> {
    events
        .into_iter()
        .filter(|event| event.path.is_some())
        .collect()
}
