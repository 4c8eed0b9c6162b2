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
