//! Pins, per recipe and variant, the number of unique states of a small
//! configuration (2 clients; no fault, then one connection loss). A change
//! of the model, the server, the session layer or a recipe that changes the
//! explored space shows up here first; update the numbers knowingly.

mod common;

use common::check;

/// (recipe, variant, unique states without faults, with one connection loss).
/// `None`: too large for a quick test.
const PINNED: &[(&str, &str, usize, Option<usize>)] = &[
    ("lock", "original", 508, Some(3_881)),
    ("lock", "fixed", 264, Some(1_894)),
    ("curator_lock", "original", 3_982, Some(36_693)),
    ("curator_lock", "fixed", 1_493, Some(10_877)),
    ("semaphore", "original", 261_174, None),
    ("semaphore", "fixed", 1_565, Some(12_625)),
    ("shared_lock", "original", 264, Some(2_059)),
    ("shared_lock", "fixed", 240, Some(1_736)),
    ("election", "original", 380, Some(2_716)),
    ("election", "fixed", 328, Some(1_836)),
    ("queue", "original", 88, Some(406)),
    ("queue", "tutorial_original", 88, Some(406)),
    ("queue", "fixed", 430, Some(3_502)),
    ("barrier", "original", 419, Some(2_160)),
    ("barrier", "original_shared_host", 44, Some(232)),
    ("barrier", "fixed", 1_961, Some(17_331)),
];

#[test]
fn unique_state_counts_of_two_clients_are_pinned() {
    let mut mismatches = Vec::new();
    for &(recipe, variant, no_faults, with_loss) in PINNED {
        let report = check(recipe, variant, 2, "none");
        assert!(report.exhaustive);
        if report.unique_states != no_faults {
            mismatches.push(format!(
                "{recipe}/{variant} none: {} (pinned {no_faults})",
                report.unique_states
            ));
        }
        let Some(with_loss) = with_loss else { continue };
        let report = check(recipe, variant, 2, "connection-loss=1");
        if report.unique_states != with_loss {
            mismatches.push(format!(
                "{recipe}/{variant} connection-loss=1: {} (pinned {with_loss})",
                report.unique_states
            ));
        }
    }
    assert!(
        mismatches.is_empty(),
        "state counts changed:\n{}",
        mismatches.join("\n")
    );
}

#[test]
fn every_catalog_entry_is_pinned() {
    let pinned: Vec<(&str, &str)> = PINNED.iter().map(|&(r, v, _, _)| (r, v)).collect();
    for entry in zk_models::catalog::ENTRIES {
        assert!(
            pinned.contains(&(entry.recipe, entry.variant)),
            "{}/{} has no pinned count",
            entry.recipe,
            entry.variant
        );
    }
}

#[test]
fn more_faults_mean_more_states() {
    let none = check("lock", "fixed", 2, "none").unique_states;
    let loss = check("lock", "fixed", 2, "connection-loss=1").unique_states;
    let both = check("lock", "fixed", 2, "connection-loss=1,expiry=1").unique_states;
    assert!(none < loss && loss < both, "{none} {loss} {both}");
}
