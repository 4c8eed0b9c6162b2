//! Simulator speed: simulated requests per second and seeds per second for a
//! scenario (default: the 5-client lock scenario), on one thread and on
//! every core.
//!
//! `cargo bench --bench world -- [SCENARIO] [SEEDS]`

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;
use zk_sim::scenario::{Runner, Scenario};

/// The allocator the `zkcheck` binary uses (src/main.rs).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

struct Figures {
    seeds: u64,
    requests: u64,
    seconds: f64,
    /// CPU time of the worker threads (the machine may be shared).
    cpu_seconds: f64,
}

/// This thread's CPU time (user + system), from /proc; 0 if unavailable.
fn thread_cpu_seconds() -> f64 {
    let Ok(stat) = std::fs::read_to_string("/proc/thread-self/stat") else {
        return 0.0;
    };
    let fields: Vec<&str> = stat
        .rsplit(')')
        .next()
        .unwrap_or("")
        .split_whitespace()
        .collect();
    let ticks: f64 = fields.get(11..13).map_or(0.0, |f| {
        f.iter().filter_map(|v| v.parse::<f64>().ok()).sum()
    });
    ticks / 100.0
}

impl Figures {
    fn print(&self, label: &str) {
        println!(
            "{label}: {} seeds, {} requests in {:.3} s wall: {:.0} simulated requests/s, {:.0} seeds/s",
            self.seeds,
            self.requests,
            self.seconds,
            self.requests as f64 / self.seconds,
            self.seeds as f64 / self.seconds
        );
        if self.cpu_seconds > 0.0 {
            println!(
                "    per CPU-second of the workers ({:.2} s): {:.0} simulated requests/s, {:.0} seeds/s",
                self.cpu_seconds,
                self.requests as f64 / self.cpu_seconds,
                self.seeds as f64 / self.cpu_seconds
            );
        }
    }
}

/// Runs `seeds` seeds on `threads` threads, each creating its own runtimes.
fn measure(runner: &dyn Runner, seeds: u64, threads: usize) -> Figures {
    let next = AtomicU64::new(0);
    let requests = AtomicU64::new(0);
    let cpu_ms = AtomicU64::new(0);
    let started = Instant::now();
    std::thread::scope(|scope| {
        for _ in 0..threads {
            scope.spawn(|| {
                let cpu_start = thread_cpu_seconds();
                loop {
                    let seed = next.fetch_add(1, Ordering::Relaxed);
                    if seed >= seeds {
                        break;
                    }
                    let report = runner.run(seed, false);
                    assert!(report.passed(), "seed {seed}: {:?}", report.violations);
                    requests.fetch_add(report.stats.requests, Ordering::Relaxed);
                }
                cpu_ms.fetch_add(
                    ((thread_cpu_seconds() - cpu_start) * 1000.0) as u64,
                    Ordering::Relaxed,
                );
            });
        }
    });
    Figures {
        seeds,
        requests: requests.into_inner(),
        seconds: started.elapsed().as_secs_f64(),
        cpu_seconds: cpu_ms.into_inner() as f64 / 1000.0,
    }
}

fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .collect();
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios");
    let file = args
        .first()
        .map_or_else(|| root.join("lock-fixed.toml"), PathBuf::from);
    let seeds: u64 = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(1000);
    let scenario = Scenario::load(&file, zk_models::Registry::builtin().sim_recipes())
        .unwrap_or_else(|e| panic!("{e}"));
    let runner = scenario.runner();
    println!(
        "scenario {} ({} clients, {} cycles each)",
        file.display(),
        scenario.raw.clients,
        scenario.raw.workload.cycles
    );
    measure(runner.as_ref(), seeds.min(50), 1); // warm up
    let stats = runner.run(0, false).stats;
    println!(
        "seed 0: {} requests, {} messages, {} events, {} scheduler polls, {} timers",
        stats.requests, stats.messages, stats.events, stats.scheduler_polls, stats.timers_armed
    );
    measure(runner.as_ref(), seeds, 1).print("1 thread");
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    measure(runner.as_ref(), seeds, cores).print(&format!("{cores} threads"));
}
