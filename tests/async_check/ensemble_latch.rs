//! `check` on an async recipe in an ensemble's world (issue 39): the
//! example's leader latch (examples/async-latch/src/latch.rs) on its
//! partition scenario run on 3 servers, the tape choosing each client's
//! host list and each follower's lag, and striking a server's crash as a
//! workload starts a drawn duration.
//!
//! What it found was the harness's, not the latch's: with the leader
//! crashed, the crate's client gives its session up on its own deadline
//! (7/5 of the session timeout) while the servers, electing, still hold
//! it; the end checks judged the abandoned session's ephemeral node a
//! leak before the servers expired it. A session its client counts
//! expired is now abandoned (`world::settle`), so the checks wait for the
//! servers to expire it and the fixed latch passes.

use super::latch_registry;
use zk_sim::explore::run::{replay, World, WorldSource};
use zk_sim::explore::FaultAllowance;

/// The example's partition scenario on 3 servers.
const SCENARIO: &str = include_str!("../../examples/async-latch/scenarios/latch-partition.toml");

#[test]
fn a_session_given_up_while_the_leader_is_elected_is_no_leak_once_the_servers_expire_it() {
    let world = World {
        source: WorldSource::Scenario {
            name: "latch-partition-ensemble.toml".into(),
            text: format!("ensemble = 3\n{SCENARIO}"),
        },
        ..World::new("latch", "fixed", 2, 1)
    };
    let crash = FaultAllowance {
        server_crash: 1,
        ..FaultAllowance::default()
    };
    // Both on server 0, the leader; the leader crashes as c0 starts to lead.
    let choices = vec![0, 0, 0, 0, 0, 0, 0, 0, 1];
    let file = world.choice_file(crash, Some("no_leaks".into()), choices);
    let (tape, report) = replay(latch_registry().sim_recipes(), &file).expect("a run");
    assert_eq!(tape.misfit, None);
    let trace: Vec<String> = report.trace.lines.iter().map(|l| l.to_string()).collect();
    let trace = trace.join("\n");
    for line in [
        "c0 send     choice: the client's host list goes round servers 0, 1, 2",
        "-- FAULT    server 0 crashes (down 4000 ms)",
        "c0 session  gives up on session 0x998c373662: nothing received for 2800 ms",
        "end checks wait for the world to settle: /latch/c0-0-latch-0000000000: ephemeral of session 0x998c373662, which no client holds",
        "c0 session  server expired session 0x998c373662",
        "-- phase    verdict: pass",
    ] {
        assert!(trace.contains(line), "missing {line:?} in\n{trace}");
    }
    assert!(report.violations.is_empty(), "{:?}", report.violations);
}
