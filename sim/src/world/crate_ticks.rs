//! The `zookeeper-client` crate's tick (0.11, session/mod.rs
//! `reset_timeout`, `serve_session`): a connected client wakes every tick,
//! 1/20 of the session timeout, on a grid that starts when the connection
//! is established (`Timer::interval`). At a tick it pings if it has sent
//! nothing for three ticks and no ping of its is out (`ping_timeout`, at
//! most 10 s), and drops the connection if it has heard nothing for eight
//! (its connection timeout, 2/5 of the session timeout). So an idle client
//! pings every 3 to 4 ticks, and a silence is noticed at the first tick
//! past eight ticks from the last byte received.
//!
//! The Java client pings on its own cadence (`WorldConfig::ping_interval_ms`,
//! `connection`); the world runs this one for a recipe whose
//! `CLIENT_LIBRARY` is the crate, and schedules only the ticks where the
//! client can ping.

use super::events::{Event, LocalTimer, ToServer};
use super::shared::{ms_to_ns, Shared, SimRecipe};
use crate::client::ConnectionState;

impl<R: SimRecipe> Shared<R> {
    /// The connection is established (a session opened or a reconnect
    /// into one): the tick grid starts now.
    pub(super) fn start_crate_ticks(&mut self, client: usize) {
        self.clients[client].tick_anchor_ns = self.now_ns();
        self.schedule_crate_ping_check(client);
    }

    /// The first tick of the client's current grid at or after `at_ns`.
    pub(super) fn crate_tick_at_or_after(&self, client: usize, at_ns: u64) -> u64 {
        let anchor = self.clients[client].tick_anchor_ns;
        let tick = ms_to_ns(self.config.crate_tick_ms());
        let ticks = at_ns.saturating_sub(anchor).div_ceil(tick);
        anchor.saturating_add(ticks.saturating_mul(tick))
    }

    /// Schedules the tick at which the client will have been idle long
    /// enough to ping, unless it sends before.
    fn schedule_crate_ping_check(&mut self, client: usize) {
        let idle = ms_to_ns(self.config.crate_ping_idle_ms());
        let due = self.clients[client].last_sent_ns.saturating_add(idle);
        let at = self.crate_tick_at_or_after(client, due.max(self.now_ns() + 1));
        self.clients[client].ping_check_ns = Some(at);
        let timer = LocalTimer::Ping;
        self.schedule(at, Event::Local { client, timer });
    }

    /// A tick the client scheduled to ping at: it pings if still idle, and
    /// schedules the next. A tick superseded (by a reconnect's new grid) or
    /// already served does nothing; the chain ends with the connection.
    pub(super) fn crate_ping_tick(&mut self, client: usize) {
        let now = self.now_ns();
        let slot = &self.clients[client];
        if slot.ping_check_ns.is_none_or(|due| now < due) {
            return;
        }
        self.clients[client].ping_check_ns = None;
        let slot = &self.clients[client];
        if slot.session.state != ConnectionState::Connected || slot.connecting.is_some() {
            return;
        }
        let idle = ms_to_ns(self.config.crate_ping_idle_ms());
        if now.saturating_sub(slot.last_sent_ns) >= idle {
            self.send_to_server(client, ToServer::Ping);
            if !self.hears_nothing(client) {
                // Its answer comes a round trip later; here it is what the
                // client last received.
                self.clients[client].link.last_recv_ns = now;
            }
        }
        self.schedule_crate_ping_check(client);
    }
}
