//! The validation layer, rule by rule: every malformed scenario is refused
//! with the file, the line and the dotted key (and the array index), and
//! what it accepts can run. One test per class of bad input; the binary's
//! exit codes are tested in `tests/suite/bad_input.rs`.

// Runs the simulator, which exists only with `--cfg madsim` (.cargo/config.toml).
#![cfg(madsim)]

use crate::common::builtin;
use std::path::Path;
use zk_sim::scenario::{Scenario, ScenarioError, SeedRange};

/// The built-in recipes, as scenario files name them.
/// A valid base scenario to edit: a fixed lock, three clients.
const BASE: &str = r#"recipe = "lock"
variant = "fixed"
clients = 3
duration_ms = 2000
heal_ms = 2000

[config]
path = "/locks"
parents = ["/locks"]

[workload]
cycles = 3
hold_ms = [1, 5]

[faults.rates]
disconnects_per_s = 0.1

[[faults.schedule]]
at_ms = 100
client = 1
fault = "pause"
pause_ms = 500

[[faults.schedule]]
at_ms = 200
client = 2
fault = "disconnect"
down_ms = 10

[properties]
check = ["mutual_exclusion", "liveness", "no_leaks"]
"#;

fn parse(text: &str) -> Result<Scenario, ScenarioError> {
    Scenario::parse(Path::new("case.toml"), text, builtin())
}

/// `BASE` with `from` replaced by `to` (which must occur).
fn edit(from: &str, to: &str) -> String {
    assert!(BASE.contains(from), "{from:?} not in the base scenario");
    BASE.replacen(from, to, 1)
}

/// Refused at `key`, with `words` in the message, a line and a short text.
fn refused(text: &str, key: &str, words: &str) -> ScenarioError {
    let error = parse(text).expect_err("must be refused");
    assert_eq!(error.key, key, "{error}");
    assert!(error.message.contains(words), "{error}");
    assert!(error.line > 0, "no line: {error}");
    let shown = error.to_string();
    assert!(shown.starts_with("case.toml:"), "{shown}");
    assert!(shown.len() < 600, "too long: {shown}");
    error
}

#[test]
fn the_base_scenario_is_valid_and_runs() {
    let scenario = parse(BASE).unwrap();
    let report = scenario.runner().run(1, false);
    assert!(report.stats.requests > 0);
    assert!(report.vacuous().is_none());
}

#[test]
fn setup_parents_must_form_a_tree() {
    let error = refused(
        &edit(
            r#"parents = ["/locks"]"#,
            r#"parents = ["/locks", "/a/b/c"]"#,
        ),
        "config.parents",
        "`/a/b` does not exist",
    );
    assert_eq!(error.line, 9);
    refused(
        &edit(r#"parents = ["/locks"]"#, r#"parents = ["/other"]"#),
        "config.parents",
        "expects its directory `/locks` to exist",
    );
    parse(&edit(
        r#"parents = ["/locks"]"#,
        r#"parents = ["/a", "/a/b", "/locks"]"#,
    ))
    .unwrap();
}

#[test]
fn sizes_are_capped_with_the_cap_in_the_message() {
    refused(
        &edit("clients = 3", "clients = 1000000000"),
        "clients",
        "outside 1..=256",
    );
    refused(
        &edit("duration_ms = 2000", "duration_ms = 9223372036854775807"),
        "duration_ms",
        "outside 1..=86400000 ms",
    );
    refused(
        &edit("heal_ms = 2000", "heal_ms = 9223372036854775000"),
        "heal_ms",
        "86400000",
    );
    refused(
        &edit("clients = 3", "clients = 200").replace("cycles = 3", "cycles = 10000"),
        "workload.cycles",
        "above the cap of 1000000",
    );
    refused(
        &edit("disconnects_per_s = 0.1", "disconnects_per_s = 900")
            .replace("duration_ms = 2000", "duration_ms = 86400000"),
        "faults.rates",
        "above the cap",
    );
}

#[test]
fn rates_are_finite_non_negative_and_probabilities_at_most_one() {
    for (value, words) in [
        ("inf", "not a finite"),
        ("nan", "not a finite"),
        ("-0.5", "outside"),
    ] {
        refused(
            &edit(
                "disconnects_per_s = 0.1",
                &format!("disconnects_per_s = {value}"),
            ),
            "faults.rates.disconnects_per_s",
            words,
        );
    }
    refused(
        &edit("disconnects_per_s = 0.1", "loss_after_apply = 1.5"),
        "faults.rates.loss_after_apply",
        "outside 0..=1",
    );
    refused(
        &edit(
            "disconnects_per_s = 0.1",
            "loss_after_apply = 0.6\nloss_before_apply = 0.6",
        ),
        "faults.rates.loss_after_apply",
        "above 1",
    );
}

#[test]
fn time_values_near_the_integer_limits_are_refused_not_wrapped() {
    refused(
        &edit("pause_ms = 500", "pause_ms = 9223372036854775000"),
        "faults.schedule[0].pause_ms",
        "outside",
    );
    refused(
        &edit("down_ms = 10", "down_ms = 18446744073709551615"),
        "faults.schedule[1].down_ms",
        "too large",
    );
    let error = refused(
        &edit("at_ms = 200", "at_ms = 1e300"),
        "faults.schedule[1].at_ms",
        "within the fault phase",
    );
    assert!(error.message.contains("1e300"), "{error}");
}

#[test]
fn ranges_are_ordered_pairs() {
    refused(
        &edit("hold_ms = [1, 5]", "hold_ms = [20, 1]"),
        "workload.hold_ms",
        "reversed",
    );
    let error = parse(&edit("hold_ms = [1, 5]", "hold_ms = [1, 2, 3]")).unwrap_err();
    assert_eq!(error.line, 13, "{error}");
    assert!(error.message.contains("two numbers"), "{error}");
}

#[test]
fn a_root_directory_or_zero_work_is_refused() {
    refused(
        &edit(r#"path = "/locks""#, r#"path = "/""#),
        "config.path",
        "cannot be the root",
    );
    refused(
        &edit("cycles = 3", "cycles = 0"),
        "workload.cycles",
        "outside 1..=",
    );
    refused(
        &edit("duration_ms = 2000", "duration_ms = 0"),
        "duration_ms",
        "outside 1..=",
    );
}

#[test]
fn properties_must_apply_to_the_recipe() {
    refused(
        &edit(
            r#"check = ["mutual_exclusion", "liveness", "no_leaks"]"#,
            r#"check = ["exactly_once", "barrier"]"#,
        ),
        "properties.check",
        "`exactly_once` does not apply to `lock` (kind: exclusive lock",
    );
    refused(
        &edit(
            "[config]\n",
            "fixed_properties = [\"one_leader\"]\n\n[config]\n",
        ),
        "fixed_properties",
        "does not apply",
    );
    refused(
        &edit("clients = 3", "clients = 1")
            .replace("client = 2", "client = 0")
            .replace("client = 1", "client = 0"),
        "properties.check",
        "never contend",
    );
    refused(
        &edit(
            "[config]\n",
            "expect = \"violation\"\nexpect_property = \"fifo\"\n\n[config]\n",
        ),
        "expect_property",
        "not among the properties checked",
    );
}

#[test]
fn recipe_settings_must_fit_the_recipe_and_the_clients() {
    let barrier =
        "recipe = \"barrier\"\nvariant = \"fixed\"\nclients = 3\n\n[config]\nbarrier_size = 5\n";
    refused(
        barrier,
        "config.barrier_size",
        "cannot meet among 3 clients",
    );
    let queue =
        "recipe = \"queue\"\nvariant = \"fixed\"\nclients = 3\n\n[workload]\nproducers = 3\n";
    refused(queue, "workload.producers", "no consumer");
    refused(
        &edit("cycles = 3", "cycles = 3\nrounds = 2"),
        "workload.rounds",
        "does not read `rounds`",
    );
    refused(
        &edit("[properties]\n", "[properties]\nherd_bound = 0\n"),
        "properties.herd_bound",
        "outside 1..=",
    );
    refused(
        &edit(r#"path = "/locks""#, "path = \"/locks\"\nmax_leases = 2"),
        "config.max_leases",
        "semaphores only",
    );
}

#[test]
fn names_are_one_short_line() {
    refused(&format!("name = \"\"\n{BASE}"), "name", "empty");
    refused(&format!("name = \"a\\nb\"\n{BASE}"), "name", "one line");
    refused(
        &format!("name = \"{}\"\n{BASE}", "n".repeat(101)),
        "name",
        "longer",
    );
}

#[test]
fn schedule_entries_are_named_by_index_and_sub_key() {
    refused(
        &edit(
            "fault = \"disconnect\"",
            "fault = \"disconnect\"\ncolour = \"red\"",
        ),
        "faults.schedule[1].colour",
        "unknown field",
    );
    refused(
        &edit("fault = \"disconnect\"", "fault = \"meteor\""),
        "faults.schedule[1].fault",
        "unknown fault",
    );
    refused(
        &edit("pause_ms = 500", "down_ms = 500"),
        "faults.schedule[0].down_ms",
        "does not take",
    );
    refused(
        &edit("client = 2", "client = 7"),
        "faults.schedule[1].client",
        "does not exist",
    );
}

#[test]
fn long_keys_and_values_are_clipped_in_messages() {
    let long = "k".repeat(1_000_000);
    let error = parse(&format!("{long} = 1\n{BASE}")).unwrap_err();
    assert!(error.to_string().len() < 600, "{}", error.to_string().len());
    assert_eq!(error.line, 1);
    for (from, to) in [
        (r#"variant = "fixed""#, format!("variant = \"{long}\"")),
        ("clients = 3", format!("clients = \"{long}\"")),
        (r#"path = "/locks""#, format!("path = \"{long}\"")),
    ] {
        let error = parse(&edit(from, &to)).unwrap_err();
        assert!(error.to_string().len() < 600, "{}", error.to_string().len());
    }
}

#[test]
fn seed_ranges_are_lazy_and_reach_the_last_seed() {
    let last = SeedRange::parse("18446744073709551615").unwrap();
    assert_eq!(last.iter(None).count(), 1);
    let scenario = parse(&format!("seeds = \"18446744073709551615\"\n{BASE}")).unwrap();
    assert_eq!(scenario.seeds.len(), 1);
    refused(&format!("seeds = \"5..5\"\n{BASE}"), "seeds", "empty");
    let huge = SeedRange::parse("0..100000000000").unwrap();
    assert_eq!(huge.iter(None).take(3).collect::<Vec<_>>(), [0, 1, 2]);
}

#[test]
fn written_scenarios_load_back() {
    let scenario = parse(BASE).unwrap();
    let again =
        parse(&scenario.to_toml()).unwrap_or_else(|e| panic!("{e}\n{}", scenario.to_toml()));
    assert_eq!(again.faults, scenario.faults);
    let queue = parse("recipe = \"queue\"\nvariant = \"fixed\"\nclients = 3\n").unwrap();
    parse(&queue.to_toml()).unwrap();
}

/// `BASE` checking `properties` (a TOML list) instead of its own.
fn checking(properties: &str) -> String {
    edit(
        r#"check = ["mutual_exclusion", "liveness", "no_leaks"]"#,
        &format!("check = {properties}"),
    )
}

/// Issue 30, class 4: a property knob that would let a property pass
/// without checking anything is refused.
#[test]
fn property_knobs_must_let_their_property_fail() {
    // FIFO orders the children of the recipe's directory: any other
    // directory holds none of the contenders' nodes.
    let fifo = checking(r#"["fifo", "liveness"]"#);
    refused(
        &fifo.replace(
            "[properties]\n",
            "[properties]\nfifo_dir = \"/elsewhere\"\n",
        ),
        "properties.fifo_dir",
        "not the directory the recipe's nodes live in",
    );
    let same = parse(&fifo.replace("[properties]\n", "[properties]\nfifo_dir = \"/locks\"\n"))
        .expect("the recipe's own directory");
    assert_eq!(same.fifo_dir.as_ref().map(|p| p.as_str()), Some("/locks"));
    refused(
        &edit("[properties]\n", "[properties]\nfifo_dir = \"/locks\"\n"),
        "properties.fifo_dir",
        "does not check it",
    );
    // A herd bound at or above the other clients can never be exceeded.
    let herd = checking(r#"["herd", "mutual_exclusion"]"#).replace("clients = 3", "clients = 5");
    for bound in [4, 1000] {
        refused(
            &herd.replace(
                "[properties]\n",
                &format!("[properties]\nherd_bound = {bound}\n"),
            ),
            "properties.herd_bound",
            "can never be exceeded",
        );
    }
    parse(&herd.replace("[properties]\n", "[properties]\nherd_bound = 3\n"))
        .expect("a bound below the 4 other clients");
    refused(
        &checking(r#"["herd"]"#)
            .replace("clients = 3", "clients = 2")
            .replace("client = 2", "client = 1"),
        "properties.herd_bound",
        "at most the 1 other client(s)",
    );
    refused(
        &edit("[properties]\n", "[properties]\nherd_bound = 1\n"),
        "properties.herd_bound",
        "does not check it",
    );
    // An empty fixed_properties checks nothing.
    refused(
        &format!("fixed_properties = []\n{BASE}"),
        "fixed_properties",
        "checks nothing",
    );
    // FIFO judges exclusive acquisitions; a semaphore grants leases.
    let semaphore = BASE.replace("recipe = \"lock\"", "recipe = \"semaphore\"");
    refused(
        &semaphore.replace(
            r#"check = ["mutual_exclusion", "liveness", "no_leaks"]"#,
            r#"check = ["fifo"]"#,
        ),
        "properties.check",
        "exclusive acquisitions only",
    );
}

/// Issue 30, class 8: even ensembles, a lag on one server and a `client`
/// on a server fault are refused.
#[test]
fn ensembles_are_odd_and_take_only_what_they_read() {
    for servers in [2, 4, 6] {
        refused(
            &format!("ensemble = {servers}\n{BASE}"),
            "ensemble",
            "1, 3, 5 or 7",
        );
    }
    for servers in [1, 3, 5, 7] {
        parse(&format!("ensemble = {servers}\n{BASE}")).expect("an odd ensemble");
    }
    let lag = edit(
        "[faults.rates]",
        "[timing]\napply_lag_ms = [10, 50]\n\n[faults.rates]",
    );
    refused(&lag, "timing.apply_lag_ms", "one server");
    parse(&format!("ensemble = 3\n{lag}")).expect("a lag with followers");
    let crash =
        "\n[[faults.schedule]]\nat_ms = 300\nfault = \"server_crash\"\nserver = 1\ndown_ms = 50\n";
    let ensemble = format!("ensemble = 3\n{BASE}{crash}");
    parse(&ensemble).expect("a server fault without a client");
    refused(
        &ensemble.replace(
            "fault = \"server_crash\"",
            "client = 0\nfault = \"server_crash\"",
        ),
        "faults.schedule[2].client",
        "leave `client` out",
    );
}

/// The shrinker's output (`Scenario::to_toml`) never gives a server fault
/// a `client`, so a shrunk ensemble scenario loads back.
#[test]
fn a_written_server_fault_has_no_client() {
    let crash =
        "\n[[faults.schedule]]\nat_ms = 300\nfault = \"server_crash\"\nserver = 1\ndown_ms = 50\n";
    let scenario = parse(&format!("ensemble = 3\n{BASE}{crash}")).expect("valid");
    let written = scenario.to_toml();
    let table: toml::Table = written.parse().expect("TOML");
    let entries = table["faults"]["schedule"].as_array().expect("a schedule");
    assert_eq!(entries.len(), 3, "{written}");
    assert!(entries[0].get("client").is_some(), "{written}");
    assert!(entries[2].get("client").is_none(), "{written}");
    let again = parse(&written).unwrap_or_else(|e| panic!("{e}\n{written}"));
    assert_eq!(again.faults, scenario.faults);
}
