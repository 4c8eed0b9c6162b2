//! The lasso search's state graph and the breadth-first exploration that
//! builds it: per state its BFS parent, the fairness units enabled in it,
//! whether a call is pending, and its outgoing edges (states kept as
//! 64-bit fingerprints), stopped by the search's limits.

use super::units::{bit, FairnessUnit, Units};
use super::{LassoOptions, Limit};
use crate::memory::{MemoryBudget, MemoryWatch};
use crate::model::{ModelRecipe, RecipeModel};
use crate::state::ModelState;
use stateright::Model;
use std::collections::{HashMap, VecDeque};
use std::time::Instant;

/// No unit: the edge is a fault.
const FAULT: u8 = u8::MAX;

/// One transition of the explored graph.
#[derive(Clone, Copy, Debug)]
pub(super) struct Edge {
    pub(super) to: u32,
    /// Index of the action in the source state's `actions` list.
    pub(super) choice: u16,
    /// The action's fairness unit bit, or [`FAULT`].
    pub(super) unit: u8,
    completes: bool,
}

impl Edge {
    /// The edge may lie on a livelock's cycle.
    pub(super) fn idles(&self) -> bool {
        self.unit != FAULT && !self.completes
    }
}

pub(super) const NO_PARENT: u32 = u32::MAX;

/// The explored state graph (states by index, in BFS order).
pub(super) struct Graph {
    /// Per state: where its edges start in `edges` (one more entry at the end).
    first_edge: Vec<u32>,
    pub(super) edges: Vec<Edge>,
    /// Per state: the BFS parent and the choice leading here.
    pub(super) parent: Vec<(u32, u16)>,
    /// Per state: the fairness units enabled.
    pub(super) enabled: Vec<Units>,
    /// Per state: some client waits for the outcome of a call.
    pub(super) waiting: Vec<bool>,
    /// Fault edges that did not shrink the budget (should be none).
    pub(super) budget_breaks: usize,
}

impl Graph {
    pub(super) fn states(&self) -> usize {
        self.parent.len()
    }

    pub(super) fn edges_of(&self, state: u32) -> &[Edge] {
        let from = self.first_edge[state as usize] as usize;
        let to = self.first_edge[state as usize + 1] as usize;
        &self.edges[from..to]
    }
}

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
pub(super) fn distinct_inits<R: ModelRecipe>(model: &RecipeModel<R>) -> Vec<ModelState<R>> {
    let mut seen = std::collections::HashSet::new();
    let mut inits = model.init_states();
    inits.retain(|state| seen.insert(fingerprint(state)));
    inits
}

/// Breadth-first exploration; returns the graph and why it stopped early.
pub(super) fn explore<R: ModelRecipe>(
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
