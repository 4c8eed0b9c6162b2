//! zk-sim's integration tests in one test binary (one build and one link instead of one per file):
//! each module is one former test file, named as before: `cargo test --release --workspace --test suite ensemble::`.

#[path = "../common/mod.rs"]
#[allow(dead_code)]
mod common;

mod client_session;
mod client_timing;
mod ensemble;
mod ensemble_faults;
mod ensemble_freeze;
mod ensemble_leader_loss;
mod recipe_barrier;
mod recipe_curator_lock;
mod recipe_election;
mod recipe_lock;
mod recipe_queue;
mod recipe_semaphore;
mod recipe_shared_lock;
mod server;
mod server_persistent;
mod sim_faults;
mod sim_world;
