//! The test API on the async semaphore, inside the crate's own `cargo
//! test`: the semaphore that counts before it creates makes three holders
//! of two leases; the fixed one holds.
#![cfg(madsim)]

use zkcheck::testing;

const SCENARIO: &str = "scenarios/semaphore.toml";

#[test]
fn counting_before_creating_lets_three_clients_hold_two_leases() {
    let registry = async_latch::check::registry();
    let failure = testing::scenario(&registry, SCENARIO)
        .seeds("0..200")
        .fails();
    let violations = failure.report.violations.iter();
    let properties: Vec<&str> = violations.map(|v| v.property.name()).collect();
    assert_eq!(properties, ["mutual_exclusion"], "{}", failure.reproduce);
}

#[test]
fn the_fixed_semaphore_holds() {
    let registry = async_latch::check::registry();
    testing::scenario(&registry, SCENARIO)
        .variant("fixed")
        .seeds("0..200")
        .passes();
}
