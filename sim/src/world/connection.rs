//! A client process's connection task: it hands what reached the process
//! (replies, notifications, connection events, timers) to the session layer
//! and the recipe, and puts what the recipe emitted on the wire. It runs on
//! the client's node, so a paused node processes nothing and sends no pings.

use super::events::{Event, Inbound, LocalTimer, ToClient, ToServer};
use super::shared::{enter, ms_to_ns, trace, Connecting, Phase, Shared, SimRecipe};
use crate::client::ConnectionState;
use crate::oracles::Seen;
use rand::Rng;
use std::sync::{Arc, Mutex};
use std::task::Poll;
use zk_recipes::zk::{SessionId, WatchedEvent};
use zk_recipes::Observe;

/// The client node's connection task: runs until the run is done.
pub async fn connection_task<R: SimRecipe>(shared: Arc<Mutex<Shared<R>>>, client: usize) {
    std::future::poll_fn(|cx| {
        let mut world = enter(&shared);
        if world.phase == Phase::Done {
            return Poll::Ready(());
        }
        world.client_step(client);
        world.clients[client].conn_waker = Some(cx.waker().clone());
        world.poke_supervisor();
        Poll::Pending
    })
    .await
}

impl<R: SimRecipe> Shared<R> {
    /// Processes everything in the client's inbox.
    pub fn client_step(&mut self, client: usize) {
        while let Some(inbound) = self.clients[client].inbox.pop_front() {
            self.clients[client].session.now_ms = self.now_ms();
            self.receive(client, inbound);
            self.pump(client);
        }
    }

    fn receive(&mut self, client: usize, inbound: Inbound) {
        match inbound {
            Inbound::Net(ToClient::Reply { result, zxid }) => {
                if self.clients[client].session.in_flight.is_empty() {
                    return; // a reply from before a reconnect that raced the drop
                }
                trace!(self, Some(client), Deliver, "reply {result:?}");
                self.history.reply_delivered(&result);
                self.clients[client].session.reply(result, zxid);
            }
            Inbound::Net(ToClient::Watch(event)) => self.notify(client, event, false),
            Inbound::Spurious(event) => self.notify(client, event, true),
            Inbound::Net(ToClient::Connected) => self.connected(client),
            Inbound::Net(ToClient::Expired) => self.learn_expired(client),
            Inbound::Net(ToClient::Closed) | Inbound::Dropped => self.dropped(client),
            Inbound::Timer(timer) => self.local_timer(client, timer),
        }
    }

    /// A watch event reaches the client. A spurious one (an injected fault)
    /// is not a wakeup the recipe caused, so the herd oracle does not see it.
    fn notify(&mut self, client: usize, event: WatchedEvent, spurious: bool) {
        let fires = self.clients[client].session.watches.would_fire(&event);
        trace!(
            self,
            Some(client),
            Deliver,
            "watch {event:?}{}{}",
            if spurious { " (spurious)" } else { "" },
            if fires { "" } else { " (no watch armed)" }
        );
        let now = self.now_ns();
        self.history.event_delivered(client, now, &event, fires);
        self.clients[client].session.notification(event);
        if fires && !spurious {
            self.observe(client, Seen::WatchFired);
        }
    }

    fn connected(&mut self, client: usize) {
        match self.clients[client].connecting.take() {
            Some(Connecting::Reconnect)
                if self.clients[client].session.state == ConnectionState::Disconnected =>
            {
                trace!(
                    self,
                    Some(client),
                    Session,
                    "reconnected into the same session"
                );
                let _ = self.clients[client].session.reconnected();
            }
            Some(Connecting::Open(session)) => {
                trace!(
                    self,
                    Some(client),
                    Session,
                    "session {:#x} opened",
                    session.0
                );
                self.sessions[client] = Some(session);
                self.clients[client].session.connected(session);
                if !self.clients[client].pinging {
                    self.clients[client].pinging = true;
                    self.schedule_local(
                        client,
                        ms_to_ns(self.config.ping_interval_ms()),
                        LocalTimer::Ping,
                    );
                }
                if let Some(waker) = self.clients[client].app_waker.take() {
                    waker.wake(); // the workload may be waiting for its first session
                }
            }
            Some(Connecting::Reconnect) | None => {}
        }
    }

    fn learn_expired(&mut self, client: usize) {
        self.clients[client].connecting = None;
        trace!(self, Some(client), Session, "learns its session expired");
        self.clients[client].session.expired();
        self.retry_later(client, LocalTimer::NewSession);
    }

    fn dropped(&mut self, client: usize) {
        let connecting = self.clients[client].connecting.take();
        let was_opening = matches!(connecting, Some(Connecting::Open(_)));
        let session = &mut self.clients[client].session;
        if session.state == ConnectionState::Connected {
            session.disconnected();
            trace!(self, Some(client), Session, "disconnected");
        } else if connecting == Some(Connecting::Reconnect) {
            self.reconnect_attempt_failed(client);
        }
        let session = &self.clients[client].session;
        if was_opening || session.session_id.is_none() || session.state == ConnectionState::Expired
        {
            self.retry_later(client, LocalTimer::NewSession);
        } else {
            self.retry_later(client, LocalTimer::Reconnect);
        }
    }

    /// A reconnect attempt failed: as the Java client's cleanup() does,
    /// every request queued since the disconnect fails with ConnectionLoss.
    fn reconnect_attempt_failed(&mut self, client: usize) {
        let failed = self.clients[client].session.reconnect_failed();
        if failed > 0 {
            trace!(
                self,
                Some(client),
                Session,
                "reconnect attempt fails: {failed} queued request(s) fail with ConnectionLoss"
            );
        }
    }

    fn retry_later(&mut self, client: usize, timer: LocalTimer) {
        if self.clients[client].retry.is_some() {
            return;
        }
        let delay = self.delay_ns(self.retry_delay_ms(timer));
        self.schedule_retry(client, delay.max(1_000), timer);
    }

    /// How long a client waits before this kind of connection attempt.
    fn retry_delay_ms(&self, timer: LocalTimer) -> crate::faults::MsRange {
        match timer {
            LocalTimer::NewSession => self.config.new_session_delay_ms,
            _ => self.config.reconnect_delay_ms,
        }
    }

    /// Schedules the client's next connection attempt (the only one that
    /// counts: see `ClientSlot::retry`).
    fn schedule_retry(&mut self, client: usize, after_ns: u64, timer: LocalTimer) {
        let at = self.now_ns().saturating_add(after_ns);
        self.clients[client].retry = Some((at, timer));
        self.schedule(at, Event::Local { client, timer });
    }

    /// The heal: a connection attempt the network had put off past the
    /// usual retry delay is brought forward (the network is back now); the
    /// attempt scheduled before is then superseded.
    pub fn retry_soon(&mut self, client: usize) {
        let Some((due, timer)) = self.clients[client].retry else {
            return;
        };
        let range = self.retry_delay_ms(timer);
        let longest = ms_to_ns(range.max.max(range.min)).max(1_000);
        let latest = self.now_ns().saturating_add(longest);
        if due > latest {
            let delay = self.delay_ns(range);
            self.schedule_retry(client, delay.max(1_000), timer);
        }
    }

    fn schedule_local(&mut self, client: usize, after_ns: u64, timer: LocalTimer) {
        let at = self.now_ns().saturating_add(after_ns);
        self.schedule(at, Event::Local { client, timer });
    }

    fn local_timer(&mut self, client: usize, timer: LocalTimer) {
        match timer {
            LocalTimer::Recipe { id, due_ms } => {
                let slot = &mut self.clients[client];
                if slot.session.timers.get(&id) == Some(&due_ms) {
                    slot.scheduled_timers.remove(&id);
                    trace!(self, Some(client), Timer, "recipe timer {id:?} fires");
                    self.clients[client].session.fire_timer(id);
                }
            }
            LocalTimer::Ping => {
                let interval_ns = ms_to_ns(self.config.ping_interval_ms());
                let slot = &self.clients[client];
                let idle = self.now_ns().saturating_sub(slot.last_sent_ns) >= interval_ns;
                if slot.session.state == ConnectionState::Connected
                    && slot.connecting.is_none()
                    && idle
                {
                    self.send_to_server(client, ToServer::Ping);
                }
                self.schedule_local(client, interval_ns, LocalTimer::Ping);
            }
            LocalTimer::Reconnect | LocalTimer::NewSession => match self.clients[client].retry {
                Some((due, pending)) if self.now_ns() >= due => {
                    self.clients[client].retry = None;
                    self.try_connect(client, pending);
                }
                // Superseded by an attempt brought forward.
                _ => {}
            },
        }
    }

    /// A connection attempt: fails while the network is down (and is
    /// retried), else starts a new connection epoch.
    fn try_connect(&mut self, client: usize, timer: LocalTimer) {
        let slot = &self.clients[client];
        if slot.connecting.is_some() || slot.session.state == ConnectionState::Connected {
            return;
        }
        if self.now_ns() < slot.link.down_until_ns {
            // The attempt fails (the server cannot be reached). As the Java
            // client's cleanup() does at each failed attempt, every request
            // queued since the disconnect fails with ConnectionLoss, not
            // applied; the next attempt follows after another reconnect
            // delay (ClientCnxn: a random sleep before every attempt).
            self.reconnect_attempt_failed(client);
            let delay = self.delay_ns(self.config.reconnect_delay_ms);
            self.schedule_retry(client, delay.max(1_000), timer);
            return;
        }
        self.clients[client].link.epoch += 1;
        if timer == LocalTimer::NewSession
            || self.clients[client].session.state == ConnectionState::Expired
        {
            let session = self.fresh_session_id();
            self.clients[client].connecting = Some(Connecting::Open(session));
            self.send_to_server(client, ToServer::Open { session });
        } else {
            let session = &self.clients[client].session;
            let msg = ToServer::Reconnect {
                session: session.session_id.expect("reconnect needs a session"),
                last_zxid: session.last_zxid,
                watches: session.watches.to_watch_set(),
            };
            self.clients[client].connecting = Some(Connecting::Reconnect);
            self.send_to_server(client, msg);
        }
    }

    /// A session id no session of this run had (ZooKeeper's look alike).
    fn fresh_session_id(&mut self) -> SessionId {
        loop {
            let id = SessionId(
                self.rng
                    .ids
                    .gen_range(0x1_0000_0000_i64..0x100_0000_0000_i64),
            );
            if !self.owners.contains_key(&id) {
                return id;
            }
        }
    }

    /// Puts the recipe's requests on the wire, hands its outcomes to the
    /// workload (and the oracles), and schedules its timers.
    pub fn pump(&mut self, client: usize) {
        while let Some((tag, request)) = self.clients[client].session.next_to_send() {
            if request.is_read() {
                self.observe(client, Seen::Read);
            }
            trace!(self, Some(client), Send, "{tag:?} {request:?}");
            let now = self.now_ns();
            self.history.sent(client, now);
            self.send_to_server(client, ToServer::Request(request));
        }
        if !self.clients[client].session.outcomes.is_empty() {
            let outcomes = std::mem::take(&mut self.clients[client].session.outcomes);
            for outcome in outcomes {
                trace!(self, Some(client), Outcome, "{outcome:?}");
                if let Some(observation) = outcome.observed() {
                    self.stats.count_outcome(&observation);
                    let now = self.now_ns();
                    self.history.outcome(client, now, &observation);
                    self.observe_hold(client, outcome.hold(), Seen::Outcome(observation));
                }
                let slot = &mut self.clients[client];
                slot.outcomes.push_back(outcome);
                if let Some(waker) = slot.app_waker.take() {
                    waker.wake();
                }
            }
        }
        if self.clients[client].session.timers != self.clients[client].scheduled_timers {
            self.sync_timers(client);
        }
    }

    /// Schedules the recipe timers the event queue does not hold yet; a
    /// timer fires no sooner than 1 ms from now (no zero-time loops).
    fn sync_timers(&mut self, client: usize) {
        let now = self.now_ns();
        let pending: Vec<_> = self.clients[client]
            .session
            .timers
            .iter()
            .filter(|(id, due)| self.clients[client].scheduled_timers.get(id) != Some(due))
            .map(|(id, due)| (*id, *due))
            .collect();
        for (id, due_ms) in pending {
            let at = ms_to_ns(due_ms).max(now.saturating_add(1_000_000));
            self.schedule(
                at,
                Event::Local {
                    client,
                    timer: LocalTimer::Recipe { id, due_ms },
                },
            );
        }
        self.clients[client].scheduled_timers = self.clients[client].session.timers.clone();
    }
}
