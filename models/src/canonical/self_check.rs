//! The renaming self-check: a recipe's declared renaming must be a
//! symmetry of its behaviour. Random reachable states are renamed (a random
//! permutation of interchangeable clients, and ranks) and must keep every
//! property's verdict and the same set of canonical successors.

use super::{fingerprint, workload_classes, Canonical};
use crate::model::{ModelRecipe, RecipeModel};
use crate::state::ModelState;

/// What the self-check saw.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SelfCheck {
    /// States checked (each against one renaming).
    pub states: usize,
    /// Successors compared.
    pub successors: usize,
}

/// A renaming that changed what the model does: the recipe's declaration
/// is wrong (or the recipe orders by ids it declared as names).
#[derive(Debug, thiserror::Error)]
pub enum SymmetryBreak {
    #[error(
        "after {steps} random steps, renaming clients by {order:?} changes the verdict of `{property}`"
    )]
    Verdict {
        steps: usize,
        order: Vec<usize>,
        property: &'static str,
    },
    #[error(
        "after {steps} random steps, renaming clients by {order:?}{ranked} changes what can \
         happen next: {only_original} canonical successor(s) only without it, {only_renamed} \
         only with it"
    )]
    Successors {
        steps: usize,
        order: Vec<usize>,
        ranked: &'static str,
        only_original: usize,
        only_renamed: usize,
    },
}

/// Tests a recipe's renaming on states reached by `walks` seeded random
/// walks of at most `depth` steps: at each state, a random renaming of
/// interchangeable clients (when `form.symmetry`) and the rank abstraction
/// (when `form.ranks`) must leave every property's verdict alone, and the
/// canonical forms of the successors must be the same set before and
/// after renaming. A recipe that orders clients by their ids fails here.
/// Each state's memoized canonical form must also equal the one computed
/// afresh (a panic: that is the checker's bug, not the recipe's).
pub fn self_check<R: ModelRecipe>(
    model: &RecipeModel<R>,
    form: Canonical,
    walks: usize,
    depth: usize,
    seed: u64,
) -> Result<SelfCheck, SymmetryBreak> {
    use stateright::{Expectation, Model as _};
    let renamable = model
        .renamable()
        .expect("self_check needs a recipe with a renaming");
    let checked = model.clone().with_canonical(form).with_reduction(false);
    let raw = checked.raw();
    let classes = workload_classes(model);
    let mut random = SplitMix(seed);
    let mut seen = SelfCheck::default();
    for _ in 0..walks {
        let mut state = raw.initial();
        for steps in 0..depth {
            let order = match form.symmetry {
                true => random_order(&classes, &mut random),
                false => (0..classes.len()).collect(),
            };
            assert!(
                checked.canonical_of(&state) == renamable.apply_direct(model, &state, form),
                "the memoized canonical form differs from the direct one after {steps} steps"
            );
            let renamed = renamable.renamed(model, &state, &order, form.ranks);
            for property in raw.properties() {
                // `eventually` is judged over paths, not states.
                if property.expectation == Expectation::Eventually {
                    continue;
                }
                if (property.condition)(&raw, &state) != (property.condition)(&raw, &renamed) {
                    return Err(SymmetryBreak::Verdict {
                        steps,
                        order,
                        property: property.name,
                    });
                }
            }
            let before = canonical_successors(&checked, &state);
            let after = canonical_successors(&checked, &renamed);
            seen.successors += before.len();
            if before != after {
                return Err(SymmetryBreak::Successors {
                    steps,
                    order,
                    ranked: if form.ranks { " with ranks" } else { "" },
                    only_original: before.difference(&after).count(),
                    only_renamed: after.difference(&before).count(),
                });
            }
            seen.states += 1;
            let mut enabled = Vec::new();
            raw.all_actions(&state, &mut enabled);
            if enabled.is_empty() {
                break;
            }
            let action = enabled[random.below(enabled.len())];
            state = raw.step(&state, action);
        }
    }
    Ok(seen)
}

/// The canonical forms of every successor, by their fingerprints.
fn canonical_successors<R: ModelRecipe>(
    model: &RecipeModel<R>,
    state: &ModelState<R>,
) -> std::collections::BTreeSet<u64> {
    let mut enabled = Vec::new();
    model.all_actions(state, &mut enabled);
    enabled
        .into_iter()
        .map(|action| fingerprint(&model.canonical_of(&model.step(state, action))))
        .collect()
}

/// A random permutation that moves clients within their workload class.
fn random_order(classes: &[usize], random: &mut SplitMix) -> Vec<usize> {
    let mut order: Vec<usize> = (0..classes.len()).collect();
    for class in classes
        .iter()
        .copied()
        .collect::<std::collections::BTreeSet<_>>()
    {
        let members: Vec<usize> = (0..classes.len())
            .filter(|c| classes[*c] == class)
            .collect();
        let mut targets = members.clone();
        for i in (1..targets.len()).rev() {
            targets.swap(i, random.below(i + 1));
        }
        for (c, target) in members.into_iter().zip(targets) {
            order[c] = target;
        }
    }
    order
}

/// A small seeded random source (SplitMix64).
struct SplitMix(u64);

impl SplitMix {
    fn below(&mut self, n: usize) -> usize {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        ((z ^ (z >> 31)) % n as u64) as usize
    }
}
