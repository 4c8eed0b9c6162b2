//! Shortens a discovered path by dropping the steps its discovery does not
//! need. With the partial-order reduction on, the checker may take an
//! invisible delivery that the counterexample never needed; DFS and
//! multi-threaded BFS find paths longer than the shortest. Each step is
//! dropped if the rest still runs (every step enabled in the unreduced
//! model) and still ends in a discovery of the same property; passes
//! repeat until no step can go. The result is no longer than the input and
//! usually the shortest one (the tests pin the known bugs' lengths).

use crate::action::Action;
use crate::model::{ModelRecipe, RecipeModel};
use crate::state::ModelState;
use stateright::{Expectation, Model, Property};

/// A path as stateright returns it: each state with the action taken from it.
pub type StatePath<R> = Vec<(ModelState<R>, Option<Action>)>;

/// The shortest path found by dropping steps of `path` one at a time.
pub fn shorten<R: ModelRecipe>(
    model: &RecipeModel<R>,
    property: &Property<RecipeModel<R>>,
    path: StatePath<R>,
) -> StatePath<R> {
    let full = model.clone().with_reduction(false);
    let mut actions: Vec<Action> = path.iter().filter_map(|(_, action)| *action).collect();
    let mut best = path;
    let mut changed = true;
    while changed {
        changed = false;
        for index in (0..actions.len()).rev() {
            let mut candidate = actions.clone();
            candidate.remove(index);
            if let Some(found) = discovers(&full, property, &candidate) {
                actions = candidate;
                best = found;
                changed = true;
            }
        }
    }
    best
}

/// Runs `actions` from the initial state; the path if every action is
/// enabled where it is taken and the path discovers `property`.
fn discovers<R: ModelRecipe>(
    model: &RecipeModel<R>,
    property: &Property<RecipeModel<R>>,
    actions: &[Action],
) -> Option<StatePath<R>> {
    let mut state = model.init_states().into_iter().next()?;
    let mut path = Vec::with_capacity(actions.len() + 1);
    let mut enabled = Vec::new();
    for &action in actions {
        enabled.clear();
        model.actions(&state, &mut enabled);
        if !enabled.contains(&action) {
            return None;
        }
        let next = model.next_state(&state, action)?;
        path.push((std::mem::replace(&mut state, next), Some(action)));
    }
    let holds = |s: &ModelState<R>| (property.condition)(model, s);
    let found = match property.expectation {
        Expectation::Always => !holds(&state),
        Expectation::Sometimes => holds(&state),
        Expectation::Eventually => {
            model.is_terminal(&state) && !holds(&state) && path.iter().all(|(s, _)| !holds(s))
        }
    };
    path.push((state, None));
    found.then_some(path)
}
