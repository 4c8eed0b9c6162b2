//! The test API: seeded sweeps and small model checks inside a user's own
//! `#[test]`, failing with the seed and the exact commands that reproduce
//! the failure (the habit of madsim's `MADSIM_TEST_SEED` and proptest's
//! persisted failures).
//!
//! ```text
//! #[test]
//! fn simple_lock_holds() {
//!     let registry = my_crate::registry();
//!     zkcheck::testing::scenario(&registry, "scenarios/simple-lock.toml")
//!         .variant("fixed")
//!         .seeds("0..200")
//!         .passes();
//! }
//!
//! #[test]
//! fn simple_lock_model_finds_the_bug() {
//!     let registry = my_crate::registry();
//!     let steps = zkcheck::testing::model(&registry, "simple_lock", "buggy")
//!         .clients(2)
//!         .all_orders()
//!         .violates("mutual_exclusion");
//!     assert_eq!(steps, 10); // pin the shortest counterexample
//! }
//! ```
//!
//! Environment: `ZKCHECK_SEED=N` runs only seed N of every scenario check
//! (and prints its trace); `ZKCHECK_SEEDS=A..B` replaces the seed range.
//! A model check may start from an initial server state (`.node(path)`,
//! `.container(path)`, `.sequence_start(parent, next)`: `check --node`,
//! `--container`, `--sequence-start`); one that cannot be made (a parent
//! missing, a node the recipe creates already) fails the test, named.
//! A model check's `.holds()` fails the test when its search was not
//! exhaustive (stopped at a bound): no violation within bounds is not a pass.
//! `.holds_property(name)` asserts one property alone (a model check's, or
//! a scenario's on every seed), whatever the others do: the original lock
//! breaks FIFO and still keeps `no_leaks`, say.
//! A bad scenario file, a bad setting or a run that could not have failed
//! fails the test with the file, line and key named. A run that panics
//! fails the test as an internal error of zkcheck (with the seed and the
//! panic), never as a property violation: `.fails()` does not return it.

use crate::commands::common::quote as shell_word;
use crate::commands::seed_commands::replay_command;
use std::path::{Path, PathBuf};
use zk_models::run::{render_trace, RunOptions, Verdict};
use zk_models::setup::{node_path, InitialNode, InitialState};
use zk_models::{ChildOrderMode, FaultBudget, Registry, Setup};
use zk_sim::oracles::Property;
use zk_sim::scenario::{Scenario, SeedRange};
use zk_sim::world::RunReport;

/// The environment variable that runs one seed only.
pub const SEED_VAR: &str = "ZKCHECK_SEED";
/// The environment variable that replaces a check's seed range.
pub const SEEDS_VAR: &str = "ZKCHECK_SEEDS";

/// A sweep of one scenario file over seeds (see [`scenario`]).
#[must_use = "call .passes() or .fails()"]
pub struct ScenarioCheck<'r> {
    registry: &'r Registry,
    file: PathBuf,
    variant: Option<String>,
    seeds: Option<String>,
}

/// Sweeps the scenario `file` (relative to the test's working directory,
/// the crate root under `cargo test`) over the seeds it names.
pub fn scenario<'r>(registry: &'r Registry, file: impl AsRef<Path>) -> ScenarioCheck<'r> {
    ScenarioCheck {
        registry,
        file: file.as_ref().to_path_buf(),
        variant: None,
        seeds: None,
    }
}

/// A seed that broke a property.
#[derive(Debug)]
pub struct Failure {
    pub seed: u64,
    pub report: RunReport,
    /// How to run that seed again, as printed.
    pub reproduce: String,
}

impl ScenarioCheck<'_> {
    /// Runs another variant of the scenario's recipe.
    pub fn variant(mut self, variant: &str) -> Self {
        self.variant = Some(variant.to_string());
        self
    }

    /// The seeds to run, e.g. `"0..200"` (default: the file's `seeds`).
    pub fn seeds(mut self, range: &str) -> Self {
        self.seeds = Some(range.to_string());
        self
    }

    /// Every seed holds every property; otherwise the test fails with the
    /// first failing seed and how to reproduce it.
    pub fn passes(self) {
        let scenario = self.load();
        if let Some(failure) = self.first_failure(&scenario) {
            panic!(
                "{}",
                describe_failure(&scenario, &failure, "expected every seed to pass")
            );
        }
    }

    /// No seed breaks `property` (a name as in `[properties] check`,
    /// e.g. `"mutual_exclusion"`), whatever other properties do: every
    /// seed runs on past other violations (`--all-violations`), and the
    /// test fails with the first seed that breaks `property` and how to
    /// reproduce it. A property the scenario does not check, or a seed
    /// that could not have failed (no progress), fails the test too.
    pub fn holds_property(self, property: &str) {
        let mut scenario = self.load();
        let wanted: Property = property
            .parse()
            .unwrap_or_else(|error| panic!("{}: {error}", scenario.file.display()));
        if !scenario.properties.contains(&wanted) {
            let checked: Vec<&str> = scenario.properties.iter().map(|p| p.name()).collect();
            panic!(
                "{}: the scenario does not check {property} (it checks: {}), so nothing could break it; add it to [properties] check",
                scenario.file.display(),
                checked.join(", ")
            );
        }
        scenario.all_violations = true;
        let breaks = |report: &RunReport| report.violations.iter().any(|v| v.property == wanted);
        if let Some(failure) = self.first_matching(&scenario, breaks) {
            let expected = format!("expected {property} to hold on every seed");
            panic!("{}", describe_failure(&scenario, &failure, &expected));
        }
    }

    /// Some seed breaks a property: returns the first such seed. The test
    /// fails if every seed passes.
    pub fn fails(self) -> Failure {
        let scenario = self.load();
        let range = self.range(&scenario);
        self.first_failure(&scenario).unwrap_or_else(|| {
            panic!(
                "{}: every seed of {range} passed ({} {}); expected a violation",
                scenario.file.display(),
                scenario.recipe.name,
                scenario.raw.variant
            )
        })
    }

    fn load(&self) -> Scenario {
        let loaded = Scenario::load(&self.file, self.registry.sim_recipes())
            .unwrap_or_else(|error| panic!("bad scenario: {error}"));
        match &self.variant {
            Some(variant) => loaded
                .with_variant(variant)
                .unwrap_or_else(|error| panic!("variant: {error}")),
            None => loaded,
        }
    }

    /// `ZKCHECK_SEED`, else `ZKCHECK_SEEDS`, else `.seeds(..)`, else the file's.
    fn range(&self, scenario: &Scenario) -> SeedRange {
        let parse = |what: &str, text: &str| {
            SeedRange::parse(text).unwrap_or_else(|error| panic!("{what}: {error}"))
        };
        if let Ok(seed) = std::env::var(SEED_VAR) {
            return parse(SEED_VAR, &seed);
        }
        if let Ok(seeds) = std::env::var(SEEDS_VAR) {
            return parse(SEEDS_VAR, &seeds);
        }
        match &self.seeds {
            Some(text) => parse(".seeds()", text),
            None => scenario.seeds,
        }
    }

    fn first_failure(&self, scenario: &Scenario) -> Option<Failure> {
        self.first_matching(scenario, |report| !report.passed())
    }

    /// The first seed whose report `fails` says failed; a seed that passed
    /// vacuously (it could not have failed) fails the test.
    fn first_matching(
        &self,
        scenario: &Scenario,
        fails: impl Fn(&RunReport) -> bool,
    ) -> Option<Failure> {
        let runner = scenario.runner();
        let single = std::env::var(SEED_VAR).is_ok();
        for seed in self.range(scenario).iter(None) {
            let report = crate::commands::internal_error::catch(|| runner.run(seed, single))
                .unwrap_or_else(|panic| panic!("{}", internal_error(scenario, seed, &panic)));
            if single {
                print!("{}", report.trace);
            }
            if let (true, Some(why)) = (report.passed(), report.vacuous()) {
                panic!(
                    "{}: seed {seed} could not have failed (or nearly): {why}; check the scenario's [config], [workload] and fault rates",
                    scenario.file.display()
                );
            }
            if fails(&report) {
                let reproduce = reproduce(scenario, seed);
                return Some(Failure {
                    seed,
                    report,
                    reproduce,
                });
            }
        }
        None
    }
}

/// What a test that hit a panic inside a run fails with: an internal error
/// of zkcheck, with the seed, not a property violation of the recipe.
fn internal_error(scenario: &Scenario, seed: u64, panic: &str) -> String {
    let rerun =
        crate::commands::internal_error::rerun_command("cargo run --release --", scenario, seed);
    format!(
        "{}: {}\n  this test on that seed: {SEED_VAR}={seed} cargo test",
        scenario.file.display(),
        crate::commands::internal_error::describe(seed, panic, &rerun)
    )
}

/// How to rerun one seed: this test alone, or the command line.
fn reproduce(scenario: &Scenario, seed: u64) -> String {
    let test = std::thread::current()
        .name()
        .filter(|name| *name != "main")
        .map(|name| {
            format!(
                "{SEED_VAR}={seed} cargo test -- --exact {}",
                shell_word(name)
            )
        })
        .unwrap_or_else(|| format!("{SEED_VAR}={seed} cargo test"));
    let command_line = replay_command("cargo run --release --", scenario, seed);
    format!(
        "this test on that seed (trace printed): {test}\n  the trace with a zkcheck::main_with binary: {command_line}"
    )
}

fn describe_failure(scenario: &Scenario, failure: &Failure, expected: &str) -> String {
    let mut text = format!(
        "{}: seed {} failed ({} {}; {expected}):\n",
        scenario.file.display(),
        failure.seed,
        scenario.recipe.name,
        scenario.raw.variant
    );
    for violation in &failure.report.violations {
        text.push_str(&format!(
            "VIOLATION of {}:\n  {violation}",
            violation.property_name()
        ));
    }
    text.push_str(&format!("reproduce:\n  {}", failure.reproduce));
    text
}

/// The `check` flags that give `initial` (its nodes and sequence starts).
fn initial_flags(initial: &InitialState) -> String {
    let mut flags = String::new();
    for node in &initial.nodes {
        let flag = match node.mode {
            zk_recipes::zk::CreateMode::Container => "--container",
            _ => "--node",
        };
        flags.push_str(&format!(" {flag} {}", shell_word(node.path.as_str())));
    }
    for (parent, next) in &initial.sequence_starts {
        let value = format!("{parent}={next}");
        flags.push_str(&format!(" --sequence-start {}", shell_word(&value)));
    }
    flags
}

/// A breadth-first model check of one registered variant (see [`model`]).
#[must_use = "call .holds() or .violates(..)"]
pub struct ModelCheck<'r> {
    registry: &'r Registry,
    recipe: String,
    variant: String,
    setup: Setup,
    /// `.lag(..)` was called (refused with one server).
    lag_given: bool,
}

/// Model-checks `recipe`'s `variant` (2 clients, no faults, sorted child
/// order, one cycle by default), single-threaded BFS: every counterexample
/// is a shortest one.
pub fn model<'r>(registry: &'r Registry, recipe: &str, variant: &str) -> ModelCheck<'r> {
    ModelCheck {
        registry,
        recipe: recipe.to_string(),
        variant: variant.to_string(),
        setup: Setup::new(2),
        lag_given: false,
    }
}

impl ModelCheck<'_> {
    pub fn clients(mut self, clients: usize) -> Self {
        self.setup.clients = clients;
        self
    }

    /// Fault budgets as `check --faults` takes them: `connection-loss=1,expiry=1`.
    pub fn faults(mut self, budgets: &str) -> Self {
        let faults: FaultBudget = budgets
            .parse()
            .unwrap_or_else(|error| panic!("faults {budgets:?}: {error}"));
        self.setup.faults = faults;
        self
    }

    /// Every order of getChildren results is a branch.
    pub fn all_orders(mut self) -> Self {
        self.setup.child_order = ChildOrderMode::AllOrders;
        self
    }

    /// Acquire/release cycles per client (hold recipes).
    pub fn cycles(mut self, cycles: usize) -> Self {
        self.setup.cycles = cycles;
        self
    }

    /// `servers` servers: 2 is a leader and a follower that lags (see
    /// `check --servers`).
    pub fn servers(mut self, servers: usize) -> Self {
        self.setup.servers = servers;
        self
    }

    /// The follower lags at most `lag` committed transactions (`check --lag`;
    /// with one server there is no follower, and the check fails the test).
    pub fn lag(mut self, lag: usize) -> Self {
        self.setup.lag = lag;
        self.lag_given = true;
        self
    }

    /// A reconnect to the follower is answered at once, not after the
    /// leader's revalidation (`check --unrevalidated-reconnects`; with
    /// `.servers(2)`, beyond what a real 3.8 does).
    pub fn unrevalidated_reconnects(mut self) -> Self {
        self.setup.revalidate = false;
        self
    }

    /// Client symmetry (`check --symmetry`; the recipe declares its renaming).
    pub fn symmetry(mut self) -> Self {
        self.setup.symmetry = true;
        self
    }

    /// Rank abstraction (`check --ranks`; the recipe declares its renaming).
    pub fn ranks(mut self) -> Self {
        self.setup.ranks = true;
        self
    }

    /// A persistent node that exists before the clients start (`check
    /// --node`). Its parent must exist: the recipe's setup creates it, or
    /// another `.node`/`.container` gives it (nodes are created in path
    /// order, as `check` creates them). A bad path fails the test.
    pub fn node(self, path: &str) -> Self {
        self.with_node(path, InitialNode::persistent)
    }

    /// A container node that exists before the clients start (`check
    /// --container`; as [`Self::node`]).
    pub fn container(self, path: &str) -> Self {
        self.with_node(path, InitialNode::container)
    }

    /// `parent` hands out `next` as its next sequence number (`check
    /// --sequence-start PARENT=NEXT`); `parent` must exist before the run
    /// and `next` be in `0..=i32::MAX`, or the test fails.
    pub fn sequence_start(mut self, parent: &str, next: i32) -> Self {
        let path = node_path(parent)
            .unwrap_or_else(|error| panic!(".sequence_start({parent:?}, {next}): {error}"));
        self.setup.initial.sequence_starts.push((path, next));
        self
    }

    fn with_node(mut self, path: &str, make: fn(zk_recipes::zk::Path) -> InitialNode) -> Self {
        let node = make(node_path(path).unwrap_or_else(|error| panic!("{path:?}: {error}")));
        let nodes = &mut self.setup.initial.nodes;
        // In path order (a parent before its children), after equal paths.
        let at = nodes.partition_point(|n| n.path.as_str() <= node.path.as_str());
        nodes.insert(at, node);
        self
    }

    /// The recipe's renaming passes the self-check for the symmetry and
    /// ranks asked (both when neither was): random reachable states renamed
    /// keep every verdict and their canonical successors. Returns the
    /// states checked.
    pub fn renaming_is_sound(mut self) -> usize {
        if !self.setup.symmetry && !self.setup.ranks {
            self.setup.symmetry = true;
            self.setup.ranks = true;
        }
        let model = self
            .registry
            .model(&self.recipe, &self.variant)
            .unwrap_or_else(|error| panic!("{error}"));
        match model.self_check(&self.setup, 0) {
            Ok(seen) => seen.states,
            Err(error) => panic!(
                "{}: the renaming self-check failed: {error}",
                self.command()
            ),
        }
    }

    /// Every property holds (and every example is found) over the whole
    /// state space; returns the unique state count, for pinning. A search
    /// that stopped at a bound (a memory budget) before it saw every state
    /// fails the test: no violation within bounds is not a pass (the
    /// command line's exit status 4).
    pub fn holds(self) -> usize {
        let report = self.run();
        if !report.exhaustive {
            panic!(
                "{}: expected every property to hold, but the search was not exhaustive: it stopped at a bound before it saw every state, so no violation within it is not a pass; make the model smaller (fewer clients, cycles or faults, --symmetry, --ranks)\n{}",
                self.command(),
                report.summary()
            );
        }
        let failures = report.failures();
        if !failures.is_empty() {
            let mut text = format!("{}: expected every property to hold\n", self.command());
            text.push_str(&report.summary());
            for failure in failures {
                if let Some(trace) = &failure.trace {
                    text.push_str(&format!("\ncounterexample for {}:\n", failure.name));
                    text.push_str(&render_trace(trace));
                }
            }
            panic!("{text}");
        }
        report.unique_states
    }

    /// `property` alone holds over the whole state space (a `sometimes`
    /// property: has an example), whatever the other properties do;
    /// returns the unique state count, for pinning. The test fails when the
    /// model has no such property, when it is violated (with the
    /// counterexample), and when the search stopped at a bound before it
    /// saw every state (no violation within bounds is not a pass).
    pub fn holds_property(self, property: &str) -> usize {
        let report = self.run();
        let result = self.named(&report, property);
        if !report.exhaustive {
            panic!(
                "{}: expected {property} to hold, but the search was not exhaustive: it stopped at a bound before it saw every state, so no violation within it is not a pass\n{}",
                self.command(),
                report.summary()
            );
        }
        if result.is_failure(report.exhaustive) {
            let mut text = format!(
                "{}: expected {property} to hold, but it is {}\n{}",
                self.command(),
                match result.verdict {
                    Verdict::Violated => "violated",
                    _ => "never exemplified (no reachable state shows it)",
                },
                report.summary()
            );
            if let Some(trace) = &result.trace {
                text.push_str(&format!("\ncounterexample for {property}:\n"));
                text.push_str(&render_trace(trace));
            }
            panic!("{text}");
        }
        report.unique_states
    }

    /// `property`'s result in `report`; the test fails if the model has no
    /// such property, naming the ones it has.
    fn named<'a>(
        &self,
        report: &'a zk_models::run::CheckReport,
        property: &str,
    ) -> &'a zk_models::run::PropertyResult {
        report.property(property).unwrap_or_else(|| {
            let names: Vec<&str> = report.properties.iter().map(|p| p.name).collect();
            panic!(
                "{}: the model has no property {property:?} (it has: {})",
                self.command(),
                names.join(", ")
            )
        })
    }

    /// `property` is violated: returns the length (in steps) of its
    /// shortest counterexample, for pinning. The test fails if it holds.
    pub fn violates(self, property: &str) -> usize {
        let report = self.run();
        let result = self.named(&report, property);
        match (&result.verdict, &result.trace) {
            (Verdict::Violated, Some(trace)) => trace.len(),
            _ => panic!(
                "{}: expected {property} to be violated, but it {:?}\n{}",
                self.command(),
                result.verdict,
                report.summary()
            ),
        }
    }

    fn run(&self) -> zk_models::run::CheckReport {
        assert!(
            !(self.lag_given && self.setup.servers == 1),
            "{}: .lag(..) bounds the follower's lag, and one server has no follower: add .servers(2)",
            self.command()
        );
        let model = self
            .registry
            .model(&self.recipe, &self.variant)
            .unwrap_or_else(|error| panic!("{error}"));
        if let Err((_, message)) =
            zk_models::schedule_check::initial_state_error(&model, &self.setup)
        {
            panic!(
                "{}: the initial state cannot be made: {message}",
                self.command()
            );
        }
        model.check(&self.setup, &RunOptions::default())
    }

    /// The command line that runs the same check.
    fn command(&self) -> String {
        let mut command = format!(
            "cargo run --release -- check {} --variant {} --clients {} --faults {}",
            shell_word(&self.recipe),
            shell_word(&self.variant),
            self.setup.clients,
            self.setup.faults
        );
        if self.setup.cycles != 1 {
            command.push_str(&format!(" --cycles {}", self.setup.cycles));
        }
        if self.setup.child_order == ChildOrderMode::AllOrders {
            command.push_str(" --all-orders");
        }
        if self.setup.symmetry {
            command.push_str(" --symmetry");
        }
        if self.setup.ranks {
            command.push_str(" --ranks");
        }
        if self.setup.servers != 1 {
            command.push_str(&format!(
                " --servers {} --lag {}",
                self.setup.servers, self.setup.lag
            ));
            if !self.setup.revalidate {
                command.push_str(" --unrevalidated-reconnects");
            }
        }
        command.push_str(&initial_flags(&self.setup.initial));
        command
    }
}
