//! What travels through the world's event queue: messages on a client's
//! connection (each tagged with the connection's epoch, so a dropped
//! connection loses what was in flight), client-local timers, faults and
//! the server's and the run's own deadlines.

use crate::faults::ScheduledFault;
use crate::server::WatchSet;
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use zk_recipes::zk::{Request, SessionId, WatchedEvent, ZkResult, Zxid};
use zk_recipes::TimerId;

/// Client to server.
#[derive(Clone, Debug)]
pub enum ToServer {
    /// Open a new session with this id (drawn from the seed).
    Open {
        session: SessionId,
    },
    /// Reconnect into a session and re-register watches (ConnectRequest
    /// followed by SetWatches).
    Reconnect {
        session: SessionId,
        last_zxid: Zxid,
        watches: WatchSet,
    },
    Ping,
    Request(Request),
}

/// Server to client.
#[derive(Clone, Debug)]
pub enum ToClient {
    /// The session is (re)established.
    Connected,
    /// The server refused a reconnect: the session expired.
    Expired,
    Reply {
        result: ZkResult,
        zxid: Zxid,
    },
    Watch(WatchedEvent),
    /// The server closed the connection (it expired the session).
    Closed,
}

/// Timers a client process keeps for itself.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LocalTimer {
    /// A recipe timer, due at `due_ms` (stale if the recipe re-set it).
    Recipe {
        id: TimerId,
        due_ms: u64,
    },
    Ping,
    Reconnect,
    NewSession,
    /// A silent connection: the client checks whether it has heard
    /// nothing for its read timeout.
    ReadTimeout,
    /// A connection attempt into a silent network hangs until its connect
    /// timeout, then fails (`new_session`: it was opening a session).
    ConnectTimeout {
        new_session: bool,
    },
    /// Client-side expiry: the client gives up on its session.
    GiveUp,
}

/// What a client process finds in its inbox.
#[derive(Clone, Debug)]
pub enum Inbound {
    Net(ToClient),
    /// The client noticed its connection dropped (TCP reset).
    Dropped,
    Timer(LocalTimer),
    /// A notification no server change caused (fault).
    Spurious(WatchedEvent),
}

/// One entry of the world's event queue.
#[derive(Clone, Debug)]
pub enum Event {
    ToServer {
        client: usize,
        epoch: u32,
        msg: ToServer,
    },
    ToClient {
        client: usize,
        epoch: u32,
        msg: ToClient,
    },
    Local {
        client: usize,
        timer: LocalTimer,
    },
    Fault(ScheduledFault),
    Resume {
        client: usize,
    },
    ExpiryTick,
    ReaperTick,
    /// A follower applies its next committed transaction (an event of an
    /// earlier `round` of the server's applies is stale: the heal flushed it).
    Apply {
        server: usize,
        round: u64,
    },
    /// A crashed server restarts, or a partition heals (the server's
    /// `outage`-th: an event of an earlier one is stale).
    ServerUp {
        server: usize,
        outage: u64,
    },
    /// A follower whose lag spike outlasts tickTime × syncLimit has left a
    /// proposal unacknowledged that long: the leader drops it (stale if its
    /// applies' `round` moved on: the heal flushed them).
    LagDrop {
        server: usize,
        round: u64,
    },
    /// A partitioned server notices it lost the leader.
    PartitionNoticed {
        server: usize,
        outage: u64,
    },
    /// An election's window ends.
    Elect,
    /// Explored runs only: the server applies one of the requests waiting
    /// for it, the one the choice tape picks (see `Shared::server_pick`).
    ServerPick,
    Heal,
    Deadline,
}

/// Events ordered by due time, then by insertion. The heap holds small
/// keys; the events themselves sit in a slab (moving them around the heap
/// would copy every event several times).
#[derive(Default)]
pub struct EventQueue {
    heap: BinaryHeap<Reverse<(u64, u64, usize)>>,
    slab: Vec<Option<Event>>,
    free: Vec<usize>,
    next_seq: u64,
}

impl EventQueue {
    pub fn push(&mut self, at_ns: u64, event: Event) {
        self.next_seq += 1;
        let slot = match self.free.pop() {
            Some(slot) => {
                self.slab[slot] = Some(event);
                slot
            }
            None => {
                self.slab.push(Some(event));
                self.slab.len() - 1
            }
        };
        self.heap.push(Reverse((at_ns, self.next_seq, slot)));
    }

    /// The next event due at or before `now_ns`.
    pub fn pop_due(&mut self, now_ns: u64) -> Option<Event> {
        let Reverse((at, _, slot)) = *self.heap.peek()?;
        if at > now_ns {
            return None;
        }
        self.heap.pop();
        self.free.push(slot);
        self.slab[slot].take()
    }

    pub fn next_due(&self) -> Option<u64> {
        self.heap.peek().map(|Reverse((at, _, _))| *at)
    }

    /// The events not yet due, in no particular order (to ask whether one
    /// of some kind is pending, never to act on them in this order).
    pub fn pending(&self) -> impl Iterator<Item = &Event> {
        self.slab.iter().flatten()
    }
}
