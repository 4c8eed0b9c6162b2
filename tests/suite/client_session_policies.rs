//! The client session layer's new scenario keys end to end: the `silent`
//! connection fault in a schedule and as a rate (swarm drawn), the
//! client-side expiry policy (`faults.rates.client_expiry`), and the
//! reconnect timing a scenario gets (the client library's unless it
//! writes `timing.reconnect_delay_ms`); a scenario written back (the
//! shrinker's output) loads as the same.

// Runs the simulator, which exists only with `--cfg madsim` (.cargo/config.toml).
#![cfg(madsim)]

use crate::common::builtin;
use std::path::Path;
use zk_sim::faults::Fault;
use zk_sim::scenario::Scenario;
use zk_sim::world::ReconnectTiming;

const SCENARIO: &str = r#"
recipe = "lock"
variant = "fixed"
clients = 3
duration_ms = 8000
heal_ms = 20000

[config]
path = "/locks"
parents = ["/locks"]

[workload]
cycles = 10
hold_ms = [1, 10]
think_ms = [0, 200]

[timing]
session_timeout_ms = 3000

[faults]
swarm = true

[faults.rates]
silences_per_s = 0.3
down_ms = [500, 4000]
client_expiry = true

[[faults.schedule]]
at_ms = 5
client = 1
fault = "silent"
down_ms = 2500

[properties]
check = ["mutual_exclusion", "liveness", "no_leaks"]
"#;

fn parse(text: &str) -> Scenario {
    Scenario::parse(Path::new("policies.toml"), text, builtin())
        .unwrap_or_else(|error| panic!("{error}"))
}

#[test]
fn silent_faults_and_client_expiry_run_from_a_scenario_and_the_fixed_lock_holds() {
    let scenario = parse(SCENARIO);
    let config = scenario.world_config();
    assert_eq!(config.reconnect_timing, ReconnectTiming::ClientLibrary);
    assert!(config.faults.rates.client_expiry);
    let mut drawn_policies = std::collections::BTreeSet::new();
    let mut silences = 0;
    for seed in 0..8 {
        let report = scenario.runner().run(seed, true);
        assert!(
            report.violations.is_empty(),
            "seed {seed}: {:?}\n{}",
            report.violations,
            report.trace
        );
        drawn_policies.insert(report.rates.client_expiry);
        silences += report
            .fault_history
            .iter()
            .filter(|fault| matches!(fault.fault, Fault::Silent { .. }))
            .count();
    }
    assert!(
        silences >= 8,
        "the scheduled silence struck every seed: {silences}"
    );
    assert_eq!(
        drawn_policies.len(),
        2,
        "swarm mode draws the policy per seed"
    );
}

#[test]
fn a_scenario_written_back_keeps_its_silences_and_policy() {
    let scenario = parse(SCENARIO);
    let again = parse(&scenario.to_toml());
    assert_eq!(again.world_config().faults, scenario.world_config().faults);
    assert!(!scenario.to_toml().contains("reconnect_delay_ms"));
}

#[test]
fn a_written_reconnect_delay_is_a_fixed_delay_before_every_attempt() {
    let text = SCENARIO.replace(
        "session_timeout_ms = 3000",
        "session_timeout_ms = 3000\nreconnect_delay_ms = [5, 50]",
    );
    let scenario = parse(&text);
    let config = scenario.world_config();
    assert_eq!(config.reconnect_timing, ReconnectTiming::Fixed);
    assert_eq!(
        (config.reconnect_delay_ms.min, config.reconnect_delay_ms.max),
        (5, 50)
    );
    let again = parse(&scenario.to_toml());
    assert_eq!(
        again.world_config().reconnect_timing,
        ReconnectTiming::Fixed
    );
}
