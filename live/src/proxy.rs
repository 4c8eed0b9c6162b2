//! A fault-injecting TCP proxy between ZooKeeper clients and a real server,
//! for the fault-path conformance tests: clients connect to
//! [`FaultProxy::addr`] instead of the server, and the test cuts or silences
//! their connections at will.
//!
//! Faults, each applying to every connection through the proxy at once:
//! - [`FaultProxy::cut_all`]: every open connection ends now; the client sees
//!   a clean end of stream (so its requests in flight fail with
//!   ConnectionLoss), the server sees its connection close.
//! - [`FaultProxy::black_hole`]: frames stop being forwarded in one or both
//!   directions and are swallowed; connections stay open and new ones are
//!   accepted (into the hole). Like a network partition: nobody is told.
//! - [`FaultProxy::heal`]: frames flow again. A connection that lost a frame
//!   in the hole cannot carry on (its byte stream has a gap), so healing cuts
//!   it; the client reconnects.
//! - [`FaultProxy::silence_for`]: a silent network for `down_ms` (the
//!   simulator's `silent` fault): nothing is forwarded either way and
//!   nothing is lost or closed; what either end sends waits in the proxy
//!   (as TCP retransmits it) and is delivered in order when the silence
//!   ends, so the connection carries on. A client notices only by its own
//!   read timeout, a server by its session timeout. What a client sent on a
//!   connection it closed during the silence never arrives (as in the
//!   simulator, where a message into the silence is lost if its connection
//!   is gone by the silence's end), and a connection opened during the
//!   silence reaches the server only when it ends, if the client still
//!   waits on it (an unanswered SYN: the server never hears of an attempt
//!   the client gave up). Overlapping silences last until the last one
//!   ends; [`FaultProxy::end_silence`] ends them all at once.
//!
//! The proxy forwards whole frames of ZooKeeper's wire protocol (a 4-byte
//! big-endian length, then the body), so a hole opens and closes between
//! frames, and it counts what it swallowed: requests and replies (frames
//! whose xid is positive, i.e. not pings, notifications or the connect
//! handshake). [`FaultProxy::wait_swallowed`] lets a test act at the exact
//! moment a request or its reply disappeared.
//!
//! Faults the proxy strikes by itself, for clients whose requests the
//! harness does not send (the user's own async code through the real
//! client crate):
//! - [`FaultProxy::set_request_hook`]: every client request (xid > 0) is
//!   numbered 1, 2, 3, ... over the proxy's life and the hook may choose to
//!   lose it ([`RequestLoss::BeforeApply`]: the request never reaches the
//!   server) or its reply ([`RequestLoss::AfterApply`]: the server applies
//!   it, the client never hears). Then, in one control update, a hole opens
//!   both ways and every connection is cut, so the client's reconnects fall
//!   into the hole; it heals by itself `down_ms` later.
//! - [`FaultProxy::drop_for`]: the same hole-and-cut, at once.
//! - [`FaultProxy::session`]: the session the server granted on the latest
//!   link (sniffed from its connect response), so that a test can expire it
//!   behind the client's back ([`crate::takeover::expire_session`]).
//!
//! A heal timer heals only the hole it was set for: any later change of the
//! hole (a new fault, a heal) makes it stale.
//!
//! A proxy that cannot accept a connection or open its upstream socket
//! because the process ran out of descriptors (or another local resource)
//! records it ([`FaultProxy::local_failure`]): the harness failed, not the
//! server or the recipe. A failed accept backs off before it retries.
//!
//! Runs on the ambient tokio runtime; dropping the proxy closes everything.

mod connection;
mod frames;

pub(crate) use frames::{read_frame, ConnectResponse};

use crate::descriptors::LocalFailure;
use connection::accept_loop;
use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinHandle;
pub use zk_sim::live::RequestLoss;

/// Chooses, from a client request's number (1, 2, 3, ... over the proxy's
/// life), whether to lose it or its reply.
pub type RequestHook = Arc<dyn Fn(u64) -> Option<RequestLoss> + Send + Sync>;

/// The session a server granted on a proxied link (its connect response).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LinkSession {
    pub session_id: i64,
    pub password: Vec<u8>,
    pub timeout_ms: i32,
}

/// Which directions a black hole swallows.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Hole {
    /// Everything is forwarded.
    #[default]
    None,
    /// Client-to-server frames (requests, pings) are swallowed.
    ToServer,
    /// Server-to-client frames (replies, notifications) are swallowed.
    ToClient,
    /// Nothing gets through.
    Both,
}

/// One direction of a proxied connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direction {
    ToServer,
    ToClient,
}

impl Hole {
    pub fn swallows(self, direction: Direction) -> bool {
        match self {
            Hole::None => false,
            Hole::ToServer => direction == Direction::ToServer,
            Hole::ToClient => direction == Direction::ToClient,
            Hole::Both => true,
        }
    }
}

/// What the holes swallowed so far, over all connections.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Swallowed {
    /// Client requests (xid > 0), not pings or the connect request.
    pub requests: u64,
    /// Replies to client requests (xid > 0).
    pub replies: u64,
    /// Watch notifications (xid -1).
    pub notifications: u64,
    /// Every other frame: handshakes, pings, SetWatches, ...
    pub other_frames: u64,
}

/// Frames a silence held back so far (delivered at its end, or lost with a
/// connection the client gave up), over all connections.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HeldFrames {
    /// Client-to-server frames: requests, pings, handshakes.
    pub to_server: u64,
    /// Server-to-client frames: replies, notifications, handshakes.
    pub to_client: u64,
}

/// Why the proxy could not start or a wait failed.
#[derive(Debug, thiserror::Error)]
pub enum ProxyError {
    #[error("the proxy could not listen on 127.0.0.1: {0}")]
    Bind(io::Error),
    #[error("the proxy did not swallow what was awaited within {waited_ms} ms (swallowed: {swallowed:?})")]
    WaitTimeout {
        waited_ms: u64,
        swallowed: Swallowed,
    },
}

/// A fault-injecting proxy listening on a local port.
pub struct FaultProxy {
    addr: SocketAddr,
    shared: Arc<Shared>,
    /// The accept loop; it owns every connection task (aborted with it).
    accept_task: JoinHandle<()>,
}

/// The faults in force, as every connection task sees them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Control {
    /// Incremented by `cut_all`: connections accepted before it end.
    cut_epoch: u64,
    hole: Hole,
    /// Incremented by every change of the hole: a heal timer heals only the
    /// hole of its own generation.
    hole_generation: u64,
    /// Silences in force ([`FaultProxy::silence_for`]): while any is, no
    /// frame is forwarded either way.
    silences: u32,
    /// Incremented by [`FaultProxy::end_silence`]: a silence's timer ends
    /// only a silence of its own generation.
    silence_generation: u64,
}

impl Control {
    fn silent(&self) -> bool {
        self.silences > 0
    }
}

struct Shared {
    /// Where new connections go (see [`FaultProxy::redirect`]).
    upstream: std::sync::Mutex<String>,
    control: watch::Sender<Control>,
    swallowed: watch::Sender<Swallowed>,
    open_connections: AtomicUsize,
    /// Where local resource failures go (see [`FaultProxy::local_failure`]).
    local_failure: LocalFailure,
    /// The latest session granted on a link (see [`FaultProxy::session`]).
    session: watch::Sender<Option<LinkSession>>,
    request_hook: Mutex<Option<RequestHook>>,
    /// Frames held by silences, to the server and to the client.
    held_to_server: AtomicU64,
    held_to_client: AtomicU64,
    /// Client requests numbered so far (the last number given).
    requests_numbered: AtomicU64,
    losses_struck: AtomicU64,
    /// Where heal timers run: the runtime the proxy started on.
    runtime: tokio::runtime::Handle,
}

impl Shared {
    /// Replaces the hole; any pending heal timer becomes stale.
    fn set_hole(&self, hole: Hole) {
        self.control.send_modify(|control| {
            control.hole = hole;
            control.hole_generation += 1;
        });
    }

    /// In one control update: a hole both ways (none if `down_ms` is 0) and
    /// a cut of every connection; heals by itself after `down_ms`.
    fn drop_for(self: &Arc<Self>, down_ms: u64) {
        let mut generation = 0;
        self.control.send_modify(|control| {
            control.cut_epoch += 1;
            control.hole = if down_ms == 0 { Hole::None } else { Hole::Both };
            control.hole_generation += 1;
            generation = control.hole_generation;
        });
        if down_ms > 0 {
            self.heal_later(generation, down_ms);
        }
    }

    /// Heals after `down_ms` if the hole is still of `generation`.
    fn heal_later(self: &Arc<Self>, generation: u64, down_ms: u64) {
        let shared: Weak<Shared> = Arc::downgrade(self);
        self.runtime.spawn(async move {
            tokio::time::sleep(Duration::from_millis(down_ms)).await;
            if let Some(shared) = shared.upgrade() {
                shared.heal_generation(generation);
            }
        });
    }

    fn heal_generation(&self, generation: u64) {
        self.control.send_if_modified(|control| {
            let current = control.hole_generation == generation;
            if current {
                control.hole = Hole::None;
                control.hole_generation += 1;
            }
            current
        });
    }

    /// A silence for `down_ms` (none if 0), ended by its own timer.
    fn silence_for(self: &Arc<Self>, down_ms: u64) {
        if down_ms == 0 {
            return;
        }
        let mut generation = 0;
        self.control.send_modify(|control| {
            control.silences += 1;
            generation = control.silence_generation;
        });
        let shared: Weak<Shared> = Arc::downgrade(self);
        self.runtime.spawn(async move {
            tokio::time::sleep(Duration::from_millis(down_ms)).await;
            if let Some(shared) = shared.upgrade() {
                shared.control.send_if_modified(|control| {
                    let current = control.silence_generation == generation && control.silent();
                    if current {
                        control.silences -= 1;
                    }
                    current
                });
            }
        });
    }

    /// Counts a frame a silence holds back.
    fn note_held(&self, direction: Direction) {
        let counter = match direction {
            Direction::ToServer => &self.held_to_server,
            Direction::ToClient => &self.held_to_client,
        };
        counter.fetch_add(1, Ordering::SeqCst);
    }

    /// Asks the hook (if any) about request `number`.
    fn ask_hook(&self, number: u64) -> Option<RequestLoss> {
        let hook = self.request_hook.lock().unwrap().clone();
        hook.and_then(|hook| hook(number))
    }

    /// Records the session of a connect response (frame 0 to the client).
    fn note_session(&self, frame: &[u8]) {
        if let Some(response) = frame.get(4..).and_then(ConnectResponse::parse) {
            self.session.send_replace(response.granted());
        }
    }
}

impl FaultProxy {
    /// Listens on an ephemeral port of 127.0.0.1 and forwards every
    /// connection to `upstream` (`host:port`).
    pub async fn start(upstream: &str) -> Result<FaultProxy, ProxyError> {
        FaultProxy::start_reporting(upstream, LocalFailure::default()).await
    }

    /// [`FaultProxy::start`], recording local resource failures (its own
    /// listener's included) in `local_failure`, shared with the caller.
    pub async fn start_reporting(
        upstream: &str,
        local_failure: LocalFailure,
    ) -> Result<FaultProxy, ProxyError> {
        let listener = TcpListener::bind("127.0.0.1:0").await.map_err(|error| {
            local_failure.note("open a proxy's listener", &error);
            ProxyError::Bind(error)
        })?;
        let addr = listener.local_addr().map_err(ProxyError::Bind)?;
        let shared = Arc::new(Shared {
            upstream: std::sync::Mutex::new(upstream.to_string()),
            control: watch::Sender::new(Control::default()),
            swallowed: watch::Sender::new(Swallowed::default()),
            open_connections: AtomicUsize::new(0),
            local_failure,
            session: watch::Sender::new(None),
            request_hook: Mutex::new(None),
            held_to_server: AtomicU64::new(0),
            held_to_client: AtomicU64::new(0),
            requests_numbered: AtomicU64::new(0),
            losses_struck: AtomicU64::new(0),
            runtime: tokio::runtime::Handle::current(),
        });
        let accept_task = tokio::spawn(accept_loop(listener, shared.clone()));
        Ok(FaultProxy {
            addr,
            shared,
            accept_task,
        })
    }

    /// Where clients connect.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Sends connections accepted from now on to `upstream` (`host:port`)
    /// instead; open ones stay with their server until they end. With
    /// [`FaultProxy::cut_all`], this moves a client to another server of an
    /// ensemble without the client knowing more than one address.
    pub fn redirect(&self, upstream: &str) {
        *self.shared.upstream.lock().unwrap() = upstream.to_string();
    }

    /// Where new connections go.
    pub fn upstream(&self) -> String {
        self.shared.upstream.lock().unwrap().clone()
    }

    /// Ends every connection open now. New connections are accepted (and
    /// fall into the black hole if one is open).
    pub fn cut_all(&self) {
        self.shared
            .control
            .send_modify(|control| control.cut_epoch += 1);
    }

    /// Opens a black hole (replacing the current one; a pending heal of the
    /// old one will not touch it).
    pub fn black_hole(&self, hole: Hole) {
        self.shared.set_hole(hole);
    }

    /// A connection loss for `down_ms`: in one update, opens a hole both
    /// ways and cuts every connection (so reconnects hang in the hole); heals
    /// by itself after `down_ms` unless the hole changed meanwhile. With 0,
    /// heals at once and cuts.
    pub fn drop_for(&self, down_ms: u64) {
        self.shared.drop_for(down_ms);
    }

    /// A silent network for `down_ms` (see the module doc): every
    /// connection, open or opened meanwhile, forwards nothing either way
    /// and stays open; what waits is delivered when the silence ends. A
    /// silence already in force lasts until the later end. With 0, nothing.
    pub fn silence_for(&self, down_ms: u64) {
        self.shared.silence_for(down_ms);
    }

    /// Ends every silence now: what waited is delivered.
    pub fn end_silence(&self) {
        self.shared.control.send_if_modified(|control| {
            let silent = control.silent();
            control.silences = 0;
            control.silence_generation += 1;
            silent
        });
    }

    /// Whether a silence is in force.
    pub fn silent(&self) -> bool {
        self.shared.control.borrow().silent()
    }

    /// The frames silences held back so far.
    pub fn held(&self) -> HeldFrames {
        HeldFrames {
            to_server: self.shared.held_to_server.load(Ordering::SeqCst),
            to_client: self.shared.held_to_client.load(Ordering::SeqCst),
        }
    }

    /// Lets `hook` choose, for every client request from now on, whether
    /// to lose it or its reply (see the module doc). It is not asked while a
    /// black hole is open.
    pub fn set_request_hook(&self, hook: RequestHook) {
        *self.shared.request_hook.lock().unwrap() = Some(hook);
    }

    /// Stops asking a hook; requests flow normally.
    pub fn clear_request_hook(&self) {
        *self.shared.request_hook.lock().unwrap() = None;
    }

    /// Client requests numbered so far (the number of the last one).
    pub fn requests_numbered(&self) -> u64 {
        self.shared.requests_numbered.load(Ordering::SeqCst)
    }

    /// Request losses struck so far (a lost request or a lost reply).
    pub fn losses_struck(&self) -> u64 {
        self.shared.losses_struck.load(Ordering::SeqCst)
    }

    /// The session the server granted on the latest link, `None` before
    /// any or after the server refused one (an expired session).
    pub fn session(&self) -> Option<LinkSession> {
        self.shared.session.borrow().clone()
    }

    /// Follows [`FaultProxy::session`] as it changes.
    pub fn session_changes(&self) -> watch::Receiver<Option<LinkSession>> {
        self.shared.session.subscribe()
    }

    /// Waits until a session was granted on a link, at most `timeout`.
    pub async fn wait_session(&self, timeout: Duration) -> Option<LinkSession> {
        let mut receiver = self.shared.session.subscribe();
        let waited = tokio::time::timeout(timeout, receiver.wait_for(Option::is_some)).await;
        match waited {
            Ok(Ok(session)) => session.clone(),
            _ => None,
        }
    }

    /// Closes the black hole; connections that lost a frame in it are cut.
    pub fn heal(&self) {
        self.black_hole(Hole::None);
    }

    /// The black hole in force.
    pub fn hole(&self) -> Hole {
        self.shared.control.borrow().hole
    }

    /// What the holes swallowed so far.
    pub fn swallowed(&self) -> Swallowed {
        *self.shared.swallowed.borrow()
    }

    /// Waits until the swallowed counts satisfy `done`, at most `timeout`.
    pub async fn wait_swallowed(
        &self,
        mut done: impl FnMut(&Swallowed) -> bool,
        timeout: Duration,
    ) -> Result<Swallowed, ProxyError> {
        let mut receiver = self.shared.swallowed.subscribe();
        let waited = tokio::time::timeout(timeout, receiver.wait_for(|s| done(s))).await;
        match waited {
            Ok(Ok(swallowed)) => Ok(*swallowed),
            _ => Err(ProxyError::WaitTimeout {
                waited_ms: timeout.as_millis() as u64,
                swallowed: self.swallowed(),
            }),
        }
    }

    /// The first time the proxy could not accept a connection or open its
    /// upstream socket for lack of a local resource (`EMFILE`, ...): the
    /// harness's failure. Refused connections (a server down) are not one.
    pub fn local_failure(&self) -> Option<String> {
        self.shared.local_failure.get()
    }

    /// Connections currently open through the proxy.
    pub fn open_connections(&self) -> usize {
        self.shared.open_connections.load(Ordering::Relaxed)
    }
}

impl Drop for FaultProxy {
    fn drop(&mut self) {
        self.accept_task.abort();
    }
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod self_struck_faults;

#[cfg(test)]
mod silences;
