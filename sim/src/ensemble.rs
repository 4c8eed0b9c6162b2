//! A ZooKeeper ensemble: N replicas of the server core ([`ZkServer`])
//! behind one leader. Sans-IO and deterministic like the core: the driver
//! (the world, the model) decides when each replica applies its next
//! committed transaction, and so how far each one lags.
//!
//! The rules it keeps (ZooKeeper 3.8's Leader, Learner, CommitProcessor):
//! - the leader orders every write: a write is committed (appended to the
//!   log and applied by the leader) when it reaches the leader; every other
//!   replica applies the log in order, at its own pace ([`Ensemble::apply_next`]);
//! - a session is connected to one server; its reads are answered from that
//!   server's applied state, and its watches fire as that server applies;
//! - a session's requests are answered in order: a read waits behind the
//!   session's earlier writes until its server has applied them (a session
//!   reads its own writes), the reply to a write comes from the session's
//!   server once that server has applied it, and `sync` waits until the
//!   server has applied what the leader had committed when the sync reached it;
//! - the leader decides sessions: it opens them, hears from them (through
//!   any server in the quorum) and expires them; each replica applies the
//!   createSession and closeSession (with its ephemerals' deletion, in one
//!   order for all replicas) when it reaches them in the log, and a session
//!   learns its expiry when its own server applies the close;
//! - a client may reconnect to any serving server whose applied zxid is not
//!   behind the last zxid it has seen (a server behind it refuses); the
//!   leader revalidates the moved session behind every commit it had made
//!   by then, so the server answers the session's requests only once it
//!   has applied those (Learner.revalidate;
//!   [`Ensemble::connect_revalidated`], the default of the world and the
//!   model checker; plain `connect` answers at once, an over-approximation
//!   kept as an opt-out);
//! - a transaction carries the leader's time (DataTree stamps nodes with
//!   the transaction header's time), so a replica applies it at that time;
//! - a server cut off from the leader applies nothing and commits nothing,
//!   but serves reads from its stale state until the driver stops it; while
//!   the ensemble elects a leader no write commits, and the new leader
//!   hears from every live session at once (its session tracker restarts);
//! - when the servers notice their leader is gone (the driver says when:
//!   tickTime × syncLimit after it went), every server closes every client
//!   connection and none serves until a new leader is elected
//!   ([`Ensemble::notice_leader_lost`]);
//! - nothing commits without a leader: a write, or a close (or expiry) of a
//!   session, that arrives while the ensemble elects waits, and the new
//!   leader commits what waited in the order it arrived; a new session is
//!   refused until a leader is there (the server is not serving), and the
//!   leader's expiry and reaper do not run.

mod answers;
mod commit;
mod failover;

use crate::server::{
    Applied, ChildOrder, Notification, PermutedOrder, ServerConfig, SessionError, ShuffledOrder,
    ZkServer,
};
use std::collections::{BTreeMap, VecDeque};
use zk_recipes::zk::{Request, SessionId, Zxid};

/// A server of the ensemble, by index.
pub type ServerIndex = usize;

/// The order a closing session's ephemerals are deleted in: the same on
/// every replica (one closeSession transaction).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DeletionOrder {
    /// A shuffle drawn from this seed (simulations).
    Shuffled(u64),
    /// The n-th permutation of path order (the model; 0 is path order).
    Permuted(u16),
}

impl DeletionOrder {
    fn with<T>(self, f: impl FnOnce(&mut dyn ChildOrder) -> T) -> T {
        match self {
            DeletionOrder::Shuffled(seed) => {
                use rand::SeedableRng;
                let mut rng = rand::rngs::SmallRng::seed_from_u64(seed);
                f(&mut ShuffledOrder(&mut rng))
            }
            DeletionOrder::Permuted(n) => f(&mut PermutedOrder(n)),
        }
    }
}

/// What a committed transaction changes.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Change {
    Open {
        session: SessionId,
        timeout_ms: u64,
    },
    Request {
        session: SessionId,
        request: Request,
    },
    Close {
        session: SessionId,
        order: DeletionOrder,
    },
    Reap,
}

/// A transaction that waits for a leader to commit it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Waiting {
    /// The session's oldest write not committed yet (its server could not
    /// reach a leader when the session sent it).
    Write(SessionId),
    /// The session's close (or expiry), decided while no leader was there.
    Close {
        session: SessionId,
        order: DeletionOrder,
    },
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct Txn {
    time_ms: i64,
    change: Change,
}

/// One server: its copy of the tree and how much of the log it applied.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct Replica {
    core: ZkServer,
    applied: usize,
    /// Accepts connections and answers its sessions.
    serving: bool,
    /// Reaches the leader: applies the log and forwards writes.
    in_quorum: bool,
}

/// A request of a session waiting at its server for its answer.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Queued {
    /// The createSession at this log index.
    Opening {
        index: usize,
    },
    Read {
        request: Request,
    },
    /// A write: committed at `index` (None: not yet, no leader reachable),
    /// answered once the session's server applied it.
    Write {
        request: Request,
        index: Option<usize>,
        applied: Option<Applied>,
    },
    /// Answered once the server applied the log up to `until`.
    Sync {
        request: Request,
        until: Option<usize>,
    },
    /// A session that moved to this server: the leader's revalidation,
    /// which travels behind every commit the leader had made when the
    /// session moved (log up to `until`); the session's requests wait
    /// behind it.
    Revalidate {
        until: usize,
    },
    /// The watches the client set again as it reconnected (SetWatches2),
    /// read once the revalidation ahead of it came: a 3.8 server compares
    /// them with what it has applied by then, not with what it had when
    /// the client arrived (`live/tests/real_server/ensemble.rs`).
    SetWatches {
        relative_zxid: Zxid,
        watches: crate::server::WatchSet,
    },
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct Connection {
    server: ServerIndex,
    queue: VecDeque<Queued>,
}

/// What the ensemble tells its driver.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum EnsembleEvent {
    /// The session's createSession reached its server: it may send.
    Opened { session: SessionId },
    /// The leader committed the session's write and applied it: what it
    /// did. The reply follows as [`EnsembleEvent::Reply`] once the
    /// session's own server has applied it too (at once on the leader).
    Committed {
        session: SessionId,
        request: Request,
        applied: Applied,
    },
    /// The answer to the session's oldest unanswered request.
    Reply {
        session: SessionId,
        applied: Applied,
    },
    /// A watch fired at the session's server.
    Notify(Notification),
    /// The session's server applied its close: the connection ends, and
    /// the client learns its session expired (or closed).
    Closed { session: SessionId },
}

/// Why a connection was refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ConnectError {
    #[error("server {0} is not serving")]
    NotServing(ServerIndex),
    /// The server serves but cannot reach a leader to revalidate the
    /// session: a real attempt hangs until the server notices it lost the
    /// leader (and closes it) or reaches one again, or the client's
    /// connect timeout ends it.
    #[error("server {0} cannot reach a leader to revalidate the session")]
    CutOff(ServerIndex),
    /// The server has not applied what the client has already seen
    /// (ZooKeeper: "client must try another server").
    #[error("server {server} is at zxid {server_zxid:#x}, behind the client's {client_zxid:#x}")]
    Behind {
        server: ServerIndex,
        server_zxid: Zxid,
        client_zxid: Zxid,
    },
    #[error(transparent)]
    Session(#[from] SessionError),
}

/// N replicas, one leader, one committed log.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Ensemble {
    replicas: Vec<Replica>,
    leader: ServerIndex,
    electing: bool,
    /// The servers noticed their leader is gone: none serves (every client
    /// connection was closed) until a new leader is elected.
    looking: bool,
    /// Committed transactions not yet applied everywhere; `log[0]` is
    /// transaction number `log_start` (indices below are absolute).
    log: Vec<Txn>,
    log_start: usize,
    now_ms: i64,
    connections: BTreeMap<SessionId, Connection>,
    /// Writes and closes waiting for a leader, in the order they came.
    waiting: VecDeque<Waiting>,
}

impl Ensemble {
    /// `servers` replicas of an empty tree; server 0 leads.
    pub fn new(servers: usize, config: ServerConfig) -> Ensemble {
        Ensemble::from_server(ZkServer::new(config), servers)
    }

    /// `servers` replicas of `core` (a server set up before the run, with
    /// no session left open); server 0 leads.
    pub fn from_server(core: ZkServer, servers: usize) -> Ensemble {
        assert!(servers >= 1, "an ensemble has a server");
        let replica = Replica {
            core,
            applied: 0,
            serving: true,
            in_quorum: true,
        };
        Ensemble {
            replicas: vec![replica; servers],
            leader: 0,
            electing: false,
            looking: false,
            log: Vec::new(),
            log_start: 0,
            now_ms: 0,
            connections: BTreeMap::new(),
            waiting: VecDeque::new(),
        }
    }

    pub fn servers(&self) -> usize {
        self.replicas.len()
    }

    /// Hashes where the ensemble stands, times left out (an explored
    /// run's memo key, beside the committed tree): the leader and any
    /// election, how much of the log each server applied, which serve and
    /// reach the leader, each session's server and what waits there.
    pub fn hash_progress<H: std::hash::Hasher>(&self, hasher: &mut H) {
        use std::hash::Hash;
        (self.leader, self.electing, self.looking).hash(hasher);
        (self.log_start, self.log.len()).hash(hasher);
        for replica in &self.replicas {
            (replica.applied, replica.serving, replica.in_quorum).hash(hasher);
        }
        self.connections.hash(hasher);
        self.waiting.hash(hasher);
    }

    pub fn leader(&self) -> ServerIndex {
        self.leader
    }

    /// The committed state (the leader's copy): what oracles judge.
    pub fn committed(&self) -> &ZkServer {
        &self.replicas[self.leader].core
    }

    /// One server's applied state.
    pub fn server(&self, server: ServerIndex) -> &ZkServer {
        &self.replicas[server].core
    }

    /// Committed transactions `server` has not applied yet.
    pub fn lag(&self, server: ServerIndex) -> usize {
        self.committed_count() - self.replicas[server].applied
    }

    /// Transactions committed so far.
    fn committed_count(&self) -> usize {
        self.log_start + self.log.len()
    }

    pub fn is_serving(&self, server: ServerIndex) -> bool {
        self.replicas[server].serving
    }

    /// The server reaches the leader (it applies the log).
    pub fn is_in_quorum(&self, server: ServerIndex) -> bool {
        self.replicas[server].in_quorum
    }

    /// A leader election is under way: no write commits.
    pub fn is_electing(&self) -> bool {
        self.electing
    }

    /// The session's close waits for a leader to commit it.
    pub fn is_closing(&self, session: SessionId) -> bool {
        self.waiting.iter().any(|waiting| {
            matches!(waiting, Waiting::Close { session: closing, .. } if *closing == session)
        })
    }

    /// The session has a write waiting for a leader (its server reaches
    /// none): its server answers nothing of it after that write, its
    /// pings included, until the write commits.
    pub fn has_waiting_write(&self, session: SessionId) -> bool {
        self.waiting.contains(&Waiting::Write(session))
    }

    /// The server the session is connected to, if any.
    pub fn server_of(&self, session: SessionId) -> Option<ServerIndex> {
        self.connections.get(&session).map(|c| c.server)
    }

    /// Advances the leader's clock (sessions expire by it, transactions
    /// carry it). Time never goes backwards.
    pub fn set_time_ms(&mut self, now_ms: i64) {
        self.now_ms = now_ms;
        self.replicas[self.leader].core.set_time_ms(now_ms);
    }

    /// A client opens a session through `server`; it may send once
    /// [`EnsembleEvent::Opened`] comes (when that server applied it).
    pub fn open_session(
        &mut self,
        server: ServerIndex,
        session: SessionId,
        timeout_ms: u64,
        order: &mut dyn ChildOrder,
    ) -> Result<Vec<EnsembleEvent>, ConnectError> {
        self.check_reachable(server)?;
        if self.committed().is_session_alive(session) {
            return Err(SessionError::Duplicate(session).into());
        }
        let mut events = Vec::new();
        let index = self.commit(
            Change::Open {
                session,
                timeout_ms,
            },
            &mut events,
        );
        self.connections.insert(
            session,
            Connection {
                server,
                queue: VecDeque::from([Queued::Opening { index }]),
            },
        );
        self.answer_ready(server, order, &mut events);
        Ok(events)
    }

    /// A client resumes its session on `server` (after a disconnect),
    /// having seen up to `last_zxid`. Its watches are then re-registered
    /// with [`Ensemble::set_watches`]. The server answers at once (see
    /// [`Ensemble::connect_revalidated`] for the real order). A server
    /// behind `last_zxid` refuses; one that serves but reaches no leader
    /// (cut off, or an election under way) cannot revalidate:
    /// [`ConnectError::CutOff`] (the driver lets the attempt hang).
    pub fn connect(
        &mut self,
        server: ServerIndex,
        session: SessionId,
        last_zxid: Zxid,
    ) -> Result<(), ConnectError> {
        self.connect_with(server, session, last_zxid, false)
    }

    /// [`Ensemble::connect`], and the server answers the moved session
    /// only once it has applied every commit the leader had made when the
    /// session moved: the leader's revalidation travels behind them
    /// (Learner.revalidate; issue 31). Plain `connect` answers at once
    /// from the server's own state however far it lags, an
    /// over-approximation a real server never shows, kept for worlds with
    /// `WorldConfig::revalidate_moves` off and `check
    /// --unrevalidated-reconnects`.
    pub fn connect_revalidated(
        &mut self,
        server: ServerIndex,
        session: SessionId,
        last_zxid: Zxid,
    ) -> Result<(), ConnectError> {
        self.connect_with(server, session, last_zxid, true)
    }

    fn connect_with(
        &mut self,
        server: ServerIndex,
        session: SessionId,
        last_zxid: Zxid,
        revalidate: bool,
    ) -> Result<(), ConnectError> {
        let replica = &self.replicas[server];
        if !replica.serving || self.looking {
            return Err(ConnectError::NotServing(server));
        }
        // Checked before the leader is asked (a cut-off server refuses a
        // client ahead of it too).
        if replica.core.last_zxid() < last_zxid {
            return Err(ConnectError::Behind {
                server,
                server_zxid: replica.core.last_zxid(),
                client_zxid: last_zxid,
            });
        }
        // A server cut off from the leader cannot validate the session.
        if !replica.in_quorum || self.electing {
            return Err(ConnectError::CutOff(server));
        }
        // A server validates a session it has not seen with the leader.
        if !self.committed().is_session_alive(session) {
            return Err(SessionError::NotAlive(session).into());
        }
        self.disconnect(session);
        let until = self.committed_count();
        let queue = match revalidate && self.replicas[server].applied < until {
            true => VecDeque::from([Queued::Revalidate { until }]),
            false => VecDeque::new(),
        };
        self.connections
            .insert(session, Connection { server, queue });
        self.heard_from(session);
        Ok(())
    }

    /// Re-registers a reconnected session's watches at its server: at
    /// once, or (a session still waiting for its revalidation) once the
    /// revalidation came, when what fires arrives as
    /// [`EnsembleEvent::Notify`] events from the apply that let it through.
    pub fn set_watches(
        &mut self,
        session: SessionId,
        relative_zxid: Zxid,
        watches: &crate::server::WatchSet,
    ) -> Vec<Notification> {
        let Some(connection) = self.connections.get_mut(&session) else {
            return Vec::new();
        };
        let server = connection.server;
        if matches!(connection.queue.front(), Some(Queued::Revalidate { .. })) {
            connection.queue.push_back(Queued::SetWatches {
                relative_zxid,
                watches: watches.clone(),
            });
            return Vec::new();
        }
        self.replicas[server]
            .core
            .set_watches(session, relative_zxid, watches)
    }

    /// The connection dropped: the server forgets the session's watches
    /// and unanswered requests (the client fails them with ConnectionLoss;
    /// a write already committed stays committed).
    pub fn disconnect(&mut self, session: SessionId) {
        if let Some(connection) = self.connections.remove(&session) {
            self.replicas[connection.server].core.disconnect(session);
            // Its writes fail with the connection; a close the leader
            // decided still commits.
            self.waiting
                .retain(|waiting| *waiting != Waiting::Write(session));
        }
    }

    /// The session's server heard from it (a request or a ping); the leader
    /// hears of it if that server reaches the leader.
    pub fn heard_from(&mut self, session: SessionId) {
        let Some(server) = self.server_of(session) else {
            return;
        };
        if self.replicas[server].in_quorum && !self.electing {
            self.replicas[self.leader].core.touch_session(session);
        }
    }

    /// A session's request reaches its server.
    pub fn submit(
        &mut self,
        session: SessionId,
        request: Request,
        order: &mut dyn ChildOrder,
    ) -> Vec<EnsembleEvent> {
        let Some(server) = self.server_of(session) else {
            return Vec::new();
        };
        self.heard_from(session);
        if let Request::AddAuth { scheme, auth } = &request {
            // A real server keeps identities per connection, and the leader
            // checks a write with the identities its request carries; here
            // every replica applies the session's writes with its own
            // session table, so every replica learns them now.
            for replica in &mut self.replicas {
                let _ = replica.core.add_auth(session, scheme, auth);
            }
        }
        let mut events = Vec::new();
        let reaches_leader = self.replicas[server].in_quorum && !self.electing;
        let is_write = request.is_write();
        let queued = if is_write {
            Queued::Write {
                request,
                index: None,
                applied: None,
            }
        } else if matches!(request, Request::Sync { .. }) {
            let until = reaches_leader.then_some(self.committed_count());
            Queued::Sync { request, until }
        } else {
            Queued::Read { request }
        };
        self.connection_mut(session).queue.push_back(queued);
        if is_write && reaches_leader {
            self.commit_waiting_write(session, &mut events);
        } else if is_write {
            self.waiting.push_back(Waiting::Write(session));
        }
        self.answer_ready(server, order, &mut events);
        events
    }

    /// `server` applies its next committed transaction, if it reaches the
    /// leader and has one; returns the watches that fired there and the
    /// answers that became ready.
    pub fn apply_next(
        &mut self,
        server: ServerIndex,
        order: &mut dyn ChildOrder,
    ) -> Vec<EnsembleEvent> {
        let mut events = Vec::new();
        if self.lag(server) == 0 || !self.replicas[server].in_quorum {
            return events;
        }
        self.apply_one(server, &mut events);
        self.answer_ready(server, order, &mut events);
        events
    }

    /// The leader expires every session not heard from within its timeout
    /// (one closeSession each, in id order; the i-th deletes its ephemerals
    /// in `order` moved on by i).
    pub fn expire_due(
        &mut self,
        order: DeletionOrder,
        child_order: &mut dyn ChildOrder,
    ) -> (Vec<SessionId>, Vec<EnsembleEvent>) {
        let mut events = Vec::new();
        if self.electing {
            return (Vec::new(), events);
        }
        let due = self.committed().due_sessions();
        for (i, &session) in due.iter().enumerate() {
            let order = match order {
                DeletionOrder::Shuffled(seed) => {
                    DeletionOrder::Shuffled(seed.wrapping_add(i as u64))
                }
                permuted => permuted,
            };
            self.commit(Change::Close { session, order }, &mut events);
        }
        self.answer_all(child_order, &mut events);
        (due, events)
    }

    /// The leader closes (or, as a fault, expires) one session now; while
    /// the ensemble elects, the close waits for the new leader, which
    /// commits it (see [`Ensemble::is_closing`]). A session already closed,
    /// or whose close already waits, is not alive.
    pub fn close_session(
        &mut self,
        session: SessionId,
        order: DeletionOrder,
        child_order: &mut dyn ChildOrder,
    ) -> Result<Vec<EnsembleEvent>, SessionError> {
        if !self.committed().is_session_alive(session) || self.is_closing(session) {
            return Err(SessionError::NotAlive(session));
        }
        let mut events = Vec::new();
        if self.electing {
            self.waiting.push_back(Waiting::Close { session, order });
            return Ok(events);
        }
        self.commit(Change::Close { session, order }, &mut events);
        self.answer_all(child_order, &mut events);
        Ok(events)
    }

    /// The leader's container reaper runs (one transaction).
    pub fn reap(&mut self, child_order: &mut dyn ChildOrder) -> Vec<EnsembleEvent> {
        let mut events = Vec::new();
        if !self.electing {
            self.commit(Change::Reap, &mut events);
            self.answer_all(child_order, &mut events);
        }
        events
    }

    fn connection_mut(&mut self, session: SessionId) -> &mut Connection {
        self.connections
            .get_mut(&session)
            .expect("a connected session")
    }

    fn check_reachable(&self, server: ServerIndex) -> Result<(), ConnectError> {
        let replica = &self.replicas[server];
        if !replica.serving || !replica.in_quorum || self.electing || self.looking {
            return Err(ConnectError::NotServing(server));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
