//! The stateful checker's reachable set under the shared abstraction
//! ([`zk_sim::abstraction`]): every state of a model, breadth first,
//! projected onto what a world run can say too, each projection with the
//! shortest path that reaches it. `sweep --coverage --against-model`
//! measures a sweep against it and writes, for the projections no seed
//! reached, their paths as schedules the stepper replays into them.
//!
//! The search is the plain one: no partial-order reduction (it skips the
//! states an invisible step passes through) and no canonical form (a
//! symmetric representative renames clients, which a world run does not).

use crate::action::Action;
use crate::model::{ModelRecipe, RecipeModel};
use crate::run::trace;
use crate::schedule::ScheduleStep;
use crate::state::ModelState;
use stateright::Model;
use std::collections::{BTreeMap, BTreeSet, HashSet, VecDeque};
use zk_recipes::zk::SessionId;
use zk_sim::abstraction;

/// What the reachable set of a model is under the shared abstraction.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reach {
    /// Distinct model states visited.
    pub model_states: usize,
    /// Each shared state the model reaches, with the number of steps of
    /// the shortest path to it.
    pub shared: BTreeMap<u64, usize>,
    /// The shortest paths, as schedule steps, to the shared states asked
    /// for ([`reach`]'s `wanted`), shortest first (ties by state).
    pub paths: Vec<(u64, Vec<ScheduleStep>)>,
}

/// A state the search discovered, with its parent and the action from it.
struct Node<R: ModelRecipe> {
    state: ModelState<R>,
    parent: Option<(usize, Action)>,
}

/// The model grew past `limit` states: too big to hold every state.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("the model has more than {limit} states: too many to compare a sweep against (fewer clients, cycles or faults)")]
pub struct TooBig {
    pub limit: usize,
}

/// Explores `model` breadth first (at most `limit` states) and projects
/// every state; the shortest paths of the first `paths` shared states
/// `wanted` keeps (shortest first).
pub fn reach<R: ModelRecipe>(
    model: &RecipeModel<R>,
    limit: usize,
    wanted: &dyn Fn(u64) -> bool,
    paths: usize,
) -> Result<Reach, TooBig> {
    // States by fingerprint (as stateright's checkers keep them).
    let mut seen: HashSet<u64> = HashSet::new();
    let mut nodes: Vec<Node<R>> = Vec::new();
    let mut first_at: BTreeMap<u64, usize> = BTreeMap::new();
    let mut depth: Vec<usize> = Vec::new();
    let mut queue = VecDeque::new();
    for init in model.init_states() {
        if seen.insert(abstraction::hash_of(&init)) {
            queue.push_back(nodes.len());
            nodes.push(Node {
                state: init,
                parent: None,
            });
            depth.push(0);
        }
    }
    let mut actions = Vec::new();
    while let Some(index) = queue.pop_front() {
        let state = nodes[index].state.clone();
        first_at.entry(shared_state(model, &state)).or_insert(index);
        actions.clear();
        model.actions(&state, &mut actions);
        for &action in &actions {
            let Some(next) = model.next_state(&state, action) else {
                continue;
            };
            if !seen.insert(abstraction::hash_of(&next)) {
                continue;
            }
            if nodes.len() >= limit {
                return Err(TooBig { limit });
            }
            queue.push_back(nodes.len());
            nodes.push(Node {
                state: next,
                parent: Some((index, action)),
            });
            depth.push(depth[index] + 1);
        }
    }
    let shared: BTreeMap<u64, usize> = first_at
        .iter()
        .map(|(&state, &index)| (state, depth[index]))
        .collect();
    let mut asked: Vec<(usize, u64)> = shared
        .iter()
        .filter(|(&state, _)| wanted(state))
        .map(|(&state, &steps)| (steps, state))
        .collect();
    asked.sort_unstable();
    let paths = asked
        .into_iter()
        .take(paths)
        .map(|(_, state)| (state, schedule_steps(model, &nodes, first_at[&state])))
        .collect();
    Ok(Reach {
        model_states: nodes.len(),
        shared,
        paths,
    })
}

/// A model state under the shared abstraction: its committed tree, each
/// client's session layer, every session a client had owned by it.
pub fn shared_state<R: ModelRecipe>(model: &RecipeModel<R>, state: &ModelState<R>) -> u64 {
    let owners: BTreeSet<(SessionId, usize)> = state
        .clients
        .iter()
        .enumerate()
        .flat_map(|(client, c)| {
            (0..=c.generation).map(move |generation| (model.session_id(client, generation), client))
        })
        .collect();
    let owner = |session: SessionId| {
        owners
            .range((session, 0)..=(session, usize::MAX))
            .next()
            .map(|&(_, client)| client)
    };
    let sessions = state.clients.iter().map(|client| &client.session);
    abstraction::shared_state(&state.server, owner, sessions)
}

/// The path to node `index` as schedule steps.
fn schedule_steps<R: ModelRecipe>(
    model: &RecipeModel<R>,
    nodes: &[Node<R>],
    index: usize,
) -> Vec<ScheduleStep> {
    let mut path = vec![(nodes[index].state.clone(), None)];
    let mut at = index;
    while let Some((parent, action)) = nodes[at].parent {
        path.push((nodes[parent].state.clone(), Some(action)));
        at = parent;
    }
    path.reverse();
    trace(model, path)
        .into_iter()
        .map(|step| step.schedule)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::setup::Setup;

    /// The fixed lock at 2 clients: its states, their shared projections,
    /// and the shortest paths asked for (pinned: a change to the model or
    /// the abstraction shows here first).
    #[test]
    fn the_fixed_locks_shared_states_are_pinned_with_their_shortest_paths() {
        let model = crate::lock::fixed(&Setup::new(2).with_reduction(false));
        let reach = reach(&model, 10_000, &|_| true, 3).expect("a small model");
        assert_eq!((reach.model_states, reach.shared.len()), (264, 69));
        let initial = shared_state(&model, &model.init_states()[0]);
        assert_eq!(reach.shared.get(&initial), Some(&0), "the start, no step");
        let lengths: Vec<usize> = reach.paths.iter().map(|(_, steps)| steps.len()).collect();
        assert_eq!(lengths, vec![0, 1, 1], "shortest first");
        for (state, steps) in &reach.paths {
            assert_eq!(reach.shared[state], steps.len());
        }
        let too_small = super::reach(&model, 100, &|_| false, 0);
        assert_eq!(too_small, Err(TooBig { limit: 100 }));
    }

    #[test]
    fn a_connection_loss_budget_adds_states() {
        let setup = Setup::new(2).with_reduction(false);
        let lossy = setup
            .clone()
            .with_faults("connection-loss=1".parse().unwrap());
        let plain = reach(&crate::lock::fixed(&setup), 10_000, &|_| false, 0).unwrap();
        let lossy = reach(&crate::lock::fixed(&lossy), 10_000, &|_| false, 0).unwrap();
        assert_eq!((lossy.model_states, lossy.shared.len()), (2126, 267));
        assert!(plain
            .shared
            .keys()
            .all(|state| lossy.shared.contains_key(state)));
    }
}
