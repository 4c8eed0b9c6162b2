//! `check SCENARIO.toml` on the async example's mutex (the shape of
//! ZooKeeper's `WriteLock`, examples/async-latch/src/mutex.rs, recipe
//! `mutex`; issue 39's async catalog): each of the original recipe's bugs
//! the example keeps behind a flag is found at 2 clients on the scenario's
//! own world with a short choice string, as a 1,000-seed sweep of the same
//! scenario finds it; the fixed mutex holds exhaustively under the same
//! bounds with a connection loss. Pinned: the shortest counterexamples and
//! the search's size.

use super::{one_loss, registry, trace_of};
use std::path::Path;
use zk_sim::explore::run::{World, WorldSource};
use zk_sim::explore::search::Summary;
use zk_sim::explore::{DurationPoints, FaultAllowance};
use zk_sim::scenario::Scenario;

/// The example's scenario: 3 clients, 5 cycles, holds of 1 to 50 ms, lost
/// requests and replies, dropped connections.
const SCENARIO: &str = include_str!("../../examples/async-latch/scenarios/mutex.toml");

/// The scenario's own world at 2 clients, 1 cycle.
fn world(variant: &str) -> World {
    World {
        source: WorldSource::Scenario {
            name: "mutex.toml".into(),
            text: SCENARIO.to_string(),
        },
        durations: DurationPoints::default(),
        ..World::new("mutex", variant, 2, 1)
    }
}

fn explored(variant: &str, faults: FaultAllowance) -> Summary {
    super::explored_in(world(variant), faults)
}

/// The first counterexample's property, choices and delays, and the
/// executions run.
fn found(summary: &Summary) -> (&str, Vec<u32>, u32, u64) {
    let found = summary
        .found
        .first()
        .unwrap_or_else(|| panic!("{summary:?}"));
    let property = found.property.as_str();
    (
        property,
        found.choices.clone(),
        found.delays,
        summary.executions,
    )
}

#[test]
fn ordering_by_name_makes_two_holders_with_two_delays() {
    let summary = explored("by_name", FaultAllowance::default());
    // c1 (whose session id sorts after c0's) creates, lists and holds for
    // its range's end (50 ms) before c0 creates; c0 sorts first by name.
    assert_eq!(
        found(&summary),
        ("mutual_exclusion", vec![1, 1, 1], 2, 108),
        "{summary:?}"
    );
}

#[test]
fn a_blind_retry_waits_on_its_own_orphan() {
    let summary = explored("blind_retry", one_loss());
    // c0's create applied, its reply lost: the retry's node waits on the
    // first (181 executions before an outage was a strike between requests).
    assert_eq!(
        found(&summary),
        ("liveness", vec![0, 2], 0, 199),
        "{summary:?}"
    );
}

#[test]
fn a_release_not_retried_leaves_the_holders_node() {
    let summary = explored("release_once", one_loss());
    let (property, choices, delays, executions) = found(&summary);
    // 186 executions before an outage was a strike between requests.
    assert_eq!((property, delays, executions), ("liveness", 0, 204));
    // Everything as it comes until c0's delete, lost before it applies.
    assert_eq!(
        choices,
        vec![0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 1],
        "{summary:?}"
    );
    let leaks = summary.found.iter().find(|f| f.property == "no_leaks");
    assert!(leaks.is_some(), "the node is left too: {summary:?}");
}

#[test]
fn the_fixed_mutex_holds_exhaustively_with_a_connection_loss() {
    let summary = explored("fixed", one_loss());
    assert!(summary.found.is_empty(), "{summary:?}");
    assert!(summary.exhaustive, "{summary:?}");
    // (15156, 6944, 7) before an outage was a strike between requests.
    assert_eq!(
        (summary.executions, summary.pruned, summary.delay_bound),
        (16247, 7561, 7),
        "{summary:?}"
    );
}

#[test]
fn a_sweep_of_the_same_scenario_finds_each_bugs_property() {
    let scenario = Scenario::parse(Path::new("mutex.toml"), SCENARIO, registry().sim_recipes())
        .unwrap_or_else(|error| panic!("{error}"));
    for (variant, property) in [
        ("by_name", "mutual_exclusion"),
        ("blind_retry", "liveness"),
        ("release_once", "liveness"),
    ] {
        let runner = scenario
            .with_variant(variant)
            .unwrap_or_else(|error| panic!("{error}"))
            .runner();
        let failing = (0..1000u64).find(|&seed| {
            let report = runner.run(seed, false);
            let mut violated = report.violations.iter();
            violated.any(|v| v.property_name() == property)
        });
        assert!(
            failing.is_some(),
            "{variant}: no seed of 1,000 broke {property}"
        );
    }
}

#[test]
fn a_counterexample_replays_byte_for_byte_in_a_second_process() {
    let summary = explored("by_name", FaultAllowance::default());
    let found = &summary.found[0];
    let file = world("by_name").choice_file(
        FaultAllowance::default(),
        Some(found.property.clone()),
        found.choices.clone(),
    );
    let here = trace_of(&file);
    assert_eq!(here, super::trace_in_a_second_process(&file, "mutex"));
}
