//! `zkcheck::testing` on the built-in recipes: a sweep that must pass
//! fails the test with the seed and the commands that reproduce it, a
//! sweep that must fail returns the first failing seed, and model checks
//! pin counterexample lengths and state counts.

// Runs the simulator, which exists only with `--cfg madsim` (.cargo/config.toml).
#![cfg(madsim)]

use std::panic::{catch_unwind, AssertUnwindSafe};
use zkcheck::testing;
use zkcheck::Registry;

const BUG1: &str = "scenarios/bugs/bug1-prefix-ordering.toml";

fn panic_text(run: impl FnOnce()) -> String {
    let payload = catch_unwind(AssertUnwindSafe(run)).expect_err("the check should fail");
    payload
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_default()
}

#[test]
fn a_buggy_variant_fails_with_its_first_failing_seed() {
    let registry = Registry::builtin();
    let failure = testing::scenario(&registry, BUG1).seeds("0..50").fails();
    assert!(failure.seed < 50);
    assert!(!failure.report.violations.is_empty());
    // The same seed fails again: the sweep is deterministic.
    let again = testing::scenario(&registry, BUG1).seeds("0..50").fails();
    assert_eq!(again.seed, failure.seed);
}

#[test]
fn a_sweep_that_must_pass_names_the_seed_and_how_to_reproduce_it() {
    let registry = Registry::builtin();
    let text = panic_text(|| testing::scenario(&registry, BUG1).seeds("0..50").passes());
    assert!(text.contains("seed "), "{text}");
    assert!(text.contains("VIOLATION of"), "{text}");
    // This test alone on that seed, and the command line.
    // The name libtest gives the test: its module path without the crate.
    let module = module_path!()
        .split_once("::")
        .map_or("", |(_, module)| module);
    let name = format!("{module}::a_sweep_that_must_pass_names_the_seed_and_how_to_reproduce_it");
    let name = name.trim_start_matches("::");
    assert!(
        text.contains("ZKCHECK_SEED=") && text.contains(&format!("cargo test -- --exact {name}\n")),
        "{text}"
    );
    assert!(
        text.contains("replay scenarios/bugs/bug1-prefix-ordering.toml --seed"),
        "{text}"
    );
}

#[test]
fn the_fixed_variant_passes_the_same_seeds() {
    testing::scenario(&Registry::builtin(), BUG1)
        .variant("fixed")
        .seeds("0..20")
        .passes();
}

#[test]
fn an_every_seed_pass_where_a_violation_was_expected_fails_the_test() {
    let registry = Registry::builtin();
    let text = panic_text(|| {
        let _ = testing::scenario(&registry, BUG1)
            .variant("fixed")
            .seeds("0..5")
            .fails();
    });
    assert!(text.contains("every seed of 0..5 passed"), "{text}");
}

#[test]
fn a_bad_scenario_fails_the_test_with_its_location() {
    let registry = Registry::builtin();
    let text = panic_text(|| testing::scenario(&registry, "scenarios/missing.toml").passes());
    assert!(
        text.contains("bad scenario") && text.contains("missing.toml"),
        "{text}"
    );
}

#[test]
fn model_checks_pin_the_shortest_counterexample_and_the_state_count() {
    let registry = Registry::builtin();
    let steps = testing::model(&registry, "lock", "original").violates("mutual_exclusion");
    let report = registry
        .model("lock", "original")
        .unwrap()
        .check(&zkcheck::models::Setup::new(2), &Default::default());
    let trace = report.property("mutual_exclusion").unwrap().trace.as_ref();
    assert_eq!(Some(steps), trace.map(Vec::len));
    let states = testing::model(&registry, "lock", "fixed").holds();
    assert_eq!(states, report_states(&registry));
    let text = panic_text(|| {
        testing::model(&registry, "lock", "original").holds();
    });
    assert!(
        text.contains("cargo run --release -- check lock --variant original --clients 2"),
        "{text}"
    );
    assert!(
        text.contains("counterexample for mutual_exclusion"),
        "{text}"
    );
}

fn report_states(registry: &Registry) -> usize {
    registry
        .model("lock", "fixed")
        .unwrap()
        .check(&zkcheck::models::Setup::new(2), &Default::default())
        .unique_states
}

/// One named property can be asserted alone: the original lock breaks
/// mutual exclusion and FIFO, and still keeps `no_leaks` (403 states, the
/// whole space); asserting a property it breaks fails the test with the
/// counterexample, one it does not have names the ones it has.
#[test]
fn a_model_check_asserts_one_named_property() {
    let registry = Registry::builtin();
    let original = || testing::model(&registry, "lock", "original");
    assert_eq!(original().holds_property("no_leaks"), 403);
    assert_eq!(original().holds_property("lock_acquired"), 403);
    let text = panic_text(|| {
        original().holds_property("mutual_exclusion");
    });
    for needle in [
        "expected mutual_exclusion to hold, but it is violated",
        "counterexample for mutual_exclusion",
        "check lock --variant original --clients 2",
    ] {
        assert!(text.contains(needle), "{needle}: {text}");
    }
    let text = panic_text(|| {
        original().holds_property("world_peace");
    });
    assert!(text.contains("no property \"world_peace\""), "{text}");
    assert!(text.contains("no_leaks"), "{text}");
}

/// The same on a sweep: the herd-effect election breaks `herd` on every
/// seed and never `one_leader`; `.passes()` cannot say that, and
/// `.holds_property("one_leader")` does.
#[test]
fn a_sweep_asserts_one_named_property() {
    let registry = Registry::builtin();
    let bug4 = "scenarios/bugs/bug4-herd-effect.toml";
    testing::scenario(&registry, bug4)
        .seeds("0..20")
        .holds_property("one_leader");
    let text = panic_text(|| {
        testing::scenario(&registry, bug4)
            .seeds("0..20")
            .holds_property("herd")
    });
    for needle in [
        "expected herd to hold on every seed",
        "VIOLATION of herd",
        "ZKCHECK_SEED=",
    ] {
        assert!(text.contains(needle), "{needle}: {text}");
    }
    let text = panic_text(|| {
        testing::scenario(&registry, bug4)
            .seeds("0..20")
            .holds_property("liveness")
    });
    assert!(text.contains("does not check liveness"), "{text}");
}
