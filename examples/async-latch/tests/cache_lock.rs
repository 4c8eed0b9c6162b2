//! The test API on the lock kept by a persistent-watch cache, inside the
//! crate's own `cargo test`: the cache that trusts its watch through a
//! connection loss leaves a contender waiting for ever behind a holder that
//! left (named for that: a change its persistent watch missed); the cache
//! that watches and reads again after each reconnect holds.
#![cfg(madsim)]

use zkcheck::testing;

const SCENARIO: &str = "scenarios/cache-lock.toml";

#[test]
fn a_cache_trusting_its_persistent_watch_through_a_reconnect_waits_for_ever() {
    let registry = async_latch::check::registry();
    let failure = testing::scenario(&registry, SCENARIO)
        .seeds("0..200")
        .fails();
    let violations = &failure.report.violations;
    let properties: Vec<&str> = violations.iter().map(|v| v.property.name()).collect();
    assert_eq!(properties, ["liveness"], "{}", failure.reproduce);
    assert_eq!(
        violations[0].signature(),
        "liveness/persistent-watch-missed-change",
        "{}",
        failure.reproduce
    );
}

#[test]
fn the_cache_that_watches_and_reads_again_holds() {
    let registry = async_latch::check::registry();
    testing::scenario(&registry, SCENARIO)
        .variant("fixed")
        .seeds("0..200")
        .passes();
}
