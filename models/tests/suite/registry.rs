//! The registry: recipes registered through the one door get a simulation
//! and a generic model (hold, queue and barrier recipes alike); lookups name what exists; a
//! malformed registration is a programmer error.

use zk_models::run::{RunOptions, Verdict};
use zk_models::{
    ClientContext, HoldCalls, QueueCalls, RecipeEntry, RecipeKind, Registry, RegistryError, Setup,
    Variant,
};
use zk_recipes::lock::{FixedLock, LockCall, OriginalLock};
use zk_recipes::queue::{FixedQueue, QueueCall};

fn lock_calls() -> HoldCalls<LockCall> {
    HoldCalls::new(LockCall::Lock, LockCall::Unlock)
}

/// The built-in lock registered again under another name, with the
/// generic model instead of its hand-written one.
fn generic_locks() -> Registry {
    Registry::empty().with(
        RecipeEntry::new("my_lock", RecipeKind::ExclusiveLock, "/mine")
            .variant(
                Variant::hold("original", "seed 000", lock_calls(), |c: &ClientContext| {
                    OriginalLock::new(c.path.clone())
                })
                .needs_existing_path(),
            )
            .variant(
                Variant::hold("fixed", "fixed", lock_calls(), |c: &ClientContext| {
                    FixedLock::new(c.path.clone(), c.unique_id)
                })
                .needs_existing_path(),
            ),
    )
}

#[test]
fn the_generic_hold_model_holds_for_the_fixed_lock_and_pins_its_count() {
    let model = generic_locks().model("my_lock", "fixed").unwrap();
    let report = model.check(&Setup::new(2), &RunOptions::default());
    assert!(report.failures().is_empty(), "{}", report.summary());
    assert!(report.exhaustive);
    let names: Vec<&str> = report.properties.iter().map(|p| p.name).collect();
    for expected in [
        "mutual_exclusion",
        "fenced_mutual_exclusion",
        "no_leaks",
        "no_stuck_waiter",
        "liveness",
        "lock_acquired",
    ] {
        assert!(names.contains(&expected), "{names:?}");
    }
    assert_eq!(report.model, "my_lock/fixed");
    // The hand-written model of the same recipe has more properties (FIFO,
    // herd) but the same state space.
    let builtin = Registry::builtin().model("lock", "fixed").unwrap();
    let pinned = builtin.check(&Setup::new(2), &RunOptions::default());
    assert_eq!(report.unique_states, pinned.unique_states);
}

#[test]
fn the_generic_hold_model_finds_the_original_lock_s_bug_1() {
    let model = generic_locks().model("my_lock", "original").unwrap();
    let report = model.check(&Setup::new(2), &RunOptions::default());
    let result = report.property("mutual_exclusion").unwrap();
    assert_eq!(result.verdict, Verdict::Violated, "{}", report.summary());
    // Same shortest counterexample as the hand-written model's.
    let builtin = Registry::builtin().model("lock", "original").unwrap();
    let pinned = builtin.check(&Setup::new(2), &RunOptions::default());
    let shortest = pinned.property("mutual_exclusion").unwrap().trace.as_ref();
    assert_eq!(result.trace.as_ref().map(Vec::len), shortest.map(Vec::len));
}

#[test]
#[cfg(madsim)] // runs the simulator
fn a_scenario_names_a_registered_recipe_and_gets_its_default_directory() {
    let registry = generic_locks();
    let text = "recipe = \"my_lock\"\nvariant = \"fixed\"\nclients = 2\n";
    let scenario = zk_sim::scenario::Scenario::parse(
        std::path::Path::new("mine.toml"),
        text,
        registry.sim_recipes(),
    )
    .unwrap();
    assert_eq!(scenario.path.as_str(), "/mine");
    assert_eq!(scenario.parents.len(), 1, "needs_existing_path creates it");
    let report = scenario.runner().run(1, false);
    assert!(report.passed(), "{:?}", report.violations);
    assert!(report.vacuous().is_none());
}

#[test]
fn lookups_name_what_is_registered() {
    let registry = generic_locks();
    let error = registry.model("padlock", "fixed").unwrap_err();
    assert!(matches!(error, RegistryError::UnknownRecipe { .. }));
    assert!(error.to_string().contains("my_lock"), "{error}");
    let error = registry.model("my_lock", "broken").unwrap_err();
    assert!(error.to_string().contains("original, fixed"), "{error}");
    let error = zk_sim::scenario::Scenario::parse(
        std::path::Path::new("x.toml"),
        "recipe = \"lock\"\nvariant = \"fixed\"\nclients = 2\n",
        registry.sim_recipes(),
    )
    .unwrap_err();
    assert!(
        error.to_string().contains("unknown recipe `lock`"),
        "{error}"
    );
    assert!(error.to_string().contains("my_lock"), "{error}");
}

#[test]
fn a_queue_registered_without_a_model_gets_the_generic_one() {
    let registry = Registry::empty().with(RecipeEntry::new("q", RecipeKind::Queue, "/q").variant(
        Variant::queue(
            "fixed",
            "fixed",
            QueueCalls::new(QueueCall::Offer, QueueCall::Take),
            |c: &ClientContext| FixedQueue::new(c.path.clone(), c.unique_id),
        ),
    ));
    let model = registry
        .model("q", "fixed")
        .expect("the generic queue model");
    assert!(registry.entries()[0].variants()[0].has_model());
    let names = model.property_names(&Setup::new(2));
    for name in [
        "exactly_once",
        "no_stuck_waiter",
        "liveness",
        "item_consumed",
    ] {
        assert!(names.contains(&name), "{name}: {names:?}");
    }
}

#[test]
fn every_builtin_variant_has_a_simulation_and_a_model() {
    let registry = Registry::builtin();
    let names: Vec<(String, String)> = registry
        .models()
        .into_iter()
        .map(|(recipe, variant, _)| (recipe, variant))
        .collect();
    let variants: usize = registry.entries().iter().map(|e| e.variants().len()).sum();
    assert_eq!(names.len(), variants);
    assert_eq!(variants, 17);
    for entry in registry.entries() {
        assert!(registry.sim_recipes().find(entry.name()).is_ok());
    }
}

#[test]
#[should_panic(expected = "has a Hold workload")]
fn a_variant_of_the_wrong_workload_is_a_programmer_error() {
    let _ = RecipeEntry::new("q", RecipeKind::Queue, "/q").variant(Variant::hold(
        "fixed",
        "a lock is not a queue",
        lock_calls(),
        |c: &ClientContext| FixedLock::new(c.path.clone(), c.unique_id),
    ));
}

#[test]
#[should_panic(expected = "registered twice")]
fn a_recipe_registered_twice_is_a_programmer_error() {
    let _ = generic_locks().with(
        RecipeEntry::new("my_lock", RecipeKind::ExclusiveLock, "/x").variant(Variant::hold(
            "fixed",
            "again",
            lock_calls(),
            |c: &ClientContext| FixedLock::new(c.path.clone(), c.unique_id),
        )),
    );
}
