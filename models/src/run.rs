//! Runs a checker over a [`RecipeModel`] and turns what it found into a
//! [`CheckReport`]: counts, speed, a verdict per property and, for each
//! discovery, the path as numbered readable steps plus a replayable
//! [`Schedule`].

use crate::action::Action;
use crate::dfs::{Dfs, Order};
use crate::memory::{Bytes, MemoryBudget, MemoryStop, MemoryWatch};
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
    /// Stop when the process nears this much memory in use (the search is
    /// then not exhaustive); None: [`MemoryBudget::for_this_process`]. A
    /// simulation holds one walk at a time (its length bounded by the depth)
    /// and is not watched.
    pub memory_budget: Option<MemoryBudget>,
}

impl Default for RunOptions {
    fn default() -> Self {
        RunOptions {
            strategy: Strategy::Bfs,
            threads: 1,
            max_depth: None,
            timeout: None,
            progress_every: None,
            memory_budget: None,
        }
    }
}

/// What cut a search short before it visited every state it could reach.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stop {
    Timeout(Duration),
    Memory(MemoryStop),
}

impl Stop {
    /// `timeout` or `memory`: the reason reports keep.
    pub fn reason(&self) -> &'static str {
        match self {
            Stop::Timeout(_) => "timeout",
            Stop::Memory(_) => "memory",
        }
    }

    /// `not exhaustive: memory budget of 4.0 GiB reached after N states (...)`.
    pub fn describe(&self, states: usize) -> String {
        match self {
            Stop::Timeout(timeout) => format!(
                "not exhaustive: timeout of {} s reached after {states} states",
                timeout.as_secs()
            ),
            Stop::Memory(memory) => format!(
                "not exhaustive: memory budget of {} reached after {states} states ({} in use; the last third of the budget is kept for a table that doubles)",
                memory.budget,
                Bytes(memory.in_use_bytes)
            ),
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
    /// With an ensemble: reconnects waited for the leader's revalidation.
    pub revalidate: bool,
    pub faults: FaultBudget,
    pub options: RunOptions,
    /// States generated, repeats included.
    pub states: usize,
    pub unique_states: usize,
    pub max_depth: usize,
    pub elapsed: Duration,
    /// Every reachable state was visited (no depth, time or memory bound
    /// cut the search).
    pub exhaustive: bool,
    /// The timeout or the memory budget stopped the search.
    pub stop: Option<Stop>,
    pub properties: Vec<PropertyResult>,
}

impl CheckReport {
    pub fn states_per_second(&self) -> f64 {
        self.states as f64 / self.elapsed.as_secs_f64().max(1e-9)
    }

    /// The failed properties: the violated ones and, in an exhaustive
    /// search, the `sometimes` ones without an example.
    pub fn failures(&self) -> Vec<&PropertyResult> {
        self.properties
            .iter()
            .filter(|p| p.is_failure(self.exhaustive))
            .collect()
    }

    /// The violated properties (a counterexample each).
    pub fn violations(&self) -> Vec<&PropertyResult> {
        self.properties
            .iter()
            .filter(|p| p.verdict == Verdict::Violated)
            .collect()
    }

    /// Why the search could not have failed, if it could not: an exhaustive
    /// search in which a `sometimes` property (a lock acquired, an item
    /// taken) has no example never reached what the other properties judge,
    /// so their verdicts hold vacuously (a counter at its end, say, refuses
    /// every create). None when every example was found or the search was
    /// bounded (there "no example" is no answer either way).
    pub fn vacuous(&self) -> Option<String> {
        if !self.exhaustive {
            return None;
        }
        let missing: Vec<&str> = self
            .properties
            .iter()
            .filter(|p| p.verdict == Verdict::NotFound)
            .map(|p| p.name)
            .collect();
        if missing.is_empty() {
            return None;
        }
        Some(format!(
            "no reachable state of {} with {} client(s) shows {}: the clients never got that far, so every other property held vacuously and the check could not have failed; check the initial state (--node, --container, --sequence-start) and the fault budgets",
            self.model,
            self.clients,
            missing.join(", ")
        ))
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
            revalidate: self.revalidate,
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
                n => format!(
                    ", {n} servers (lag <= {}{})",
                    self.lag,
                    match self.revalidate {
                        true => "",
                        false => ", unrevalidated reconnects",
                    }
                ),
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
            match (self.exhaustive, &self.stop) {
                (true, _) => " (exhaustive)".to_string(),
                (false, Some(stop)) => format!(" ({})", stop.describe(self.unique_states)),
                (false, None) => " (bounded: not exhaustive)".to_string(),
            },
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
    let (servers, lag, revalidate) = (model.servers, model.max_lag, model.revalidate);
    let faults = model.faults;
    let started = Instant::now();
    let (properties, counts) = search(model, options, started);
    let Counts {
        states,
        unique_states,
        max_depth,
        elapsed,
        stop,
    } = counts;
    let depth_cut = options.max_depth.is_some_and(|depth| max_depth > depth);
    let exhaustive =
        !matches!(options.strategy, Strategy::Simulation { .. }) && !depth_cut && stop.is_none();
    CheckReport {
        model: name,
        clients,
        cycles,
        servers,
        lag,
        revalidate,
        faults,
        options: *options,
        states,
        unique_states,
        max_depth,
        elapsed,
        exhaustive,
        stop,
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
    let memory = MemoryWatch::new(
        options
            .memory_budget
            .unwrap_or_else(MemoryBudget::for_this_process),
    );
    match options.strategy {
        Strategy::Dfs => {
            let dfs = Dfs::spawn(model, Order::DepthFirst, options.threads, depth_limit);
            let (checker, stopped) = watch(dfs, &stop, options, memory, started);
            collect(&checker, options, memory, started, stopped)
        }
        Strategy::Bfs => {
            let bfs = Dfs::spawn(model, Order::BreadthFirst, options.threads, depth_limit);
            let (checker, stopped) = watch(bfs, &stop, options, memory, started);
            collect(&checker, options, memory, started, stopped)
        }
        Strategy::Simulation { seed } => {
            let mut builder = stateright_checker(model, options, depth_limit);
            if let Some(timeout) = options.timeout {
                builder = builder.timeout(timeout);
            }
            let checker = builder.spawn_simulation(seed, UniformChooser).join();
            collect(&checker, options, memory, started, None)
        }
    }
}

/// stateright's checker of `model`, for the random walks.
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

/// How often the watcher looks at the clock and the memory in use, at
/// most: a search growing by 1 GB/s grows 100 MB between two looks, well
/// inside the third of its budget kept free.
const WATCH_EVERY: Duration = Duration::from_millis(100);

/// Waits for a search to finish: sets the model's stop flag when the
/// timeout passes or the memory in use reaches the budget's stop point
/// (see `RecipeModel::stop`; stateright's own timeout holds a lock while it
/// sleeps) and prints progress lines to stderr. Returns the joined checker
/// and what stopped it; the flag is cleared again, so the model can
/// rebuild and narrate the paths found.
fn watch<R: ModelRecipe, C: Checker<RecipeModel<R>>>(
    checker: C,
    stop: &AtomicBool,
    options: &RunOptions,
    memory: MemoryWatch,
    started: Instant,
) -> (C, Option<Stop>) {
    let mut poll = Duration::from_millis(1);
    let mut next_progress = options.progress_every.map(|every| started + every);
    let mut stopped = None;
    while !checker.is_done() {
        std::thread::sleep(poll);
        poll = (poll * 2).min(WATCH_EVERY);
        let now = Instant::now();
        if stopped.is_none() {
            stopped = options
                .timeout
                .filter(|timeout| now >= started + *timeout)
                .map(Stop::Timeout)
                .or_else(|| memory.check().map(Stop::Memory));
            if stopped.is_some() {
                stop.store(true, Ordering::Relaxed);
            }
        }
        if let (Some(due), Some(every)) = (next_progress, options.progress_every) {
            if now >= due {
                eprintln!("{}", progress_line(&checker, now - started));
                next_progress = Some(due + every);
            }
        }
    }
    let checker = checker.join();
    stop.store(false, Ordering::Relaxed);
    (checker, stopped)
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
    /// The timeout or the memory budget cut the search short.
    stop: Option<Stop>,
}

fn collect<R: ModelRecipe>(
    checker: &dyn Checker<RecipeModel<R>>,
    options: &RunOptions,
    memory: MemoryWatch,
    started: Instant,
    stopped_by: Option<Stop>,
) -> (Vec<PropertyResult>, Counts) {
    let elapsed = started.elapsed();
    // A simulation ends only at its timeout; a stopped search made every
    // state it had queued look terminal, so its `eventually` discoveries
    // mean nothing.
    let stopped = stopped_by.is_some();
    let stop = stopped_by.or_else(|| {
        options
            .timeout
            .filter(|timeout| elapsed >= *timeout)
            .map(Stop::Timeout)
    });
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
                path = path
                    .map(|path| eventually_counterexample(model, &property, path, options, memory));
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
        stop,
    };
    (properties, counts)
}

use crate::shorten::StatePath;

/// The BFS (as stateright 0.30's, see [`crate::dfs`]) keeps overwriting an
/// `eventually` discovery with later terminal states once the property is
/// discovered (it stops clearing the property's bit), so the path it
/// returns may end in a state that satisfies the property. The verdict is
/// right; the path is then searched again (breadth first, one thread) as
/// the shortest path to a terminal state that breaks the property.
fn eventually_counterexample<R: ModelRecipe>(
    model: &RecipeModel<R>,
    property: &stateright::Property<RecipeModel<R>>,
    path: StatePath<R>,
    options: &RunOptions,
    memory: MemoryWatch,
) -> StatePath<R> {
    let ends_badly = path
        .last()
        .is_some_and(|(last, _)| !(property.condition)(model, last));
    if ends_badly {
        return path;
    }
    let goal_model = model.terminal_goal_model(property.name, property.condition);
    let stop = Arc::clone(&goal_model.stop);
    let depth_limit = options.max_depth.map(|depth| depth + 1);
    // The search again, within the same memory budget (no timeout: the
    // first search ended).
    let goal_model = Dfs::spawn(goal_model, Order::BreadthFirst, 1, depth_limit);
    let unbounded = RunOptions {
        timeout: None,
        progress_every: None,
        ..*options
    };
    let (rerun, stopped) = watch(goal_model, &stop, &unbounded, memory, Instant::now());
    if stopped.is_some() {
        // Stopped, every state looked terminal: its discovery means nothing.
        return path;
    }
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
                if let Action::ExpireAbandoned { generation, .. } = action {
                    schedule.session = Some(model.session_id(c, generation).0);
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
