//! `check SCENARIO.toml` on the async example's semaphore with 2 leases
//! (examples/async-latch/src/semaphore.rs, recipe `leases`; issue 39),
//! written against the client crate: the buggy variant counts the
//! leases, then creates its own (two clients that both see room make three
//! holders); the fixed one creates its lease node first and holds while it
//! is among the first two. The scenario's own world (its lease count, its
//! hold and think ranges) is what the explorer runs: the bug is found with
//! the hold ranges' ends, and missed when every hold is its minimum (the
//! world `check` used to explore, which called the buggy one a pass); the
//! fixed one holds exhaustively with its 2 leases; a 1,000-seed sweep of
//! the same scenario finds the same property; the counterexample's choice
//! file, which carries the scenario, replays byte for byte in a second
//! process.

use super::{registry, trace_of};
use std::path::Path;
use zk_sim::explore::run::{explore, replay, World, WorldSource};
use zk_sim::explore::search::{Bounds, Summary};
use zk_sim::explore::DurationPoints;
use zk_sim::scenario::Scenario;

/// The scenario a user sweeps (the example's): 3 clients, 1 cycle, 2
/// leases, holds of 1 to 20 ms.
pub const SCENARIO: &str = include_str!("../../examples/async-latch/scenarios/semaphore.toml");

/// The scenario's own world at 3 clients, 1 cycle.
pub fn world(variant: &str, durations: DurationPoints) -> World {
    World {
        source: WorldSource::Scenario {
            name: "semaphore.toml".into(),
            text: SCENARIO.to_string(),
        },
        durations,
        ..World::new("leases", variant, 3, 1)
    }
}

fn explored(variant: &str, durations: DurationPoints) -> Summary {
    let world = world(variant, durations);
    let scenario = world
        .scenario(registry().sim_recipes())
        .unwrap_or_else(|error| panic!("{error}"));
    let bounds = Bounds {
        durations,
        ..Bounds::default()
    };
    explore(&scenario, &bounds).expect("a deterministic world")
}

#[test]
fn the_count_then_create_semaphore_is_found_on_its_scenarios_world() {
    let summary = explored("buggy", DurationPoints::default());
    let found = summary
        .found
        .iter()
        .find(|found| found.property == "mutual_exclusion")
        .unwrap_or_else(|| panic!("{summary:?}"));
    // Measured: no delay (the server applies the requests as they come):
    // the three clients count an empty directory before any creates; the
    // first two holds take their range's end (20 ms, choices 1), so both
    // still hold when the third lease is created.
    assert_eq!(found.choices, vec![0, 0, 0, 0, 1, 0, 1], "{found:?}");
    assert_eq!((summary.executions, found.delays), (41, 0), "{summary:?}");
}

#[test]
fn with_every_hold_at_its_minimum_the_bug_is_missed() {
    // The world `check` explored before issue 39: holds of 1 ms never
    // overlap a count, so an exhaustive search finds nothing.
    let summary = explored("buggy", DurationPoints(1));
    assert!(summary.found.is_empty(), "{summary:?}");
    assert!(summary.exhaustive, "{summary:?}");
}

#[test]
fn the_fixed_semaphore_holds_with_its_two_leases() {
    let summary = explored("fixed", DurationPoints::default());
    assert!(summary.found.is_empty(), "{summary:?}");
    assert!(summary.exhaustive, "{summary:?}");
    assert_eq!(
        (summary.executions, summary.pruned, summary.delay_bound),
        (96938, 54114, 8),
        "{summary:?}"
    );
}

#[test]
fn a_sweep_of_the_same_scenario_finds_the_same_property() {
    let scenario = Scenario::parse(
        Path::new("semaphore.toml"),
        SCENARIO,
        registry().sim_recipes(),
    )
    .unwrap_or_else(|error| panic!("{error}"));
    let runner = scenario.runner();
    let failing = (0..1000u64).find(|&seed| {
        let report = runner.run(seed, false);
        report
            .violations
            .iter()
            .any(|v| v.property_name() == "mutual_exclusion")
    });
    assert!(failing.is_some(), "no seed of 1,000 broke mutual exclusion");
}

#[test]
fn its_counterexample_replays_byte_for_byte_in_a_second_process() {
    let world = world("buggy", DurationPoints::default());
    let summary = explored("buggy", DurationPoints::default());
    let found = &summary.found[0];
    let file = world.choice_file(
        Default::default(),
        Some(found.property.clone()),
        found.choices.clone(),
    );
    let (_, report) = replay(registry().sim_recipes(), &file).expect("a run");
    let violated: Vec<&str> = report
        .violations
        .iter()
        .map(|v| v.property_name())
        .collect();
    assert_eq!(violated, vec!["mutual_exclusion"]);
    let here = trace_of(&file);
    assert_eq!(here, super::trace_in_a_second_process(&file, "leases"));
}
