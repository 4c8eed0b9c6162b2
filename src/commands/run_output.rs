//! How a replayed run prints (`replay` of a seed, a tape file or a choice
//! file): the log filter and subscriber, its trace lines through
//! `tracing`, and its verdict.

use super::common::EXIT_VIOLATION;
use super::sim::QuietStdout;
use std::io::Write;
use std::process::ExitCode;
use tracing_subscriber::filter::filter_fn;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{EnvFilter, Layer};
use zk_sim::world::AppEvents;
use zk_sim::world::{RunReport, TraceKind, TraceLine};

/// Prints a replayed run's trace, one line per event (`emit`).
pub fn emit_trace(report: &RunReport) {
    for line in &report.trace.lines {
        emit(line);
    }
}

/// Prints a replayed run's verdict: `pass: {pass}` (exit 0), or each
/// violation as `VIOLATION of P{tag}:` and the `replay: {replay}` line
/// (exit 1).
pub fn print_verdict(report: &RunReport, pass: &str, tag: &str, replay: &str) -> ExitCode {
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

/// RUST_LOG, default `zk=trace`; madsim's HashMap warning left out.
pub fn default_filter() -> EnvFilter {
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
pub fn init_logging(filter: EnvFilter) {
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

pub fn emit(line: &TraceLine) {
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
