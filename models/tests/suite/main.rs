//! zk-models' integration tests in one test binary (one build and one link instead of one per file):
//! each module is one former test file, named as before: `cargo test --release --workspace --test suite lasso::`.

#[path = "../common/mod.rs"]
mod common;

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
