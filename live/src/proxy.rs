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

use crate::descriptors::LocalFailure;
use std::collections::VecDeque;
use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::{JoinHandle, JoinSet};
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

/// A server's ConnectResponse (jute): what a client learns at the handshake.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ConnectResponse {
    /// `<= 0`: the server refused the session (expired or a wrong password).
    pub timeout_ms: i32,
    pub session_id: i64,
    pub password: Vec<u8>,
}

impl ConnectResponse {
    /// Parses a frame's body (after the length prefix): i32 protocolVersion,
    /// i32 timeOut, i64 sessionId, buffer passwd, optional bool readOnly.
    pub(crate) fn parse(body: &[u8]) -> Option<ConnectResponse> {
        let timeout_ms = i32::from_be_bytes(body.get(4..8)?.try_into().ok()?);
        let session_id = i64::from_be_bytes(body.get(8..16)?.try_into().ok()?);
        let length = i32::from_be_bytes(body.get(16..20)?.try_into().ok()?);
        // A null buffer (length -1) is an empty password.
        let length = usize::try_from(length.max(0)).ok()?;
        let password = body.get(20..20usize.checked_add(length)?)?.to_vec();
        Some(ConnectResponse {
            timeout_ms,
            session_id,
            password,
        })
    }

    /// The session granted, or `None` if the server refused it.
    pub(crate) fn granted(self) -> Option<LinkSession> {
        (self.timeout_ms > 0).then_some(LinkSession {
            session_id: self.session_id,
            password: self.password,
            timeout_ms: self.timeout_ms,
        })
    }
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

/// What happens to one frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Fate {
    Forward,
    Swallow,
    /// Swallowed, then a hole both ways and a cut of every connection, healed
    /// after `down_ms`: a request loss strikes.
    Strike {
        down_ms: u64,
    },
}

/// The state of one proxied connection that both its pumps see.
#[derive(Default)]
struct Link {
    /// Set when a frame of this connection was swallowed.
    damaged: AtomicBool,
    /// Requests forwarded whose reply is to be lost: (xid, down_ms).
    replies_to_lose: Mutex<Vec<(i32, u64)>>,
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

/// Largest frame forwarded; ZooKeeper's own limit (jute.maxbuffer) is ~1 MB.
const MAX_FRAME_BYTES: usize = 16 << 20;

/// How long a cut connection waits for the client to close its side after
/// the proxy closed its own, before it is dropped anyway.
const CLOSE_LINGER: Duration = Duration::from_secs(2);

/// How long the accept loop waits after a failed accept: the error (out of
/// descriptors, say) leaves the listener ready, so retrying at once spins.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(100);

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

async fn accept_loop(listener: TcpListener, shared: Arc<Shared>) {
    let mut connections = JoinSet::new();
    loop {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((client, _)) => {
                    let epoch = shared.control.borrow().cut_epoch;
                    connections.spawn(serve_connection(client, epoch, shared.clone()));
                }
                Err(error) => {
                    shared.local_failure.note("accept a connection in a proxy", &error);
                    tokio::time::sleep(ACCEPT_BACKOFF).await;
                }
            },
            // Reap finished connection tasks so the set does not grow.
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
        }
    }
}

/// Counts a connection as open while it lives.
struct OpenGuard<'a>(&'a AtomicUsize);

impl<'a> OpenGuard<'a> {
    fn new(counter: &'a AtomicUsize) -> OpenGuard<'a> {
        counter.fetch_add(1, Ordering::Relaxed);
        OpenGuard(counter)
    }
}

impl Drop for OpenGuard<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Forwards one client connection until either side closes, a cut, or a
/// heal that finds it damaged; then closes the client side gently. A
/// connection accepted during a silence reaches the server only when the
/// silence ends, and not at all if the client closes it first.
async fn serve_connection(client: TcpStream, epoch: u64, shared: Arc<Shared>) {
    let _open = OpenGuard::new(&shared.open_connections);
    // Frames are small and answered one by one: no Nagle delays on the hop.
    let _ = client.set_nodelay(true);
    let (client_read, mut client_write) = client.into_split();
    let mut client_read = FrameReader::new(client_read);
    let mut control = shared.control.subscribe();
    let early = match wait_to_connect(&mut client_read, &mut control, epoch, &shared).await {
        Some(early) => early,
        None => return close_gently(client_read.into_inner(), client_write).await,
    };
    let upstream = shared.upstream.lock().unwrap().clone();
    let connected = TcpStream::connect(&upstream).await;
    if let Err(error) = &connected {
        let what = format!("connect a proxy to {upstream}");
        shared.local_failure.note(&what, error);
    }
    if let Ok(server) = connected {
        let _ = server.set_nodelay(true);
        let (server_read, mut server_write) = server.into_split();
        let mut server_read = FrameReader::new(server_read);
        // The pumps and `until_ended` run in this one task, so a pump's
        // check of the hole and its marking of damage are never interleaved
        // with `until_ended`'s check.
        let link = Link::default();
        let to_server = Pump::new(Direction::ToServer, &shared, &link, early);
        let to_client = Pump::new(Direction::ToClient, &shared, &link, Waiting::default());
        tokio::select! {
            _ = to_server.run(&mut client_read, &mut server_write) => {}
            _ = to_client.run(&mut server_read, &mut client_write) => {}
            _ = until_ended(&mut control, epoch, &link.damaged) => {}
        }
    }
    close_gently(client_read.into_inner(), client_write).await;
}

/// Holds a connection accepted during a silence (its frames wait) until the
/// silence ends: what waited then, or `None` if the client closed it or a
/// cut ended it first.
async fn wait_to_connect(
    client: &mut FrameReader<OwnedReadHalf>,
    control: &mut watch::Receiver<Control>,
    epoch: u64,
    shared: &Shared,
) -> Option<Waiting> {
    let mut early = Waiting::default();
    loop {
        {
            let now = control.borrow_and_update();
            if now.cut_epoch != epoch {
                return None;
            }
            if !now.silent() {
                return Some(early);
            }
        }
        tokio::select! {
            read = client.next() => match read {
                Ok(frame) => early.hold(frame, shared, Direction::ToServer),
                Err(_) => return None,
            },
            changed = control.changed() => changed.ok()?,
        }
    }
}

/// Returns when the connection must end: cut, or healed after damage.
async fn until_ended(control: &mut watch::Receiver<Control>, epoch: u64, damaged: &AtomicBool) {
    loop {
        {
            let now = control.borrow_and_update();
            let healed_after_damage = now.hole == Hole::None && damaged.load(Ordering::Relaxed);
            if now.cut_epoch != epoch || healed_after_damage {
                return;
            }
        }
        if control.changed().await.is_err() {
            return;
        }
    }
}

/// What one direction of a link holds back for the end of a silence.
#[derive(Default)]
struct Waiting {
    frames: VecDeque<Vec<u8>>,
    /// The sender closed its side during the silence.
    ended: bool,
}

impl Waiting {
    fn hold(&mut self, frame: Vec<u8>, shared: &Shared, direction: Direction) {
        shared.note_held(direction);
        self.frames.push_back(frame);
    }

    /// The next thing to forward after a silence: a frame, or the sender's
    /// end once its frames are out (`Some(Err)`). A client that closed its
    /// connection during the silence gave up on what it sent there: it is
    /// dropped, as the simulator loses a message into the silence whose
    /// connection is gone by its end.
    fn next(&mut self, direction: Direction) -> Option<io::Result<Vec<u8>>> {
        if self.ended && direction == Direction::ToServer {
            self.frames.clear();
        }
        match self.frames.pop_front() {
            Some(frame) => Some(Ok(frame)),
            None if self.ended => Some(Err(io::ErrorKind::UnexpectedEof.into())),
            None => None,
        }
    }
}

/// One direction of a proxied connection.
struct Pump<'a> {
    direction: Direction,
    shared: &'a Arc<Shared>,
    link: &'a Link,
    waiting: Waiting,
    control: watch::Receiver<Control>,
}

impl<'a> Pump<'a> {
    fn new(
        direction: Direction,
        shared: &'a Arc<Shared>,
        link: &'a Link,
        waiting: Waiting,
    ) -> Self {
        let control = shared.control.subscribe();
        Pump {
            direction,
            shared,
            link,
            waiting,
            control,
        }
    }

    /// Forwards whole frames from `from` to `to`, swallowing them while the
    /// hole covers the pump's direction and holding them while a silence
    /// lasts. Returns when the stream ends outside a hole (an end inside a
    /// hole is swallowed too: the connection then waits for a cut or a heal).
    async fn run(mut self, from: &mut FrameReader<OwnedReadHalf>, to: &mut OwnedWriteHalf) {
        let (shared, link, direction) = (self.shared, self.link, self.direction);
        let mut index = 0u64;
        loop {
            if self.control.borrow().silent() {
                self.hold_while_silent(from).await;
                continue;
            }
            let frame = match self.waiting.next(direction) {
                Some(frame) => frame,
                None => {
                    let read = from.next().await;
                    // Read as a silence began: it waits for the silence's end.
                    if self.control.borrow().silent() {
                        self.wait(read);
                        continue;
                    }
                    read
                }
            };
            let fate = match &frame {
                Ok(frame) => fate(shared, link, direction, index, frame),
                Err(_) if shared.control.borrow().hole.swallows(direction) => Fate::Swallow,
                Err(_) => Fate::Forward,
            };
            match (frame, fate) {
                (Ok(frame), Fate::Forward) => {
                    if to.write_all(&frame).await.is_err() {
                        return;
                    }
                }
                (Ok(frame), Fate::Swallow) => swallow(shared, link, direction, index, &frame),
                (Ok(frame), Fate::Strike { down_ms }) => {
                    shared.losses_struck.fetch_add(1, Ordering::SeqCst);
                    shared.drop_for(down_ms);
                    swallow(shared, link, direction, index, &frame);
                }
                (Err(_), Fate::Forward) => return,
                (Err(_), _) => {
                    link.damaged.store(true, Ordering::Relaxed);
                    std::future::pending::<()>().await;
                }
            }
            index += 1;
        }
    }

    /// Reads what arrives into the waiting queue until no silence is in force.
    async fn hold_while_silent(&mut self, from: &mut FrameReader<OwnedReadHalf>) {
        loop {
            if !self.control.borrow_and_update().silent() {
                return;
            }
            let ended = self.waiting.ended;
            tokio::select! {
                read = from.next(), if !ended => self.wait(read),
                changed = self.control.changed() => {
                    if changed.is_err() {
                        return;
                    }
                }
            }
        }
    }

    /// Holds what was read (a frame, or the sender's end) for the silence's end.
    fn wait(&mut self, read: io::Result<Vec<u8>>) {
        match read {
            Ok(frame) => self.waiting.hold(frame, self.shared, self.direction),
            Err(_) => self.waiting.ended = true,
        }
    }
}

/// Marks the link damaged and counts the swallowed frame.
fn swallow(shared: &Shared, link: &Link, direction: Direction, index: u64, frame: &[u8]) {
    link.damaged.store(true, Ordering::Relaxed);
    shared
        .swallowed
        .send_modify(|counts| count(counts, direction, index, frame));
}

/// Decides what happens to frame `index` of one direction of a link:
/// numbers client requests and asks the hook about them, loses the replies
/// chosen, records the session of a forwarded connect response.
fn fate(shared: &Shared, link: &Link, direction: Direction, index: u64, frame: &[u8]) -> Fate {
    let hole = shared.control.borrow().hole;
    let swallowed = if hole.swallows(direction) {
        Fate::Swallow
    } else {
        Fate::Forward
    };
    let xid = frame_xid(index, frame).filter(|xid| *xid > 0);
    match (direction, xid) {
        (Direction::ToServer, Some(xid)) => {
            let number = shared.requests_numbered.fetch_add(1, Ordering::SeqCst) + 1;
            if hole != Hole::None {
                return swallowed;
            }
            match shared.ask_hook(number) {
                None => Fate::Forward,
                Some(RequestLoss::BeforeApply { down_ms }) => Fate::Strike { down_ms },
                Some(RequestLoss::AfterApply { down_ms }) => {
                    link.replies_to_lose.lock().unwrap().push((xid, down_ms));
                    Fate::Forward
                }
            }
        }
        (Direction::ToClient, Some(xid)) => match (take_reply_to_lose(link, xid), swallowed) {
            // A hole that swallows the reply anyway wins: no strike.
            (Some(down_ms), Fate::Forward) => Fate::Strike { down_ms },
            _ => swallowed,
        },
        (Direction::ToClient, None) if index == 0 && swallowed == Fate::Forward => {
            shared.note_session(frame);
            Fate::Forward
        }
        _ => swallowed,
    }
}

/// The `down_ms` of a loss chosen for the reply to `xid`, removing it.
fn take_reply_to_lose(link: &Link, xid: i32) -> Option<u64> {
    let mut replies = link.replies_to_lose.lock().unwrap();
    let position = replies.iter().position(|(lost, _)| *lost == xid)?;
    Some(replies.swap_remove(position).1)
}

/// The xid of a frame other than a handshake (frame 0 of each direction).
fn frame_xid(index: u64, frame: &[u8]) -> Option<i32> {
    let xid = frame.get(4..8).filter(|_| index > 0)?;
    Some(i32::from_be_bytes(xid.try_into().ok()?))
}

/// One frame, length prefix included.
pub(crate) async fn read_frame(from: &mut (impl AsyncRead + Unpin)) -> io::Result<Vec<u8>> {
    let mut prefix = [0u8; 4];
    from.read_exact(&mut prefix).await?;
    let length = frame_length(prefix)?;
    let mut frame = vec![0u8; 4 + length];
    frame[..4].copy_from_slice(&prefix);
    from.read_exact(&mut frame[4..]).await?;
    Ok(frame)
}

/// Reads whole frames, keeping a partial one across cancellation (a
/// `select!` that stops waiting loses nothing).
pub(crate) struct FrameReader<R> {
    inner: R,
    buffer: Vec<u8>,
}

impl<R: AsyncRead + Unpin> FrameReader<R> {
    pub(crate) fn new(inner: R) -> FrameReader<R> {
        FrameReader {
            inner,
            buffer: Vec::new(),
        }
    }

    pub(crate) fn into_inner(self) -> R {
        self.inner
    }

    /// The next frame, length prefix included; an error at the end of the
    /// stream or on bytes that are no ZooKeeper frame. Cancel-safe.
    pub(crate) async fn next(&mut self) -> io::Result<Vec<u8>> {
        loop {
            if let Some(frame) = self.complete_frame()? {
                return Ok(frame);
            }
            self.buffer.reserve(4096);
            if self.inner.read_buf(&mut self.buffer).await? == 0 {
                return Err(io::ErrorKind::UnexpectedEof.into());
            }
        }
    }

    /// The first frame of the buffer, if it is all there.
    fn complete_frame(&mut self) -> io::Result<Option<Vec<u8>>> {
        let Some(prefix) = self.buffer.get(..4) else {
            return Ok(None);
        };
        let length = frame_length(prefix.try_into().expect("4 bytes"))?;
        if self.buffer.len() < 4 + length {
            return Ok(None);
        }
        let rest = self.buffer.split_off(4 + length);
        Ok(Some(std::mem::replace(&mut self.buffer, rest)))
    }
}

/// The body length a frame's prefix announces, if it is a ZooKeeper frame's.
fn frame_length(prefix: [u8; 4]) -> io::Result<usize> {
    usize::try_from(i32::from_be_bytes(prefix))
        .ok()
        .filter(|length| *length <= MAX_FRAME_BYTES)
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, "not a ZooKeeper frame"))
}

/// Classifies a swallowed frame. Frame 0 of each direction is the connect
/// handshake; every later one starts with its xid.
fn count(counts: &mut Swallowed, direction: Direction, index: u64, frame: &[u8]) {
    let xid = match frame.get(4..8) {
        Some(xid) if index > 0 => i32::from_be_bytes(xid.try_into().unwrap()),
        _ => {
            counts.other_frames += 1;
            return;
        }
    };
    match (direction, xid) {
        (Direction::ToServer, xid) if xid > 0 => counts.requests += 1,
        (Direction::ToClient, xid) if xid > 0 => counts.replies += 1,
        (Direction::ToClient, -1) => counts.notifications += 1,
        _ => counts.other_frames += 1,
    }
}

/// Ends the client side with a FIN rather than a reset: closes our write
/// side, then reads until the client closes its own (or a short linger),
/// so the client reads a clean end of stream (ConnectionLoss) and not a
/// connection reset.
async fn close_gently(mut read: OwnedReadHalf, mut write: OwnedWriteHalf) {
    let _ = write.shutdown().await;
    let mut sink = [0u8; 4096];
    let drain = async {
        while let Ok(n) = read.read(&mut sink).await {
            if n == 0 {
                break;
            }
        }
    };
    let _ = tokio::time::timeout(CLOSE_LINGER, drain).await;
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A stand-in server: answers every frame after the first with a frame
    /// carrying the same xid, and the first (the handshake) with a handshake.
    pub(super) async fn echo_server() -> SocketAddr {
        logging_echo_server().await.0
    }

    /// [`echo_server`], also logging the xid of every frame it received
    /// after a connection's first.
    pub(super) async fn logging_echo_server() -> (SocketAddr, Arc<Mutex<Vec<i32>>>) {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let log = Arc::new(Mutex::new(Vec::new()));
        let received = log.clone();
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let received = received.clone();
                tokio::spawn(async move {
                    let (mut read, mut write) = stream.into_split();
                    let mut index = 0;
                    while let Ok(frame) = read_frame(&mut read).await {
                        if let Some(xid) = frame_xid(index, &frame) {
                            received.lock().unwrap().push(xid);
                        }
                        index += 1;
                        if write.write_all(&frame).await.is_err() {
                            return;
                        }
                    }
                });
            }
        });
        (addr, log)
    }

    pub(super) fn frame(xid: i32) -> Vec<u8> {
        let mut frame = 8i32.to_be_bytes().to_vec();
        frame.extend(xid.to_be_bytes());
        frame.extend([0u8; 4]);
        frame
    }

    pub(super) async fn round_trip(stream: &mut TcpStream, xid: i32) -> io::Result<Vec<u8>> {
        stream.write_all(&frame(xid)).await?;
        let mut reply = vec![0u8; 12];
        stream.read_exact(&mut reply).await?;
        Ok(reply)
    }

    pub(super) async fn ends_cleanly(stream: &mut TcpStream) -> bool {
        let mut byte = [0u8; 1];
        let read = tokio::time::timeout(Duration::from_secs(5), stream.read(&mut byte)).await;
        matches!(read, Ok(Ok(0)))
    }

    pub(super) fn runtime() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
    }

    #[test]
    fn forwards_frames_and_cut_ends_open_connections_only() {
        runtime().block_on(async {
            let proxy = FaultProxy::start(&echo_server().await.to_string())
                .await
                .unwrap();
            let mut old = TcpStream::connect(proxy.addr()).await.unwrap();
            assert_eq!(round_trip(&mut old, 0).await.unwrap(), frame(0));
            assert_eq!(round_trip(&mut old, 7).await.unwrap(), frame(7));
            proxy.cut_all();
            assert!(
                ends_cleanly(&mut old).await,
                "a cut is a clean end of stream"
            );
            let mut new = TcpStream::connect(proxy.addr()).await.unwrap();
            assert_eq!(round_trip(&mut new, 0).await.unwrap(), frame(0));
            assert_eq!(round_trip(&mut new, 8).await.unwrap(), frame(8));
            assert_eq!(proxy.swallowed(), Swallowed::default());
        });
    }

    #[test]
    fn a_hole_to_the_client_swallows_replies_and_heal_cuts_the_damaged() {
        runtime().block_on(async {
            let proxy = FaultProxy::start(&echo_server().await.to_string())
                .await
                .unwrap();
            let mut damaged = TcpStream::connect(proxy.addr()).await.unwrap();
            round_trip(&mut damaged, 0).await.unwrap();
            proxy.black_hole(Hole::ToClient);
            damaged.write_all(&frame(5)).await.unwrap();
            damaged.write_all(&frame(-2)).await.unwrap();
            let swallowed = proxy
                .wait_swallowed(
                    |s| s.replies == 1 && s.other_frames == 1,
                    Duration::from_secs(5),
                )
                .await
                .unwrap();
            assert_eq!(swallowed.requests, 0, "requests went through");
            proxy.heal();
            assert!(
                ends_cleanly(&mut damaged).await,
                "healing cuts a damaged connection"
            );
            let mut fresh = TcpStream::connect(proxy.addr()).await.unwrap();
            assert_eq!(round_trip(&mut fresh, 0).await.unwrap(), frame(0));
            assert_eq!(round_trip(&mut fresh, 9).await.unwrap(), frame(9));
        });
    }

    #[test]
    fn a_full_hole_swallows_requests_and_spares_undamaged_connections() {
        runtime().block_on(async {
            let proxy = FaultProxy::start(&echo_server().await.to_string())
                .await
                .unwrap();
            let mut idle = TcpStream::connect(proxy.addr()).await.unwrap();
            round_trip(&mut idle, 0).await.unwrap();
            let mut busy = TcpStream::connect(proxy.addr()).await.unwrap();
            round_trip(&mut busy, 0).await.unwrap();
            proxy.black_hole(Hole::Both);
            busy.write_all(&frame(3)).await.unwrap();
            proxy
                .wait_swallowed(|s| s.requests == 1, Duration::from_secs(5))
                .await
                .unwrap();
            proxy.heal();
            assert!(ends_cleanly(&mut busy).await);
            assert_eq!(round_trip(&mut idle, 4).await.unwrap(), frame(4));
            assert_eq!(proxy.hole(), Hole::None);
        });
    }
}

#[cfg(test)]
mod self_struck_faults {
    use super::tests::*;
    use super::*;

    /// A hook that records the numbers it was asked about and loses
    /// request `chosen` as `loss`.
    fn hook_losing(chosen: u64, loss: RequestLoss) -> (RequestHook, Arc<Mutex<Vec<u64>>>) {
        let asked = Arc::new(Mutex::new(Vec::new()));
        let log = asked.clone();
        let hook: RequestHook = Arc::new(move |number| {
            log.lock().unwrap().push(number);
            (number == chosen).then_some(loss)
        });
        (hook, asked)
    }

    /// Polls until the hole is `hole`, at most `timeout`.
    async fn wait_hole(proxy: &FaultProxy, hole: Hole, timeout: Duration) -> bool {
        let deadline = tokio::time::Instant::now() + timeout;
        while proxy.hole() != hole {
            if tokio::time::Instant::now() > deadline {
                return false;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        true
    }

    /// A connection whose handshake got through.
    async fn connected(proxy: &FaultProxy) -> TcpStream {
        let mut stream = TcpStream::connect(proxy.addr()).await.unwrap();
        assert_eq!(round_trip(&mut stream, 0).await.unwrap(), frame(0));
        stream
    }

    /// True if a new connection's handshake gets no answer within 200 ms.
    async fn new_connections_hang(proxy: &FaultProxy) -> bool {
        let mut stream = TcpStream::connect(proxy.addr()).await.unwrap();
        let handshake = round_trip(&mut stream, 0);
        tokio::time::timeout(Duration::from_millis(200), handshake)
            .await
            .is_err()
    }

    #[test]
    fn requests_are_numbered_over_reconnects_without_pings_or_handshakes() {
        runtime().block_on(async {
            let proxy = FaultProxy::start(&echo_server().await.to_string())
                .await
                .unwrap();
            let (hook, asked) = hook_losing(u64::MAX, RequestLoss::BeforeApply { down_ms: 0 });
            proxy.set_request_hook(hook);
            let mut first = connected(&proxy).await;
            for xid in [1, -2, 2, -8, -4, 3] {
                assert_eq!(round_trip(&mut first, xid).await.unwrap(), frame(xid));
            }
            proxy.cut_all();
            assert!(ends_cleanly(&mut first).await);
            let mut second = connected(&proxy).await;
            assert_eq!(round_trip(&mut second, 4).await.unwrap(), frame(4));
            assert_eq!(*asked.lock().unwrap(), vec![1, 2, 3, 4]);
            assert_eq!(proxy.requests_numbered(), 4);
            assert_eq!(proxy.losses_struck(), 0);
        });
    }

    #[test]
    fn before_apply_swallows_the_chosen_request_cuts_and_heals_after_down_ms() {
        runtime().block_on(async {
            let (server, received) = logging_echo_server().await;
            let proxy = FaultProxy::start(&server.to_string()).await.unwrap();
            let (hook, _) = hook_losing(2, RequestLoss::BeforeApply { down_ms: 600 });
            proxy.set_request_hook(hook);
            let mut client = connected(&proxy).await;
            assert_eq!(round_trip(&mut client, 5).await.unwrap(), frame(5));
            let struck_at = tokio::time::Instant::now();
            client.write_all(&frame(6)).await.unwrap();
            assert!(ends_cleanly(&mut client).await, "the loss cuts the link");
            assert_eq!(proxy.losses_struck(), 1);
            assert_eq!(proxy.swallowed().requests, 1);
            assert_eq!(proxy.hole(), Hole::Both);
            assert!(new_connections_hang(&proxy).await, "reconnects fall in");
            assert!(wait_hole(&proxy, Hole::None, Duration::from_secs(5)).await);
            assert!(struck_at.elapsed() >= Duration::from_millis(600));
            let mut fresh = connected(&proxy).await;
            assert_eq!(round_trip(&mut fresh, 7).await.unwrap(), frame(7));
            assert_eq!(*received.lock().unwrap(), vec![5, 7], "6 never arrived");
        });
    }

    #[test]
    fn after_apply_forwards_the_request_and_swallows_its_reply() {
        runtime().block_on(async {
            let (server, received) = logging_echo_server().await;
            let proxy = FaultProxy::start(&server.to_string()).await.unwrap();
            let (hook, _) = hook_losing(1, RequestLoss::AfterApply { down_ms: 300 });
            proxy.set_request_hook(hook);
            let mut client = connected(&proxy).await;
            client.write_all(&frame(9)).await.unwrap();
            assert!(ends_cleanly(&mut client).await, "no reply, then a cut");
            assert_eq!(*received.lock().unwrap(), vec![9], "the server got it");
            let swallowed = proxy.swallowed();
            assert_eq!((swallowed.requests, swallowed.replies), (0, 1));
            assert_eq!(proxy.losses_struck(), 1);
            assert!(wait_hole(&proxy, Hole::None, Duration::from_secs(5)).await);
            let mut fresh = connected(&proxy).await;
            assert_eq!(round_trip(&mut fresh, 10).await.unwrap(), frame(10));
        });
    }

    #[test]
    fn the_hook_is_not_asked_inside_a_hole() {
        runtime().block_on(async {
            let proxy = FaultProxy::start(&echo_server().await.to_string())
                .await
                .unwrap();
            let (hook, asked) = hook_losing(1, RequestLoss::BeforeApply { down_ms: 0 });
            proxy.set_request_hook(hook);
            let mut client = connected(&proxy).await;
            proxy.black_hole(Hole::ToServer);
            client.write_all(&frame(3)).await.unwrap();
            proxy
                .wait_swallowed(|s| s.requests == 1, Duration::from_secs(5))
                .await
                .unwrap();
            assert_eq!(proxy.requests_numbered(), 1);
            assert!(asked.lock().unwrap().is_empty());
            assert_eq!(proxy.losses_struck(), 0);
        });
    }

    #[test]
    fn drop_for_cuts_holds_new_connections_then_heals() {
        runtime().block_on(async {
            let proxy = FaultProxy::start(&echo_server().await.to_string())
                .await
                .unwrap();
            let mut client = connected(&proxy).await;
            let dropped_at = tokio::time::Instant::now();
            proxy.drop_for(500);
            assert!(ends_cleanly(&mut client).await);
            assert!(new_connections_hang(&proxy).await);
            assert!(wait_hole(&proxy, Hole::None, Duration::from_secs(5)).await);
            assert!(dropped_at.elapsed() >= Duration::from_millis(500));
            let mut fresh = connected(&proxy).await;
            assert_eq!(round_trip(&mut fresh, 2).await.unwrap(), frame(2));
        });
    }

    #[test]
    fn a_stale_heal_timer_leaves_a_later_hole_alone() {
        runtime().block_on(async {
            let proxy = FaultProxy::start(&echo_server().await.to_string())
                .await
                .unwrap();
            proxy.drop_for(100);
            proxy.heal();
            proxy.drop_for(1_500);
            tokio::time::sleep(Duration::from_millis(400)).await;
            assert_eq!(proxy.hole(), Hole::Both, "the first timer was stale");
            proxy.black_hole(Hole::ToServer);
            tokio::time::sleep(Duration::from_millis(1_500)).await;
            assert_eq!(proxy.hole(), Hole::ToServer, "so was the second");
        });
    }

    /// A frame 0 shaped like a ConnectResponse (the echo server sends it
    /// back, so the proxy sees it from the "server").
    fn connect_response(timeout_ms: i32, session_id: i64, password: &[u8]) -> Vec<u8> {
        let mut body = 0i32.to_be_bytes().to_vec();
        body.extend(timeout_ms.to_be_bytes());
        body.extend(session_id.to_be_bytes());
        body.extend((password.len() as i32).to_be_bytes());
        body.extend(password);
        body.push(0);
        let mut frame = (body.len() as i32).to_be_bytes().to_vec();
        frame.extend(body);
        frame
    }

    #[test]
    fn the_latest_granted_session_is_recorded_and_a_refusal_clears_it() {
        runtime().block_on(async {
            let proxy = FaultProxy::start(&echo_server().await.to_string())
                .await
                .unwrap();
            assert_eq!(proxy.session(), None);
            let granted = connect_response(4_000, 77, b"secret");
            let mut client = TcpStream::connect(proxy.addr()).await.unwrap();
            client.write_all(&granted).await.unwrap();
            let session = proxy.wait_session(Duration::from_secs(5)).await;
            let expected = LinkSession {
                session_id: 77,
                password: b"secret".to_vec(),
                timeout_ms: 4_000,
            };
            assert_eq!(session, Some(expected));
            let mut changes = proxy.session_changes();
            changes.borrow_and_update();
            let mut refused = TcpStream::connect(proxy.addr()).await.unwrap();
            refused
                .write_all(&connect_response(0, 0, &[0; 16]))
                .await
                .unwrap();
            let cleared = tokio::time::timeout(Duration::from_secs(5), changes.changed()).await;
            assert!(matches!(cleared, Ok(Ok(()))));
            assert_eq!(proxy.session(), None);
        });
    }
}

#[cfg(test)]
mod silences {
    use super::tests::*;
    use super::*;

    /// A stand-in server that answers each frame `delay` after it arrived
    /// (the handshake at once), logging every xid it received and counting
    /// the connections it accepted.
    async fn slow_echo_server(
        delay: Duration,
    ) -> (SocketAddr, Arc<Mutex<Vec<i32>>>, Arc<AtomicUsize>) {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (log, accepted) = (
            Arc::new(Mutex::new(Vec::new())),
            Arc::new(AtomicUsize::new(0)),
        );
        let (received, count) = (log.clone(), accepted.clone());
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                count.fetch_add(1, Ordering::SeqCst);
                let received = received.clone();
                tokio::spawn(async move {
                    let (mut read, mut write) = stream.into_split();
                    let mut index = 0;
                    while let Ok(frame) = read_frame(&mut read).await {
                        if let Some(xid) = frame_xid(index, &frame) {
                            received.lock().unwrap().push(xid);
                            tokio::time::sleep(delay).await;
                        }
                        index += 1;
                        if write.write_all(&frame).await.is_err() {
                            return;
                        }
                    }
                });
            }
        });
        (addr, log, accepted)
    }

    /// Polls until `done`, at most 5 s.
    async fn eventually(mut done: impl FnMut() -> bool) -> bool {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
        while !done() {
            if tokio::time::Instant::now() > deadline {
                return false;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        true
    }

    /// Reads one 12-byte echo within `patience`, if it comes.
    async fn reply_within(stream: &mut TcpStream, patience: Duration) -> Option<Vec<u8>> {
        let mut reply = vec![0u8; 12];
        let read = tokio::time::timeout(patience, stream.read_exact(&mut reply)).await;
        matches!(read, Ok(Ok(_))).then_some(reply)
    }

    #[test]
    fn a_silence_holds_frames_both_ways_keeps_the_connection_and_delivers_them_after() {
        runtime().block_on(async {
            let (server, received, accepted) = slow_echo_server(Duration::from_millis(100)).await;
            let proxy = FaultProxy::start(&server.to_string()).await.unwrap();
            let mut client = TcpStream::connect(proxy.addr()).await.unwrap();
            assert_eq!(round_trip(&mut client, 0).await.unwrap(), frame(0));
            // A request that reached the server: its reply is held.
            client.write_all(&frame(1)).await.unwrap();
            assert!(eventually(|| received.lock().unwrap().contains(&1)).await);
            let silenced_at = tokio::time::Instant::now();
            proxy.silence_for(600);
            assert!(proxy.silent());
            // One sent into the silence does not reach the server.
            client.write_all(&frame(2)).await.unwrap();
            assert_eq!(
                reply_within(&mut client, Duration::from_millis(400)).await,
                None
            );
            assert_eq!(*received.lock().unwrap(), vec![1], "2 is held");
            assert_eq!(proxy.open_connections(), 1, "nothing was closed");
            assert_eq!(
                proxy.held(),
                HeldFrames {
                    to_server: 1,
                    to_client: 1
                }
            );
            // Then both arrive, in order, on the same connection.
            assert_eq!(
                reply_within(&mut client, Duration::from_secs(5)).await,
                Some(frame(1))
            );
            assert!(silenced_at.elapsed() >= Duration::from_millis(600));
            assert_eq!(
                reply_within(&mut client, Duration::from_secs(5)).await,
                Some(frame(2))
            );
            assert_eq!(round_trip(&mut client, 3).await.unwrap(), frame(3));
            assert_eq!(*received.lock().unwrap(), vec![1, 2, 3]);
            assert_eq!(accepted.load(Ordering::SeqCst), 1);
            assert_eq!(proxy.swallowed(), Swallowed::default(), "nothing was lost");
        });
    }

    #[test]
    fn what_a_client_sent_on_a_connection_it_closed_in_the_silence_never_arrives() {
        runtime().block_on(async {
            let (server, received, accepted) = slow_echo_server(Duration::ZERO).await;
            let proxy = FaultProxy::start(&server.to_string()).await.unwrap();
            let mut old = TcpStream::connect(proxy.addr()).await.unwrap();
            assert_eq!(round_trip(&mut old, 0).await.unwrap(), frame(0));
            proxy.silence_for(400);
            old.write_all(&frame(7)).await.unwrap();
            // An attempt opened in the silence and given up: never connected.
            let mut attempt = TcpStream::connect(proxy.addr()).await.unwrap();
            attempt.write_all(&frame(0)).await.unwrap();
            assert!(eventually(|| proxy.held().to_server == 2).await);
            drop((old, attempt));
            // One that waits is connected when the silence ends.
            let mut patient = TcpStream::connect(proxy.addr()).await.unwrap();
            patient.write_all(&frame(0)).await.unwrap();
            assert_eq!(
                reply_within(&mut patient, Duration::from_secs(5)).await,
                Some(frame(0))
            );
            assert_eq!(round_trip(&mut patient, 8).await.unwrap(), frame(8));
            assert_eq!(
                *received.lock().unwrap(),
                vec![8],
                "7 was lost with its connection"
            );
            assert_eq!(
                accepted.load(Ordering::SeqCst),
                2,
                "the given-up attempt never arrived"
            );
        });
    }

    #[test]
    fn overlapping_silences_last_to_the_later_end_and_end_silence_ends_them() {
        runtime().block_on(async {
            let proxy = FaultProxy::start(&echo_server().await.to_string())
                .await
                .unwrap();
            let started = tokio::time::Instant::now();
            proxy.silence_for(500);
            proxy.silence_for(200);
            assert!(eventually(|| !proxy.silent()).await);
            assert!(started.elapsed() >= Duration::from_millis(500));
            proxy.silence_for(10_000);
            let mut client = TcpStream::connect(proxy.addr()).await.unwrap();
            client.write_all(&frame(0)).await.unwrap();
            assert_eq!(
                reply_within(&mut client, Duration::from_millis(200)).await,
                None
            );
            proxy.end_silence();
            assert!(!proxy.silent());
            assert_eq!(
                reply_within(&mut client, Duration::from_secs(5)).await,
                Some(frame(0))
            );
            // A cut still ends a connection in a silence.
            proxy.silence_for(10_000);
            proxy.cut_all();
            assert!(ends_cleanly(&mut client).await);
        });
    }
}
