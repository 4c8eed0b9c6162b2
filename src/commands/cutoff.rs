//! `zkcheck check RECIPE --clients LO..HI`: the empirical cutoff. The
//! same check (every other flag as given; `--timeout` and `--depth` per
//! count) runs for each client count from LO to HI, both included, in
//! order; one table row per count as it finishes (unique and generated
//! states, wall time, whether the search was exhaustive, the verdict of
//! every property and, for each violated one, the signatures its
//! counterexample shows when replayed on the simulator), a column naming
//! what is new at that count (a verdict or a signature no smaller count
//! showed), then a closing line: after which count adding a client stopped
//! changing the answer, or that the last count still changed it.
//!
//! The cutoff is empirical: it holds over the counts checked, and only
//! where their searches were exhaustive (the closing line names the rows
//! that were not). In a search that was not exhaustive, "holds" and "no
//! example" are no answer and never count as new; a violation or an
//! example found is one. A signature is that of one counterexample per
//! property (the shortest with `--strategy bfs`), so a new signature may be
//! a different path to a known mechanism as well as a new one. After a count whose search timed out or reached its memory
//! budget the larger counts are skipped (they would not finish either) and named.
//!
//! Each property's counterexample is named (its length) and written as a
//! schedule only for the first count it shows one at, as
//! `{recipe}-{variant}-{property}-{N}clients.toml` in `--out`, with the
//! command that replays it (and prints its steps); `--examples` names the
//! first count each `sometimes` property has an example at.
//! `--report DIR` takes one count and is refused with a range.
//!
//! Exit status: 1 if any count had a violation (as `check` with one count);
//! else 2 on bad input (a bad range names `--clients`) or a count whose
//! exhaustive search could not have failed (an example not found); else 4 if any
//! count's search was not exhaustive (a timeout, a depth or memory bound,
//! random walks) or larger counts were skipped after one timed out; else 0.

use super::check_args::{CheckArgs, Clients, InputError};
use super::check_output::{verdict_status, violated_schedule, write_schedule_file, WriteError};
use super::Harness;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use zk_models::run::{CheckReport, Stop, Strategy, Verdict};
use zk_models::schedule::MAX_CLIENTS;
use zk_models::setup::InitialState;
use zk_models::ModelVariant;

fn bad(flag: &'static str, message: impl ToString) -> InputError {
    InputError::Flag {
        flag,
        message: message.to_string(),
    }
}

/// The counts of a range, or why the range is refused.
fn counts(first: usize, last: usize) -> Result<std::ops::RangeInclusive<usize>, InputError> {
    let range = format!("{first}..{last}");
    if first == 0 {
        return Err(bad(
            "--clients",
            format!("`{range}`: a check needs at least 1 client"),
        ));
    }
    if first > last {
        return Err(bad(
            "--clients",
            format!("`{range}` is empty: the first count must not exceed the last"),
        ));
    }
    if last > MAX_CLIENTS {
        return Err(bad(
            "--clients",
            format!("`{range}`: counts must be in 1..={MAX_CLIENTS}, got {last}"),
        ));
    }
    Ok(first..=last)
}

/// One count's check and what its counterexamples replay as.
struct Row {
    report: CheckReport,
    /// Per property (in the report's order): the signatures (`property/mechanism`)
    /// of its counterexample's replay on the simulator; empty unless violated.
    signatures: Vec<Vec<String>>,
    /// What no smaller count showed: `name VERDICT` and signatures.
    new: Vec<String>,
    timed_out: bool,
}

pub fn run(harness: &Harness, args: CheckArgs, first: usize, last: usize) -> ExitCode {
    let prepared = counts(first, last).and_then(|counts| {
        if args.report.is_some() {
            return Err(bad(
                "--report",
                "takes one client count, not a range: run `check --clients N --report DIR` for the count to report",
            ));
        }
        // Every flag but the count is the same for each count: resolve the first.
        let mut one = args.model.clone();
        one.clients = Some(Clients::One(*counts.start()));
        let (model, _) = one.resolve(harness)?;
        Ok((counts, model, args.options()?, args.initial.state()?))
    });
    let (counts, model, options, initial) = match prepared {
        Ok(prepared) => prepared,
        Err(error) => {
            eprintln!("error: {error}");
            return ExitCode::from(2);
        }
    };
    let mut stdout = std::io::stdout().lock();
    // Output errors (a closed pipe) do not change the verdict.
    let _ = writeln!(stdout, "{}", header(&args, first, last));
    let _ = writeln!(
        stdout,
        "one check per client count, every other flag as given; new: a property verdict or a diagnosis (signature of a counterexample replayed on the simulator) no smaller count showed\n"
    );
    let _ = writeln!(
        stdout,
        "{:>7}  {:>13}  {:>16}  {:>9}  {:<20}  new",
        "clients", "unique states", "states generated", "time (s)", "search"
    );
    let _ = stdout.flush();
    let mut rows: Vec<Row> = Vec::new();
    let mut seen_verdicts: Vec<(&'static str, Verdict)> = Vec::new();
    let mut seen_signatures: Vec<String> = Vec::new();
    let mut skipped = None;
    for clients in counts.clone() {
        let mut one = args.model.clone();
        one.clients = Some(Clients::One(clients));
        let with_initial = one.resolve(harness).and_then(|(_, mut setup)| {
            setup.initial = initial.clone();
            super::check_args::check_initial(&model, &setup, &one)?;
            Ok(setup)
        });
        let setup = match with_initial {
            Ok(setup) => setup,
            Err(error) => {
                eprintln!("error: {error}");
                return ExitCode::from(2);
            }
        };
        let report = model.check(&setup, &options);
        let signatures: Vec<Vec<String>> = report
            .properties
            .iter()
            .map(|p| match p.verdict {
                Verdict::Violated => replay_signatures(&model, &report, p.name, &initial),
                _ => Vec::new(),
            })
            .collect();
        let mut new = Vec::new();
        for property in &report.properties {
            let verdict = (property.name, property.verdict);
            // Within bounds, no counterexample or example is no answer.
            let inconclusive = !report.exhaustive
                && matches!(property.verdict, Verdict::Holds | Verdict::NotFound);
            if !inconclusive && !seen_verdicts.contains(&verdict) {
                seen_verdicts.push(verdict);
                let word = verdict_word(&report, property.verdict);
                new.push(format!("{} {word}", property.name));
            }
        }
        for signature in signatures.iter().flatten() {
            if !seen_signatures.contains(signature) {
                seen_signatures.push(signature.clone());
                new.push(signature.clone());
            }
        }
        // Cut short by the timeout or the memory budget.
        let timed_out = !report.exhaustive
            && !matches!(options.strategy, Strategy::Simulation { .. })
            && report.stop.is_some();
        let row = Row {
            report,
            signatures,
            new,
            timed_out,
        };
        let _ = write!(stdout, "{}", render_row(&row, rows.is_empty()));
        let _ = stdout.flush();
        rows.push(row);
        if timed_out && clients < last {
            skipped = Some((clients + 1, last));
            break;
        }
    }
    counterexamples(&mut stdout, harness, &args, &rows, &initial);
    let _ = writeln!(stdout, "\n{}", closing(&rows, skipped));
    let failed = rows.iter().any(|row| !row.report.violations().is_empty());
    // A count whose exhaustive search found no example could not have failed.
    let vacuous: Vec<String> = rows.iter().filter_map(|row| row.report.vacuous()).collect();
    if !failed {
        for why in &vacuous {
            eprintln!("error: {why}");
        }
    }
    // The closing line names the counts that were not exhaustive.
    let bounded = skipped.is_some() || rows.iter().any(|row| !row.report.exhaustive);
    verdict_status(failed, !vacuous.is_empty(), bounded)
}

fn header(args: &CheckArgs, first: usize, last: usize) -> String {
    let model = &args.model;
    let mut out = format!(
        "empirical cutoff of {}/{}: {first}..{last} clients",
        model.recipe,
        model.variant()
    );
    if model.cycles != 1 {
        out += &format!(" x {} cycles", model.cycles);
    }
    if model.servers != 1 {
        out += &format!(", {} servers (lag <= {})", model.servers, model.lag());
        if model.unrevalidated_reconnects {
            out += ", unrevalidated reconnects";
        }
    }
    out += &format!(
        ", faults {}, {} with {} thread(s)",
        model.faults,
        format!("{:?}", args.strategy).to_lowercase(),
        args.threads
    );
    let switches = [
        (model.symmetry, "symmetry"),
        (model.ranks, "ranks"),
        (model.all_orders, "all orders"),
        (model.no_reduction, "no reduction"),
    ];
    for (_, name) in switches.iter().filter(|(on, _)| *on) {
        out += &format!(", {name}");
    }
    if let Some(depth) = args.depth {
        out += &format!(", depth <= {depth}");
    }
    if let Some(timeout) = args.timeout {
        out += &format!(", timeout {timeout} s per count");
    }
    out
}

/// The diagnosis of a violated property's counterexample: the signatures
/// (`property/mechanism`) of the violations the simulator's oracle of the
/// property reports when the schedule is replayed on the stepper (what
/// `check --report` shows), or `property/unexplained` if the replay does
/// not show it. Other oracles' violations on the way are left out.
fn replay_signatures(
    model: &ModelVariant,
    report: &CheckReport,
    property: &str,
    initial: &InitialState,
) -> Vec<String> {
    let unexplained = || vec![format!("{property}/unexplained")];
    let Some(schedule) = report.property(property).and_then(|p| report.schedule(p)) else {
        return Vec::new();
    };
    let schedule = schedule.with_initial_state(initial);
    let Ok(replayed) = model.replay(&schedule) else {
        return unexplained();
    };
    let mut signatures: Vec<String> = replayed
        .violations
        .iter()
        .filter(|v| Some(v.property) == replayed.oracle)
        .map(|v| v.signature())
        .collect();
    signatures.dedup();
    if signatures.is_empty() {
        return unexplained();
    }
    signatures
}

fn verdict_word(report: &CheckReport, verdict: Verdict) -> &'static str {
    match verdict {
        Verdict::Holds if report.exhaustive => "holds",
        Verdict::Holds => "holds within the bounds",
        Verdict::Violated => "VIOLATED",
        Verdict::Found => "example found",
        Verdict::NotFound if report.exhaustive => "NO EXAMPLE",
        Verdict::NotFound => "no example within the bounds",
    }
}

fn search(row: &Row) -> String {
    let report = &row.report;
    if report.exhaustive {
        "exhaustive".to_string()
    } else if row.timed_out {
        match report.stop {
            Some(Stop::Memory(_)) => "MEMORY BUDGET".to_string(),
            _ => "TIMED OUT".to_string(),
        }
    } else if let Strategy::Simulation { .. } = report.options.strategy {
        "random walks".to_string()
    } else {
        match report.options.max_depth {
            Some(depth) => format!("bounded: depth {depth}"),
            None => "not exhaustive".to_string(),
        }
    }
}

/// The row, then one line per verdict: the properties with that verdict,
/// each violated one with its signatures.
fn render_row(row: &Row, first: bool) -> String {
    let report = &row.report;
    let new = match (first, row.new.is_empty()) {
        (true, _) => "first count",
        (false, true) => "no",
        (false, false) => "yes",
    };
    let mut out = format!(
        "{:>7}  {:>13}  {:>16}  {:>9.2}  {:<20}  {new}\n",
        report.clients,
        report.unique_states,
        report.states,
        report.elapsed.as_secs_f64(),
        search(row),
    );
    let order = [
        Verdict::Violated,
        Verdict::NotFound,
        Verdict::Holds,
        Verdict::Found,
    ];
    for verdict in order {
        let names: Vec<String> = report
            .properties
            .iter()
            .zip(&row.signatures)
            .filter(|(p, _)| p.verdict == verdict)
            .map(|(p, sigs)| match sigs.is_empty() {
                true => p.name.to_string(),
                false => format!("{} [{}]", p.name, sigs.join(", ")),
            })
            .collect();
        if !names.is_empty() {
            let word = verdict_word(report, verdict);
            out += &format!("{:9}{word}: {}\n", "", names.join(", "));
        }
    }
    if !first && !row.new.is_empty() {
        out += &format!("{:9}new: {}\n", "", row.new.join(", "));
    }
    out
}

/// Names each property's counterexample (and example, with `--examples`)
/// at the first count it shows one, writes the counterexample's schedule
/// and prints the command that replays it (the replay prints its steps).
fn counterexamples(
    out: &mut impl std::io::Write,
    harness: &Harness,
    args: &CheckArgs,
    rows: &[Row],
    initial: &InitialState,
) {
    let mut shown: Vec<&str> = Vec::new();
    for row in rows {
        let report = &row.report;
        for property in &report.properties {
            let show = property.verdict == Verdict::Violated
                || (args.examples && property.verdict == Verdict::Found);
            let Some(trace) = property.trace.as_ref().filter(|_| show) else {
                continue;
            };
            if shown.contains(&property.name) {
                continue;
            }
            if shown.is_empty() {
                let _ = writeln!(out);
            }
            shown.push(property.name);
            let kind = match property.verdict {
                Verdict::Violated => "counterexample",
                _ => "example",
            };
            let _ = writeln!(
                out,
                "{kind} for {} first at {} client(s): {} steps",
                property.name,
                report.clients,
                trace.len()
            );
            if property.verdict != Verdict::Violated {
                continue;
            }
            match write_schedule(&args.out, report, property.name, initial) {
                Ok(path) => {
                    let path = super::common::quote(&path.display().to_string());
                    let _ = writeln!(out, "  schedule written: {path}");
                    let _ = writeln!(
                        out,
                        "  replay it on the simulator: {} replay {path}",
                        harness.program
                    );
                }
                Err(error) => eprintln!("zkcheck check: cannot write the schedule: {error}"),
            }
        }
    }
}

fn write_schedule(
    dir: &Path,
    report: &CheckReport,
    property: &str,
    initial: &InitialState,
) -> Result<PathBuf, WriteError> {
    let schedule = violated_schedule(report, property).with_initial_state(initial);
    let suffix = format!("-{}clients", report.clients);
    write_schedule_file(dir, &schedule, &suffix)
}

/// Where adding a client stopped changing the answer.
fn closing(rows: &[Row], skipped: Option<(usize, usize)>) -> String {
    let (Some(first), Some(last)) = (rows.first(), rows.last()) else {
        return "nothing was checked".to_string();
    };
    let last_count = last.report.clients;
    let changed_at = rows
        .iter()
        .enumerate()
        .rfind(|(index, row)| *index == 0 || !row.new.is_empty())
        .map(|(_, row)| row.report.clients)
        .unwrap_or(first.report.clients);
    let mut out = if rows.len() == 1 {
        format!("one count checked ({last_count} client(s)): nothing to compare it with")
    } else if changed_at < last_count {
        format!(
            "no new verdict or diagnosis after {changed_at} client(s) (checked up to {last_count})"
        )
    } else {
        format!(
            "the last count, {last_count} clients, still changed the answer: no cutoff up to {last_count}"
        )
    };
    let bounded: Vec<String> = rows
        .iter()
        .filter(|row| !row.report.exhaustive)
        .map(|row| row.report.clients.to_string())
        .collect();
    if !bounded.is_empty() {
        out += &format!(
            "; not exhaustive at {} client(s): the claim holds only within the bounds searched",
            bounded.join(", ")
        );
    }
    if let Some((from, to)) = skipped {
        let range = if from == to {
            format!("{from}")
        } else {
            format!("{from}..{to}")
        };
        out += &format!(
            "; skipped {range} client(s): {last_count} clients {}, a larger count would not finish either",
            match last.report.stop {
                Some(Stop::Memory(_)) => "reached the memory budget",
                _ => "timed out",
            }
        );
    }
    out
}
