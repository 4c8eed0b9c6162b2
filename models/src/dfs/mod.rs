//! The exhaustive searches behind `check`: depth first (`--strategy dfs`)
//! and breadth first (the default, [`Order::BreadthFirst`]).
//!
//! Breadth first, on one thread, it explores, counts and discovers exactly
//! what stateright 0.30's BFS checker did (the oldest state first,
//! successors queued in action order; the first discovery of an `always`
//! or `sometimes` property kept, an `eventually` one overwritten by every
//! later terminal state that had not satisfied it, which
//! `crate::run::eventually_counterexample` then searches again). It is ours
//! since stateright 0.31, whose BFS keeps judging properties it has a
//! discovery for and overwrites them with later, longer paths: the
//! counterexamples the tests pin would change. (Its BFS also keeps each
//! queued state's path, as this search does.)
//!
//! Depth first, it explores what stateright 0.30's DFS checker explores, in the same
//! order on one thread (the newest state first, successors pushed in action
//! order), counts the same (generated states, unique fingerprints, depth;
//! the initial state is depth 1) and reports through stateright's
//! [`Checker`] trait. It is ours because a fifth of the barrier's time went
//! to the two threads contending in stateright's bookkeeping: a lock per
//! visited-set insert over eight shards, a shared read lock per property
//! per state to ask whether it had been discovered, a shared counter per
//! generated state. Here the visited set has many shards
//! ([`visited::Visited`]), each thread counts on its own and publishes once
//! per block, and reads which properties are discovered once per block.
//!
//! Semantics kept from stateright: a property's discovery is the
//! fingerprint path to the first state found that breaks an `always`,
//! satisfies a `sometimes`, or ends (no new successor) without having
//! satisfied an `eventually`; the search ends when every property has a
//! discovery or no state is left. One difference: the first discovery of a
//! property is kept (stateright overwrote an `eventually` discovery with
//! later terminal states, some of which satisfied it).

mod market;
mod visited;

use market::Broker;
use stateright::{Checker, Expectation, Model, Path, Property};
use std::collections::{HashMap, VecDeque};
use std::hash::Hash;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;
use visited::Visited;

/// States a thread explores between looks at the shared counters, the
/// discoveries and the threads waiting for work (stateright's block size).
const BLOCK: usize = 1500;

/// A state to explore: the fingerprints of its path from an initial state
/// (its own last), the `eventually` properties not yet satisfied on that
/// path, and its depth.
struct Job<S> {
    state: S,
    path: Vec<u64>,
    unsatisfied: u64,
    depth: usize,
}

/// Which queued state a search explores next.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Order {
    /// The newest: depth first.
    DepthFirst,
    /// The oldest: breadth first (shortest paths on one thread).
    BreadthFirst,
}

/// What the threads share.
struct Search<M: Model> {
    model: M,
    order: Order,
    properties: Vec<Property<M>>,
    /// Do not explore states at this depth or deeper.
    depth_limit: Option<usize>,
    visited: Visited,
    /// Generated states (every successor, new or not, and the initial ones).
    generated: AtomicUsize,
    max_depth: AtomicUsize,
    /// Bit `i`: property `i` has a discovery.
    discovered: AtomicU64,
    discoveries: Mutex<Vec<Option<Vec<u64>>>>,
    /// Threads that have returned.
    finished: AtomicUsize,
}

/// A depth-first search running on its threads.
pub struct Dfs<M: Model> {
    search: Arc<Search<M>>,
    threads: usize,
    handles: Vec<JoinHandle<()>>,
    broker: Broker<Job<M::State>>,
}

impl<M> Dfs<M>
where
    M: Model + Send + Sync + 'static,
    M::State: Hash + Send + 'static,
{
    /// Starts `threads` threads exploring `model` in `order`, not below
    /// `depth_limit` (stateright's `target_max_depth`).
    pub fn spawn(model: M, order: Order, threads: usize, depth_limit: Option<usize>) -> Dfs<M> {
        let properties = model.properties();
        assert!(properties.len() <= 64, "at most 64 properties");
        let eventually = properties
            .iter()
            .enumerate()
            .filter(|(_, p)| p.expectation == Expectation::Eventually)
            .fold(0u64, |bits, (i, _)| bits | 1 << i);
        let visited = Visited::new();
        let first: VecDeque<Job<M::State>> = model
            .init_states()
            .into_iter()
            .filter(|state| model.within_boundary(state))
            .map(|state| {
                let fingerprint = fingerprint(&state);
                visited.insert(fingerprint);
                Job {
                    state,
                    path: vec![fingerprint],
                    unsatisfied: eventually,
                    depth: 1,
                }
            })
            .collect();
        let search = Arc::new(Search {
            generated: AtomicUsize::new(first.len()),
            discoveries: Mutex::new(vec![None; properties.len()]),
            model,
            order,
            properties,
            depth_limit,
            visited,
            max_depth: AtomicUsize::new(0),
            discovered: AtomicU64::new(0),
            finished: AtomicUsize::new(0),
        });
        let threads = threads.max(1);
        let broker = Broker::new(threads, first);
        let handles = (0..threads)
            .map(|t| {
                let search = Arc::clone(&search);
                let door = broker.door();
                std::thread::Builder::new()
                    .name(format!("dfs-{t}"))
                    .spawn(move || search.work(door, threads))
                    .expect("a search thread")
            })
            .collect();
        Dfs {
            search,
            threads,
            handles,
            broker,
        }
    }
}

impl<M: Model> Search<M>
where
    M::State: Hash,
{
    fn all_discovered(&self) -> bool {
        self.discovered.load(Ordering::Relaxed).count_ones() as usize == self.properties.len()
    }

    /// One thread's loop: blocks of states, sharing work in between.
    fn work(&self, mut broker: Broker<Job<M::State>>, threads: usize) {
        let _finished = Finished(&self.finished);
        let mut pending = VecDeque::new();
        loop {
            if pending.is_empty() {
                pending = broker.pop();
                if pending.is_empty() {
                    return;
                }
            }
            self.explore_block(&mut pending);
            if self.all_discovered() {
                return;
            }
            if pending.len() > 1 && threads > 1 {
                broker.share(&mut pending);
            }
        }
    }

    /// Explores up to [`BLOCK`] states from the top of `pending`.
    fn explore_block(&self, pending: &mut VecDeque<Job<M::State>>) {
        let mut discovered = self.discovered.load(Ordering::Relaxed);
        let mut generated = 0;
        let mut deepest = self.max_depth.load(Ordering::Relaxed);
        let mut actions = Vec::new();
        for _ in 0..BLOCK {
            let next = match self.order {
                Order::DepthFirst => pending.pop_back(),
                Order::BreadthFirst => pending.pop_front(),
            };
            let Some(job) = next else {
                break;
            };
            deepest = deepest.max(job.depth);
            if self.depth_limit.is_some_and(|limit| job.depth >= limit) {
                continue;
            }
            let Some(unsatisfied) = self.judge(&job, &mut discovered) else {
                // Every property has a discovery.
                break;
            };
            let mut terminal = true;
            self.model.actions(&job.state, &mut actions);
            for action in actions.drain(..) {
                let Some(next) = self.model.next_state(&job.state, action) else {
                    continue;
                };
                if !self.model.within_boundary(&next) {
                    continue;
                }
                generated += 1;
                // A state seen before is not terminal either: it may be a
                // join in a DAG (as in stateright).
                terminal = false;
                let fingerprint = fingerprint(&next);
                if !self.visited.insert(fingerprint) {
                    continue;
                }
                let mut path = Vec::with_capacity(job.path.len() + 1);
                path.extend_from_slice(&job.path);
                path.push(fingerprint);
                pending.push_back(Job {
                    state: next,
                    path,
                    unsatisfied,
                    depth: job.depth + 1,
                });
            }
            if terminal {
                // Breadth first, as stateright 0.30's BFS: every terminal
                // state overwrites the discoveries of the `eventually`
                // properties unsatisfied on its path.
                let overwrite = self.order == Order::BreadthFirst;
                for i in bits(unsatisfied & if overwrite { !0 } else { !discovered }) {
                    self.discover(i, &job.path, &mut discovered, overwrite);
                }
            }
        }
        self.generated.fetch_add(generated, Ordering::Relaxed);
        self.max_depth.fetch_max(deepest, Ordering::Relaxed);
    }

    /// Checks the properties without a discovery on `job`'s state. Returns
    /// the `eventually` properties still unsatisfied on its path, or `None`
    /// when no property awaits a discovery any more.
    fn judge(&self, job: &Job<M::State>, discovered: &mut u64) -> Option<u64> {
        let mut unsatisfied = job.unsatisfied;
        let mut awaiting = false;
        for (i, property) in self.properties.iter().enumerate() {
            if *discovered & 1 << i != 0 {
                continue;
            }
            let holds = (property.condition)(&self.model, &job.state);
            match property.expectation {
                Expectation::Always if !holds => self.discover(i, &job.path, discovered, false),
                Expectation::Sometimes if holds => self.discover(i, &job.path, discovered, false),
                Expectation::Always | Expectation::Sometimes => awaiting = true,
                Expectation::Eventually => {
                    // Judged at the ends of paths: still awaiting.
                    awaiting = true;
                    if holds {
                        unsatisfied &= !(1 << i);
                    }
                }
            }
        }
        awaiting.then_some(unsatisfied)
    }

    /// Records `path` as property `i`'s discovery unless it has one (or
    /// in any case, to `overwrite` it).
    fn discover(&self, i: usize, path: &[u64], discovered: &mut u64, overwrite: bool) {
        let mut discoveries = self
            .discoveries
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if overwrite || discoveries[i].is_none() {
            discoveries[i] = Some(path.to_vec());
        }
        *discovered = self.discovered.fetch_or(1 << i, Ordering::Relaxed) | 1 << i;
    }
}

/// Counts a thread as finished when it returns or unwinds.
struct Finished<'a>(&'a AtomicUsize);

impl Drop for Finished<'_> {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::Relaxed);
    }
}

/// The indices of the set bits of `set`.
fn bits(set: u64) -> impl Iterator<Item = usize> {
    (0..64).filter(move |i| set & 1 << i != 0)
}

/// A state's fingerprint: the same in every process (fixed seeds).
fn fingerprint<S: Hash>(state: &S) -> u64 {
    crate::canonical::fingerprint(state)
}

/// The path whose states have these fingerprints: from the initial state
/// with the first, at each step the action whose successor has the next.
fn path_of<M: Model>(model: &M, fingerprints: &[u64]) -> Path<M::State, M::Action>
where
    M::State: Hash + PartialEq + Clone,
    M::Action: PartialEq,
{
    let (first, rest) = fingerprints.split_first().expect("a path has a state");
    let init = model
        .init_states()
        .into_iter()
        .find(|state| fingerprint(state) == *first)
        .expect("the model's initial states do not change");
    let mut state = init.clone();
    let mut actions = Vec::with_capacity(rest.len());
    for next in rest {
        let (action, successor) = model
            .next_steps(&state)
            .into_iter()
            .find(|(_, successor)| fingerprint(successor) == *next)
            .expect("the model's steps do not change");
        actions.push(action);
        state = successor;
    }
    Path::from_actions(model, init, &actions).expect("the path was just replayed")
}

impl<M> Checker<M> for Dfs<M>
where
    M: Model,
    M::State: Hash + PartialEq + Clone,
    M::Action: PartialEq,
{
    fn model(&self) -> &M {
        &self.search.model
    }

    fn state_count(&self) -> usize {
        self.search.generated.load(Ordering::Relaxed)
    }

    fn unique_state_count(&self) -> usize {
        self.search.visited.len()
    }

    fn max_depth(&self) -> usize {
        self.search.max_depth.load(Ordering::Relaxed)
    }

    fn discoveries(&self) -> HashMap<&'static str, Path<M::State, M::Action>> {
        let discoveries = self
            .search
            .discoveries
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        self.search
            .properties
            .iter()
            .zip(discoveries.iter())
            .filter_map(|(property, path)| {
                let path = path.as_ref()?;
                Some((property.name, path_of(&self.search.model, path)))
            })
            .collect()
    }

    fn handles(&mut self) -> Vec<JoinHandle<()>> {
        std::mem::take(&mut self.handles)
    }

    fn is_done(&self) -> bool {
        self.search.finished.load(Ordering::Relaxed) == self.threads
            || self.broker.is_closed()
            || self.search.all_discovered()
    }
}
