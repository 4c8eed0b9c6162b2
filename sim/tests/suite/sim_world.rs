//! The madsim world end to end with the WriteLock recipes: sessions open,
//! workloads run to completion, the oracles see every acquisition, and the
//! same seed gives the same trace.

// Runs the simulator, which exists only with `--cfg madsim` (.cargo/config.toml).
#![cfg(madsim)]

use std::collections::BTreeSet;
use zk_recipes::lock::{FixedLock, OriginalLock};
use zk_recipes::zk::Acls;
use zk_recipes::zk::{CreateMode, Path, Request};
use zk_sim::faults::{FaultPlan, FaultRates};
use zk_sim::oracles::{OracleConfig, Property};
use zk_sim::world::workloads::{hold_cycles, WorkloadSpec};
use zk_sim::world::{Simulation, WorldConfig};

/// The lock's workload calls.
fn lock_calls() -> zk_sim::world::adapters::HoldCalls<zk_recipes::lock::LockCall> {
    zk_sim::world::adapters::HoldCalls::new(
        zk_recipes::lock::LockCall::Lock,
        zk_recipes::lock::LockCall::Unlock,
    )
}

fn lock_dir() -> Path {
    Path::new("/locks").unwrap()
}

fn lock_config(clients: usize, properties: &[Property]) -> WorldConfig {
    WorldConfig {
        clients,
        setup: vec![Request::Create {
            path: lock_dir(),
            data: Vec::new(),
            mode: CreateMode::Persistent,
            acl: Acls::Open,
        }],
        oracles: OracleConfig {
            properties: properties.iter().copied().collect::<BTreeSet<_>>(),
            fifo_dir: Some(lock_dir()),
            ..OracleConfig::default()
        },
        ..WorldConfig::default()
    }
}

fn fixed_lock_sim(config: WorldConfig, cycles: u32) -> Simulation<FixedLock> {
    let spec = WorkloadSpec {
        cycles,
        ..WorkloadSpec::default()
    };
    Simulation::new(
        config,
        |_, uid| FixedLock::new(lock_dir(), uid),
        move |client| hold_cycles(client, spec.clone(), lock_calls()),
    )
}

const SAFETY: [Property; 5] = [
    Property::MutualExclusion,
    Property::FencedMutualExclusion,
    Property::Fifo,
    Property::Liveness,
    Property::NoLeaks,
];

#[test]
fn fixed_lock_without_faults_completes_every_cycle() {
    let mut config = lock_config(5, &SAFETY);
    config.trace = true;
    let report = fixed_lock_sim(config, 10).run(1);
    assert!(report.passed(), "{:?}\n{}", report.violations, report.trace);
    assert_eq!(report.workloads_done, 5);
    let acquisitions = report
        .trace
        .lines
        .iter()
        .filter(|l| l.text.starts_with("Acquired"))
        .count();
    assert_eq!(acquisitions, 50, "{}", report.trace);
    assert!(report.stats.requests >= 150, "{:?}", report.stats);
}

#[test]
fn same_seed_same_trace_other_seed_other_trace() {
    let mut config = lock_config(3, &SAFETY);
    config.trace = true;
    config.faults = FaultPlan {
        rates: FaultRates {
            loss_after_apply: 0.05,
            loss_before_apply: 0.05,
            ..FaultRates::default()
        },
        ..FaultPlan::default()
    };
    let sim = fixed_lock_sim(config, 5);
    let a = sim.run(42);
    let b = sim.run(42);
    assert_eq!(a.trace.to_string(), b.trace.to_string());
    assert_ne!(a.trace.hash(), sim.run(43).trace.hash());
}

#[test]
fn original_lock_runs_under_the_world() {
    let spec = WorkloadSpec {
        cycles: 5,
        ..WorkloadSpec::default()
    };
    let sim = Simulation::new(
        lock_config(3, &SAFETY),
        |_, _| OriginalLock::new(lock_dir()),
        move |client| hold_cycles(client, spec.clone(), lock_calls()),
    );
    let report = sim.run(3);
    assert!(report.stats.requests > 0);
}
