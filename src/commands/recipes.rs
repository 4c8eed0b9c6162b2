//! `zkcheck recipes`: lists the registered recipes, their kinds, default
//! directories and variants (with whether the model checker can check
//! each), built-in and a user's own alike.

use super::Harness;
use std::process::ExitCode;

pub fn run(harness: &Harness) -> ExitCode {
    for entry in harness.registry.entries() {
        println!(
            "{} ({}, default path {})",
            entry.name(),
            entry.kind().name(),
            entry.default_path()
        );
        for variant in entry.variants() {
            let model = if variant.has_model() {
                ""
            } else {
                " [no model]"
            };
            println!("  {:<22} {}{model}", variant.name(), variant.about());
        }
    }
    ExitCode::SUCCESS
}
