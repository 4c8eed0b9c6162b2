//! Faults that strike a server of the ensemble, and the elections they
//! start: a follower's lag spike, a crash (its connections drop, it
//! restarts and catches up), a partition from the leader (stale reads until
//! the server notices, then its clients move; it rejoins when the partition
//! heals), a leader change.
//!
//! Elections: a leader that crashes or is cut off, and a `leader_change`,
//! leave the ensemble without a leader (no write commits) for an election
//! window; then the most up-to-date server that is up leads (ties: the
//! lowest index; a `leader_change` prefers any server but the old leader).
//! An election needs a majority of the servers up: without one it waits
//! for a server to come back. A leader left without a majority (its
//! followers crashed or cut off) steps down the same way, and is elected
//! again once a majority is back. Clients stay connected through an
//! election (their reads are answered, their writes wait). An expiry that
//! strikes while no leader is there waits for the new leader to commit it:
//! the client's session ends then, not before.

use super::events::Event;
use super::shared::{ms_to_ns, trace, Shared, SimRecipe};
use super::shell::closes_first;
use crate::faults::Fault;
use crate::oracles::Seen;
use crate::server::ShuffledOrder;
use zk_recipes::zk::SessionId;

/// How long an election takes when a leader crashes or is cut off (a
/// `leader_change` says its own window).
pub const ELECTION_MS: u64 = 200;

/// Why a server is down.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outage {
    Crashed,
    /// Cut off from the leader (it may still serve stale reads).
    Partitioned,
}

/// An election under way.
#[derive(Clone, Copy, Debug)]
pub struct Election {
    /// It ends no earlier than this.
    pub due_ns: u64,
    /// The server it moves leadership away from (a `leader_change`), if
    /// another can lead.
    pub not: Option<usize>,
}

/// The state of the ensemble's faults.
#[derive(Clone, Debug)]
pub struct ServerFaults {
    /// Per server: the outage it is in.
    pub down: Vec<Option<Outage>>,
    /// Per server: outages so far (an event of an earlier one is stale).
    pub outages: Vec<u64>,
    /// Per server: applies are delayed by `.0` ns until `.1`.
    pub lag_spikes: Vec<Option<(u64, u64)>>,
    /// Per server: the heals that flushed its scheduled applies so far (an
    /// apply scheduled before the last one is stale).
    pub apply_rounds: Vec<u64>,
    pub election: Option<Election>,
    /// Expiries decided while no leader was there, waiting for one to
    /// commit them: (client, session), in the order they struck.
    pub waiting_expiries: Vec<(usize, SessionId)>,
}

impl ServerFaults {
    pub fn new(servers: usize) -> ServerFaults {
        ServerFaults {
            down: vec![None; servers],
            outages: vec![0; servers],
            lag_spikes: vec![None; servers],
            apply_rounds: vec![0; servers],
            election: None,
            waiting_expiries: Vec::new(),
        }
    }

    /// The extra delay of an apply scheduled now on `server`, in ns.
    pub fn lag_spike_ns(&self, server: usize, now_ns: u64) -> u64 {
        match self.lag_spikes[server] {
            Some((delay, until)) if now_ns < until => delay,
            _ => 0,
        }
    }
}

impl<R: SimRecipe> Shared<R> {
    /// A scheduled fault strikes a server (or the leadership).
    pub(super) fn strike_server(&mut self, fault: &Fault) {
        let servers = self.ensemble.servers();
        let target = match *fault {
            Fault::LagSpike { server, .. }
            | Fault::ServerCrash { server, .. }
            | Fault::Partition { server, .. } => Some(server),
            _ => None,
        };
        if servers == 1 || target.is_some_and(|server| server >= servers) {
            trace!(self, None, Fault, "no such server: no effect");
            return;
        }
        let now = self.now_ns();
        match *fault {
            Fault::LagSpike {
                server,
                delay_ms,
                window_ms,
            } => {
                if server == self.ensemble.leader() {
                    trace!(self, None, Fault, "server {server} leads: no lag to spike");
                    return;
                }
                let until = now.saturating_add(ms_to_ns(window_ms));
                self.servers.lag_spikes[server] = Some((ms_to_ns(delay_ms), until));
            }
            Fault::ServerCrash { server, down_ms } => {
                if !self.take_down(server, Outage::Crashed) {
                    return;
                }
                self.stop_server(server);
                self.after_outage(server);
                let outage = self.servers.outages[server];
                let at = now.saturating_add(ms_to_ns(down_ms));
                self.schedule(at, Event::ServerUp { server, outage });
            }
            Fault::Partition {
                server,
                down_ms,
                detect_ms,
            } => {
                if !self.take_down(server, Outage::Partitioned) {
                    return;
                }
                self.ensemble.isolate(server);
                self.after_outage(server);
                let outage = self.servers.outages[server];
                let detect_ms = detect_ms.unwrap_or(self.config.session_timeout_ms / 3);
                let noticed = now.saturating_add(ms_to_ns(detect_ms));
                self.schedule(noticed, Event::PartitionNoticed { server, outage });
                let at = now.saturating_add(ms_to_ns(down_ms));
                self.schedule(at, Event::ServerUp { server, outage });
            }
            Fault::LeaderChange { window_ms } => {
                if self.servers.election.is_some() {
                    trace!(self, None, Fault, "an election is under way: no effect");
                    return;
                }
                let leader = self.ensemble.leader();
                self.start_election(now.saturating_add(ms_to_ns(window_ms)), Some(leader));
            }
            _ => unreachable!("not an ensemble fault: {fault}"),
        }
    }

    /// Marks `server` down; false (no effect) if it already is.
    fn take_down(&mut self, server: usize, outage: Outage) -> bool {
        if let Some(already) = self.servers.down[server] {
            trace!(
                self,
                None,
                Fault,
                "server {server} is already down ({already:?}): no effect"
            );
            return false;
        }
        self.servers.down[server] = Some(outage);
        self.servers.outages[server] += 1;
        true
    }

    /// A server went down: if it led, an election starts; if the leader is
    /// left without a majority, it steps down until one is back.
    fn after_outage(&mut self, server: usize) {
        if self.servers.election.is_some() {
            return;
        }
        let now = self.now_ns();
        if server == self.ensemble.leader() {
            self.start_election(now.saturating_add(ms_to_ns(ELECTION_MS)), None);
        } else if !self.has_majority() {
            trace!(
                self,
                None,
                Fault,
                "leader {} has no majority: it steps down",
                self.ensemble.leader()
            );
            self.start_election(now, None);
        }
    }

    fn start_election(&mut self, due_ns: u64, not: Option<usize>) {
        self.ensemble.begin_election();
        self.servers.election = Some(Election { due_ns, not });
        self.schedule(due_ns, Event::Elect);
    }

    fn has_majority(&self) -> bool {
        let servers = self.ensemble.servers();
        let up = self.servers.down.iter().filter(|d| d.is_none()).count();
        up > servers / 2
    }

    /// The server stops serving: each client connected to it sees its
    /// connection drop (and reconnects elsewhere).
    fn stop_server(&mut self, server: usize) {
        for session in self.ensemble.stop(server) {
            let Some(&client) = self.owners.get(&session) else {
                continue;
            };
            if self.clients[client].link.session == Some(session) {
                trace!(
                    self,
                    Some(client),
                    Session,
                    "server {server} stops: connection dropped"
                );
                self.drop_connection(client, 0);
            }
        }
    }

    /// A partitioned server notices it lost the leader and stops serving.
    pub(super) fn partition_noticed(&mut self, server: usize, outage: u64) {
        if self.servers.outages[server] != outage
            || self.servers.down[server] != Some(Outage::Partitioned)
        {
            return;
        }
        trace!(
            self,
            None,
            Fault,
            "server {server} notices it lost the leader and stops serving"
        );
        self.stop_server(server);
    }

    /// A crashed server restarts, or a partition heals: the server catches
    /// up and serves; an election waiting for a majority may end.
    pub(super) fn server_up(&mut self, server: usize, outage: u64) {
        if self.servers.outages[server] != outage || self.servers.down[server].is_none() {
            return;
        }
        self.bring_up(server);
        self.try_elect();
    }

    fn bring_up(&mut self, server: usize) {
        self.servers.down[server] = None;
        let now_ms = self.now_ms() as i64;
        self.ensemble.set_time_ms(now_ms);
        let events = self
            .ensemble
            .start(server, &mut ShuffledOrder(&mut self.rng.child_order));
        trace!(
            self,
            None,
            Fault,
            "server {server} is back (caught up at zxid {})",
            self.ensemble.server(server).last_zxid()
        );
        self.dispatch(events);
        self.schedule_applies();
    }

    /// The election's window has passed: the best server that is up leads,
    /// if a majority is up.
    pub(super) fn try_elect(&mut self) {
        let Some(election) = self.servers.election else {
            return;
        };
        if self.now_ns() < election.due_ns || !self.has_majority() {
            return;
        }
        let best = (0..self.ensemble.servers())
            .filter(|&s| self.servers.down[s].is_none() && self.ensemble.is_serving(s))
            .min_by_key(|&s| (Some(s) == election.not, self.ensemble.lag(s), s));
        let Some(leader) = best else {
            return;
        };
        self.servers.election = None;
        let now_ms = self.now_ms() as i64;
        self.ensemble.set_time_ms(now_ms);
        let events = self
            .ensemble
            .elect(leader, &mut ShuffledOrder(&mut self.rng.child_order));
        trace!(self, None, Fault, "server {leader} leads");
        let expired = self.end_waiting_expiries();
        self.dispatch(closes_first(events));
        for client in expired {
            self.observe(client, Seen::SessionEnded);
        }
        self.schedule_applies();
    }

    /// An expiry struck while no leader was there: it waits for one.
    pub(super) fn expiry_waits_for_leader(&mut self, client: usize, session: SessionId) {
        trace!(
            self,
            Some(client),
            Session,
            "expiry of session {:#x} waits for a leader",
            session.0
        );
        self.servers.waiting_expiries.push((client, session));
    }

    /// The new leader committed the expiries that waited for it: their
    /// sessions end now. Returns the clients whose current session ended.
    fn end_waiting_expiries(&mut self) -> Vec<usize> {
        let waiting = std::mem::take(&mut self.servers.waiting_expiries);
        let now = self.now_ns();
        let mut ended = Vec::new();
        for (client, session) in waiting {
            debug_assert!(!self.ensemble.committed().is_session_alive(session));
            trace!(
                self,
                Some(client),
                Session,
                "the new leader expired session {:#x}",
                session.0
            );
            let current = self.clients[client].link.session == Some(session);
            self.history.session_ended(client, now, session, current);
            if current {
                ended.push(client);
            }
        }
        ended
    }

    /// The faults heal: every server comes back, lag spikes end, an
    /// election under way ends now, and every follower catches up with the
    /// leader at once (a healed follower syncs with its leader): applies
    /// already scheduled a spike's delay later would otherwise outlast
    /// the heal, and the recipe would be blamed for a lag of the harness.
    pub(super) fn heal_servers(&mut self) {
        if self.ensemble.servers() == 1 {
            return;
        }
        for server in 0..self.ensemble.servers() {
            self.servers.lag_spikes[server] = None;
            if self.servers.down[server].is_some() {
                self.bring_up(server);
            }
        }
        if let Some(election) = &mut self.servers.election {
            election.due_ns = 0;
        }
        self.try_elect();
        self.flush_applies();
    }

    /// Every server in the quorum applies now what it lags by; the applies
    /// scheduled for later are dropped (stale by their round).
    fn flush_applies(&mut self) {
        let now = self.now_ns();
        self.ensemble.set_time_ms(self.now_ms() as i64);
        for server in 0..self.ensemble.servers() {
            if !self.ensemble.is_in_quorum(server) {
                continue;
            }
            self.servers.apply_rounds[server] += 1;
            self.applies_scheduled[server] = 0;
            self.last_apply_ns[server] = now;
            let lag = self.ensemble.lag(server);
            if lag == 0 {
                continue;
            }
            trace!(
                self,
                None,
                Fault,
                "server {server} catches up at the heal ({lag} transaction(s))"
            );
            let mut events = Vec::new();
            while self.ensemble.lag(server) > 0 {
                let mut order = ShuffledOrder(&mut self.rng.child_order);
                events.extend(self.ensemble.apply_next(server, &mut order));
            }
            self.dispatch(events);
        }
        self.schedule_applies();
    }
}
