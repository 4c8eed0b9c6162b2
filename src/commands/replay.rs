//! `zkcheck replay SCENARIO --seed N`: reruns one seed and prints its
//! trace, one line per event, through `tracing` (RUST_LOG filters it).
//!
//! Targets: `zk::story` (calls, outcomes, faults, phases, sessions) at
//! INFO, `zk::server` (requests applied) at DEBUG, `zk::net` (sends,
//! deliveries, timers) at TRACE. Without RUST_LOG every line is shown;
//! `RUST_LOG=info` keeps the story only. Output stops quietly when the
//! reader goes away (`| head`).
//!
//! Given a model checker schedule (`zkcheck check` writes them), replays
//! its steps on the simulator's stepper instead (`super::schedule`).

use super::sim::{load_scenario, replay_command, QuietStdout, EXIT_VIOLATION};
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use tracing_subscriber::EnvFilter;
use zk_sim::world::{TraceKind, TraceLine};

#[derive(clap::Args)]
pub struct ReplayArgs {
    /// The scenario file (TOML), or a schedule written by `zkcheck check`.
    pub scenario: PathBuf,
    /// Run another variant of the scenario's recipe (e.g. `fixed` on a bug's scenario).
    #[arg(long)]
    pub variant: Option<String>,
    /// The seed to replay.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
}

pub fn run(args: ReplayArgs) -> ExitCode {
    if super::schedule::is_schedule(&args.scenario) {
        return super::schedule::run(&args.scenario, true);
    }
    let scenario = match load_scenario(&args.scenario, args.variant.as_deref()) {
        Ok(scenario) => scenario,
        Err(code) => return code,
    };
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("zk=trace"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .without_time()
        .with_target(false)
        .with_level(false)
        .with_ansi(false)
        .with_writer(|| QuietStdout)
        .init();
    let report = scenario.runner().run(args.seed, true);
    for line in &report.trace.lines {
        emit(line);
    }
    let mut out = QuietStdout;
    if report.passed() {
        let _ = writeln!(out, "pass: seed {}", args.seed);
        return ExitCode::SUCCESS;
    }
    for violation in &report.violations {
        let _ = write!(
            out,
            "VIOLATION of {} (seed {}):\n  {violation}",
            violation.property, args.seed
        );
    }
    let _ = writeln!(out, "replay: {}", replay_command(&scenario, args.seed));
    ExitCode::from(EXIT_VIOLATION)
}

fn emit(line: &TraceLine) {
    match line.kind {
        TraceKind::Call
        | TraceKind::Outcome
        | TraceKind::Fault
        | TraceKind::Phase
        | TraceKind::Session => {
            tracing::info!(target: "zk::story", "{line}")
        }
        TraceKind::Apply => tracing::debug!(target: "zk::server", "{line}"),
        TraceKind::Send | TraceKind::Deliver | TraceKind::Timer => {
            tracing::trace!(target: "zk::net", "{line}")
        }
    }
}
