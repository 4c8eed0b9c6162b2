//! The server's async shell and the network: the scheduler task that pops
//! the world's events in time order and applies them — requests reach the
//! pure server core, replies and notifications travel back with latency,
//! the server's own clock expires sessions and reaps containers, scheduled
//! faults strike, and the run's phases change.

use super::events::{Event, Inbound, ToClient, ToServer};
use super::shared::{enter, ms_to_ns, trace, Phase, Shared, SimRecipe};
use crate::faults::{Fault, ScheduledFault, Trigger};
use crate::oracles::{fmt_time, Property, Seen, Violation};
use crate::server::{Notification, ShuffledOrder};
use rand::Rng;
use std::sync::{Arc, Mutex};
use std::task::Poll;
use zk_recipes::zk::{EventType, Path, Request, SessionId, WatchedEvent};

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
            Event::Heal => self.heal(),
            Event::Deadline => self.deadline(),
        }
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
        let now_ms = self.now_ms() as i64;
        self.server.set_time_ms(now_ms);
        match msg {
            ToServer::Open { session } => self.open(client, session),
            ToServer::Reconnect {
                session,
                last_zxid,
                watches,
            } => {
                if self.server.is_session_alive(session) {
                    self.clients[client].link.server_up = true;
                    self.server.touch_session(session);
                    self.send_to_client(client, ToClient::Connected);
                    let notifications = self.server.set_watches(session, last_zxid, &watches);
                    self.route(notifications);
                } else {
                    self.send_to_client(client, ToClient::Expired);
                }
            }
            ToServer::Ping => {
                if let (true, Some(session)) = (
                    self.clients[client].link.server_up,
                    self.clients[client].link.session,
                ) {
                    self.server.touch_session(session);
                }
            }
            ToServer::Request(request) => {
                if self.clients[client].link.server_up {
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

    fn open(&mut self, client: usize, session: SessionId) {
        let timeout = self.config.session_timeout_ms;
        if self.server.open_session(session, timeout).is_ok() {
            let link = &mut self.clients[client].link;
            link.server_up = true;
            link.session = Some(session);
            self.owners.insert(session, client);
            self.send_to_client(client, ToClient::Connected);
        } else {
            self.send_to_client(client, ToClient::Expired);
        }
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
            _ if active => self
                .request_faults
                .for_request(client, number, &mut self.rng.faults),
            _ => None,
        };
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
        let mut order = ShuffledOrder(&mut self.rng.child_order);
        let applied = self.server.apply(session, &request, &mut order);
        self.stats.requests += 1;
        let now = self.now_ns();
        self.history
            .applied(client, now, session, &request, &applied.result);
        trace!(
            self,
            Some(client),
            Apply,
            "#{number} {request:?} -> {:?} (zxid {})",
            applied.result,
            applied.zxid
        );
        self.route(applied.notifications);
        if let Some(fault @ Fault::LoseReply { down_ms }) = &fault {
            self.record_request_fault(client, number, fault.clone());
            trace!(
                self,
                Some(client),
                Fault,
                "reply to request #{number} lost after apply"
            );
            self.history.reply_lost(client, now);
            self.drop_connection(client, *down_ms);
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
    fn drop_connection(&mut self, client: usize, down_ms: u64) {
        let now = self.now_ns();
        let link = &mut self.clients[client].link;
        link.epoch += 1;
        link.server_up = false;
        link.down_until_ns = link
            .down_until_ns
            .max(now.saturating_add(ms_to_ns(down_ms)));
        if let Some(session) = link.session {
            self.server.disconnect(session);
        }
        self.hand_to(client, Inbound::Dropped);
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
        self.send_to_client(client, ToClient::Closed);
    }

    fn expiry_tick(&mut self) {
        let now_ms = self.now_ms() as i64;
        self.server.set_time_ms(now_ms);
        let (expired, notifications) = self
            .server
            .expire_due_sessions(&mut ShuffledOrder(&mut self.rng.ephemeral_order));
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
                    self.close_connection(client);
                    self.observe(client, Seen::SessionEnded);
                }
            }
        }
        self.route(notifications);
        let next = self
            .now_ns()
            .saturating_add(ms_to_ns(self.config.expiry_tick_ms));
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
        self.server.set_time_ms(now_ms);
        let notifications = self.server.reap();
        let now = self.now_ns();
        let server = &self.server;
        self.history
            .reaped(now, |path| server.node_kind(path).is_some());
        self.route(notifications);
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
            trace!(self, Some(client), Fault, "{}", scheduled.fault);
        }
        match scheduled.fault {
            Fault::Disconnect { down_ms } => {
                if self.clients[client].link.session.is_some() {
                    self.drop_connection(client, down_ms);
                }
            }
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
        }
    }

    fn expire(&mut self, client: usize) {
        let Some(session) = self.clients[client].link.session else {
            return;
        };
        let now_ms = self.now_ms() as i64;
        self.server.set_time_ms(now_ms);
        if let Ok(notifications) = self
            .server
            .close_session(session, &mut ShuffledOrder(&mut self.rng.ephemeral_order))
        {
            let now = self.now_ns();
            self.history.session_ended(client, now, session, true);
            self.close_connection(client);
            self.route(notifications);
            self.observe(client, Seen::SessionEnded);
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
            .map(|(client, slot)| match &slot.last_call {
                Some((at, call)) => format!(
                    "c{client}: still waiting, last call {call:?} at {}",
                    fmt_time(*at)
                ),
                None => format!("c{client}: never got to call"),
            })
            .collect();
        if !stuck.is_empty()
            && self
                .oracles
                .config()
                .properties
                .contains(&Property::Liveness)
        {
            let at_ns = self.now_ns();
            self.report_violation(Violation {
                property: Property::Liveness,
                at_ns,
                message: format!(
                    "{} workload(s) not done {} ms after the faults healed",
                    stuck.len(),
                    self.config.heal_ms
                ),
                events: stuck,
                diagnosis: None,
            });
        }
        self.finish_run();
    }
}
