//! zk-models' integration tests in one test binary (one build and one link instead of one per file):
//! each module is one former test file, named as before: `cargo test --release --workspace --test suite lasso::`.

#[path = "../common/mod.rs"]
mod common;

// The library's modules that stand alone (`lib_*`), compiled here with their unit
// tests: the library itself sets `test = false` (compiling it again in test
// mode took 450 s of CPU, the model checker instantiated for every shipped
// recipe). The tests of the modules that need the whole library are in
// `units.rs`.
#[allow(dead_code)]
#[path = "../../src/cached.rs"]
mod lib_cached;
#[allow(dead_code)]
#[path = "../../src/faults.rs"]
mod lib_faults;
#[allow(dead_code)]
#[path = "../../src/memory.rs"]
mod lib_memory;
#[allow(dead_code)]
#[path = "../../src/dfs/visited.rs"]
mod lib_visited;
#[allow(dead_code)]
#[path = "../../src/workload.rs"]
mod lib_workload;

mod diagnosis;
mod ensemble;
mod fixed_variants;
mod generic_kinds;
mod known_bugs;
mod lasso;
mod memory;
mod model;
mod node_churn;
mod reduction;
mod registry;
mod replay;
mod schedule_input;
mod session_faults;
mod setup;
mod state_counts;
mod symmetry;
mod units;
