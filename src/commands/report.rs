//! Reports: converts runs, sweeps and checks into the versioned report
//! document (`zk_reports::schema`), writes `--report DIR` (JSON, HTML,
//! Markdown, JUnit XML side by side), and `zkcheck report RESULT.json
//! --html|--md|--junit` renders a saved document again.

use super::sim::{bad_input, replay_command, EXIT_BAD_INPUT};
use super::Harness;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use zk_reports::schema::{self, Report, ReportKind};
use zk_sim::diagnosis::Diagnosis;
use zk_sim::oracles::Violation;
use zk_sim::scenario::Scenario;
use zk_sim::world::{RunReport, TraceKind};

#[derive(clap::Args)]
pub struct ReportArgs {
    /// A report document (`report.json` of a `--report DIR`).
    pub result: PathBuf,
    /// Render it as one self-contained HTML page.
    #[arg(long, group = "format")]
    pub html: bool,
    /// Render it as Markdown.
    #[arg(long, group = "format")]
    pub md: bool,
    /// Render it as JUnit XML.
    #[arg(long, group = "format")]
    pub junit: bool,
    /// Write to FILE instead of standard output.
    #[arg(long, short, value_name = "FILE")]
    pub output: Option<PathBuf>,
}

pub fn run(args: ReportArgs) -> ExitCode {
    let text = match zk_sim::input::read_input(&args.result) {
        Ok(text) => text,
        Err(error) => return bad_input(error.to_string()),
    };
    let report = match zk_reports::from_json(&text) {
        Ok(report) => report,
        Err(error) => return bad_input(format!("{}: {error}", args.result.display())),
    };
    let rendered = if args.html {
        zk_reports::html(&report)
    } else if args.junit {
        zk_reports::junit(&report)
    } else {
        zk_reports::markdown(&report)
    };
    match &args.output {
        Some(path) => match std::fs::write(path, rendered) {
            Ok(()) => ExitCode::SUCCESS,
            Err(error) => {
                eprintln!("error: cannot write {}: {error}", path.display());
                ExitCode::from(EXIT_BAD_INPUT)
            }
        },
        None => {
            print!("{rendered}");
            ExitCode::SUCCESS
        }
    }
}

/// A new report document of `kind`.
pub fn document(kind: ReportKind, title: String, command: String) -> Report {
    Report {
        schema_version: zk_reports::SCHEMA_VERSION,
        generated_by: format!("zkcheck {}", env!("CARGO_PKG_VERSION")),
        kind,
        title,
        command,
        runs: Vec::new(),
        sweep: None,
        check: None,
        catalog: None,
    }
}

/// The command line this process was started with, quoted so it pastes.
pub fn this_command() -> String {
    let words: Vec<String> = std::env::args()
        .map(|word| super::sim::quote(&word))
        .collect();
    words.join(" ")
}

/// `name` made safe as a file name: letters, digits, `-`, `_`, `.`.
pub fn file_name(name: &str) -> String {
    let safe: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "-_.".contains(c) {
                c
            } else {
                '-'
            }
        })
        .collect();
    safe.trim_start_matches('.').to_string()
}

/// Writes `report` into `dir` as `NAME.json`, `NAME.html`, `NAME.md` and
/// `NAME.junit.xml`; says where on stdout.
pub fn write_dir(dir: &Path, name: &str, report: &Report) -> Result<(), ()> {
    let write = |extension: &str, text: String| {
        let path = dir.join(format!("{name}.{extension}"));
        std::fs::write(&path, text).map_err(|error| {
            eprintln!("error: cannot write {}: {error}", path.display());
        })
    };
    std::fs::create_dir_all(dir).map_err(|error| {
        eprintln!("error: cannot create {}: {error}", dir.display());
    })?;
    let name = file_name(name);
    write("json", zk_reports::to_json(report))?;
    write("html", zk_reports::html(report))?;
    write("md", zk_reports::markdown(report))?;
    write("junit.xml", zk_reports::junit(report))?;
    println!(
        "report: {}",
        super::sim::quote(&dir.join(format!("{name}.html")).display().to_string())
    );
    Ok(())
}

/// One seeded run as the report schema has it (`report` must carry its
/// trace for the pictures).
pub fn run_record(harness: &Harness, scenario: &Scenario, report: &RunReport) -> schema::Run {
    let verdict = if !report.passed() {
        schema::Verdict::Violation
    } else if report.vacuous().is_some() {
        schema::Verdict::Error
    } else {
        schema::Verdict::Pass
    };
    schema::Run {
        scenario: scenario.file.display().to_string(),
        recipe: scenario.recipe.name.clone(),
        variant: scenario.raw.variant.clone(),
        seed: Some(report.seed),
        clients: scenario.raw.clients,
        verdict,
        replay: replay_command(&harness.program, scenario, report.seed),
        violations: report.violations.iter().map(violation_record).collect(),
        trace: report
            .trace
            .lines
            .iter()
            .map(|line| schema::TraceEvent {
                at_ns: line.at_ns,
                client: line.client,
                kind: trace_kind(line.kind),
                text: line.text.clone(),
            })
            .collect(),
        holds: report
            .holds
            .iter()
            .map(|hold| schema::HoldSpan {
                client: hold.client,
                from_ns: hold.from_ns,
                until_ns: hold.until_ns,
                token: Some(hold.token),
                ended: hold.ended.unwrap_or("held at end").to_string(),
                session_ended_ns: hold.session_ended_ns,
            })
            .collect(),
        stats: schema::RunStats {
            requests: report.stats.requests,
            messages: report.stats.messages,
            faults: report.stats.faults,
            sim_time_ns: report.stats.sim_time_ns,
        },
    }
}

pub fn violation_record(violation: &Violation) -> schema::Violation {
    schema::Violation {
        property: violation.property.name().to_string(),
        signature: violation.signature(),
        at_ns: violation.at_ns,
        message: violation.message.clone(),
        events: violation.events.clone(),
        diagnosis: diagnosis_record(violation.diagnosis.as_ref(), &violation.message),
    }
}

fn diagnosis_record(diagnosis: Option<&Diagnosis>, message: &str) -> schema::Diagnosis {
    let Some(diagnosis) = diagnosis else {
        return schema::Diagnosis {
            mechanism: "undiagnosed".to_string(),
            summary: message.to_string(),
            findings: Vec::new(),
        };
    };
    schema::Diagnosis {
        mechanism: diagnosis.mechanism.clone(),
        summary: diagnosis.summary.clone(),
        findings: diagnosis
            .findings
            .iter()
            .map(|finding| schema::Finding {
                client: finding.client,
                path: finding.path.clone(),
                mechanism: finding.mechanism.clone(),
                what: finding.what.clone(),
                why: finding.why.clone(),
                moments: finding
                    .moments
                    .iter()
                    .map(|(at_ns, what)| schema::Moment {
                        at_ns: *at_ns,
                        what: what.clone(),
                    })
                    .collect(),
            })
            .collect(),
    }
}

fn trace_kind(kind: TraceKind) -> schema::TraceKind {
    match kind {
        TraceKind::Call => schema::TraceKind::Call,
        TraceKind::Outcome => schema::TraceKind::Outcome,
        TraceKind::Fault => schema::TraceKind::Fault,
        TraceKind::Phase => schema::TraceKind::Phase,
        TraceKind::Session => schema::TraceKind::Session,
        TraceKind::Apply => schema::TraceKind::Apply,
        TraceKind::Send => schema::TraceKind::Send,
        TraceKind::Deliver => schema::TraceKind::Deliver,
        TraceKind::Timer => schema::TraceKind::Timer,
    }
}
