//! Runs a checker over a [`RecipeModel`] and turns what it found into a
//! [`CheckReport`]: counts, speed, a verdict per property and, for each
//! discovery, the path as numbered readable steps plus a replayable
//! [`Schedule`].

use crate::action::Action;
use crate::dfs::Dfs;
use crate::model::{ModelRecipe, RecipeModel};
use crate::schedule::{FoundOn, Schedule, ScheduleStep};
use crate::shorten;
use crate::state::ModelState;
use crate::FaultBudget;
use stateright::{Checker, CheckerBuilder, Expectation, Model, UniformChooser};
use std::fmt::Write as _;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How the state space is searched.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Strategy {
    /// Breadth first: single-threaded, every discovery is a shortest path.
    Bfs,
    /// Depth first: less memory, longer paths.
    Dfs,
    /// Random walks from the initial state (not exhaustive).
    Simulation { seed: u64 },
}

impl Strategy {
    pub fn name(self) -> &'static str {
        match self {
            Strategy::Bfs => "bfs",
            Strategy::Dfs => "dfs",
            Strategy::Simulation { .. } => "simulation",
        }
    }
}

/// Search limits and parallelism.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RunOptions {
    pub strategy: Strategy,
    pub threads: usize,
    /// Stop exploring below this depth (path length).
    pub max_depth: Option<usize>,
    pub timeout: Option<Duration>,
    /// Print a progress line to stderr this often (long runs).
    pub progress_every: Option<Duration>,
}

impl Default for RunOptions {
    fn default() -> Self {
        RunOptions {
            strategy: Strategy::Bfs,
            threads: 1,
            max_depth: None,
            timeout: None,
            progress_every: None,
        }
    }
}

/// What became of one property.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// No counterexample (over the whole space, or within the bounds).
    Holds,
    Violated,
    /// A `sometimes` property has an example.
    Found,
    /// A `sometimes` property has no example (in the space searched).
    NotFound,
}

/// One step of a discovered path.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TraceStep {
    pub action: Action,
    /// What happened, one line per event (request, reply, outcome, fault).
    pub lines: Vec<String>,
    pub schedule: ScheduleStep,
}

/// One property's result.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PropertyResult {
    pub name: &'static str,
    pub expectation: Expectation,
    pub verdict: Verdict,
    /// The counterexample or example, if one was found.
    pub trace: Option<Vec<TraceStep>>,
}

impl PropertyResult {
    /// A violation, or (in an exhaustive search) a missing example.
    pub fn is_failure(&self, exhaustive: bool) -> bool {
        self.verdict == Verdict::Violated || (exhaustive && self.verdict == Verdict::NotFound)
    }
}

/// The outcome of one check.
#[derive(Clone, Debug, PartialEq)]
pub struct CheckReport {
    /// `recipe/variant`.
    pub model: String,
    pub clients: usize,
    /// Acquire/release cycles per client (hold workloads).
    pub cycles: usize,
    /// Servers (1: the plain server; 2: a leader and a follower).
    pub servers: usize,
    /// With an ensemble: the most transactions a follower may lag.
    pub lag: usize,
    pub faults: FaultBudget,
    pub options: RunOptions,
    /// States generated, repeats included.
    pub states: usize,
    pub unique_states: usize,
    pub max_depth: usize,
    pub elapsed: Duration,
    /// Every reachable state was visited (no depth or time bound cut the search).
    pub exhaustive: bool,
    pub properties: Vec<PropertyResult>,
}

impl CheckReport {
    pub fn states_per_second(&self) -> f64 {
        self.states as f64 / self.elapsed.as_secs_f64().max(1e-9)
    }

    /// The failed properties.
    pub fn failures(&self) -> Vec<&PropertyResult> {
        self.properties
            .iter()
            .filter(|p| p.is_failure(self.exhaustive))
            .collect()
    }

    pub fn property(&self, name: &str) -> Option<&PropertyResult> {
        self.properties.iter().find(|p| p.name == name)
    }

    /// The schedule of a property's discovery.
    pub fn schedule(&self, property: &PropertyResult) -> Option<Schedule> {
        let trace = property.trace.as_ref()?;
        let expect = match property.verdict {
            Verdict::Violated => "violation",
            _ => "example",
        };
        let found_on = FoundOn {
            model: &self.model,
            clients: self.clients,
            cycles: self.cycles,
            servers: self.servers,
            faults: &self.faults,
        };
        let steps = trace.iter().map(|step| step.schedule.clone()).collect();
        Some(found_on.schedule(property.name, expect, None, steps))
    }

    /// The summary: counts, speed and one line per property.
    pub fn summary(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "model {}: {} client(s){}{}, faults {}, {} with {} thread(s){}",
            self.model,
            self.clients,
            match self.cycles {
                1 => String::new(),
                n => format!(" x {n} cycles"),
            },
            match self.servers {
                1 => String::new(),
                n => format!(", {n} servers (lag <= {})", self.lag),
            },
            self.faults,
            self.options.strategy.name(),
            self.options.threads,
            self.options
                .max_depth
                .map(|d| format!(", depth <= {d}"))
                .unwrap_or_default(),
        );
        let _ = writeln!(
            out,
            "states explored: {}, unique states: {}, max depth: {}, time: {:.2} s, states/s: {:.0}{}",
            self.states,
            self.unique_states,
            self.max_depth,
            self.elapsed.as_secs_f64(),
            self.states_per_second(),
            if self.exhaustive { " (exhaustive)" } else { " (bounded: not exhaustive)" },
        );
        for property in &self.properties {
            let _ = writeln!(
                out,
                "  {:<26} {:<10} {}",
                property.name,
                expectation_name(&property.expectation),
                self.verdict_text(property)
            );
        }
        out
    }

    fn verdict_text(&self, property: &PropertyResult) -> String {
        let steps = property.trace.as_ref().map_or(0, Vec::len);
        match property.verdict {
            Verdict::Holds if self.exhaustive => "holds".to_string(),
            Verdict::Holds => "holds within the bounds".to_string(),
            Verdict::Violated => format!("VIOLATED (counterexample: {steps} steps)"),
            Verdict::Found => format!("example found ({steps} steps)"),
            Verdict::NotFound if self.exhaustive => "NO EXAMPLE (vacuous model?)".to_string(),
            Verdict::NotFound => "no example within the bounds".to_string(),
        }
    }
}

fn expectation_name(expectation: &Expectation) -> &'static str {
    match expectation {
        Expectation::Always => "always",
        Expectation::Eventually => "eventually",
        Expectation::Sometimes => "sometimes",
    }
}

/// Renders a path as numbered steps, one indented line per event.
pub fn render_trace(trace: &[TraceStep]) -> String {
    let mut out = String::new();
    for (number, step) in trace.iter().enumerate() {
        let _ = writeln!(out, "  {:>3}. {}", number + 1, step.action);
        for line in &step.lines {
            let _ = writeln!(out, "         {line}");
        }
    }
    out
}

/// Runs the model with `options` and collects the report.
pub fn check<R: ModelRecipe>(model: RecipeModel<R>, options: &RunOptions) -> CheckReport {
    let name = model.name.clone();
    let clients = model.clients.len();
    let cycles = model.cycles;
    let (servers, lag) = (model.servers, model.max_lag);
    let faults = model.faults;
    let started = Instant::now();
    let (properties, counts) = search(model, options, started);
    let Counts {
        states,
        unique_states,
        max_depth,
        elapsed,
        timed_out: counts_timed_out,
    } = counts;
    let depth_cut = options.max_depth.is_some_and(|depth| max_depth > depth);
    let timed_out = counts_timed_out;
    let exhaustive =
        !matches!(options.strategy, Strategy::Simulation { .. }) && !depth_cut && !timed_out;
    CheckReport {
        model: name,
        clients,
        cycles,
        servers,
        lag,
        faults,
        options: *options,
        states,
        unique_states,
        max_depth,
        elapsed,
        exhaustive,
        properties,
    }
}

/// Searches `model` with the strategy of `options`.
fn search<R: ModelRecipe>(
    model: RecipeModel<R>,
    options: &RunOptions,
    started: Instant,
) -> (Vec<PropertyResult>, Counts) {
    let stop = Arc::clone(&model.stop);
    // stateright counts the initial state as depth 1.
    let depth_limit = options.max_depth.map(|depth| depth + 1);
    match options.strategy {
        Strategy::Dfs => {
            let dfs = Dfs::spawn(model, options.threads, depth_limit);
            let (checker, timed_out) = watch(dfs, &stop, options, started);
            collect(&checker, options, started, timed_out)
        }
        Strategy::Bfs => {
            let bfs = stateright_checker(model, options, depth_limit).spawn_bfs();
            let (checker, timed_out) = watch(bfs, &stop, options, started);
            collect(&checker, options, started, timed_out)
        }
        Strategy::Simulation { seed } => {
            let mut builder = stateright_checker(model, options, depth_limit);
            if let Some(timeout) = options.timeout {
                builder = builder.timeout(timeout);
            }
            let checker = builder.spawn_simulation(seed, UniformChooser).join();
            collect(&checker, options, started, false)
        }
    }
}

/// stateright's checker of `model`, for the strategies it runs (BFS and
/// simulation).
fn stateright_checker<R: ModelRecipe>(
    model: RecipeModel<R>,
    options: &RunOptions,
    depth_limit: Option<usize>,
) -> CheckerBuilder<RecipeModel<R>> {
    let builder = model.checker().threads(options.threads.max(1));
    match depth_limit {
        Some(depth) => builder.target_max_depth(depth),
        None => builder,
    }
}

/// Waits for a search to finish: sets the model's stop flag when the
/// timeout passes (see `RecipeModel::stop`; stateright's own timeout holds
/// a lock while it sleeps) and prints progress lines to stderr. Returns the
/// joined checker and whether the timeout stopped it; the flag is cleared
/// again, so the model can rebuild and narrate the paths found.
fn watch<R: ModelRecipe, C: Checker<RecipeModel<R>>>(
    checker: C,
    stop: &AtomicBool,
    options: &RunOptions,
    started: Instant,
) -> (C, bool) {
    let mut poll = Duration::from_millis(1);
    let mut next_progress = options.progress_every.map(|every| started + every);
    while !checker.is_done() {
        std::thread::sleep(poll);
        poll = (poll * 2).min(Duration::from_millis(100));
        let now = Instant::now();
        if options
            .timeout
            .is_some_and(|timeout| now >= started + timeout)
        {
            stop.store(true, Ordering::Relaxed);
        }
        if let (Some(due), Some(every)) = (next_progress, options.progress_every) {
            if now >= due {
                eprintln!("{}", progress_line(&checker, now - started));
                next_progress = Some(due + every);
            }
        }
    }
    let checker = checker.join();
    (checker, stop.swap(false, Ordering::Relaxed))
}

/// `progress: 120 s, 104532112 states (0.87 M/s), 40234001 unique, depth 57`.
fn progress_line<R: ModelRecipe>(
    checker: &impl Checker<RecipeModel<R>>,
    elapsed: Duration,
) -> String {
    let states = checker.state_count();
    let per_second = states as f64 / elapsed.as_secs_f64().max(1e-9) / 1e6;
    format!(
        "progress: {} s, {states} states ({per_second:.2} M/s), {} unique, depth {}",
        elapsed.as_secs(),
        checker.unique_state_count(),
        checker.max_depth()
    )
}

struct Counts {
    states: usize,
    unique_states: usize,
    max_depth: usize,
    elapsed: Duration,
    /// The search was cut short by the timeout.
    timed_out: bool,
}

fn collect<R: ModelRecipe>(
    checker: &dyn Checker<RecipeModel<R>>,
    options: &RunOptions,
    started: Instant,
    stopped: bool,
) -> (Vec<PropertyResult>, Counts) {
    let elapsed = started.elapsed();
    // A simulation ends only at its timeout; a stopped search made every
    // state it had queued look terminal, so its `eventually` discoveries
    // mean nothing.
    let timed_out = stopped || options.timeout.is_some_and(|timeout| elapsed >= timeout);
    let model = checker.model();
    let mut discoveries = checker.discoveries();
    let properties = model
        .properties()
        .into_iter()
        .map(|property| {
            let mut path = discoveries
                .remove(property.name)
                .map(|path| path.into_vec())
                .filter(|_| !(stopped && property.expectation == Expectation::Eventually));
            if property.expectation == Expectation::Eventually {
                path = path.map(|path| eventually_counterexample(model, &property, path, options));
            }
            // A path of canonical states becomes the concrete run it stands
            // for; the rest works on concrete states.
            let raw = model.raw();
            let path = path.map(|path| {
                crate::canonical::concretize(model, path)
                    .unwrap_or_else(|error| panic!("{}: {error}", model.name))
            });
            let path = path.map(|path| shorten::shorten(&raw, &property, path));
            let trace = path.map(|path| trace(&raw, path));
            let verdict = match (&property.expectation, trace.is_some()) {
                (Expectation::Sometimes, true) => Verdict::Found,
                (Expectation::Sometimes, false) => Verdict::NotFound,
                (_, true) => Verdict::Violated,
                (_, false) => Verdict::Holds,
            };
            PropertyResult {
                name: property.name,
                expectation: property.expectation,
                verdict,
                trace,
            }
        })
        .collect();
    let unique_states = match options.strategy {
        Strategy::Simulation { .. } => checker.state_count(),
        _ => checker.unique_state_count(),
    };
    let counts = Counts {
        states: checker.state_count(),
        unique_states,
        max_depth: checker.max_depth(),
        elapsed,
        timed_out,
    };
    (properties, counts)
}

use crate::shorten::StatePath;

/// stateright 0.30's BFS keeps overwriting an `eventually` discovery with later
/// terminal states once the property is discovered (it stops clearing the
/// property's bit), so the path it returns may end in a state that satisfies
/// the property. The verdict is right; the path is then searched again as
/// the shortest path to a terminal state that breaks the property.
fn eventually_counterexample<R: ModelRecipe>(
    model: &RecipeModel<R>,
    property: &stateright::Property<RecipeModel<R>>,
    path: StatePath<R>,
    options: &RunOptions,
) -> StatePath<R> {
    let ends_badly = path
        .last()
        .is_some_and(|(last, _)| !(property.condition)(model, last));
    if ends_badly {
        return path;
    }
    let mut builder = model
        .terminal_goal_model(property.name, property.condition)
        .checker();
    if let Some(depth) = options.max_depth {
        builder = builder.target_max_depth(depth + 1);
    }
    let rerun = builder.spawn_bfs().join();
    rerun
        .discovery(property.name)
        .map(|path| path.into_vec())
        .unwrap_or(path)
}

/// Narrates a discovered path step by step.
pub fn trace<R: ModelRecipe>(
    model: &RecipeModel<R>,
    path: Vec<(ModelState<R>, Option<Action>)>,
) -> Vec<TraceStep> {
    path.into_iter()
        .filter_map(|(state, action)| {
            let action = action?;
            let (next, lines) = model.describe(&state, action);
            let mut schedule = ScheduleStep::of(action);
            if let Some(c) = action.client() {
                if let Action::Call(_) = action {
                    let step = usize::from(state.clients[c].next_step);
                    schedule.call = Some(format!("{:?}", model.workload(c)[step].call));
                }
                if next.clients[c].generation != state.clients[c].generation {
                    schedule.session = Some(next.clients[c].session_id.0);
                }
            }
            Some(TraceStep {
                action,
                lines,
                schedule,
            })
        })
        .collect()
}
