//! Simulator speed for one scenario (default: the 5-client lock scenario):
//! simulated requests per second on one thread (per CPU-second) and on
//! every core (wall), with the `zkcheck` binary's allocator.
//!
//! `cargo bench --bench world -- [SCENARIO] [SECONDS]`
//!
//! `zkcheck bench` prints the full tables (clients, cycles) with the same
//! measurement (`zkcheck::bench`).

#[cfg(madsim)]
use std::path::{Path, PathBuf};
#[cfg(madsim)]
use std::time::Duration;
#[cfg(madsim)]
use zk_sim::scenario::Scenario;
#[cfg(madsim)]
use zkcheck::bench::{measure, Figures};

/// The allocator the `zkcheck` binary uses (src/main.rs).
#[cfg(madsim)]
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[cfg(madsim)]
fn print(label: &str, f: &Figures) {
    println!(
        "{label}: {} seeds, {} requests in {:.3} s wall: {:.0} simulated requests/s wall, \
         {:.0} per CPU-second of the workers ({:.2} s), {:.0} simulated s per CPU-second",
        f.seeds,
        f.requests,
        f.wall_seconds,
        f.requests_per_wall_second(),
        f.requests_per_cpu_second(),
        f.cpu_seconds,
        f.compression()
    );
}

#[cfg(madsim)]
fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .collect();
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios");
    let file = args
        .first()
        .map_or_else(|| root.join("lock-fixed.toml"), PathBuf::from);
    let seconds: f64 = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(5.0);
    let scenario = Scenario::load(&file, zk_models::Registry::builtin().sim_recipes())
        .unwrap_or_else(|e| panic!("{e}"));
    let runner = scenario.runner();
    println!(
        "scenario {} ({} clients, {} cycles each)",
        file.display(),
        scenario.raw.clients,
        scenario.raw.workload.cycles
    );
    let budget = Duration::from_secs_f64(seconds);
    measure(runner.as_ref(), 1, budget / 4, 1); // warm up
    print("1 thread", &measure(runner.as_ref(), 1, budget, 1));
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    print(
        &format!("{cores} threads"),
        &measure(runner.as_ref(), cores, budget, 1),
    );
}

/// The simulator exists only with `--cfg madsim` (.cargo/config.toml).
#[cfg(not(madsim))]
fn main() {
    eprintln!(
        "the world bench runs the simulator: build with `--cfg madsim` (no RUSTFLAGS override)"
    );
    std::process::exit(2);
}
