//! How the proxy serves its connections: the accept loop, and for each
//! client connection the link to the server with its two pumps, which
//! forward whole frames, swallow them in a hole, hold them through a
//! silence, and strike the request losses a hook chooses; then a gentle
//! close of the client's side.

use super::frames::{count, frame_xid, FrameReader};
use super::{Control, Direction, Hole, RequestLoss, Shared};
use std::collections::VecDeque;
use std::io;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::JoinSet;

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

/// How long a cut connection waits for the client to close its side after
/// the proxy closed its own, before it is dropped anyway.
const CLOSE_LINGER: Duration = Duration::from_secs(2);

/// How long the accept loop waits after a failed accept: the error (out of
/// descriptors, say) leaves the listener ready, so retrying at once spins.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(100);

pub(super) async fn accept_loop(listener: TcpListener, shared: Arc<Shared>) {
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
