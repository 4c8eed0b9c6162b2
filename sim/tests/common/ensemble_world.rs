//! The world the ensemble test modules share (used by
//! `ensemble_faults.rs` and `ensemble_leader_loss.rs`): the fixed WriteLock
//! on three servers under a schedule of faults.

use zk_recipes::lock::FixedLock;
use zk_recipes::zk::Acls;
use zk_recipes::zk::{CreateMode, Path, Request};
use zk_sim::faults::{Fault, FaultPlan, MsRange, ScheduledFault, Trigger};
use zk_sim::oracles::{OracleConfig, Property};
use zk_sim::world::workloads::{hold_cycles, WorkloadSpec};
use zk_sim::world::{Simulation, WorldConfig};

/// The fixed WriteLock, 5 clients on 3 servers (session timeout 3 s,
/// 40 hold cycles each), with `schedule`'s faults: `(at_ms, client, fault)`.
pub fn fixed_lock_on_three_servers(schedule: Vec<(f64, usize, Fault)>) -> Simulation<FixedLock> {
    fixed_lock_on_three_servers_with(3_000, schedule)
}

/// The same with a session timeout of `session_timeout_ms`.
pub fn fixed_lock_on_three_servers_with(
    session_timeout_ms: u64,
    schedule: Vec<(f64, usize, Fault)>,
) -> Simulation<FixedLock> {
    let locks = Path::new("/locks").unwrap();
    let config = WorldConfig {
        clients: 5,
        servers: 3,
        session_timeout_ms,
        fault_phase_ms: 10_000,
        heal_ms: 10_000,
        setup: vec![Request::Create {
            path: locks.clone(),
            data: Vec::new(),
            mode: CreateMode::Persistent,
            acl: Acls::Open,
        }],
        faults: FaultPlan::scheduled(
            schedule
                .into_iter()
                .map(|(at_ms, client, fault)| ScheduledFault {
                    trigger: Trigger::AtMs(at_ms),
                    client,
                    fault,
                })
                .collect(),
        ),
        oracles: OracleConfig {
            properties: [
                Property::FencedMutualExclusion,
                Property::Liveness,
                Property::NoLeaks,
            ]
            .into_iter()
            .collect(),
            fifo_dir: Some(locks),
            ..OracleConfig::default()
        },
        trace: true,
        ..WorldConfig::default()
    };
    let spec = WorkloadSpec {
        cycles: 40,
        hold_ms: MsRange::new(5, 40),
        think_ms: MsRange::new(0, 20),
        ..WorkloadSpec::default()
    };
    Simulation::new(
        config,
        |_, uid| FixedLock::new(Path::new("/locks").unwrap(), uid),
        move |client| {
            hold_cycles(
                client,
                spec.clone(),
                zk_sim::world::adapters::HoldCalls::new(
                    zk_recipes::lock::LockCall::Lock,
                    zk_recipes::lock::LockCall::Unlock,
                ),
            )
        },
    )
}
