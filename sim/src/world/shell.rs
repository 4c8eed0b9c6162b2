//! The server's async shell and the network: the scheduler task that pops
//! the world's events in time order and applies them — requests reach the
//! pure server core, replies and notifications travel back with latency,
//! the server's own clock expires sessions and reaps containers, scheduled
//! faults strike, and the run's phases change.

use super::events::{Event, Inbound, ToClient, ToServer};
use super::shared::{closes_first, enter, ms_to_ns, trace, Awaited, Phase, Shared, SimRecipe};
use crate::ensemble::{ConnectError, DeletionOrder, EnsembleEvent};
use crate::faults::{Fault, ScheduledFault, Trigger};
use crate::oracles::{fmt_time, liveness_violation, stuck_line, Property, Seen};
use crate::server::{Applied, Notification, ShuffledOrder};
use rand::seq::SliceRandom;
use rand::Rng;
use std::sync::{Arc, Mutex};
use std::task::Poll;
use zk_recipes::zk::{EventType, Path, Reply, Request, SessionId, WatchedEvent};

/// The server node's task: runs until the run is done.
pub async fn scheduler_task<R: SimRecipe>(shared: Arc<Mutex<Shared<R>>>) {
    std::future::poll_fn(|cx| {
        let mut world = enter(&shared);
        if !world
            .scheduler
            .waker
            .as_ref()
            .is_some_and(|w| w.will_wake(cx.waker()))
        {
            world.scheduler.waker = Some(cx.waker().clone());
        }
        world.stats.scheduler_polls += 1;
        let now = world.now_ns();
        world.scheduler.fired(now);
        while let Some(event) = world.queue.pop_due(now) {
            world.handle_event(event);
            if world.phase == Phase::Done {
                return Poll::Ready(());
            }
        }
        if let Some(next) = world.queue.next_due() {
            world.arm(next);
        }
        world.poke_supervisor();
        Poll::Pending
    })
    .await
}

impl<R: SimRecipe> Shared<R> {
    pub fn handle_event(&mut self, event: Event) {
        self.stats.events += 1;
        match event {
            Event::ToServer { client, epoch, msg } => self.arrive(client, epoch, msg),
            Event::ToClient { client, epoch, msg } => self.reach_client(client, epoch, msg),
            Event::Local { client, timer } => self.hand_to(client, Inbound::Timer(timer)),
            Event::Fault(fault) => self.strike(fault),
            Event::Resume { client } => self.resume(client),
            Event::ExpiryTick => self.expiry_tick(),
            Event::ReaperTick => self.reaper_tick(),
            Event::Apply { server, round } => self.follower_applies(server, round),
            Event::ServerUp { server, outage } => self.server_up(server, outage),
            Event::PartitionNoticed { server, outage } => self.partition_noticed(server, outage),
            Event::LagDrop { server, round } => self.lag_drop(server, round),
            Event::Elect => self.try_elect(),
            Event::ServerPick => self.server_pick(),
            Event::Heal => self.heal(),
            Event::Deadline => self.deadline(),
        }
        self.observe_coverage();
    }

    // ---- the server ----

    fn arrive(&mut self, client: usize, epoch: u32, msg: ToServer) {
        if epoch != self.clients[client].link.epoch {
            trace!(
                self,
                Some(client),
                Send,
                "lost with its connection: {msg:?}"
            );
            if let ToServer::Request(request) = &msg {
                let now = self.now_ns();
                self.history.lost_before_apply(client, now, request);
            }
            return;
        }
        if let Some(thaw) = self.frozen_server_of(client, &msg) {
            // A frozen server reads nothing: the bytes wait in its socket.
            let at = thaw.max(self.now_ns().saturating_add(1));
            self.schedule(at, Event::ToServer { client, epoch, msg });
            return;
        }
        let now_ms = self.now_ms() as i64;
        self.ensemble.set_time_ms(now_ms);
        match msg {
            ToServer::Open { session } => self.open(client, session),
            ToServer::Reconnect {
                session,
                last_zxid,
                watches,
            } => self.reconnect(client, session, last_zxid, &watches),
            ToServer::Ping => {
                if let (true, Some(session)) = (
                    self.clients[client].link.server_up,
                    self.clients[client].link.session,
                ) {
                    self.ensemble.heard_from(session);
                }
            }
            ToServer::Request(request) => {
                if self.clients[client].link.server_up && self.chooser.is_some() {
                    self.hold_request(client, request);
                } else if self.clients[client].link.server_up {
                    self.apply_request(client, request);
                } else {
                    trace!(
                        self,
                        Some(client),
                        Send,
                        "lost, connection closed: {request:?}"
                    );
                    let now = self.now_ns();
                    self.history.lost_before_apply(client, now, &request);
                }
            }
        }
    }

    /// The server a connection attempt lands on: the only one, or the next
    /// of the client's host list, which both client libraries go round in
    /// an order they shuffle once (Java's StaticHostProvider, the crate's
    /// `IterableEndpoints::reset`): drawn from the seed at the client's
    /// first attempt, or in an explored run chosen by the tape.
    fn pick_server(&mut self, client: usize) -> usize {
        let servers = self.ensemble.servers();
        if servers == 1 {
            return 0;
        }
        if self.host_lists[client].order.is_empty() {
            let (order, choice) = match self.chooser.as_mut() {
                Some(tape) => (host_order(servers, tape.server(2 * servers)), "choice: "),
                None => {
                    let mut order: Vec<usize> = (0..servers).collect();
                    order.shuffle(&mut self.rng.placement);
                    (order, "")
                }
            };
            self.host_lists[client].order = order;
            let listed: Vec<String> = self.host_lists[client]
                .order
                .iter()
                .map(usize::to_string)
                .collect();
            trace!(
                self,
                Some(client),
                Send,
                "{choice}the client's host list goes round servers {}",
                listed.join(", ")
            );
        }
        let hosts = &mut self.host_lists[client];
        let server = hosts.order[hosts.next % servers];
        hosts.next = (hosts.next + 1) % servers;
        trace!(
            self,
            Some(client),
            Send,
            "the attempt goes to server {server}, the next of its host list"
        );
        server
    }

    /// When the server of the client's connection thaws, if it is frozen
    /// (a connection attempt picks its server on arrival).
    fn frozen_server_of(&self, client: usize, msg: &ToServer) -> Option<u64> {
        let link = &self.clients[client].link;
        let attempt = matches!(msg, ToServer::Open { .. } | ToServer::Reconnect { .. });
        match attempt || !link.server_up {
            true => None,
            false => self.servers.frozen_until(link.server),
        }
    }

    /// A connection attempt reached a frozen server: no answer, the client
    /// gives it up at its connect timeout. True if it did.
    fn hangs_at_frozen(&mut self, client: usize, server: usize, opening: bool) -> bool {
        if self.servers.frozen_until(server).is_none() {
            return false;
        }
        trace!(
            self,
            Some(client),
            Session,
            "connection attempt hangs: server {server} is frozen"
        );
        self.time_out_attempt(client, opening);
        true
    }

    fn open(&mut self, client: usize, session: SessionId) {
        let timeout = self.config.session_timeout_ms;
        let server = self.pick_server(client);
        if self.hangs_at_frozen(client, server, true) {
            return;
        }
        let mut order = ShuffledOrder(&mut self.rng.child_order);
        match self
            .ensemble
            .open_session(server, session, timeout, &mut order)
        {
            Ok(events) => {
                let link = &mut self.clients[client].link;
                link.session = Some(session);
                link.server = server;
                self.owners.insert(session, client);
                self.dispatch(events);
                self.schedule_applies();
            }
            Err(ConnectError::Session(_)) => self.send_to_client(client, ToClient::Expired),
            Err(refused) => self.refuse(client, &refused),
        }
    }

    fn reconnect(
        &mut self,
        client: usize,
        session: SessionId,
        last_zxid: zk_recipes::zk::Zxid,
        watches: &crate::server::WatchSet,
    ) {
        let server = self.pick_server(client);
        if self.hangs_at_frozen(client, server, false) {
            return;
        }
        self.reconnect_at(client, server, session, last_zxid, watches);
    }

    /// The client's reconnection reaches `server`: accepted, refused, or
    /// (a server that reaches no leader to revalidate the session) hung
    /// until the server notices or reaches a leader (`world::servers`).
    pub(super) fn reconnect_at(
        &mut self,
        client: usize,
        server: usize,
        session: SessionId,
        last_zxid: zk_recipes::zk::Zxid,
        watches: &crate::server::WatchSet,
    ) {
        let connected = match self.config.revalidate_moves {
            true => self
                .ensemble
                .connect_revalidated(server, session, last_zxid),
            false => self.ensemble.connect(server, session, last_zxid),
        };
        match connected {
            Ok(()) => {
                let link = &mut self.clients[client].link;
                link.server_up = true;
                link.server = server;
                self.send_to_client(client, ToClient::Connected);
                // A 3.8 server reads setWatches only after the revalidation,
                // against what it has applied by then: the ensemble queues
                // them behind it (what fires comes with the apply that lets
                // the revalidation through), or reads them now on a server
                // that is not behind.
                let notifications = self.ensemble.set_watches(session, last_zxid, watches);
                self.route(notifications);
            }
            Err(ConnectError::Session(_)) => self.send_to_client(client, ToClient::Expired),
            Err(ConnectError::CutOff(server)) => {
                self.hang_connect(client, server, session, last_zxid, watches)
            }
            Err(refused) => self.refuse(client, &refused),
        }
    }

    /// The server turns a connection attempt away (it is behind the
    /// client, or not serving): the client sees the connection close and
    /// tries again later.
    pub(super) fn refuse(&mut self, client: usize, why: &ConnectError) {
        trace!(self, Some(client), Session, "connection refused: {why}");
        self.send_to_client(client, ToClient::Closed);
    }

    fn apply_request(&mut self, client: usize, request: Request) {
        let active = self.faults_active();
        let slot = &mut self.clients[client];
        slot.requests_received += 1;
        let number = slot.requests_received;
        let session = slot
            .link
            .session
            .expect("a connection that is up has a session");
        let armed = slot.armed_fault.take();
        let fault = match armed {
            Some(fault) if active => Some(fault),
            _ if active => self.request_fault(client, number),
            _ => None,
        };
        if self.chooser.is_some() && fault == Some(Fault::Expire) {
            self.expire_instead(client, number, &request);
            return;
        }
        if let Some(fault @ Fault::LoseRequest { down_ms }) = &fault {
            self.record_request_fault(client, number, fault.clone());
            trace!(
                self,
                Some(client),
                Fault,
                "request #{number} lost before apply: {request:?}"
            );
            let now = self.now_ns();
            self.history.lost_before_apply(client, now, &request);
            self.drop_connection(client, *down_ms);
            return;
        }
        let lose_reply_down_ms = match fault {
            Some(fault @ Fault::LoseReply { down_ms }) => {
                self.record_request_fault(client, number, fault);
                Some(down_ms)
            }
            _ => None,
        };
        self.clients[client].awaiting.push_back(Awaited {
            number,
            request: request.clone(),
            lose_reply_down_ms,
            committed: false,
        });
        self.stats.requests += 1;
        let mut order = ShuffledOrder(&mut self.rng.child_order);
        let events = self.ensemble.submit(session, request, &mut order);
        self.dispatch(events);
        self.schedule_applies();
        if self.ensemble.has_waiting_write(session) {
            self.pings_wait_behind_a_write(client);
        }
    }

    /// The client's write waits at a server that reaches no leader: its
    /// pings queue behind it (a 3.8 server answers a session in order), so
    /// it hears nothing from now on and gives the connection up at its
    /// read timeout, counted from the last it heard (its last ping's
    /// answer), unless the write commits first.
    fn pings_wait_behind_a_write(&mut self, client: usize) {
        let link = &mut self.clients[client].link;
        link.last_heard_ns = link.last_heard_ns.max(link.last_recv_ns);
        self.schedule_timeout_check(client);
    }

    /// The fault that strikes the client's `number`-th request: drawn from
    /// the seed, or read from the choice tape of an explored run.
    fn request_fault(&mut self, client: usize, number: u64) -> Option<Fault> {
        use crate::explore::FaultChoice;
        let Some(tape) = self.chooser.as_mut() else {
            return self
                .request_faults
                .for_request(client, number, &mut self.rng.faults);
        };
        match tape.fault() {
            FaultChoice::None => None,
            FaultChoice::LoseBeforeApply => Some(Fault::LoseRequest { down_ms: 0 }),
            FaultChoice::LoseAfterApply => Some(Fault::LoseReply { down_ms: 0 }),
            FaultChoice::Expire => Some(Fault::Expire),
        }
    }

    /// Explored runs: the session expires instead of the request applying.
    fn expire_instead(&mut self, client: usize, number: u64, request: &Request) {
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

    /// Explored runs: a request that reached the server waits for the
    /// server to pick it (a `ServerPick` a window later, so every client
    /// that has something to send by then competes).
    fn hold_request(&mut self, client: usize, request: Request) {
        self.arrivals += 1;
        let arrival = self.arrivals;
        self.clients[client].held.push_back((arrival, request));
        self.schedule_pick();
    }

    fn schedule_pick(&mut self) {
        if self.pick_scheduled {
            return;
        }
        self.pick_scheduled = true;
        let at = self.now_ns().saturating_add(PICK_WINDOW_NS);
        self.schedule(at, Event::ServerPick);
    }

    /// Explored runs: the server applies the oldest waiting request of the
    /// client the tape picks among those with one waiting (in order of
    /// arrival; 0, the default, is the one that came first). A state the
    /// search has seen before ends the run here (pruned).
    fn server_pick(&mut self) {
        self.pick_scheduled = false;
        let mut waiting: Vec<(u64, usize)> = (0..self.clients.len())
            .filter_map(|client| Some((self.clients[client].held.front()?.0, client)))
            .collect();
        if waiting.is_empty() {
            return;
        }
        waiting.sort_unstable();
        let seen = self.chooser.as_ref().is_some_and(|tape| tape.wants_key()) && {
            let key = self.state_key();
            self.chooser.as_mut().is_some_and(|tape| tape.visit(key))
        };
        if seen {
            trace!(self, None, Phase, "pruned: a state the search has seen");
            self.finish_run();
            return;
        }
        let taken = match self.chooser.as_mut() {
            Some(tape) => tape.order(waiting.len()),
            None => 0,
        };
        let client = waiting[taken].1;
        if waiting.len() > 1 {
            let names: Vec<String> = waiting.iter().map(|(_, c)| format!("c{c}")).collect();
            trace!(
                self,
                Some(client),
                Apply,
                "choice: the server applies c{client}'s request next (waiting: {})",
                names.join(", ")
            );
        }
        let (_, request) = self.clients[client]
            .held
            .pop_front()
            .expect("a client with a waiting request");
        self.apply_request(client, request);
        if self.clients.iter().any(|slot| !slot.held.is_empty()) {
            self.schedule_pick();
        }
    }

    /// Explored runs: the requests waiting at the server go with the
    /// client's connection.
    fn lose_held(&mut self, client: usize) {
        let held = std::mem::take(&mut self.clients[client].held);
        for (_, request) in held {
            trace!(
                self,
                Some(client),
                Send,
                "lost with its connection: {request:?}"
            );
            let now = self.now_ns();
            self.history.lost_before_apply(client, now, &request);
        }
    }

    /// Hands what the servers did to the clients: watch notifications,
    /// replies (or their loss, by fault), sessions closed under them.
    pub(super) fn dispatch(&mut self, events: Vec<EnsembleEvent>) {
        for event in events {
            match event {
                EnsembleEvent::Notify(notification) => self.route(vec![notification]),
                EnsembleEvent::Committed {
                    session, applied, ..
                } => self.committed(session, applied),
                EnsembleEvent::Reply { session, applied } => self.reply(session, applied),
                EnsembleEvent::Opened { session } => self.opened(session),
                EnsembleEvent::Closed { session } => self.closed_under(session),
            }
        }
    }

    fn opened(&mut self, session: SessionId) {
        let Some(&client) = self.owners.get(&session) else {
            return;
        };
        if self.clients[client].link.session == Some(session) {
            self.clients[client].link.server_up = true;
            self.send_to_client(client, ToClient::Connected);
        }
    }

    /// The leader committed the client's oldest write not committed yet:
    /// the trace and the history show it now, whatever becomes of its
    /// reply (a connection lost before the client's server applies it
    /// loses the reply, not the write).
    fn committed(&mut self, session: SessionId, applied: Applied) {
        let Some(&client) = self.owners.get(&session) else {
            return;
        };
        let Some(awaited) = self.clients[client]
            .awaiting
            .iter_mut()
            .find(|a| !a.committed && a.request.is_write())
        else {
            return;
        };
        awaited.committed = true;
        let awaited = awaited.clone();
        let at = match self.ensemble.servers() {
            1 => String::new(),
            _ => format!(", committed by leader {}", self.ensemble.leader()),
        };
        let now = self.now_ns();
        self.history
            .applied(client, now, session, &awaited.request, &applied.result);
        self.trace_apply(client, &awaited, &applied, &at);
    }

    /// The trace line of a request applied (`at`: where, on an ensemble).
    fn trace_apply(&mut self, client: usize, awaited: &Awaited, applied: &Applied, at: &str) {
        trace!(
            self,
            Some(client),
            Apply,
            "#{} {:?} -> {:?} (zxid {}{at})",
            awaited.number,
            awaited.request,
            applied.result,
            applied.zxid
        );
    }

    /// The reply to the client's oldest request the server took.
    fn reply(&mut self, session: SessionId, applied: Applied) {
        let Some(&client) = self.owners.get(&session) else {
            return;
        };
        let Some(awaited) = self.clients[client].awaiting.pop_front() else {
            return;
        };
        if let Ok(
            Reply::Children(names)
            | Reply::Children2 {
                children: names, ..
            },
        ) = &applied.result
        {
            self.stats.children_returned += names.len() as u64;
        }
        let now = self.now_ns();
        let number = awaited.number;
        let at = match self.ensemble.servers() {
            1 => String::new(),
            _ => format!(", server {}", self.clients[client].link.server),
        };
        if !awaited.committed {
            self.history
                .applied(client, now, session, &awaited.request, &applied.result);
        }
        // A committed write was traced at its commit; on an ensemble its
        // session's server answering it is a line of its own.
        if !awaited.committed || !at.is_empty() {
            self.trace_apply(client, &awaited, &applied, &at);
        }
        if let Some(down_ms) = awaited.lose_reply_down_ms {
            trace!(
                self,
                Some(client),
                Fault,
                "reply to request #{number} lost after apply"
            );
            self.history.reply_lost(client, now);
            self.drop_connection(client, down_ms);
            return;
        }
        self.send_to_client(
            client,
            ToClient::Reply {
                result: applied.result,
                zxid: applied.zxid,
            },
        );
    }

    /// The session's server applied the session's close: it closes the
    /// connection (the client learns its session expired).
    fn closed_under(&mut self, session: SessionId) {
        let Some(&client) = self.owners.get(&session) else {
            return;
        };
        if self.clients[client].link.session == Some(session) {
            self.close_connection(client);
        }
    }

    /// Schedules one apply per transaction each follower has not applied
    /// nor been scheduled to, each a drawn lag after now and after its
    /// previous one (a follower applies in log order).
    /// A follower cut off from the leader applies nothing (none is
    /// scheduled); one under a lag spike applies later.
    pub(super) fn schedule_applies(&mut self) {
        if self.ensemble.servers() == 1 {
            return;
        }
        let now = self.now_ns();
        for server in 0..self.ensemble.servers() {
            if !self.ensemble.is_in_quorum(server) {
                continue;
            }
            let spike_ns = self.servers.lag_spike_ns(server, now);
            while self.applies_scheduled[server] < self.ensemble.lag(server) {
                let lag_ns = ms_to_ns(self.apply_lag_ms(server)).saturating_add(spike_ns);
                let at = now.saturating_add(lag_ns).max(self.last_apply_ns[server]);
                self.last_apply_ns[server] = at;
                self.applies_scheduled[server] += 1;
                let round = self.servers.apply_rounds[server];
                self.schedule(at, Event::Apply { server, round });
            }
        }
    }

    /// How long after a commit `server` applies it: drawn per commit from
    /// the seed; in an explored run, one of the range's points the tape
    /// chose for the server, the same for the whole run.
    fn apply_lag_ms(&mut self, server: usize) -> u64 {
        let range = self.config.apply_lag_ms;
        let Some(tape) = self.chooser.as_mut() else {
            return range.draw(&mut self.rng.lag);
        };
        if let Some(lag_ms) = self.explored_lags_ms[server] {
            return lag_ms;
        }
        let lag_ms = tape.duration_ms(range.min, range.max.max(range.min));
        self.explored_lags_ms[server] = Some(lag_ms);
        if range.min < range.max {
            trace!(
                self,
                None,
                Phase,
                "choice: server {server} applies each commit {lag_ms} ms after it, this run"
            );
        }
        lag_ms
    }

    fn follower_applies(&mut self, server: usize, round: u64) {
        if round != self.servers.apply_rounds[server] {
            return;
        }
        self.applies_scheduled[server] = self.applies_scheduled[server].saturating_sub(1);
        let now_ms = self.now_ms() as i64;
        self.ensemble.set_time_ms(now_ms);
        let mut order = ShuffledOrder(&mut self.rng.child_order);
        let events = self.ensemble.apply_next(server, &mut order);
        self.dispatch(events);
        self.schedule_applies();
    }

    fn record_request_fault(&mut self, client: usize, number: u64, fault: Fault) {
        self.stats.faults += 1;
        self.fault_history.push(ScheduledFault {
            trigger: Trigger::Request(number),
            client,
            fault,
        });
    }

    /// Sends notifications to the sessions whose connection is up.
    pub fn route(&mut self, notifications: Vec<Notification>) {
        for notification in notifications {
            let Some(&client) = self.owners.get(&notification.session) else {
                continue;
            };
            let link = &self.clients[client].link;
            if link.server_up && link.session == Some(notification.session) {
                self.send_to_client(client, ToClient::Watch(notification.event));
            }
        }
    }

    fn reach_client(&mut self, client: usize, epoch: u32, msg: ToClient) {
        if epoch != self.clients[client].link.epoch {
            trace!(
                self,
                Some(client),
                Deliver,
                "lost with its connection: {msg:?}"
            );
            if matches!(msg, ToClient::Reply { .. }) {
                let now = self.now_ns();
                self.history.reply_lost(client, now);
            }
            return;
        }
        self.hand_to(client, Inbound::Net(msg));
    }

    /// The connection drops: what is in flight is lost, the server forgets
    /// the connection's watches, the client notices at once.
    pub(super) fn drop_connection(&mut self, client: usize, down_ms: u64) {
        let now = self.now_ns();
        let link = &mut self.clients[client].link;
        link.epoch += 1;
        link.server_up = false;
        link.down_until_ns = link
            .down_until_ns
            .max(now.saturating_add(ms_to_ns(down_ms)));
        if let Some(session) = link.session {
            self.ensemble.disconnect(session);
        }
        self.lose_held(client);
        self.lose_committed_replies(client);
        self.hand_to(client, Inbound::Dropped);
    }

    /// The connection dropped before the client's server applied writes
    /// the leader committed: their replies are lost, not the writes.
    fn lose_committed_replies(&mut self, client: usize) {
        let awaiting = std::mem::take(&mut self.clients[client].awaiting);
        for awaited in awaiting.iter().filter(|a| a.committed) {
            trace!(
                self,
                Some(client),
                Deliver,
                "reply to request #{} lost with its connection (the write was committed)",
                awaited.number
            );
            let now = self.now_ns();
            self.history.reply_lost(client, now);
        }
    }

    /// The server closes the connection of a session it expired; the client
    /// sees the close one latency later.
    fn close_connection(&mut self, client: usize) {
        let link = &mut self.clients[client].link;
        if !link.server_up {
            return;
        }
        link.epoch += 1;
        link.server_up = false;
        self.clients[client].awaiting.clear();
        self.lose_held(client);
        self.send_to_client(client, ToClient::Closed);
    }

    fn expiry_tick(&mut self) {
        let now_ms = self.now_ms() as i64;
        self.ensemble.set_time_ms(now_ms);
        let order = DeletionOrder::Shuffled(self.rng.ephemeral_order.gen());
        let mut child_order = ShuffledOrder(&mut self.rng.child_order);
        let (expired, events) = self.ensemble.expire_due(order, &mut child_order);
        for session in &expired {
            if let Some(&client) = self.owners.get(session) {
                trace!(
                    self,
                    Some(client),
                    Session,
                    "server expired session {:#x}",
                    session.0
                );
                let current = self.clients[client].link.session == Some(*session);
                let now = self.now_ns();
                self.history.session_ended(client, now, *session, current);
                if current {
                    self.observe(client, Seen::SessionEnded);
                }
            }
        }
        self.dispatch(closes_first(events));
        self.schedule_applies();
        let next = self
            .now_ns()
            .saturating_add(ms_to_ns(self.config.tick_time_ms));
        self.schedule(next, Event::ExpiryTick);
    }

    fn reaper_tick(&mut self) {
        self.reap();
        let next = self
            .now_ns()
            .saturating_add(ms_to_ns(self.config.reaper_interval_ms));
        self.schedule(next, Event::ReaperTick);
    }

    pub fn reap(&mut self) {
        let now_ms = self.now_ms() as i64;
        self.ensemble.set_time_ms(now_ms);
        let events = self
            .ensemble
            .reap(&mut ShuffledOrder(&mut self.rng.child_order));
        let now = self.now_ns();
        let server = self.ensemble.committed();
        self.history
            .reaped(now, |path| server.node_kind(path).is_some());
        self.dispatch(events);
        self.schedule_applies();
    }

    // ---- faults ----

    fn strike(&mut self, scheduled: ScheduledFault) {
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

    fn resume(&mut self, client: usize) {
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

    // ---- phases ----

    /// No more faults: resume paused clients, let partitioned ones
    /// reconnect (an attempt the network had put off is brought forward),
    /// and start the liveness clock.
    pub fn heal(&mut self) {
        if self.phase != Phase::Faults {
            return;
        }
        let now = self.now_ns();
        let deadline_ns = now.saturating_add(ms_to_ns(self.config.heal_ms));
        self.phase = Phase::Healing { deadline_ns };
        trace!(
            self,
            None,
            Phase,
            "faults heal; liveness deadline {}",
            fmt_time(deadline_ns)
        );
        for client in 0..self.clients.len() {
            let slot = &mut self.clients[client];
            slot.link.down_until_ns = slot.link.down_until_ns.min(now);
            slot.link.watch_delay = None;
            slot.armed_fault = None;
            self.resume(client);
            self.retry_soon(client);
        }
        self.heal_servers();
        self.schedule(deadline_ns, Event::Deadline);
    }

    /// The liveness bound has passed: every workload should be done (the
    /// end checks then run whether the world has settled or not; what has
    /// not is in the trace).
    fn deadline(&mut self) {
        if self.phase == Phase::Done {
            return;
        }
        if self.trace.enabled {
            let unsettled = self.unsettled();
            if !unsettled.is_empty() {
                trace!(
                    self,
                    None,
                    Phase,
                    "not settled at the liveness deadline: {}",
                    unsettled.join("; ")
                );
            }
        }
        let stuck: Vec<String> = self
            .clients
            .iter()
            .enumerate()
            .filter(|(_, slot)| !slot.workload_done)
            .map(|(client, slot)| {
                let last_call = slot.last_call.as_ref();
                stuck_line(
                    client,
                    last_call.map(|(at, call)| (*at, format!("{call:?}"))),
                )
            })
            .collect();
        let checked = self
            .oracles
            .config()
            .properties
            .contains(&Property::Liveness);
        let at_ns = self.now_ns();
        if let Some(violation) = liveness_violation(at_ns, self.config.heal_ms, stuck) {
            if checked {
                self.report_violation(violation);
            }
        }
        self.finish_run();
    }
}

/// Explored runs: how long the server lets requests gather before it picks
/// one (far above the fixed latency of an explored world, so a client
/// that answers a reply at once competes at the next pick).
const PICK_WINDOW_NS: u64 = 10_000_000;

/// The `choice`-th of an ensemble's host orders an explored client may
/// have (`2 × servers` of them: each server first, then round the ring
/// upwards or downwards; for 3 servers every order there is).
fn host_order(servers: usize, choice: usize) -> Vec<usize> {
    let (first, downwards) = (choice / 2, choice % 2 == 1);
    (0..servers)
        .map(|i| match downwards {
            false => (first + i) % servers,
            true => (first + servers - i) % servers,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::host_order;
    use std::collections::BTreeSet;

    #[test]
    fn the_host_orders_of_three_servers_are_every_order_there_is() {
        let orders: BTreeSet<Vec<usize>> = (0..6).map(|choice| host_order(3, choice)).collect();
        assert_eq!(orders.len(), 6);
        assert_eq!(host_order(3, 0), vec![0, 1, 2], "the default");
        assert_eq!(host_order(3, 3), vec![1, 0, 2], "server 1 first, downwards");
        let five: BTreeSet<Vec<usize>> = (0..10).map(|choice| host_order(5, choice)).collect();
        assert_eq!(five.len(), 10, "five servers: each first, either way round");
    }
}
