//! zk-reports' integration tests in one test binary (one build and one link instead of one per file):
//! each module is one former test file, named as before: `cargo test --release --workspace --test suite markdown::`.

#[path = "../common/mod.rs"]
mod common;

mod browser;
mod html;
mod json;
mod junit;
mod markdown;
