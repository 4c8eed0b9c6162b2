//! The end-of-run checks judge a settled world, and a run that could not
//! have failed says so.
//!
//! - The leak check and the other end checks run once every client has
//!   reconnected and gone quiet after the heal (nothing queued or in flight
//!   in its session layer, no recipe timer pending, no notification on its
//!   way), bounded by the heal deadline: a correct recipe whose cleanup waits
//!   for a reconnect is not reported as leaking.
//! - A run in which no workload made progress is visible in its report
//!   (`RunReport::vacuous`).

// Runs the simulator, which exists only with `--cfg madsim` (.cargo/config.toml).
#![cfg(madsim)]

use crate::common::builtin;
use std::collections::BTreeSet;
use std::path::Path as FsPath;
use zk_recipes::curator_lock::{FixedCuratorLock, LockCall};
use zk_recipes::lock::FixedLock;
use zk_recipes::zk::Path;
use zk_recipes::{Observation, Observe};
use zk_sim::faults::{Fault, FaultPlan, FaultRates, MsRange, ScheduledFault, Trigger};
use zk_sim::oracles::{OracleConfig, Property};
use zk_sim::scenario::Scenario;
use zk_sim::world::workloads::{hold_cycles, WorkloadSpec};
use zk_sim::world::{Client, RunReport, Simulation, TraceKind, WorldConfig};

/// The lock's workload calls.
fn lock_calls() -> zk_sim::world::adapters::HoldCalls<zk_recipes::lock::LockCall> {
    zk_sim::world::adapters::HoldCalls::new(
        zk_recipes::lock::LockCall::Lock,
        zk_recipes::lock::LockCall::Unlock,
    )
}

/// The built-in recipes, as scenario files name them.
fn lock_path() -> Path {
    Path::new("/locks/key").unwrap()
}

fn scenario_file(name: &str) -> std::path::PathBuf {
    FsPath::new(env!("CARGO_MANIFEST_DIR"))
        .join("scenarios")
        .join(name)
}

const CHECKED: [Property; 4] = [
    Property::FencedMutualExclusion,
    Property::Fifo,
    Property::Liveness,
    Property::NoLeaks,
];

fn config(clients: usize, faults: FaultPlan) -> WorldConfig {
    WorldConfig {
        clients,
        fault_phase_ms: 20_000,
        heal_ms: 20_000,
        faults,
        oracles: OracleConfig {
            properties: CHECKED.into_iter().collect::<BTreeSet<_>>(),
            ..OracleConfig::default()
        },
        ..WorldConfig::default()
    }
}

/// Acquires (with a timeout) and waits for the answer; true if it holds.
async fn acquire(client: &Client<FixedCuratorLock>, timeout_ms: u64) -> bool {
    client.call(LockCall::Acquire {
        timeout_ms: Some(timeout_ms),
    });
    loop {
        match client.next_outcome().await.observe() {
            Observation::Acquired { .. } => return true,
            Observation::Failed { .. } | Observation::TimedOut => return false,
            _ => continue,
        }
    }
}

async fn release_and_wait(client: &Client<FixedCuratorLock>) {
    client.call(LockCall::Release);
    while !matches!(
        client.next_outcome().await.observe(),
        Observation::Released | Observation::Lost | Observation::Failed { .. }
    ) {}
}

/// An application that takes a lock with an acquire timeout `cycles` times
/// and, the last time, releases it and exits without waiting for the answer
/// (its client library finishes the release: the delete waits for the
/// connection if it is down).
fn timed_lock(config: WorldConfig, cycles: u32) -> Simulation<FixedCuratorLock> {
    Simulation::new(
        config,
        |_, uid| FixedCuratorLock::new(lock_path(), uid),
        move |client| async move {
            for cycle in 0..cycles {
                let last = cycle + 1 == cycles || client.stopping();
                let held = acquire(&client, 50).await;
                if held {
                    // The last hold is long: a disconnect may strike in it.
                    let hold = if last {
                        MsRange::new(100, 500)
                    } else {
                        MsRange::new(1, 10)
                    };
                    client.sleep_ms(client.draw_ms(hold)).await;
                }
                if last && held {
                    client.call(LockCall::Release);
                    return;
                }
                release_and_wait(&client).await;
                if last {
                    return;
                }
                client.sleep_ms(client.draw_ms(MsRange::new(0, 10))).await;
            }
        },
    )
}

fn failing(report: &RunReport) -> Option<String> {
    (!report.passed()).then(|| format!("seed {}: {:?}", report.seed, report.violations))
}

/// Client 0 holds the lock when its connection drops for a second, and its
/// application releases the lock and exits while the connection is down;
/// client 1 is long done. Every workload is done before the heal point, so
/// the world heals at once, and client 0 reconnects after its reconnect
/// delay (200 to 400 ms here): only then is the release's delete sent. A
/// check after the fixed 100 ms settle time saw the lock node and reported
/// a leak; the checks now wait for client 0 to reconnect and go quiet.
#[test]
fn a_release_that_waits_for_the_reconnect_is_not_a_leak() {
    let disconnect = ScheduledFault {
        trigger: Trigger::AtMs(200.0),
        client: 0,
        fault: Fault::Disconnect { down_ms: 1_000 },
    };
    let mut config = config(2, FaultPlan::scheduled(vec![disconnect]));
    config.reconnect_delay_ms = MsRange::new(200, 400);
    let sim = Simulation::new(
        config,
        |_, uid| FixedCuratorLock::new(lock_path(), uid),
        |client| async move {
            if client.index() == 0 {
                assert!(acquire(&client, 10_000).await, "client 0 acquires");
                client.sleep_ms(250).await; // the connection drops meanwhile
                client.call(LockCall::Release);
            } else {
                client.sleep_ms(20).await;
            }
        },
    );
    for seed in 0..20 {
        let report = sim.run_with_trace(seed, true);
        let shown = || format!("seed {seed}: {:?}\n{}", report.violations, report.trace);
        assert!(report.passed(), "{}", shown());
        assert_eq!(report.workloads_done, 2);
        let at = |text: &str| {
            report
                .trace
                .lines
                .iter()
                .find(|line| line.text.contains(text))
                .map(|line| line.at_ns)
        };
        let healed = at("faults heal").expect("the world heals");
        let waits =
            at("end checks wait for the world to settle").unwrap_or_else(|| panic!("{}", shown()));
        let settled = at("settled: every client connected and quiet")
            .unwrap_or_else(|| panic!("{}", shown()));
        let deleted = report
            .trace
            .lines
            .iter()
            .find(|line| line.kind == TraceKind::Apply && line.text.contains("Delete"))
            .map(|line| line.at_ns)
            .unwrap_or_else(|| panic!("the release's delete was applied\n{}", shown()));
        assert!(waits >= healed + 100_000_000, "{}", shown());
        // The delete came after the old end checks (heal + 100 ms) would
        // have run, and before the checks ran.
        assert!(deleted > waits && deleted <= settled, "{}", shown());
    }
}

/// A disconnect whose network stays down for ten days (far past the heal
/// deadline): the heal brings the client's reconnect forward, so its
/// application, waiting for its release, finishes (no liveness failure), and
/// the run ends shortly after the heal.
#[test]
fn the_heal_brings_a_put_off_reconnect_forward() {
    let disconnect = ScheduledFault {
        trigger: Trigger::AtMs(200.0),
        client: 0,
        fault: Fault::Disconnect {
            down_ms: 10 * 86_400_000,
        },
    };
    let mut config = config(2, FaultPlan::scheduled(vec![disconnect]));
    config.fault_phase_ms = 1_000;
    config.heal_ms = 5_000;
    let sim = Simulation::new(
        config,
        |_, uid| FixedCuratorLock::new(lock_path(), uid),
        |client| async move {
            if client.index() == 0 {
                assert!(acquire(&client, 10_000).await, "client 0 acquires");
                client.sleep_ms(250).await;
                release_and_wait(&client).await;
            }
        },
    );
    for seed in 0..20 {
        let report = sim.run_with_trace(seed, true);
        assert!(
            report.passed(),
            "seed {seed}: {:?}\n{}",
            report.violations,
            report.trace
        );
        // Healed at 1 s: the client reconnects at its next attempt (the
        // Java client's are 1-2 s apart), then holds 250 ms; not after the
        // ten days the fault asked for.
        assert!(
            report.stats.sim_time_ns < 3_500_000_000,
            "{:?}",
            report.stats
        );
    }
}

/// Durations near `i64::MAX` ms never wrap simulated time: a heal bound that
/// large is not a deadline in the past (no false liveness failure), and a
/// pause that long lasts until the heal resumes the client instead of
/// ending at once.
#[test]
fn huge_durations_saturate_instead_of_wrapping() {
    let huge = i64::MAX as u64 - 1_000;
    let pause = ScheduledFault {
        trigger: Trigger::AtMs(100.0),
        client: 1,
        fault: Fault::Pause { pause_ms: huge },
    };
    let mut config = config(2, FaultPlan::scheduled(vec![pause]));
    config.fault_phase_ms = 2_000;
    config.heal_ms = huge;
    config.session_timeout_ms = huge;
    let sim = timed_lock(config, 5);
    for seed in 0..10 {
        let report = sim.run_with_trace(seed, true);
        assert!(
            report.passed(),
            "seed {seed}: {:?}\n{}",
            report.violations,
            report.trace
        );
        let resumed = report
            .trace
            .lines
            .iter()
            .find(|line| line.client == Some(1) && line.text == "resumed")
            .expect("client 1 is resumed");
        let healed = report
            .trace
            .lines
            .iter()
            .find(|line| line.text.contains("faults heal"))
            .expect("the world heals");
        assert!(
            resumed.at_ns >= 2_000_000_000,
            "resumed at {}",
            resumed.at_ns
        );
        assert_eq!(resumed.at_ns, healed.at_ns);
    }
}

/// The same under random faults: a timed lock whose last release is left to
/// the client library, 300 seeds with frequent disconnects (down up to 1 s).
#[test]
fn timed_lock_with_a_background_release_holds_on_300_seeds() {
    let faults = FaultPlan {
        rates: FaultRates {
            disconnects_per_s: 1.0,
            down_ms: MsRange::new(0, 1_000),
            loss_after_apply: 0.02,
            loss_before_apply: 0.02,
            ..FaultRates::default()
        },
        ..FaultPlan::default()
    };
    let sim = timed_lock(config(5, faults), 20);
    let failed: Vec<String> = (0..300)
        .filter_map(|seed| failing(&sim.run(seed)))
        .collect();
    assert!(
        failed.is_empty(),
        "{} of 300 seeds fail:\n{}",
        failed.len(),
        failed.join("\n")
    );
}

/// The shipped Curator-lock scenario (faults, 5 contenders) on 300 seeds.
#[test]
fn shipped_curator_lock_scenario_holds_on_300_seeds() {
    let scenario = Scenario::load(&scenario_file("curator_lock-fixed.toml"), builtin()).unwrap();
    let runner = scenario.runner();
    let failed: Vec<String> = (0..300)
        .filter_map(|seed| {
            let report = runner.run(seed, false);
            assert!(report.vacuous().is_none(), "seed {seed}");
            failing(&report)
        })
        .collect();
    assert!(
        failed.is_empty(),
        "{} of 300 seeds fail:\n{}",
        failed.len(),
        failed.join("\n")
    );
}

/// A lock whose directory is the root: ZooKeeper refuses every node it
/// creates, so every acquisition fails and the run's properties hold
/// vacuously. Scenario validation refuses such a file (if it accepts it,
/// its runs must be vacuous too); the world, built directly as the
/// scenario registry builds it, reports the run as one that could not have
/// failed.
#[test]
fn a_run_where_every_acquisition_fails_is_vacuous() {
    let text = "recipe = \"lock\"\nvariant = \"fixed\"\nclients = 3\n[config]\npath = \"/\"\n";
    if let Ok(scenario) = Scenario::parse(FsPath::new("root.toml"), text, builtin()) {
        let report = scenario.runner().run(1, false);
        assert!(report.vacuous().is_some(), "{:?}", report.stats);
    }
    let config = WorldConfig {
        clients: 3,
        oracles: OracleConfig {
            properties: [
                Property::MutualExclusion,
                Property::Liveness,
                Property::NoLeaks,
            ]
            .into_iter()
            .collect(),
            ..OracleConfig::default()
        },
        ..WorldConfig::default()
    };
    // The built-in hold workload: its releases answer without the server
    // (nothing is held), but the server applied no request.
    let spec = WorkloadSpec {
        cycles: 3,
        ..WorkloadSpec::default()
    };
    let holding = Simulation::new(
        config.clone(),
        |_, uid| FixedLock::new(Path::root(), uid),
        move |client| hold_cycles(client, spec.clone(), lock_calls()),
    );
    // Acquisitions only: no outcome is progress.
    let acquiring = Simulation::new(
        config,
        |_, uid| FixedLock::new(Path::root(), uid),
        |client| async move {
            for _ in 0..3 {
                client.call(zk_recipes::lock::LockCall::Lock);
                client.next_outcome().await;
            }
        },
    );
    for seed in 0..5 {
        let report = holding.run(seed);
        assert!(report.passed(), "{:?}", report.violations);
        assert_eq!(report.stats.requests, 0, "{:?}", report.stats);
        let why = report.vacuous().expect("a run without requests is vacuous");
        assert!(
            why.starts_with("no workload made progress: 0 requests applied, 9 of 18 calls failed (first: invalid path"),
            "{why}"
        );

        let report = acquiring.run(seed);
        assert!(report.passed(), "{:?}", report.violations);
        assert_eq!(report.stats.progress, 0, "{:?}", report.stats);
        let why = report.vacuous().expect("a run without progress is vacuous");
        assert!(
            why.starts_with("no workload made progress: 0 requests applied, every call failed (first: invalid path"),
            "{why}"
        );
        let first = report.stats.first_failure.as_deref().expect("a reason");
        assert!(first.starts_with("invalid path"), "{first}");

        // The new counters survive a JSON round trip, and a report written
        // before they existed still reads.
        let json = serde_json::to_value(&report).unwrap();
        assert_eq!(json["stats"]["progress"], 0);
        let back: RunReport = serde_json::from_value(json.clone()).unwrap();
        assert_eq!(back.stats, report.stats);
        let mut old = json;
        let stats = old["stats"].as_object_mut().unwrap();
        stats.remove("progress");
        stats.remove("first_failure");
        let back: RunReport = serde_json::from_value(old).unwrap();
        assert_eq!((back.stats.progress, back.stats.first_failure), (0, None));
    }
}

/// A shipped scenario's seeds did work: not vacuous.
#[test]
fn a_run_that_did_work_is_not_vacuous() {
    let scenario = Scenario::load(&scenario_file("lock-fixed.toml"), builtin()).unwrap();
    for seed in 0..5 {
        let report = scenario.runner().run(seed, false);
        assert!(report.stats.progress > 0, "{:?}", report.stats);
        assert_eq!(report.vacuous(), None, "seed {seed}");
    }
}
