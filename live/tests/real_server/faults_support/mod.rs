//! The fault-path harness: runs one fault script on the simulator's server
//! core and client session layer, and on a real ZooKeeper behind a fault
//! proxy, each under a fresh top-level node, and compares what every
//! session saw (replies, node events, state changes) step by step, then the
//! tree left behind.

pub mod live_side;
pub mod observe;
pub mod probe;
pub mod script;
pub mod sim_side;

use crate::conformance_support::outcome::first_difference;
use crate::conformance_support::Harness;
use observe::{broken_expectations, report, Run};
use script::FaultScript;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};
use zk_live::zk_addr_from_env;
use zk_recipes::zk::Path;

/// The command that runs the fault tests.
pub const HOW_TO_RUN: &str =
    "scripts/zk-server start; cargo test --release --workspace --test real_server -- --ignored faults::";

/// A tokio runtime for the live side and the server's address.
pub struct FaultHarness {
    runtime: tokio::runtime::Runtime,
    addr: String,
    /// Distinguishes this run's root nodes from earlier runs' on the server.
    run_id: u128,
    next_root: AtomicUsize,
}

impl FaultHarness {
    /// Panics, saying how to start one, when no server answers at `ZK_ADDR`
    /// (the conformance suite's check).
    pub fn new() -> FaultHarness {
        drop(Harness::new());
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let run_id = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_millis();
        FaultHarness {
            runtime,
            addr: zk_addr_from_env(),
            run_id,
            next_root: AtomicUsize::new(0),
        }
    }

    /// Runs `script` on both sides; panics with the report on a difference
    /// or a broken expectation.
    pub fn check(&self, script: &FaultScript) {
        if let Err(report) = self.compare(script) {
            panic!("{report}\n(run: {HOW_TO_RUN})");
        }
    }

    /// Runs `script` on both sides and compares; the error is the report.
    pub fn compare(&self, script: &FaultScript) -> Result<(), String> {
        let n = self.next_root.fetch_add(1, Ordering::Relaxed);
        let root = Path::new(format!("/faults-{}-{}-{n}", script.name, self.run_id)).unwrap();
        let sim = sim_side::run(script, &root);
        let live = self
            .runtime
            .block_on(live_side::run(script, &root, &self.addr));
        compare_runs(script, &root, &live, &sim)
    }
}

fn compare_runs(script: &FaultScript, root: &Path, live: &Run, sim: &Run) -> Result<(), String> {
    let details = || report(script, root.as_str(), live, sim);
    if let Some(step) = first_difference(&live.outcomes, &sim.outcomes) {
        let header = format!("the simulator and ZooKeeper differ first at step {step}\n");
        return Err(header + &details());
    }
    if live.tree != sim.tree {
        return Err("the simulator and ZooKeeper leave different trees\n".to_string() + &details());
    }
    let broken = broken_expectations(script, live);
    if !broken.is_empty() {
        let header = format!(
            "both sides agree, but not with the script's expectations:\n  {}\n",
            broken.join("\n  ")
        );
        return Err(header + &details());
    }
    Ok(())
}
