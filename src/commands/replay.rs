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

use super::run_output::{default_filter, emit_trace, init_logging, print_verdict};
use super::seed_commands::replay_command;
use super::sim::{load_input, Input, QuietStdout};
use super::Harness;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

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
        if let Err(code) = refuse_run_picking_flags(&args, "a tape file") {
            return code;
        }
        return super::replay_tape::run(harness, &args.scenario, &text);
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
fn refuse_run_picking_flags(args: &ReplayArgs, what: &str) -> Result<(), ExitCode> {
    match run_picking_flags(args).iter().find(|(_, given)| *given) {
        Some((flag, _)) => Err(super::common::bad_input(format!(
            "{flag}: {} is {what}, which replays one exact run; {flag} does not apply to it",
            args.scenario.display()
        ))),
        None => Ok(()),
    }
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
