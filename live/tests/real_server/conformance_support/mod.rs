//! The conformance harness: runs one script on the in-memory server and on a
//! real ZooKeeper 3.8, each under a fresh top-level node, and compares the
//! normalized outcomes step by step (see `outcome` for what is compared).

pub mod coverage;
pub mod live_side;
pub mod outcome;
pub mod random;
pub mod script;
pub mod sim_side;

use coverage::Coverage;
use outcome::{broken_expectations, first_difference, report, StepOutcome};
use script::Script;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};
use zk_live::{zk_addr_from_env, LiveSession};
use zk_recipes::zk::Path;

/// The command that runs the suite.
pub const HOW_TO_RUN: &str =
    "scripts/zk-server start; cargo test --release --workspace --test real_server -- --ignored conformance::";

/// Both servers of one test, and a tokio runtime for the live side.
pub struct Harness {
    runtime: tokio::runtime::Runtime,
    addr: String,
    /// Distinguishes this run's root nodes from earlier runs' on the server.
    run_id: u128,
    next_root: AtomicUsize,
    /// What the scripts run so far exercised on the live side.
    pub coverage: Coverage,
}

/// Why a script failed: the report to print.
#[derive(Debug)]
pub struct Failure(pub String);

impl Harness {
    /// Connects to the real server at `ZK_ADDR` (default 127.0.0.1:2181) or
    /// panics saying that the suite cannot run without one.
    pub fn new() -> Harness {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let addr = zk_addr_from_env();
        runtime.block_on(async {
            match LiveSession::connect(&addr, 10_000).await {
                Ok(mut probe) => probe.close().await.expect("closing the probe session"),
                Err(error) => panic!(
                    "the conformance suite did NOT run: no ZooKeeper answers at {addr} ({error}).\n\
                     Start one with `scripts/zk-server start` (or set ZK_ADDR) and run\n  {HOW_TO_RUN}"
                ),
            }
        });
        let run_id = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_millis();
        Harness {
            runtime,
            addr,
            run_id,
            next_root: AtomicUsize::new(0),
            coverage: Coverage::default(),
        }
    }

    /// Runs `script` on both sides; panics with the report on a difference.
    pub fn check(&self, script: &Script) {
        if let Err(Failure(report)) = self.compare(script) {
            panic!("{report}");
        }
    }

    /// Runs `script` on both sides and compares; the error is the report.
    pub fn compare(&self, script: &Script) -> Result<(), Failure> {
        let n = self.next_root.fetch_add(1, Ordering::Relaxed);
        let root = Path::new(format!("/conformance-{}-{}-{n}", script.name, self.run_id)).unwrap();
        let sim = sim_side::run(script, &root);
        let live = self
            .runtime
            .block_on(live_side::run(script, &root, &self.addr, &sim.reaped));
        self.coverage.record(script, &live, &sim.reaped);
        compare_outcomes(script, &root, &live, &sim.outcomes)
    }
}

fn compare_outcomes(
    script: &Script,
    root: &Path,
    live: &[StepOutcome],
    sim: &[StepOutcome],
) -> Result<(), Failure> {
    let roots = format!("root {root} on both servers, written /~ below");
    if let Some(step) = first_difference(live, sim) {
        let header = format!("the in-memory server and ZooKeeper differ first at step {step}\n");
        return Err(Failure(header + &report(script, &roots, live, sim)));
    }
    let broken = broken_expectations(script, live);
    if !broken.is_empty() {
        let header = format!(
            "both servers agree, but not with the script's expectations:\n  {}\n",
            broken.join("\n  ")
        );
        return Err(Failure(header + &report(script, &roots, live, sim)));
    }
    Ok(())
}
