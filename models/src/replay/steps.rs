//! Applying one schedule step to the stepper, checked first as the model
//! checks it (a step the model would not allow is an error naming why),
//! and telling the oracles what the step showed.

use super::Replay;
use crate::model::{self, ModelRecipe};
use crate::schedule::{clip, ScheduleStep};
use crate::workload::Gate;
use zk_recipes::zk::SessionId;
use zk_sim::client::ConnectionState;
use zk_sim::oracles::{CallObservation, ObserveCall, Seen};
use zk_sim::stepper::Delivered;

impl<R: ModelRecipe> Replay<'_, R> {
    pub(super) fn apply(&mut self, step: &ScheduleStep) -> Result<(), String> {
        let server = usize::from(step.server.unwrap_or(0));
        if server >= self.model.servers {
            return Err(format!(
                "no server {server}: the model has {} server(s)",
                self.model.servers
            ));
        }
        let Some(c) = step.client else {
            return match step.op.as_str() {
                "reap" => self.reap(),
                "apply" => self.apply_log(server),
                "leader_loss" => self.leader_loss(),
                other => Err(format!("op {:?} needs a client", clip(other))),
            };
        };
        if c >= self.apps.len() {
            return Err(format!("no client {c}"));
        }
        match step.op.as_str() {
            "call" => self.call(c, step.call.as_deref().ok_or("a call step names its call")?),
            "send" => self.send(c, step.order.unwrap_or(0)),
            "deliver" => self.deliver(c, 0),
            "deliver_event_early" => self.deliver(c, usize::from(step.index.unwrap_or(0))),
            "fire_timer" => self
                .stepper
                .fire_next_timer(c)
                .then_some(())
                .ok_or_else(|| "no timer pending".to_string()),
            "reconnect" => self.reconnect(c, step.session, server),
            "reconnect_fails" => self
                .stepper
                .fail_reconnect_attempt(c)
                .then_some(())
                .ok_or_else(|| "no request queued on a disconnected client".to_string()),
            "learn_expiry" => self.learn_expiry(c, step.session, server),
            "disconnect" => {
                self.stepper.disconnect(c);
                Ok(())
            }
            "lose_reply" => {
                self.observe_read(c);
                self.stepper
                    .apply_then_disconnect(c)
                    .then_some(())
                    .ok_or_else(|| "nothing to send".to_string())
            }
            "lose_request" => self
                .stepper
                .lose_request(c)
                .then_some(())
                .ok_or_else(|| "nothing to send".to_string()),
            "expire" => self.expire(c, step.order.unwrap_or(0)),
            "client_expiry" => self.client_expiry(c, step.session, server),
            "expire_abandoned" => self.expire_abandoned(
                c,
                step.session
                    .ok_or("an expire_abandoned step names its session")?,
                step.order.unwrap_or(0),
            ),
            "leader_loss" => {
                Err("the leader is lost for every client: a leader_loss step names none".into())
            }
            "spurious_watch" => self.spurious(c, usize::from(step.watch.unwrap_or(0))),
            "reap" => Err("the server reaps, no client: a reap step names none".to_string()),
            "apply" => Err("a follower applies, no client: an apply step names none".to_string()),
            other => Err(format!("unknown op {other:?}")),
        }
    }

    /// The application makes its next call, as the model lets it: not while
    /// a call waits for its outcome, and skipping only steps with a gate
    /// (never an unconditional one).
    fn call(&mut self, c: usize, call_text: &str) -> Result<(), String> {
        if self.apps[c].pending.is_some() {
            return Err(format!(
                "client {c} still waits for the outcome of its previous call"
            ));
        }
        let workload = self.model.workload(c);
        let from = self.apps[c].cursor;
        let index = (from..workload.len())
            .find(|&i| format!("{:?}", workload[i].call) == call_text)
            .ok_or_else(|| {
                format!(
                    "client {c} has no call {} left in its workload",
                    clip(call_text)
                )
            })?;
        if let Some(skipped) = workload[from..index]
            .iter()
            .find(|step| step.gate == Gate::Always)
        {
            return Err(format!(
                "client {c} must call {:?} before {}",
                skipped.call,
                clip(call_text)
            ));
        }
        let call = workload[index].call.clone();
        let observed = call.observe_call();
        self.seen(c, Seen::Call(observed.clone()));
        let app = &mut self.apps[c];
        app.cursor = index + 1;
        app.pending = Some(app.holding);
        if observed == CallObservation::Release {
            app.holding = false;
        }
        self.stepper.call(c, call);
        Ok(())
    }

    pub(super) fn send(&mut self, c: usize, order: u16) -> Result<(), String> {
        self.observe_read(c);
        self.stepper
            .send_in_order(c, order)
            .then_some(())
            .ok_or_else(|| "nothing to send".to_string())
    }

    fn observe_read(&mut self, c: usize) {
        let reads = self
            .stepper
            .client(c)
            .outgoing
            .front()
            .is_some_and(|(_, request, _)| request.is_read());
        if reads && self.stepper.state(c) == ConnectionState::Connected {
            self.seen(c, Seen::Read);
        }
    }

    pub(super) fn deliver(&mut self, c: usize, index: usize) -> Result<(), String> {
        match self.stepper.deliver_at(c, index) {
            None => Err(format!("nothing at inbox index {index}")),
            Some(Delivered::Event { fired: true }) => {
                self.seen(c, Seen::WatchFired);
                Ok(())
            }
            Some(_) => Ok(()),
        }
    }

    /// A disconnected client reconnects into its session, or learns that
    /// it expired (then `session` is the new one's id).
    fn reconnect(&mut self, c: usize, session: Option<i64>, server: usize) -> Result<(), String> {
        let state = self.stepper.state(c);
        if state != ConnectionState::Disconnected {
            return Err(format!("the client is {state:?}, not disconnected"));
        }
        let alive = self
            .stepper
            .server()
            .is_session_alive(self.stepper.session_id(c));
        if session.is_some() || !alive {
            return self.learn_expiry(c, session, server);
        }
        self.stepper
            .reconnect_to(c, server)
            .map_err(|refused| format!("refused: {refused}"))
    }

    pub(super) fn learn_expiry(
        &mut self,
        c: usize,
        session: Option<i64>,
        server: usize,
    ) -> Result<(), String> {
        let sid = self.stepper.session_id(c);
        if self.stepper.server().is_session_alive(sid) {
            return Err("the session is still alive on the server".to_string());
        }
        if let Some(at) = self.stepper.ensemble().and_then(|e| e.server_of(sid)) {
            return Err(format!(
                "server {at}, the client's, has not applied the session's expiry yet"
            ));
        }
        if self.apps[c].generation == u8::MAX {
            return Err(format!(
                "client {c} already had {} sessions, the model's limit",
                u16::from(u8::MAX) + 1
            ));
        }
        if self.stepper.state(c) == ConnectionState::Expired {
            return Err("the client already learned its session expired".to_string());
        }
        self.stepper.notice_expiry(c);
        self.open_next_session(c, session, server)
    }

    /// The client's current session has ended for it (it learned the
    /// server's expiry or gave up): it opens its next one at `server`.
    fn open_next_session(
        &mut self,
        c: usize,
        session: Option<i64>,
        server: usize,
    ) -> Result<(), String> {
        self.observe_outcomes();
        self.apps[c].generation += 1;
        let next = self.model.session_id(c, self.apps[c].generation).0;
        if session.is_some_and(|id| id != next) {
            return Err(format!(
                "expected new session {next}, the schedule says {session:?}"
            ));
        }
        self.stepper.new_session_on(c, next, server);
        Ok(())
    }

    /// A disconnected client gives up on a session the server still has
    /// (client-side expiry) and opens `session` at `server`.
    fn client_expiry(
        &mut self,
        c: usize,
        session: Option<i64>,
        server: usize,
    ) -> Result<(), String> {
        let state = self.stepper.state(c);
        if state != ConnectionState::Disconnected {
            return Err(format!("the client is {state:?}, not disconnected"));
        }
        let sid = self.stepper.session_id(c);
        if !self.stepper.server().is_session_alive(sid) {
            return Err("the server already ended the session: the client learns it".into());
        }
        if self.apps[c].generation == u8::MAX {
            return Err(format!(
                "client {c} already had {} sessions, the model's limit",
                u16::from(u8::MAX) + 1
            ));
        }
        let next = self.model.session_id(c, self.apps[c].generation + 1).0;
        if session.is_some_and(|id| id != next) {
            return Err(format!(
                "expected new session {next}, the schedule says {session:?}"
            ));
        }
        self.stepper.give_up_session(c);
        self.open_next_session(c, session, server)
    }

    /// The server expires `session`, one client `c` gave up on earlier.
    pub(super) fn expire_abandoned(
        &mut self,
        c: usize,
        session: i64,
        order: u16,
    ) -> Result<(), String> {
        let abandoned = (0..self.apps[c].generation)
            .any(|generation| self.model.session_id(c, generation).0 == session);
        if !abandoned {
            return Err(format!(
                "session {session} is not one client {c} had before its current one"
            ));
        }
        if !self
            .stepper
            .expire_session_on_server(SessionId(session), order)
        {
            return Err(format!("the server no longer has session {session}"));
        }
        self.seen(c, Seen::SessionEnded);
        Ok(())
    }

    /// The leader is lost: every connected client is disconnected.
    fn leader_loss(&mut self) -> Result<(), String> {
        let connected =
            (0..self.apps.len()).any(|c| self.stepper.state(c) == ConnectionState::Connected);
        if !connected {
            return Err("no client is connected".to_string());
        }
        self.stepper.leader_loss();
        self.observe_outcomes();
        Ok(())
    }

    /// Follower `server` applies its next committed transaction.
    fn apply_log(&mut self, server: usize) -> Result<(), String> {
        if server == 0 {
            return Err("server 0 leads: it applies each transaction as it commits".to_string());
        }
        self.stepper
            .apply(server)
            .then_some(())
            .ok_or_else(|| format!("server {server} has applied every committed transaction"))
    }

    fn expire(&mut self, c: usize, order: u16) -> Result<(), String> {
        if !self
            .stepper
            .server()
            .is_session_alive(self.stepper.session_id(c))
        {
            return Err("the session already expired".to_string());
        }
        self.stepper.expire_on_server_in_order(c, order);
        self.seen(c, Seen::SessionEnded);
        Ok(())
    }

    /// The server reaps its empty containers, as the model lets it: only
    /// when there is one.
    fn reap(&mut self) -> Result<(), String> {
        if !model::can_reap(self.stepper.server()) {
            return Err("no empty container that had a child to reap".to_string());
        }
        self.stepper.reap();
        Ok(())
    }

    /// The `watch`-th armed watch (data, exist, then child) fires for nothing.
    fn spurious(&mut self, c: usize, watch: usize) -> Result<(), String> {
        let event = self
            .stepper
            .client(c)
            .watches
            .nth_armed_event(watch)
            .ok_or_else(|| format!("no armed watch number {watch}"))?;
        // An injected fault: not a wakeup the herd oracle counts.
        self.stepper.fire_armed_watch(c, event);
        Ok(())
    }
}
