//! How a model moves: its initial state (the setup server with every
//! client connected and settled), the actions enabled in a state, the
//! successor of an action (with narration for reports), and stateright's
//! [`Model`] over them (partial-order reduction and the canonical form
//! applied). Above what it calls: the model's definition and queries
//! (`crate::model`), the transitions, the properties and the reduction.

use crate::action::Action;
use crate::cached::Cached;
use crate::faults::{FaultBudget, FaultKind};
use crate::model::{
    can_reap, ChildOrderMode, ClientSpec, Condition, ModelRecipe, Oracles, RecipeModel,
    MAX_ENUMERATED_CHILDREN, MODEL_SESSION_TIMEOUT_MS, SESSIONS_PER_CLIENT, SETUP_SESSION,
};
use crate::narrate::Narration;
use crate::server::ModelServer;
use crate::setup::{Canonical, InitialState};
use crate::state::{ClientId, ClientState, Inbound, ModelState, Violations};
use crate::transition;
use stateright::{Model, Property};
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use zk_recipes::zk::{Request, SessionId};
use zk_recipes::{Observe, Recipe};
use zk_sim::client::{ClientSession, ConnectionState};
use zk_sim::ensemble::Ensemble;
use zk_sim::oracles::ObserveCall;
use zk_sim::server::{PermutedOrder, ServerConfig, ZkServer};

impl<R: ModelRecipe> RecipeModel<R> {
    /// Builds the model: applies `setup` (e.g. creating the lock's parent)
    /// on a fresh server and connects every client.
    pub fn new(
        name: impl Into<String>,
        setup: &[Request],
        clients: Vec<ClientSpec<R>>,
        faults: FaultBudget,
        oracles: Oracles,
    ) -> Self {
        assert!(!clients.is_empty(), "a model needs at least one client");
        for (client, spec) in clients.iter().enumerate() {
            assert!(
                spec.workload.len() <= usize::from(u8::MAX),
                "client {client}: a workload has at most {} steps",
                u8::MAX
            );
        }
        let offers = offers_of(&clients);
        let mut model = RecipeModel {
            name: name.into(),
            clients,
            faults,
            child_order: ChildOrderMode::Sorted,
            oracles,
            canonical: Canonical::default(),
            renamable: None,
            reduction: false,
            cycles: 1,
            servers: 1,
            max_lag: crate::setup::DEFAULT_LAG,
            revalidate: true,
            properties: Vec::new(),
            setup: setup.to_vec(),
            start: InitialState::default(),
            setup_paths: BTreeSet::new(),
            offers,
            terminal_goal: None,
            stop: Arc::new(AtomicBool::new(false)),
            init: ModelState {
                server: Cached::new(ModelServer::One(ZkServer::new(ServerConfig::default()))),
                clients: Vec::new(),
                budget: faults,
                fence: None,
                items: BTreeMap::new(),
                violations: Violations::default(),
            },
        };
        model.start_clients();
        model
    }

    /// Starts from `start` (nodes, sequence counters, session ids) on top
    /// of the recipe's own setup nodes (builder style).
    ///
    /// Panics when the state cannot be made: a node that cannot be created
    /// (it exists already, its parent is missing, it is ephemeral), a
    /// sequence start on a missing parent, a first session id below 2 (1 is
    /// the setup session's) or so large the ids overflow.
    pub fn with_initial_state(mut self, start: InitialState) -> Self {
        self.start = start;
        self.start_clients();
        self
    }

    /// Builds the setup server and connects every client to it.
    pub(crate) fn start_clients(&mut self) {
        let first = self.start.first_session.0;
        let last_offset =
            SESSIONS_PER_CLIENT * (SESSIONS_PER_CLIENT - 1) + self.clients.len() as i64;
        assert!(
            first > SETUP_SESSION.0 && first.checked_add(last_offset).is_some(),
            "first session id {first} is outside 2..={}",
            i64::MAX - last_offset
        );
        let server = self.setup_server();
        self.setup_paths = server.paths().into_iter().collect();
        let server = match self.servers {
            1 => ModelServer::One(server),
            n => ModelServer::Ensemble(Ensemble::from_server(server, n)),
        };
        self.init.server = Cached::new(server);
        self.init.clients.clear();
        self.init = self.connect_clients(self.init.clone());
    }

    /// Sets the properties to check (builder style), and the recipe's own
    /// invariants (`properties::recipe_invariant`) with them if its outcome
    /// type declares some (`Observe::INVARIANTS`).
    pub fn with_properties(mut self, properties: Vec<Property<RecipeModel<R>>>) -> Self {
        self.properties = properties;
        if !<R::Outcome as Observe>::INVARIANTS.is_empty() {
            self.properties.push(crate::properties::recipe_invariant());
        }
        self
    }

    /// Applies the setup's child order, symmetry, reduction and initial
    /// state (builder style; the recipe module applies its cycles).
    pub fn with_setup(mut self, setup: &crate::setup::Setup) -> Self {
        self.cycles = setup.cycles;
        assert!(setup.servers >= 1, "a model needs a server");
        assert!(
            setup.servers == 1 || setup.lag >= 1,
            "a follower must be allowed to lag at least one transaction"
        );
        self.servers = setup.servers;
        self.max_lag = setup.lag;
        self.revalidate = setup.revalidate;
        self.with_child_order(setup.child_order)
            .with_canonical(Canonical {
                symmetry: setup.symmetry,
                ranks: setup.ranks,
            })
            .with_reduction(setup.reduction)
            .with_initial_state(setup.initial.clone())
    }

    /// The concrete initial state (before any canonical form).
    pub fn initial(&self) -> ModelState<R> {
        self.init.clone()
    }

    /// Every action enabled in `state`, the partial-order reduction off.
    pub fn all_actions(&self, state: &ModelState<R>, actions: &mut Vec<Action>) {
        self.push_all_actions(state, actions);
    }

    /// The concrete successor of `state` by `action`.
    pub fn step(&self, state: &ModelState<R>, action: Action) -> ModelState<R> {
        let mut next = state.clone();
        transition::apply(self, &mut next, action, &mut Narration::off());
        next
    }

    /// Applies `action` with narration on: what happened, in readable lines.
    pub fn describe(&self, state: &ModelState<R>, action: Action) -> (ModelState<R>, Vec<String>) {
        let mut next = state.clone();
        let mut log = Narration::on();
        transition::apply(self, &mut next, action, &mut log);
        (next, log.into_lines())
    }

    /// True when no action at all, faults included, is enabled.
    pub fn is_terminal(&self, state: &ModelState<R>) -> bool {
        let mut actions = Vec::new();
        self.actions(state, &mut actions);
        actions.is_empty()
    }

    /// The same model checking only that every terminal state satisfies
    /// `goal`: the `always` form of an `eventually` property.
    pub fn terminal_goal_model(&self, name: &'static str, goal: Condition<R>) -> Self {
        let mut model = self.clone();
        model.terminal_goal = Some(goal);
        model.properties = vec![Property::always(
            name,
            |model: &Self, state: &ModelState<R>| {
                let goal = model.terminal_goal.expect("set with the property");
                goal(model, state) || !model.is_terminal(state)
            },
        )];
        model
    }

    fn connect_clients(&self, mut state: ModelState<R>) -> ModelState<R> {
        for (client, spec) in self.clients.iter().enumerate() {
            let id = self.session_id(client, 0);
            let servers = self.servers;
            let mut server = state.server.make_mut();
            match &mut *server {
                ModelServer::One(server) => server
                    .open_session(id, MODEL_SESSION_TIMEOUT_MS)
                    .expect("fresh session id"),
                // Client c starts on server c mod N; every follower has
                // applied the session's opening when the model starts.
                ModelServer::Ensemble(ensemble) => {
                    ensemble
                        .open_session(
                            client % servers,
                            id,
                            MODEL_SESSION_TIMEOUT_MS,
                            &mut PermutedOrder(0),
                        )
                        .expect("fresh session id");
                    for follower in 1..servers {
                        while ensemble.lag(follower) > 0 {
                            ensemble.apply_next(follower, &mut PermutedOrder(0));
                        }
                    }
                }
            }
            drop(server);
            let mut session = ClientSession::new(spec.recipe.clone());
            session.connected(id);
            state.clients.push(Cached::new(ClientState {
                session,
                session_id: id,
                inbox: VecDeque::new(),
                generation: 0,
                next_step: 0,
                pending: None,
                holding: None,
                last_call_failed: false,
            }));
        }
        for client in 0..state.clients.len() {
            transition::settle(self, &mut state, client, &mut Narration::off());
        }
        state
    }

    fn push_actions(&self, state: &ModelState<R>, client: ClientId, actions: &mut Vec<Action>) {
        let c = &state.clients[client];
        let alive = state.is_alive(client);
        // A fault on a finished client that holds nothing changes nothing
        // anyone can observe; it only burns budget. Skip it.
        let budget = if self.is_inert(state, client) {
            FaultBudget::NONE
        } else {
            state.budget
        };
        let may_commit = self.may_commit(state);
        let servers = self.servers as u8;
        if c.pending.is_none() && usize::from(c.next_step) < self.workload(client).len() {
            actions.push(Action::Call(client));
        }
        if !c.inbox.is_empty() {
            actions.push(Action::Deliver(client));
        }
        if !c.session.timers.is_empty() {
            actions.push(Action::FireTimer(client));
        }
        match c.session.state {
            ConnectionState::Connected => {
                // The server closed an expired session's connection: what
                // the client sends now fails, which is how it learns
                // (LearnExpiry), so requests wait for that.
                if let Some((_, request, _)) = c.session.outgoing.front().filter(|_| alive) {
                    // A write commits: not while a follower lags its most.
                    let sendable = may_commit || !request.is_write();
                    if sendable {
                        for order in 0..self.child_orders(state, client, request) {
                            actions.push(Action::Send { client, order });
                        }
                    }
                    if budget.allows(FaultKind::ConnectionLoss) {
                        if sendable {
                            actions.push(Action::LoseRequest {
                                client,
                                applied: true,
                            });
                        }
                        actions.push(Action::LoseRequest {
                            client,
                            applied: false,
                        });
                    }
                }
                if !alive {
                    // The new session's opening commits.
                    if may_commit && self.can_learn_expiry(state, client) {
                        actions.extend(
                            (0..servers).map(|server| Action::LearnExpiry { client, server }),
                        );
                    }
                } else if budget.allows(FaultKind::ConnectionLoss) {
                    actions.push(Action::Disconnect(client));
                }
                if budget.allows(FaultKind::Spurious) {
                    let armed = c.session.watches.armed_count().min(usize::from(u8::MAX));
                    actions
                        .extend((0..armed as u8).map(|watch| Action::Spurious { client, watch }));
                }
            }
            ConnectionState::Disconnected => {
                // Into the session at a server not behind the client; or,
                // the session gone, a new session (its opening commits).
                let last_zxid = c.session.last_zxid;
                for server in 0..servers {
                    let possible = if alive {
                        state.server.accepts(usize::from(server), last_zxid)
                    } else {
                        may_commit
                    };
                    if possible {
                        actions.push(Action::Reconnect { client, server });
                    }
                }
                if !c.session.outgoing.is_empty() {
                    actions.push(Action::ReconnectFails(client));
                }
                // The client gives up on a session the server still has
                // (its new session's opening commits).
                if alive
                    && may_commit
                    && c.generation < u8::MAX
                    && budget.allows(FaultKind::ClientExpiry)
                {
                    actions
                        .extend((0..servers).map(|server| Action::ClientExpiry { client, server }));
                }
            }
            ConnectionState::Expired => {}
        }
        if alive && may_commit && budget.allows(FaultKind::Expiry) {
            for order in 0..self.deletion_orders(state, c.session_id) {
                actions.push(Action::Expire { client, order });
            }
        }
        if may_commit {
            self.push_abandoned_expiries(state, client, actions);
        }
        if budget.allows(FaultKind::Reorder) {
            push_reorders(c, client, actions);
        }
    }

    /// How many orders the ephemerals of `session` may be deleted in when
    /// it expires (1 unless enumerated).
    fn deletion_orders(&self, state: &ModelState<R>, session: SessionId) -> u16 {
        if self.child_order == ChildOrderMode::Sorted {
            return 1;
        }
        let ephemerals = state.server.ephemerals_of(session).len();
        (1..=ephemerals.min(MAX_ENUMERATED_CHILDREN)).product::<usize>() as u16
    }

    /// The server may expire each session `client` gave up on.
    fn push_abandoned_expiries(
        &self,
        state: &ModelState<R>,
        client: ClientId,
        actions: &mut Vec<Action>,
    ) {
        for generation in self.abandoned_generations(state, client) {
            let session = self.session_id(client, generation);
            for order in 0..self.deletion_orders(state, session) {
                actions.push(Action::ExpireAbandoned {
                    client,
                    generation,
                    order,
                });
            }
        }
    }

    /// The leader may be lost while a client that could notice is connected.
    fn leader_loss_matters(&self, state: &ModelState<R>) -> bool {
        (0..state.clients.len()).any(|c| {
            state.clients[c].session.state == ConnectionState::Connected && !self.is_inert(state, c)
        })
    }

    /// How many orders a request's result may come in (1 unless enumerated).
    fn child_orders(&self, state: &ModelState<R>, client: ClientId, request: &Request) -> u16 {
        let path = match (self.child_order, request) {
            (
                ChildOrderMode::AllOrders,
                Request::GetChildren { path, .. } | Request::GetChildren2 { path, .. },
            ) => path,
            _ => return 1,
        };
        // The client's own server answers (with an ensemble, from what it
        // has applied).
        let server = match state.server.ensemble() {
            Some(ensemble) => ensemble.server(self.server_of(state, client)),
            None => state.server.committed(),
        };
        let children = server
            .paths()
            .iter()
            .filter(|p| p.parent().as_ref() == Some(path))
            .count();
        (1..=children.min(MAX_ENUMERATED_CHILDREN)).product::<usize>() as u16
    }

    fn push_all_actions(&self, state: &ModelState<R>, actions: &mut Vec<Action>) {
        for client in 0..state.clients.len() {
            self.push_actions(state, client, actions);
        }
        if can_reap(&state.server) && self.may_commit(state) {
            actions.push(Action::Reap);
        }
        if state.budget.allows(FaultKind::LeaderLoss) && self.leader_loss_matters(state) {
            actions.push(Action::LeaderLoss);
        }
        for server in 1..self.servers {
            if state.server.lag(server) > 0 {
                actions.push(Action::Apply {
                    server: server as u8,
                });
            }
        }
    }
}

/// Reorders: a watch event behind at least one reply may jump ahead, if a
/// watch for it is armed already (an event that overtook the reply arming
/// its watch would reach no watcher: a lost event, not a reordered one).
fn push_reorders<R: Recipe>(client: &ClientState<R>, id: ClientId, actions: &mut Vec<Action>) {
    let mut reply_before = false;
    for (index, inbound) in client.inbox.iter().enumerate().take(usize::from(u8::MAX)) {
        match inbound {
            Inbound::Reply { .. } => reply_before = true,
            Inbound::Event(event) if reply_before && client.session.watches.would_fire(event) => {
                actions.push(Action::Reorder {
                    client: id,
                    index: index as u8,
                })
            }
            Inbound::Event(_) => {}
        }
    }
}

fn offers_of<R: ModelRecipe>(clients: &[ClientSpec<R>]) -> BTreeMap<Vec<u8>, (ClientId, usize)> {
    let mut offers = BTreeMap::new();
    for (client, spec) in clients.iter().enumerate() {
        let items = spec
            .workload
            .iter()
            .filter_map(|step| match step.call.observe_call() {
                zk_sim::oracles::CallObservation::Offer { item } => Some(item),
                _ => None,
            });
        for (index, item) in items.enumerate() {
            let previous = offers.insert(item, (client, index));
            assert!(previous.is_none(), "workload items must be distinct");
        }
    }
    offers
}

impl<R: ModelRecipe> Model for RecipeModel<R> {
    type State = ModelState<R>;
    type Action = Action;

    fn init_states(&self) -> Vec<Self::State> {
        vec![self.canonical_of(&self.init)]
    }

    fn actions(&self, state: &Self::State, actions: &mut Vec<Self::Action>) {
        if self.stop.load(Ordering::Relaxed) {
            return;
        }
        if self.reduction {
            if let Some(step) = crate::reduction::invisible_step(self, state) {
                actions.push(step);
                return;
            }
        }
        self.push_all_actions(state, actions);
    }

    fn next_state(&self, last_state: &Self::State, action: Self::Action) -> Option<Self::State> {
        if self.reduction {
            if let Some(next) = crate::reduction::take_successor(last_state, action) {
                return Some(self.canonical_of(&next));
            }
        }
        let next = self.step(last_state, action);
        Some(match self.is_canonical() {
            true => self.canonical_of(&next),
            false => next,
        })
    }

    fn format_action(&self, action: &Self::Action) -> String {
        action.to_string()
    }

    fn format_step(&self, last_state: &Self::State, action: Self::Action) -> Option<String> {
        let (next, lines) = self.describe(last_state, action);
        Some(format!("{}\n\n{next:#?}", lines.join("\n")))
    }

    fn properties(&self) -> Vec<Property<Self>> {
        self.properties.clone()
    }
}
