//! The report document: written and read back unchanged, and a document
//! of another schema version refused with a clear error.

use crate::common;

use zk_reports::{from_json, to_json, ReportError, SCHEMA_VERSION};

#[test]
fn every_fixture_round_trips() {
    for (name, report) in common::all() {
        let text = to_json(&report);
        assert!(text.ends_with("}\n"), "{name}");
        assert_eq!(from_json(&text).unwrap(), report, "{name}");
    }
}

#[test]
fn another_version_is_refused() {
    let mut value: serde_json::Value =
        serde_json::from_str(&to_json(&common::lock_report())).unwrap();
    value["schema_version"] = serde_json::json!(SCHEMA_VERSION + 1);
    let error = from_json(&value.to_string()).unwrap_err();
    assert!(
        matches!(error, ReportError::Version { found, expected } if found == u64::from(SCHEMA_VERSION) + 1 && expected == SCHEMA_VERSION)
    );
    let message = error.to_string();
    assert!(
        message.contains("report schema version 3 is not supported"),
        "{message}"
    );
    assert!(message.contains("reads version 2"), "{message}");
}

#[test]
fn the_version_is_checked_before_the_fields() {
    // A later version may have changed fields: its version is what the
    // error names, not a missing field.
    let error = from_json(r#"{"schema_version": 7, "kind": "something new"}"#).unwrap_err();
    assert!(
        matches!(error, ReportError::Version { found: 7, .. }),
        "{error}"
    );
}

#[test]
fn no_version_or_not_json_is_refused() {
    assert!(matches!(
        from_json(r#"{"title": "x"}"#),
        Err(ReportError::MissingVersion)
    ));
    assert!(matches!(from_json("not json"), Err(ReportError::Json(_))));
    assert!(matches!(
        from_json(r#"{"schema_version": 2, "title": "x"}"#),
        Err(ReportError::Json(_))
    ));
}

#[test]
fn optional_sections_default() {
    let text = r#"{
        "schema_version": 2, "generated_by": "zkcheck 0.1.0", "kind": "run",
        "title": "t", "command": "zkcheck sim x.toml"
    }"#;
    let report = from_json(text).unwrap();
    assert!(report.runs.is_empty() && report.sweep.is_none());
}

/// Coverage beyond what the chart and the tables show is refused on
/// reading, naming the key; at the limits it reads.
#[test]
fn coverage_beyond_the_limits_is_refused() {
    use zk_reports::limits::{MAX_CURVES, MAX_CURVE_BLOCKS, MAX_LISTED_STATES};
    let refused =
        |report: &zk_reports::Report| from_json(&to_json(report)).unwrap_err().to_string();

    let mut report = common::fuzz_report();
    let coverage = report.coverage.as_mut().unwrap();
    coverage.curves[1].new_states = vec![1; MAX_CURVE_BLOCKS];
    assert!(from_json(&to_json(&report)).is_ok(), "at the limit");
    report.coverage.as_mut().unwrap().curves[1]
        .new_states
        .push(1);
    assert_eq!(
        refused(&report),
        format!(
            "not renderable: key `coverage.curves[1].new_states`: {} is beyond the {MAX_CURVE_BLOCKS} \
             a report can show (blocks are the chart's points and the tables' numbers)",
            MAX_CURVE_BLOCKS + 1
        )
    );

    let mut report = common::fuzz_report();
    let curve = report.coverage.as_ref().unwrap().curves[0].clone();
    report.coverage.as_mut().unwrap().curves = vec![curve; MAX_CURVES + 1];
    let error = refused(&report);
    assert!(
        error.contains(&format!(
            "key `coverage.curves`: {} is beyond the {MAX_CURVES}",
            MAX_CURVES + 1
        )),
        "{error}"
    );

    for list in ["beyond_model_first", "shortest_never_reached"] {
        let mut report = common::coverage_sweep_report();
        let model = report
            .coverage
            .as_mut()
            .unwrap()
            .against_model
            .as_mut()
            .unwrap();
        match list {
            "beyond_model_first" => {
                model.beyond_model_first = vec![("s".to_string(), 1); MAX_LISTED_STATES + 1]
            }
            _ => {
                model.shortest_never_reached =
                    vec![("s".to_string(), 1, None); MAX_LISTED_STATES + 1]
            }
        }
        let error = refused(&report);
        assert!(
            error.contains(&format!(
                "key `coverage.against_model.{list}`: {} is beyond the {MAX_LISTED_STATES}",
                MAX_LISTED_STATES + 1
            )),
            "{error}"
        );
    }
}

#[test]
fn a_document_without_fuzz_or_coverage_still_reads() {
    // What a zkcheck of schema version 2 wrote before campaigns and
    // coverage: neither key.
    let text = to_json(&common::sweep_report());
    assert!(!text.contains("\"fuzz\"") && !text.contains("\"coverage\""));
    let report = from_json(&text).unwrap();
    assert!(report.fuzz.is_none() && report.coverage.is_none());
    let text = to_json(&common::fuzz_report());
    assert!(text.contains("\"kind\": \"fuzz\"") && text.contains("\"first_failing_run\": 734"));
}
