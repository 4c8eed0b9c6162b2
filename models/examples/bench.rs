//! The model checker's benchmark: exhausts one registered model with BFS and
//! prints states explored, unique states, wall time and states per second.
//!
//! `cargo run --release -p zk-models --example bench -- RECIPE VARIANT CLIENTS FAULTS THREADS [DEPTH]`
//! e.g. `... --example bench -- lock fixed 3 connection-loss=1,expiry=1 2`.
//! Uses mimalloc as the global allocator (the states are allocation-heavy).

use zk_models::run::{RunOptions, Strategy};
use zk_models::{Registry, Setup};

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let arg = |i: usize, default: &str| args.get(i).cloned().unwrap_or_else(|| default.to_string());
    let entry = Registry::builtin()
        .model(&arg(0, "lock"), &arg(1, "fixed"))
        .expect("recipe and variant");
    let clients: usize = arg(2, "3").parse().expect("CLIENTS");
    let faults = arg(3, "connection-loss=1,expiry=1")
        .parse()
        .expect("FAULTS");
    let threads: usize = arg(4, "2").parse().expect("THREADS");
    let max_depth = args.get(5).map(|s| s.parse().expect("DEPTH"));
    let setup = Setup::new(clients).with_faults(faults);
    let options = RunOptions {
        strategy: Strategy::Bfs,
        threads,
        max_depth,
        timeout: None,
        progress_every: None,
        memory_budget: None,
    };
    let report = entry.check(&setup, &options);
    print!("{}", report.summary());
}
