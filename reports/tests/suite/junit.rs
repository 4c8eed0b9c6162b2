//! JUnit XML: well-formed (checked by a small XML reader below, no XML
//! crate), the counts in the attributes match the testcases, and text from
//! the report is escaped.

use crate::common;

use zk_reports::junit;

/// One element of a parsed document.
#[derive(Debug, Default)]
struct Element {
    name: String,
    attrs: Vec<(String, String)>,
    children: Vec<Element>,
    text: String,
}

impl Element {
    fn attr(&self, name: &str) -> &str {
        self.attrs
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
            .unwrap_or_else(|| panic!("<{}> has no attribute {name}", self.name))
    }

    fn all<'a>(&'a self, name: &str, found: &mut Vec<&'a Element>) {
        if self.name == name {
            found.push(self);
        }
        for child in &self.children {
            child.all(name, found);
        }
    }

    fn find_all(&self, name: &str) -> Vec<&Element> {
        let mut found = Vec::new();
        self.all(name, &mut found);
        found
    }
}

/// Resolves the five predefined entities and character references,
/// refusing a bare `&` or `<`.
fn unescape(text: &str) -> String {
    assert!(
        !text.contains('<'),
        "a raw < in text or attribute: {text:?}"
    );
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find('&') {
        out.push_str(&rest[..at]);
        let end = rest[at..]
            .find(';')
            .unwrap_or_else(|| panic!("a bare & in {text:?}"));
        let entity = &rest[at + 1..at + end];
        match entity {
            "amp" => out.push('&'),
            "lt" => out.push('<'),
            "gt" => out.push('>'),
            "quot" => out.push('"'),
            "apos" => out.push('\''),
            e if e.starts_with("#x") => {
                out.push(char::from_u32(u32::from_str_radix(&e[2..], 16).unwrap()).unwrap())
            }
            e if e.starts_with('#') => out.push(char::from_u32(e[1..].parse().unwrap()).unwrap()),
            e => panic!("unknown entity &{e}; in {text:?}"),
        }
        rest = &rest[at + end + 1..];
    }
    out.push_str(rest);
    out
}

/// A minimal XML reader: a prolog, elements with quoted attributes, text.
/// Panics on anything not well-formed (unbalanced or crossed tags,
/// unquoted attributes, bare `&`, `<` in text, characters XML forbids).
fn parse(xml: &str) -> Element {
    for c in xml.chars() {
        assert!(
            c >= ' ' || matches!(c, '\t' | '\n' | '\r'),
            "character {c:?} is not allowed in XML"
        );
    }
    let mut rest = xml
        .strip_prefix("<?xml version=\"1.0\" encoding=\"UTF-8\"?>")
        .expect("an XML declaration first");
    let mut stack = vec![Element {
        name: "#document".to_string(),
        ..Element::default()
    }];
    while !rest.is_empty() {
        let lt = rest.find('<').unwrap_or(rest.len());
        let text = unescape(&rest[..lt]);
        stack.last_mut().unwrap().text.push_str(&text);
        rest = &rest[lt..];
        if rest.is_empty() {
            break;
        }
        let gt = rest.find('>').expect("a tag ends");
        let tag = &rest[1..gt];
        rest = &rest[gt + 1..];
        if let Some(name) = tag.strip_prefix('/') {
            let element = stack.pop().unwrap();
            assert_eq!(element.name, name, "closing tag does not match");
            stack.last_mut().unwrap().children.push(element);
            continue;
        }
        let (tag, empty) = match tag.strip_suffix('/') {
            Some(tag) => (tag, true),
            None => (tag, false),
        };
        let mut parts = tag.splitn(2, char::is_whitespace);
        let name = parts.next().unwrap().to_string();
        assert!(
            !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'),
            "bad tag name {name:?}"
        );
        let mut attrs = Vec::new();
        let mut attr_text = parts.next().unwrap_or("").trim();
        while !attr_text.is_empty() {
            let eq = attr_text.find("=\"").expect("attribute=\"value\"");
            let attr = attr_text[..eq].trim().to_string();
            let value_end = attr_text[eq + 2..].find('"').expect("closing quote") + eq + 2;
            let value = unescape(&attr_text[eq + 2..value_end]);
            assert!(
                !attrs.iter().any(|(a, _)| a == &attr),
                "duplicate attribute {attr}"
            );
            attrs.push((attr, value));
            attr_text = attr_text[value_end + 1..].trim_start();
        }
        let element = Element {
            name,
            attrs,
            ..Element::default()
        };
        if empty {
            stack.last_mut().unwrap().children.push(element);
        } else {
            stack.push(element);
        }
    }
    assert_eq!(
        stack.len(),
        1,
        "unclosed tags: {:?}",
        stack.iter().map(|e| &e.name).collect::<Vec<_>>()
    );
    let mut document = stack.pop().unwrap();
    assert!(document.text.trim().is_empty(), "text outside the root");
    assert_eq!(document.children.len(), 1, "one root element");
    document.children.pop().unwrap()
}

/// Parses `report`'s JUnit and checks its counts; returns the root.
fn checked(report: &zk_reports::Report) -> Element {
    let root = parse(&junit(report));
    assert_eq!(root.name, "testsuites");
    let suites = root.find_all("testsuite");
    assert_eq!(suites.len(), 1);
    let suite = suites[0];
    let cases = suite.find_all("testcase");
    let failures = suite.find_all("failure").len();
    let errors = suite.find_all("error").len();
    let skipped = suite.find_all("skipped").len();
    for element in [&root, suite] {
        assert_eq!(element.attr("tests"), cases.len().to_string());
        assert_eq!(element.attr("failures"), failures.to_string());
        assert_eq!(element.attr("errors"), errors.to_string());
        assert_eq!(element.attr("skipped"), skipped.to_string());
    }
    for case in &cases {
        assert!(!case.attr("classname").is_empty());
        assert!(!case.attr("name").is_empty());
        assert!(case.children.len() <= 1, "at most one result per testcase");
    }
    root
}

fn counts(root: &Element) -> (usize, usize) {
    (
        root.find_all("testcase").len(),
        root.find_all("failure").len(),
    )
}

#[test]
fn every_fixture_is_well_formed_with_matching_counts() {
    for (name, report) in common::all() {
        let root = checked(&report);
        assert!(!root.find_all("testcase").is_empty(), "{name}");
    }
}

#[test]
fn a_failing_run_fails_with_its_diagnosis_and_replay() {
    let root = checked(&common::lock_report());
    assert_eq!(counts(&root), (1, 1));
    let case = root.find_all("testcase")[0];
    assert_eq!(case.attr("name"), "run");
    assert_eq!(
        case.attr("classname"),
        "zkcheck.lock.original.scenarios/bugs/bug8-pause-two-holders.toml"
    );
    let failure = root.find_all("failure")[0];
    assert!(failure.attr("message").starts_with(common::LOCK_SIGNATURE));
    assert!(failure
        .text
        .contains("Diagnosis (pause-past-session-timeout): c1 was paused"));
    assert!(failure
        .text
        .contains("    why: its session expired at 2300.000ms"));
    assert!(failure
        .text
        .contains("Replay: zkcheck replay scenarios/bugs/bug8-pause-two-holders.toml --seed 17"));
}

#[test]
fn a_passing_run_passes() {
    assert_eq!(counts(&checked(&common::passing_report())), (1, 0));
}

#[test]
fn a_sweep_fails_once_per_bucket() {
    let root = checked(&common::sweep_report());
    assert_eq!(counts(&root), (3, 3));
    let names: Vec<&str> = root
        .find_all("testcase")
        .iter()
        .map(|c| c.attr("name"))
        .collect();
    assert_eq!(
        names,
        [
            common::LOCK_SIGNATURE,
            common::LIVENESS_SIGNATURE,
            common::LEAK_SIGNATURE
        ]
    );
    // The bucket whose first seed the report carries gets its diagnosis.
    let failure = root.find_all("failure")[1];
    assert!(failure.text.contains("watch-on-deleted-node"));
    assert!(failure
        .text
        .contains("Replay: zkcheck replay scenarios/lock-original.toml --seed 203"));

    let clean = checked(&common::clean_sweep_report());
    assert_eq!(counts(&clean), (1, 0));
    assert_eq!(clean.find_all("testcase")[0].attr("name"), "sweep");
}

#[test]
fn a_check_fails_for_a_violated_property() {
    let root = checked(&common::check_report());
    assert_eq!(counts(&root), (4, 1));
    let failure = root.find_all("failure")[0];
    assert_eq!(
        failure.attr("message"),
        "mutual_exclusion violated (9 steps)"
    );
    assert!(failure.text.contains("  9. c1 gets Acquired"));
    let mut unknown = common::check_report();
    unknown.check.as_mut().unwrap().properties[2].verdict = "unknown".to_string();
    assert_eq!(checked(&unknown).find_all("skipped").len(), 1);
}

#[test]
fn the_catalog_fails_for_an_entry_not_ok() {
    let root = checked(&common::catalog_report());
    assert_eq!(counts(&root), (3, 1));
    let failure = root.find_all("failure")[0];
    assert!(
        failure.attr("message").starts_with("bug8 "),
        "{}",
        failure.attr("message")
    );
}

#[test]
fn markup_in_messages_is_escaped() {
    let report = common::hostile_report();
    let xml = junit(&report);
    assert!(!xml.contains("<script>"));
    assert!(xml.contains(
        "&lt;script&gt;alert(1)&lt;/script&gt; &amp; &quot;quoted&quot; &apos;single&apos;"
    ));
    let root = checked(&report);
    let failure = root.find_all("failure")[0];
    // Read back, the text is the report's own.
    assert!(failure.attr("message").contains(common::HOSTILE));
    assert!(failure
        .text
        .contains(&format!("summary {}", common::HOSTILE)));
    assert!(root.attr("name").contains(common::HOSTILE));
}

#[test]
fn characters_xml_cannot_hold_are_replaced() {
    let mut report = common::lock_report();
    report.runs[0].violations[0].message = "bell \u{7} and nul \u{0} & <".to_string();
    let root = checked(&report);
    let message = root.find_all("failure")[0].attr("message").to_string();
    assert!(
        message.contains("bell \u{FFFD} and nul \u{FFFD} & <"),
        "{message}"
    );
}

#[test]
fn a_failing_campaign_fails_with_its_replay() {
    let root = checked(&common::fuzz_report());
    assert_eq!(counts(&root), (1, 1));
    let suite = root.find_all("testsuite")[0];
    assert!(suite
        .attr("name")
        .starts_with("fuzz scenarios/lock-original.toml campaign seed 7: "));
    let case = root.find_all("testcase")[0];
    assert_eq!(
        case.attr("name"),
        "fuzz scenarios/lock-original.toml campaign seed 7"
    );
    assert_eq!(case.attr("classname"), "zkcheck.fuzz.lock.original");
    let failure = root.find_all("failure")[0];
    assert_eq!(
        failure.attr("message"),
        format!(
            "run 734 broke {}; replay: {}",
            common::LOCK_SIGNATURE,
            common::FUZZ_REPLAY
        )
    );
    assert!(failure.text.starts_with(
        "Run 734 of the campaign broke a property; 734 runs (200 of them the scenario's own seeds), corpus 41.\n"
    ));
    assert!(failure
        .text
        .contains("Diagnosis (pause-past-session-timeout): c1 was paused"));
    assert!(failure
        .text
        .contains(&format!("Tape: {}", common::FUZZ_TAPE)));
    assert!(failure
        .text
        .ends_with(&format!("Replay: {}\n", common::FUZZ_REPLAY)));
    // Coverage is no test result.
    assert!(!junit(&common::fuzz_report()).contains("abstract states"));
}

#[test]
fn a_campaign_that_found_nothing_is_skipped_not_passed() {
    let root = checked(&common::clean_fuzz_report());
    assert_eq!(counts(&root), (1, 0));
    let skipped = root.find_all("skipped");
    assert_eq!(skipped.len(), 1);
    assert_eq!(
        skipped[0].attr("message"),
        "a sample, not a pass: no run broke a property in 1500 runs (200 of them the scenario's \
         own seeds), corpus 41 (stopped by its time budget)"
    );
    assert_eq!(root.attr("skipped"), "1");

    let mut missing = common::clean_fuzz_report();
    missing.fuzz = None;
    let root = checked(&missing);
    assert_eq!(
        root.find_all("error")[0].attr("message"),
        "the report has no fuzz section"
    );
}

#[test]
fn rendering_is_deterministic() {
    for (name, report) in common::all() {
        let read = zk_reports::from_json(&zk_reports::to_json(&report)).unwrap();
        assert_eq!(junit(&report), junit(&read), "{name}");
    }
}
