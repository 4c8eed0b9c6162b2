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
//! A proxy that cannot accept a connection or open its upstream socket
//! because the process ran out of descriptors (or another local resource)
//! records it ([`FaultProxy::local_failure`]): the harness failed, not the
//! server or the recipe. A failed accept backs off before it retries.
//!
//! Runs on the ambient tokio runtime; dropping the proxy closes everything.

use crate::descriptors::LocalFailure;
use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::{JoinHandle, JoinSet};

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
}

struct Shared {
    /// Where new connections go (see [`FaultProxy::redirect`]).
    upstream: std::sync::Mutex<String>,
    control: watch::Sender<Control>,
    swallowed: watch::Sender<Swallowed>,
    open_connections: AtomicUsize,
    /// Where local resource failures go (see [`FaultProxy::local_failure`]).
    local_failure: LocalFailure,
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

    /// Opens a black hole (replacing the current one).
    pub fn black_hole(&self, hole: Hole) {
        self.shared
            .control
            .send_modify(|control| control.hole = hole);
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
        // Set when a frame of this connection was swallowed. The pumps and
        // `until_ended` run in this one task, so a pump's check of the hole
        // and its marking are never interleaved with `until_ended`'s check.
        let damaged = AtomicBool::new(false);
        let mut control = shared.control.subscribe();
        tokio::select! {
            _ = pump(&mut client_read, &mut server_write, Direction::ToServer, &shared, &damaged) => {}
            _ = pump(&mut server_read, &mut client_write, Direction::ToClient, &shared, &damaged) => {}
            _ = until_ended(&mut control, epoch, &damaged) => {}
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
    shared: &Shared,
    damaged: &AtomicBool,
) {
    let mut index = 0u64;
    loop {
        let frame = read_frame(from).await;
        let swallow = shared.control.borrow().hole.swallows(direction);
        match frame {
            Ok(frame) if swallow => {
                damaged.store(true, Ordering::Relaxed);
                shared
                    .swallowed
                    .send_modify(|counts| count(counts, direction, index, &frame));
            }
            Ok(frame) => {
                if to.write_all(&frame).await.is_err() {
                    return;
                }
            }
            Err(_) if swallow => {
                damaged.store(true, Ordering::Relaxed);
                std::future::pending::<()>().await;
            }
            Err(_) => return,
        }
        index += 1;
    }
}

/// One frame, length prefix included.
async fn read_frame(from: &mut OwnedReadHalf) -> io::Result<Vec<u8>> {
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
    async fn echo_server() -> SocketAddr {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                tokio::spawn(async move {
                    let (mut read, mut write) = stream.into_split();
                    while let Ok(frame) = read_frame(&mut read).await {
                        if write.write_all(&frame).await.is_err() {
                            return;
                        }
                    }
                });
            }
        });
        addr
    }

    fn frame(xid: i32) -> Vec<u8> {
        let mut frame = 8i32.to_be_bytes().to_vec();
        frame.extend(xid.to_be_bytes());
        frame.extend([0u8; 4]);
        frame
    }

    async fn round_trip(stream: &mut TcpStream, xid: i32) -> io::Result<Vec<u8>> {
        stream.write_all(&frame(xid)).await?;
        let mut reply = vec![0u8; 12];
        stream.read_exact(&mut reply).await?;
        Ok(reply)
    }

    async fn ends_cleanly(stream: &mut TcpStream) -> bool {
        let mut byte = [0u8; 1];
        let read = tokio::time::timeout(Duration::from_secs(5), stream.read(&mut byte)).await;
        matches!(read, Ok(Ok(0)))
    }

    fn runtime() -> tokio::runtime::Runtime {
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
