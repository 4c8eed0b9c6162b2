//! The server's async shell and the network: the scheduler task that pops
//! the world's events in time order and applies them — requests reach the
//! pure server core, replies and notifications travel back with latency,
//! the server's own clock expires sessions and reaps containers, scheduled
//! faults strike, and the run's phases change.

mod applies;
mod faults;
mod hosts;
mod picks;
mod replies;

use super::events::{Event, Inbound, ToClient, ToServer};
use super::shared::{closes_first, enter, ms_to_ns, trace, Awaited, Phase, Shared, SimRecipe};
use crate::ensemble::{ConnectError, DeletionOrder};
use crate::faults::Fault;
use crate::oracles::{fmt_time, liveness_violation, stuck_line, Property, Seen};
use crate::server::{Notification, ShuffledOrder};
use rand::Rng;
use std::sync::{Arc, Mutex};
use std::task::Poll;
use zk_recipes::zk::{Request, SessionId};

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
            _ if active => self.request_fault(client, number, &request),
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
