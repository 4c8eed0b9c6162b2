//! The recipe registry: one door for every recipe, built-in or a user's.
//!
//! A [`RecipeEntry`] is a recipe's name, its [`RecipeKind`] (which picks
//! the workload and the properties that apply), its default directory and
//! its variants. Each [`Variant`] builds the recipe's simulation (what a
//! scenario file runs) and its model (what `check`, `explore` and schedule
//! replay run): a hold, queue or barrier recipe gets a generic model from
//! the same constructor and calls (the private modules `hold` and `generic`), and any variant
//! can bring a model of its own ([`Variant::model`]). Several variants of
//! one recipe that differ by a flag register as a table, one row each
//! ([`VariantTable`]). [`Registry::builtin`] registers the seven
//! shipped recipes (module `builtin`) through the same door a user's recipe goes
//! through ([`Registry::with`]).

mod builtin;
mod generic;
mod hold;
pub mod shapes;
mod table;

pub use table::VariantTable;

use crate::canonical::{self, Canonical, SelfCheck};
use crate::coverage::{self, Reach, TooBig};
use crate::lasso::{self, LassoOptions, LassoReport};
use crate::model::{ModelRecipe, RecipeModel};
use crate::replay::{self, ReplayError, ReplayReport};
use crate::run::{self, CheckReport, RunOptions};
use crate::schedule::Schedule;
use crate::setup::Setup;
use stateright::Model;
use std::sync::Arc;
use zk_recipes::zk::Path;
use zk_sim::scenario::{ClientContext, RecipeKind, RecipeSpec, SimRecipes, SimVariant};
use zk_sim::world::adapters::{BarrierCalls, HoldCalls, QueueCalls};
use zk_sim::world::SimRecipe;

/// Random walks of [`ModelVariant::self_check`].
pub const SELF_CHECK_WALKS: usize = 50;

/// Steps per walk of [`ModelVariant::self_check`].
pub const SELF_CHECK_DEPTH: usize = 40;

/// A recipe constructor shared by its simulation and its model.
type Make<R> = Arc<dyn Fn(&ClientContext) -> R + Send + Sync>;

/// What a generic model needs to know about the variant it models.
#[derive(Clone, Debug)]
struct ModelSite {
    recipe: String,
    variant: String,
    kind: RecipeKind,
    /// The recipe's directory (its default path).
    path: Path,
    needs_existing_path: bool,
}

/// Builds a variant's model once the entry it joins is known.
type ModelSource = Arc<dyn Fn(&ModelSite) -> ModelVariant + Send + Sync>;

/// One variant of a recipe: its simulation, and its model if it has one.
#[derive(Clone)]
pub struct Variant {
    sim: SimVariant,
    model: Option<ModelSource>,
}

impl Variant {
    /// A recipe that is acquired and released (a lock, an election, a
    /// semaphore): the simulator runs acquire / hold / release cycles, and
    /// the model checker a generic model of the same calls (one cycle per
    /// client by default) with the properties of the recipe's kind.
    pub fn hold<R>(
        name: &str,
        about: &str,
        calls: HoldCalls<R::Call>,
        make: impl Fn(&ClientContext) -> R + Send + Sync + 'static,
    ) -> Variant
    where
        R: ModelRecipe + SimRecipe,
    {
        Variant::hold_finished(name, about, calls, make, |model| model)
    }

    /// As [`Variant::hold`] for a recipe that declares its renaming
    /// (`zk_recipes::rename::RenameRecipe`): its model can also be checked
    /// with client symmetry and rank abstraction (`check --symmetry`,
    /// `--ranks`).
    pub fn hold_renamable<R>(
        name: &str,
        about: &str,
        calls: HoldCalls<R::Call>,
        make: impl Fn(&ClientContext) -> R + Send + Sync + 'static,
    ) -> Variant
    where
        R: ModelRecipe + SimRecipe + zk_recipes::rename::RenameRecipe,
    {
        Variant::hold_finished(name, about, calls, make, RecipeModel::with_renaming)
    }

    fn hold_finished<R>(
        name: &str,
        about: &str,
        calls: HoldCalls<R::Call>,
        make: impl Fn(&ClientContext) -> R + Send + Sync + 'static,
        finish: fn(RecipeModel<R>) -> RecipeModel<R>,
    ) -> Variant
    where
        R: ModelRecipe + SimRecipe,
    {
        let make: Make<R> = Arc::new(make);
        let sim_make = make.clone();
        let sim = SimVariant::hold(name, about, calls.clone(), move |c| sim_make(c));
        Variant::with_generic_model(sim, calls, make, hold::model, finish)
    }

    /// A queue: producers offer, consumers take. The simulator runs
    /// producers and consumers; the model checker a generic model of the
    /// same calls (client 0 offers, the others take `--cycles` items each)
    /// with the queue properties (see module `generic`).
    pub fn queue<R>(
        name: &str,
        about: &str,
        calls: QueueCalls<R::Call>,
        make: impl Fn(&ClientContext) -> R + Send + Sync + 'static,
    ) -> Variant
    where
        R: ModelRecipe + SimRecipe,
    {
        Variant::queue_finished(name, about, calls, make, |model| model)
    }

    /// As [`Variant::queue`] for a recipe that declares its renaming: its
    /// model can also be checked with `--symmetry` and `--ranks`.
    pub fn queue_renamable<R>(
        name: &str,
        about: &str,
        calls: QueueCalls<R::Call>,
        make: impl Fn(&ClientContext) -> R + Send + Sync + 'static,
    ) -> Variant
    where
        R: ModelRecipe + SimRecipe + zk_recipes::rename::RenameRecipe,
    {
        Variant::queue_finished(name, about, calls, make, RecipeModel::with_renaming)
    }

    fn queue_finished<R>(
        name: &str,
        about: &str,
        calls: QueueCalls<R::Call>,
        make: impl Fn(&ClientContext) -> R + Send + Sync + 'static,
        finish: fn(RecipeModel<R>) -> RecipeModel<R>,
    ) -> Variant
    where
        R: ModelRecipe + SimRecipe,
    {
        let make: Make<R> = Arc::new(make);
        let sim_make = make.clone();
        let sim = SimVariant::queue(name, about, calls.clone(), move |c| sim_make(c));
        Variant::with_generic_model(sim, calls, make, generic::queue_model, finish)
    }

    /// A barrier: members enter together and leave together. The
    /// simulator runs rounds with staggered arrivals; the model checker a
    /// generic model of the same calls (every client a member, entering
    /// then leaving) with the barrier properties (see module `generic`).
    pub fn barrier<R>(
        name: &str,
        about: &str,
        calls: BarrierCalls<R::Call>,
        make: impl Fn(&ClientContext) -> R + Send + Sync + 'static,
    ) -> Variant
    where
        R: ModelRecipe + SimRecipe,
    {
        Variant::barrier_finished(name, about, calls, make, |model| model)
    }

    /// As [`Variant::barrier`] for a recipe that declares its renaming:
    /// its model can also be checked with `--symmetry` and `--ranks`.
    pub fn barrier_renamable<R>(
        name: &str,
        about: &str,
        calls: BarrierCalls<R::Call>,
        make: impl Fn(&ClientContext) -> R + Send + Sync + 'static,
    ) -> Variant
    where
        R: ModelRecipe + SimRecipe + zk_recipes::rename::RenameRecipe,
    {
        Variant::barrier_finished(name, about, calls, make, RecipeModel::with_renaming)
    }

    fn barrier_finished<R>(
        name: &str,
        about: &str,
        calls: BarrierCalls<R::Call>,
        make: impl Fn(&ClientContext) -> R + Send + Sync + 'static,
        finish: fn(RecipeModel<R>) -> RecipeModel<R>,
    ) -> Variant
    where
        R: ModelRecipe + SimRecipe,
    {
        let make: Make<R> = Arc::new(make);
        let sim_make = make.clone();
        let sim = SimVariant::barrier(name, about, calls.clone(), move |c| sim_make(c));
        Variant::with_generic_model(sim, calls, make, generic::barrier_model, finish)
    }

    /// The model half every built-in kind shares: `build` makes the kind's
    /// generic model from the site, the setup, the calls and the
    /// constructor; `finish` adds the renaming where the recipe declares
    /// one.
    fn with_generic_model<R, C>(
        sim: SimVariant,
        calls: C,
        make: Make<R>,
        build: fn(&ModelSite, &Setup, &C, &Make<R>) -> RecipeModel<R>,
        finish: fn(RecipeModel<R>) -> RecipeModel<R>,
    ) -> Variant
    where
        R: ModelRecipe + SimRecipe,
        C: Clone + Send + Sync + 'static,
    {
        let model: ModelSource = Arc::new(move |site: &ModelSite| {
            let (site, calls, make) = (site.clone(), calls.clone(), make.clone());
            ModelVariant::of(move |setup| finish(build(&site, setup, &calls, &make)))
        });
        Variant {
            sim,
            model: Some(model),
        }
    }

    /// An async recipe: the user's own async code against the
    /// `zookeeper-client` API (simulated by `zkcheck-zookeeper-client`),
    /// one `workload` per client, shaped as `kind`'s workload (which
    /// `[workload]` keys a scenario may give). Simulated and swept like any
    /// recipe; no model (the model checker explores sans-IO machines).
    /// `zkcheck::asynchronous::workload` builds `workload` from an async fn.
    pub fn asynchronous(
        name: &str,
        about: &str,
        kind: RecipeKind,
        workload: zk_sim::async_recipe::AsyncWorkload,
    ) -> Variant {
        Variant {
            sim: SimVariant::asynchronous(name, about, kind.workload(), workload),
            model: None,
        }
    }

    /// The variant's own model (its setup, workload, oracles and
    /// properties), instead of the generic one.
    pub fn model<R: ModelRecipe>(
        mut self,
        build: impl Fn(&Setup) -> RecipeModel<R> + Send + Sync + 'static,
    ) -> Variant {
        let model = ModelVariant::of(build);
        self.model = Some(Arc::new(move |_: &ModelSite| model.clone()));
        self
    }

    /// The recipe's directory must exist before it runs (the code does not
    /// create it): scenarios and models create it first.
    pub fn needs_existing_path(mut self) -> Variant {
        self.sim = self.sim.needs_existing_path();
        self
    }

    /// Declares the `[config]` keys this variant reads beyond the recipe
    /// kind's own (`hosts`, `node_mode`).
    pub fn reads_config(mut self, keys: &[&'static str]) -> Variant {
        self.sim = self.sim.reads_config(keys);
        self
    }

    pub fn name(&self) -> &str {
        &self.sim.name
    }

    pub fn about(&self) -> &str {
        &self.sim.about
    }

    /// Whether the model checker can check this variant.
    pub fn has_model(&self) -> bool {
        self.model.is_some()
    }
}

/// A recipe with its variants, as registered.
#[derive(Clone)]
pub struct RecipeEntry {
    name: String,
    kind: RecipeKind,
    default_path: Path,
    variants: Vec<Variant>,
}

impl RecipeEntry {
    /// A recipe named `name` (what scenario files and `check` name it by)
    /// of `kind`, working under `default_path` unless a scenario gives
    /// another. A bad name or path is a programmer error (it panics).
    pub fn new(name: &str, kind: RecipeKind, default_path: &str) -> RecipeEntry {
        assert!(
            !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'),
            "a recipe name is letters, digits and `_`: {name:?}"
        );
        let default_path = Path::new(default_path)
            .unwrap_or_else(|e| panic!("recipe {name}: default path {default_path:?}: {e}"));
        assert!(
            !default_path.is_root(),
            "recipe {name}: the default path cannot be `/`"
        );
        RecipeEntry {
            name: name.to_string(),
            kind,
            default_path,
            variants: Vec::new(),
        }
    }

    /// Adds a variant. A variant whose workload does not fit the recipe's
    /// kind, or a second variant of the same name, is a programmer error.
    pub fn variant(mut self, variant: Variant) -> RecipeEntry {
        assert_eq!(
            variant.sim.workload,
            self.kind.workload(),
            "recipe {}: variant {} has a {:?} workload, but a {} runs a {:?} one",
            self.name,
            variant.name(),
            variant.sim.workload,
            self.kind.name(),
            self.kind.workload()
        );
        assert!(
            self.variants.iter().all(|v| v.name() != variant.name()),
            "recipe {}: variant {} registered twice",
            self.name,
            variant.name()
        );
        self.variants.push(variant);
        self
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn kind(&self) -> RecipeKind {
        self.kind
    }

    pub fn default_path(&self) -> &Path {
        &self.default_path
    }

    pub fn variants(&self) -> &[Variant] {
        &self.variants
    }

    fn sim_spec(&self) -> RecipeSpec {
        RecipeSpec {
            name: self.name.clone(),
            kind: self.kind,
            default_path: self.default_path.clone(),
            variants: self.variants.iter().map(|v| v.sim.clone()).collect(),
        }
    }

    fn site(&self, variant: &Variant) -> ModelSite {
        ModelSite {
            recipe: self.name.clone(),
            variant: variant.name().to_string(),
            kind: self.kind,
            path: self.default_path.clone(),
            needs_existing_path: variant.sim.needs_existing_path,
        }
    }
}

/// A variant's model, behind a type-erased handle: `check` runs it,
/// `explore` serves stateright's Explorer for it, `replay` replays one of
/// its schedules on the simulator's stepper.
#[derive(Clone)]
pub struct ModelVariant(Arc<dyn ErasedModel>);

impl std::fmt::Debug for ModelVariant {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ModelVariant")
    }
}

/// What a [`ModelVariant`] does with the model its builder makes.
trait ErasedModel: Send + Sync {
    fn check(&self, setup: &Setup, options: &RunOptions) -> CheckReport;
    fn lasso(&self, setup: &Setup, options: &LassoOptions) -> LassoReport;
    fn property_names(&self, setup: &Setup) -> Vec<&'static str>;
    fn canonical_error(&self, setup: &Setup) -> Option<String>;
    fn self_check(&self, setup: &Setup, seed: u64) -> Result<SelfCheck, String>;
    fn explore(&self, setup: &Setup, address: &str);
    fn replay(&self, setup: &Setup, schedule: &Schedule) -> Result<ReplayReport, ReplayError>;
    fn reach(&self, setup: &Setup, ask: &ReachAsk) -> Result<Reach, TooBig>;
}

/// What [`ModelVariant::reach`] is asked for: at most `limit` model
/// states; the shortest paths of the first `paths` shared states that
/// `wanted` keeps.
pub struct ReachAsk<'a> {
    pub limit: usize,
    pub wanted: &'a dyn Fn(u64) -> bool,
    pub paths: usize,
}

/// A model builder for one recipe type.
struct Builder<F>(F);

impl<R, F> ErasedModel for Builder<F>
where
    R: ModelRecipe,
    F: Fn(&Setup) -> RecipeModel<R> + Send + Sync,
{
    fn check(&self, setup: &Setup, options: &RunOptions) -> CheckReport {
        run::check((self.0)(setup), options)
    }

    fn lasso(&self, setup: &Setup, options: &LassoOptions) -> LassoReport {
        lasso::search((self.0)(setup), options)
    }

    fn property_names(&self, setup: &Setup) -> Vec<&'static str> {
        use stateright::Model as _;
        (self.0)(setup)
            .properties()
            .iter()
            .map(|property| property.name)
            .collect()
    }

    fn canonical_error(&self, setup: &Setup) -> Option<String> {
        (self.0)(setup).canonical_error()
    }

    fn self_check(&self, setup: &Setup, seed: u64) -> Result<SelfCheck, String> {
        let model = (self.0)(setup);
        if model.renamable().is_none() {
            return Err(model
                .canonical_error()
                .unwrap_or_else(|| format!("{} declares no renaming", model.name)));
        }
        let form = Canonical {
            symmetry: setup.symmetry,
            ranks: setup.ranks,
        };
        canonical::self_check(&model, form, SELF_CHECK_WALKS, SELF_CHECK_DEPTH, seed)
            .map_err(|error| error.to_string())
    }

    fn explore(&self, setup: &Setup, address: &str) {
        // Blocks for as long as the Explorer serves.
        let _ = (self.0)(setup).checker().serve(address);
    }

    fn replay(&self, setup: &Setup, schedule: &Schedule) -> Result<ReplayReport, ReplayError> {
        replay::replay(&(self.0)(setup), schedule)
    }

    fn reach(&self, setup: &Setup, ask: &ReachAsk) -> Result<Reach, TooBig> {
        coverage::reach(&(self.0)(setup), ask.limit, ask.wanted, ask.paths)
    }
}

impl ModelVariant {
    /// The handle of the model `build` makes for a setup.
    pub fn of<R: ModelRecipe>(
        build: impl Fn(&Setup) -> RecipeModel<R> + Send + Sync + 'static,
    ) -> ModelVariant {
        ModelVariant(Arc::new(Builder(build)))
    }

    pub fn check(&self, setup: &Setup, options: &RunOptions) -> CheckReport {
        self.0.check(setup, options)
    }

    /// Searches the model for a livelock (a lasso, see [`crate::lasso`]).
    pub fn lasso(&self, setup: &Setup, options: &LassoOptions) -> LassoReport {
        self.0.lasso(setup, options)
    }

    /// The names of the properties the model checks for `setup`.
    pub fn property_names(&self, setup: &Setup) -> Vec<&'static str> {
        self.0.property_names(setup)
    }

    /// Why the setup's canonical form (symmetry, ranks) cannot be explored
    /// for this model, if it cannot.
    pub fn canonical_error(&self, setup: &Setup) -> Option<String> {
        self.0.canonical_error(setup)
    }

    /// Runs the renaming self-check ([`canonical::self_check`]) on the
    /// setup's canonical form (its `symmetry` and `ranks`):
    /// [`SELF_CHECK_WALKS`] random walks of [`SELF_CHECK_DEPTH`] steps.
    pub fn self_check(&self, setup: &Setup, seed: u64) -> Result<SelfCheck, String> {
        self.0.self_check(setup, seed)
    }

    /// Replays a schedule of this model on the simulator's stepper, judged
    /// by the simulator's oracles (see [`crate::replay`]).
    pub fn replay(&self, schedule: &Schedule) -> Result<ReplayReport, ReplayError> {
        let setup = Setup::new(schedule.clients)
            .with_cycles(schedule.cycles)
            .with_servers(schedule.servers)
            .with_revalidate(schedule.revalidate);
        self.0.replay(&setup, schedule)
    }

    /// The model's reachable set under the shared abstraction (see
    /// [`crate::coverage`]), searched without partial-order reduction or a
    /// canonical form whatever `setup` says.
    pub fn reach(&self, setup: &Setup, ask: &ReachAsk) -> Result<Reach, TooBig> {
        let mut plain = setup.clone();
        (plain.reduction, plain.symmetry, plain.ranks) = (false, false, false);
        self.0.reach(&plain, ask)
    }

    /// Serves the Explorer on `address`; returns only if serving fails.
    pub fn explore(&self, setup: &Setup, address: &str) {
        self.0.explore(setup, address)
    }
}

/// Why a model could not be found.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RegistryError {
    #[error("unknown recipe `{recipe}` (known: {known})")]
    UnknownRecipe { recipe: String, known: String },
    #[error("recipe {recipe} has no variant `{variant}` (known: {known})")]
    UnknownVariant {
        recipe: String,
        variant: String,
        known: String,
    },
    #[error("{recipe} {variant} has no model: its registration gives none (give one with `Variant::model`)")]
    NoModel { recipe: String, variant: String },
    #[error("{recipe} {variant} is an async recipe: the stateful model checker cannot explore it (it explores sans-IO machines step by step); `check` explores it by re-execution in the simulating build (`--cfg madsim`), or sweep it with seeds (docs/async-recipe.md)")]
    AsyncRecipe { recipe: String, variant: String },
}

/// Every recipe the harness can run, by name.
#[derive(Clone, Default)]
pub struct Registry {
    entries: Vec<RecipeEntry>,
    sim: SimRecipes,
}

impl Registry {
    /// No recipes.
    pub fn empty() -> Registry {
        Registry::default()
    }

    /// The seven shipped recipes, `original` and `fixed` variants.
    pub fn builtin() -> Registry {
        builtin::recipes()
            .into_iter()
            .fold(Registry::empty(), Registry::with)
    }

    /// Adds a recipe (builder style).
    pub fn with(mut self, entry: RecipeEntry) -> Registry {
        self.register(entry);
        self
    }

    /// Adds a recipe. An entry without variants, or a second recipe of the
    /// same name, is a programmer error.
    pub fn register(&mut self, entry: RecipeEntry) {
        assert!(
            !entry.variants.is_empty(),
            "recipe {} has no variants",
            entry.name
        );
        self.sim.add(entry.sim_spec());
        self.entries.push(entry);
    }

    /// The recipes a scenario file may name.
    pub fn sim_recipes(&self) -> &SimRecipes {
        &self.sim
    }

    pub fn entries(&self) -> &[RecipeEntry] {
        &self.entries
    }

    /// Every (recipe, variant) pair with a model, in registration order.
    pub fn models(&self) -> Vec<(String, String, ModelVariant)> {
        let mut models = Vec::new();
        for entry in &self.entries {
            for variant in &entry.variants {
                if let Some(source) = &variant.model {
                    let model = source(&entry.site(variant));
                    models.push((entry.name.clone(), variant.name().to_string(), model));
                }
            }
        }
        models
    }

    /// The model of `recipe`'s `variant`.
    pub fn model(&self, recipe: &str, variant: &str) -> Result<ModelVariant, RegistryError> {
        let entry = self
            .entries
            .iter()
            .find(|e| e.name == recipe)
            .ok_or_else(|| RegistryError::UnknownRecipe {
                recipe: zk_sim::scenario::clip(recipe),
                known: self.names().join(", "),
            })?;
        let found = entry.variants.iter().find(|v| v.name() == variant);
        let found = found.ok_or_else(|| RegistryError::UnknownVariant {
            recipe: entry.name.clone(),
            variant: zk_sim::scenario::clip(variant),
            known: entry
                .variants
                .iter()
                .map(Variant::name)
                .collect::<Vec<_>>()
                .join(", "),
        })?;
        let (recipe, variant) = (entry.name.clone(), variant.to_string());
        let source = match &found.model {
            Some(source) => source,
            None if found.sim.is_async() => {
                return Err(RegistryError::AsyncRecipe { recipe, variant })
            }
            None => return Err(RegistryError::NoModel { recipe, variant }),
        };
        Ok(source(&entry.site(found)))
    }

    /// The recipe names, in registration order.
    pub fn names(&self) -> Vec<&str> {
        self.entries.iter().map(|e| e.name.as_str()).collect()
    }
}
