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
