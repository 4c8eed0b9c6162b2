//! `check SCENARIO.toml` on the async example's lock kept by a
//! persistent-watch cache (examples/async-latch/src/cache_lock.rs, recipe
//! `cache_lock`): the `trusting` cache never watches or reads again after a
//! connection loss, and zookeeper-client 0.11.2 does not set a persistent
//! watch again at a reconnect. The explorer finds it at 2 clients, one
//! cycle, one connection loss, no delay: c0's create reply is lost, the
//! creation event goes with the connection, and its cache never learns of
//! its own node. The fixed cache holds exhaustively under the same bounds.
//! Pinned: the counterexample, its diagnosis, the searches' sizes.

use super::{one_loss, registry, trace_of};
use zk_sim::explore::run::{replay, World, WorldSource};
use zk_sim::explore::search::Summary;
use zk_sim::explore::DurationPoints;

/// The example's scenario: 3 clients, 5 cycles, holds of 1 to 50 ms,
/// dropped connections.
const SCENARIO: &str = include_str!("../../examples/async-latch/scenarios/cache-lock.toml");

/// The scenario's own world at 2 clients and one cycle.
fn world(variant: &str) -> World {
    World {
        source: WorldSource::Scenario {
            name: "cache-lock.toml".into(),
            text: SCENARIO.to_string(),
        },
        durations: DurationPoints::default(),
        ..World::new("cache_lock", variant, 2, 1)
    }
}

fn explored(variant: &str) -> Summary {
    super::explored_in(world(variant), one_loss())
}

#[test]
fn a_cache_that_trusts_its_persistent_watch_through_a_lost_reply_waits_for_ever() {
    let summary = explored("trusting");
    let found = summary
        .found
        .first()
        .unwrap_or_else(|| panic!("{summary:?}"));
    assert_eq!(found.property, "liveness", "{summary:?}");
    assert_eq!(found.delays, 0, "{summary:?}");
    // The first order, c0's create reply lost after it applied (fault 2).
    assert_eq!(found.choices, vec![0, 0, 0, 0, 0, 0, 0, 0, 0, 2]);
    let file =
        world("trusting").choice_file(one_loss(), Some("liveness".into()), found.choices.clone());
    let (_, report) = replay(registry().sim_recipes(), &file).expect("a run");
    let signatures: Vec<String> = report.violations.iter().map(|v| v.signature()).collect();
    assert_eq!(signatures, ["liveness/persistent-watch-missed-change"]);
    assert!(!trace_of(&file).is_empty());
}

#[test]
fn the_cache_that_watches_and_reads_again_holds_exhaustively() {
    let summary = explored("fixed");
    assert!(summary.found.is_empty(), "{summary:?}");
    assert!(summary.exhaustive, "{summary:?}");
    assert_eq!(summary.executions, 26431, "{summary:?}");
}
