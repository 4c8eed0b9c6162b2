//! [`RecipeModel`]: the generic stateright model of one recipe machine type
//! run by several clients against the in-memory server, with faults as
//! budgeted actions. Per-recipe modules (`lock.rs`, ...) build it with their
//! setup, workload, oracles and properties.

use crate::action::Action;
use crate::cached::Cached;
use crate::canonical::{Canonical, Renamable};
use crate::faults::{FaultBudget, FaultKind};
use crate::narrate::Narration;
use crate::server::ModelServer;
use crate::setup::InitialState;
use crate::state::Inbound;
use crate::state::{session_id, ClientId, ClientState, ModelState, Violations};
use crate::transition;
use crate::workload::WorkStep;
use stateright::{Model, Property};
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use zk_recipes::zk::Acls;
use zk_recipes::zk::{Path, Request, SessionId};
use zk_recipes::{Observe, Recipe};
use zk_sim::client::{ClientSession, ConnectionState};
use zk_sim::ensemble::Ensemble;
use zk_sim::oracles::ObserveCall;
use zk_sim::server::{NodeKind, PermutedOrder, ServerConfig, SortedOrder, ZkServer};

/// A recipe machine the model can check: its outcomes and calls map to
/// observations (the same ones the simulator's oracles use), and everything
/// can cross the checker's threads.
pub trait ModelRecipe:
    Recipe<Outcome: Observe + Send + Sync, Call: ObserveCall + Send + Sync> + Send + Sync + 'static
{
}

impl<R> ModelRecipe for R where
    R: Recipe<Outcome: Observe + Send + Sync, Call: ObserveCall + Send + Sync>
        + Send
        + Sync
        + 'static
{
}

/// Session timeout the model's sessions are opened with. The model's clock
/// never moves: sessions expire only through the `expiry` fault.
pub const MODEL_SESSION_TIMEOUT_MS: u64 = 10_000;

/// The session that creates the setup nodes (closed before the clients start).
const SETUP_SESSION: SessionId = SessionId(1);

/// Most sessions one client may have (its generation is a `u8`).
const SESSIONS_PER_CLIENT: i64 = 256;

/// Largest child count whose getChildren orders are enumerated.
pub const MAX_ENUMERATED_CHILDREN: usize = 5;

/// One client: its recipe machine as constructed, and its workload script.
#[derive(Clone, Debug)]
pub struct ClientSpec<R: Recipe> {
    pub recipe: R,
    pub workload: Vec<WorkStep<R::Call>>,
}

impl<R: Recipe> ClientSpec<R> {
    /// `count` clients: client `c` runs `recipe(c)` with `workload(c)`.
    pub fn many(
        count: usize,
        recipe: impl Fn(ClientId) -> R,
        workload: impl Fn(ClientId) -> Vec<WorkStep<R::Call>>,
    ) -> Vec<ClientSpec<R>> {
        (0..count)
            .map(|c| ClientSpec {
                recipe: recipe(c),
                workload: workload(c),
            })
            .collect()
    }
}

/// The workload steps of a barrier: entering and, for a double barrier, leaving.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BarrierSteps {
    pub enter: u8,
    pub leave: Option<u8>,
}

/// What the step-checked properties need to know about the recipe.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Oracles {
    /// At most this many clients may be notified of one change a release
    /// makes (a delete, or the deletions of an expired session).
    pub herd_bound: Option<usize>,
    /// The parent of the sequential contender nodes, for FIFO fairness: an
    /// exclusive acquisition must own the lowest-sequence child there.
    pub fifo_parent: Option<Path>,
    pub barrier: Option<BarrierSteps>,
    /// A semaphore's lease count.
    pub max_leases: Option<u32>,
    /// A queue's directory: acknowledged items not yet taken must be there.
    pub queue_dir: Option<Path>,
}

/// How the server orders getChildren results.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ChildOrderMode {
    /// Sorted by name: the smallest state space.
    #[default]
    Sorted,
    /// Every order is a separate branch (up to [`MAX_ENUMERATED_CHILDREN`]).
    AllOrders,
}

/// A property condition over the model.
pub type Condition<R> = fn(&RecipeModel<R>, &ModelState<R>) -> bool;

/// The model of one recipe (one variant) with a fixed set of clients.
#[derive(Clone)]
pub struct RecipeModel<R: ModelRecipe> {
    /// `recipe/variant`, for reports.
    pub name: String,
    pub clients: Vec<ClientSpec<R>>,
    pub faults: FaultBudget,
    pub child_order: ChildOrderMode,
    pub oracles: Oracles,
    /// The canonical form explored: client symmetry and rank abstraction
    /// (see [`crate::canonical`]); both need the recipe's renaming.
    pub canonical: Canonical,
    /// The recipe's renaming, if it declares one ([`Self::with_renaming`]).
    renamable: Option<Renamable<R>>,
    /// Explore one order of independent, invisible client steps instead of
    /// all of them (see [`crate::reduction`]).
    pub reduction: bool,
    /// Acquire/release cycles per client of a hold workload (recorded in
    /// schedules, so a replay builds the same workload).
    pub cycles: usize,
    /// Servers: 1 (the plain server) or an ensemble of a leader (server 0)
    /// and followers that apply the log on [`Action::Apply`].
    pub servers: usize,
    /// With an ensemble: no write commits while a follower lags this many
    /// transactions (it must apply first).
    pub max_lag: usize,
    /// With an ensemble: a reconnect waits for the leader's revalidation
    /// (see [`crate::setup::Setup::revalidate`]).
    pub revalidate: bool,
    properties: Vec<Property<RecipeModel<R>>>,
    /// The requests that create the recipe's own nodes existing before the
    /// clients start.
    setup: Vec<Request>,
    /// What else the server holds when the clients start, and how their
    /// sessions are numbered.
    start: InitialState,
    setup_paths: BTreeSet<Path>,
    /// Every item an `Offer` call of the workload offers: (producer, index
    /// among its offers).
    offers: BTreeMap<Vec<u8>, (ClientId, usize)>,
    /// The initial state: the setup server with every client connected.
    init: ModelState<R>,
    /// The condition of an `eventually` property whose counterexample is
    /// being searched as an `always` property over terminal states (see
    /// [`crate::run`]).
    pub(crate) terminal_goal: Option<Condition<R>>,
    /// Set when a time-bounded search must stop: every state then has no
    /// successor, so the checker drains its queue and returns (see
    /// [`crate::run::check`]; stateright's own timeout holds a lock while
    /// it sleeps and slows its workers a hundredfold).
    pub(crate) stop: Arc<AtomicBool>,
}

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
    fn start_clients(&mut self) {
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

    pub fn with_reduction(mut self, reduction: bool) -> Self {
        self.reduction = reduction;
        self
    }

    /// Explores canonical states: client symmetry, rank abstraction or both
    /// (see [`Self::canonical_error`] for when it cannot).
    pub fn with_canonical(mut self, canonical: Canonical) -> Self {
        self.canonical = canonical;
        self
    }

    /// Records the recipe's renaming, so the model can explore canonical
    /// states (builder style; every built-in recipe declares one).
    pub fn with_renaming(mut self) -> Self
    where
        R: zk_recipes::rename::RenameRecipe,
    {
        self.renamable = Some(Renamable::of(&self));
        self
    }

    /// Why the requested canonical form cannot be explored, if it cannot.
    pub fn canonical_error(&self) -> Option<String> {
        if self.canonical.is_identity() {
            return None;
        }
        let Some(renamable) = &self.renamable else {
            return Some(format!(
                "{} declares no renaming (implement zk_recipes::rename::RenameRecipe and build \
                 the model with `with_renaming`)",
                self.name
            ));
        };
        if self.canonical.symmetry && !renamable.symmetric {
            return Some(format!(
                "{} is not symmetric: it orders or chooses clients by their ids \
                 (RenameRecipe::SYMMETRIC is false); --ranks still applies",
                self.name
            ));
        }
        if self.servers > 1 {
            return Some("symmetry and ranks are not implemented on an ensemble yet".into());
        }
        if self.canonical.symmetry && !self.start.sequence_starts.is_empty() {
            // A stuck counter gives tied sequence numbers, which the FIFO
            // property and Curator 2.x order by name, client id first.
            return Some(
                "symmetry is not sound with an initial sequence counter (tied sequence numbers \
                 are ordered by name, client id first)"
                    .into(),
            );
        }
        if self.canonical.ranks && !self.start.sequence_starts.is_empty() {
            return Some(
                "ranks renumber sequence numbers from 0: not with an initial sequence counter"
                    .into(),
            );
        }
        None
    }

    /// The recipe's renaming, if it declares one.
    pub fn renamable(&self) -> Option<&Renamable<R>> {
        self.renamable.as_ref()
    }

    /// True when the model explores canonical states.
    pub fn is_canonical(&self) -> bool {
        !self.canonical.is_identity()
    }

    /// The canonical form of `state` (the state itself when none is asked).
    pub fn canonical_of(&self, state: &ModelState<R>) -> ModelState<R> {
        match &self.renamable {
            // `canonical_error` is the caller's to ask (the command line
            // refuses); the self-check renames asymmetric recipes on purpose.
            Some(renamable) if self.is_canonical() => renamable.apply(self, state, self.canonical),
            _ => state.clone(),
        }
    }

    /// The same model exploring concrete states (no canonical form).
    pub fn raw(&self) -> Self {
        self.clone().with_canonical(Canonical::default())
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

    pub fn with_child_order(mut self, mode: ChildOrderMode) -> Self {
        self.child_order = mode;
        self
    }

    /// A fresh server holding the setup nodes, with the initial state's
    /// nodes and sequence counters (what every run starts from).
    pub fn setup_server(&self) -> ZkServer {
        setup_server(&self.setup, &self.start)
    }

    /// The initial state the model starts from beyond the recipe's setup.
    pub fn initial_state(&self) -> &InitialState {
        &self.start
    }

    /// The id of `client`'s `generation`-th session (0 = first).
    pub fn session_id(&self, client: ClientId, generation: u8) -> SessionId {
        session_id(self.start.first_session, client, generation)
    }

    /// The nodes that exist before any client acts.
    pub fn setup_paths(&self) -> &BTreeSet<Path> {
        &self.setup_paths
    }

    /// Who offers `item`, and as which of its offers.
    pub fn offer_of(&self, item: &[u8]) -> Option<(ClientId, usize)> {
        self.offers.get(item).copied()
    }

    /// The workload of `client`.
    pub fn workload(&self, client: ClientId) -> &[WorkStep<R::Call>] {
        &self.clients[client].workload
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

    /// True when no action other than a fault is enabled.
    pub fn is_quiescent(&self, state: &ModelState<R>) -> bool {
        (0..state.clients.len()).all(|c| !self.has_progress(state, c))
            && !can_reap(&state.server)
            && state.server.max_lag() == 0
            && !self.has_abandoned(state)
    }

    /// Something may commit now: always with one server; with an ensemble
    /// while no follower lags `max_lag` transactions.
    pub fn may_commit(&self, state: &ModelState<R>) -> bool {
        self.servers == 1 || state.server.max_lag() < self.max_lag
    }

    /// The server `client`'s session is connected to (0 with one server).
    pub fn server_of(&self, state: &ModelState<R>, client: ClientId) -> usize {
        state
            .server
            .server_of(state.clients[client].session_id)
            .unwrap_or(0)
    }

    /// A connected client may learn its session expired: the leader ended
    /// it and (with an ensemble) the client's own server applied that.
    fn can_learn_expiry(&self, state: &ModelState<R>, client: ClientId) -> bool {
        let sid = state.clients[client].session_id;
        !state.is_alive(client) && state.server.server_of(sid).is_none()
    }

    /// Every client has made every call and has every outcome.
    pub fn is_done(&self, state: &ModelState<R>) -> bool {
        state.clients.iter().enumerate().all(|(c, client)| {
            client.pending.is_none() && usize::from(client.next_step) >= self.workload(c).len()
        })
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

    /// The client is done, idle, holds nothing and owns no node or watch:
    /// nothing that happens to its session can matter to anyone.
    fn is_inert(&self, state: &ModelState<R>, client: ClientId) -> bool {
        let c = &state.clients[client];
        c.pending.is_none()
            && usize::from(c.next_step) >= self.workload(client).len()
            && c.holding.is_none()
            && c.inbox.is_empty()
            && c.session.is_idle()
            && c.session.outgoing.is_empty()
            && c.session.timers.is_empty()
            && c.session.watches.armed_count() == 0
            && state.server.ephemerals_of(c.session_id).is_empty()
    }

    /// Can `client` move without a fault?
    fn has_progress(&self, state: &ModelState<R>, client: ClientId) -> bool {
        let c = &state.clients[client];
        if !c.inbox.is_empty() || !c.session.timers.is_empty() {
            return true;
        }
        if c.pending.is_none() && usize::from(c.next_step) < self.workload(client).len() {
            return true;
        }
        match c.session.state {
            ConnectionState::Connected => {
                !c.session.outgoing.is_empty() || self.can_learn_expiry(state, client)
            }
            ConnectionState::Disconnected => true,
            ConnectionState::Expired => false,
        }
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

    /// The generations of `client`'s sessions it gave up on that the server
    /// still has (oldest first).
    pub fn abandoned_generations<'a>(
        &'a self,
        state: &'a ModelState<R>,
        client: ClientId,
    ) -> impl Iterator<Item = u8> + 'a {
        let generation = state.clients[client].generation;
        (0..generation).filter(move |&g| state.server.is_session_alive(self.session_id(client, g)))
    }

    /// Some client gave up on a session the server still has.
    pub fn has_abandoned(&self, state: &ModelState<R>) -> bool {
        (0..state.clients.len()).any(|c| self.abandoned_generations(state, c).next().is_some())
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
}

impl<R: ModelRecipe> RecipeModel<R> {
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

/// A fresh server with the setup nodes, then the initial state's nodes and
/// sequence counters.
fn setup_server(setup: &[Request], start: &InitialState) -> ZkServer {
    let mut server = ZkServer::new(ServerConfig::default());
    server
        .open_session(SETUP_SESSION, MODEL_SESSION_TIMEOUT_MS)
        .expect("setup session");
    let nodes = start.nodes.iter().map(|node| {
        assert!(
            !node.mode.is_ephemeral() && !node.mode.is_sequential(),
            "initial node {}: {:?} is not persistent or container",
            node.path,
            node.mode
        );
        Request::Create {
            path: node.path.clone(),
            data: node.data.clone(),
            mode: node.mode,
            acl: Acls::Open,
        }
    });
    for request in setup.iter().cloned().chain(nodes) {
        let applied = server.apply(SETUP_SESSION, &request, &mut SortedOrder);
        assert!(
            applied.result.is_ok(),
            "setup request {request:?} failed: {:?}",
            applied.result
        );
    }
    for (parent, next) in &start.sequence_starts {
        server
            .set_sequence_counter(parent, *next)
            .unwrap_or_else(|error| panic!("sequence start on {parent}: {error:?}"));
    }
    server
        .close_session(SETUP_SESSION, &mut SortedOrder)
        .expect("setup session alive");
    server
}

/// The containers the server's reaper would delete now (`ZkServer::reap`,
/// ZooKeeper's ContainerManager): containers that had a child and have none
/// left, in path order. TTL nodes are never due: the model's clock does
/// not move.
pub fn reapable_containers(server: &ZkServer) -> Vec<Path> {
    server
        .paths()
        .into_iter()
        .filter(|path| is_reapable(server, path))
        .collect()
}

/// True when [`reapable_containers`] is not empty.
pub fn can_reap(server: &ZkServer) -> bool {
    server.paths().iter().any(|path| is_reapable(server, path))
}

fn is_reapable(server: &ZkServer, path: &Path) -> bool {
    server.node_kind(path) == Some(NodeKind::Container)
        && server.stat(path).is_some_and(|stat| stat.num_children == 0)
        // The counter counts creates: a container that never had a child is kept.
        && server.sequence_counter(path).is_some_and(|creates| creates > 0)
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
