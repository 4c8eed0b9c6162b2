//! Faults that strike a server of the ensemble, and the elections they
//! start: a follower's lag spike, a crash (its connections drop, it
//! restarts and catches up), a partition from the leader (stale reads until
//! the server notices, then its clients move; it rejoins when the partition
//! heals), a leader change.
//!
//! Leader loss: a leader that crashes or is cut off, and a `leader_change`,
//! leave the ensemble without a leader (no write commits). The followers
//! notice tickTime × syncLimit later (`WorldConfig::leader_loss_detect_ms`;
//! a partitioned leader: when it notices it is cut off, its `detect_ms`):
//! until then clients stay connected (reads answered from each server's
//! state, writes wait); then every server closes every client connection
//! (every request in flight fails with ConnectionLoss, a write that waited
//! never commits) and serves nobody, and a cut-off old leader stops
//! serving. An election window later (drawn from `WorldConfig::
//! election_ms`, measured on a real 3.8 ensemble; a `leader_change` says
//! its own) the most up-to-date server that is up leads (ties: the lowest
//! index; a `leader_change` prefers any server but the old leader) and
//! clients reconnect. An election needs a majority of the servers up:
//! without one it waits for a server to come back, and takes a window
//! drawn then. A leader left without a
//! majority (its followers crashed or cut off) is lost the same way, and
//! is elected again once a majority is back. An expiry that strikes while
//! no leader is there waits for the new leader to commit it: the client's
//! session ends then, not before. A heal before the followers noticed
//! ends the election without closing a connection.

use super::events::Event;
use super::server_faults::{Election, HungConnect, Outage};
use super::shared::{closes_first, ms_to_ns, trace, Shared, SimRecipe};
use crate::faults::{Fault, MsRange};
use crate::oracles::Seen;
use crate::server::{ShuffledOrder, WatchSet};
use zk_recipes::zk::{SessionId, Zxid};

impl<R: SimRecipe> Shared<R> {
    /// A scheduled fault strikes a server (or the leadership).
    pub(super) fn strike_server(&mut self, fault: &Fault) {
        let servers = self.ensemble.servers();
        let target = match *fault {
            Fault::LagSpike { server, .. }
            | Fault::ServerCrash { server, .. }
            | Fault::Partition { server, .. }
            | Fault::Freeze { server, .. } => Some(server),
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
                self.check_lag_past_sync_limit(server, delay_ms);
            }
            Fault::ServerCrash { server, down_ms } => {
                if !self.take_down(server, Outage::Crashed) {
                    return;
                }
                self.stop_server(server);
                self.after_outage(server, self.config.leader_loss_detect_ms());
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
                let detect_ms = detect_ms.unwrap_or_else(|| self.default_detect_ms());
                trace!(
                    self,
                    None,
                    Fault,
                    "server {server} will notice it is cut off in {detect_ms} ms"
                );
                self.after_outage(server, detect_ms);
                let outage = self.servers.outages[server];
                let noticed = now.saturating_add(ms_to_ns(detect_ms));
                self.schedule(noticed, Event::PartitionNoticed { server, outage });
                let at = now.saturating_add(ms_to_ns(down_ms));
                self.schedule(at, Event::ServerUp { server, outage });
            }
            Fault::Freeze { server, down_ms } => {
                if !self.take_down(server, Outage::Frozen) {
                    return;
                }
                let thaw = now.saturating_add(ms_to_ns(down_ms));
                let detect_ns = ms_to_ns(self.config.leader_loss_detect_ms());
                self.servers.thaw_ns[server] = thaw;
                self.servers.freeze_noticed_ns[server] = now.saturating_add(detect_ns);
                self.ensemble.isolate(server);
                self.freeze_connections(server);
                self.after_outage(server, self.config.leader_loss_detect_ms());
                let outage = self.servers.outages[server];
                self.schedule(thaw, Event::ServerUp { server, outage });
            }
            Fault::LeaderChange { window_ms } => {
                if self.servers.election.is_some() {
                    trace!(self, None, Fault, "an election is under way: no effect");
                    return;
                }
                let leader = self.ensemble.leader();
                let detect_ms = self.config.leader_loss_detect_ms();
                self.lose_leader(detect_ms, window_ms, Some(leader));
            }
            _ => unreachable!("not an ensemble fault: {fault}"),
        }
    }

    /// When a partitioned server notices, unless its fault says: after
    /// tickTime × syncLimit; in swarm mode drawn around the session timeout
    /// (half of it to one and a half), so that some partitions are noticed
    /// only after a session of the cut-off server expired at the leader.
    fn default_detect_ms(&mut self) -> u64 {
        if !self.config.faults.swarm {
            return self.config.leader_loss_detect_ms();
        }
        let timeout_ms = self.config.session_timeout_ms;
        MsRange::new(timeout_ms / 2, timeout_ms.saturating_add(timeout_ms / 2))
            .draw(&mut self.rng.detect)
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

    /// A server went down: if it led, the leader is lost (the followers
    /// notice `detect_ms` later); if the leader is left without a
    /// majority, it is lost the same way until one is back.
    fn after_outage(&mut self, server: usize, detect_ms: u64) {
        if self.servers.election.is_some() {
            return;
        }
        if server == self.ensemble.leader() {
            let window_ms = self.election_window_ms();
            self.lose_leader(detect_ms, window_ms, None);
        } else if !self.has_majority() {
            trace!(
                self,
                None,
                Fault,
                "leader {} has no majority: it steps down",
                self.ensemble.leader()
            );
            let detect_ms = self.config.leader_loss_detect_ms();
            let window_ms = self.election_window_ms();
            self.lose_leader(detect_ms, window_ms, None);
        }
    }

    /// How long an election takes once it can start: drawn from
    /// `WorldConfig::election_ms` per election (one of the range's points
    /// the tape chooses, in an explored run).
    fn election_window_ms(&mut self) -> u64 {
        let range = self.config.election_ms;
        match self.chooser.as_mut() {
            Some(tape) => tape.duration_ms(range.min, range.max.max(range.min)),
            None => range.draw(&mut self.rng.election),
        }
    }

    /// The leader is lost now: no write commits; the followers notice
    /// `detect_ms` later, and the election ends `window_ms` after that.
    fn lose_leader(&mut self, detect_ms: u64, window_ms: u64, not: Option<usize>) {
        let notice_ns = self.now_ns().saturating_add(ms_to_ns(detect_ms));
        let due_ns = notice_ns.saturating_add(ms_to_ns(window_ms));
        self.ensemble.begin_election();
        self.servers.election = Some(Election {
            notice_ns: Some(notice_ns),
            due_ns,
            not,
            awaits_majority: false,
        });
        trace!(
            self,
            None,
            Fault,
            "leader {} is lost: no write commits; the followers notice in {detect_ms} ms",
            self.ensemble.leader()
        );
        self.schedule(notice_ns, Event::Elect);
        self.schedule(due_ns, Event::Elect);
    }

    /// The servers notice the leader is gone: every one closes every
    /// client connection (the clients fail what is in flight with
    /// ConnectionLoss and reconnect once a new leader serves); a cut-off
    /// old leader stops serving.
    fn notice_leader_loss(&mut self) {
        if let Some(election) = &mut self.servers.election {
            election.notice_ns = None;
        }
        let leader = self.ensemble.leader();
        trace!(
            self,
            None,
            Fault,
            "the servers notice leader {leader} is gone: every client connection closes until a new leader serves"
        );
        if self.servers.down[leader] == Some(Outage::Partitioned) {
            self.stop_server(leader);
        }
        self.close_hung(None);
        for session in self.ensemble.notice_leader_lost() {
            let Some(&client) = self.owners.get(&session) else {
                continue;
            };
            let server = self.clients[client].link.server;
            if self.servers.frozen_until(server).is_some() {
                continue; // a frozen server closes nothing: its clients time out
            }
            if self.clients[client].link.session == Some(session) {
                trace!(
                    self,
                    Some(client),
                    Session,
                    "leader lost: server {server} closes the connection"
                );
                self.drop_connection(client, 0);
            }
        }
    }

    /// `server` froze: its connected clients hear nothing from now on
    /// (each last heard it when its last send was answered, just before),
    /// and give the connection up at their read timeout.
    fn freeze_connections(&mut self, server: usize) {
        for client in 0..self.clients.len() {
            let slot = &mut self.clients[client];
            if slot.link.server != server || !slot.link.server_up || slot.link.session.is_none() {
                continue;
            }
            slot.link.last_heard_ns = slot.link.last_heard_ns.max(slot.last_sent_ns);
            self.schedule_timeout_check(client);
        }
    }

    /// A frozen server thaws. Frozen past tickTime × syncLimit, it finds
    /// its leader gone (or its leadership): it closes every connection and
    /// catches up. Frozen for less, nobody noticed: a follower catches up,
    /// a leader leads on (the election its freeze began is called off).
    fn thaw(&mut self, server: usize) {
        let noticed = self.now_ns() >= self.servers.freeze_noticed_ns[server];
        trace!(self, None, Fault, "server {server} thaws");
        if noticed {
            self.stop_server(server);
            self.bring_up(server);
            return;
        }
        if server == self.ensemble.leader() && self.servers.election.is_some() {
            self.servers.election = None;
            self.servers.down[server] = None;
            let mut order = ShuffledOrder(&mut self.rng.child_order);
            let events = self.ensemble.resume_leader(&mut order);
            trace!(
                self,
                None,
                Fault,
                "server {server} leads on: nobody noticed"
            );
            self.dispatch(events);
            self.schedule_applies();
            self.resume_hung();
            return;
        }
        self.bring_up(server);
    }

    fn has_majority(&self) -> bool {
        let servers = self.ensemble.servers();
        let up = self.servers.down.iter().filter(|d| d.is_none()).count();
        up > servers / 2
    }

    /// The server stops serving: each client connected to it sees its
    /// connection drop (and reconnects elsewhere).
    fn stop_server(&mut self, server: usize) {
        self.close_hung(Some(server));
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

    /// A lag spike of `delay_ms` struck follower `server`: the leader's
    /// stream to it (its proposals and its pings, every tickTime / 2)
    /// arrives that much later, in order, so the follower hears nothing
    /// from its leader for `delay_ms`. Past tickTime × syncLimit its read
    /// of the leader times out then and it drops out of the quorum (real
    /// 3.8: `a_follower_lagging_past_the_sync_limit_is_dropped_and_resyncs`).
    fn check_lag_past_sync_limit(&mut self, server: usize, delay_ms: u64) {
        let detect_ms = self.config.leader_loss_detect_ms();
        if delay_ms < detect_ms || self.servers.drop_checked[server] {
            return;
        }
        self.servers.drop_checked[server] = true;
        let round = self.servers.apply_rounds[server];
        let at = self.now_ns().saturating_add(ms_to_ns(detect_ms));
        self.schedule(at, Event::LagDrop { server, round });
    }

    /// A follower heard nothing from its leader for tickTime × syncLimit:
    /// it closes every client connection, syncs with the leader anew (the
    /// lag ends with the old connection) and serves again.
    pub(super) fn lag_drop(&mut self, server: usize, round: u64) {
        if self.servers.apply_rounds[server] != round {
            return; // the heal flushed its applies first
        }
        self.servers.drop_checked[server] = false;
        if self.servers.down[server].is_some() || !self.ensemble.is_in_quorum(server) {
            return;
        }
        trace!(
            self,
            None,
            Fault,
            "server {server} heard nothing from leader {} for tickTime × syncLimit ({} ms): it drops out and syncs again",
            self.ensemble.leader(),
            self.config.leader_loss_detect_ms()
        );
        self.servers.lag_spikes[server] = None;
        self.servers.apply_rounds[server] += 1;
        self.applies_scheduled[server] = 0;
        self.last_apply_ns[server] = self.now_ns();
        self.stop_server(server);
        self.bring_up(server);
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
        match self.servers.down[server] {
            Some(Outage::Frozen) => self.thaw(server),
            _ => self.bring_up(server),
        }
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
        self.resume_hung();
    }

    /// The election's window has passed: the best server that is up leads,
    /// if a majority is up.
    pub(super) fn try_elect(&mut self) {
        let Some(mut election) = self.servers.election else {
            return;
        };
        if election.notice_ns.is_some_and(|at| self.now_ns() >= at) {
            self.notice_leader_loss();
            election.notice_ns = None;
        }
        if self.now_ns() < election.due_ns {
            return;
        }
        if !self.has_majority() {
            if let Some(waiting) = &mut self.servers.election {
                waiting.awaits_majority = true;
            }
            return;
        }
        if election.awaits_majority {
            // A majority is back: the election runs from now.
            let window_ms = self.election_window_ms();
            let due_ns = self.now_ns().saturating_add(ms_to_ns(window_ms));
            if let Some(waiting) = &mut self.servers.election {
                waiting.awaits_majority = false;
                waiting.due_ns = due_ns;
            }
            trace!(
                self,
                None,
                Fault,
                "a majority is up again: the election ends in {window_ms} ms"
            );
            self.schedule(due_ns, Event::Elect);
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
        self.resume_hung();
    }

    /// A reconnection attempt reached a server that reaches no leader: it
    /// hangs (a later attempt of the client replaces it).
    pub(super) fn hang_connect(
        &mut self,
        client: usize,
        server: usize,
        session: SessionId,
        last_zxid: Zxid,
        watches: &WatchSet,
    ) {
        trace!(
            self,
            Some(client),
            Session,
            "connection attempt hangs: server {server} reaches no leader to revalidate the session"
        );
        self.servers.hung.retain(|hung| hung.client != client);
        self.servers.hung.push(HungConnect {
            client,
            epoch: self.clients[client].link.epoch,
            server,
            session,
            last_zxid,
            watches: watches.clone(),
        });
        self.time_out_hung_attempt(client);
    }

    /// The attempts still current (the client made none since).
    fn take_hung(&mut self, server: Option<usize>) -> Vec<HungConnect> {
        let (taken, kept) = std::mem::take(&mut self.servers.hung)
            .into_iter()
            .partition(|hung| server.is_none_or(|server| hung.server == server));
        self.servers.hung = kept;
        let clients = &self.clients;
        taken
            .into_iter()
            .filter(|hung: &HungConnect| {
                let link = &clients[hung.client].link;
                link.epoch == hung.epoch && !link.server_up
            })
            .collect()
    }

    /// `server` (None: every server) stops or notices it lost the leader:
    /// the attempts hung there are closed (the clients try again).
    fn close_hung(&mut self, server: Option<usize>) {
        for hung in self.take_hung(server) {
            let why = crate::ensemble::ConnectError::NotServing(hung.server);
            self.refuse(hung.client, &why);
        }
    }

    /// The attempts hung at servers that now reach a leader go on.
    fn resume_hung(&mut self) {
        let ready: Vec<usize> = (0..self.ensemble.servers())
            .filter(|&s| self.ensemble.is_in_quorum(s) && !self.ensemble.is_electing())
            .collect();
        for server in ready {
            for hung in self.take_hung(Some(server)) {
                let HungConnect {
                    client,
                    session,
                    last_zxid,
                    watches,
                    ..
                } = hung;
                self.reconnect_at(client, server, session, last_zxid, &watches);
            }
        }
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
            election.awaits_majority = false;
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
            self.servers.drop_checked[server] = false;
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
