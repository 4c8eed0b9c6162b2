//! `sweep --coverage --against-model FAULTS` (issue 44): a sweep's shared
//! abstract states against the stateful checker's reachable set. The
//! 2-client fixed lock with one loss: the fraction reached pinned, the
//! states beyond the model's budget named with their seeds, and a
//! never-reached state's schedule replayed into that state (and refused
//! when it names another). With no faults, and with a budget as large as
//! what the sweep's runs suffer, the world reaches no state the model
//! does not: the two agree on every state the sweep saw. `--report`
//! shows the comparison.

use crate::common::{self, zkcheck};
use serde_json::Value;
use std::path::Path;

const ONE_LOSS: &str = "tests/fixtures/lock-fixed-one-loss.toml";

/// `sweep SCENARIO --coverage --against-model FAULTS` with `extra`: its
/// stdout and its JSON's comparison.
fn compared(scenario: &str, faults: &str, dir: &Path, extra: &[&str]) -> (String, Value) {
    let json = dir.join(format!("{faults}.json"));
    let json_text = json.display().to_string();
    let mut args = vec![
        "sweep",
        scenario,
        "--coverage",
        "--against-model",
        faults,
        "--json",
        &json_text,
    ];
    args.extend(extra);
    let run = zkcheck(&args);
    run.expect(0);
    let text = std::fs::read_to_string(&json).expect("the sweep's JSON");
    let value: Value = serde_json::from_str(&text).expect("JSON");
    (
        run.stdout.clone(),
        value["coverage"]["against_model"].clone(),
    )
}

fn counts(comparison: &Value) -> [u64; 4] {
    ["reachable", "covered", "beyond_model", "never_reached"]
        .map(|key| comparison[key].as_u64().unwrap_or_else(|| panic!("{key}")))
}

#[test]
fn the_one_loss_lock_is_measured_against_the_model_and_a_never_reached_state_replays() {
    let dir = common::scratch("against_model", "one_loss");
    let never = dir.join("never");
    let never_text = never.display().to_string();
    let report = dir.join("report");
    let report_text = report.display().to_string();
    let (stdout, comparison) = compared(
        ONE_LOSS,
        "connection-loss=1",
        &dir,
        &["--never-reached", &never_text, "--report", &report_text],
    );
    let html = std::fs::read_to_string(report.join("lock-fixed-one-loss.html")).expect("HTML");
    assert!(html.contains("56.2%"), "the report shows the comparison");
    let document = std::fs::read_to_string(report.join("lock-fixed-one-loss.json")).expect("JSON");
    let document: Value = serde_json::from_str(&document).expect("JSON");
    assert_eq!(document["coverage"]["against_model"]["covered"], 150);
    assert_eq!(document["coverage"]["curves"][0]["label"], "seeds 0..1000");
    assert!(
        stdout.contains("against the model (lock/fixed, 2 client(s), 1 cycle(s), faults connection-loss=1): 150 of its 267 shared abstract states reached (56.2%)"),
        "{stdout}"
    );
    assert_eq!(counts(&comparison), [267, 150, 45, 117]);
    assert_eq!(comparison["model_states"].as_u64(), Some(2126));
    let beyond = comparison["beyond_model_first"].as_array().expect("a list");
    assert_eq!(beyond.len(), 10, "the first ten, by lowest seed");
    assert_eq!(beyond[0][1].as_u64(), Some(31), "{beyond:?}");

    let shortest = comparison["shortest_never_reached"]
        .as_array()
        .expect("a list");
    assert_eq!(shortest.len(), 10);
    let steps: Vec<u64> = shortest
        .iter()
        .map(|n| n["steps"].as_u64().unwrap())
        .collect();
    assert!(
        steps.windows(2).all(|w| w[0] <= w[1]),
        "shortest first: {steps:?}"
    );
    assert_eq!(steps[0], 2, "{steps:?}");
    let first = &shortest[0];
    let schedule = first["schedule"].as_str().expect("a schedule written");
    let state = first["state"].as_str().expect("a state");
    let replayed = zkcheck(&["replay", schedule]);
    replayed.expect(0);
    assert!(
        replayed.stdout.contains(&format!(
            "agrees with the model: the steps lead to shared abstract state {state}"
        )),
        "{}",
        replayed.stdout
    );

    // The same steps said to lead elsewhere: the replay disagrees.
    let text = std::fs::read_to_string(schedule).expect("the schedule");
    let wrong = text.replace(state, "0123456789abcdef");
    let wrong_path = dir.join("wrong.toml");
    std::fs::write(&wrong_path, wrong).expect("written");
    let disagreed = zkcheck(&["replay", &wrong_path.display().to_string()]);
    assert_eq!(disagreed.code, 3, "{}", disagreed.stdout);
    assert!(disagreed
        .stdout
        .contains("DISAGREES with the model: the steps lead to shared abstract state"));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn with_the_budget_the_runs_suffer_the_world_reaches_no_state_the_model_does_not() {
    let dir = common::scratch("against_model", "agree");
    let (_, comparison) = compared(ONE_LOSS, "connection-loss=2,expiry=1", &dir, &[]);
    assert_eq!(counts(&comparison), [839, 195, 0, 644]);
    let no_faults = dir.join("no-faults.toml");
    let text = std::fs::read_to_string(ONE_LOSS).expect("the fixture");
    let cut = text.find("[faults.rates]").expect("rates");
    let properties = text.find("[properties]").expect("properties");
    let without = format!("{}{}", &text[..cut], &text[properties..]);
    std::fs::write(&no_faults, without).expect("written");
    let (_, comparison) = compared(&no_faults.display().to_string(), "none", &dir, &[]);
    assert_eq!(counts(&comparison), [69, 53, 0, 16]);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_campaign_and_its_seeds_are_measured_against_the_model_too() {
    let dir = common::scratch("against_model", "fuzz");
    let run = zkcheck(&[
        "fuzz",
        ONE_LOSS,
        "--runs",
        "1000",
        "--against-seeds",
        "--against-model",
        "connection-loss=2,expiry=1",
        "--out",
        &dir.display().to_string(),
    ]);
    let _ = std::fs::remove_dir_all(&dir);
    run.expect(4);
    let (campaign, seeds) = run.stdout.split_once("the seeds:").expect("both measured");
    assert!(campaign.contains("the campaign:"), "{}", run.stdout);
    for (part, reached) in [(campaign, 286), (seeds, 195)] {
        let expected = format!("{reached} of its 839 shared abstract states reached");
        assert!(part.contains(&expected), "{expected:?} in {part}");
    }
    for part in [campaign, seeds] {
        assert!(
            part.contains("reached by the runs, not by the model: 0"),
            "{part}"
        );
    }
}

#[test]
fn what_cannot_be_compared_is_refused() {
    let refused = |args: &[&str], needles: &[&str]| {
        zkcheck(args).refused(needles);
    };
    refused(
        &["sweep", ONE_LOSS, "--against-model", "connection-loss=1"],
        &["--coverage"],
    );
    refused(
        &[
            "sweep",
            ONE_LOSS,
            "--coverage",
            "--against-model",
            "bogus=1",
        ],
        &["--against-model", "bogus"],
    );
    refused(
        &[
            "sweep",
            "scenarios/ensemble/lock-fixed-ensemble.toml",
            "--coverage",
            "--against-model",
            "connection-loss=1",
        ],
        &["--against-model", "ensemble"],
    );
    refused(
        &["sweep", ONE_LOSS, "--never-reached", "/tmp/x"],
        &["--against-model"],
    );
    refused(
        &["fuzz", ONE_LOSS, "--against-model", "connection-loss=x"],
        &["--against-model"],
    );
}
