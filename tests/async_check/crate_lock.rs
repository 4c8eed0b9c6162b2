//! `check SCENARIO.toml` on the async example's use of the crate's own
//! lock (examples/async-latch/src/crate_lock.rs, recipe `crate_lock`):
//! `timed` gives a contention up after 200 ms by dropping it, and
//! zookeeper-client 0.11.2 leaves the node of a contention dropped while
//! its create waits for the connection. The explorer finds it at 2 clients
//! and 2 cycles with one connection loss, no delay: a strike as the first
//! hold starts keeps the holder's connection down while its second
//! contention creates and gives up. With one cycle (no contention after a
//! strike) both variants hold exhaustively. Pinned: the counterexample,
//! the searches' sizes, and the same property in a sweep.

use super::{one_loss, registry, trace_of};
use std::path::Path;
use zk_sim::explore::run::{World, WorldSource};
use zk_sim::explore::search::Summary;
use zk_sim::explore::DurationPoints;
use zk_sim::scenario::Scenario;

/// The example's scenario: 3 clients, 5 cycles, holds of 1 to 50 ms, lost
/// requests and replies, dropped connections.
const SCENARIO: &str = include_str!("../../examples/async-latch/scenarios/crate-lock.toml");

/// The scenario's own world at 2 clients and `cycles` cycles.
fn world(variant: &str, cycles: u32) -> World {
    World {
        source: WorldSource::Scenario {
            name: "crate-lock.toml".into(),
            text: SCENARIO.to_string(),
        },
        durations: DurationPoints::default(),
        ..World::new("crate_lock", variant, 2, cycles)
    }
}

fn explored(variant: &str, cycles: u32) -> Summary {
    super::explored_in(world(variant, cycles), one_loss())
}

#[test]
fn a_contention_given_up_while_its_connection_is_down_leaves_its_node() {
    let summary = explored("timed", 2);
    let found = summary
        .found
        .first()
        .unwrap_or_else(|| panic!("{summary:?}"));
    assert_eq!(found.property, "no_leaks", "{summary:?}");
    assert_eq!(found.delays, 0, "{summary:?}");
    // c0 holds for 50 ms (choice 1 of [1, 50]) and its connection goes
    // down as the hold starts (strike 2, a partition the heal ends early).
    assert_eq!(found.choices, vec![0, 0, 0, 0, 0, 0, 1, 2, 0, 0, 0, 1]);
    assert_eq!(summary.executions, 7810, "{summary:?}");
    // Its choices replay the same trace in a second process.
    let file =
        world("timed", 2).choice_file(one_loss(), Some("no_leaks".into()), found.choices.clone());
    assert_eq!(
        trace_of(&file),
        super::trace_in_a_second_process(&file, "crate_lock")
    );
}

#[test]
fn with_one_cycle_neither_variant_leaves_a_node() {
    for (variant, executions) in [("timed", 19708), ("waits", 14412)] {
        let summary = explored(variant, 1);
        assert!(summary.found.is_empty(), "{variant}: {summary:?}");
        assert!(summary.exhaustive, "{variant}: {summary:?}");
        assert_eq!(summary.executions, executions, "{variant}: {summary:?}");
    }
}

#[test]
fn a_sweep_of_the_same_scenario_finds_the_same_property() {
    let scenario = Scenario::parse(
        Path::new("crate-lock.toml"),
        SCENARIO,
        registry().sim_recipes(),
    )
    .unwrap_or_else(|error| panic!("{error}"));
    let runner = scenario.runner();
    let failing = (0..1000u64).find(|&seed| {
        let report = runner.run(seed, false);
        let mut violated = report.violations.iter();
        violated.any(|v| v.property_name() == "no_leaks")
    });
    assert_eq!(failing, Some(0), "the first of 876 failing seeds in 1,000");
}
