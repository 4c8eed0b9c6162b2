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
//!    stateright [`Model`](stateright::Model) methods only
//!    (`init_states`, `actions`, `next_state`), so whatever the model
//!    canonicalizes in `next_state` the search sees canonicalized. The
//!    partial-order reduction and the twin rule are turned off: both hide
//!    enabled steps, which fairness must see. States are kept as 64-bit
//!    fingerprints (as stateright keeps them); per state: its BFS parent,
//!    the fairness units enabled in it, whether a call is pending, and its
//!    outgoing edges.
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

mod build;
mod components;
mod graph;
mod report;
mod units;

pub use report::{render_lasso, Lasso, LassoReport, LassoVerdict};
pub use units::{FairnessUnit, StepKind};

use build::build_lasso;
use components::{analyze, tarjan};
use graph::explore;
use units::MAX_UNIT_CLIENTS;

use crate::memory::{Bytes, MemoryBudget, MemoryStop};
use crate::model::{ModelRecipe, RecipeModel};
use std::fmt;
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
