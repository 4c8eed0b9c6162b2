//! The faults that strike a client: the one drawn (or, in an explored run,
//! chosen) for a request, and the scheduled ones as they come (a dropped
//! or silent connection, a lost request or reply, an expiry, a pause, a
//! spurious or delayed watch, a reaper run); server faults go on to
//! `world::servers`.

use super::super::events::{Event, Inbound};
use super::super::shared::{closes_first, ms_to_ns, trace, Shared, SimRecipe};
use crate::ensemble::DeletionOrder;
use crate::faults::{Fault, ScheduledFault, Trigger};
use crate::oracles::Seen;
use crate::server::ShuffledOrder;
use rand::Rng;
use zk_recipes::zk::{EventType, Path, Request, WatchedEvent};

impl<R: SimRecipe> Shared<R> {
    /// The fault that strikes the client's `number`-th request: drawn from
    /// the seed, or read from the choice tape of an explored run.
    pub(super) fn request_fault(
        &mut self,
        client: usize,
        number: u64,
        request: &Request,
    ) -> Option<Fault> {
        use crate::world::choice_tape::FaultChoice;
        let Some(tape) = self.chooser.as_mut() else {
            let word = self.rng.faults.drawn();
            let fault = self
                .request_faults
                .for_request(client, number, &mut self.rng.faults);
            self.note_fault_site(word, request);
            return fault;
        };
        match tape.fault() {
            FaultChoice::None => None,
            FaultChoice::LoseBeforeApply => Some(Fault::LoseRequest { down_ms: 0 }),
            FaultChoice::LoseAfterApply => Some(Fault::LoseReply { down_ms: 0 }),
            FaultChoice::Expire => Some(Fault::Expire),
        }
    }

    /// A recorded run that keeps coverage notes where its request faults
    /// were drawn (`word`: the `faults` stream's index before the draw;
    /// an explicit fault or no rates draw nothing and leave no site).
    fn note_fault_site(&mut self, word: Option<usize>, request: &Request) {
        let (Some(word), Some(coverage)) = (word, self.coverage.as_mut()) else {
            return;
        };
        if self.rng.faults.drawn() > Some(word) {
            coverage
                .fault_sites
                .push(crate::world::coverage::FaultSite {
                    word,
                    kind: crate::abstraction::hash_of(&std::mem::discriminant(request)),
                });
        }
    }

    /// Explored runs: the session expires instead of the request applying.
    pub(super) fn expire_instead(&mut self, client: usize, number: u64, request: &Request) {
        self.record_request_fault(client, number, Fault::Expire);
        trace!(
            self,
            Some(client),
            Fault,
            "session expires before request #{number} applies: {request:?}"
        );
        let now = self.now_ns();
        self.history.lost_before_apply(client, now, request);
        self.expire(client);
    }

    pub(super) fn record_request_fault(&mut self, client: usize, number: u64, fault: Fault) {
        self.stats.faults += 1;
        self.fault_history.push(ScheduledFault {
            trigger: Trigger::Request(number),
            client,
            fault,
        });
    }

    pub(super) fn strike(&mut self, scheduled: ScheduledFault) {
        if !self.faults_active() {
            return;
        }
        let client = scheduled.client;
        if client >= self.clients.len() {
            return;
        }
        if !scheduled.fault.is_per_request() {
            self.stats.faults += 1;
            self.fault_history.push(scheduled.clone());
            let who = (!scheduled.fault.is_ensemble()).then_some(client);
            trace!(self, who, Fault, "{}", scheduled.fault);
        }
        match scheduled.fault {
            Fault::Disconnect { down_ms } => {
                if self.clients[client].link.session.is_some() {
                    self.drop_connection(client, down_ms);
                }
            }
            Fault::Silent { down_ms } => self.go_silent(client, down_ms),
            fault @ (Fault::LoseReply { .. } | Fault::LoseRequest { .. }) => {
                self.clients[client].armed_fault = Some(fault);
            }
            Fault::Expire => self.expire(client),
            Fault::Pause { pause_ms } => self.pause(client, pause_ms),
            Fault::SpuriousWatch => self.spurious_watch(client),
            Fault::DelayWatches {
                delay_ms,
                window_ms,
            } => {
                let now = self.now_ns();
                self.clients[client].link.watch_delay =
                    Some((ms_to_ns(delay_ms), now.saturating_add(ms_to_ns(window_ms))));
            }
            Fault::Reap => self.reap(),
            ref fault @ (Fault::LagSpike { .. }
            | Fault::ServerCrash { .. }
            | Fault::Partition { .. }
            | Fault::Freeze { .. }
            | Fault::LeaderChange { .. }) => self.strike_server(fault),
        }
    }

    fn expire(&mut self, client: usize) {
        let Some(session) = self.clients[client].link.session else {
            return;
        };
        let now_ms = self.now_ms() as i64;
        self.ensemble.set_time_ms(now_ms);
        let order = DeletionOrder::Shuffled(self.rng.ephemeral_order.gen());
        let mut child_order = ShuffledOrder(&mut self.rng.child_order);
        if let Ok(events) = self
            .ensemble
            .close_session(session, order, &mut child_order)
        {
            if self.ensemble.is_closing(session) {
                self.expiry_waits_for_leader(client, session);
                return;
            }
            let now = self.now_ns();
            self.history.session_ended(client, now, session, true);
            if self.ensemble.servers() == 1 {
                self.close_connection(client);
            }
            self.dispatch(closes_first(events));
            self.observe(client, Seen::SessionEnded);
            self.schedule_applies();
        }
    }

    fn pause(&mut self, client: usize, pause_ms: u64) {
        let slot = &mut self.clients[client];
        if slot.paused {
            return;
        }
        slot.paused = true;
        if let Some(node) = slot.node {
            self.handle.pause(node);
        }
        let now = self.now_ns();
        self.history.paused(client, now, pause_ms);
        // A pause too long to end before the end of time lasts until the
        // heal resumes the client.
        let until = self.now_ns().saturating_add(ms_to_ns(pause_ms));
        self.schedule(until, Event::Resume { client });
    }

    pub(super) fn resume(&mut self, client: usize) {
        let slot = &mut self.clients[client];
        if !slot.paused {
            return;
        }
        slot.paused = false;
        if let Some(node) = slot.node {
            self.handle.resume(node);
        }
        trace!(self, Some(client), Fault, "resumed");
    }

    /// Fires one of the client's armed watches although nothing changed.
    fn spurious_watch(&mut self, client: usize) {
        let watches = &self.clients[client].session.watches;
        let mut candidates: Vec<(EventType, Path)> = Vec::new();
        candidates.extend(
            watches
                .data
                .keys()
                .chain(watches.exist.keys())
                .map(|p| (EventType::NodeDataChanged, p.clone())),
        );
        candidates.extend(
            watches
                .child
                .keys()
                .map(|p| (EventType::NodeChildrenChanged, p.clone())),
        );
        if candidates.is_empty() {
            return;
        }
        let (event_type, path) =
            candidates.swap_remove(self.rng.choices.gen_range(0..candidates.len()));
        self.hand_to(
            client,
            Inbound::Spurious(WatchedEvent::node(event_type, path)),
        );
    }
}
