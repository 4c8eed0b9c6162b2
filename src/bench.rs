//! Measuring the simulator: seeds of a scenario run on N threads until a
//! time budget is spent, with the work done (simulated requests, simulated
//! time) against wall time and the workers' CPU time. `zkcheck bench`
//! prints tables of these; `cargo bench --bench world` measures one
//! scenario with the same code.
//!
//! The budget only decides how many seeds are run; every seed is the same
//! deterministic run it is everywhere else.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};
use zk_sim::scenario::Runner;

/// What a measurement did and what it cost.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct Figures {
    pub threads: usize,
    pub seeds: u64,
    /// Simulated requests the server applied, over every seed.
    pub requests: u64,
    /// Child names in the getChildren replies, over every seed.
    pub children_returned: u64,
    /// Simulated time, over every seed.
    pub simulated_seconds: f64,
    pub wall_seconds: f64,
    /// CPU time of the worker threads (the machine may be shared).
    pub cpu_seconds: f64,
    /// Seeds that broke a property (a benchmark of a fixed variant has none).
    pub failed_seeds: u64,
}

impl Figures {
    /// Simulated requests per second of wall time (all threads).
    pub fn requests_per_wall_second(&self) -> f64 {
        self.requests as f64 / self.wall_seconds.max(1e-9)
    }

    /// Simulated requests per CPU second of the workers: per core.
    pub fn requests_per_cpu_second(&self) -> f64 {
        self.requests as f64 / self.cpu_seconds.max(1e-9)
    }

    /// Nanoseconds of CPU per simulated request.
    pub fn cpu_ns_per_request(&self) -> f64 {
        self.cpu_seconds * 1e9 / (self.requests.max(1) as f64)
    }

    /// Nanoseconds of CPU per unit of work: a request, or a child name a
    /// getChildren reply carried.
    pub fn cpu_ns_per_work(&self) -> f64 {
        self.cpu_seconds * 1e9 / ((self.requests + self.children_returned).max(1) as f64)
    }

    /// Simulated seconds per CPU second (time compression).
    pub fn compression(&self) -> f64 {
        self.simulated_seconds / self.cpu_seconds.max(1e-9)
    }
}

/// Runs seeds `0, 1, ...` of `runner` on `threads` threads until `budget`
/// has passed (at least `min_seeds` seeds), each seed in its own runtime.
pub fn measure(runner: &dyn Runner, threads: usize, budget: Duration, min_seeds: u64) -> Figures {
    let next = AtomicU64::new(0);
    let requests = AtomicU64::new(0);
    let children = AtomicU64::new(0);
    let simulated_ns = AtomicU64::new(0);
    let cpu_us = AtomicU64::new(0);
    let failed = AtomicU64::new(0);
    let started = Instant::now();
    std::thread::scope(|scope| {
        for _ in 0..threads {
            scope.spawn(|| {
                let cpu_start = thread_cpu_seconds();
                loop {
                    let seed = next.fetch_add(1, Ordering::Relaxed);
                    if seed >= min_seeds && started.elapsed() >= budget {
                        next.fetch_sub(1, Ordering::Relaxed);
                        break;
                    }
                    let report = runner.run(seed, false);
                    if !report.passed() {
                        failed.fetch_add(1, Ordering::Relaxed);
                    }
                    requests.fetch_add(report.stats.requests, Ordering::Relaxed);
                    children.fetch_add(report.stats.children_returned, Ordering::Relaxed);
                    simulated_ns.fetch_add(report.stats.sim_time_ns, Ordering::Relaxed);
                }
                let cpu = thread_cpu_seconds() - cpu_start;
                cpu_us.fetch_add((cpu * 1e6) as u64, Ordering::Relaxed);
            });
        }
    });
    Figures {
        threads,
        seeds: next.into_inner(),
        requests: requests.into_inner(),
        children_returned: children.into_inner(),
        simulated_seconds: simulated_ns.into_inner() as f64 / 1e9,
        wall_seconds: started.elapsed().as_secs_f64(),
        cpu_seconds: cpu_us.into_inner() as f64 / 1e6,
        failed_seeds: failed.into_inner(),
    }
}

/// This thread's CPU time (user + system) from /proc; 0 where there is
/// none (then the per-CPU figures are not meaningful, and say so by
/// being absurdly large).
pub fn thread_cpu_seconds() -> f64 {
    let Ok(stat) = std::fs::read_to_string("/proc/thread-self/stat") else {
        return 0.0;
    };
    // Fields after the command name (which may hold spaces): utime and
    // stime are the 12th and 13th.
    let fields: Vec<&str> = stat
        .rsplit(')')
        .next()
        .unwrap_or("")
        .split_whitespace()
        .collect();
    let ticks: f64 = fields.get(11..13).map_or(0.0, |f| {
        f.iter().filter_map(|v| v.parse::<f64>().ok()).sum()
    });
    ticks / clock_ticks_per_second()
}

/// The kernel's clock ticks per second for /proc times (USER_HZ: 100 on
/// Linux for every architecture zkcheck builds on).
fn clock_ticks_per_second() -> f64 {
    100.0
}
