//! A synchronous driver for unit tests: steps recipe machines against the
//! in-memory server in an order the test chooses, and injects faults (a reply
//! lost after the server applied the request, a disconnect, a reconnect, an
//! expiry) at chosen steps. Known bugs are pinned here with explicit step
//! orders before the simulator and the model checker rediscover them.
//!
//! The network is collapsed: `send` applies a client's next request on the
//! server at once and queues the reply in that client's inbox, behind any
//! notification already queued for it; `deliver` hands the inbox's head to
//! the client. A dropped connection loses the whole inbox, as a TCP
//! connection would; lost notifications come back through watch
//! re-registration on reconnect.
//!
//! The stepper keeps a diagnosis [`History`] as the simulated world does,
//! fed at the same points: requests applied with their results, replies
//! delivered or lost with a connection, requests lost before the server
//! saw them, node events delivered and whether the recipe acted on them,
//! sessions the server ended, reaped nodes, outcomes. The stepper has no
//! clock of its own for it: the driver sets the history's time
//! ([`Stepper::set_time_ns`], e.g. one millisecond per step) and builds
//! the [`Scene`] a violation is diagnosed in ([`Stepper::scene`]).
//!
//! **Ensemble mode** ([`Stepper::use_ensemble`]): the server becomes an
//! [`Ensemble`] of a leader (server 0) and followers that apply the
//! committed log only when the driver says ([`Stepper::apply`]). A client
//! is connected to one server ([`Stepper::add_client_on`],
//! [`Stepper::reconnect_to`], [`Stepper::new_session_on`]); its reads are
//! answered from that server's applied state behind its own writes, and
//! the reply to a write waits until its server applied it; a session that
//! reconnects waits for the leader's revalidation unless
//! [`Stepper::revalidate_reconnects`] turns it off. Oracles judge
//! the committed state ([`Stepper::server`]). This is how model checker
//! counterexamples of `check --servers 2` replay.
//!
//! A request "goes on the wire" (the world's `sent`) when the recipe emits
//! it while connected, or when its connection comes back: the simulated
//! world sends at once what the stepper keeps queued until `send`.

mod faults;

use crate::client::{ClientSession, ConnectionState};
use crate::diagnosis::{ClientScene, History, Scene};
use crate::ensemble::{Ensemble, EnsembleEvent, ServerIndex};
use crate::oracles::SimNanos;
use crate::server::{
    ChildOrder, Notification, PermutedOrder, ServerConfig, ShuffledOrder, ZkServer,
};
use rand::rngs::SmallRng;
use rand::SeedableRng;
use std::collections::{BTreeMap, VecDeque};
use std::fmt::Write as _;
use zk_recipes::zk::{Path, Request, SessionId, WatchedEvent, ZkResult, Zxid};
use zk_recipes::{Observe, Recipe};

/// Index of a client in the stepper.
pub type ClientId = usize;

/// Session timeout the stepper's sessions are opened with (expiry is only
/// ever explicit in the stepper).
pub const STEPPER_SESSION_TIMEOUT_MS: u64 = 10_000;

/// Something on its way from the server to a client.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Inbound {
    Reply { result: ZkResult, zxid: Zxid },
    Event(WatchedEvent),
}

/// What [`Stepper::deliver_at`] handed to the client.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Delivered {
    Reply,
    /// A watch event; `fired` when an armed watch took it to the recipe.
    Event {
        fired: bool,
    },
}

struct SteppedClient<R: Recipe> {
    session: ClientSession<R>,
    inbox: VecDeque<Inbound>,
    /// The application's last call and when (the history's time).
    last_call: Option<(SimNanos, R::Call)>,
    /// How many of `session.outcomes` the history has recorded.
    outcomes_recorded: usize,
}

/// Steps recipe machines of one type against one in-memory server.
pub struct Stepper<R: Recipe> {
    server: ZkServer,
    /// Ensemble mode: the servers (then `server` is unused).
    ensemble: Option<Ensemble>,
    /// Ensemble mode: a reconnect waits for the leader's revalidation
    /// ([`Stepper::revalidate_reconnects`]).
    revalidate: bool,
    clients: Vec<SteppedClient<R>>,
    child_order: SmallRng,
    /// getChildren results in sorted order instead of shuffled.
    sorted_children: bool,
    now_ms: u64,
    trace: String,
    /// What a diagnosis needs to remember (see the module documentation).
    history: History,
    /// The time the history records things at, set by the driver.
    history_ns: SimNanos,
    /// Which client each session belongs to.
    owners: BTreeMap<SessionId, ClientId>,
}

impl<R: Recipe<Outcome: Observe>> Default for Stepper<R> {
    fn default() -> Self {
        Self::new()
    }
}

impl<R: Recipe<Outcome: Observe>> Stepper<R> {
    /// A stepper whose getChildren results are shuffled with a fixed seed.
    pub fn new() -> Self {
        Self::with_child_order_seed(0)
    }

    /// A stepper whose getChildren results are shuffled with `seed`.
    pub fn with_child_order_seed(seed: u64) -> Self {
        Stepper {
            server: ZkServer::new(ServerConfig::default()),
            ensemble: None,
            revalidate: true,
            clients: Vec::new(),
            child_order: SmallRng::seed_from_u64(seed),
            sorted_children: false,
            now_ms: 0,
            trace: String::new(),
            history: History::default(),
            history_ns: 0,
            owners: BTreeMap::new(),
        }
    }

    /// A stepper whose getChildren results come sorted by name (as the
    /// model checker's do), unless a send asks for another order.
    pub fn with_sorted_children() -> Self {
        Stepper {
            sorted_children: true,
            ..Self::new()
        }
    }

    /// The server, e.g. to create parent nodes or set a sequence counter
    /// before the test starts (before [`Stepper::use_ensemble`]).
    pub fn server_mut(&mut self) -> &mut ZkServer {
        assert!(
            self.ensemble.is_none(),
            "set the server up before use_ensemble"
        );
        &mut self.server
    }

    /// The server, or the committed state of the ensemble (the leader's).
    pub fn server(&self) -> &ZkServer {
        match &self.ensemble {
            Some(ensemble) => ensemble.committed(),
            None => &self.server,
        }
    }

    /// The shared abstract state now ([`crate::abstraction`]): the
    /// committed tree and each client's session layer, every session a
    /// client had owned by it.
    pub fn shared_state(&self) -> u64 {
        let owner = |session| self.owners.get(&session).copied();
        let sessions = self.clients.iter().map(|client| &client.session);
        crate::abstraction::shared_state(self.server(), owner, sessions)
    }

    /// Ensemble mode: `servers` replicas of the server as it is now (set
    /// up, no session open), server 0 leading. Call before adding clients.
    pub fn use_ensemble(&mut self, servers: usize) {
        assert!(
            self.clients.is_empty() && self.ensemble.is_none(),
            "use_ensemble before adding clients, once"
        );
        self.ensemble = Some(Ensemble::from_server(self.server.clone(), servers));
    }

    /// Ensemble mode: whether a session that reconnects to a server is
    /// answered there only once that server applied every commit the
    /// leader had when it moved (true, the default: what a real 3.8 does,
    /// [`Ensemble::connect_revalidated`]) or at once from its own state
    /// (false: `check --unrevalidated-reconnects`, beyond 3.8).
    pub fn revalidate_reconnects(&mut self, revalidate: bool) {
        self.revalidate = revalidate;
    }

    /// The ensemble, in ensemble mode.
    pub fn ensemble(&self) -> Option<&Ensemble> {
        self.ensemble.as_ref()
    }

    /// Applies a request on the server for a helper session outside any
    /// recipe (setup and inspection); notifications go to the clients.
    pub fn admin(&mut self, request: &Request) -> ZkResult {
        const ADMIN: SessionId = SessionId(0x7fff_ffff_ffff_fff0);
        assert!(
            self.ensemble.is_none(),
            "admin requests go to the server before use_ensemble"
        );
        if !self.server.is_session_alive(ADMIN) {
            self.server
                .open_session(ADMIN, u64::MAX / 4)
                .expect("admin session");
        }
        let applied = self.apply_here(ADMIN, request);
        self.route(applied.notifications);
        applied.result
    }

    /// Adds a client, opens its session with the given id and delivers
    /// Connected (in ensemble mode: at server `client % servers`).
    pub fn add_client(&mut self, recipe: R, session_id: i64) -> ClientId {
        let server = self.clients.len() % self.ensemble.as_ref().map_or(1, Ensemble::servers);
        self.add_client_on(recipe, session_id, server)
    }

    /// As [`Stepper::add_client`], connected to `server` (ensemble mode;
    /// 0 otherwise). The client sends at once; a follower answers once it
    /// applied the session's opening.
    pub fn add_client_on(&mut self, recipe: R, session_id: i64, server: ServerIndex) -> ClientId {
        let id = self.clients.len();
        self.clients.push(SteppedClient {
            session: ClientSession::new(recipe),
            inbox: VecDeque::new(),
            last_call: None,
            outcomes_recorded: 0,
        });
        self.history.clients.push(Default::default());
        self.open_session(id, SessionId(session_id), server);
        id
    }

    /// After an expiry: the client gets a new handle with a new session id.
    pub fn new_session(&mut self, client: ClientId, session_id: i64) {
        self.new_session_on(client, session_id, 0);
    }

    /// As [`Stepper::new_session`], at `server` (ensemble mode).
    pub fn new_session_on(&mut self, client: ClientId, session_id: i64, server: ServerIndex) {
        assert_eq!(
            self.state(client),
            ConnectionState::Expired,
            "new_session after expiry only"
        );
        self.open_session(client, SessionId(session_id), server);
    }

    /// Delivers an application call.
    pub fn call(&mut self, client: ClientId, call: R::Call) {
        self.log(client, &format!("call {call:?}"));
        self.clients[client].last_call = Some((self.history_ns, call.clone()));
        self.input(client, |session| session.call(call));
    }

    /// The server applies the client's next outgoing request; the reply waits
    /// in the client's inbox. False if there was nothing to send.
    pub fn send(&mut self, client: ClientId) -> bool {
        self.send_in_order(client, 0)
    }

    /// As [`Stepper::send`], with a getChildren result arranged in the
    /// `order`-th permutation of sorted order (see [`PermutedOrder`]); 0
    /// keeps the stepper's own order.
    pub fn send_in_order(&mut self, client: ClientId, order: u16) -> bool {
        let Some((tag, request)) = self.clients[client].session.next_to_send() else {
            return false;
        };
        let session = self.session_id(client);
        if self.ensemble.is_some() {
            self.submit(client, session, tag, request, order);
            return true;
        }
        let applied = if order == 0 {
            self.apply_here(session, &request)
        } else {
            self.server
                .apply(session, &request, &mut PermutedOrder(order))
        };
        self.log(
            client,
            &format!("send {tag:?} {request:?} -> {:?}", applied.result),
        );
        self.history
            .applied(client, self.history_ns, session, &request, &applied.result);
        self.clients[client].inbox.push_back(Inbound::Reply {
            result: applied.result,
            zxid: applied.zxid,
        });
        self.route(applied.notifications);
        true
    }

    /// Ensemble mode: the request reaches the client's server. The history
    /// records a write when the leader commits it (its result), a read at
    /// once with the answer its server gives now (a read queued behind the
    /// session's own write is answered later, from a state at least as new).
    fn submit(
        &mut self,
        client: ClientId,
        session: SessionId,
        tag: zk_recipes::Tag,
        request: Request,
        order: u16,
    ) {
        let ensemble = self.ensemble.as_ref().expect("ensemble mode");
        let at = ensemble.server_of(session).unwrap_or(0);
        if request.is_write() {
            self.log(client, &format!("send {tag:?} {request:?} to server {at}"));
        } else {
            let result = ensemble
                .server(at)
                .clone()
                .serve_read(session, &request, &mut PermutedOrder(order))
                .result;
            self.log(
                client,
                &format!("send {tag:?} {request:?} to server {at} -> {result:?}"),
            );
            self.history
                .applied(client, self.history_ns, session, &request, &result);
        }
        let events = if self.sorted_children || order > 0 {
            self.ensemble_mut()
                .submit(session, request, &mut PermutedOrder(order))
        } else {
            let ensemble = self.ensemble.as_mut().expect("ensemble mode");
            ensemble.submit(session, request, &mut ShuffledOrder(&mut self.child_order))
        };
        self.dispatch(events);
    }

    /// Ensemble mode: follower `server` applies its next committed
    /// transaction; the watches it fires and the answers that become ready
    /// reach their clients. False if it had nothing to apply.
    pub fn apply(&mut self, server: ServerIndex) -> bool {
        let Some(ensemble) = self.ensemble.as_mut() else {
            return false;
        };
        if ensemble.lag(server) == 0 {
            return false;
        }
        let events = if self.sorted_children {
            ensemble.apply_next(server, &mut PermutedOrder(0))
        } else {
            ensemble.apply_next(server, &mut ShuffledOrder(&mut self.child_order))
        };
        let _ = writeln!(
            self.trace,
            "[{:>6} ms] server {server}: applies the next transaction",
            self.now_ms
        );
        self.dispatch(events);
        true
    }

    fn ensemble_mut(&mut self) -> &mut Ensemble {
        self.ensemble.as_mut().expect("ensemble mode")
    }

    /// Hands what the ensemble did to the clients: replies and watch
    /// events join the inboxes of connected clients.
    fn dispatch(&mut self, events: Vec<EnsembleEvent>) {
        for event in events {
            match event {
                EnsembleEvent::Notify(notification) => self.route(vec![notification]),
                EnsembleEvent::Reply { session, applied } => {
                    let target = self.clients.iter_mut().find(|c| {
                        c.session.session_id == Some(session)
                            && c.session.state == ConnectionState::Connected
                    });
                    if let Some(target) = target {
                        target.inbox.push_back(Inbound::Reply {
                            result: applied.result,
                            zxid: applied.zxid,
                        });
                    }
                }
                EnsembleEvent::Committed {
                    session,
                    request,
                    applied,
                } => {
                    let client = self
                        .clients
                        .iter()
                        .position(|c| c.session.session_id == Some(session));
                    if let Some(client) = client {
                        self.log(
                            client,
                            &format!("committed {request:?} -> {:?}", applied.result),
                        );
                        self.history.applied(
                            client,
                            self.history_ns,
                            session,
                            &request,
                            &applied.result,
                        );
                    }
                }
                EnsembleEvent::Opened { .. } | EnsembleEvent::Closed { .. } => {}
            }
        }
    }

    /// The client handles the head of its inbox. False if it was empty.
    pub fn deliver(&mut self, client: ClientId) -> bool {
        self.deliver_at(client, 0).is_some()
    }

    /// The client handles the inbox entry at `index` (beyond 0: an event
    /// overtaking what was queued before it). None if there is none.
    pub fn deliver_at(&mut self, client: ClientId, index: usize) -> Option<Delivered> {
        let inbound = self.clients[client].inbox.remove(index)?;
        self.log(client, &format!("deliver {inbound:?}"));
        match inbound {
            Inbound::Reply { result, zxid } => {
                self.history.reply_delivered(&result);
                self.input(client, |session| session.reply(result, zxid));
                Some(Delivered::Reply)
            }
            Inbound::Event(event) => Some(Delivered::Event {
                fired: self.notify(client, event),
            }),
        }
    }

    /// Sends if the client has something to send, else delivers.
    pub fn step(&mut self, client: ClientId) -> bool {
        self.send(client) || self.deliver(client)
    }

    /// Steps only this client until it has nothing to send or deliver.
    pub fn run_client(&mut self, client: ClientId) {
        while self.step(client) {}
    }

    /// Steps all clients round-robin until none can move. Timers do not fire.
    pub fn run(&mut self) {
        loop {
            let mut moved = false;
            for client in 0..self.clients.len() {
                moved |= self.step(client);
            }
            if !moved {
                return;
            }
        }
    }

    /// Advances the clock to the client's earliest timer and fires it.
    /// False if it has none pending.
    pub fn fire_next_timer(&mut self, client: ClientId) -> bool {
        let Some((due_ms, id)) = self.clients[client].session.next_timer() else {
            return false;
        };
        self.now_ms = self.now_ms.max(due_ms);
        self.sync_clocks();
        self.log(client, &format!("timer {id:?}"));
        self.input(client, |session| session.fire_timer(id))
    }

    // ---- inspection ----

    pub fn recipe(&self, client: ClientId) -> &R {
        &self.clients[client].session.recipe
    }

    pub fn client(&self, client: ClientId) -> &ClientSession<R> {
        &self.clients[client].session
    }

    pub fn outcomes(&self, client: ClientId) -> &[R::Outcome] {
        &self.clients[client].session.outcomes
    }

    /// The outcomes given since the last call (the history keeps them).
    pub fn take_outcomes(&mut self, client: ClientId) -> Vec<R::Outcome> {
        self.clients[client].outcomes_recorded = 0;
        std::mem::take(&mut self.clients[client].session.outcomes)
    }

    pub fn state(&self, client: ClientId) -> ConnectionState {
        self.clients[client].session.state
    }

    pub fn session_id(&self, client: ClientId) -> SessionId {
        self.clients[client]
            .session
            .session_id
            .expect("client has a session")
    }

    /// One line per step so far: print it when a test fails.
    pub fn trace(&self) -> &str {
        &self.trace
    }

    // ---- diagnosis ----

    /// Sets the time the history records what happens next at (the
    /// stepper has no clock: a driver counts steps). It never goes back.
    pub fn set_time_ns(&mut self, at_ns: SimNanos) {
        self.history_ns = self.history_ns.max(at_ns);
    }

    /// What the history records its next entries at.
    pub fn time_ns(&self) -> SimNanos {
        self.history_ns
    }

    /// What a diagnosis remembers of the steps so far.
    pub fn history(&self) -> &History {
        &self.history
    }

    /// The stepper as a diagnosis sees it now. `done[c]`: client `c` waits
    /// for nothing (its workload, as far as the driver runs it, is over);
    /// `fifo_dir`: the directory the FIFO property is checked in, if any.
    pub fn scene<'a>(&'a self, done: &[bool], fifo_dir: Option<&'a Path>) -> Scene<'a> {
        let clients = self
            .clients
            .iter()
            .enumerate()
            .map(|(c, client)| {
                let done = done.get(c).copied().unwrap_or(true);
                ClientScene::of(&client.session, done, false, client.last_call.as_ref())
            })
            .collect();
        Scene {
            server: self.server(),
            clients,
            owners: &self.owners,
            history: &self.history,
            fifo_dir,
            heal_ms: None,
        }
    }

    // ---- internals ----

    fn open_session(&mut self, client: ClientId, session_id: SessionId, server: ServerIndex) {
        if let Some(ensemble) = &mut self.ensemble {
            let events = ensemble
                .open_session(
                    server,
                    session_id,
                    STEPPER_SESSION_TIMEOUT_MS,
                    &mut PermutedOrder(0),
                )
                .expect("stepper session ids must be unique");
            self.dispatch(events);
            self.log(
                client,
                &format!("session {session_id:?} opened at server {server}"),
            );
        } else {
            assert_eq!(server, 0, "one server: server 0");
            self.server
                .open_session(session_id, STEPPER_SESSION_TIMEOUT_MS)
                .expect("stepper session ids must be unique");
            self.log(client, &format!("session {session_id:?} opened"));
        }
        self.owners.insert(session_id, client);
        self.input(client, |session| session.connected(session_id));
    }

    /// A node event reaches the client's session layer; true if an armed
    /// watch took it to the recipe.
    fn notify(&mut self, client: ClientId, event: WatchedEvent) -> bool {
        let fires = self.clients[client].session.watches.would_fire(&event);
        self.history
            .event_delivered(client, self.history_ns, &event, fires);
        self.input(client, |session| session.notification(event))
    }

    /// Hands one input to the client's session layer, then records in the
    /// history what the recipe did with it.
    fn input<T>(&mut self, client: ClientId, give: impl FnOnce(&mut ClientSession<R>) -> T) -> T {
        let unsent = self.unsent_on_the_wire(client);
        let result = give(&mut self.clients[client].session);
        self.record_effects(client, unsent);
        result
    }

    /// Requests queued while connected: in the simulated world they are on
    /// the wire already.
    fn unsent_on_the_wire(&self, client: ClientId) -> usize {
        let session = &self.clients[client].session;
        if session.state == ConnectionState::Connected {
            session.outgoing.len()
        } else {
            0
        }
    }

    /// After an input: requests the recipe put on the wire (emitted while
    /// connected, or waiting for the connection that came back) and the
    /// outcomes it gave.
    fn record_effects(&mut self, client: ClientId, unsent_before: usize) {
        if self.unsent_on_the_wire(client) > unsent_before {
            self.history.sent(client, self.history_ns);
        }
        let stepped = &mut self.clients[client];
        for outcome in &stepped.session.outcomes[stepped.outcomes_recorded..] {
            if let Some(observation) = outcome.observed() {
                self.history.outcome(client, self.history_ns, &observation);
            }
        }
        stepped.outcomes_recorded = stepped.session.outcomes.len();
    }

    /// The client's connection drops: the replies on their way are lost,
    /// and so are the requests it had put on the wire (queued here), before
    /// the server saw them.
    fn record_connection_loss(&mut self, client: ClientId) {
        let stepped = &self.clients[client];
        if stepped.session.state != ConnectionState::Connected {
            return;
        }
        let now = self.history_ns;
        for inbound in &stepped.inbox {
            if matches!(inbound, Inbound::Reply { .. }) {
                self.history.reply_lost(client, now);
            }
        }
        for (_, request, _) in &stepped.session.outgoing {
            self.history.lost_before_apply(client, now, request);
        }
    }

    fn apply_here(&mut self, session: SessionId, request: &Request) -> crate::server::Applied {
        if self.sorted_children {
            return self.server.apply(session, request, &mut PermutedOrder(0));
        }
        let mut order = ShuffledOrder(&mut self.child_order);
        let order: &mut dyn ChildOrder = &mut order;
        self.server.apply(session, request, order)
    }

    fn route(&mut self, notifications: Vec<Notification>) {
        for notification in notifications {
            let target = self
                .clients
                .iter_mut()
                .find(|c| c.session.session_id == Some(notification.session));
            if let Some(target) = target {
                if target.session.state == ConnectionState::Connected {
                    target.inbox.push_back(Inbound::Event(notification.event));
                }
            }
        }
    }

    fn sync_clocks(&mut self) {
        match &mut self.ensemble {
            Some(ensemble) => ensemble.set_time_ms(self.now_ms as i64),
            None => self.server.set_time_ms(self.now_ms as i64),
        }
        for client in &mut self.clients {
            client.session.now_ms = self.now_ms;
        }
    }

    fn log(&mut self, client: ClientId, line: &str) {
        let _ = writeln!(self.trace, "[{:>6} ms] c{client}: {line}", self.now_ms);
    }
}

#[cfg(test)]
mod tests;
