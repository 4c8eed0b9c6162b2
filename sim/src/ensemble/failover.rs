//! Servers failing and coming back, and leader elections: a server cut
//! off from the leader or stopped, its return (it catches up first), the
//! leader's return before anyone noticed, and an election (begun, noticed
//! by the servers, won), after which what waited for a leader commits.

use super::{Ensemble, EnsembleEvent, ServerIndex};
use crate::server::ChildOrder;
use zk_recipes::zk::SessionId;

impl Ensemble {
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
}
