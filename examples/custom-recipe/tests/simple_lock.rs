//! The test API on the example's recipe: a sweep and a model check in
//! `cargo test`, for the buggy variant (fails) and the fixed one (holds).

use zkcheck::testing;

const SCENARIO: &str = "scenarios/simple-lock.toml";

#[test]
fn the_buggy_lock_breaks_mutual_exclusion_in_the_simulator() {
    let failure = testing::scenario(&custom_recipe::registry(), SCENARIO).fails();
    // Two holders at once, or one granted an older token after a newer one.
    for violation in &failure.report.violations {
        let name = violation.property.name();
        assert!(name.ends_with("mutual_exclusion"), "{name}");
    }
    assert!(!failure.report.violations.is_empty());
}

#[test]
fn the_fixed_lock_holds_in_the_simulator() {
    testing::scenario(&custom_recipe::registry(), SCENARIO)
        .variant("fixed")
        .seeds("0..100")
        .passes();
}

#[test]
fn the_model_checker_finds_the_buggy_lock_s_shortest_counterexample() {
    let steps = testing::model(&custom_recipe::registry(), "simple_lock", "buggy")
        .all_orders()
        .violates("mutual_exclusion");
    assert_eq!(steps, 10, "the shortest counterexample changed");
}

#[test]
fn the_model_checker_exhausts_the_fixed_lock() {
    let states = testing::model(&custom_recipe::registry(), "simple_lock", "fixed")
        .clients(3)
        .all_orders()
        .holds();
    assert_eq!(states, 19_856, "the state count changed");
}

#[test]
fn the_lock_declares_a_sound_renaming_and_symmetry_saves_states() {
    let registry = custom_recipe::registry();
    let checked = testing::model(&registry, "simple_lock", "fixed")
        .clients(3)
        .all_orders()
        .renaming_is_sound();
    assert!(checked > 100, "the self-check saw only {checked} states");
    let states = testing::model(&registry, "simple_lock", "fixed")
        .clients(3)
        .all_orders()
        .symmetry()
        .ranks()
        .holds();
    assert_eq!(states, 2_977, "the state count changed (19,856 without)");
}
