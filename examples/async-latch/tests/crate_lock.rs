//! The test API on the crate's own lock, inside the crate's own `cargo
//! test`: a contention given up (dropped) while its create's reply is
//! awaited leaves its node (zookeeper-client 0.11.2 deletes it by its bare
//! name); a lock that never gives up holds the same scenario.
#![cfg(madsim)]

use zkcheck::testing;

const SCENARIO: &str = "scenarios/crate-lock.toml";

#[test]
fn a_contention_given_up_mid_create_leaves_its_node() {
    let registry = async_latch::check::registry();
    let failure = testing::scenario(&registry, SCENARIO)
        .seeds("0..200")
        .fails();
    let violations = failure.report.violations.iter();
    let properties: Vec<&str> = violations.map(|v| v.property.name()).collect();
    assert!(properties.contains(&"no_leaks"), "{}", failure.reproduce);
    // The leaked node is a lock node of the crate's Curator naming.
    let leak = failure
        .report
        .violations
        .iter()
        .find(|v| v.property.name() == "no_leaks");
    let detail = format!("{:?}", leak.expect("no_leaks is violated"));
    assert!(
        detail.contains("/crate-lock/_c_"),
        "{detail}\n{}",
        failure.reproduce
    );
}

#[test]
fn the_lock_that_waits_holds() {
    let registry = async_latch::check::registry();
    testing::scenario(&registry, SCENARIO)
        .variant("waits")
        .seeds("0..200")
        .passes();
}
