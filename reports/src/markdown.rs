//! Markdown for terminals and pull-request comments (GitHub-flavoured:
//! tables and fenced code blocks).
//!
//! A run shows its verdict, the replay command, each violation with its
//! diagnosis, who held what when, and its counts; a sweep its buckets; a
//! model check its property verdicts and counterexamples; a guided
//! campaign its counts and its first failing run's replay (or that it is
//! a sample, not a pass); the catalog one row per known bug. Coverage,
//! when the report keeps it, follows the subject: its counts, one table
//! row per curve and the comparison with a model. Times are simulated, in
//! milliseconds with three decimals. The output depends only on the
//! report.

use crate::schema::{
    Catalog, CatalogEntry, Check, Coverage, Fuzz, ModelCoverage, Report, ReportKind, Run, Sweep,
    Verdict, Violation,
};
use crate::text::{lane_name, ms};
use std::fmt::Write;

/// The report as Markdown.
pub fn markdown(report: &Report) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "# {}", one_line(&report.title));
    out.push('\n');
    let _ = writeln!(
        out,
        "{} report by {}, schema version {}:",
        kind_name(report.kind),
        one_line(&report.generated_by),
        report.schema_version
    );
    out.push('\n');
    fence(&mut out, "sh", &report.command);
    match report.kind {
        ReportKind::Run => {}
        ReportKind::Sweep => match &report.sweep {
            Some(sweep) => write_sweep(&mut out, sweep),
            None => missing(&mut out, "sweep"),
        },
        ReportKind::Check => match &report.check {
            Some(check) => write_check(&mut out, check),
            None => missing(&mut out, "check"),
        },
        ReportKind::Catalog => match &report.catalog {
            Some(catalog) => write_catalog(&mut out, catalog),
            None => missing(&mut out, "catalog"),
        },
        ReportKind::Fuzz => match &report.fuzz {
            Some(fuzz) => write_fuzz(&mut out, fuzz),
            None => missing(&mut out, "fuzz"),
        },
    }
    if let Some(coverage) = &report.coverage {
        write_coverage(&mut out, coverage, block_unit(report.kind));
    }
    if report.kind == ReportKind::Run && report.runs.is_empty() {
        missing(&mut out, "runs");
    }
    for (index, run) in report.runs.iter().enumerate() {
        write_run(&mut out, report.kind, index, run);
    }
    out
}

fn kind_name(kind: ReportKind) -> &'static str {
    match kind {
        ReportKind::Run => "Run",
        ReportKind::Sweep => "Sweep",
        ReportKind::Check => "Model check",
        ReportKind::Catalog => "Catalog",
        ReportKind::Fuzz => "Fuzz campaign",
    }
}

fn missing(out: &mut String, what: &str) {
    let _ = writeln!(out, "_The report has no `{what}` section._");
    out.push('\n');
}

fn verdict_word(verdict: Verdict) -> &'static str {
    match verdict {
        Verdict::Pass => "✅ PASS",
        Verdict::Violation => "❌ VIOLATION",
        Verdict::Error => "⚠️ ERROR",
        Verdict::InternalError => "⚠️ INTERNAL ERROR of zkcheck",
    }
}

fn write_run(out: &mut String, kind: ReportKind, index: usize, run: &Run) {
    let seed = match run.seed {
        Some(seed) => format!("seed {seed}"),
        None => "replayed schedule".to_string(),
    };
    let heading = match kind {
        ReportKind::Run => "##",
        _ => "###",
    };
    let what = match kind {
        ReportKind::Sweep => "First failing seed",
        ReportKind::Check => "Counterexample replayed",
        ReportKind::Fuzz => "Failing run",
        _ => "Run",
    };
    let _ = writeln!(
        out,
        "{heading} {what} {}: `{}`, {seed}",
        index + 1,
        code_text(&run.scenario)
    );
    out.push('\n');
    let _ = writeln!(
        out,
        "**{}** — recipe `{}`, variant `{}`, {} clients.",
        verdict_word(run.verdict),
        code_text(&run.recipe),
        code_text(&run.variant),
        run.clients
    );
    out.push('\n');
    out.push_str("Replay:\n\n");
    fence(out, "sh", &run.replay);
    let sub = format!("{heading}#");
    for (number, violation) in run.violations.iter().enumerate() {
        write_violation(out, &sub, number + 1, violation);
    }
    if !run.holds.is_empty() {
        let _ = writeln!(out, "{sub} Ownership");
        out.push('\n');
        out.push_str("| client | from | until | token | ended |\n");
        out.push_str("|---|---:|---:|---:|---|\n");
        for hold in &run.holds {
            let until = match hold.until_ns {
                Some(until) => ms(until),
                None => format!("({} end)", ms(run.stats.sim_time_ns)),
            };
            let token = hold.token.map_or("—".to_string(), |t| t.to_string());
            let ended = match hold.session_ended_ns {
                Some(at) => format!("{} (session ended at {})", hold.ended, ms(at)),
                None => hold.ended.clone(),
            };
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | {} |",
                lane_name(Some(hold.client)),
                ms(hold.from_ns),
                until,
                token,
                cell(&ended)
            );
        }
        out.push('\n');
    }
    let _ = writeln!(
        out,
        "Faults: {}. Requests: {}, messages: {}, simulated time: {}, trace: {} events.",
        run.stats.faults,
        run.stats.requests,
        run.stats.messages,
        ms(run.stats.sim_time_ns),
        run.trace.len()
    );
    out.push('\n');
}

fn write_violation(out: &mut String, heading: &str, number: usize, violation: &Violation) {
    let _ = writeln!(
        out,
        "{heading} Violation {number}: `{}`",
        code_text(&violation.signature)
    );
    out.push('\n');
    let _ = writeln!(
        out,
        "At {}, property `{}`: {}",
        ms(violation.at_ns),
        code_text(&violation.property),
        one_line(&violation.message)
    );
    out.push('\n');
    let diagnosis = &violation.diagnosis;
    let _ = writeln!(
        out,
        "**Diagnosis** (`{}`): {}",
        code_text(&diagnosis.mechanism),
        one_line(&diagnosis.summary)
    );
    out.push('\n');
    for finding in &diagnosis.findings {
        let mut who = Vec::new();
        if let Some(client) = finding.client {
            who.push(format!("**{}**", lane_name(Some(client))));
        }
        if let Some(path) = &finding.path {
            who.push(format!("`{}`", code_text(path)));
        }
        if who.is_empty() {
            who.push("**—**".to_string());
        }
        let _ = writeln!(
            out,
            "- {} (`{}`)",
            who.join(" "),
            code_text(&finding.mechanism)
        );
        let _ = writeln!(out, "  - what: {}", one_line(&finding.what));
        let _ = writeln!(out, "  - why: {}", one_line(&finding.why));
        for moment in &finding.moments {
            let _ = writeln!(
                out,
                "  - at {}: {}",
                ms(moment.at_ns),
                one_line(&moment.what)
            );
        }
    }
    if !diagnosis.findings.is_empty() {
        out.push('\n');
    }
    if !violation.events.is_empty() {
        out.push_str("Events:\n\n");
        fence(out, "text", &violation.events.join("\n"));
    }
}

fn write_sweep(out: &mut String, sweep: &Sweep) {
    let _ = writeln!(
        out,
        "## Sweep: `{}`, seeds {}",
        code_text(&sweep.scenario),
        one_line(&sweep.seeds)
    );
    out.push('\n');
    let verdict = if sweep.failed == 0 {
        "✅ every seed passed"
    } else {
        "❌ seeds failed"
    };
    let _ = writeln!(
        out,
        "**{verdict}** — recipe `{}`, variant `{}`: {} runs, {} passed, {} failed, {} signatures.",
        code_text(&sweep.recipe),
        code_text(&sweep.variant),
        sweep.runs,
        sweep.passed,
        sweep.failed,
        sweep.buckets.len()
    );
    out.push('\n');
    if let Some(why) = &sweep.incomplete {
        let _ = writeln!(out, "**⚠ INCOMPLETE**: {}", one_line(why));
        out.push('\n');
    }
    if sweep.buckets.is_empty() {
        return;
    }
    out.push_str("| signature | seeds | first seed | summary | replay |\n");
    out.push_str("|---|---:|---:|---|---|\n");
    for bucket in &sweep.buckets {
        let _ = writeln!(
            out,
            "| `{}` | {} | {} | {} | `{}` |",
            code_cell(&bucket.signature),
            bucket.seeds,
            bucket.first_seed,
            cell(&bucket.summary),
            code_cell(&bucket.replay)
        );
    }
    out.push('\n');
    if let Some(kept) = sweep.kept_seeds_per_bucket {
        let _ = writeln!(
            out,
            "First failing seeds of each bucket (at most {kept} kept; the rest are counted):"
        );
        out.push('\n');
        for bucket in &sweep.buckets {
            let seeds: Vec<String> = bucket.first_seeds.iter().map(u64::to_string).collect();
            let _ = writeln!(
                out,
                "- `{}`: {}",
                code_text(&bucket.signature),
                seeds.join(", ")
            );
        }
        out.push('\n');
    }
}

fn write_fuzz(out: &mut String, fuzz: &Fuzz) {
    let _ = writeln!(
        out,
        "## Fuzz campaign: `{}`, campaign seed {}",
        code_text(&fuzz.scenario),
        fuzz.campaign_seed
    );
    out.push('\n');
    let verdict = match fuzz.first_failing_run {
        Some(run) => format!("❌ FAILED at run {run}"),
        None => "⚠️ NOT A PASS".to_string(),
    };
    let _ = writeln!(
        out,
        "**{verdict}** — recipe `{}`, variant `{}`: {}.",
        code_text(&fuzz.recipe),
        code_text(&fuzz.variant),
        fuzz_counts(fuzz)
    );
    out.push('\n');
    let Some(run) = fuzz.first_failing_run else {
        let _ = writeln!(out, "{NO_FAILURE}{}.", time_budget(fuzz));
        out.push('\n');
        return;
    };
    let tape = match &fuzz.tape {
        Some(tape) => format!("its tape `{}`", code_text(tape)),
        None => "no tape was written".to_string(),
    };
    let _ = writeln!(out, "First failing run {run}, {tape}{}.", time_budget(fuzz));
    out.push('\n');
    match &fuzz.replay {
        Some(replay) => {
            out.push_str("Replay:\n\n");
            fence(out, "sh", replay);
        }
        None => out.push_str("_No replay command was written._\n\n"),
    }
}

fn write_coverage(out: &mut String, coverage: &Coverage, unit: &str) {
    out.push_str("## Coverage\n\n");
    let _ = writeln!(out, "{}.", coverage_counts(coverage));
    out.push('\n');
    let _ = writeln!(out, "**Abstraction**: {}", one_line(&coverage.abstraction));
    out.push('\n');
    if !coverage.curves.is_empty() {
        out.push_str("| curve | block | states | new states per block |\n");
        out.push_str("|---|---:|---:|---|\n");
        for curve in &coverage.curves {
            let _ = writeln!(
                out,
                "| {} | {} {unit} | {} | {} |",
                cell(&curve.label),
                curve.block,
                curve.states,
                new_states_list(&curve.new_states)
            );
        }
        out.push('\n');
    }
    if let Some(model) = &coverage.against_model {
        write_against_model(out, model);
    }
}

fn write_against_model(out: &mut String, model: &ModelCoverage) {
    out.push_str("### Against the model\n\n");
    let _ = writeln!(
        out,
        "Model `{}`: {}.",
        code_text(&model.model),
        model_reached(model)
    );
    out.push('\n');
    let _ = writeln!(
        out,
        "Reached by the runs, not by the model: {}.",
        model.beyond_model
    );
    out.push('\n');
    if !model.beyond_model_first.is_empty() {
        out.push_str("| state | lowest seed |\n|---|---:|\n");
        for (state, seed) in &model.beyond_model_first {
            let _ = writeln!(out, "| `{}` | {seed} |", code_cell(state));
        }
        out.push('\n');
    }
    let _ = writeln!(out, "Never reached: {}.", model.never_reached);
    out.push('\n');
    if !model.shortest_never_reached.is_empty() {
        out.push_str("The shortest never reached:\n\n");
        out.push_str("| state | steps | replay |\n|---|---:|---|\n");
        for (state, steps, replay) in &model.shortest_never_reached {
            let replay = match replay {
                Some(replay) => format!("`{}`", code_cell(replay)),
                None => "—".to_string(),
            };
            let _ = writeln!(out, "| `{}` | {steps} | {replay} |", code_cell(state));
        }
        out.push('\n');
    }
}

/// What a coverage curve's block counts: a sweep's seeds, else runs.
pub(crate) fn block_unit(kind: ReportKind) -> &'static str {
    match kind {
        ReportKind::Sweep => "seeds",
        _ => "runs",
    }
}

/// A campaign without a failing run, in words.
pub(crate) const NO_FAILURE: &str = "No run broke a property: a sample of the world, not a pass";

/// ` (stopped by its time budget)` when the campaign was.
pub(crate) fn time_budget(fuzz: &Fuzz) -> &'static str {
    if fuzz.timed_out {
        " (stopped by its time budget)"
    } else {
        ""
    }
}

/// `1200 runs (200 of them the scenario's own seeds), a corpus of 37 tapes`.
pub(crate) fn fuzz_counts(fuzz: &Fuzz) -> String {
    format!(
        "{} runs ({} of them the scenario's own seeds), a corpus of {} tapes",
        fuzz.runs, fuzz.seed_runs, fuzz.corpus
    )
}

/// `812 abstract states, 2301 steps between them, 96 client features`.
pub(crate) fn coverage_counts(coverage: &Coverage) -> String {
    format!(
        "{} abstract states, {} steps between them, {} client features",
        coverage.states, coverage.transitions, coverage.features
    )
}

/// `300, 212, 0`: a curve's new states per block.
pub(crate) fn new_states_list(new_states: &[u64]) -> String {
    let news: Vec<String> = new_states.iter().map(u64::to_string).collect();
    news.join(", ")
}

/// `410 of 512 shared abstract states reached (80.1%), 48213 model states
/// searched`.
pub(crate) fn model_reached(model: &ModelCoverage) -> String {
    let percent = if model.reachable == 0 {
        "none to reach".to_string()
    } else {
        format!(
            "{:.1}%",
            model.covered as f64 * 100.0 / model.reachable as f64
        )
    };
    format!(
        "{} of {} shared abstract states reached ({percent}), {} model states searched",
        model.covered, model.reachable, model.model_states
    )
}

fn write_check(out: &mut String, check: &Check) {
    let _ = writeln!(
        out,
        "## Model check: `{}` variant `{}`, {} clients",
        code_text(&check.recipe),
        code_text(&check.variant),
        check.clients
    );
    out.push('\n');
    let exhaustive = if check.exhaustive {
        "exhaustive: every reachable state was visited".to_string()
    } else {
        format!(
            "**not exhaustive**: {}, so `holds` means none found so far",
            check.stopped_by_text()
        )
    };
    let faults = if check.faults.is_empty() {
        "none"
    } else {
        check.faults.as_str()
    };
    let _ = writeln!(
        out,
        "{} unique states ({} visited), strategy `{}`, faults `{}`; {exhaustive}.",
        check.unique_states,
        check.states,
        code_text(&check.strategy),
        code_text(faults)
    );
    out.push('\n');
    out.push_str("| property | expectation | verdict | steps | schedule |\n");
    out.push_str("|---|---|---|---:|---|\n");
    for property in &check.properties {
        let mark = match property.verdict.as_str() {
            "holds" | "example found" => "✅ ",
            "violated" | "no example" => "❌ ",
            _ => "",
        };
        let steps = if property.steps.is_empty() {
            "—".to_string()
        } else {
            property.steps.len().to_string()
        };
        let schedule = match &property.schedule {
            Some(schedule) => format!("`{}`", code_cell(schedule)),
            None => "—".to_string(),
        };
        let _ = writeln!(
            out,
            "| `{}` | {} | {mark}{} | {steps} | {schedule} |",
            code_cell(&property.name),
            cell(&property.expectation),
            cell(&property.verdict),
        );
    }
    out.push('\n');
    for property in check.properties.iter().filter(|p| !p.steps.is_empty()) {
        let what = if property.verdict == "violated" {
            "Counterexample"
        } else {
            "Example"
        };
        let _ = writeln!(
            out,
            "### {what} for `{}` ({} steps)",
            code_text(&property.name),
            property.steps.len()
        );
        out.push('\n');
        fence(out, "text", &property.steps.join("\n"));
        if let Some(schedule) = &property.schedule {
            let _ = writeln!(out, "Schedule: `{}`", code_text(schedule));
            out.push('\n');
        }
    }
}

fn write_catalog(out: &mut String, catalog: &Catalog) {
    let ok = catalog.entries.iter().filter(|e| e.ok).count();
    let _ = writeln!(
        out,
        "## Bug catalog: {ok} of {} entries caught and fixed",
        catalog.entries.len()
    );
    out.push('\n');
    out.push_str(
        "| bug | recipe | signature | simulation | model | fixed | ok |\n\
         |---|---|---|---|---|---|:-:|\n",
    );
    for entry in &catalog.entries {
        let _ = writeln!(
            out,
            "| **{}** {} | `{}` ({}) | `{}` | {} | {} | {} | {} |",
            cell(&entry.bug),
            cell(&entry.title),
            code_cell(&entry.recipe),
            cell(&entry.variant),
            code_cell(&entry.signature),
            cell(&simulation_cell(entry)),
            cell(&model_cell(entry)),
            cell(&fixed_cell(entry)),
            if entry.ok { "✓" } else { "✗" }
        );
    }
    out.push('\n');
    for entry in catalog.entries.iter() {
        if let Some(replay) = &entry.simulation.replay {
            let _ = writeln!(out, "- {}: `{}`", one_line(&entry.bug), code_text(replay));
        }
    }
    if catalog
        .entries
        .iter()
        .any(|e| e.simulation.replay.is_some())
    {
        out.push('\n');
    }
}

/// `caught 12/1000, first seed 17` plus other signatures seen.
pub(crate) fn simulation_cell(entry: &CatalogEntry) -> String {
    let sim = &entry.simulation;
    let mut text = format!("caught {}/{}", sim.seeds_caught, sim.seeds_run);
    if let Some(first) = sim.first_seed {
        let _ = write!(text, ", first seed {first}");
    }
    if !sim.other_signatures.is_empty() {
        let others: Vec<String> = sim
            .other_signatures
            .iter()
            .map(|(signature, seeds)| format!("{signature} ×{seeds}"))
            .collect();
        let _ = write!(text, "; also {}", others.join(", "));
    }
    text
}

/// `7 steps, 1234 states` or `not found, 1234 states` or `—`.
pub(crate) fn model_cell(entry: &CatalogEntry) -> String {
    match &entry.model {
        None => "—".to_string(),
        Some(model) => {
            let steps = match model.steps {
                Some(steps) => format!("{steps} steps"),
                None => "not found".to_string(),
            };
            let mut text = format!(
                "{}: {steps}, {} states",
                model.property, model.unique_states
            );
            if !model.replayed_signatures.is_empty() {
                let _ = write!(text, "; shows {}", model.replayed_signatures.join(", "));
            }
            text
        }
    }
}

/// `fixed: 0/1000 seeds failed; model 5678 states, holds`.
pub(crate) fn fixed_cell(entry: &CatalogEntry) -> String {
    let fixed = &entry.fixed;
    let mut text = format!(
        "{}: {}/{} seeds failed",
        fixed.variant, fixed.seeds_failed, fixed.seeds_run
    );
    if let Some(states) = fixed.model_states {
        let holds = match fixed.model_holds {
            Some(true) => ", holds",
            Some(false) => ", violated",
            None => "",
        };
        let _ = write!(text, "; model {states} states{holds}");
    }
    text
}

/// A table cell of user text: [`one_line`], `|` escaped.
fn cell(text: &str) -> String {
    one_line(text).replace('|', "\\|")
}

/// A table cell shown as code: [`code_text`], `|` escaped (GitHub reads
/// `\|` as a pipe inside a code span in a table too).
fn code_cell(text: &str) -> String {
    code_text(text).replace('|', "\\|")
}

/// User text (a name, a message, a diagnosis) as Markdown text on one
/// line: newlines would end a list item or a table row, and nothing in it
/// may act as Markdown's HTML: `<` and `&` become entities (an unclosed
/// `<!--` in a scenario's name would hide the rest of a pull-request
/// comment; a tag, an autolink or an entity would render; `>` alone opens
/// nothing in running text, so the diagnoses' `->` stay readable in a
/// terminal), and `\` `` ` `` `[` `]` are backslash-escaped (no code span
/// swallowing what follows, no link or image pointing elsewhere).
fn one_line(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + text.len() / 8);
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\r' if chars.peek() == Some(&'\n') => {}
            '\n' | '\r' => out.push(' '),
            '<' => out.push_str("&lt;"),
            '&' => out.push_str("&amp;"),
            '\\' | '`' | '[' | ']' => {
                out.push('\\');
                out.push(c);
            }
            c => out.push(c),
        }
    }
    out
}

/// Text for inside single backticks: one line, a backtick replaced by a
/// similar-looking character (a code span cannot hold its own delimiter
/// simply). Markdown renders nothing inside a code span, so nothing else
/// needs escaping.
fn code_text(text: &str) -> String {
    text.replace("\r\n", " ")
        .replace(['\n', '\r'], " ")
        .replace('`', "ˋ")
}

/// A fenced code block longer than any run of backticks in `body`.
fn fence(out: &mut String, lang: &str, body: &str) {
    let mut longest = 0;
    let mut run = 0;
    for c in body.chars() {
        if c == '`' {
            run += 1;
            longest = longest.max(run);
        } else {
            run = 0;
        }
    }
    let ticks = "`".repeat(longest.max(2) + 1);
    let _ = writeln!(out, "{ticks}{lang}");
    out.push_str(body);
    if !body.ends_with('\n') {
        out.push('\n');
    }
    let _ = writeln!(out, "{ticks}");
    out.push('\n');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fences_outgrow_backticks() {
        let mut out = String::new();
        fence(&mut out, "text", "a ``` b");
        assert!(out.starts_with("````text\n"));
        assert!(out.ends_with("\n````\n\n"));
    }

    #[test]
    fn cells_escape_pipes() {
        assert_eq!(cell("a|b\nc"), "a\\|b c");
        assert_eq!(code_cell("a|b`"), "a\\|bˋ");
    }

    #[test]
    fn user_text_renders_no_html() {
        assert_eq!(
            one_line("<!-- a & b -->\r\n[x](y) `z` \\"),
            "&lt;!-- a &amp; b --> \\[x\\](y) \\`z\\` \\\\"
        );
    }
}
