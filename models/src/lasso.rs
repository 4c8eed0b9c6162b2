//! Liveness as cycles: a search for **lassos**, executions that reach a
//! cycle in which some client waits for its call forever although every
//! step it could take is taken (issue 13, item 3).
//!
//! stateright judges an `eventually` property on terminal paths only, so a
//! recipe whose clients keep moving without ever answering a call (they
//! poll, step back, retry) is reported as holding. This module explores the
//! model's state graph itself and looks for such cycles.
//!
//! ## The property
//!
//! **Progress**: some client with a pending call eventually completes it.
//!
//! - An edge *completes a call* when it raises the number of answered
//!   workload steps, `sum over clients of next_step - [pending call]`: an
//!   outcome answered the pending call (the call and its answer may come in
//!   one step), or a gated step was skipped. The count never falls, so no
//!   cycle contains a completing edge. It is a count over all clients, so a
//!   renaming of clients (the model's canonicalization) does not change it.
//! - A fault spends budget, which never grows back, so no cycle contains a
//!   fault either: an execution with infinitely many faults is not one the
//!   environment is obliged to avoid. Both are checked, not assumed:
//!   [`LassoReport::progress_on_cycles`] counts completing or fault edges
//!   found inside a cycle (always 0 for a model that spends budget and
//!   answers calls as ours does).
//!
//! ## Weak fairness
//!
//! A cycle is a livelock only if the scheduler that runs it forever is
//! fair. The fairness units are each client's progress steps *of one kind*
//! (`call`, `send`, `deliver`, `fire_timer`, `reconnect`, `reconnect_fails`,
//! `learn_expiry`), the server's `reap` and `expire_abandoned` and each
//! follower's `apply`; faults
//! are not units. Weak fairness: a unit enabled in every state of the
//! cycle is taken somewhere on it. Units per kind, not per client: a client
//! whose reconnect attempts fail forever (`reconnect_fails`) while
//! `reconnect` stays enabled is the network never healing, not a livelock.
//!
//! ## The search
//!
//! 1. Breadth-first exploration from the initial states through the
//!    stateright [`Model`] methods only (`init_states`, `actions`,
//!    `next_state`), so whatever the model canonicalizes in `next_state`
//!    the search sees canonicalized. The partial-order reduction and the
//!    twin rule are turned off: both hide enabled steps, which fairness
//!    must see. States are kept as 64-bit fingerprints (as stateright
//!    keeps them); per state: its BFS parent, the fairness units enabled
//!    in it, whether a call is pending, and its outgoing edges.
//! 2. Strongly connected components (iterative Tarjan) of the graph
//!    without completing and fault edges.
//! 3. A component with an edge inside is a **fair livelock** when a call is
//!    pending in every state of it and every unit enabled in all its states
//!    is taken by an edge inside it. (If a maximal component fails that, so
//!    does every cycle inside it: the starved unit is enabled everywhere.)
//! 4. The reported lasso: the shortest path to the component's first state
//!    `s` found (BFS parents), then a cycle from `s` back to `s` inside the
//!    component, built from shortest in-component paths that take an edge
//!    of every unit enabled in all the component's states (a unit disabled
//!    somewhere is satisfied by passing there instead). Both are replayed
//!    from the initial state through `next_state`, checked to return to
//!    `s` (exact state equality, so a fingerprint collision cannot fake a
//!    cycle), and narrated as numbered steps like every counterexample.
//!
//! A search cut by its state limit, its timeout or its memory budget
//! ([`crate::memory`]; looked at every 1024 states) still reports a lasso
//! it found among the states it expanded (their edges are complete);
//! without one its answer is no verdict ([`LassoVerdict::Inconclusive`]).
//!
//! ## Canonical states
//!
//! The counts above are invariant under a renaming of clients, but the
//! fairness units and the steps of a lasso name clients. If `next_state`
//! canonicalizes through a client renaming, a cycle of canonical states is
//! a concrete path from `s` to a renaming `p(s)`: the concrete cycle is it
//! repeated (order of `p`) times, with the clients renamed along the way,
//! and fairness must follow the renaming. Until the model reports the
//! renaming it applied, run this search without client symmetry. An
//! abstraction that renames no client (ranks of sequence numbers and
//! zxids) needs none of this; the stepper's replay then compares concrete
//! states, which differ in those numbers ([`crate::replay::LassoReplay`]).

use crate::action::Action;
use crate::faults::FaultBudget;
use crate::memory::{Bytes, MemoryBudget, MemoryStop, MemoryWatch};
use crate::model::{ModelRecipe, RecipeModel};
use crate::run::{trace, TraceStep};
use crate::schedule::{FoundOn, Schedule};
use crate::shorten::StatePath;
use crate::state::{ClientId, ModelState};
use stateright::Model;
use std::collections::{HashMap, VecDeque};
use std::fmt::{self, Write as _};
use std::time::{Duration, Instant};

/// The property a lasso violates (schedules name it).
pub const PROGRESS: &str = "progress";

/// Default state limit of a search. The memory budget usually stops a
/// search first: the queue holds whole states (see BENCHMARKS.md for the
/// bytes per state measured).
pub const DEFAULT_MAX_STATES: usize = 5_000_000;

/// Bounds of a lasso search.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LassoOptions {
    /// Stop exploring after this many distinct states.
    pub max_states: usize,
    pub timeout: Option<Duration>,
    /// Print a progress line to stderr this often.
    pub progress_every: Option<Duration>,
    /// Stop when the process nears this much memory in use; None:
    /// [`MemoryBudget::for_this_process`].
    pub memory_budget: Option<MemoryBudget>,
}

impl Default for LassoOptions {
    fn default() -> Self {
        LassoOptions {
            max_states: DEFAULT_MAX_STATES,
            timeout: None,
            progress_every: None,
            memory_budget: None,
        }
    }
}

/// The kinds of progress step a client takes; with the client, a
/// weak-fairness unit.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum StepKind {
    Call,
    Send,
    Deliver,
    FireTimer,
    Reconnect,
    ReconnectFails,
    LearnExpiry,
}

impl StepKind {
    const ALL: [StepKind; 7] = [
        StepKind::Call,
        StepKind::Send,
        StepKind::Deliver,
        StepKind::FireTimer,
        StepKind::Reconnect,
        StepKind::ReconnectFails,
        StepKind::LearnExpiry,
    ];
}

/// Most clients and servers the unit bit sets have room for.
const MAX_UNIT_CLIENTS: usize = 16;
const REAP_BIT: u8 = (MAX_UNIT_CLIENTS * StepKind::ALL.len()) as u8;
/// The last bit: followers take the bits between (fewer than
/// [`MAX_UNIT_CLIENTS`] servers).
const ABANDONED_BIT: u8 = (Units::BITS - 1) as u8;

/// What weak fairness is about: a client's progress steps of one kind, the
/// server's reaper, or one follower's log application.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum FairnessUnit {
    Client {
        client: ClientId,
        kind: StepKind,
    },
    Reap,
    Apply {
        server: u8,
    },
    /// The server expiring sessions their clients gave up on.
    ExpireAbandoned,
}

impl FairnessUnit {
    /// The unit of a progress action; None for a fault.
    pub fn of(action: Action) -> Option<FairnessUnit> {
        let kind = match action {
            Action::Call(_) => StepKind::Call,
            Action::Send { .. } => StepKind::Send,
            Action::Deliver(_) => StepKind::Deliver,
            Action::FireTimer(_) => StepKind::FireTimer,
            Action::Reconnect { .. } => StepKind::Reconnect,
            Action::ReconnectFails(_) => StepKind::ReconnectFails,
            Action::LearnExpiry { .. } => StepKind::LearnExpiry,
            Action::Reap => return Some(FairnessUnit::Reap),
            Action::ExpireAbandoned { .. } => return Some(FairnessUnit::ExpireAbandoned),
            Action::Apply { server } => return Some(FairnessUnit::Apply { server }),
            _ => return None,
        };
        let client = action.client().expect("a client's step");
        Some(FairnessUnit::Client { client, kind })
    }

    fn bit(self) -> u8 {
        match self {
            FairnessUnit::Client { client, kind } => {
                (client * StepKind::ALL.len() + kind as usize) as u8
            }
            FairnessUnit::Reap => REAP_BIT,
            FairnessUnit::Apply { server } => REAP_BIT + server,
            FairnessUnit::ExpireAbandoned => ABANDONED_BIT,
        }
    }

    fn from_bit(bit: u8) -> FairnessUnit {
        let kinds = StepKind::ALL.len() as u8;
        match bit {
            b if b < REAP_BIT => FairnessUnit::Client {
                client: usize::from(b / kinds),
                kind: StepKind::ALL[usize::from(b % kinds)],
            },
            REAP_BIT => FairnessUnit::Reap,
            ABANDONED_BIT => FairnessUnit::ExpireAbandoned,
            b => FairnessUnit::Apply {
                server: b - REAP_BIT,
            },
        }
    }
}

impl fmt::Display for FairnessUnit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = |kind: StepKind| match kind {
            StepKind::Call => "call",
            StepKind::Send => "send",
            StepKind::Deliver => "deliver",
            StepKind::FireTimer => "fire_timer",
            StepKind::Reconnect => "reconnect",
            StepKind::ReconnectFails => "reconnect_fails",
            StepKind::LearnExpiry => "learn_expiry",
        };
        match self {
            FairnessUnit::Client { client, kind: k } => write!(f, "c{client} {}", kind(*k)),
            FairnessUnit::Reap => write!(f, "server reap"),
            FairnessUnit::ExpireAbandoned => write!(f, "server expire_abandoned"),
            FairnessUnit::Apply { server } => write!(f, "server {server} apply"),
        }
    }
}

/// A set of fairness units.
type Units = u128;

fn bit(unit: FairnessUnit) -> Units {
    1 << unit.bit()
}

fn units_in(set: Units) -> impl Iterator<Item = FairnessUnit> {
    (0..Units::BITS as u8)
        .filter(move |b| set & (1 << b) != 0)
        .map(FairnessUnit::from_bit)
}

/// No unit: the edge is a fault.
const FAULT: u8 = u8::MAX;

/// One transition of the explored graph.
#[derive(Clone, Copy, Debug)]
struct Edge {
    to: u32,
    /// Index of the action in the source state's `actions` list.
    choice: u16,
    /// The action's fairness unit bit, or [`FAULT`].
    unit: u8,
    completes: bool,
}

impl Edge {
    /// The edge may lie on a livelock's cycle.
    fn idles(&self) -> bool {
        self.unit != FAULT && !self.completes
    }
}

const NO_PARENT: u32 = u32::MAX;

/// The explored state graph (states by index, in BFS order).
struct Graph {
    /// Per state: where its edges start in `edges` (one more entry at the end).
    first_edge: Vec<u32>,
    edges: Vec<Edge>,
    /// Per state: the BFS parent and the choice leading here.
    parent: Vec<(u32, u16)>,
    /// Per state: the fairness units enabled.
    enabled: Vec<Units>,
    /// Per state: some client waits for the outcome of a call.
    waiting: Vec<bool>,
    /// Fault edges that did not shrink the budget (should be none).
    budget_breaks: usize,
}

impl Graph {
    fn states(&self) -> usize {
        self.parent.len()
    }

    fn edges_of(&self, state: u32) -> &[Edge] {
        let from = self.first_edge[state as usize] as usize;
        let to = self.first_edge[state as usize + 1] as usize;
        &self.edges[from..to]
    }
}

/// Why a search stopped before it explored every state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Limit {
    States(usize),
    Timeout(Duration),
    Memory(MemoryStop),
}

impl Limit {
    /// `states`, `timeout` or `memory`: the reason reports keep.
    pub fn reason(&self) -> &'static str {
        match self {
            Limit::States(_) => "states",
            Limit::Timeout(_) => "timeout",
            Limit::Memory(_) => "memory",
        }
    }
}

impl fmt::Display for Limit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Limit::States(n) => write!(f, "its state limit ({n} states)"),
            Limit::Timeout(t) => write!(f, "its timeout ({} s)", t.as_secs()),
            Limit::Memory(stop) => write!(
                f,
                "its memory budget ({}; {} in use)",
                stop.budget,
                Bytes(stop.in_use_bytes)
            ),
        }
    }
}

/// A reachable fair cycle in which calls stay pending.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Lasso {
    /// From the initial state to the cycle's first state.
    pub prefix: Vec<TraceStep>,
    /// From that state back to it.
    pub cycle: Vec<TraceStep>,
    /// The clients whose calls stay pending around the cycle.
    pub waiting: Vec<ClientId>,
}

/// What the search says about progress.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LassoVerdict {
    /// A fair livelock was found (a lasso).
    Livelock,
    /// Every state was explored and no fair cycle keeps a call pending.
    NoLivelock,
    /// The search stopped early and found no lasso: no verdict.
    Inconclusive(Limit),
}

/// The result of one lasso search.
#[derive(Clone, Debug, PartialEq)]
pub struct LassoReport {
    /// `recipe/variant`.
    pub model: String,
    pub clients: usize,
    pub cycles: usize,
    pub servers: usize,
    /// With an ensemble: reconnects waited for the leader's revalidation.
    pub revalidate: bool,
    pub faults: FaultBudget,
    /// Distinct states explored.
    pub states: usize,
    pub edges: usize,
    pub elapsed: Duration,
    /// Set when the search stopped before exploring every state.
    pub cut: Option<Limit>,
    /// Components with a cycle in which a call stays pending, fair or not.
    pub waiting_components: usize,
    /// Of those, the ones only an unfair scheduler could keep going: the
    /// units each starves (enabled in all its states, never taken), in the
    /// order the components were found.
    pub unfair: Vec<Vec<FairnessUnit>>,
    /// Completing or fault edges inside a cycle, and faults that did not
    /// spend budget: 0 unless the model breaks the assumptions above.
    pub progress_on_cycles: usize,
    pub lasso: Option<Lasso>,
}

/// How many unfair components a summary describes.
const UNFAIR_SHOWN: usize = 3;

impl LassoReport {
    pub fn verdict(&self) -> LassoVerdict {
        match (&self.lasso, self.cut) {
            (Some(_), _) => LassoVerdict::Livelock,
            (None, None) => LassoVerdict::NoLivelock,
            (None, Some(limit)) => LassoVerdict::Inconclusive(limit),
        }
    }

    /// The summary: counts and the verdict, in a few lines.
    pub fn summary(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "liveness as cycles ({PROGRESS}: a pending call is eventually answered, under weak fairness)"
        );
        let _ = writeln!(
            out,
            "  states: {}, transitions: {}, time: {:.2} s{}",
            self.states,
            self.edges,
            self.elapsed.as_secs_f64(),
            match self.cut {
                Some(Limit::Memory(stop)) => format!(
                    " (not exhaustive: memory budget of {} reached after {} states; {} in use, the last third of the budget kept for a table that doubles)",
                    stop.budget,
                    self.states,
                    Bytes(stop.in_use_bytes)
                ),
                Some(limit) => format!(" (stopped at {limit})"),
                None => " (exhaustive)".to_string(),
            }
        );
        let _ = writeln!(
            out,
            "  cycles keeping a call pending: {} component(s), {} of them unfair",
            self.waiting_components,
            self.unfair.len()
        );
        for starved in self.unfair.iter().take(UNFAIR_SHOWN) {
            let units: Vec<String> = starved.iter().map(ToString::to_string).collect();
            let _ = writeln!(
                out,
                "    unfair: starves {} (enabled in every state of the cycle, never taken)",
                units.join(", ")
            );
        }
        if self.progress_on_cycles > 0 {
            let _ = writeln!(
                out,
                "  WARNING: {} completing or fault edge(s) on a cycle, or faults that spent no budget",
                self.progress_on_cycles
            );
        }
        let _ = writeln!(out, "  {}", self.verdict_line());
        out
    }

    fn verdict_line(&self) -> String {
        match (self.verdict(), &self.lasso) {
            (LassoVerdict::Livelock, Some(lasso)) => format!(
                "livelock (lasso): {} steps to the cycle, {} steps around it; {} wait(s) forever",
                lasso.prefix.len(),
                lasso.cycle.len(),
                clients_text(&lasso.waiting)
            ),
            (LassoVerdict::NoLivelock, _) => "no livelock".to_string(),
            (LassoVerdict::Inconclusive(limit), _) => format!(
                "NO VERDICT: the search stopped at {limit} before exploring every state, with no lasso found"
            ),
            (LassoVerdict::Livelock, None) => unreachable!("a livelock has its lasso"),
        }
    }

    /// The lasso as a schedule: the prefix steps, then the cycle's, with
    /// `cycle_start` the number of prefix steps.
    pub fn schedule(&self) -> Option<Schedule> {
        let lasso = self.lasso.as_ref()?;
        let found_on = FoundOn {
            model: &self.model,
            clients: self.clients,
            cycles: self.cycles,
            servers: self.servers,
            revalidate: self.revalidate,
            faults: &self.faults,
        };
        let steps = lasso.prefix.iter().chain(&lasso.cycle);
        let steps = steps.map(|step| step.schedule.clone()).collect();
        Some(found_on.schedule(PROGRESS, "violation", Some(lasso.prefix.len()), steps))
    }
}

/// `c1` or `c0, c2`.
fn clients_text(clients: &[ClientId]) -> String {
    let names: Vec<String> = clients.iter().map(|c| format!("c{c}")).collect();
    names.join(", ")
}

/// Renders a lasso: the numbered prefix steps, then the cycle's steps
/// numbered on from there (as [`crate::run::render_trace`] renders a path).
pub fn render_lasso(lasso: &Lasso) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "to the cycle ({} steps):", lasso.prefix.len());
    render_steps(&mut out, &lasso.prefix, 1);
    let _ = writeln!(
        out,
        "the cycle ({} steps, repeated forever; back to the state after step {}):",
        lasso.cycle.len(),
        lasso.prefix.len()
    );
    render_steps(&mut out, &lasso.cycle, lasso.prefix.len() + 1);
    out
}

fn render_steps(out: &mut String, steps: &[TraceStep], first: usize) {
    for (number, step) in (first..).zip(steps) {
        let _ = writeln!(out, "  {number:>3}. {}", step.action);
        for line in &step.lines {
            let _ = writeln!(out, "         {line}");
        }
    }
}

/// Searches `model` for a lasso.
pub fn search<R: ModelRecipe>(model: RecipeModel<R>, options: &LassoOptions) -> LassoReport {
    let mut model = model;
    // Both hide steps that are enabled (see the module documentation).
    model.reduction = false;
    model.canonical.symmetry = false;
    assert!(
        model.clients.len() <= MAX_UNIT_CLIENTS && model.servers < MAX_UNIT_CLIENTS,
        "a lasso search handles at most {MAX_UNIT_CLIENTS} clients and fewer servers"
    );
    let started = Instant::now();
    let (graph, cut) = explore(&model, options, started);
    let components = tarjan(&graph);
    let analysis = analyze(&graph, &components);
    let lasso = analysis
        .livelock
        .map(|component| build_lasso(&model, &graph, &components, component));
    LassoReport {
        model: model.name.clone(),
        clients: model.clients.len(),
        cycles: model.cycles,
        servers: model.servers,
        revalidate: model.revalidate,
        faults: model.faults,
        states: graph.states(),
        edges: graph.edges.len(),
        elapsed: started.elapsed(),
        cut,
        waiting_components: analysis.waiting,
        unfair: analysis.unfair,
        progress_on_cycles: analysis.progress_on_cycles + graph.budget_breaks,
        lasso,
    }
}

// ---- exploration ----

/// Fixed seeds: the same state has the same fingerprint in every process.
fn fingerprint<T: std::hash::Hash>(value: &T) -> u64 {
    ahash::RandomState::with_seeds(
        0x1a55_0000_0000_0001,
        0x1a55_0000_0000_0002,
        0x1a55_0000_0000_0003,
        0x1a55_0000_0000_0004,
    )
    .hash_one(value)
}

/// Workload steps answered: calls answered plus gated steps skipped.
fn answered<R: ModelRecipe>(state: &ModelState<R>) -> u32 {
    state
        .clients
        .iter()
        .map(|c| u32::from(c.next_step) - u32::from(c.pending.is_some()))
        .sum()
}

fn is_waiting<R: ModelRecipe>(state: &ModelState<R>) -> bool {
    state.clients.iter().any(|c| c.pending.is_some())
}

/// The initial states, each once (by fingerprint), in the model's order:
/// the first states of the graph.
fn distinct_inits<R: ModelRecipe>(model: &RecipeModel<R>) -> Vec<ModelState<R>> {
    let mut seen = std::collections::HashSet::new();
    let mut inits = model.init_states();
    inits.retain(|state| seen.insert(fingerprint(state)));
    inits
}

/// Breadth-first exploration; returns the graph and why it stopped early.
fn explore<R: ModelRecipe>(
    model: &RecipeModel<R>,
    options: &LassoOptions,
    started: Instant,
) -> (Graph, Option<Limit>) {
    let mut graph = Graph {
        first_edge: Vec::new(),
        edges: Vec::new(),
        parent: Vec::new(),
        enabled: Vec::new(),
        waiting: Vec::new(),
        budget_breaks: 0,
    };
    let mut index: HashMap<u64, u32> = HashMap::new();
    let mut queue = VecDeque::new();
    for state in distinct_inits(model) {
        index.insert(fingerprint(&state), graph.parent.len() as u32);
        graph.parent.push((NO_PARENT, 0));
        queue.push_back(state);
    }
    let mut next_progress = options.progress_every.map(|every| started + every);
    let memory = MemoryWatch::new(
        options
            .memory_budget
            .unwrap_or_else(MemoryBudget::for_this_process),
    );
    let mut cut = None;
    let mut actions = Vec::new();
    while let Some(state) = queue.pop_front() {
        let current = graph.first_edge.len() as u32;
        // The clock and the memory now and then: every 1024 states.
        let clock = current & 0x3ff == 0;
        cut = limit_reached(&graph, options, &memory, started, clock);
        if cut.is_some() {
            break;
        }
        if clock {
            report_progress(&graph, started, options, &mut next_progress);
        }
        graph.first_edge.push(graph.edges.len() as u32);
        graph.waiting.push(is_waiting(&state));
        actions.clear();
        model.actions(&state, &mut actions);
        let mut enabled: Units = 0;
        for (choice, &action) in actions.iter().enumerate() {
            let unit = FairnessUnit::of(action);
            enabled |= unit.map_or(0, bit);
            let Some(next) = model.next_state(&state, action) else {
                continue;
            };
            if action.fault().is_some() && next.budget == state.budget {
                graph.budget_breaks += 1;
            }
            let completes = answered(&next) > answered(&state);
            let fresh = graph.parent.len() as u32;
            let to = *index.entry(fingerprint(&next)).or_insert(fresh);
            if to == fresh {
                graph.parent.push((current, choice as u16));
                queue.push_back(next);
            }
            graph.edges.push(Edge {
                to,
                choice: choice as u16,
                unit: unit.map_or(FAULT, FairnessUnit::bit),
                completes,
            });
        }
        graph.enabled.push(enabled);
    }
    // States found but not expanded have no edges.
    let expanded = graph.first_edge.len();
    let last = graph.edges.len() as u32;
    graph.first_edge.resize(graph.states() + 1, last);
    graph.enabled.resize(graph.states(), 0);
    graph.waiting.resize(graph.states(), false);
    debug_assert!(cut.is_some() || expanded == graph.states());
    (graph, cut)
}

/// The state limit, or (when `clock`: now and then) the timeout or the
/// memory budget.
fn limit_reached(
    graph: &Graph,
    options: &LassoOptions,
    memory: &MemoryWatch,
    started: Instant,
    clock: bool,
) -> Option<Limit> {
    if graph.states() > options.max_states {
        return Some(Limit::States(options.max_states));
    }
    if !clock {
        return None;
    }
    let timeout = options.timeout.filter(|t| started.elapsed() >= *t);
    timeout
        .map(Limit::Timeout)
        .or_else(|| memory.check().map(Limit::Memory))
}

fn report_progress(
    graph: &Graph,
    started: Instant,
    options: &LassoOptions,
    next: &mut Option<Instant>,
) {
    let (Some(due), Some(every)) = (*next, options.progress_every) else {
        return;
    };
    if Instant::now() >= due {
        eprintln!(
            "lasso search: {} s, {} states, {} transitions",
            started.elapsed().as_secs(),
            graph.states(),
            graph.edges.len()
        );
        *next = Some(due + every);
    }
}

// ---- strongly connected components ----

const UNVISITED: u32 = u32::MAX;

/// The component of each state in the graph of idle edges (iterative
/// Tarjan: the graph may have millions of states).
fn tarjan(graph: &Graph) -> Vec<u32> {
    let n = graph.states();
    let mut search = Tarjan {
        graph,
        order: vec![UNVISITED; n],
        low: vec![0; n],
        on_stack: vec![false; n],
        stack: Vec::new(),
        component: vec![UNVISITED; n],
        calls: Vec::new(),
        counter: 0,
        components: 0,
    };
    for root in 0..n as u32 {
        if search.order[root as usize] == UNVISITED {
            search.visit(root);
            search.run();
        }
    }
    search.component
}

/// Tarjan's algorithm with an explicit call stack.
struct Tarjan<'g> {
    graph: &'g Graph,
    /// Visit order of each state (UNVISITED before).
    order: Vec<u32>,
    low: Vec<u32>,
    on_stack: Vec<bool>,
    stack: Vec<u32>,
    component: Vec<u32>,
    /// The "recursion": a state and the index of its next edge to follow.
    calls: Vec<(u32, usize)>,
    counter: u32,
    components: u32,
}

impl Tarjan<'_> {
    fn visit(&mut self, v: u32) {
        self.order[v as usize] = self.counter;
        self.low[v as usize] = self.counter;
        self.counter += 1;
        self.stack.push(v);
        self.on_stack[v as usize] = true;
        self.calls.push((v, 0));
    }

    /// Runs until the call stack is empty.
    fn run(&mut self) {
        while let Some(&(v, next)) = self.calls.last() {
            if let Some(edge) = self.graph.edges_of(v).get(next) {
                self.calls.last_mut().expect("a frame").1 += 1;
                let w = edge.to;
                if !edge.idles() {
                    continue;
                }
                if self.order[w as usize] == UNVISITED {
                    self.visit(w);
                } else if self.on_stack[w as usize] {
                    self.low[v as usize] = self.low[v as usize].min(self.order[w as usize]);
                }
                continue;
            }
            self.calls.pop();
            if let Some(&(u, _)) = self.calls.last() {
                self.low[u as usize] = self.low[u as usize].min(self.low[v as usize]);
            }
            if self.low[v as usize] == self.order[v as usize] {
                self.close_component(v);
            }
        }
    }

    /// Pops the component whose root is `v`.
    fn close_component(&mut self, v: u32) {
        while let Some(w) = self.stack.pop() {
            self.on_stack[w as usize] = false;
            self.component[w as usize] = self.components;
            if w == v {
                break;
            }
        }
        self.components += 1;
    }
}

/// What one component holds, for the fairness judgement.
#[derive(Clone, Copy)]
struct Component {
    /// Units enabled in every state of it.
    always: Units,
    /// Units of its internal idle edges.
    taken: Units,
    internal: u32,
    /// A call is pending in every state of it.
    waiting: bool,
    /// Its first state in BFS order (the one nearest the start).
    entry: u32,
}

struct Analysis {
    waiting: usize,
    unfair: Vec<Vec<FairnessUnit>>,
    progress_on_cycles: usize,
    /// The fair livelock component nearest the start.
    livelock: Option<u32>,
}

fn analyze(graph: &Graph, component: &[u32]) -> Analysis {
    let count = component.iter().map(|&c| c as usize + 1).max().unwrap_or(0);
    let mut parts = vec![
        Component {
            always: Units::MAX,
            taken: 0,
            internal: 0,
            waiting: true,
            entry: u32::MAX,
        };
        count
    ];
    let mut progress_on_cycles = 0;
    for v in 0..graph.states() as u32 {
        let part = &mut parts[component[v as usize] as usize];
        part.always &= graph.enabled[v as usize];
        part.waiting &= graph.waiting[v as usize];
        part.entry = part.entry.min(v);
        for edge in graph.edges_of(v) {
            if component[edge.to as usize] != component[v as usize] {
                continue;
            }
            if !edge.idles() {
                progress_on_cycles += 1;
                continue;
            }
            part.internal += 1;
            part.taken |= 1 << edge.unit;
        }
    }
    let mut analysis = Analysis {
        waiting: 0,
        unfair: Vec::new(),
        progress_on_cycles,
        livelock: None,
    };
    let mut candidates: Vec<(u32, u32)> = Vec::new();
    for (index, part) in parts.iter().enumerate() {
        if part.internal == 0 || !part.waiting {
            continue;
        }
        analysis.waiting += 1;
        let starved = part.always & !part.taken;
        if starved == 0 {
            candidates.push((part.entry, index as u32));
        } else {
            analysis.unfair.push(units_in(starved).collect());
        }
    }
    analysis.livelock = candidates.iter().min().map(|&(_, c)| c);
    analysis
}

// ---- the lasso ----

/// One step inside a component: from a state, the edge taken.
type Hop = (u32, Edge);

/// What a path inside a component must reach.
enum Goal {
    /// A state where none of these units is enabled.
    Disabled(Units),
    /// An edge of this unit, taken.
    Take(u8),
    /// This state, after at least one step.
    Back(u32),
}

/// The shortest path inside component `part` from `from` to `goal`.
fn path_in(graph: &Graph, component: &[u32], part: u32, from: u32, goal: &Goal) -> Vec<Hop> {
    if let Goal::Disabled(units) = goal {
        if graph.enabled[from as usize] & units == 0 {
            return Vec::new();
        }
    }
    // How each state was first reached (`from` never is: it is the root).
    let mut came_from: HashMap<u32, Hop> = HashMap::new();
    let path_to = |came_from: &HashMap<u32, Hop>, mut v: u32, last: Option<Hop>| {
        let mut hops: Vec<Hop> = last.into_iter().collect();
        while v != from {
            let hop = came_from[&v];
            hops.push(hop);
            v = hop.0;
        }
        hops.reverse();
        hops
    };
    let mut queue = VecDeque::from([from]);
    while let Some(v) = queue.pop_front() {
        for &edge in graph.edges_of(v) {
            if !edge.idles() || component[edge.to as usize] != part {
                continue;
            }
            let ends = match goal {
                Goal::Take(unit) => edge.unit == *unit,
                Goal::Back(target) => edge.to == *target,
                Goal::Disabled(_) => false,
            };
            if ends {
                return path_to(&came_from, v, Some((v, edge)));
            }
            if edge.to == from || came_from.contains_key(&edge.to) {
                continue;
            }
            came_from.insert(edge.to, (v, edge));
            if let Goal::Disabled(units) = goal {
                if graph.enabled[edge.to as usize] & units == 0 {
                    return path_to(&came_from, edge.to, None);
                }
            }
            queue.push_back(edge.to);
        }
    }
    unreachable!("a strongly connected component reaches every goal it was chosen for")
}

/// The cycle from the component's entry state: shortest paths that satisfy
/// every unit enabled somewhere in the component, then back.
fn fair_cycle(graph: &Graph, component: &[u32], part: u32, start: u32) -> Vec<Hop> {
    let states: Vec<u32> = (0..graph.states() as u32)
        .filter(|&v| component[v as usize] == part)
        .collect();
    let sometimes = states
        .iter()
        .fold(0, |set, &v| set | graph.enabled[v as usize]);
    let taken = states
        .iter()
        .flat_map(|&v| graph.edges_of(v))
        .filter(|e| e.idles() && component[e.to as usize] == part)
        .fold(0 as Units, |set, e| set | 1 << e.unit);
    let mut hops: Vec<Hop> = Vec::new();
    let mut here = start;
    let mut satisfied = !graph.enabled[start as usize];
    for unit in 0..Units::BITS as u8 {
        let unit_bit: Units = 1 << unit;
        if sometimes & unit_bit == 0 || satisfied & unit_bit != 0 {
            continue;
        }
        let goal = if taken & unit_bit != 0 {
            Goal::Take(unit)
        } else {
            Goal::Disabled(unit_bit)
        };
        for hop in path_in(graph, component, part, here, &goal) {
            satisfied |= 1 << hop.1.unit | !graph.enabled[hop.1.to as usize];
            here = hop.1.to;
            hops.push(hop);
        }
    }
    if hops.is_empty() || here != start {
        hops.extend(path_in(graph, component, part, here, &Goal::Back(start)));
    }
    hops
}

/// The units enabled in every state of the cycle `hops` (from `start`)
/// that none of its edges takes: empty for a fair cycle.
fn starved_on(graph: &Graph, start: u32, hops: &[Hop]) -> Units {
    let always = hops.iter().fold(graph.enabled[start as usize], |set, hop| {
        set & graph.enabled[hop.1.to as usize]
    });
    let taken = hops
        .iter()
        .fold(0 as Units, |set, hop| set | 1 << hop.1.unit);
    always & !taken
}

/// Replays the choices from an initial state: the states and actions.
fn replay_choices<R: ModelRecipe>(
    model: &RecipeModel<R>,
    from: ModelState<R>,
    choices: &[u16],
) -> (StatePath<R>, ModelState<R>) {
    let mut path = Vec::new();
    let mut state = from;
    let mut actions = Vec::new();
    for &choice in choices {
        actions.clear();
        model.actions(&state, &mut actions);
        let action = actions[usize::from(choice)];
        let next = model
            .next_state(&state, action)
            .expect("a successor the search saw");
        path.push((state, Some(action)));
        state = next;
    }
    (path, state)
}

fn build_lasso<R: ModelRecipe>(
    model: &RecipeModel<R>,
    graph: &Graph,
    component: &[u32],
    part: u32,
) -> Lasso {
    let start = (0..graph.states() as u32)
        .find(|&v| component[v as usize] == part)
        .expect("a component has a state");
    let mut prefix_choices = Vec::new();
    let mut v = start;
    while graph.parent[v as usize].0 != NO_PARENT {
        let (parent, choice) = graph.parent[v as usize];
        prefix_choices.push(choice);
        v = parent;
    }
    prefix_choices.reverse();
    let root = distinct_inits(model).swap_remove(v as usize);
    let (prefix, at_start) = replay_choices(model, root, &prefix_choices);
    let cycle_hops = fair_cycle(graph, component, part, start);
    let cycle_choices: Vec<u16> = cycle_hops.iter().map(|hop| hop.1.choice).collect();
    let (cycle, back) = replay_choices(model, at_start.clone(), &cycle_choices);
    assert!(
        back == at_start,
        "the lasso's cycle must return to its first state (a fingerprint collision?)"
    );
    assert_eq!(
        starved_on(graph, start, &cycle_hops),
        0,
        "the lasso's cycle must take every unit enabled all along it"
    );
    let waiting = (0..at_start.clients.len())
        .filter(|&c| at_start.clients[c].pending.is_some())
        .collect();
    // With ranks the states above are canonical: narrate the concrete run.
    let prefix_steps = prefix.len();
    let mut path = prefix;
    path.extend(cycle);
    path.push((back, None));
    let mut concrete = crate::canonical::concretize(model, path)
        .unwrap_or_else(|error| panic!("{}: {error}", model.name));
    concrete.pop();
    let cycle = concrete.split_off(prefix_steps);
    let raw = model.raw();
    Lasso {
        prefix: trace(&raw, concrete),
        cycle: trace(&raw, cycle),
        waiting,
    }
}
