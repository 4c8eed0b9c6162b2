//! `check --report DIR`: a model check as a report document. Each
//! counterexample becomes a run with the same pictures as a simulation:
//! its steps as a trace (one step per simulated millisecond, so the
//! sequence diagram and the ownership timeline read in step order), the
//! holds its outcomes show, and the violations the simulator's oracles
//! report when the schedule is replayed on the stepper.

use super::report::violation_record;
use zk_models::run::{CheckReport, TraceStep, Verdict};
use zk_models::setup::InitialState;
use zk_models::ModelVariant;
use zk_reports::schema::{self, HoldSpan, TraceEvent, TraceKind};

/// Simulated time a counterexample's step stands for in the pictures.
const STEP_NS: u64 = 1_000_000;

/// The check's record: counts and a verdict per property.
pub fn check_record(report: &CheckReport, faults: &str, strategy: &str) -> schema::Check {
    let (recipe, variant) = report
        .model
        .split_once('/')
        .unwrap_or((report.model.as_str(), ""));
    schema::Check {
        recipe: recipe.to_string(),
        variant: variant.to_string(),
        clients: report.clients,
        servers: report.servers,
        faults: faults.to_string(),
        strategy: strategy.to_string(),
        unique_states: report.unique_states as u64,
        states: report.states as u64,
        exhaustive: report.exhaustive,
        stopped_by: report.stop.map(|stop| stop.reason().to_string()),
        properties: report
            .properties
            .iter()
            .map(|p| schema::PropertyVerdict {
                name: p.name.to_string(),
                expectation: format!("{:?}", p.expectation).to_lowercase(),
                verdict: match p.verdict {
                    Verdict::Holds => "holds",
                    Verdict::Violated => "violated",
                    Verdict::Found => "example found",
                    Verdict::NotFound => "no example",
                }
                .to_string(),
                steps: p.trace.as_deref().map(step_lines).unwrap_or_default(),
                schedule: None,
            })
            .collect(),
    }
}

fn step_lines(trace: &[TraceStep]) -> Vec<String> {
    trace
        .iter()
        .enumerate()
        .map(|(n, step)| format!("{}. {} — {}", n + 1, step.action, step.lines.join("; ")))
        .collect()
}

/// One counterexample as a run: its steps as the trace, its holds, and
/// the violations its replay on the stepper shows (from `initial`, the
/// server state the check started from).
pub fn counterexample_run(
    model: &ModelVariant,
    report: &CheckReport,
    initial: &InitialState,
    property: &str,
    schedule_file: &str,
    replay: String,
) -> Option<schema::Run> {
    let result = report.property(property)?;
    let trace = result.trace.as_ref()?;
    let schedule = report.schedule(result)?.with_initial_state(initial);
    let end_ns = trace.len() as u64 * STEP_NS;
    let unexplained = |message: String| schema::Violation {
        property: property.to_string(),
        signature: format!("{property}/unexplained"),
        at_ns: end_ns,
        message: message.clone(),
        events: Vec::new(),
        diagnosis: schema::Diagnosis {
            mechanism: "unexplained".to_string(),
            summary: message,
            findings: Vec::new(),
        },
    };
    let violations = match model.replay(&schedule) {
        Ok(replayed) => {
            let mut violations: Vec<schema::Violation> = replayed
                .violations
                .iter()
                .map(|v| {
                    let mut record = violation_record(v);
                    record.at_ns = end_ns;
                    record
                })
                .collect();
            if !replayed.agrees() {
                violations.push(unexplained(format!(
                    "the replay on the simulator does not show the {property} counterexample"
                )));
            }
            violations
        }
        Err(error) => vec![unexplained(format!(
            "the schedule does not replay on the simulator: {error}"
        ))],
    };
    let events = trace_events(trace);
    Some(schema::Run {
        scenario: schedule_file.to_string(),
        recipe: schedule.recipe.clone(),
        variant: schedule.variant.clone(),
        seed: None,
        clients: report.clients,
        verdict: schema::Verdict::Violation,
        replay,
        violations,
        holds: holds(&events, end_ns),
        trace: events,
        stats: schema::RunStats {
            requests: 0,
            messages: 0,
            faults: 0,
            sim_time_ns: end_ns,
        },
    })
}

/// `cN: text` lines, one event each; a server apply is drawn as the
/// client's send and the server's apply.
fn trace_events(trace: &[TraceStep]) -> Vec<TraceEvent> {
    let mut events = Vec::new();
    for (n, step) in trace.iter().enumerate() {
        let at_ns = (n as u64 + 1) * STEP_NS;
        for line in &step.lines {
            let (client, text) = split_client(line);
            let mut push = |kind, text: &str| {
                events.push(TraceEvent {
                    at_ns,
                    client,
                    kind,
                    text: text.to_string(),
                })
            };
            if text.starts_with("!!") {
                continue;
            }
            if let Some(request) = text.strip_prefix("server applies ") {
                push(TraceKind::Send, request);
                events.push(TraceEvent {
                    at_ns,
                    client,
                    kind: TraceKind::Apply,
                    text: text.to_string(),
                });
                continue;
            }
            let kind = if text.starts_with("application calls") {
                TraceKind::Call
            } else if text.starts_with("outcome") {
                TraceKind::Outcome
            } else if text.starts_with("receives") {
                TraceKind::Deliver
            } else if text.contains("lost") || text.contains("expire") {
                TraceKind::Fault
            } else {
                TraceKind::Session
            };
            push(kind, text);
        }
    }
    events
}

fn split_client(line: &str) -> (Option<usize>, &str) {
    let trimmed = line.trim();
    let Some((who, rest)) = trimmed.split_once(": ") else {
        return (None, trimmed);
    };
    match who.strip_prefix('c').and_then(|n| n.parse().ok()) {
        Some(client) => (Some(client), rest),
        None => (None, trimmed),
    }
}

/// Holds from the outcomes: `Acquired { token: FencingToken(N) }` opens
/// one, `Released` or `Lost` closes the client's open hold.
fn holds(events: &[TraceEvent], end_ns: u64) -> Vec<HoldSpan> {
    let mut spans: Vec<HoldSpan> = Vec::new();
    for event in events.iter().filter(|e| e.kind == TraceKind::Outcome) {
        let Some(client) = event.client else { continue };
        if event.text.contains("Acquired") || event.text.contains("Elected") {
            let token = event
                .text
                .split("FencingToken(")
                .nth(1)
                .and_then(|rest| rest.split(')').next())
                .and_then(|n| n.parse().ok());
            spans.push(HoldSpan {
                client,
                from_ns: event.at_ns,
                until_ns: None,
                token,
                ended: "held at end".to_string(),
                session_ended_ns: None,
            });
        } else if event.text.contains("Released")
            || event.text.contains("Lost")
            || event.text.contains("Resigned")
        {
            let ended = if event.text.contains("Lost") {
                "lost"
            } else {
                "released"
            };
            for span in spans
                .iter_mut()
                .filter(|s| s.client == client && s.until_ns.is_none())
            {
                span.until_ns = Some(event.at_ns.min(end_ns));
                span.ended = ended.to_string();
            }
        }
    }
    spans
}
