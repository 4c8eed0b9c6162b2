//! Reports: converts runs, sweeps and checks into the versioned report
//! document (`zk_reports::schema`), writes `--report DIR` (JSON, HTML,
//! Markdown, JUnit XML side by side), and `zkcheck report RESULT.json
//! --html|--md|--junit` renders a saved document again.

use super::common::{bad_input, EXIT_BAD_INPUT};
#[cfg(madsim)]
use super::seed_commands::replay_command;
#[cfg(madsim)]
use super::Harness;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use zk_reports::schema::{self, Report, ReportKind};
use zk_sim::diagnosis::Diagnosis;
use zk_sim::oracles::Violation;
#[cfg(madsim)]
use zk_sim::scenario::Scenario;
#[cfg(madsim)]
use zk_sim::world::{RunReport, TraceKind};

#[derive(clap::Args)]
pub struct ReportArgs {
    /// A report document (the `NAME.json` of a `--report DIR`; at most
    /// 256 MiB).
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
    let limit = zk_sim::input::MAX_REPORT_BYTES;
    let text = match zk_sim::input::read_input_up_to(&args.result, limit) {
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
        fuzz: None,
        coverage: None,
    }
}

/// The command line this process was started with, quoted so it pastes.
pub fn this_command() -> String {
    let words: Vec<String> = std::env::args()
        .map(|word| super::common::quote(&word))
        .collect();
    words.join(" ")
}

/// Longest file name stem [`file_name`] makes (bytes; file systems refuse
/// names over 255, and the extensions come after it).
const MAX_FILE_STEM: usize = 120;

/// `name` (user text: a scenario's name, a model's, a bug's) made safe as
/// one file name inside a directory: letters, digits, `-`, `_` and `.`
/// kept, anything else (`/`, `\`, spaces, control characters) made `-`;
/// no leading `.` (so no `..` and no hidden file); at most
/// [`MAX_FILE_STEM`] bytes; `unnamed` when nothing is left. Every file
/// name zkcheck makes from user text goes through here.
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
        .take(MAX_FILE_STEM)
        .collect();
    let safe = safe.trim_start_matches('.');
    if safe.is_empty() {
        "unnamed".to_string()
    } else {
        safe.to_string()
    }
}

/// `dir/STEM.extension` with `stem` made safe by [`file_name`]: always a
/// file directly inside `dir`.
pub fn file_in(dir: &Path, stem: &str, extension: &str) -> PathBuf {
    let name = format!("{}.{extension}", file_name(stem));
    assert!(
        !name.contains(['/', '\\']) && !name.starts_with('.'),
        "{name:?} is one file name"
    );
    dir.join(name)
}

/// Creates `dir` (and its parents) if missing; exit 2 follows if it cannot.
pub fn create_report_dir(dir: &Path) -> Result<(), ()> {
    std::fs::create_dir_all(dir).map_err(|error| {
        eprintln!("error: --report: cannot create {}: {error}", dir.display());
    })
}

/// Writes `report` into `dir` as `NAME.json`, `NAME.html`, `NAME.md` and
/// `NAME.junit.xml` (`NAME` is `name` made safe by [`file_name`]); says on
/// stdout where the HTML page is (the path written).
pub fn write_dir(dir: &Path, name: &str, report: &Report) -> Result<(), ()> {
    create_report_dir(dir)?;
    let write = |extension: &str, text: String| {
        let path = file_in(dir, name, extension);
        std::fs::write(&path, text).map_err(|error| {
            eprintln!("error: cannot write {}: {error}", path.display());
        })
    };
    write("json", zk_reports::to_json(report))?;
    write("html", zk_reports::html(report))?;
    write("md", zk_reports::markdown(report))?;
    write("junit.xml", zk_reports::junit(report))?;
    println!(
        "report: {}",
        super::common::quote(&file_in(dir, name, "html").display().to_string())
    );
    Ok(())
}

/// One seeded run as the report schema has it (`report` must carry its
/// trace for the pictures).
#[cfg(madsim)]
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

/// A run that panicked: verdict internal error, the panic as its one trace
/// event, `rerun` as its command.
#[cfg(madsim)]
pub fn internal_error_record(
    scenario: &Scenario,
    seed: u64,
    panic: &str,
    rerun: &str,
) -> schema::Run {
    schema::Run {
        scenario: scenario.file.display().to_string(),
        recipe: scenario.recipe.name.clone(),
        variant: scenario.raw.variant.clone(),
        seed: Some(seed),
        clients: scenario.raw.clients,
        verdict: schema::Verdict::InternalError,
        replay: rerun.to_string(),
        violations: Vec::new(),
        trace: vec![schema::TraceEvent {
            at_ns: 0,
            client: None,
            kind: schema::TraceKind::Phase,
            text: format!("INTERNAL ERROR of zkcheck: the run panicked: {panic}"),
        }],
        holds: Vec::new(),
        stats: schema::RunStats {
            requests: 0,
            messages: 0,
            faults: 0,
            sim_time_ns: 0,
        },
    }
}

pub fn violation_record(violation: &Violation) -> schema::Violation {
    schema::Violation {
        property: violation.property_name().to_string(),
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

#[cfg(madsim)]
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
        // The application's own log lines: part of its story.
        TraceKind::App => schema::TraceKind::Call,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_names_from_user_text_stay_one_name() {
        for (name, safe) in [
            ("lock-fixed", "lock-fixed"),
            ("../README", "-README"),
            ("/etc/passwd", "-etc-passwd"),
            ("a\\b/c", "a-b-c"),
            ("ctl\u{1b}[2J\u{0}x", "ctl--2J-x"),
            ("", "unnamed"),
            ("...", "unnamed"),
            (".hidden", "hidden"),
        ] {
            assert_eq!(file_name(name), safe, "{name:?}");
        }
        assert_eq!(file_name(&"x".repeat(1000)).len(), MAX_FILE_STEM);
        let dir = Path::new("out");
        assert_eq!(file_in(dir, "../a", "md"), Path::new("out/-a.md"));
        assert_eq!(file_in(dir, "..", "json"), Path::new("out/unnamed.json"));
    }
}
