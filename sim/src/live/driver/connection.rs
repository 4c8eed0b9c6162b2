//! One client's connection task in a live run: it owns the client's real
//! connection, feeds the session layer what the connection delivers
//! (replies, watch events, state changes), sends what the recipe emits,
//! injects the client's timed and per-request faults, emulates failed
//! reconnects while the network is down, gives up on a session on its own
//! clock under the `client_expiry` policy, and hands outcomes to the
//! application and the oracles.

use crate::client::ConnectionState;
use crate::faults::{Fault, MsRange, ScheduledFault};
use crate::live::mirror::mirror;
use crate::live::run_state::{lock, Phase, Run};
use crate::live::{Backend, BackendError, BoxFuture, Connection, LiveState, NodeInfo, RequestLoss};
use crate::oracles::Seen;
use crate::world::SimRecipe;
use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::Poll;
use zk_recipes::zk::{Path, Request, SessionId, WatchedEvent};
use zk_recipes::{Hold, Observation, Observe};

/// The longest a connection task sleeps without looking around.
const IDLE_MS: u64 = 20;
/// After an injected drop, how long the driver waits to see the client
/// library notice it before it believes a reconnect it did not see.
const DROP_NOTICE_MS: u64 = 1_000;
/// Retry delay when opening a session fails.
const CONNECT_RETRY_MS: u64 = 200;

/// What a connection task needs to know of the run's settings.
#[derive(Clone)]
pub(super) struct TaskConfig {
    pub(super) fifo_dir: Option<Path>,
    pub(super) root: Path,
    /// Whether exclusive acquisitions are judged against the tree.
    pub(super) needs_tree: bool,
    pub(super) reconnect_delay_ms: MsRange,
    pub(super) new_session_delay_ms: MsRange,
    /// The client-side expiry policy (as drawn for the seed).
    pub(super) client_expiry: bool,
}

/// One client's connection: feeds the session layer what the real
/// connection delivers, sends what the recipe emits, injects the client's
/// faults at their times.
pub(super) struct ConnectionTask<R: SimRecipe> {
    pub(super) run: Arc<Mutex<Run<R>>>,
    pub(super) client: usize,
    pub(super) backend: Arc<dyn Backend>,
    pub(super) config: TaskConfig,
    pub(super) faults: VecDeque<(u64, ScheduledFault)>,
}

/// What a connection task tracks about its connection.
#[derive(Default)]
struct Link {
    /// Requests sent in this run (per-request faults count them from 1).
    sent: u64,
    /// A pause in force until then.
    paused_until: Option<u64>,
    /// An injected drop: reconnecting fails until then.
    down_until: u64,
    /// An injected drop the client library has not shown yet: since when.
    drop_unseen_since: Option<u64>,
    /// The next emulated failed reconnect attempt.
    next_attempt: Option<u64>,
    /// Client-side expiry: when the client gives up on its session,
    /// counted from the session layer's disconnect.
    gives_up_at: Option<u64>,
    healed: bool,
}

impl<R: SimRecipe> ConnectionTask<R> {
    fn lock(&self) -> MutexGuard<'_, Run<R>> {
        lock(&self.run)
    }

    pub(super) async fn run(mut self) {
        let mut conn: Option<Box<dyn Connection>> = None;
        let mut link = Link::default();
        let mut new_session_at = 0u64;
        loop {
            let now = self.backend.now_ns();
            let (closing, phase) = {
                let run = self.lock();
                (run.closing, run.phase)
            };
            if closing {
                if let Some(mut conn) = conn.take() {
                    conn.close().await;
                }
                return;
            }
            if phase != Phase::Faults && !link.healed {
                link.healed = true;
                self.faults.clear();
                link.down_until = 0;
                if let Some(conn) = conn.as_mut() {
                    conn.heal();
                }
                if link.paused_until.take().is_some() {
                    self.lock().clients[self.client].paused = false;
                }
            }
            if let Some(until) = link.paused_until {
                if now < until {
                    self.backend.sleep(ms_until(now, until).min(IDLE_MS)).await;
                    continue;
                }
                link.paused_until = None;
                if let Some(conn) = conn.as_mut() {
                    conn.resume();
                }
                self.lock().clients[self.client].paused = false;
            }
            let Some(live) = conn.as_mut() else {
                // An outage still in force (a client that gave up during
                // it) holds the new session back, as it holds reconnects.
                let open_at = new_session_at.max(link.down_until);
                if now >= open_at {
                    match self.open_session().await {
                        Ok(opened) => {
                            self.opened(&*opened);
                            conn = Some(opened);
                            link = Link {
                                sent: link.sent,
                                healed: link.healed,
                                ..Link::default()
                            };
                        }
                        Err(_) => new_session_at = now + CONNECT_RETRY_MS * 1_000_000,
                    }
                } else {
                    let wait = ms_until(now, open_at).min(IDLE_MS);
                    self.wait(None, wait).await;
                }
                continue;
            };
            if phase == Phase::Faults && self.faults.front().is_some_and(|(at, _)| *at <= now) {
                if let Some((_, scheduled)) = self.faults.pop_front() {
                    self.inject(live.as_mut(), &mut link, scheduled.fault, now)
                        .await;
                }
                continue;
            }
            let events = live.drain_events();
            self.deliver_events(events);
            if self.sync_state(live.as_mut(), &mut link, now) {
                live.close().await;
                conn = None;
                new_session_at = self.new_session_at(now);
                self.flush().await;
                continue;
            }
            if self.gives_up(live.as_ref(), &mut link, now) {
                live.abandon();
                conn = None;
                new_session_at = self.new_session_at(now);
                self.flush().await;
                continue;
            }
            self.step(&mut link, now);
            self.flush().await;
            let next = {
                let mut run = self.lock();
                run.clients[self.client].session.next_to_send()
            };
            if let Some((_, request)) = next {
                self.send(live.as_mut(), &mut link, &request, phase).await;
                self.flush().await;
                continue;
            }
            let wake_at = self.next_wake(&link, now);
            self.wait(
                Some(live.as_mut()),
                ms_until(now, wake_at).clamp(1, IDLE_MS),
            )
            .await;
        }
    }

    /// Opens a session: one the client can abandon if it may give up on it.
    async fn open_session(&self) -> Result<Box<dyn Connection>, BackendError> {
        if self.config.client_expiry {
            self.backend.connect_abandonable().await
        } else {
            self.backend.connect().await
        }
    }

    /// When the client opens its next session, the previous one ended now.
    fn new_session_at(&self, now: u64) -> u64 {
        let mut run = self.lock();
        let delay = self.config.new_session_delay_ms.draw(&mut run.delays);
        now + delay * 1_000_000
    }

    /// Client-side expiry: once the session layer has been disconnected
    /// for the session timeout the server granted, the client gives up on
    /// its session as Curator does (the recipe sees Expired, the oracles
    /// see the session end). Returns true when it gives up now; the caller
    /// abandons the connection. The server still holds the session.
    fn gives_up(&self, conn: &dyn Connection, link: &mut Link, now: u64) -> bool {
        if !self.config.client_expiry {
            return false;
        }
        let mut run = self.lock();
        let session = &mut run.clients[self.client].session;
        if session.state != ConnectionState::Disconnected || session.session_id.is_none() {
            link.gives_up_at = None;
            return false;
        }
        let timeout_ms = conn.session_timeout_ms();
        let at = *link
            .gives_up_at
            .get_or_insert(now.saturating_add(timeout_ms.saturating_mul(1_000_000)));
        if now < at {
            return false;
        }
        link.gives_up_at = None;
        link.next_attempt = None;
        session.expired();
        if run.sessions[self.client].take().is_some() {
            run.observe(now, self.client, Seen::SessionEnded, None);
        }
        let text = format!(
            "gives up on session {:#x} after {timeout_ms} ms disconnected (client-side expiry, \
             as Curator does); the server still holds it",
            conn.session_id().0
        );
        run.note_session(now, self.client, text);
        true
    }

    /// A new session is open.
    fn opened(&self, conn: &dyn Connection) {
        let id = conn.session_id();
        let now = self.backend.now_ns();
        let mut run = self.lock();
        run.sessions[self.client] = Some(id);
        run.note_session(now, self.client, format!("opens session {:#x}", id.0));
        let slot = &mut run.clients[self.client];
        slot.session.now_ms = now / 1_000_000;
        slot.session.connected(id);
        if let Some(waker) = slot.app_waker.take() {
            waker.wake();
        }
    }

    /// Node events to the session layer (and the herd oracle).
    fn deliver_events(&self, events: Vec<WatchedEvent>) {
        if events.is_empty() {
            return;
        }
        let now = self.backend.now_ns();
        let mut run = self.lock();
        for event in events {
            let fires = run.clients[self.client].session.watches.would_fire(&event);
            run.clients[self.client].session.notification(event);
            if fires {
                run.observe(now, self.client, Seen::WatchFired, None);
            }
        }
    }

    /// Brings the session layer's connection state in line with the
    /// client library's. Returns true when the session expired.
    fn sync_state(&self, conn: &mut dyn Connection, link: &mut Link, now: u64) -> bool {
        let state = conn.state();
        let mut run = self.lock();
        let session = &mut run.clients[self.client].session;
        match state {
            LiveState::Expired => {
                if session.state != ConnectionState::Expired {
                    session.expired();
                }
                let ended = run.sessions[self.client].take().is_some();
                if ended {
                    run.observe(now, self.client, Seen::SessionEnded, None);
                    let id = conn.session_id().0;
                    run.note_session(now, self.client, format!("session {id:#x} expired"));
                }
                return true;
            }
            LiveState::Disconnected => {
                link.drop_unseen_since = None;
                if session.state == ConnectionState::Connected {
                    session.disconnected();
                }
            }
            LiveState::Connected => {
                // After an injected drop the library may not have noticed
                // yet: its "connected" is the old connection, not a reconnect.
                let drop_unnoticed = link
                    .drop_unseen_since
                    .is_some_and(|since| now < since + DROP_NOTICE_MS * 1_000_000);
                let down = now < link.down_until;
                if session.state == ConnectionState::Disconnected && !drop_unnoticed && !down {
                    link.drop_unseen_since = None;
                    link.next_attempt = None;
                    let _ = session.reconnected();
                }
            }
        }
        false
    }

    /// Application calls, due recipe timers, emulated failed reconnect
    /// attempts while the network is down.
    fn step(&self, link: &mut Link, now: u64) {
        let now_ms = now / 1_000_000;
        let mut run = self.lock();
        let Run {
            clients, delays, ..
        } = &mut *run;
        let slot = &mut clients[self.client];
        slot.session.now_ms = now_ms;
        while let Some(call) = slot.calls.pop_front() {
            slot.session.call(call);
        }
        while let Some((due, id)) = slot.session.next_timer() {
            if due > now_ms {
                break;
            }
            slot.session.fire_timer(id);
        }
        if slot.session.state == ConnectionState::Disconnected && now < link.down_until {
            match link.next_attempt {
                Some(at) if now >= at => {
                    slot.session.reconnect_failed();
                    link.next_attempt = None;
                }
                Some(_) => {}
                None => {
                    let delay = self.config.reconnect_delay_ms.draw(delays);
                    link.next_attempt = Some(now + delay.max(1) * 1_000_000);
                }
            }
        }
    }

    /// Hands the recipe's outcomes to the application and the oracles; an
    /// exclusive acquisition is judged against a snapshot of the tree.
    async fn flush(&self) {
        let (outcomes, sessions) = {
            let mut run = self.lock();
            let outcomes = std::mem::take(&mut run.clients[self.client].session.outcomes);
            (outcomes, run.sessions.clone())
        };
        if outcomes.is_empty() {
            return;
        }
        let exclusive = outcomes.iter().any(|outcome| {
            matches!(
                outcome.observed(),
                Some(Observation::Acquired {
                    hold: Hold::Exclusive,
                    ..
                })
            )
        });
        let tree = if exclusive && self.config.needs_tree {
            let dir = self.config.fifo_dir.as_ref().unwrap_or(&self.config.root);
            let alive: Vec<SessionId> = sessions.into_iter().flatten().collect();
            self.backend
                .snapshot(dir)
                .await
                .ok()
                .map(|nodes: Vec<NodeInfo>| mirror(&nodes, &alive))
        } else {
            None
        };
        let now = self.backend.now_ns();
        let mut run = self.lock();
        for outcome in outcomes {
            if let Some(observation) = outcome.observed() {
                run.stats.count_outcome(&observation);
                run.observe(now, self.client, Seen::Outcome(observation), tree.as_ref());
            }
            let slot = &mut run.clients[self.client];
            slot.outcomes.push_back(outcome);
            if let Some(waker) = slot.app_waker.take() {
                waker.wake();
            }
        }
    }

    /// Sends one request, with the per-request fault the seed draws for it.
    async fn send(
        &self,
        conn: &mut dyn Connection,
        link: &mut Link,
        request: &Request,
        phase: Phase,
    ) {
        link.sent += 1;
        let now = self.backend.now_ns();
        let loss = {
            let mut run = self.lock();
            run.stats.requests += 1;
            if request.is_read() {
                run.observe(now, self.client, Seen::Read, None);
            }
            let Run {
                request_faults,
                fault_rng,
                ..
            } = &mut *run;
            let fault = request_faults.for_request(self.client, link.sent, fault_rng);
            let loss = match (phase, &fault) {
                (Phase::Faults, Some(Fault::LoseRequest { down_ms })) => {
                    Some(RequestLoss::BeforeApply { down_ms: *down_ms })
                }
                (Phase::Faults, Some(Fault::LoseReply { down_ms })) => {
                    Some(RequestLoss::AfterApply { down_ms: *down_ms })
                }
                _ => None,
            };
            if let (Some(_), Some(fault)) = (loss, fault) {
                run.record_fault(now, self.client, fault);
            }
            loss
        };
        let (before, result) = conn.apply(request, loss).await;
        self.deliver_events(before);
        let mut run = self.lock();
        let session = &mut run.clients[self.client].session;
        session.now_ms = self.backend.now_ns() / 1_000_000;
        if !session.in_flight.is_empty() {
            session.reply(result, 0);
        }
        if let Some(RequestLoss::BeforeApply { down_ms } | RequestLoss::AfterApply { down_ms }) =
            loss
        {
            session.disconnected();
            let now = self.backend.now_ns();
            link.down_until = now + down_ms * 1_000_000;
            link.drop_unseen_since = Some(now);
        }
    }

    /// Injects a time-triggered fault.
    async fn inject(&self, conn: &mut dyn Connection, link: &mut Link, fault: Fault, now: u64) {
        match &fault {
            Fault::Disconnect { down_ms } => {
                conn.disconnect(*down_ms);
                link.down_until = now + down_ms * 1_000_000;
                link.drop_unseen_since = Some(now);
                self.lock().clients[self.client].session.disconnected();
            }
            Fault::Expire => {
                if conn.expire().await.is_err() {
                    return; // the session was already gone: nothing struck
                }
                let mut run = self.lock();
                if run.sessions[self.client].take().is_some() {
                    run.observe(now, self.client, Seen::SessionEnded, None);
                }
            }
            // The session layer learns of it from the client library, at
            // the library's read timeout (`sync_state`).
            Fault::Silent { down_ms } => conn.silence(*down_ms),
            Fault::Pause { pause_ms } => {
                conn.pause();
                link.paused_until = Some(now + pause_ms * 1_000_000);
                self.lock().clients[self.client].paused = true;
            }
            // Refused before the run (`crate::scenario::unsupported`); per-request
            // faults never arrive by time.
            _ => return,
        }
        self.lock().record_fault(now, self.client, fault);
    }

    /// The next moment something is due: a recipe timer, a fault, an
    /// emulated reconnect attempt, the end of a drop.
    fn next_wake(&self, link: &Link, now: u64) -> u64 {
        let run = self.lock();
        let session = &run.clients[self.client].session;
        let mut at = now + IDLE_MS * 1_000_000;
        if let Some((due_ms, _)) = session.next_timer() {
            at = at.min(due_ms * 1_000_000);
        }
        if let Some((fault_at, _)) = self.faults.front() {
            at = at.min(*fault_at);
        }
        if let Some(attempt) = link.next_attempt {
            at = at.min(attempt);
        }
        if link.down_until > now {
            at = at.min(link.down_until);
        }
        if let Some(give_up) = link.gives_up_at {
            at = at.min(give_up);
        }
        at
    }

    /// Waits until the connection has news, the application called, the
    /// run changed phase, or `ms` passed.
    async fn wait(&self, conn: Option<&mut dyn Connection>, ms: u64) {
        let mut changed: BoxFuture<'_, ()> = match conn {
            Some(conn) => conn.changed(),
            None => Box::pin(std::future::pending()),
        };
        let mut timeout = self.backend.sleep(ms);
        std::future::poll_fn(|cx| {
            if changed.as_mut().poll(cx).is_ready() || timeout.as_mut().poll(cx).is_ready() {
                return Poll::Ready(());
            }
            let mut run = self.lock();
            let closing = run.closing;
            let slot = &mut run.clients[self.client];
            if closing || !slot.calls.is_empty() {
                Poll::Ready(())
            } else {
                slot.conn_waker = Some(cx.waker().clone());
                Poll::Pending
            }
        })
        .await
    }
}

/// Whole ms from `now` until `at` (0 if past).
fn ms_until(now: u64, at: u64) -> u64 {
    at.saturating_sub(now).div_ceil(1_000_000)
}
