//! Client symmetry and rank abstraction (`zk_models::canonical`): the
//! renaming each recipe declares passes the self-check, a recipe that
//! orders clients by their ids fails it, the state counts they save are
//! pinned, verdicts do not move, and a counterexample found on canonical
//! states is a concrete run that replays on the simulator.

mod common;

use common::check_with;
use zk_models::canonical::{self_check, Canonical, SymmetryBreak};
use zk_models::run::{CheckReport, Verdict};
use zk_models::{lock, Registry, Setup};

const SYMMETRY: Canonical = Canonical {
    symmetry: true,
    ranks: false,
};
const RANKS: Canonical = Canonical {
    symmetry: false,
    ranks: true,
};
const BOTH: Canonical = Canonical {
    symmetry: true,
    ranks: true,
};

fn setup(clients: usize, faults: &str) -> Setup {
    Setup::new(clients).with_faults(faults.parse().unwrap())
}

fn verdicts(report: &CheckReport) -> Vec<(&'static str, Verdict)> {
    report
        .properties
        .iter()
        .map(|p| (p.name, p.verdict))
        .collect()
}

#[test]
fn the_fixed_lock_is_symmetric_and_rankable() {
    let model = lock::fixed(&setup(3, "connection-loss=1,expiry=1"));
    for form in [SYMMETRY, RANKS, BOTH] {
        let seen =
            self_check(&model, form, 60, 40, 7).unwrap_or_else(|error| panic!("{form:?}: {error}"));
        assert!(seen.states > 1_000, "{form:?}: only {seen:?}");
    }
}

#[test]
fn the_original_lock_orders_by_session_id_and_the_self_check_says_so() {
    // Seed 000 sorts contenders by name, session id first (bug 1): swapping
    // two clients swaps who is first.
    let model = lock::original(&setup(2, "none"));
    let error = self_check(&model, SYMMETRY, 40, 40, 7).expect_err("not symmetric");
    assert!(matches!(error, SymmetryBreak::Successors { .. }), "{error}");
    // Its numbers are compared by order only: ranks are fine.
    self_check(&model, RANKS, 40, 40, 7).unwrap();
    // And the command line refuses symmetry for it.
    let entry = Registry::builtin().model("lock", "original").unwrap();
    let refused = entry.canonical_error(&setup(2, "none").with_symmetry(true));
    assert!(refused.unwrap().contains("not symmetric"));
}

#[test]
fn symmetry_divides_the_three_client_lock_by_the_orders_of_its_clients() {
    let faults = "connection-loss=1";
    let full = check_with("lock", "fixed", setup(3, faults), None);
    let symmetric = check_with("lock", "fixed", setup(3, faults).with_symmetry(true), None);
    let ranked = check_with("lock", "fixed", setup(3, faults).with_ranks(true), None);
    let both = check_with(
        "lock",
        "fixed",
        setup(3, faults).with_symmetry(true).with_ranks(true),
        None,
    );
    assert_eq!(
        [
            full.unique_states,
            symmetric.unique_states,
            ranked.unique_states,
            both.unique_states
        ],
        [171_130, 28_566, 159_790, 26_676]
    );
    for report in [&symmetric, &ranked, &both] {
        assert!(report.exhaustive);
        assert_eq!(verdicts(report), verdicts(&full));
    }
}

#[test]
fn a_counterexample_on_ranked_states_is_a_concrete_run_that_replays() {
    let faults = "connection-loss=1";
    let plain = check_with("lock", "original", setup(2, faults), None);
    let ranked = check_with("lock", "original", setup(2, faults).with_ranks(true), None);
    assert!(ranked.unique_states < plain.unique_states);
    assert_eq!(verdicts(&ranked), verdicts(&plain));
    let entry = Registry::builtin().model("lock", "original").unwrap();
    for property in ranked
        .properties
        .iter()
        .filter(|p| p.verdict == Verdict::Violated)
    {
        // Breadth first: the shortest counterexample is as long either way.
        let shortest = plain
            .property(property.name)
            .unwrap()
            .trace
            .as_ref()
            .unwrap();
        assert_eq!(property.trace.as_ref().unwrap().len(), shortest.len());
        let schedule = ranked.schedule(property).unwrap();
        let replayed = entry.replay(&schedule).unwrap();
        assert!(replayed.agrees(), "{}: {replayed:?}", property.name);
    }
}

// ---- The other recipes' renamings (each variant: self-check; asymmetric
// ones caught when forced; fixed variants' counts pinned). ----

use zk_models::{barrier, curator_lock, election, queue, semaphore, shared_lock};
use zk_models::{ModelRecipe, RecipeModel};

/// The self-check passes for every form in `forms` on `model`.
fn self_checks<R: ModelRecipe>(model: &RecipeModel<R>, forms: &[Canonical]) {
    for form in forms {
        let seen = self_check(model, *form, 40, 40, 7)
            .unwrap_or_else(|error| panic!("{} {form:?}: {error}", model.name));
        assert!(seen.states > 500, "{} {form:?}: only {seen:?}", model.name);
    }
}

/// Forced to rename clients, the self-check finds the recipe asymmetric;
/// ranks still pass.
fn caught_asymmetric<R: ModelRecipe>(model: &RecipeModel<R>) {
    let error = self_check(model, SYMMETRY, 40, 40, 7).expect_err("not symmetric");
    assert!(matches!(error, SymmetryBreak::Successors { .. }), "{error}");
    self_checks(model, &[RANKS]);
}

const FAULTS: &str = "connection-loss=1,expiry=1";

#[test]
fn curator_lock_renamings() {
    self_checks(
        &curator_lock::fixed(&setup(3, FAULTS)),
        &[SYMMETRY, RANKS, BOTH],
    );
    self_checks(
        &curator_lock::original(&setup(3, FAULTS)),
        &[SYMMETRY, RANKS, BOTH],
    );
}

#[test]
fn semaphore_renamings() {
    self_checks(
        &semaphore::fixed(&setup(3, FAULTS)),
        &[SYMMETRY, RANKS, BOTH],
    );
    self_checks(
        &semaphore::original(&setup(3, FAULTS)),
        &[SYMMETRY, RANKS, BOTH],
    );
}

#[test]
fn shared_lock_renamings() {
    self_checks(
        &shared_lock::fixed(&setup(3, FAULTS)),
        &[SYMMETRY, RANKS, BOTH],
    );
    self_checks(
        &shared_lock::original(&setup(3, FAULTS)),
        &[SYMMETRY, RANKS, BOTH],
    );
}

#[test]
fn election_renamings() {
    self_checks(
        &election::fixed(&setup(3, FAULTS)),
        &[SYMMETRY, RANKS, BOTH],
    );
    self_checks(
        &election::original(&setup(3, FAULTS)),
        &[SYMMETRY, RANKS, BOTH],
    );
}

#[test]
fn queue_renamings() {
    self_checks(&queue::fixed(&setup(3, FAULTS)), &[SYMMETRY, RANKS, BOTH]);
    self_checks(
        &queue::original(&setup(3, FAULTS)),
        &[SYMMETRY, RANKS, BOTH],
    );
    self_checks(
        &queue::tutorial_original(&setup(3, FAULTS)),
        &[SYMMETRY, RANKS, BOTH],
    );
}

#[test]
fn barrier_renamings() {
    caught_asymmetric(&barrier::fixed(&setup(3, FAULTS)));
    self_checks(
        &barrier::original(&setup(3, FAULTS)),
        &[SYMMETRY, RANKS, BOTH],
    );
    self_checks(
        &barrier::original_shared_host(&setup(3, FAULTS)),
        &[SYMMETRY, RANKS, BOTH],
    );
}
