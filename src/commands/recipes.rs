//! `zkcheck recipes`: lists the registered recipes, their kinds, default
//! directories and variants, built-in and a user's own alike. For each
//! variant it says whether the model checker can check it and, if so, which
//! of `check`'s state-space reductions it supports: `--symmetry` (the recipe
//! declares itself symmetric) and `--ranks` (it declares a renaming).

use super::Harness;
use std::process::ExitCode;
use zk_models::{ModelVariant, Setup};

pub fn run(harness: &Harness) -> ExitCode {
    for entry in harness.registry.entries() {
        println!(
            "{} ({}, default path {})",
            entry.name(),
            entry.kind().name(),
            entry.default_path()
        );
        for variant in entry.variants() {
            let model = match harness.registry.model(entry.name(), variant.name()) {
                Ok(model) if variant.has_model() => reductions(&model),
                _ => " [no model]".to_string(),
            };
            println!("  {:<22} {}{model}", variant.name(), variant.about());
        }
    }
    ExitCode::SUCCESS
}

/// ` [--symmetry --ranks]`, ` [--ranks]` or nothing: the reductions `check`
/// accepts for the model (on one server, with no initial sequence counter).
fn reductions(model: &ModelVariant) -> String {
    let accepts = |setup: Setup| model.canonical_error(&setup).is_none();
    let ranks = accepts(Setup::new(2).with_ranks(true));
    let symmetry = accepts(Setup::new(2).with_symmetry(true));
    match (symmetry, ranks) {
        (true, true) => " [--symmetry --ranks]".to_string(),
        (true, false) => " [--symmetry]".to_string(),
        (false, true) => " [--ranks]".to_string(),
        (false, false) => String::new(),
    }
}
