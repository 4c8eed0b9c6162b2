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

    /// Child names getChildren replies carried, per request.
    pub fn children_per_request(&self) -> f64 {
        self.children_returned as f64 / self.requests.max(1) as f64
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

/// CPU per request as a straight line in the children a request returned:
/// `ns_per_request = per_request_ns + per_child_ns * children_per_request`,
/// fitted by least squares over measured rows. If the line fits every row
/// closely, the cost is linear in work (requests and child names, each at
/// its own price) and nothing else grows with the number of clients.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct CostFit {
    /// CPU ns a request costs beside the names it returns (the intercept).
    pub per_request_ns: f64,
    /// CPU ns each child name a getChildren reply carries costs (the slope).
    pub per_child_ns: f64,
    /// Per row: (measured - fitted) / fitted, in the order given.
    pub deviations: Vec<f64>,
}

impl CostFit {
    /// Fits `(children per request, CPU ns per request)` points; `None`
    /// with fewer than two distinct children counts (no slope to fit).
    pub fn fit(points: &[(f64, f64)]) -> Option<CostFit> {
        if points.len() < 2 {
            return None;
        }
        let n = points.len() as f64;
        let mean_x = points.iter().map(|p| p.0).sum::<f64>() / n;
        let mean_y = points.iter().map(|p| p.1).sum::<f64>() / n;
        let spread: f64 = points.iter().map(|p| (p.0 - mean_x).powi(2)).sum();
        if spread < 1e-9 {
            return None;
        }
        let covariance: f64 = points.iter().map(|p| (p.0 - mean_x) * (p.1 - mean_y)).sum();
        let per_child_ns = covariance / spread;
        let mut fit = CostFit {
            per_request_ns: mean_y - per_child_ns * mean_x,
            per_child_ns,
            deviations: Vec::new(),
        };
        fit.deviations = points
            .iter()
            .map(|&(x, y)| (y - fit.fitted(x)) / fit.fitted(x))
            .collect();
        Some(fit)
    }

    /// CPU ns per request on the line, at `children_per_request` names.
    pub fn fitted(&self, children_per_request: f64) -> f64 {
        self.per_request_ns + self.per_child_ns * children_per_request
    }

    /// The largest deviation of a row from the line, as a fraction.
    pub fn worst_deviation(&self) -> f64 {
        self.deviations
            .iter()
            .fold(0.0, |worst, d| d.abs().max(worst))
    }
}

#[cfg(test)]
mod tests {
    use super::CostFit;

    #[test]
    fn a_straight_line_is_recovered_exactly() {
        let points: Vec<(f64, f64)> = [0.5, 3.0, 20.0, 75.0]
            .iter()
            .map(|&x| (x, 2700.0 + 230.0 * x))
            .collect();
        let fit = CostFit::fit(&points).unwrap();
        assert!((fit.per_request_ns - 2700.0).abs() < 1e-6, "{fit:?}");
        assert!((fit.per_child_ns - 230.0).abs() < 1e-6, "{fit:?}");
        assert!(fit.worst_deviation() < 1e-9, "{fit:?}");
    }

    #[test]
    fn a_cost_that_grows_faster_than_work_shows_as_deviation() {
        // Quadratic in the children: no line fits within 30%.
        let points: Vec<(f64, f64)> = [0.5, 5.0, 20.0, 40.0, 75.0]
            .iter()
            .map(|&x| (x, 1000.0 + 10.0 * x * x))
            .collect();
        let fit = CostFit::fit(&points).unwrap();
        assert!(fit.worst_deviation() > 0.3, "{fit:?}");
    }

    #[test]
    fn one_children_count_has_no_slope() {
        assert_eq!(CostFit::fit(&[(1.0, 10.0), (1.0, 12.0)]), None);
        assert_eq!(CostFit::fit(&[(1.0, 10.0)]), None);
        assert_eq!(CostFit::fit(&[]), None);
    }
}
