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
/// heal that finds it damaged; then closes the client side gently.
async fn serve_connection(client: TcpStream, epoch: u64, shared: Arc<Shared>) {
    let _open = OpenGuard::new(&shared.open_connections);
    // Frames are small and answered one by one: no Nagle delays on the hop.
    let _ = client.set_nodelay(true);
    let (mut client_read, mut client_write) = client.into_split();
    let upstream = shared.upstream.lock().unwrap().clone();
    let connected = TcpStream::connect(&upstream).await;
    if let Err(error) = &connected {
        let what = format!("connect a proxy to {upstream}");
        shared.local_failure.note(&what, error);
    }
    if let Ok(server) = connected {
        let _ = server.set_nodelay(true);
        let (mut server_read, mut server_write) = server.into_split();
        // The pumps and `until_ended` run in this one task, so a pump's
        // check of the hole and its marking of damage are never interleaved
        // with `until_ended`'s check.
        let link = Link::default();
        let mut control = shared.control.subscribe();
        tokio::select! {
            _ = pump(&mut client_read, &mut server_write, Direction::ToServer, &shared, &link) => {}
            _ = pump(&mut server_read, &mut client_write, Direction::ToClient, &shared, &link) => {}
            _ = until_ended(&mut control, epoch, &link.damaged) => {}
        }
    }
    close_gently(client_read, client_write).await;
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

/// Forwards whole frames from `from` to `to`, swallowing them while the
/// hole covers `direction`. Returns when the stream ends outside a hole (an
/// end inside a hole is swallowed too: the connection then waits for a cut
/// or a heal).
async fn pump(
    from: &mut OwnedReadHalf,
    to: &mut OwnedWriteHalf,
    direction: Direction,
    shared: &Arc<Shared>,
    link: &Link,
) {
    let mut index = 0u64;
    loop {
        let frame = read_frame(from).await;
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
    let length = i32::from_be_bytes(prefix);
    let length = usize::try_from(length)
        .ok()
        .filter(|length| *length <= MAX_FRAME_BYTES)
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, "not a ZooKeeper frame"))?;
    let mut frame = vec![0u8; 4 + length];
    frame[..4].copy_from_slice(&prefix);
    from.read_exact(&mut frame[4..]).await?;
    Ok(frame)
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
