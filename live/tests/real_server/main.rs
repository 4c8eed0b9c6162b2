//! zk-live's tests against a real ZooKeeper in one test binary (one build and one link instead of
//! one per file): each module is one former test file, named as before. Every test is `#[ignore]`d
//! without a server; run them beside one with
//! `scripts/zk-server start; cargo test --release --workspace --test real_server -- --ignored --skip ensemble::`,
//! and the ensemble's beside a 3-server ensemble with
//! `scripts/zk-server start --ensemble 3; cargo test --release --workspace --test real_server -- --ignored ensemble::`.
//! `descriptors.rs` stays a binary of its own: it lowers the process's open-file limit.

mod conformance_support;
mod ensemble_support;
mod faults_support;

mod abandon;
mod conformance;
mod ensemble;
mod faults;
mod proxy_faults;
mod session;
mod silence;
