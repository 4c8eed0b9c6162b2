//! [`RecipeModel`]: the generic stateright model of one recipe machine type
//! run by several clients against the in-memory server, with faults as
//! budgeted actions. Per-recipe modules (`lock.rs`, ...) build it with their
//! setup, workload, oracles and properties.
//!
//! This file is the model's floor: what a model is (its clients, budget,
//! options, the recipe's renaming as functions `crate::canonical` fills in)
//! and the queries the transitions and properties ask of it. How it moves
//! (its initial state, its actions, stateright's `Model`) is
//! `crate::moves`, above the transitions.

use crate::faults::FaultBudget;
pub use crate::setup::ChildOrderMode;
use crate::setup::{Canonical, InitialState};
use crate::state::{session_id, ClientId, ModelState};
use crate::workload::WorkStep;
use stateright::Property;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use zk_recipes::zk::Acls;
use zk_recipes::zk::{Path, Request, SessionId};
use zk_recipes::{Observe, Recipe};
use zk_sim::client::ConnectionState;
use zk_sim::oracles::ObserveCall;
use zk_sim::server::{NodeKind, ServerConfig, SortedOrder, ZkServer};

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
pub(crate) const SETUP_SESSION: SessionId = SessionId(1);

/// Most sessions one client may have (its generation is a `u8`).
pub(crate) const SESSIONS_PER_CLIENT: i64 = 256;

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
    pub(crate) renamable: Option<Renamable<R>>,
    /// Explore one order of independent, invisible client steps instead of
    /// all of them (see [`crate::reduction`]).
    pub reduction: bool,
    /// Acquire/release cycles per client of a hold workload (recorded in
    /// schedules, so a replay builds the same workload).
    pub cycles: usize,
    /// Servers: 1 (the plain server) or an ensemble of a leader (server 0)
    /// and followers that apply the log on [`Action::Apply`](crate::action::Action::Apply).
    pub servers: usize,
    /// With an ensemble: no write commits while a follower lags this many
    /// transactions (it must apply first).
    pub max_lag: usize,
    /// With an ensemble: a reconnect waits for the leader's revalidation
    /// (see [`crate::setup::Setup::revalidate`]).
    pub revalidate: bool,
    pub(crate) properties: Vec<Property<RecipeModel<R>>>,
    /// The requests that create the recipe's own nodes existing before the
    /// clients start.
    pub(crate) setup: Vec<Request>,
    /// What else the server holds when the clients start, and how their
    /// sessions are numbered.
    pub(crate) start: InitialState,
    pub(crate) setup_paths: BTreeSet<Path>,
    /// Every item an `Offer` call of the workload offers: (producer, index
    /// among its offers).
    pub(crate) offers: BTreeMap<Vec<u8>, (ClientId, usize)>,
    /// The initial state: the setup server with every client connected.
    pub(crate) init: ModelState<R>,
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
    pub(crate) fn can_learn_expiry(&self, state: &ModelState<R>, client: ClientId) -> bool {
        let sid = state.clients[client].session_id;
        !state.is_alive(client) && state.server.server_of(sid).is_none()
    }

    /// Every client has made every call and has every outcome.
    pub fn is_done(&self, state: &ModelState<R>) -> bool {
        state.clients.iter().enumerate().all(|(c, client)| {
            client.pending.is_none() && usize::from(client.next_step) >= self.workload(c).len()
        })
    }

    /// The client is done, idle, holds nothing and owns no node or watch:
    /// nothing that happens to its session can matter to anyone.
    pub(crate) fn is_inert(&self, state: &ModelState<R>, client: ClientId) -> bool {
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
    pub(crate) fn has_progress(&self, state: &ModelState<R>, client: ClientId) -> bool {
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

/// What a recipe's renaming allows, recorded when a model is built for a
/// recipe that declares one.
#[derive(Clone, Debug)]
pub struct Renamable<R: ModelRecipe> {
    /// The recipe may be renamed client for client (`RenameRecipe::SYMMETRIC`).
    pub symmetric: bool,
    /// Clients with the same workload share a class (see `crate::canonical`).
    pub(crate) classes: Vec<usize>,
    /// The slots of the classes (`crate::canonical`).
    pub(crate) slots: Vec<usize>,
    pub(crate) canonical: CanonicalFn<R>,
    /// The same form without the memo.
    pub(crate) direct: CanonicalFn<R>,
    pub(crate) renamed: RenamedFn<R>,
}

/// The canonical form (`crate::canonical`) for one recipe type.
pub(crate) type CanonicalFn<R> = fn(&RecipeModel<R>, &ModelState<R>, &Canonical) -> ModelState<R>;

/// A renamed state (`crate::canonical`) for one recipe type.
pub(crate) type RenamedFn<R> = fn(&RecipeModel<R>, &ModelState<R>, &[usize], bool) -> ModelState<R>;

impl<R: ModelRecipe> Renamable<R> {
    /// The canonical form of `state`.
    pub fn apply(
        &self,
        model: &RecipeModel<R>,
        state: &ModelState<R>,
        form: Canonical,
    ) -> ModelState<R> {
        (self.canonical)(model, state, &form)
    }

    /// The canonical form of `state` computed without the per-thread memo
    /// of renamed parts (for the self-check: both must agree).
    pub fn apply_direct(
        &self,
        model: &RecipeModel<R>,
        state: &ModelState<R>,
        form: Canonical,
    ) -> ModelState<R> {
        (self.direct)(model, state, &form)
    }

    /// `state` with client `c` renamed to `order[c]` (and, with `ranks`,
    /// its numbers ranked): one member of its class, for the self-check.
    pub fn renamed(
        &self,
        model: &RecipeModel<R>,
        state: &ModelState<R>,
        order: &[usize],
        ranks: bool,
    ) -> ModelState<R> {
        (self.renamed)(model, state, order, ranks)
    }
}
