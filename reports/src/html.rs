//! One self-contained HTML5 page for a report.
//!
//! Inline `<style>` and inline SVG only: no script, no font, image or
//! style sheet from elsewhere, and no URL except relative links between
//! the catalog's pages, so the file opens anywhere and can be attached to
//! a CI run as it is. Every piece of text from the report is escaped.
//!
//! The page has a header (title, command, writer), then the subject: a
//! sweep's bar chart and buckets, a model check's property table and
//! counterexamples, a guided campaign's counts and first failing run, or
//! the catalog's table; then, when the report keeps it, what the runs
//! covered (a chart of the states reached per block, and the comparison
//! with a model); then each run in full: its diagnosis in words, its
//! ownership timeline, its sequence diagram and its holds.

use crate::markdown::{
    block_unit, coverage_counts, fixed_cell, fuzz_counts, model_cell, model_reached,
    new_states_list, simulation_cell, time_budget, NO_FAILURE,
};
use crate::schema::{
    Catalog, CatalogEntry, Check, Coverage, Fuzz, ModelCoverage, PropertyVerdict, Report,
    ReportKind, Run, Sweep, Verdict, Violation,
};
use crate::svg;
use crate::text::{escape_html as esc, lane_name, ms};
use std::fmt::Write;

const STYLE: &str = r#"
:root { --ink: #263238; --muted: #607d8b; --line: #cfd8dc; --red: #c62828; --green: #2e7d32; --amber: #ef6c00; --bg: #fafbfc; }
* { box-sizing: border-box; }
body { margin: 0; padding: 0 24px 48px; font: 15px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: var(--ink); background: var(--bg); }
header { border-bottom: 1px solid var(--line); padding: 16px 0 8px; margin-bottom: 16px; }
h1 { font-size: 26px; margin: 0 0 4px; }
h2 { font-size: 21px; margin: 32px 0 8px; border-bottom: 1px solid var(--line); padding-bottom: 4px; }
h3 { font-size: 17px; margin: 20px 0 6px; }
.meta, .muted { color: var(--muted); }
code, pre { font-family: ui-monospace, Menlo, Consolas, monospace; font-size: 13px; }
pre { background: #eef2f4; border: 1px solid var(--line); border-radius: 4px; padding: 8px 10px; overflow-x: auto; white-space: pre; }
table { border-collapse: collapse; margin: 8px 0 16px; background: white; }
th, td { border: 1px solid var(--line); padding: 4px 8px; text-align: left; vertical-align: top; }
th { background: #eceff1; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
.badge { display: inline-block; padding: 1px 8px; border-radius: 10px; font-size: 13px; font-weight: bold; color: white; vertical-align: middle; }
.badge.pass { background: var(--green); }
.badge.violation, .badge.fail { background: var(--red); }
.badge.error, .badge.unknown { background: var(--amber); }
.violation { border-left: 4px solid var(--red); background: white; padding: 4px 14px 8px; margin: 12px 0; }
.diagnosis { font-size: 16px; }
.findings li { margin-bottom: 6px; }
.mechanism { font-family: ui-monospace, Menlo, Consolas, monospace; font-size: 12px; color: var(--muted); }
figure { margin: 16px 0; }
figcaption { color: var(--muted); font-size: 13px; margin-bottom: 4px; }
.scroll { overflow: auto; max-width: 100%; border: 1px solid var(--line); background: white; }
.scroll.tall { max-height: 900px; }
svg { display: block; }
svg .ev:hover text, svg .span:hover rect, svg .bucket:hover rect { opacity: 0.75; }
a { color: #1565c0; }
footer { margin-top: 40px; color: var(--muted); font-size: 13px; }
"#;

/// The report as one HTML5 page.
pub fn html(report: &Report) -> String {
    let mut out = String::with_capacity(64 * 1024);
    out.push_str("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n");
    out.push_str("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n");
    let _ = writeln!(
        out,
        "<meta name=\"generator\" content=\"{}\">",
        esc(&report.generated_by)
    );
    let _ = writeln!(
        out,
        "<title>{} — zkcheck report</title>",
        esc(&report.title)
    );
    let _ = writeln!(out, "<style>{STYLE}</style>\n</head>\n<body>");

    out.push_str("<header>\n");
    let _ = writeln!(out, "<h1 id=\"title\">{}</h1>", esc(&report.title));
    let _ = writeln!(
        out,
        "<p class=\"meta\">{} report, written by <span class=\"generated-by\">{}</span>, schema version {}.</p>",
        kind_name(report.kind),
        esc(&report.generated_by),
        report.schema_version
    );
    let _ = writeln!(
        out,
        "<pre class=\"command\"><code>{}</code></pre>",
        esc(&report.command)
    );
    if report.runs.len() > 1 {
        out.push_str("<nav><ul>");
        for (index, run) in report.runs.iter().enumerate() {
            let _ = write!(
                out,
                "<li><a href=\"#run-{}\">{}</a> {}</li>",
                index + 1,
                esc(&run_name(index, run)),
                badge(run.verdict)
            );
        }
        out.push_str("</ul></nav>\n");
    }
    out.push_str("</header>\n<main>\n");

    match report.kind {
        ReportKind::Run => {
            if report.runs.is_empty() {
                out.push_str("<p class=\"missing\">The report has no runs.</p>\n");
            }
        }
        ReportKind::Sweep => match &report.sweep {
            Some(sweep) => write_sweep(&mut out, sweep),
            None => out.push_str("<p class=\"missing\">The report has no sweep section.</p>\n"),
        },
        ReportKind::Check => match &report.check {
            Some(check) => write_check(&mut out, check),
            None => out.push_str("<p class=\"missing\">The report has no check section.</p>\n"),
        },
        ReportKind::Catalog => match &report.catalog {
            Some(catalog) => write_catalog(&mut out, catalog),
            None => out.push_str("<p class=\"missing\">The report has no catalog section.</p>\n"),
        },
        ReportKind::Fuzz => match &report.fuzz {
            Some(fuzz) => write_fuzz(&mut out, fuzz),
            None => out.push_str("<p class=\"missing\">The report has no fuzz section.</p>\n"),
        },
    }
    if let Some(coverage) = &report.coverage {
        write_coverage(&mut out, coverage, block_unit(report.kind));
    }
    for (index, run) in report.runs.iter().enumerate() {
        write_run(&mut out, report.kind, index, run);
    }
    out.push_str("</main>\n");
    let _ = writeln!(
        out,
        "<footer>Times are simulated, in milliseconds. Written by {}; the report's data is in its JSON file (schema version {}).</footer>",
        esc(&report.generated_by),
        report.schema_version
    );
    out.push_str("</body>\n</html>\n");
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

fn badge(verdict: Verdict) -> &'static str {
    match verdict {
        Verdict::Pass => "<span class=\"badge pass\">PASS</span>",
        Verdict::Violation => "<span class=\"badge violation\">VIOLATION</span>",
        Verdict::Error => "<span class=\"badge error\">ERROR</span>",
        Verdict::InternalError => "<span class=\"badge error\">INTERNAL ERROR</span>",
    }
}

fn run_name(index: usize, run: &Run) -> String {
    match run.seed {
        Some(seed) => format!("Run {}: {}, seed {seed}", index + 1, run.scenario),
        None => format!("Run {}: {} (replayed schedule)", index + 1, run.scenario),
    }
}

fn write_run(out: &mut String, kind: ReportKind, index: usize, run: &Run) {
    let number = index + 1;
    let _ = writeln!(out, "<section class=\"run\" id=\"run-{number}\">");
    let what = match kind {
        ReportKind::Sweep => "first failing seed of a bucket",
        ReportKind::Check => "a counterexample replayed on the simulator",
        ReportKind::Fuzz => "campaign's first failing run, replayed from its tape",
        _ => "",
    };
    let _ = writeln!(
        out,
        "<h2>{} {}</h2>",
        esc(&run_name(index, run)),
        badge(run.verdict)
    );
    let _ = writeln!(
        out,
        "<p class=\"muted\">{}Recipe <code>{}</code>, variant <code>{}</code>, {} clients; requests: {}, messages: {}, faults: {}, simulated time: {}.</p>",
        if what.is_empty() {
            String::new()
        } else {
            format!("The {what}. ")
        },
        esc(&run.recipe),
        esc(&run.variant),
        run.clients,
        run.stats.requests,
        run.stats.messages,
        run.stats.faults,
        ms(run.stats.sim_time_ns)
    );
    let _ = writeln!(
        out,
        "<p>Replay:</p>\n<pre class=\"replay\"><code>{}</code></pre>",
        esc(&run.replay)
    );
    if run.violations.is_empty() {
        let words = match run.verdict {
            Verdict::Pass => "No property was broken.",
            Verdict::Violation => "The run failed, but the report names no violation.",
            Verdict::Error => "The run did not complete (no progress, or it did not run).",
            Verdict::InternalError => {
                "zkcheck panicked during the run: an internal error of zkcheck, not a property violation of the recipe."
            }
        };
        let _ = writeln!(out, "<p class=\"verdict-words\">{words}</p>");
    }
    for (v, violation) in run.violations.iter().enumerate() {
        write_violation(out, number, v + 1, violation);
    }
    if !run.holds.is_empty() {
        let _ = writeln!(
            out,
            "<figure class=\"timeline-figure\"><figcaption>Who held what when: one row per client; \
             red bands are two holders at once, red lines the violations.</figcaption>\
             <div class=\"scroll\">{}</div></figure>",
            svg::timeline(run, &format!("timeline-{number}"))
        );
    }
    if !run.trace.is_empty() {
        let _ = writeln!(
            out,
            "<figure class=\"sequence-figure\"><figcaption>{}</figcaption><div class=\"scroll tall\">{}</div></figure>",
            esc(&svg::sequence::caption(run)),
            svg::sequence(run, &format!("sequence-{number}"))
        );
    } else {
        out.push_str("<p class=\"muted\">No trace was recorded for this run.</p>\n");
    }
    if !run.holds.is_empty() {
        out.push_str(
            "<h3>Holds</h3>\n<table class=\"holds\"><thead><tr><th>client</th><th>from</th><th>until</th>\
             <th>token</th><th>ended</th><th>session ended</th></tr></thead><tbody>\n",
        );
        for hold in &run.holds {
            let _ = writeln!(
                out,
                "<tr><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td>{}</td><td class=\"num\">{}</td></tr>",
                lane_name(Some(hold.client)),
                ms(hold.from_ns),
                hold.until_ns.map_or("—".to_string(), ms),
                hold.token.map_or("—".to_string(), |t| t.to_string()),
                esc(&hold.ended),
                hold.session_ended_ns.map_or("—".to_string(), ms),
            );
        }
        out.push_str("</tbody></table>\n");
    }
    out.push_str("</section>\n");
}

fn write_violation(out: &mut String, run: usize, number: usize, violation: &Violation) {
    let _ = writeln!(
        out,
        "<div class=\"violation\" id=\"run-{run}-violation-{number}\">\n<h3>Violation {number}: <code class=\"signature\">{}</code></h3>",
        esc(&violation.signature)
    );
    let _ = writeln!(
        out,
        "<p>At <b>{}</b>, property <code>{}</code>: {}</p>",
        ms(violation.at_ns),
        esc(&violation.property),
        esc(&violation.message)
    );
    let diagnosis = &violation.diagnosis;
    let _ = writeln!(
        out,
        "<p class=\"diagnosis\"><b>Why:</b> {} <span class=\"mechanism\">({})</span></p>",
        esc(&diagnosis.summary),
        esc(&diagnosis.mechanism)
    );
    if !diagnosis.findings.is_empty() {
        out.push_str("<ul class=\"findings\">\n");
        for finding in &diagnosis.findings {
            out.push_str("<li>");
            if let Some(client) = finding.client {
                let _ = write!(out, "<b>{}</b> ", lane_name(Some(client)));
            }
            if let Some(path) = &finding.path {
                let _ = write!(out, "<code>{}</code> ", esc(path));
            }
            let _ = write!(
                out,
                "<span class=\"mechanism\">{}</span><br><b>What:</b> {}<br><b>Why:</b> {}",
                esc(&finding.mechanism),
                esc(&finding.what),
                esc(&finding.why)
            );
            if !finding.moments.is_empty() {
                out.push_str("<ul class=\"moments\">");
                for moment in &finding.moments {
                    let _ = write!(out, "<li>{}: {}</li>", ms(moment.at_ns), esc(&moment.what));
                }
                out.push_str("</ul>");
            }
            out.push_str("</li>\n");
        }
        out.push_str("</ul>\n");
    }
    if !violation.events.is_empty() {
        let _ = writeln!(
            out,
            "<details class=\"events\"><summary>The {} events involved</summary><pre>{}</pre></details>",
            violation.events.len(),
            esc(&violation.events.join("\n"))
        );
    }
    out.push_str("</div>\n");
}

fn write_sweep(out: &mut String, sweep: &Sweep) {
    out.push_str("<section class=\"sweep\" id=\"sweep\">\n");
    let _ = writeln!(
        out,
        "<h2>Sweep of <code>{}</code>, seeds {} {}</h2>",
        esc(&sweep.scenario),
        esc(&sweep.seeds),
        if sweep.failed == 0 {
            "<span class=\"badge pass\">PASS</span>"
        } else {
            "<span class=\"badge fail\">FAILED</span>"
        }
    );
    if let Some(why) = &sweep.incomplete {
        let _ = writeln!(
            out,
            "<p class=\"missing\"><strong>INCOMPLETE</strong>: {}</p>",
            esc(why)
        );
    }
    let _ = writeln!(
        out,
        "<p>Recipe <code>{}</code>, variant <code>{}</code>: <b>{}</b> runs, <b>{}</b> passed, <b>{}</b> failed, in {} signatures.</p>",
        esc(&sweep.recipe),
        esc(&sweep.variant),
        sweep.runs,
        sweep.passed,
        sweep.failed,
        sweep.buckets.len()
    );
    if !sweep.buckets.is_empty() {
        let _ = writeln!(
            out,
            "<figure><figcaption>Failing seeds per signature.</figcaption><div class=\"scroll\">{}</div></figure>",
            svg::bars(sweep, "sweep-bars")
        );
        out.push_str(
            "<table class=\"buckets\"><thead><tr><th>signature</th><th>seeds</th><th>first seed</th>\
             <th>summary</th><th>replay</th></tr></thead><tbody>\n",
        );
        for bucket in &sweep.buckets {
            let _ = writeln!(
                out,
                "<tr><td><code>{}</code></td><td class=\"num\">{}</td><td class=\"num\">{}</td><td>{}</td><td><code>{}</code></td></tr>",
                esc(&bucket.signature),
                bucket.seeds,
                bucket.first_seed,
                esc(&bucket.summary),
                esc(&bucket.replay)
            );
        }
        out.push_str("</tbody></table>\n");
    }
    out.push_str("</section>\n");
}

fn write_fuzz(out: &mut String, fuzz: &Fuzz) {
    out.push_str("<section class=\"fuzz\" id=\"fuzz\">\n");
    let _ = writeln!(
        out,
        "<h2>Fuzz campaign on <code>{}</code>, campaign seed {} {}</h2>",
        esc(&fuzz.scenario),
        fuzz.campaign_seed,
        match fuzz.first_failing_run {
            Some(_) => "<span class=\"badge fail\">FAILED</span>",
            None => "<span class=\"badge unknown\">NOT A PASS</span>",
        }
    );
    let _ = writeln!(
        out,
        "<p>Recipe <code>{}</code>, variant <code>{}</code>: {}.</p>",
        esc(&fuzz.recipe),
        esc(&fuzz.variant),
        fuzz_counts(fuzz)
    );
    let Some(run) = fuzz.first_failing_run else {
        let _ = writeln!(
            out,
            "<p class=\"not-a-pass\">{NO_FAILURE}{}.</p>",
            time_budget(fuzz)
        );
        out.push_str("</section>\n");
        return;
    };
    let tape = match &fuzz.tape {
        Some(tape) => format!("its tape <code class=\"tape\">{}</code>", esc(tape)),
        None => "no tape was written".to_string(),
    };
    let _ = writeln!(
        out,
        "<p class=\"first-failing\">First failing run <b>{run}</b>, {tape}{}.</p>",
        time_budget(fuzz)
    );
    match &fuzz.replay {
        Some(replay) => {
            let _ = writeln!(
                out,
                "<p>Replay:</p>\n<pre class=\"replay\"><code>{}</code></pre>",
                esc(replay)
            );
        }
        None => out.push_str("<p class=\"missing\">No replay command was written.</p>\n"),
    }
    out.push_str("</section>\n");
}

fn write_coverage(out: &mut String, coverage: &Coverage, unit: &str) {
    out.push_str("<section class=\"coverage\" id=\"coverage\">\n<h2>Coverage</h2>\n");
    let _ = writeln!(out, "<p>{}.</p>", coverage_counts(coverage));
    let _ = writeln!(
        out,
        "<p class=\"abstraction\"><b>Abstraction:</b> {}</p>",
        esc(&coverage.abstraction)
    );
    if !coverage.curves.is_empty() {
        let _ = writeln!(
            out,
            "<figure class=\"curve-figure\"><figcaption>Abstract states reached so far, after each \
             block of {unit}: one line per curve.</figcaption><div class=\"scroll\">{}</div></figure>",
            svg::curve(&coverage.curves, unit, "coverage-curve")
        );
        write_new_states(out, coverage, unit);
    }
    if let Some(model) = &coverage.against_model {
        write_against_model(out, model);
    }
    out.push_str("</section>\n");
}

/// One row per curve: its label, block, total and new states per block.
fn write_new_states(out: &mut String, coverage: &Coverage, unit: &str) {
    out.push_str(
        "<table class=\"new-states\"><thead><tr><th>curve</th><th>block</th><th>states</th>\
         <th>new states per block</th></tr></thead><tbody>\n",
    );
    for curve in &coverage.curves {
        let _ = writeln!(
            out,
            "<tr><td>{}</td><td class=\"num\">{} {unit}</td><td class=\"num\">{}</td><td>{}</td></tr>",
            esc(&curve.label),
            curve.block,
            curve.states,
            new_states_list(&curve.new_states)
        );
    }
    out.push_str("</tbody></table>\n");
}

fn write_against_model(out: &mut String, model: &ModelCoverage) {
    out.push_str("<h3 id=\"against-model\">Against the model</h3>\n");
    let _ = writeln!(
        out,
        "<p class=\"model-reached\">Model <code>{}</code>: {}.</p>",
        esc(&model.model),
        model_reached(model)
    );
    let _ = writeln!(
        out,
        "<p>Reached by the runs, not by the model: <b>{}</b>.</p>",
        model.beyond_model
    );
    if !model.beyond_model_first.is_empty() {
        out.push_str(
            "<table class=\"beyond-model\"><thead><tr><th>state</th><th>lowest seed</th></tr>\
             </thead><tbody>\n",
        );
        for (state, seed) in &model.beyond_model_first {
            let _ = writeln!(
                out,
                "<tr><td><code>{}</code></td><td class=\"num\">{seed}</td></tr>",
                esc(state)
            );
        }
        out.push_str("</tbody></table>\n");
    }
    let _ = writeln!(out, "<p>Never reached: <b>{}</b>.</p>", model.never_reached);
    if !model.shortest_never_reached.is_empty() {
        out.push_str(
            "<table class=\"never-reached\"><thead><tr><th>state (the shortest never reached)</th>\
             <th>steps</th><th>replay</th></tr></thead><tbody>\n",
        );
        for (state, steps, replay) in &model.shortest_never_reached {
            let _ = writeln!(
                out,
                "<tr><td><code>{}</code></td><td class=\"num\">{steps}</td><td>{}</td></tr>",
                esc(state),
                replay
                    .as_ref()
                    .map_or("—".to_string(), |r| format!("<code>{}</code>", esc(r)))
            );
        }
        out.push_str("</tbody></table>\n");
    }
}

fn property_badge(property: &PropertyVerdict) -> &'static str {
    match property.verdict.as_str() {
        "holds" | "example found" => "pass",
        "violated" | "no example" => "fail",
        _ => "unknown",
    }
}

fn write_check(out: &mut String, check: &Check) {
    out.push_str("<section class=\"check\" id=\"check\">\n");
    let _ = writeln!(
        out,
        "<h2>Model check of <code>{}</code> variant <code>{}</code>, {} clients</h2>",
        esc(&check.recipe),
        esc(&check.variant),
        check.clients
    );
    let _ = writeln!(
        out,
        "<p><b>{}</b> unique states ({} visited), strategy <code>{}</code>, faults <code>{}</code>. {}</p>",
        check.unique_states,
        check.states,
        esc(&check.strategy),
        esc(if check.faults.is_empty() { "none" } else { &check.faults }),
        if check.exhaustive {
            "Exhaustive: every reachable state was visited.".to_string()
        } else {
            format!(
                "<b>Not exhaustive</b>: {}, so “holds” means none found so far.",
                check.stopped_by_text()
            )
        }
    );
    out.push_str(
        "<table class=\"properties\"><thead><tr><th>property</th><th>expectation</th><th>verdict</th>\
         <th>steps</th><th>schedule</th></tr></thead><tbody>\n",
    );
    for property in &check.properties {
        let _ = writeln!(
            out,
            "<tr><td><code>{}</code></td><td>{}</td><td><span class=\"badge {}\">{}</span></td><td class=\"num\">{}</td><td>{}</td></tr>",
            esc(&property.name),
            esc(&property.expectation),
            property_badge(property),
            esc(&property.verdict),
            if property.steps.is_empty() {
                "—".to_string()
            } else {
                property.steps.len().to_string()
            },
            property
                .schedule
                .as_ref()
                .map_or("—".to_string(), |s| format!("<code>{}</code>", esc(s)))
        );
    }
    out.push_str("</tbody></table>\n");
    for (index, property) in check
        .properties
        .iter()
        .enumerate()
        .filter(|(_, p)| !p.steps.is_empty())
    {
        let what = if property.verdict == "violated" {
            "Counterexample"
        } else {
            "Example"
        };
        let _ = writeln!(
            out,
            "<h3 id=\"steps-{}\">{what} for <code>{}</code>: {} steps</h3>\n<pre class=\"steps\">{}</pre>",
            index + 1,
            esc(&property.name),
            property.steps.len(),
            esc(&property.steps.join("\n"))
        );
        if let Some(schedule) = &property.schedule {
            let _ = writeln!(
                out,
                "<p>Written to <code>{}</code> (<code>zkcheck replay</code> runs it).</p>",
                esc(schedule)
            );
        }
    }
    out.push_str("</section>\n");
}

/// A relative link to `name.html` that stays relative whatever `name`
/// holds (`./` first, everything but unreserved characters
/// percent-encoded, so no scheme like `javascript:` can appear).
fn page_link(name: &str) -> String {
    let mut href = String::from("./");
    for byte in name.bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'_' | b'.' | b'~') {
            href.push(byte as char);
        } else {
            let _ = write!(href, "%{byte:02X}");
        }
    }
    href.push_str(".html");
    href
}

/// The simulation cell, with the first seed's replay command.
fn simulation_html(entry: &CatalogEntry) -> String {
    let mut cell = esc(&simulation_cell(entry));
    if let Some(replay) = &entry.simulation.replay {
        let _ = write!(cell, "<br><code class=\"replay\">{}</code>", esc(replay));
    }
    cell
}

fn write_catalog(out: &mut String, catalog: &Catalog) {
    out.push_str("<section class=\"catalog\" id=\"catalog\">\n");
    let ok = catalog.entries.iter().filter(|e| e.ok).count();
    let _ = writeln!(
        out,
        "<h2>Bug catalog: {ok} of {} entries caught and fixed</h2>",
        catalog.entries.len()
    );
    out.push_str(
        "<table class=\"catalog-table\"><thead><tr><th>bug</th><th>recipe</th><th>signature</th>\
         <th>simulation</th><th>model</th><th>fixed</th><th>ok</th></tr></thead><tbody>\n",
    );
    for entry in &catalog.entries {
        let _ = writeln!(
            out,
            "<tr class=\"{}\"><td><a href=\"{}\">{}</a><br><span class=\"muted\">{}</span></td><td><code>{}</code> ({})</td><td><code>{}</code></td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            if entry.ok { "ok" } else { "not-ok" },
            esc(&page_link(&entry.bug)),
            esc(&entry.bug),
            esc(&entry.title),
            esc(&entry.recipe),
            esc(&entry.variant),
            esc(&entry.signature),
            simulation_html(entry),
            esc(&model_cell(entry)),
            esc(&fixed_cell(entry)),
            if entry.ok {
                "<span class=\"badge pass\">✓</span>"
            } else {
                "<span class=\"badge fail\">✗</span>"
            }
        );
    }
    out.push_str("</tbody></table>\n</section>\n");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn page_links_stay_relative() {
        assert_eq!(page_link("bug5a"), "./bug5a.html");
        assert_eq!(
            page_link("javascript:alert(1)//"),
            "./javascript%3Aalert%281%29%2F%2F.html"
        );
    }
}
