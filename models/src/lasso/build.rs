//! The reported lasso, built from a fair livelock component: the shortest
//! path to the component's entry state, then a cycle back to it that takes
//! every unit enabled all along it, both replayed through the model's
//! `next_state`, checked, and narrated as concrete steps.

use super::graph::{distinct_inits, Edge, Graph, NO_PARENT};
use super::report::Lasso;
use super::units::Units;
use crate::model::{ModelRecipe, RecipeModel};
use crate::run::trace;
use crate::shorten::StatePath;
use crate::state::ModelState;
use stateright::Model;
use std::collections::{HashMap, VecDeque};

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

pub(super) fn build_lasso<R: ModelRecipe>(
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
