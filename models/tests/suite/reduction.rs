//! The partial-order reduction (`zk_models::reduction`) keeps every verdict
//! and every counterexample length of every registered model, and saves
//! states; the saving is pinned.

use crate::common::check_with;
use zk_models::run::CheckReport;
use zk_models::Setup;

/// Each property's verdict and the length of its path, if any.
fn verdicts(report: &CheckReport) -> Vec<(&'static str, String)> {
    report
        .properties
        .iter()
        .map(|p| {
            let steps = p.trace.as_ref().map_or(0, Vec::len);
            (p.name, format!("{:?} {steps}", p.verdict))
        })
        .collect()
}

/// Fault budgets compared for every model (the large ones skip the last).
const BUDGETS: &[&str] = &["none", "connection-loss=1", "expiry=1"];

/// Unreduced spaces too large for a quick test: (recipe, variant, budget).
const TOO_LARGE: &[(&str, &str, &str)] = &[
    ("semaphore", "original", "connection-loss=1"),
    ("semaphore", "original", "expiry=1"),
];

#[test]
fn every_model_reaches_the_same_verdicts_with_and_without_the_reduction() {
    let mut differences = Vec::new();
    for (recipe, variant, _) in zk_models::Registry::builtin().models() {
        let (recipe, variant) = (recipe.as_str(), variant.as_str());
        for &budget in BUDGETS {
            if TOO_LARGE.contains(&(recipe, variant, budget)) {
                continue;
            }
            let setup = Setup::new(2).with_faults(budget.parse().unwrap());
            let full = check_with(recipe, variant, setup.clone().with_reduction(false), None);
            let reduced = check_with(recipe, variant, setup, None);
            let name = format!("{}/{} {budget}", recipe, variant);
            assert!(full.exhaustive && reduced.exhaustive, "{name}");
            assert!(
                reduced.unique_states <= full.unique_states,
                "{name}: {} > {}",
                reduced.unique_states,
                full.unique_states
            );
            if verdicts(&full) != verdicts(&reduced) {
                differences.push(format!(
                    "{name}:\n  full    {:?}\n  reduced {:?}",
                    verdicts(&full),
                    verdicts(&reduced)
                ));
            }
        }
    }
    assert!(differences.is_empty(), "{}", differences.join("\n"));
}

#[test]
fn the_reduction_saves_a_third_of_the_fixed_locks_states() {
    let setup = Setup::new(3).with_faults("connection-loss=1".parse().unwrap());
    let full = check_with("lock", "fixed", setup.clone().with_reduction(false), None);
    let reduced = check_with("lock", "fixed", setup, None);
    assert_eq!(
        (full.unique_states, reduced.unique_states),
        (251_746, 171_130)
    );
    assert_eq!(verdicts(&full), verdicts(&reduced));
}
