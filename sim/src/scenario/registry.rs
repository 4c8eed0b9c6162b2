//! The simulator's side of the recipe registry: what a scenario can name.
//! A [`RecipeSpec`] is a name, a [`RecipeKind`] (which picks the workload
//! and the properties that apply), a default directory and its variants;
//! a [`SimVariant`] builds the simulation of one variant for a checked
//! scenario. This module knows no recipe by name: `zk_models::registry`
//! registers the built-in recipes and a user's own through the same door
//! and hands the list ([`SimRecipes`]) to [`super::Scenario::parse`].

use super::Scenario;
use crate::async_recipe::AsyncWorkload;
#[cfg(madsim)]
use crate::async_recipe::{ApiRecipe, Bridge, Context};
use crate::live::{live_runner, LiveClient, LiveRunner};
use crate::oracles::Property;
use crate::world::adapters::{BarrierCalls, HoldCalls, QueueCalls};
use crate::world::workloads::{barrier_rounds, hold_cycles, queue_traffic, WorkloadSpec};
use crate::world::{App, RunReport, SimRecipe};
#[cfg(madsim)]
use crate::world::{Client, Simulation};
use std::fmt;
use std::future::Future;
use std::sync::Arc;
use zk_recipes::zk::Path;

/// What a recipe coordinates: picks its workload and the properties that
/// mean something for it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum RecipeKind {
    /// One holder at a time.
    ExclusiveLock,
    /// Readers together or one writer.
    SharedLock,
    /// At most `max_leases` holders.
    Semaphore,
    /// One leader at a time.
    Election,
    /// Producers offer, consumers take, every item exactly once.
    Queue,
    /// Members enter together and leave together.
    Barrier,
}

impl RecipeKind {
    pub fn name(self) -> &'static str {
        match self {
            RecipeKind::ExclusiveLock => "exclusive lock",
            RecipeKind::SharedLock => "shared lock",
            RecipeKind::Semaphore => "semaphore",
            RecipeKind::Election => "leader election",
            RecipeKind::Queue => "queue",
            RecipeKind::Barrier => "barrier",
        }
    }

    /// The application workload the simulator runs for this kind.
    pub fn workload(self) -> WorkloadKind {
        match self {
            RecipeKind::Queue => WorkloadKind::Queue,
            RecipeKind::Barrier => WorkloadKind::Barrier,
            _ => WorkloadKind::Hold,
        }
    }

    /// The properties that mean something for this kind: asking a lock
    /// for `exactly_once` is an error, not a vacuous pass.
    pub fn applicable_properties(self) -> &'static [Property] {
        use Property::*;
        match self {
            // `node_churn` allows one node per acquisition attempt: a
            // semaphore's acquisition creates two (its lock's and its lease).
            RecipeKind::ExclusiveLock | RecipeKind::SharedLock => &[
                MutualExclusion,
                FencedMutualExclusion,
                Fifo,
                Herd,
                Liveness,
                NoLeaks,
                NodeChurn,
            ],
            RecipeKind::Semaphore => &[
                MutualExclusion,
                FencedMutualExclusion,
                Fifo,
                Herd,
                Liveness,
                NoLeaks,
            ],
            RecipeKind::Election => &[
                OneLeader,
                FencedMutualExclusion,
                Fifo,
                Herd,
                Liveness,
                NoLeaks,
                NodeChurn,
            ],
            // `fifo` on a queue: each consumer takes a producer's items in
            // offer order (on a lock or an election: acquisition order).
            RecipeKind::Queue => &[ExactlyOnce, Fifo, Liveness, NoLeaks],
            RecipeKind::Barrier => &[Barrier, Liveness, NoLeaks],
        }
    }

    /// What a scenario checks when it names no properties.
    pub fn default_properties(self) -> Vec<Property> {
        let mut properties = match self {
            RecipeKind::ExclusiveLock | RecipeKind::SharedLock | RecipeKind::Semaphore => {
                vec![Property::MutualExclusion, Property::FencedMutualExclusion]
            }
            RecipeKind::Election => vec![Property::OneLeader],
            RecipeKind::Queue => vec![Property::ExactlyOnce, Property::Fifo],
            RecipeKind::Barrier => vec![Property::Barrier],
        };
        properties.extend([Property::Liveness, Property::NoLeaks]);
        properties
    }
}

/// The shape of a recipe's application workload (`world::workloads`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WorkloadKind {
    /// Acquire, hold, release (locks, elections, semaphores).
    Hold,
    /// Producers offer, consumers take.
    Queue,
    /// Enter, work, leave.
    Barrier,
}

impl WorkloadKind {
    /// The `[workload]` keys this workload reads.
    pub fn keys(self) -> &'static [&'static str] {
        match self {
            WorkloadKind::Hold => &["cycles", "hold_ms", "think_ms", "use_resource"],
            WorkloadKind::Queue => &["producers", "items", "take_wait_ms", "think_ms"],
            WorkloadKind::Barrier => &["rounds", "arrive_ms", "work_ms", "think_ms"],
        }
    }
}

/// What a recipe constructor gets for one client of one run.
#[derive(Clone, Debug)]
pub struct ClientContext {
    /// The recipe's directory (`config.path`, or the recipe's default).
    pub path: Path,
    /// The client's index, 0-based.
    pub client: usize,
    /// A unique id for the client (drawn from the seed in a simulation;
    /// `client + 1` in a model).
    pub unique_id: u64,
    /// How many clients run.
    pub clients: usize,
    /// A semaphore's lease count (`config.max_leases`, default 1).
    pub max_leases: u32,
    /// A barrier's size (`config.barrier_size`, default: every client).
    pub barrier_size: usize,
    /// `config.hosts` (for a variant that declares it reads it).
    pub hosts: Option<String>,
    /// `config.node_mode` (for a variant that declares it reads it).
    pub node_mode: Option<String>,
}

impl ClientContext {
    /// The context of every client of `scenario` (client and id to fill in).
    fn of(scenario: &Scenario) -> ClientContext {
        let config = &scenario.raw.config;
        ClientContext {
            path: scenario.path.clone(),
            client: 0,
            unique_id: 0,
            clients: scenario.raw.clients,
            max_leases: config.max_leases.unwrap_or(1),
            barrier_size: config.barrier_size.unwrap_or(scenario.raw.clients),
            hosts: config.hosts.clone(),
            node_mode: config.node_mode.clone(),
        }
    }

    /// The context of client `client` of a model with `clients` clients
    /// and the recipe's directory at `path`.
    pub fn for_model(path: Path, client: usize, clients: usize) -> ClientContext {
        ClientContext {
            path,
            client,
            unique_id: client as u64 + 1,
            clients,
            max_leases: 1,
            barrier_size: clients,
            hosts: None,
            node_mode: None,
        }
    }
}

/// Runs one seed of a scenario, whatever its recipe type.
pub trait Runner: Send + Sync {
    fn run(&self, seed: u64, trace: bool) -> RunReport;
}

#[cfg(madsim)]
impl<R: SimRecipe> Runner for Simulation<R> {
    fn run(&self, seed: u64, trace: bool) -> RunReport {
        self.run_with_trace(seed, trace)
    }
}

/// Builds a variant's simulation for a checked scenario.
#[cfg(madsim)]
type BuildRunner = Arc<dyn Fn(&Scenario) -> Box<dyn Runner> + Send + Sync>;
/// A build without madsim's simulator (`--cfg madsim`) has no simulation
/// to build: it runs variants live only.
#[cfg(not(madsim))]
type BuildRunner = ();
/// Builds a variant's run against a real server for a checked scenario.
type BuildLive = Arc<dyn Fn(&Scenario) -> Box<dyn LiveRunner> + Send + Sync>;

/// One variant of a recipe, as the simulator runs it.
#[derive(Clone)]
pub struct SimVariant {
    pub name: String,
    /// What the variant is (one line, for listings).
    pub about: String,
    pub workload: WorkloadKind,
    /// The recipe's directory must exist before it runs (the code does
    /// not create it): a scenario creates it, or must list it in `parents`.
    pub needs_existing_path: bool,
    /// The `[config]` keys beyond `path`, `parents` and `sequence_start`
    /// this variant reads (`max_leases` is a semaphore's, `barrier_size` a
    /// barrier's, `hosts` and `node_mode` only where declared).
    pub config_keys: Vec<&'static str>,
    #[cfg_attr(not(madsim), allow(dead_code))]
    build: BuildRunner,
    /// None for an async recipe (its live run is its [`AsyncWorkload`]).
    build_live: Option<BuildLive>,
    /// An async recipe's workload: the user's code, run per client.
    async_workload: Option<AsyncWorkload>,
}

impl fmt::Debug for SimVariant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SimVariant")
            .field("name", &self.name)
            .field("workload", &self.workload)
            .finish_non_exhaustive()
    }
}

impl SimVariant {
    fn new(
        name: &str,
        about: &str,
        workload: WorkloadKind,
        build: BuildRunner,
        build_live: Option<BuildLive>,
    ) -> SimVariant {
        SimVariant {
            name: name.to_string(),
            about: about.to_string(),
            workload,
            needs_existing_path: false,
            config_keys: Vec::new(),
            build,
            build_live,
            async_workload: None,
        }
    }

    /// A recipe that is acquired and released (run by `hold_cycles`).
    pub fn hold<R: SimRecipe>(
        name: &str,
        about: &str,
        calls: HoldCalls<R::Call>,
        make: impl Fn(&ClientContext) -> R + Send + Sync + 'static,
    ) -> SimVariant
    where
        R::Call: Sync,
    {
        SimVariant::running(name, about, WorkloadKind::Hold, calls, make, Holds)
    }

    /// A queue (run by `queue_traffic`).
    pub fn queue<R: SimRecipe>(
        name: &str,
        about: &str,
        calls: QueueCalls<R::Call>,
        make: impl Fn(&ClientContext) -> R + Send + Sync + 'static,
    ) -> SimVariant
    where
        R::Call: Sync,
    {
        SimVariant::running(name, about, WorkloadKind::Queue, calls, make, Traffic)
    }

    /// A barrier (run by `barrier_rounds`).
    pub fn barrier<R: SimRecipe>(
        name: &str,
        about: &str,
        calls: BarrierCalls<R::Call>,
        make: impl Fn(&ClientContext) -> R + Send + Sync + 'static,
    ) -> SimVariant
    where
        R::Call: Sync,
    {
        SimVariant::running(name, about, WorkloadKind::Barrier, calls, make, Rounds)
    }

    /// A variant whose clients run the built-in `workload` (in the
    /// simulator and against a real server: the same code) with the
    /// scenario's `[workload]` and `calls`, on recipes built by `make`.
    fn running<R: SimRecipe, W: BuiltinWorkload<R>>(
        name: &str,
        about: &str,
        kind: WorkloadKind,
        calls: W::Calls,
        make: impl Fn(&ClientContext) -> R + Send + Sync + 'static,
        workload: W,
    ) -> SimVariant {
        let make: Arc<dyn Fn(&ClientContext) -> R + Send + Sync> = Arc::new(make);
        #[cfg(madsim)]
        let build: BuildRunner = {
            let (make, calls) = (make.clone(), calls.clone());
            Arc::new(move |scenario: &Scenario| {
                let (spec, calls) = (scenario.raw.workload.clone(), calls.clone());
                simulation(scenario, make.clone(), move |client: Client<R>| {
                    workload.run(client, spec.clone(), calls.clone())
                })
            })
        };
        #[cfg(not(madsim))]
        let build: BuildRunner = ();
        let build_live: BuildLive = Arc::new(move |scenario: &Scenario| {
            let (spec, calls) = (scenario.raw.workload.clone(), calls.clone());
            let context = ClientContext::of(scenario);
            let make = make.clone();
            live_runner(
                scenario.world_config(),
                move |client, unique_id| {
                    make(&ClientContext {
                        client,
                        unique_id,
                        ..context.clone()
                    })
                },
                move |client: LiveClient<R>| workload.run(client, spec.clone(), calls.clone()),
            )
        });
        SimVariant::new(name, about, kind, build, Some(build_live))
    }

    /// An async recipe: each client runs `workload` (the user's async code
    /// against the simulated `zookeeper-client`) with the shape of
    /// workload `kind` (which `[workload]` keys it reads).
    pub fn asynchronous(
        name: &str,
        about: &str,
        kind: WorkloadKind,
        workload: AsyncWorkload,
    ) -> SimVariant {
        #[cfg(madsim)]
        let build: BuildRunner = {
            let workload = workload.clone();
            Arc::new(move |scenario: &Scenario| {
                let (spec, path) = (scenario.raw.workload.clone(), scenario.path.to_string());
                let workload = workload.clone();
                Box::new(
                    Simulation::new(
                        scenario.world_config(),
                        |_, _| ApiRecipe::default(),
                        move |client| {
                            let bridge = Arc::new(Bridge::start(client));
                            workload(Context::new(bridge, spec.clone(), path.clone()))
                        },
                    )
                    .isolated(),
                )
            })
        };
        #[cfg(not(madsim))]
        let build: BuildRunner = ();
        SimVariant {
            async_workload: Some(workload),
            ..SimVariant::new(name, about, kind, build, None)
        }
    }

    /// The recipe's directory must exist before it runs.
    pub fn needs_existing_path(mut self) -> SimVariant {
        self.needs_existing_path = true;
        self
    }

    /// Declares `[config]` keys this variant reads (`hosts`, `node_mode`).
    pub fn reads_config(mut self, keys: &[&'static str]) -> SimVariant {
        self.config_keys.extend_from_slice(keys);
        self
    }

    /// The simulation of a checked scenario of this variant.
    #[cfg(madsim)]
    pub fn runner(&self, scenario: &Scenario) -> Box<dyn Runner> {
        (self.build)(scenario)
    }

    /// The run of a checked scenario of this variant against a real server
    /// (`crate::live`).
    /// An async recipe (the user's own code against the simulated client).
    pub fn is_async(&self) -> bool {
        self.async_workload.is_some()
    }

    /// An async recipe's workload (what each client runs, live or simulated).
    pub fn async_workload(&self) -> Option<&AsyncWorkload> {
        self.async_workload.as_ref()
    }

    /// None for an async recipe (not run live yet).
    pub fn live_runner(&self, scenario: &Scenario) -> Option<Box<dyn LiveRunner>> {
        self.build_live.as_ref().map(|build| build(scenario))
    }
}

/// The simulation of `scenario` with `make` building each client's recipe.
#[cfg(madsim)]
fn simulation<R: SimRecipe, F>(
    scenario: &Scenario,
    make: Arc<dyn Fn(&ClientContext) -> R + Send + Sync>,
    workload: impl Fn(Client<R>) -> F + Send + Sync + 'static,
) -> Box<dyn Runner>
where
    F: std::future::Future<Output = ()> + Send + 'static,
{
    let context = ClientContext::of(scenario);
    Box::new(Simulation::new(
        scenario.world_config(),
        move |client, unique_id| {
            make(&ClientContext {
                client,
                unique_id,
                ..context.clone()
            })
        },
        workload,
    ))
}

/// A built-in workload, for any application handle: the simulator's
/// [`Client`] and a live run's [`LiveClient`] run the same code.
trait BuiltinWorkload<R: SimRecipe>: Copy + Send + Sync + 'static {
    /// The recipe's calls the workload makes.
    type Calls: Clone + Send + Sync + 'static;
    fn run<A: App<Recipe = R>>(
        self,
        app: A,
        spec: WorkloadSpec,
        calls: Self::Calls,
    ) -> impl Future<Output = ()> + Send;
}

/// `hold_cycles`: acquire, hold, release.
#[derive(Clone, Copy)]
struct Holds;
/// `queue_traffic`: producers offer, consumers take.
#[derive(Clone, Copy)]
struct Traffic;
/// `barrier_rounds`: enter together, leave together.
#[derive(Clone, Copy)]
struct Rounds;

impl<R: SimRecipe<Call: Sync>> BuiltinWorkload<R> for Holds {
    type Calls = HoldCalls<R::Call>;
    fn run<A: App<Recipe = R>>(
        self,
        app: A,
        spec: WorkloadSpec,
        calls: Self::Calls,
    ) -> impl Future<Output = ()> + Send {
        hold_cycles(app, spec, calls)
    }
}

impl<R: SimRecipe<Call: Sync>> BuiltinWorkload<R> for Traffic {
    type Calls = QueueCalls<R::Call>;
    fn run<A: App<Recipe = R>>(
        self,
        app: A,
        spec: WorkloadSpec,
        calls: Self::Calls,
    ) -> impl Future<Output = ()> + Send {
        queue_traffic(app, spec, calls)
    }
}

impl<R: SimRecipe<Call: Sync>> BuiltinWorkload<R> for Rounds {
    type Calls = BarrierCalls<R::Call>;
    fn run<A: App<Recipe = R>>(
        self,
        app: A,
        spec: WorkloadSpec,
        calls: Self::Calls,
    ) -> impl Future<Output = ()> + Send {
        barrier_rounds(app, spec, calls)
    }
}

/// A recipe as the simulator knows it.
#[derive(Clone, Debug)]
pub struct RecipeSpec {
    /// The name scenario files use (`recipe = "lock"`).
    pub name: String,
    pub kind: RecipeKind,
    /// The directory a scenario uses when it gives no `config.path`.
    pub default_path: Path,
    pub variants: Vec<SimVariant>,
}

impl RecipeSpec {
    pub fn variant(&self, name: &str) -> Option<&SimVariant> {
        self.variants.iter().find(|variant| variant.name == name)
    }

    pub fn variant_names(&self) -> Vec<&str> {
        self.variants.iter().map(|v| v.name.as_str()).collect()
    }

    /// "`lock` has no variant `x` (expected one of: original, fixed)".
    pub fn unknown_variant(&self, variant: &str) -> String {
        format!(
            "`{}` has no variant `{}` (expected one of: {})",
            self.name,
            super::clip(variant),
            self.variant_names().join(", ")
        )
    }
}

/// The recipes scenario files can name, in registration order.
#[derive(Clone, Debug, Default)]
pub struct SimRecipes {
    recipes: Vec<Arc<RecipeSpec>>,
}

impl SimRecipes {
    /// Adds a recipe; a second recipe of the same name is a programmer error.
    pub fn add(&mut self, recipe: RecipeSpec) {
        assert!(
            self.find(&recipe.name).is_err(),
            "recipe `{}` registered twice",
            recipe.name
        );
        self.recipes.push(Arc::new(recipe));
    }

    pub fn find(&self, name: &str) -> Result<Arc<RecipeSpec>, String> {
        self.recipes
            .iter()
            .find(|recipe| recipe.name == name)
            .cloned()
            .ok_or_else(|| {
                format!(
                    "unknown recipe `{}` (expected one of: {})",
                    super::clip(name),
                    self.names().join(", ")
                )
            })
    }

    pub fn names(&self) -> Vec<&str> {
        self.recipes.iter().map(|r| r.name.as_str()).collect()
    }
}
