//! Every path the model checker finds replays on the simulator's stepper
//! with the same verdict from the simulator's own oracles: each violated
//! property (that the simulator has an oracle for) is violated there too,
//! and every example a fixed variant gives replays without a violation.
//! Every violation a replay reports carries a diagnosis that names a
//! mechanism (`models/tests/suite/diagnosis.rs` pins which).

use crate::common::check;
use zk_models::replay::{oracle_for, ReplayReport};
use zk_models::run::{CheckReport, Verdict};
use zk_models::Registry;

const BUDGETS: &[&str] = &["none", "connection-loss=1", "expiry=1"];

/// Unreasonably large for a quick test.
const SKIP: &[(&str, &str, &str)] = &[
    ("semaphore", "original", "connection-loss=1"),
    ("semaphore", "original", "expiry=1"),
];

/// Replays every discovery of `report`; the disagreements, one line each.
fn disagreements(report: &CheckReport, fixed: bool) -> Vec<String> {
    let (recipe, variant) = report.model.split_once('/').unwrap();
    let entry = Registry::builtin().model(recipe, variant).unwrap();
    let mut found = Vec::new();
    for property in &report.properties {
        let judged = match property.verdict {
            Verdict::Violated => oracle_for(property.name).is_some(),
            // The simulator counts stale holders as holders (see
            // `zk_models::replay`): that example is a violation there.
            Verdict::Found => fixed && property.name != "stale_holder_overlap",
            _ => false,
        };
        if !judged {
            continue;
        }
        let schedule = report.schedule(property).expect("a path");
        let replayed: ReplayReport = entry.replay(&schedule).unwrap_or_else(|error| {
            panic!("{} {}: replay failed: {error}", report.model, property.name)
        });
        for violation in &replayed.violations {
            let mechanism = violation.diagnosis.as_ref().map(|d| d.mechanism.as_str());
            if matches!(mechanism, None | Some("unexplained")) {
                found.push(format!(
                    "{} faults {} {}: {} is not explained ({})",
                    report.model,
                    report.faults,
                    property.name,
                    violation.property,
                    violation.signature()
                ));
            }
        }
        if !replayed.agrees() {
            found.push(format!(
                "{} faults {} {} ({:?}): simulator says {:?}\n{}",
                report.model,
                report.faults,
                property.name,
                property.verdict,
                replayed.violations,
                replayed.trace
            ));
        }
    }
    found
}

#[test]
fn every_counterexample_and_example_replays_on_the_simulator_with_the_same_verdict() {
    let mut found = Vec::new();
    let mut replayed_violations = 0;
    for (recipe, variant, _) in zk_models::Registry::builtin().models() {
        let (recipe, variant) = (recipe.as_str(), variant.as_str());
        for &budget in BUDGETS {
            if SKIP.contains(&(recipe, variant, budget)) {
                continue;
            }
            let report = check(recipe, variant, 2, budget);
            replayed_violations += report
                .properties
                .iter()
                .filter(|p| p.verdict == Verdict::Violated && oracle_for(p.name).is_some())
                .count();
            found.extend(disagreements(&report, variant == "fixed"));
        }
    }
    assert!(found.is_empty(), "{}", found.join("\n"));
    // Not vacuous: the originals' counterexamples were among them.
    assert!(replayed_violations >= 20, "{replayed_violations}");
}

#[test]
fn a_schedule_that_does_not_fit_its_model_is_refused_with_the_step() {
    let report = check("lock", "original", 2, "none");
    let property = report.property("mutual_exclusion").unwrap();
    let mut schedule = report.schedule(property).unwrap();
    let entry = Registry::builtin().model("lock", "original").unwrap();
    schedule.steps[0].op = "teleport".into();
    let error = entry.replay(&schedule).unwrap_err().to_string();
    assert!(
        error.contains("step 1") && error.contains("teleport"),
        "{error}"
    );
    schedule.steps[0].op = "call".into();
    schedule.steps[0].call = Some("Explode".into());
    let error = entry.replay(&schedule).unwrap_err().to_string();
    assert!(error.contains("no call Explode"), "{error}");
}
