//! zkcheck's integration tests in one test binary (one build and one link instead of one per file):
//! each module is one former test file, named as before: `cargo test --release --workspace --test suite bad_input::`.
//! Binaries of their own: those with their own `main` (registry_cli: lasso, internal_error),
//! world_freed (its counting global allocator sees the whole process) and async_check (the async
//! example's code names `zookeeper_client`, the simulated crate there, the real one here).

#[path = "../common/mod.rs"]
mod common;

mod against_model;
mod async_crate_expiry;
mod async_recipe;
mod bad_input;
mod bench_cli;
mod bounded_check;
mod client_session_policies;
mod closed_pipe;
mod coverage;
mod cutoff;
mod diagnosis;
mod diagnosis_precision;
mod draw_tape;
mod ensemble;
mod ensemble_check;
mod ensemble_faults_fuzz;
mod explore_cli;
mod fuzz;
mod heal_window;
mod herd_figure;
mod house;
mod initial_state;
mod live_async;
mod live_cli;
mod memory_budget;
mod own_invariants;
mod progress_floor;
mod queue_failed_offers;
mod queue_properties;
mod reports;
mod scenario_check;
mod scenario_fuzz;
mod scenario_input;
mod sim_determinism;
mod sim_end_checks;
mod sim_scenarios;
mod sweep_merge;
mod testing_api;
mod untrusted_input;
