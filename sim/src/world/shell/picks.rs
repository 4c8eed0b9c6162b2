//! Explored runs: the requests that reach the server wait there, and the
//! choice tape picks which client's request the server applies next (a
//! state the search has seen ends the run); the ones still waiting go with
//! their client's connection.

use super::super::events::Event;
use super::super::shared::{trace, Shared, SimRecipe};
use zk_recipes::zk::Request;

/// Explored runs: how long the server lets requests gather before it picks
/// one (far above the fixed latency of an explored world, so a client
/// that answers a reply at once competes at the next pick).
const PICK_WINDOW_NS: u64 = 10_000_000;

impl<R: SimRecipe> Shared<R> {
    /// Explored runs: a request that reached the server waits for the
    /// server to pick it (a `ServerPick` a window later, so every client
    /// that has something to send by then competes).
    pub(super) fn hold_request(&mut self, client: usize, request: Request) {
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
    pub(super) fn server_pick(&mut self) {
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
    pub(super) fn lose_held(&mut self, client: usize) {
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
}
