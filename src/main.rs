//! `zkcheck`: the command line of the ZooKeeper recipe checker, on the
//! built-in recipes. A user's own binary is the same one line with its own
//! registry (see `zkcheck::main_with` and docs/own-recipe.md).

use std::process::ExitCode;

/// mimalloc: model states and simulated worlds allocate heavily (about 2x
/// faster than the system allocator on the model checker's hot path; see
/// BENCHMARKS.md). The benchmarks use the same allocator.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    zkcheck::main_with(zkcheck::Registry::builtin())
}
