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
use zk_recipes::{ClientLibrary, Observe};

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
        if let Inbound::Net(message) = &inbound {
            let now = self.now_ns();
            let link = &mut self.clients[client].link;
            link.last_heard_ns = now;
            if !matches!(message, ToClient::Closed) {
                link.last_recv_ns = now; // a closed connection reads no bytes
            }
        }
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
        if self.clients[client].connecting.is_some() {
            let link = &mut self.clients[client].link;
            link.attempts = 0;
            link.gives_up_at_ns = None;
        }
        // A hung attempt answered before its connect timeout.
        if let Some((_, LocalTimer::ConnectTimeout { .. })) = self.clients[client].retry {
            self.clients[client].retry = None;
        }
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
                if R::CLIENT_LIBRARY == ClientLibrary::ZookeeperClientRust {
                    self.start_crate_ticks(client);
                }
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
                if R::CLIENT_LIBRARY == ClientLibrary::ZookeeperClientRust {
                    self.start_crate_ticks(client);
                } else if !self.clients[client].pinging {
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
        self.clients[client].link.gives_up_at_ns = None;
        trace!(self, Some(client), Session, "learns its session expired");
        self.clients[client].session.expired();
        if R::CLIENT_LIBRARY == ClientLibrary::ZookeeperClientRust {
            // The crate opens no session by itself: the application connects
            // again (`Client::connect_again`).
            self.clients[client].link.awaits_connect = true;
        }
        self.retry_later(client, LocalTimer::NewSession);
    }

    fn dropped(&mut self, client: usize) {
        let connecting = self.clients[client].connecting.take();
        let was_opening = matches!(connecting, Some(Connecting::Open(_)));
        let session = &mut self.clients[client].session;
        if session.state == ConnectionState::Connected {
            session.disconnected();
            let now = self.now_ns();
            self.history.disconnected(client, now);
            trace!(self, Some(client), Session, "disconnected");
            self.start_give_up_clock(client);
        } else if connecting == Some(Connecting::Reconnect) {
            self.reconnect_attempt_failed(client);
            if self.crate_gives_up_if_due(client) {
                return;
            }
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
        let slot = &self.clients[client];
        let awaits_app = timer == LocalTimer::NewSession && slot.link.awaits_connect;
        if slot.retry.is_some() || awaits_app {
            return;
        }
        let delay = match timer {
            LocalTimer::NewSession => self.delay_ns(self.config.new_session_delay_ms),
            _ => self.next_attempt_delay_ns(client),
        };
        self.schedule_retry(client, delay.max(1_000), timer);
    }

    /// The delay before the client's next reconnect attempt, counted, as
    /// its client library times it (`WorldConfig::reconnect_delay_draw_ms`).
    fn next_attempt_delay_ns(&mut self, client: usize) -> u64 {
        let link = &mut self.clients[client].link;
        link.attempts += 1;
        let attempt = link.attempts;
        let ms =
            self.config
                .reconnect_delay_draw_ms(R::CLIENT_LIBRARY, attempt, &mut self.rng.delays);
        ms_to_ns(ms)
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
        let now = self.now_ns();
        let link = &mut self.clients[client].link;
        link.silent_until_ns = link.silent_until_ns.min(now);
        let Some((due, mut timer)) = self.clients[client].retry else {
            return;
        };
        if let LocalTimer::ConnectTimeout { new_session } = timer {
            // An attempt hanging in the silence goes through now.
            timer = attempt_kind(new_session);
            self.clients[client].retry = Some((due, timer));
        }
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
            LocalTimer::Ping if R::CLIENT_LIBRARY == ClientLibrary::ZookeeperClientRust => {
                self.crate_ping_tick(client);
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
                    if !self.hears_nothing(client) {
                        // Its answer (pings are one-way here) is what the
                        // client last received, give or take a round trip.
                        self.clients[client].link.last_recv_ns = self.now_ns();
                    }
                }
                self.schedule_local(client, interval_ns, LocalTimer::Ping);
            }
            LocalTimer::Reconnect | LocalTimer::NewSession | LocalTimer::ConnectTimeout { .. } => {
                match self.clients[client].retry {
                    Some((due, LocalTimer::ConnectTimeout { new_session }))
                        if self.now_ns() >= due =>
                    {
                        self.clients[client].retry = None;
                        if self.clients[client].connecting.take().is_some() {
                            // An attempt hung at a server: what it answers
                            // late belongs to an attempt given up.
                            self.clients[client].link.epoch += 1;
                        }
                        self.attempt_timed_out(client, new_session);
                    }
                    Some((due, pending)) if self.now_ns() >= due => {
                        self.clients[client].retry = None;
                        self.try_connect(client, pending);
                    }
                    // Superseded by an attempt brought forward.
                    _ => {}
                }
            }
            LocalTimer::ReadTimeout => self.read_timeout_check(client),
            LocalTimer::GiveUp => self.give_up_if_due(client),
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
            let delay = self.next_attempt_delay_ns(client);
            self.schedule_retry(client, delay.max(1_000), timer);
            return;
        }
        if self.now_ns() < slot.link.silent_until_ns {
            self.attempt_hangs(client, timer);
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
                watches: session.watches_to_reregister(),
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

/// Silent connections (`Fault::Silent`), the client's read and connect
/// timeouts, and client-side expiry (`FaultRates::client_expiry`).
impl<R: SimRecipe> Shared<R> {
    /// While the client's connection is silent, when the silence ends:
    /// a message sent into it either way is held up until then (TCP
    /// retransmits it), and lost if the connection is gone by then (its
    /// epoch).
    pub fn silence_end_ns(&self, client: usize) -> Option<u64> {
        let until = self.clients[client].link.silent_until_ns;
        (self.now_ns() < until).then_some(until)
    }

    /// The client's connection goes silent for `down_ms`: a black hole,
    /// no reset. The client's read timeout runs from the last it heard
    /// (its last ping or request, answered just before the silence). A
    /// silence striking a connection that already carries nothing back
    /// (silent, its server frozen, its pings behind a waiting write) only
    /// lengthens it: what the client sent since was never answered.
    pub fn go_silent(&mut self, client: usize, down_ms: u64) {
        let now = self.now_ns();
        if self.clients[client].link.session.is_none() {
            return;
        }
        let already_deaf = self.hears_nothing(client);
        let slot = &mut self.clients[client];
        let until = now.saturating_add(ms_to_ns(down_ms));
        slot.link.silent_until_ns = slot.link.silent_until_ns.max(until);
        if !already_deaf {
            slot.link.last_heard_ns = slot.link.last_heard_ns.max(slot.last_sent_ns);
        }
        self.schedule_timeout_check(client);
    }

    /// The client's connection carries nothing back now: it is silent, its
    /// server is frozen, or its server holds everything of its session
    /// behind a write that waits for a leader.
    pub(super) fn hears_nothing(&self, client: usize) -> bool {
        let link = &self.clients[client].link;
        let waits = |session| self.ensemble.has_waiting_write(session);
        self.silence_end_ns(client).is_some()
            || (link.server_up && self.servers.frozen_until(link.server).is_some())
            || (link.server_up && link.session.is_some_and(waits))
    }

    /// When the client gives up on what it waits for in the silence: a
    /// connected client at its read timeout, a connection attempt in
    /// flight at its connect timeout. None: it waits for nothing.
    fn silence_deadline_ns(&self, client: usize) -> Option<u64> {
        let slot = &self.clients[client];
        let library = R::CLIENT_LIBRARY;
        if slot.connecting.is_some() {
            let timeout = ms_to_ns(self.config.connect_timeout_ms(library));
            Some(slot.last_sent_ns.saturating_add(timeout))
        } else if slot.session.state == ConnectionState::Connected {
            let timeout = ms_to_ns(self.config.read_timeout_ms(library));
            let deadline = slot.link.last_heard_ns.saturating_add(timeout);
            Some(match library {
                ClientLibrary::Java => deadline,
                // Checked at its ticks (`crate_ticks`).
                ClientLibrary::ZookeeperClientRust => self.crate_tick_at_or_after(client, deadline),
            })
        } else {
            None
        }
    }

    pub(super) fn schedule_timeout_check(&mut self, client: usize) {
        if let Some(deadline) = self.silence_deadline_ns(client) {
            let at = deadline.max(self.now_ns().saturating_add(1_000_000));
            self.schedule(
                at,
                Event::Local {
                    client,
                    timer: LocalTimer::ReadTimeout,
                },
            );
        }
    }

    /// The read (or connect) timeout check: while the silence lasts, a
    /// client that has heard nothing for its timeout drops the connection
    /// itself (Java's SessionTimeoutException: what is in flight fails
    /// with ConnectionLoss) and tries to reconnect.
    fn read_timeout_check(&mut self, client: usize) {
        let now = self.now_ns();
        if !self.hears_nothing(client) {
            return; // the silence is over: what was held up arrives
        }
        let Some(deadline) = self.silence_deadline_ns(client) else {
            return;
        };
        if now < deadline {
            self.schedule_timeout_check(client);
            return;
        }
        let library = R::CLIENT_LIBRARY;
        match self.clients[client].connecting.take() {
            Some(connecting) => {
                self.clients[client].link.epoch += 1;
                let opening = matches!(connecting, Connecting::Open(_));
                self.attempt_timed_out(client, opening);
            }
            None => {
                let read_timeout_ms = self.config.read_timeout_ms(library);
                trace!(
                    self,
                    Some(client),
                    Session,
                    "read timeout: heard nothing for {read_timeout_ms} ms, drops its connection"
                );
                self.drop_connection(client, 0);
            }
        }
    }

    /// A connection attempt into a silent network: it hangs until the
    /// connect timeout, then fails.
    fn attempt_hangs(&mut self, client: usize, timer: LocalTimer) {
        let opening = timer == LocalTimer::NewSession
            || self.clients[client].session.state == ConnectionState::Expired;
        let timeout_ms = self.config.connect_timeout_ms(R::CLIENT_LIBRARY);
        trace!(
            self,
            Some(client),
            Session,
            "connection attempt hangs: no answer (connect timeout {timeout_ms} ms)"
        );
        let timer = LocalTimer::ConnectTimeout {
            new_session: opening,
        };
        self.schedule_retry(client, ms_to_ns(timeout_ms), timer);
    }

    /// A reconnection hung at a server that reaches no leader: the client
    /// gives it up at its connect timeout (the Java client's
    /// `sessionTimeout / servers`, the crate's 2/5 of the session timeout:
    /// `WorldConfig::connect_timeout_ms`) and tries again, unless the
    /// server answers or closes it first (`connected`, `dropped`).
    pub(super) fn time_out_hung_attempt(&mut self, client: usize) {
        self.time_out_attempt(client, false);
    }

    /// The attempt in flight hears nothing: the client gives it up at its
    /// connect timeout (`opening`: it was opening a session).
    pub(super) fn time_out_attempt(&mut self, client: usize, opening: bool) {
        let timeout_ms = self.config.connect_timeout_ms(R::CLIENT_LIBRARY);
        let timer = LocalTimer::ConnectTimeout {
            new_session: opening,
        };
        self.schedule_retry(client, ms_to_ns(timeout_ms), timer);
    }

    /// A connection attempt reached its connect timeout: it fails (what is
    /// queued fails with it, as at any failed attempt), the next follows.
    fn attempt_timed_out(&mut self, client: usize, opening: bool) {
        trace!(self, Some(client), Session, "connection attempt times out");
        if !opening {
            self.reconnect_attempt_failed(client);
            if self.crate_gives_up_if_due(client) {
                return;
            }
        }
        self.retry_later(client, attempt_kind(opening));
    }

    /// Client-side expiry: the client lost its connection; it gives up on
    /// the session after the session timeout unless it reconnects first.
    /// A client of the `zookeeper-client` crate follows the crate's own
    /// deadline instead, always (`start_crate_deadline`).
    fn start_give_up_clock(&mut self, client: usize) {
        if R::CLIENT_LIBRARY == ClientLibrary::ZookeeperClientRust {
            self.start_crate_deadline(client);
            return;
        }
        let slot = &self.clients[client];
        if !self.rates.client_expiry
            || slot.session.session_id.is_none()
            || slot.link.gives_up_at_ns.is_some()
        {
            return;
        }
        let at = self
            .now_ns()
            .saturating_add(ms_to_ns(self.config.session_timeout_ms));
        self.clients[client].link.gives_up_at_ns = Some(at);
        let timer = LocalTimer::GiveUp;
        self.schedule(at, Event::Local { client, timer });
    }

    /// The give-up time came with the client still disconnected: as
    /// Curator does, it treats its session as expired (the recipe sees
    /// Expired), abandons the handle and opens a new session. The server
    /// keeps the old session, and its ephemerals, until its own timer
    /// (from the last time it heard from it) runs out.
    fn give_up_if_due(&mut self, client: usize) {
        if R::CLIENT_LIBRARY == ClientLibrary::ZookeeperClientRust {
            self.crate_gives_up_if_due(client);
            return;
        }
        let now = self.now_ns();
        let slot = &mut self.clients[client];
        let due = slot.link.gives_up_at_ns.is_some_and(|at| now >= at);
        if !due || slot.session.state != ConnectionState::Disconnected {
            return;
        }
        let Some(old) = slot.session.session_id else {
            return;
        };
        slot.link.gives_up_at_ns = None;
        slot.link.epoch += 1;
        slot.link.server_up = false;
        slot.link.session = None;
        slot.connecting = None;
        slot.retry = None;
        trace!(
            self,
            Some(client),
            Session,
            "gives up on session {:#x} after {} ms disconnected (client-side expiry, as Curator \
             does); the server still holds it",
            old.0,
            self.config.session_timeout_ms
        );
        self.clients[client].session.expired();
        self.observe(client, Seen::SessionEnded);
        self.retry_later(client, LocalTimer::NewSession);
    }
}

/// The `zookeeper-client` crate's own client-side expiry (session/mod.rs
/// `start`, `resolve_start_error`): a disconnected client gives up
/// reconnecting once 7/5 of the session timeout passed since it last
/// received anything from a server. Its session is then Expired for the
/// application, while the server may still hold it (its own timer runs from
/// the last it heard; a new leader gives every session a fresh timeout);
/// the crate opens no new session by itself: the application connects.
impl<R: SimRecipe> Shared<R> {
    /// The crate's deadline (`session_expired_timeout`), in ms.
    fn crate_deadline_ms(&self) -> u64 {
        self.config.session_timeout_ms.saturating_mul(7) / 5
    }

    /// The client lost its connection: its deadline runs from the last it
    /// received, whenever that was.
    fn start_crate_deadline(&mut self, client: usize) {
        let link = &self.clients[client].link;
        if self.clients[client].session.session_id.is_none() || link.gives_up_at_ns.is_some() {
            return;
        }
        let deadline = link
            .last_recv_ns
            .saturating_add(ms_to_ns(self.crate_deadline_ms()));
        let at = deadline.max(self.now_ns());
        self.clients[client].link.gives_up_at_ns = Some(at);
        let timer = LocalTimer::GiveUp;
        self.schedule(at, Event::Local { client, timer });
    }

    /// The deadline passed with the client still disconnected and no
    /// attempt in flight (an attempt that reached a server is let finish,
    /// as the crate's handshake is; its failure gives up): the session
    /// layer's state becomes Expired, what is queued fails with
    /// SessionExpired, and no new session is opened until the application
    /// connects again. Returns whether it gave up.
    fn crate_gives_up_if_due(&mut self, client: usize) -> bool {
        let now = self.now_ns();
        let slot = &mut self.clients[client];
        let due = slot.link.gives_up_at_ns.is_some_and(|at| now >= at);
        if R::CLIENT_LIBRARY != ClientLibrary::ZookeeperClientRust
            || !due
            || slot.session.state != ConnectionState::Disconnected
            || slot.connecting.is_some()
        {
            return false;
        }
        let Some(old) = slot.session.session_id else {
            return false;
        };
        let silent_ms = now.saturating_sub(slot.link.last_recv_ns) / 1_000_000;
        slot.link.gives_up_at_ns = None;
        slot.link.epoch += 1;
        slot.link.server_up = false;
        slot.link.session = None;
        slot.link.awaits_connect = true;
        slot.link.attempts = 0; // the application's new client starts afresh
        slot.retry = None;
        let server = match self.ensemble.committed().is_session_alive(old) {
            true => "the server still holds it",
            false => "the server expired it already",
        };
        trace!(
            self,
            Some(client),
            Session,
            "gives up on session {:#x}: nothing received for {silent_ms} ms, past 7/5 of the \
             session timeout ({} ms: the zookeeper-client crate's own deadline); {server}",
            old.0,
            self.crate_deadline_ms()
        );
        self.clients[client].session.expired();
        self.observe(client, Seen::SessionEnded);
        true
    }

    /// The application connects again ([`super::client::Client::connect_again`]):
    /// after the crate gave up on its session, the world opens the next
    /// session only now.
    pub(super) fn application_connects(&mut self, client: usize) {
        if !std::mem::take(&mut self.clients[client].link.awaits_connect) {
            return;
        }
        trace!(
            self,
            Some(client),
            Session,
            "the application connects again: opens a new session"
        );
        self.retry_later(client, LocalTimer::NewSession);
    }
}

/// The connection attempt that opens a session, or reconnects into one.
fn attempt_kind(opening: bool) -> LocalTimer {
    if opening {
        LocalTimer::NewSession
    } else {
        LocalTimer::Reconnect
    }
}
