//! `zkcheck replay SCENARIO --seed N`: reruns one seed and prints its
//! trace, one line per event, through `tracing` (RUST_LOG filters it).
//!
//! Targets: `zk::story` (calls, outcomes, faults, phases, sessions) at
//! INFO, `zk::server` (requests applied) at DEBUG, `zk::net` (sends,
//! deliveries, timers) at TRACE. Without RUST_LOG every line is shown;
//! `RUST_LOG=info` keeps the story only. Output stops quietly when the
//! reader goes away (`| head`).
//!
//! A run that panics prints no trace (none was kept): it is an internal
//! error of zkcheck, printed with the seed and the panic, exit 3.
//!
//! Given a model checker schedule (`zkcheck check` writes them), replays
//! its steps on the simulator's stepper instead (`super::schedule`).
//!
//! `--write-tape FILE` also writes the seed's run as a tape file: every
//! word of randomness its streams drew ([`zk_sim::world::draws`]), with the
//! scenario's text; given a tape file, `replay` runs it again (the words
//! decide every draw, the file's seed the rest: `super::replay_tape`).
//!
//! madsim warns, at WARN, that "std HashMap will not be deterministic"
//! when the thread made a HashMap before the runtime started (the log
//! filter does). It does not matter here: nothing in a simulated run
//! iterates a std HashMap (an invariant of ARCHITECTURE.md, checked by the
//! trace-hash tests), so the warning is filtered out unless RUST_LOG names
//! madsim.

use super::common::EXIT_VIOLATION;
use super::sim::{load_input, replay_command, Input, QuietStdout};
use super::Harness;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use tracing_subscriber::filter::filter_fn;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{EnvFilter, Layer};
use zk_sim::world::AppEvents;
use zk_sim::world::{RunReport, TraceKind, TraceLine};

#[derive(clap::Args)]
pub struct ReplayArgs {
    /// The scenario file (TOML), or a schedule written by `zkcheck check`.
    pub scenario: PathBuf,
    /// Run another variant of the scenario's recipe (e.g. `fixed` on a bug's scenario).
    #[arg(long)]
    pub variant: Option<String>,
    /// The seed to replay (default 0).
    #[arg(long)]
    pub seed: Option<u64>,
    /// Keep the run going after its first violation.
    #[arg(long)]
    pub all_violations: bool,
    /// Also write the run as a tape file (every draw it made, stream by
    /// stream): `replay FILE` runs it again, and a changed word gives
    /// another run of the same world.
    #[arg(long, value_name = "FILE")]
    pub write_tape: Option<PathBuf>,
}

pub fn run(harness: &Harness, args: ReplayArgs) -> ExitCode {
    let text = match super::common::read_input(&args.scenario) {
        Ok(text) => text,
        Err(code) => return code,
    };
    if zk_sim::explore::file::is_choice_text(&text) {
        return replay_choices(harness, &args, &text);
    }
    if zk_sim::world::tape_file::is_tape_text(&text) {
        return super::replay_tape::run(harness, &args, &text);
    }
    let scenario = match load_input(harness, &args.scenario, args.variant.as_deref()) {
        Ok(Input::Scenario(scenario)) => scenario,
        Ok(Input::Schedule(text)) => {
            let flags = run_picking_flags(&args);
            return match super::sim::refuse_schedule_flags(&args.scenario, &flags) {
                Ok(()) => super::schedule::run_text(harness, &args.scenario, &text, true),
                Err(code) => code,
            };
        }
        Err(code) => return code,
    };
    let mut scenario = scenario;
    scenario.all_violations = args.all_violations;
    let seed = args.seed.unwrap_or(0);
    init_logging(default_filter());
    if args.write_tape.is_some() {
        zk_sim::world::draws::install(zk_sim::world::draws::DrawRequest {
            record: true,
            ..Default::default()
        });
    }
    let report = match super::internal_error::catch(|| scenario.runner().run(seed, true)) {
        Ok(report) => report,
        Err(panic) => {
            let rerun = super::internal_error::rerun_command(&harness.program, &scenario, seed);
            let described = super::internal_error::describe(seed, &panic, &rerun);
            let _ = writeln!(QuietStdout, "{described}");
            return ExitCode::from(super::common::EXIT_INTERNAL_ERROR);
        }
    };
    emit_trace(&report);
    if let Some(path) = &args.write_tape {
        let written = super::replay_tape::write(&harness.program, path, &scenario, &text, &report);
        if let Err(code) = written {
            return code;
        }
    }
    if let (true, Some(why)) = (report.passed(), report.vacuous()) {
        super::common::print_no_progress(seed, &why);
        return ExitCode::from(super::common::EXIT_BAD_INPUT);
    }
    print_verdict(
        &report,
        &format!("seed {seed}"),
        &format!(" (seed {seed})"),
        &replay_command(&harness.program, &scenario, seed),
    )
}

/// The flags that pick a run from a scenario, and whether each was given.
fn run_picking_flags(args: &ReplayArgs) -> [(&'static str, bool); 4] {
    [
        ("--variant", args.variant.is_some()),
        ("--seed", args.seed.is_some()),
        ("--all-violations", args.all_violations),
        ("--write-tape", args.write_tape.is_some()),
    ]
}

/// Refuses (exit 2) a run-picking flag given with `what` (a choice or a
/// tape file), which replays one exact run.
pub(super) fn refuse_run_picking_flags(args: &ReplayArgs, what: &str) -> Result<(), ExitCode> {
    match run_picking_flags(args).iter().find(|(_, given)| *given) {
        Some((flag, _)) => Err(super::common::bad_input(format!(
            "{flag}: {} is {what}, which replays one exact run; {flag} does not apply to it",
            args.scenario.display()
        ))),
        None => Ok(()),
    }
}

/// Prints a replayed run's trace, one line per event (`emit`).
pub(super) fn emit_trace(report: &RunReport) {
    for line in &report.trace.lines {
        emit(line);
    }
}

/// Prints a replayed run's verdict: `pass: {pass}` (exit 0), or each
/// violation as `VIOLATION of P{tag}:` and the `replay: {replay}` line
/// (exit 1).
pub(super) fn print_verdict(report: &RunReport, pass: &str, tag: &str, replay: &str) -> ExitCode {
    let mut out = QuietStdout;
    if report.passed() {
        let _ = writeln!(out, "pass: {pass}");
        return ExitCode::SUCCESS;
    }
    for violation in &report.violations {
        let _ = write!(
            out,
            "VIOLATION of {}{tag}:\n  {violation}",
            violation.property_name()
        );
    }
    let _ = writeln!(out, "replay: {replay}");
    ExitCode::from(EXIT_VIOLATION)
}

/// Replays a choice file (`zkcheck check` on an async recipe writes them):
/// the one run its choices pick, with its full trace and the diagnosis.
fn replay_choices(harness: &Harness, args: &ReplayArgs, text: &str) -> ExitCode {
    if let Err(code) = refuse_run_picking_flags(args, "a choice file") {
        return code;
    }
    init_logging(default_filter());
    let report = match super::check_async::replay_report(harness, &args.scenario, text) {
        Ok(report) => report,
        Err(code) => return code,
    };
    emit_trace(&report);
    let path = super::common::quote(&args.scenario.display().to_string());
    print_verdict(
        &report,
        "the choices' run holds every property",
        "",
        &format!("{} replay {path}", harness.program),
    )
}

/// RUST_LOG, default `zk=trace`; madsim's HashMap warning left out.
pub(super) fn default_filter() -> EnvFilter {
    let mut filter =
        EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("zk=trace"));
    if !std::env::var("RUST_LOG").is_ok_and(|log| log.contains("madsim")) {
        filter = filter.add_directive("madsim::sim::rand=error".parse().expect("a directive"));
    }
    filter
}

/// zkcheck's trace lines printed through `filter` (RUST_LOG, default
/// `zk=trace`); the application's own events (every target outside `zk`
/// and `madsim`, at RUST_LOG's levels, default info) recorded into the
/// trace where they happened ([`AppEvents`]), not printed on their own.
pub(super) fn init_logging(filter: EnvFilter) {
    let printed = tracing_subscriber::fmt::layer()
        .without_time()
        .with_target(false)
        .with_level(false)
        .with_ansi(false)
        .with_writer(|| QuietStdout)
        .with_filter(filter)
        .with_filter(filter_fn(|meta| meta.target().starts_with("zk")));
    let application = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    let recorded = AppEvents
        .with_filter(application)
        .with_filter(filter_fn(|meta| {
            let target = meta.target();
            !target.starts_with("zk") && !target.starts_with("madsim")
        }));
    tracing_subscriber::registry()
        .with(printed)
        .with(recorded)
        .init();
}

pub(super) fn emit(line: &TraceLine) {
    match line.kind {
        TraceKind::Call
        | TraceKind::Outcome
        | TraceKind::Fault
        | TraceKind::Phase
        | TraceKind::Session
        | TraceKind::App => {
            tracing::info!(target: "zk::story", "{line}")
        }
        TraceKind::Apply => tracing::debug!(target: "zk::server", "{line}"),
        TraceKind::Send | TraceKind::Deliver | TraceKind::Timer => {
            tracing::trace!(target: "zk::net", "{line}")
        }
    }
}
