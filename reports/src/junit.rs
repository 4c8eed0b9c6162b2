//! JUnit XML, for CI systems that show test results.
//!
//! One `<testsuite>` for the report's subject:
//! - a run report: one testcase per run (`run`), failing with every
//!   violation (message: the signatures; body: each diagnosis and the
//!   replay command), or an `<error>` when the run did not complete;
//! - a sweep: one failing testcase per bucket (named by its signature),
//!   or a single passing `sweep` testcase when no seed failed;
//! - a model check: one testcase per property, failing when `violated`,
//!   skipped when `unknown`;
//! - the catalog: one testcase per entry, failing when not `ok`;
//! - a guided campaign: one testcase (`fuzz SCENARIO campaign seed S`),
//!   failing with its first failing run's replay command when a run broke
//!   a property, and skipped otherwise: a campaign that found nothing drew
//!   a sample of the world, which is not a pass.
//!
//! Coverage is not shown: it is no test result.
//!
//! Everything is XML-escaped, and characters XML cannot hold are replaced,
//! so the document is well-formed whatever the report says.

use crate::markdown::time_budget;
use crate::markdown::{fixed_cell, model_cell, simulation_cell};
use crate::schema::{Catalog, Check, Fuzz, Report, ReportKind, Run, Sweep, Verdict, Violation};
use crate::text::{escape_xml as esc, lane_name, ms};
use std::fmt::Write;

enum CaseResult {
    Pass,
    Failure { message: String, body: String },
    Error { message: String, body: String },
    Skipped { message: String },
}

struct Case {
    classname: String,
    name: String,
    result: CaseResult,
}

/// The report as a JUnit XML document.
pub fn junit(report: &Report) -> String {
    let (suite, cases) = match report.kind {
        ReportKind::Run => ("run".to_string(), run_cases(&report.runs)),
        ReportKind::Sweep => match &report.sweep {
            Some(sweep) => (
                format!("sweep {} {}", sweep.scenario, sweep.seeds),
                sweep_cases(sweep, &report.runs),
            ),
            None => ("sweep".to_string(), vec![missing("sweep")]),
        },
        ReportKind::Check => match &report.check {
            Some(check) => (
                format!("check {} {}", check.recipe, check.variant),
                check_cases(check),
            ),
            None => ("check".to_string(), vec![missing("check")]),
        },
        ReportKind::Catalog => match &report.catalog {
            Some(catalog) => ("catalog".to_string(), catalog_cases(catalog)),
            None => ("catalog".to_string(), vec![missing("catalog")]),
        },
        ReportKind::Fuzz => match &report.fuzz {
            Some(fuzz) => (fuzz_case_name(fuzz), vec![fuzz_case(fuzz, &report.runs)]),
            None => ("fuzz".to_string(), vec![missing("fuzz")]),
        },
    };
    let tests = cases.len();
    let failures = cases
        .iter()
        .filter(|c| matches!(c.result, CaseResult::Failure { .. }))
        .count();
    let errors = cases
        .iter()
        .filter(|c| matches!(c.result, CaseResult::Error { .. }))
        .count();
    let skipped = cases
        .iter()
        .filter(|c| matches!(c.result, CaseResult::Skipped { .. }))
        .count();

    let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let _ = writeln!(
        out,
        "<testsuites name=\"{}\" tests=\"{tests}\" failures=\"{failures}\" errors=\"{errors}\" skipped=\"{skipped}\">",
        esc(&report.title)
    );
    let _ = writeln!(
        out,
        "  <testsuite name=\"{}\" tests=\"{tests}\" failures=\"{failures}\" errors=\"{errors}\" skipped=\"{skipped}\">",
        esc(&format!("{}: {}", suite, report.title))
    );
    out.push_str("    <properties>\n");
    for (name, value) in [
        ("command", report.command.as_str()),
        ("generated_by", report.generated_by.as_str()),
        ("schema_version", &report.schema_version.to_string()),
    ] {
        let _ = writeln!(
            out,
            "      <property name=\"{name}\" value=\"{}\"/>",
            esc(value)
        );
    }
    out.push_str("    </properties>\n");
    for case in &cases {
        let open = format!(
            "    <testcase classname=\"{}\" name=\"{}\"",
            esc(&case.classname),
            esc(&case.name)
        );
        match &case.result {
            CaseResult::Pass => {
                let _ = writeln!(out, "{open}/>");
            }
            CaseResult::Failure { message, body } | CaseResult::Error { message, body } => {
                let tag = if matches!(case.result, CaseResult::Failure { .. }) {
                    "failure"
                } else {
                    "error"
                };
                let _ = writeln!(
                    out,
                    "{open}>\n      <{tag} message=\"{}\">{}</{tag}>\n    </testcase>",
                    esc(message),
                    esc(body)
                );
            }
            CaseResult::Skipped { message } => {
                let _ = writeln!(
                    out,
                    "{open}>\n      <skipped message=\"{}\"/>\n    </testcase>",
                    esc(message)
                );
            }
        }
    }
    out.push_str("  </testsuite>\n</testsuites>\n");
    out
}

fn missing(section: &str) -> Case {
    Case {
        classname: "zkcheck".to_string(),
        name: section.to_string(),
        result: CaseResult::Error {
            message: format!("the report has no {section} section"),
            body: String::new(),
        },
    }
}

fn classname(parts: &[&str]) -> String {
    let mut name = String::from("zkcheck");
    for part in parts {
        name.push('.');
        name.push_str(part);
    }
    name
}

/// A violation in words: what broke, why, and who was involved.
fn violation_text(out: &mut String, violation: &Violation) {
    let _ = writeln!(
        out,
        "{} at {} (property {}): {}",
        violation.signature,
        ms(violation.at_ns),
        violation.property,
        violation.message
    );
    let diagnosis = &violation.diagnosis;
    let _ = writeln!(
        out,
        "Diagnosis ({}): {}",
        diagnosis.mechanism, diagnosis.summary
    );
    for finding in &diagnosis.findings {
        let mut who = Vec::new();
        if let Some(client) = finding.client {
            who.push(lane_name(Some(client)));
        }
        if let Some(path) = &finding.path {
            who.push(path.clone());
        }
        let _ = writeln!(out, "  {} ({}):", who.join(" "), finding.mechanism);
        let _ = writeln!(out, "    what: {}", finding.what);
        let _ = writeln!(out, "    why: {}", finding.why);
        for moment in &finding.moments {
            let _ = writeln!(out, "    at {}: {}", ms(moment.at_ns), moment.what);
        }
    }
    if !violation.events.is_empty() {
        out.push_str("  events:\n");
        for event in &violation.events {
            let _ = writeln!(out, "    {event}");
        }
    }
}

fn run_cases(runs: &[Run]) -> Vec<Case> {
    runs.iter()
        .enumerate()
        .map(|(index, run)| {
            let name = if runs.len() == 1 {
                "run".to_string()
            } else {
                match run.seed {
                    Some(seed) => format!("run {} seed {seed}", index + 1),
                    None => format!("run {}", index + 1),
                }
            };
            let result = match run.verdict {
                Verdict::Pass if run.violations.is_empty() => CaseResult::Pass,
                Verdict::Error => CaseResult::Error {
                    message: "the run did not complete".to_string(),
                    body: format!("Replay: {}\n", run.replay),
                },
                Verdict::InternalError => CaseResult::Error {
                    message: "internal error of zkcheck (the run panicked)".to_string(),
                    body: format!("Rerun: {}\n", run.replay),
                },
                _ => {
                    let mut body = String::new();
                    for violation in &run.violations {
                        violation_text(&mut body, violation);
                        body.push('\n');
                    }
                    let _ = writeln!(body, "Replay: {}", run.replay);
                    let signatures: Vec<&str> = run
                        .violations
                        .iter()
                        .map(|v| v.signature.as_str())
                        .collect();
                    let message = if signatures.is_empty() {
                        "violation".to_string()
                    } else {
                        let first = &run.violations[0];
                        format!("{}: {}", signatures.join(", "), first.message)
                    };
                    CaseResult::Failure { message, body }
                }
            };
            Case {
                classname: classname(&[&run.recipe, &run.variant, &run.scenario]),
                name,
                result,
            }
        })
        .collect()
}

fn sweep_cases(sweep: &Sweep, runs: &[Run]) -> Vec<Case> {
    let class = classname(&["sweep", &sweep.recipe, &sweep.variant]);
    if sweep.buckets.is_empty() {
        return vec![Case {
            classname: class,
            name: "sweep".to_string(),
            result: if sweep.failed == 0 {
                CaseResult::Pass
            } else {
                CaseResult::Failure {
                    message: format!("{} of {} seeds failed", sweep.failed, sweep.runs),
                    body: String::new(),
                }
            },
        }];
    }
    sweep
        .buckets
        .iter()
        .map(|bucket| {
            let mut body = format!(
                "{} of {} seeds ({}) failed with {}; first seed {}.\n{}\n",
                bucket.seeds,
                sweep.runs,
                sweep.seeds,
                bucket.signature,
                bucket.first_seed,
                bucket.summary
            );
            let shown = runs.iter().find(|run| run.seed == Some(bucket.first_seed));
            if let Some(run) = shown {
                for violation in run
                    .violations
                    .iter()
                    .filter(|v| v.signature == bucket.signature)
                {
                    body.push('\n');
                    violation_text(&mut body, violation);
                }
            }
            let _ = write!(body, "\nReplay: {}\n", bucket.replay);
            Case {
                classname: class.clone(),
                name: bucket.signature.clone(),
                result: CaseResult::Failure {
                    message: format!(
                        "{}: {} seeds, first seed {}: {}",
                        bucket.signature, bucket.seeds, bucket.first_seed, bucket.summary
                    ),
                    body,
                },
            }
        })
        .collect()
}

fn check_cases(check: &Check) -> Vec<Case> {
    let class = classname(&["check", &check.recipe, &check.variant]);
    check
        .properties
        .iter()
        .map(|property| {
            let result = match property.verdict.as_str() {
                "violated" => {
                    let mut body = format!(
                        "{} ({}) is violated: a counterexample of {} steps in {} unique states.\n",
                        property.name,
                        property.expectation,
                        property.steps.len(),
                        check.unique_states
                    );
                    for step in &property.steps {
                        let _ = writeln!(body, "  {step}");
                    }
                    if let Some(schedule) = &property.schedule {
                        let _ = writeln!(body, "Schedule: {schedule} (zkcheck replay runs it)");
                    }
                    CaseResult::Failure {
                        message: format!(
                            "{} violated ({} steps)",
                            property.name,
                            property.steps.len()
                        ),
                        body,
                    }
                }
                "unknown" => CaseResult::Skipped {
                    message: format!("{}: unknown (the check was not exhaustive)", property.name),
                },
                _ => CaseResult::Pass,
            };
            Case {
                classname: class.clone(),
                name: property.name.clone(),
                result,
            }
        })
        .collect()
}

fn catalog_cases(catalog: &Catalog) -> Vec<Case> {
    catalog
        .entries
        .iter()
        .map(|entry| {
            let result = if entry.ok {
                CaseResult::Pass
            } else {
                let mut body = format!(
                    "{}: {}\nscenario: {}\nsignature: {}\nsimulation: {}\nmodel: {}\nfixed: {}\n",
                    entry.bug,
                    entry.title,
                    entry.scenario,
                    entry.signature,
                    simulation_cell(entry),
                    model_cell(entry),
                    fixed_cell(entry)
                );
                if let Some(replay) = &entry.simulation.replay {
                    let _ = writeln!(body, "Replay: {replay}");
                }
                let why = if entry.simulation.seeds_caught == 0 {
                    "not caught with its own signature"
                } else if entry.fixed.seeds_failed > 0 || entry.fixed.model_holds == Some(false) {
                    "its fix does not hold"
                } else {
                    "not ok"
                };
                CaseResult::Failure {
                    message: format!("{} {}: {why}", entry.bug, entry.signature),
                    body,
                }
            };
            Case {
                classname: classname(&["catalog", &entry.recipe]),
                name: entry.bug.clone(),
                result,
            }
        })
        .collect()
}

/// `fuzz SCENARIO campaign seed S`: the campaign's suite and its testcase.
fn fuzz_case_name(fuzz: &Fuzz) -> String {
    format!(
        "fuzz {} campaign seed {}",
        fuzz.scenario, fuzz.campaign_seed
    )
}

/// The campaign's one testcase: failing with the replay command when a
/// run broke a property, skipped when none did (a sample, not a pass).
fn fuzz_case(fuzz: &Fuzz, runs: &[Run]) -> Case {
    let counts = format!(
        "{} runs ({} of them the scenario's own seeds), corpus {}{}",
        fuzz.runs,
        fuzz.seed_runs,
        fuzz.corpus,
        time_budget(fuzz)
    );
    let result = match fuzz.first_failing_run {
        Some(run) => fuzz_failure(fuzz, run, &counts, runs),
        None => CaseResult::Skipped {
            message: format!("a sample, not a pass: no run broke a property in {counts}"),
        },
    };
    Case {
        classname: classname(&["fuzz", &fuzz.recipe, &fuzz.variant]),
        name: fuzz_case_name(fuzz),
        result,
    }
}

/// Run `run` broke a property: the message names the signatures (of the
/// failing run the report shows in full) and the replay command, the body
/// adds each violation's diagnosis and the tape.
fn fuzz_failure(fuzz: &Fuzz, run: u64, counts: &str, runs: &[Run]) -> CaseResult {
    let replay = fuzz
        .replay
        .as_deref()
        .unwrap_or("no replay command was written");
    let violations: Vec<&Violation> = runs.iter().flat_map(|r| &r.violations).collect();
    let mut body = format!("Run {run} of the campaign broke a property; {counts}.\n");
    for violation in &violations {
        body.push('\n');
        violation_text(&mut body, violation);
    }
    if let Some(tape) = &fuzz.tape {
        let _ = write!(body, "\nTape: {tape}");
    }
    let _ = writeln!(body, "\nReplay: {replay}");
    let broke = if violations.is_empty() {
        "a property".to_string()
    } else {
        let signatures: Vec<&str> = violations.iter().map(|v| v.signature.as_str()).collect();
        signatures.join(", ")
    };
    CaseResult::Failure {
        message: format!("run {run} broke {broke}; replay: {replay}"),
        body,
    }
}
