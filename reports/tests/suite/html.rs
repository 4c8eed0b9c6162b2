//! The HTML page: self-contained (no script, no URL), every piece of the
//! report's text escaped, and the SVG pictures present with their ids and
//! classes; the sequence diagram cuts long traces.

use crate::common;

use zk_reports::html;

/// The elements the page may contain; anything else (a `<script>` or an
/// `<img>` smuggled in through the report's text) fails.
const ALLOWED: &[&str] = &[
    "html",
    "head",
    "meta",
    "title",
    "style",
    "body",
    "header",
    "h1",
    "h2",
    "h3",
    "p",
    "pre",
    "code",
    "nav",
    "ul",
    "li",
    "a",
    "main",
    "section",
    "span",
    "b",
    "br",
    "div",
    "details",
    "summary",
    "figure",
    "figcaption",
    "table",
    "thead",
    "tbody",
    "tr",
    "th",
    "td",
    "footer",
    "svg",
    "defs",
    "marker",
    "pattern",
    "path",
    "line",
    "polyline",
    "rect",
    "circle",
    "text",
    "g",
];

fn tag_names(html: &str) -> Vec<String> {
    let mut names = Vec::new();
    let mut rest = html;
    while let Some(at) = rest.find('<') {
        rest = &rest[at + 1..];
        let rest_name = rest.strip_prefix('/').unwrap_or(rest);
        if rest_name.starts_with("!DOCTYPE") {
            continue;
        }
        let name: String = rest_name
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric())
            .collect();
        names.push(name);
    }
    names
}

fn self_contained(name: &str, page: &str) {
    let lower = page.to_lowercase();
    assert!(!lower.contains("<script"), "{name}: a script");
    assert!(!lower.contains("http"), "{name}: a URL");
    assert!(!lower.contains("src="), "{name}: a source attribute");
    assert!(!lower.contains("<link"), "{name}: a link element");
    assert!(!lower.contains("@import"), "{name}: a style import");
    for (at, _) in lower.match_indices("url(") {
        assert!(
            lower[at..].starts_with("url(#"),
            "{name}: url( not to a fragment: {}",
            &page[at..at + 40]
        );
    }
    for tag in tag_names(page) {
        assert!(ALLOWED.contains(&tag.as_str()), "{name}: element <{tag}>");
    }
    assert!(page.starts_with("<!DOCTYPE html>\n<html lang=\"en\">"));
    assert!(page.ends_with("</body>\n</html>\n"));
}

#[test]
fn every_fixture_is_self_contained() {
    for (name, report) in common::all() {
        self_contained(name, &html(&report));
    }
    self_contained("long", &html(&common::long_report()));
}

#[test]
fn the_reports_text_is_escaped() {
    let report = common::hostile_report();
    let page = html(&report);
    self_contained("hostile", &page);
    assert!(!page.contains(common::HOSTILE));
    let escaped =
        "&lt;script&gt;alert(1)&lt;/script&gt; &amp; &quot;quoted&quot; &#39;single&#39; \
                   &lt;/svg&gt;&lt;/pre&gt;]]&gt;";
    // Title, command, a trace line (its label and its <title>), the
    // message, signature, summary, finding, hold and replay all escaped.
    assert!(
        page.matches(escaped).count() >= 10,
        "{}",
        page.matches(escaped).count()
    );
    assert!(page.contains(&format!("<title>title {escaped} — zkcheck report</title>")));
    assert!(page.contains("message &lt;script&gt;"));
    assert!(page.contains("&lt;b&gt;&amp;amp;&lt;/b&gt;"));
    assert!(page.contains("data-signature=\"mutual_exclusion/&lt;x&gt;&amp;&lt;script&gt;"));
    // The coverage's text too: the abstraction, the curve's label (in the
    // table, the chart's legend, data attribute and title), the model and
    // the states listed.
    for what in ["abstraction", "curve", "model", "beyond", "never"] {
        assert!(page.contains(&format!("{what} {escaped}")), "{what}");
    }
    assert!(page.contains(&format!("data-label=\"curve {escaped}\"")));
    assert!(page.contains(&format!("<code>zkcheck replay &#39;{escaped}&#39;</code>")));
}

#[test]
fn a_run_has_its_diagnosis_and_pictures() {
    let page = html(&common::lock_report());
    assert!(page.contains("<h1 id=\"title\">bug 8: a paused holder"));
    assert!(page.contains("<span class=\"generated-by\">zkcheck 0.1.0</span>"));
    assert!(page.contains("<p class=\"diagnosis\"><b>Why:</b> c1 was paused for 3000 ms"));
    let diagnosis = page.find("class=\"diagnosis\"").unwrap();
    let timeline = page
        .find("<svg id=\"timeline-1\" class=\"timeline\"")
        .unwrap();
    let sequence = page
        .find("<svg id=\"sequence-1\" class=\"sequence\"")
        .unwrap();
    assert!(
        diagnosis < timeline && timeline < sequence,
        "words first, then pictures"
    );

    // The timeline: three spans, the stale part of c1's, c2's held at the
    // end, one overlap (c1 and c2) and the violation.
    assert_eq!(page.matches("<rect class=\"hold\"").count(), 3);
    assert_eq!(page.matches("<rect class=\"hold stale\"").count(), 1);
    assert_eq!(page.matches("<rect class=\"held-at-end\"").count(), 1);
    assert!(page.contains(">held at end</text>"));
    assert_eq!(page.matches("<rect class=\"overlap\"").count(), 1);
    assert!(page.contains("two holders at once: c1 and c2 both held from 2300.510ms to 3300.110ms"));
    // One violation marker in each picture.
    assert_eq!(page.matches("class=\"violation-marker\"").count(), 2);
    assert!(
        page.contains(">0ms</text>") && page.contains(">5000ms</text>"),
        "axis ticks"
    );

    // The sequence diagram: a lane per client and the server, every event
    // drawn with its full text as a title.
    for lane in ["c0", "c1", "c2", "server"] {
        assert!(page.contains(&format!("<g class=\"lane\" data-lane=\"{lane}\">")));
    }
    let run = &common::lock_report().runs[0];
    assert_eq!(page.matches("<g class=\"ev ").count(), run.trace.len());
    assert!(page
        .contains("<title>[2300.510ms] c2 outcome: Acquired { token: FencingToken(2) }</title>"));
    assert!(page.contains("<g class=\"ev fault\" data-lane=\"c1\"><title>[300.000ms] c1 fault: pause c1 for 3000 ms</title>"));
    assert!(page.contains("marker-end=\"url(#sequence-1-send)\""));
    assert!(page.contains("marker-end=\"url(#sequence-1-deliver)\""));
    assert!(page.contains("<g class=\"ev phase\""));
    assert!(page.contains("All 66 events of the trace"));
}

#[test]
fn the_violation_line_sits_at_its_time() {
    let page = html(&common::lock_report());
    let sequence = &page[page.find("id=\"sequence-1\"").unwrap()..];
    let marker = sequence.find("class=\"violation-marker\"").unwrap();
    let before = sequence[..marker].rfind("<title>[").unwrap();
    let after = marker + sequence[marker..].find("<g class=\"ev").unwrap();
    assert!(sequence[before..].starts_with("<title>[2300.510ms] c2 outcome"));
    assert!(sequence[after..].contains("[3300.000ms]"));
}

#[test]
fn long_traces_are_cut_around_the_first_violation() {
    let report = common::long_report();
    let page = html(&report);
    // 400 events up to the violation at 3000.5ms (events 2601..3001) and
    // 40 after it.
    assert_eq!(page.matches("<g class=\"ev ").count(), 440);
    assert!(page.contains("Events 2602–3041 of 5000 (2601 earlier and 1959 later events elided)"));
    assert!(page.contains("… 2601 earlier events elided …"));
    assert!(page.contains("… 1959 later events elided …"));
    assert!(page.contains("[2601.000ms] server apply: event number 2601"));
    assert!(!page.contains("event number 2600<"));
    assert!(page.len() < 600_000, "{} bytes", page.len());
}

#[test]
fn a_sweep_has_its_bar_chart() {
    let page = html(&common::sweep_report());
    assert!(page.contains("<svg id=\"sweep-bars\" class=\"bars\""));
    assert_eq!(page.matches("<rect class=\"bar\"").count(), 3);
    assert!(
        page.contains(">37</text>") && page.contains(">12</text>") && page.contains(">3</text>")
    );
    // The first failing seeds in full.
    assert!(page.contains("id=\"sequence-1\"") && page.contains("id=\"sequence-2\""));
    assert!(page.contains("id=\"timeline-1\"") && page.contains("id=\"timeline-2\""));
    let clean = html(&common::clean_sweep_report());
    assert!(!clean.contains("class=\"bars\""));
}

#[test]
fn a_check_has_its_properties_and_steps() {
    let page = html(&common::check_report());
    assert!(page.contains("<table class=\"properties\">"));
    assert!(page.contains("<span class=\"badge fail\">violated</span>"));
    assert_eq!(
        page.matches("<span class=\"badge pass\">holds</span>")
            .count(),
        2
    );
    assert!(page.contains(
        "<pre class=\"steps\">1. c0 calls Lock\n2. c0 sends Create { path: &quot;/locks/x-&quot;"
    ));
    assert!(!page.contains("Not exhaustive"));
    assert!(page.contains("Exhaustive: every reachable state"));
}

#[test]
fn the_catalog_links_each_entrys_page() {
    let page = html(&common::catalog_report());
    for bug in ["bug1", "bug4", "bug8"] {
        assert!(page.contains(&format!("<a href=\"./{bug}.html\">{bug}</a>")));
    }
    assert!(page.contains(
        "caught 37/1000, first seed 17; also liveness/watch-on-deleted-node ×2<br>\
         <code class=\"replay\">zkcheck replay scenarios/bugs/bug8-pause-two-holders.toml --seed 17</code>"
    ));
    assert_eq!(page.matches("<tr class=\"not-ok\">").count(), 1);
}

#[test]
fn rendering_is_deterministic() {
    for (_, report) in common::all() {
        assert_eq!(html(&report), html(&report.clone()));
    }
}

/// A document's numbers do not size what is drawn: a client numbered in
/// the billions is refused on reading (it would size the lanes), and a
/// run with more spans than the timeline draws has only the first drawn,
/// said in its caption (the overlap search among them is quadratic).
#[test]
fn what_a_document_asks_to_draw_is_bounded() {
    use zk_reports::limits::{MAX_CLIENTS, MAX_DRAWN_HOLDS};
    let mut report = common::lock_report();
    report.runs[0].clients = 2_000_000_000;
    let error = zk_reports::from_json(&zk_reports::to_json(&report)).unwrap_err();
    assert!(error.to_string().contains("runs[0].clients"), "{error}");
    // Rendered anyway (a document built in memory): bounded lanes and rows.
    let page = html(&report);
    assert!(page.len() < 8 * 1024 * 1024, "{} bytes", page.len());
    assert!(!page.contains(&format!("data-lane=\"c{MAX_CLIENTS}\"")));

    let mut report = common::lock_report();
    let hold = report.runs[0].holds[0].clone();
    report.runs[0].holds = vec![hold; MAX_DRAWN_HOLDS * 5];
    let page = html(&report);
    assert!(
        page.contains(&format!("(the first {MAX_DRAWN_HOLDS} drawn")),
        "the timeline says it drew only some spans"
    );
    assert_eq!(page.matches("<g class=\"span\"").count(), MAX_DRAWN_HOLDS);
}

/// The section between `<section class="{class}"` and its end.
fn section<'a>(page: &'a str, class: &str) -> &'a str {
    let start = page
        .find(&format!("<section class=\"{class}\""))
        .unwrap_or_else(|| panic!("no {class} section"));
    let end = start + page[start..].find("</section>").unwrap();
    &page[start..end]
}

#[test]
fn a_failing_campaign_fails_with_its_replay() {
    let page = html(&common::fuzz_report());
    assert!(page.contains("<p class=\"meta\">Fuzz campaign report"));
    let fuzz = section(&page, "fuzz");
    assert!(fuzz.contains(
        "<h2>Fuzz campaign on <code>scenarios/lock-original.toml</code>, campaign seed 7 \
         <span class=\"badge fail\">FAILED</span></h2>"
    ));
    assert!(fuzz.contains(
        "<p>Recipe <code>lock</code>, variant <code>original</code>: 734 runs (200 of them the \
         scenario's own seeds), a corpus of 41 tapes.</p>"
    ));
    assert!(fuzz.contains(&format!(
        "First failing run <b>734</b>, its tape <code class=\"tape\">{}</code>.",
        common::FUZZ_TAPE
    )));
    assert!(fuzz.contains(&format!(
        "<pre class=\"replay\"><code>{}</code></pre>",
        common::FUZZ_REPLAY
    )));
    assert!(!fuzz.contains("not a pass") && !fuzz.contains("badge pass"));
    // The subject, then the coverage, then the failing run in full.
    let at = |needle: &str| page.find(needle).unwrap();
    assert!(at("id=\"fuzz\"") < at("id=\"coverage\""));
    assert!(at("id=\"coverage\"") < at("id=\"run-1\""));
    assert!(page.contains("The campaign's first failing run, replayed from its tape."));
    assert!(page.contains("id=\"sequence-1\"") && page.contains("id=\"timeline-1\""));
}

#[test]
fn a_campaign_that_found_nothing_is_not_a_pass() {
    let page = html(&common::clean_fuzz_report());
    let fuzz = section(&page, "fuzz");
    assert!(fuzz.contains("<span class=\"badge unknown\">NOT A PASS</span>"));
    assert!(!fuzz.contains("badge pass") && !fuzz.contains("FAILED"));
    assert!(fuzz.contains(
        "<p class=\"not-a-pass\">No run broke a property: a sample of the world, not a pass \
         (stopped by its time budget).</p>"
    ));
    assert!(fuzz.contains("1500 runs (200 of them the scenario's own seeds)"));
    assert!(!page.contains("class=\"replay\""), "no run, no replay");
    let mut in_budget = common::clean_fuzz_report();
    in_budget.fuzz.as_mut().unwrap().timed_out = false;
    let page = html(&in_budget);
    assert!(page.contains("not a pass.</p>") && !page.contains("time budget"));

    let mut missing = common::clean_fuzz_report();
    missing.fuzz = None;
    assert!(html(&missing).contains("<p class=\"missing\">The report has no fuzz section.</p>"));
}

#[test]
fn coverage_has_a_line_per_curve_and_its_new_states() {
    let page = html(&common::fuzz_report());
    let coverage = section(&page, "coverage");
    assert!(coverage.contains("<h2>Coverage</h2>"));
    assert!(coverage
        .contains("<p>598 abstract states, 2315 steps between them, 143 client features.</p>"));
    assert!(coverage.contains("<b>Abstraction:</b> a state: the tree with sequence numbers"));
    // One chart, a polyline per curve with its own stroke, a legend row
    // each; x in runs, blocks of 100.
    assert_eq!(
        coverage
            .matches("<svg id=\"coverage-curve\" class=\"curve\"")
            .count(),
        1
    );
    assert_eq!(coverage.matches("<polyline class=\"curve\"").count(), 2);
    assert!(coverage.contains("stroke=\"#1565c0\" stroke-width=\"2\" stroke-linejoin"));
    assert!(coverage.contains("stroke=\"#c62828\" stroke-width=\"2\" stroke-linejoin"));
    assert!(coverage.contains(">guided, campaign seed 7: 546 states</text>"));
    assert!(coverage.contains(">seeds 0..734: 377 states</text>"));
    assert!(coverage.contains(">runs (blocks of 100)</text>"));
    // The guided curve ends at 800 runs (the x axis's end) and 546 states
    // (of the y axis's 600).
    assert!(coverage.contains(" 712.0,53.6\" fill=\"none\""));
    assert!(coverage.contains(">600</text>") && coverage.contains(">800</text>"));
    // The table below the chart: a row per curve.
    let table = &coverage[coverage.find("<table class=\"new-states\">").unwrap()..];
    assert!(
        coverage.find("</svg>").unwrap() < coverage.find("<table class=\"new-states\">").unwrap()
    );
    assert!(table.contains(
        "<tr><td>guided, campaign seed 7</td><td class=\"num\">100 runs</td><td class=\"num\">546</td>\
         <td>310, 122, 64, 30, 12, 5, 2, 1</td></tr>"
    ));
    assert!(table.contains(
        "<tr><td>seeds 0..734</td><td class=\"num\">100 runs</td><td class=\"num\">377</td>\
         <td>280, 60, 21, 9, 4, 2, 1, 0</td></tr>"
    ));
    assert!(!coverage.contains("Against the model"));
}

#[test]
fn coverage_against_the_model_has_its_numbers() {
    let page = html(&common::coverage_sweep_report());
    let coverage = section(&page, "coverage");
    // A sweep's blocks count seeds.
    assert!(coverage.contains(">seeds (blocks of 100)</text>"));
    assert_eq!(coverage.matches("<polyline class=\"curve\"").count(), 1);
    assert!(coverage.contains("<h3 id=\"against-model\">Against the model</h3>"));
    assert!(coverage.contains(
        "Model <code>lock/original, 2 clients, 1 cycle, faults connection-loss=1,expiry=1</code>: \
         410 of 512 shared abstract states reached (80.1%), 48213 model states searched."
    ));
    assert!(coverage.contains("Reached by the runs, not by the model: <b>3</b>."));
    assert!(coverage.contains(
        "<tr><td><code>x-0:c0 x-1:c1 | c0 connected, c1 expired</code></td><td class=\"num\">17</td></tr>"
    ));
    assert!(coverage.contains("Never reached: <b>102</b>."));
    assert!(coverage.contains(
        "<td class=\"num\">4</td><td><code>zkcheck replay target/zkcheck/never/n0001.schedule</code></td>"
    ));
    assert!(coverage.contains(
        "<tr><td><code>(empty) | c0 expired, c1 expired</code></td><td class=\"num\">6</td><td>—</td></tr>"
    ));
    // After the sweep, before its runs.
    assert!(page.find("id=\"sweep\"").unwrap() < page.find("id=\"coverage\"").unwrap());
    assert!(page.find("id=\"coverage\"").unwrap() < page.find("id=\"run-1\"").unwrap());
    // No coverage kept, no section.
    assert!(!html(&common::sweep_report()).contains("id=\"coverage\""));
}

#[test]
fn the_new_sections_render_the_same_bytes_after_a_round_trip() {
    for report in [
        common::fuzz_report(),
        common::clean_fuzz_report(),
        common::coverage_sweep_report(),
    ] {
        let read = zk_reports::from_json(&zk_reports::to_json(&report)).unwrap();
        assert_eq!(html(&report), html(&read));
        assert_eq!(html(&report), html(&report));
    }
}
