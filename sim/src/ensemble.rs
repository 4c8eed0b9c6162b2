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

use crate::server::{
    Applied, ChildOrder, Notification, PermutedOrder, ServerConfig, SessionError, ShuffledOrder,
    ZkServer,
};
use std::collections::{BTreeMap, VecDeque};
use zk_recipes::zk::{Reply, Request, SessionId, Zxid};

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

    /// `server` loses the leader: it applies and commits nothing, but goes
    /// on answering reads from what it has until [`Ensemble::stop`].
    pub fn isolate(&mut self, server: ServerIndex) {
        self.replicas[server].in_quorum = false;
        if server == self.leader {
            self.electing = true;
        }
    }

    /// `server` stops serving (it crashed, or noticed it lost the leader):
    /// returns the sessions it dropped, in id order.
    pub fn stop(&mut self, server: ServerIndex) -> Vec<SessionId> {
        self.replicas[server].serving = false;
        self.isolate(server);
        let dropped: Vec<SessionId> = self
            .connections
            .iter()
            .filter(|(_, c)| c.server == server)
            .map(|(session, _)| *session)
            .collect();
        for &session in &dropped {
            self.disconnect(session);
        }
        dropped
    }

    /// `server` rejoins: it catches up with the leader before it serves
    /// (the watches of sessions still connected to it fire as it does),
    /// then forwards the writes its sessions sent while it was cut off
    /// (if a leader is there to commit them).
    pub fn start(&mut self, server: ServerIndex, order: &mut dyn ChildOrder) -> Vec<EnsembleEvent> {
        let replica = &mut self.replicas[server];
        replica.in_quorum = true;
        replica.serving = true;
        let mut events = Vec::new();
        while self.lag(server) > 0 {
            self.apply_one(server, &mut events);
        }
        self.forward_waiting(&mut events);
        self.answer_all(order, &mut events);
        events
    }

    /// The leader comes back before the servers noticed it was gone (a
    /// freeze shorter than tickTime × syncLimit): no election; it catches
    /// up and the writes that waited for it commit now.
    pub fn resume_leader(&mut self, order: &mut dyn ChildOrder) -> Vec<EnsembleEvent> {
        assert!(
            !self.looking,
            "the servers noticed: an election, not a resume"
        );
        self.electing = false;
        self.start(self.leader, order)
    }

    /// A leader election begins: no write commits until [`Ensemble::elect`].
    pub fn begin_election(&mut self) {
        self.electing = true;
    }

    /// The servers notice their leader is gone (ZooKeeper: tickTime ×
    /// syncLimit after it went): every server closes every client
    /// connection and serves nobody until [`Ensemble::elect`]. Requests in
    /// flight fail with their connections; a write that waited for a
    /// leader never commits (a close the leader decided still does).
    /// Returns the sessions whose connection closed, in id order.
    pub fn notice_leader_lost(&mut self) -> Vec<SessionId> {
        self.electing = true;
        self.looking = true;
        let dropped: Vec<SessionId> = self.connections.keys().copied().collect();
        for &session in &dropped {
            self.disconnect(session);
        }
        dropped
    }

    /// The servers noticed their leader is gone and none serves yet.
    pub fn is_looking(&self) -> bool {
        self.looking
    }

    /// `server` becomes the leader: it catches up, hears from every live
    /// session now (each gets a fresh timeout, connected or not: its
    /// session tracker starts anew), and commits the writes and closes that
    /// waited, in the order they came.
    pub fn elect(&mut self, server: ServerIndex, order: &mut dyn ChildOrder) -> Vec<EnsembleEvent> {
        assert!(
            self.replicas[server].serving,
            "a stopped server cannot lead"
        );
        let mut events = Vec::new();
        self.replicas[server].in_quorum = true;
        while self.lag(server) > 0 {
            self.apply_one(server, &mut events);
        }
        self.leader = server;
        self.electing = false;
        self.looking = false;
        let now_ms = self.now_ms.max(self.replicas[server].core.now_ms());
        self.set_time_ms(now_ms);
        for session in self.replicas[server].core.live_sessions() {
            self.replicas[server].core.touch_session(session);
        }
        self.forward_waiting(&mut events);
        self.answer_all(order, &mut events);
        events
    }

    /// With a leader, commits the closes that waited for one and the
    /// writes of every session whose server reaches the leader, in the
    /// order they came (the other writes keep waiting), and gives waiting
    /// syncs their target.
    fn forward_waiting(&mut self, events: &mut Vec<EnsembleEvent>) {
        if self.electing {
            return;
        }
        let waiting = std::mem::take(&mut self.waiting);
        for next in waiting {
            match next {
                Waiting::Close { session, order } => {
                    self.commit(Change::Close { session, order }, events);
                }
                // A write whose connection is gone (a close before it
                // ended the session) failed with it.
                Waiting::Write(session) => match self.server_of(session) {
                    None => {}
                    Some(server) if self.replicas[server].in_quorum => {
                        self.commit_waiting_write(session, events)
                    }
                    Some(_) => self.waiting.push_back(next),
                },
            }
        }
        let committed = self.committed_count();
        for connection in self.connections.values_mut() {
            if !self.replicas[connection.server].in_quorum {
                continue;
            }
            for queued in &mut connection.queue {
                if let Queued::Sync {
                    until: until @ None,
                    ..
                } = queued
                {
                    *until = Some(committed);
                }
            }
        }
    }

    /// Appends a transaction and lets the leader apply it.
    fn commit(&mut self, change: Change, events: &mut Vec<EnsembleEvent>) -> usize {
        assert!(!self.electing, "no commit without a leader");
        assert_eq!(self.lag(self.leader), 0, "the leader applied every commit");
        self.log.push(Txn {
            time_ms: self.now_ms,
            change,
        });
        let index = self.committed_count() - 1;
        self.apply_one(self.leader, events);
        index
    }

    /// Commits the session's oldest write that waits for a leader (its
    /// queue slot learns its log index before the leader applies it).
    fn commit_waiting_write(&mut self, session: SessionId, events: &mut Vec<EnsembleEvent>) {
        let Some(request) = self.connections.get(&session).and_then(|c| {
            c.queue.iter().find_map(|queued| match queued {
                Queued::Write {
                    request,
                    index: None,
                    ..
                } => Some(request.clone()),
                _ => None,
            })
        }) else {
            return;
        };
        let index = self.committed_count();
        let slot = self
            .connection_mut(session)
            .queue
            .iter_mut()
            .find_map(|queued| match queued {
                Queued::Write {
                    index: slot @ None, ..
                } => Some(slot),
                _ => None,
            });
        *slot.expect("found above") = Some(index);
        let committed = self.commit(Change::Request { session, request }, events);
        debug_assert_eq!(committed, index);
    }

    /// `server` applies the next transaction of the log.
    fn apply_one(&mut self, server: ServerIndex, events: &mut Vec<EnsembleEvent>) {
        let index = self.replicas[server].applied;
        self.replicas[server].applied += 1;
        let txn = self.log[index - self.log_start].clone();
        self.trim_log();
        let core = &mut self.replicas[server].core;
        if txn.time_ms > core.now_ms() {
            core.set_time_ms(txn.time_ms);
        }
        match txn.change {
            Change::Open {
                session,
                timeout_ms,
            } => core
                .open_session(session, timeout_ms)
                .expect("the leader opened it"),
            Change::Request { session, request } => {
                let applied = core.apply(session, &request, &mut PermutedOrder(0));
                let committed = (server == self.leader).then(|| EnsembleEvent::Committed {
                    session,
                    request,
                    applied: applied.clone(),
                });
                events.extend(
                    applied
                        .notifications
                        .iter()
                        .cloned()
                        .map(EnsembleEvent::Notify),
                );
                events.extend(committed);
                self.record_write(server, session, index, applied);
            }
            Change::Close { session, order } => {
                let notifications = order
                    .with(|order| core.close_session(session, order))
                    .unwrap_or_default();
                events.extend(notifications.into_iter().map(EnsembleEvent::Notify));
                if self.server_of(session) == Some(server) {
                    self.connections.remove(&session);
                    events.push(EnsembleEvent::Closed { session });
                }
            }
            Change::Reap => events.extend(core.reap().into_iter().map(EnsembleEvent::Notify)),
        }
    }

    /// Forgets the transactions every replica has applied.
    fn trim_log(&mut self) {
        let applied_everywhere = self.replicas.iter().map(|r| r.applied).min().unwrap_or(0);
        if applied_everywhere > self.log_start {
            self.log.drain(..applied_everywhere - self.log_start);
            self.log_start = applied_everywhere;
        }
    }

    /// Keeps the result of a session's write for its reply, if the session
    /// waits for it at this server.
    fn record_write(
        &mut self,
        server: ServerIndex,
        session: SessionId,
        index: usize,
        applied: Applied,
    ) {
        let Some(connection) = self.connections.get_mut(&session) else {
            return;
        };
        if connection.server != server {
            return;
        }
        for queued in &mut connection.queue {
            if let Queued::Write {
                index: Some(i),
                applied: slot,
                ..
            } = queued
            {
                if *i == index {
                    *slot = Some(applied);
                    return;
                }
            }
        }
    }

    /// Answers, session by session in id order, every request at the head
    /// of a queue on `server` that can be answered now.
    fn answer_ready(
        &mut self,
        server: ServerIndex,
        order: &mut dyn ChildOrder,
        events: &mut Vec<EnsembleEvent>,
    ) {
        let sessions: Vec<SessionId> = self
            .connections
            .iter()
            .filter(|(_, c)| c.server == server)
            .map(|(session, _)| *session)
            .collect();
        for session in sessions {
            while self.answer_head(session, order, events) {}
        }
    }

    fn answer_all(&mut self, order: &mut dyn ChildOrder, events: &mut Vec<EnsembleEvent>) {
        for server in 0..self.replicas.len() {
            self.answer_ready(server, order, events);
        }
    }

    /// Answers the session's oldest request if it is ready (its events
    /// into `events`); false when nothing was ready.
    fn answer_head(
        &mut self,
        session: SessionId,
        order: &mut dyn ChildOrder,
        events: &mut Vec<EnsembleEvent>,
    ) -> bool {
        let Some(connection) = self.connections.get(&session) else {
            return false;
        };
        let server = connection.server;
        let replica = &self.replicas[server];
        let Some(head) = connection.queue.front() else {
            return false;
        };
        if !replica.serving {
            return false;
        }
        let ready = match head {
            Queued::Opening { index } => replica.applied > *index,
            Queued::Read { .. } => true,
            Queued::Write { applied, .. } => applied.is_some(),
            Queued::Sync { until, .. } => until.is_some_and(|until| replica.applied >= until),
            Queued::Revalidate { until } => replica.applied >= *until,
            Queued::SetWatches { .. } => true,
        };
        if !ready {
            return false;
        }
        let Some(queued) = self.connection_mut(session).queue.pop_front() else {
            return false;
        };
        let core = &mut self.replicas[server].core;
        let applied = match queued {
            Queued::Opening { .. } => {
                events.push(EnsembleEvent::Opened { session });
                return true;
            }
            // A follower serves a session it has not seen created yet.
            Queued::Read { request } => core.serve_read(session, &request, order),
            Queued::Write { applied, .. } => applied.expect("ready"),
            Queued::Sync { request, .. } => Applied {
                result: Ok(Reply::Synced {
                    path: request.path().expect("sync names a path").clone(),
                }),
                zxid: core.last_zxid(),
                notifications: Vec::new(),
            },
            // Revalidated: what waited behind it may be ready too.
            Queued::Revalidate { .. } => return true,
            Queued::SetWatches {
                relative_zxid,
                watches,
            } => {
                let notifications = core.set_watches(session, relative_zxid, &watches);
                events.extend(notifications.into_iter().map(EnsembleEvent::Notify));
                return true;
            }
        };
        events.push(EnsembleEvent::Reply { session, applied });
        true
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
mod tests {
    use super::*;
    use crate::server::{SortedOrder, WatchSet};
    use zk_recipes::zk::Acls;
    use zk_recipes::zk::{CreateMode, EventType, Path};

    fn create(path: &str) -> Request {
        Request::Create {
            path: Path::new(path).unwrap(),
            data: Vec::new(),
            mode: CreateMode::Ephemeral,
            acl: Acls::Open,
        }
    }

    /// Three servers, one session on server 1 with an ephemeral node.
    fn ensemble_with_session() -> (Ensemble, SessionId) {
        let mut ensemble = Ensemble::new(3, ServerConfig::default());
        let session = SessionId(7);
        ensemble
            .open_session(1, session, 4_000, &mut SortedOrder)
            .unwrap();
        while ensemble.lag(1) > 0 {
            ensemble.apply_next(1, &mut SortedOrder);
        }
        ensemble.submit(session, create("/e"), &mut SortedOrder);
        (ensemble, session)
    }

    #[test]
    fn a_close_without_a_leader_waits_for_the_next_one() {
        let (mut ensemble, session) = ensemble_with_session();
        ensemble.begin_election();
        let events = ensemble
            .close_session(session, DeletionOrder::Permuted(0), &mut SortedOrder)
            .expect("a close while electing is accepted");
        assert!(events.is_empty(), "nothing commits without a leader");
        assert!(ensemble.is_closing(session));
        assert!(ensemble.committed().is_session_alive(session));
        // A second expiry of the same session is refused: it is closing.
        assert!(ensemble
            .close_session(session, DeletionOrder::Permuted(0), &mut SortedOrder)
            .is_err());
        ensemble.elect(2, &mut SortedOrder);
        assert!(!ensemble.is_closing(session));
        assert!(!ensemble.committed().is_session_alive(session));
        let ephemeral = Path::new("/e").unwrap();
        assert!(ensemble.committed().node_kind(&ephemeral).is_none());
    }

    #[test]
    fn writes_and_closes_without_a_leader_commit_in_the_order_they_came() {
        let (mut ensemble, session) = ensemble_with_session();
        let other = SessionId(8);
        ensemble
            .open_session(2, other, 4_000, &mut SortedOrder)
            .unwrap();
        while ensemble.lag(2) > 0 {
            ensemble.apply_next(2, &mut SortedOrder);
        }
        ensemble.begin_election();
        // The other session's write first, then the close, then a write of
        // the closing session: the last fails with its session.
        ensemble.submit(other, create("/before"), &mut SortedOrder);
        ensemble
            .close_session(session, DeletionOrder::Permuted(0), &mut SortedOrder)
            .unwrap();
        ensemble.submit(session, create("/after"), &mut SortedOrder);
        let zxid = ensemble.committed().last_zxid();
        ensemble.elect(0, &mut SortedOrder);
        let committed = ensemble.committed();
        let before = committed
            .stat(&Path::new("/before").unwrap())
            .expect("committed");
        assert!(before.czxid > zxid);
        assert!(!committed.is_session_alive(session));
        assert!(committed.node_kind(&Path::new("/after").unwrap()).is_none());
        // Every server applies the same log.
        for server in 0..3 {
            while ensemble.lag(server) > 0 {
                ensemble.apply_next(server, &mut SortedOrder);
            }
            assert_eq!(
                ensemble.server(server).paths(),
                ensemble.committed().paths()
            );
        }
    }

    fn exists(path: &str) -> Request {
        Request::Exists {
            path: Path::new(path).unwrap(),
            watch: false,
        }
    }

    #[test]
    fn a_noticed_leader_loss_closes_every_connection_and_drops_waiting_writes() {
        let (mut ensemble, session) = ensemble_with_session();
        let other = SessionId(8);
        ensemble
            .open_session(2, other, 4_000, &mut SortedOrder)
            .unwrap();
        while ensemble.lag(2) > 0 {
            ensemble.apply_next(2, &mut SortedOrder);
        }
        ensemble.begin_election();
        // Before the servers notice: connected, the write waits.
        let events = ensemble.submit(other, create("/waited"), &mut SortedOrder);
        assert!(events.is_empty(), "{events:?}");
        assert_eq!(ensemble.server_of(other), Some(2));
        assert_eq!(ensemble.notice_leader_lost(), vec![session, other]);
        assert!(ensemble.is_looking());
        assert_eq!(ensemble.server_of(session), None);
        // No server serves until a leader is elected.
        let last = ensemble.committed().last_zxid();
        assert_eq!(
            ensemble.connect(1, session, last),
            Err(ConnectError::NotServing(1))
        );
        ensemble.elect(1, &mut SortedOrder);
        assert!(!ensemble.is_looking());
        let waited = Path::new("/waited").unwrap();
        assert!(ensemble.committed().node_kind(&waited).is_none());
        assert_eq!(ensemble.connect(2, other, last), Ok(()));
    }

    #[test]
    fn a_moved_session_is_answered_after_what_the_leader_had_when_it_moved() {
        let (mut ensemble, session) = ensemble_with_session();
        while ensemble.lag(1) > 0 {
            ensemble.apply_next(1, &mut SortedOrder);
        }
        let seen = ensemble.server(1).last_zxid();
        // A second session deletes nothing but creates /late; server 2
        // has applied the opening only.
        let other = SessionId(8);
        ensemble
            .open_session(0, other, 4_000, &mut SortedOrder)
            .unwrap();
        ensemble.submit(other, create("/late"), &mut SortedOrder);
        while ensemble.server(2).last_zxid() < seen {
            ensemble.apply_next(2, &mut SortedOrder);
        }
        assert!(ensemble.lag(2) > 0, "server 2 lags behind /late");
        ensemble.disconnect(session);
        ensemble.connect_revalidated(2, session, seen).unwrap();
        let events = ensemble.submit(session, exists("/late"), &mut SortedOrder);
        assert!(
            events.is_empty(),
            "answered before revalidation: {events:?}"
        );
        let mut replies = Vec::new();
        while ensemble.lag(2) > 0 {
            replies.extend(ensemble.apply_next(2, &mut SortedOrder));
        }
        let [EnsembleEvent::Reply { applied, .. }] = replies.as_slice() else {
            panic!("one reply: {replies:?}");
        };
        assert!(
            matches!(applied.result, Ok(Reply::Exists(Some(_)))),
            "{applied:?}"
        );
    }

    /// What a session's watch on /n hears when it moves to a follower
    /// that has applied none of `changes` (made by another session while
    /// it was away): as a real 3.8 ensemble answers (issue 42 item 2),
    /// the watches are read after the revalidation, against what the
    /// follower applied by then.
    fn rewatched_after(changes: &[Request], exists_first: bool, watch: &str) -> Vec<EventType> {
        let mut ensemble = Ensemble::new(3, ServerConfig::default());
        let (mover, other) = (SessionId(7), SessionId(8));
        for (server, session) in [(1, mover), (0, other)] {
            ensemble
                .open_session(server, session, 4_000, &mut SortedOrder)
                .unwrap();
        }
        if exists_first {
            let persistent = Request::Create {
                path: Path::new("/n").unwrap(),
                data: Vec::new(),
                mode: CreateMode::Persistent,
                acl: Acls::Open,
            };
            ensemble.submit(other, persistent, &mut SortedOrder);
        }
        for server in [1, 2] {
            while ensemble.lag(server) > 0 {
                ensemble.apply_next(server, &mut SortedOrder);
            }
        }
        let seen = ensemble.server(1).last_zxid();
        ensemble.disconnect(mover);
        for change in changes {
            ensemble.submit(other, change.clone(), &mut SortedOrder);
        }
        assert!(ensemble.lag(2) > 0, "server 2 has applied none of them");
        ensemble.connect_revalidated(2, mover, seen).unwrap();
        let n = vec![Path::new("/n").unwrap()];
        let watches = match watch {
            "data" => WatchSet {
                data: n,
                ..WatchSet::default()
            },
            _ => WatchSet {
                exist: n,
                ..WatchSet::default()
            },
        };
        let at_once = ensemble.set_watches(mover, seen, &watches);
        assert!(
            at_once.is_empty(),
            "read before the revalidation: {at_once:?}"
        );
        let mut heard = Vec::new();
        while ensemble.lag(2) > 0 {
            for event in ensemble.apply_next(2, &mut SortedOrder) {
                if let EnsembleEvent::Notify(n) = event {
                    assert_eq!(n.session, mover);
                    heard.push(n.event.event_type);
                }
            }
        }
        heard
    }

    #[test]
    fn a_moved_session_s_watches_are_read_after_its_revalidation() {
        let n = || Path::new("/n").unwrap();
        let set = Request::SetData {
            path: n(),
            data: b"x".to_vec(),
            version: -1,
        };
        let delete = Request::Delete {
            path: n(),
            version: -1,
        };
        let create = Request::Create {
            path: n(),
            data: Vec::new(),
            mode: CreateMode::Persistent,
            acl: Acls::Open,
        };
        use EventType::*;
        // Set, then deleted while away: the node is gone when the watch is read.
        let changes = [set, delete.clone()];
        assert_eq!(rewatched_after(&changes, true, "data"), vec![NodeDeleted]);
        // Deleted, then created again: there, and changed since the client saw it.
        let changes = [delete.clone(), create.clone()];
        assert_eq!(
            rewatched_after(&changes, true, "data"),
            vec![NodeDataChanged]
        );
        // Created, then deleted: nothing to report, the watch stays armed.
        let changes = [create.clone(), delete];
        assert_eq!(rewatched_after(&changes, false, "exists"), vec![]);
    }

    #[test]
    fn a_new_leader_gives_every_live_session_a_fresh_timeout() {
        let (mut ensemble, session) = ensemble_with_session();
        ensemble.disconnect(session);
        ensemble.begin_election();
        ensemble.set_time_ms(3_999);
        ensemble.elect(1, &mut SortedOrder);
        // Not heard from for 3,999 ms, but the new leader's tracker
        // restarted at election: not due at 4,000 ms.
        ensemble.set_time_ms(4_000);
        let (expired, _) = ensemble.expire_due(DeletionOrder::Permuted(0), &mut SortedOrder);
        assert!(expired.is_empty(), "{expired:?}");
        ensemble.set_time_ms(8_000);
        let (expired, _) = ensemble.expire_due(DeletionOrder::Permuted(0), &mut SortedOrder);
        assert_eq!(expired, vec![session]);
    }
}
