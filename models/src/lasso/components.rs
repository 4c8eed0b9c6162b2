//! The strongly connected components of the lasso search's graph of idle
//! edges (iterative Tarjan), and the fairness judgement of each: which
//! keep a call pending, which only an unfair scheduler could keep going,
//! and the fair livelock nearest the start.

use super::graph::Graph;
use super::units::{units_in, FairnessUnit, Units};

const UNVISITED: u32 = u32::MAX;

/// The component of each state in the graph of idle edges (iterative
/// Tarjan: the graph may have millions of states).
pub(super) fn tarjan(graph: &Graph) -> Vec<u32> {
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

pub(super) struct Analysis {
    pub(super) waiting: usize,
    pub(super) unfair: Vec<Vec<FairnessUnit>>,
    pub(super) progress_on_cycles: usize,
    /// The fair livelock component nearest the start.
    pub(super) livelock: Option<u32>,
}

pub(super) fn analyze(graph: &Graph, component: &[u32]) -> Analysis {
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
