//! The test API on the async mutex, inside the crate's own `cargo test`:
//! each bug the example keeps breaks its own property, the fixed mutex
//! holds the same scenario.
#![cfg(madsim)]

use zkcheck::testing;

const SCENARIO: &str = "scenarios/mutex.toml";

/// The first failing seed's violated properties, in the order reported.
fn violated(variant: &str) -> Vec<&'static str> {
    let registry = async_latch::check::registry();
    let failure = testing::scenario(&registry, SCENARIO)
        .variant(variant)
        .seeds("0..200")
        .fails();
    let violations = failure.report.violations.iter();
    violations.map(|v| v.property.name()).collect()
}

#[test]
fn each_bug_breaks_its_own_property() {
    assert_eq!(violated("by_name"), ["mutual_exclusion"]);
    assert!(violated("blind_retry").contains(&"liveness"));
    assert!(violated("release_once").contains(&"liveness"));
}

#[test]
fn the_fixed_mutex_holds() {
    let registry = async_latch::check::registry();
    testing::scenario(&registry, SCENARIO)
        .variant("fixed")
        .seeds("0..200")
        .passes();
}
