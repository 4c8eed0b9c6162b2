//! The test API on the async latch, inside the crate's own `cargo test`:
//! the buggy variant gets stuck, the fixed one holds.
#![cfg(madsim)]

use zkcheck::testing;

/// The properties a failing seed violated, in the order reported.
fn violated_properties(failure: &testing::Failure) -> Vec<&'static str> {
    let violations = failure.report.violations.iter();
    violations
        .map(|violation| violation.property.name())
        .collect()
}

const SCENARIO: &str = "scenarios/latch.toml";

#[test]
fn the_buggy_latch_leaves_a_candidate_waiting_forever() {
    let registry = async_latch::check::registry();
    let failure = testing::scenario(&registry, SCENARIO)
        .seeds("0..200")
        .fails();
    let properties = violated_properties(&failure);
    assert_eq!(properties, ["liveness"], "{}", failure.reproduce);
}

#[test]
fn the_fixed_latch_holds() {
    let registry = async_latch::check::registry();
    testing::scenario(&registry, SCENARIO)
        .variant("fixed")
        .seeds("0..100")
        .passes();
}

#[test]
fn the_fixed_latch_wakes_one_candidate_per_release() {
    let registry = async_latch::check::registry();
    testing::scenario(&registry, "scenarios/latch-herd.toml")
        .seeds("0..100")
        .passes();
}

const PARTITION: &str = "scenarios/latch-partition.toml";

#[test]
fn a_latch_that_keeps_leading_while_disconnected_makes_two_leaders() {
    let registry = async_latch::check::registry();
    let failure = testing::scenario(&registry, PARTITION)
        .seeds("0..300")
        .fails();
    let properties = violated_properties(&failure);
    assert_eq!(properties, ["one_leader"], "{}", failure.reproduce);
    // The trace proves the leader heard Disconnected and went on leading.
    let signature = failure.report.violations[0].signature();
    assert_eq!(
        signature, "one_leader/held-through-disconnect",
        "{}",
        failure.reproduce
    );
}

#[test]
fn the_fixed_latch_steps_down_while_its_connection_is_in_doubt() {
    let registry = async_latch::check::registry();
    testing::scenario(&registry, PARTITION)
        .variant("fixed")
        .seeds("0..100")
        .passes();
}
