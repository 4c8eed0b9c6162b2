//! Diagnoses: every catalog entry's first catching seed (pinned) shows the
//! entry's own signature, its diagnosis names what a reader needs (the
//! stuck client, the node, the holder), and the fixed variant passes the
//! same seed. `zkcheck bugs` (CI) runs each entry's whole seed range; these
//! pin one seed each so a change of mechanism shows in `cargo test`.

// Runs the simulator, which exists only with `--cfg madsim` (.cargo/config.toml).
#![cfg(madsim)]

// The precision set's recipes; this file uses a few of their bugs.
use crate::diagnosis_precision::{baton, counting, fixtures, leftover};

use fixtures::{Bugs, FixtureLock};
use std::path::Path;
use std::sync::OnceLock;
use zk_recipes::semaphore::SemaphoreCall;
use zk_recipes::shared_lock::{LockMode, SharedLockCall};
use zk_sim::oracles::{Property, Violation};
use zk_sim::scenario::Scenario;
use zkcheck::{HoldCalls, RecipeEntry, RecipeKind, Registry, Variant};

fn builtin() -> &'static zk_sim::scenario::SimRecipes {
    static REGISTRY: std::sync::OnceLock<zk_models::Registry> = std::sync::OnceLock::new();
    REGISTRY
        .get_or_init(zk_models::Registry::builtin)
        .sim_recipes()
}

fn load(file: &str) -> Scenario {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(file);
    let mut scenario = Scenario::load(&path, builtin()).expect("a shipped scenario loads");
    scenario.all_violations = true;
    scenario
}

/// Runs `seed` with every violation reported; returns the one with the
/// scenario's own signature.
fn caught(file: &str, seed: u64) -> Violation {
    let scenario = load(file);
    let expected = scenario
        .expect_signature
        .clone()
        .expect("a catalog entry names its signature");
    let report = scenario.runner().run(seed, false);
    let signatures: Vec<String> = report.violations.iter().map(|v| v.signature()).collect();
    let fixed = scenario.with_variant("fixed").expect("a fixed variant");
    let fixed_report = fixed.runner().run(seed, false);
    assert!(
        fixed_report.passed(),
        "{file} seed {seed}: the fixed variant fails: {:?}",
        fixed_report.violations
    );
    report
        .violations
        .into_iter()
        .find(|v| v.signature() == expected)
        .unwrap_or_else(|| panic!("{file} seed {seed}: {expected} not among {signatures:?}"))
}

fn text(violation: &Violation) -> String {
    violation.to_string()
}

#[test]
fn bug1_fifo_names_the_name_order() {
    let v = caught("scenarios/bugs/bug1-prefix-ordering.toml", 0);
    assert!(text(&v).contains("the names sort by their prefix, not their sequence suffix"));
}

#[test]
fn bug2_orphan_node_names_its_creator_and_the_lost_reply() {
    let v = caught("scenarios/bugs/bug2-nonidempotent-create.toml", 5);
    let d = v.diagnosis.as_ref().unwrap();
    assert!(d.summary.contains("whose reply never arrived"), "{d}");
    assert!(
        d.findings.iter().any(|f| f
            .moments
            .iter()
            .any(|(_, what)| what.contains("reply was lost"))),
        "{d}"
    );
}

#[test]
fn bug3_the_client_waits_on_its_own_node() {
    let v = caught("scenarios/bugs/bug3-recovered-id-not-full-path.toml", 8);
    // It waits on its own node, or behind a contender after its own node.
    assert!(text(&v).contains("its own node"), "{v}");
    // Bug 3's mechanism by either of its shapes: the recovered name is
    // not recognised among full paths, or placed wrong for the same reason.
    assert!(
        text(&v).contains("does not recognise its own node")
            || text(&v).contains("compares a name it recovered with full paths"),
        "{v}"
    );
}

#[test]
fn bug4_herd() {
    caught("scenarios/bugs/bug4-herd-effect.toml", 0);
}

#[test]
fn bug5a_names_the_colliding_create() {
    let v = caught("scenarios/bugs/bug5a-barrier-host-names.toml", 0);
    assert!(text(&v).contains("failed with NodeExists"), "{v}");
}

#[test]
fn bug5b_names_the_member_that_left_first() {
    let v = caught("scenarios/bugs/bug5b-barrier-leave-race.toml", 3);
    assert!(text(&v).contains("had already deleted"), "{v}");
}

#[test]
fn bug6_item_lost() {
    caught("scenarios/bugs/bug6-queue-lost-item.toml", 0);
    caught("scenarios/bugs/bug6-tutorial-queue.toml", 0);
}

#[test]
fn bug7_names_the_parent_and_its_creator() {
    let v = caught("scenarios/bugs/bug7-lock-nodes-left.toml", 0);
    let d = v.diagnosis.as_ref().unwrap();
    assert!(
        d.summary.starts_with("/locks/key: a persistent parent c"),
        "{d}"
    );
}

#[test]
fn bug8_names_the_stale_holder_its_pause_and_its_expiry() {
    let v = caught("scenarios/bugs/bug8-pause-two-holders.toml", 1);
    let d = v.diagnosis.as_ref().unwrap();
    assert!(d
        .summary
        .contains("kept believing it held after the server expired its session"));
    assert!(d.summary.contains("paused for"), "{d}");
    assert_eq!(d.findings.len(), 2, "both holders: {d}");
}

#[test]
fn bug9_the_waiter_watches_a_node_already_gone() {
    let v = caught("scenarios/bugs/bug9-predecessor-vanishes.toml", 0);
    let d = v.diagnosis.as_ref().unwrap();
    assert!(d.summary.contains("creation watch"), "{d}");
    let finding = &d.findings[0];
    assert!(finding.path.is_some(), "the watched node is named: {d}");
    assert!(
        finding
            .moments
            .iter()
            .any(|(_, what)| what.contains("deleted by c")),
        "when and by whom it went: {d}"
    );
}

#[test]
fn bug10_the_owner_believes_it_released() {
    let v = caught("scenarios/bugs/bug10-release-lost.toml", 4);
    assert!(text(&v).contains("delete"), "{v}");
    assert!(text(&v).contains("was lost with its connection"), "{v}");
}

/// A run without `--all-violations` stops at the first violation; with
/// it, a second property's violation behind the first shows too.
#[test]
fn all_violations_shows_what_the_first_hides() {
    let file = "scenarios/bugs/bug10-release-lost.toml";
    let mut first_only = load(file);
    first_only.all_violations = false;
    let all = load(file);
    let seed = 4;
    let one = first_only.runner().run(seed, false);
    let every = all.runner().run(seed, false);
    assert_eq!(one.violations.len(), 1, "{:?}", one.violations);
    assert!(every.violations.len() > 1, "{:?}", every.violations);
    assert!(every
        .violations
        .iter()
        .any(|v| v.property == Property::Liveness));
}

/// Same seed, same diagnosis, byte for byte.
#[test]
fn diagnoses_are_deterministic() {
    let scenario = load("scenarios/lock-original.toml");
    for seed in 0..20 {
        let a = scenario.runner().run(seed, false);
        let b = scenario.runner().run(seed, false);
        let show = |r: &zk_sim::world::RunReport| -> Vec<String> {
            r.violations.iter().map(|v| v.to_string()).collect()
        };
        assert_eq!(show(&a), show(&b), "seed {seed}");
        assert!(a.violations.iter().all(|v| v.diagnosis.is_some()));
    }
}

/// Every mechanism a diagnosis can give is one a scenario may name.
#[test]
fn every_signature_seen_is_a_known_mechanism() {
    let scenario = load("scenarios/lock-original.toml");
    for seed in 0..100 {
        for violation in scenario.runner().run(seed, false).violations {
            let mechanism = &violation.diagnosis.as_ref().unwrap().mechanism;
            assert!(
                zk_sim::diagnosis::MECHANISMS.contains(&mechanism.as_str()),
                "seed {seed}: {mechanism} is not in MECHANISMS"
            );
        }
    }
}

/// The fixed lock (sans-IO) keeps holding while Disconnected; a client cut
/// off for longer than its session heard Disconnected, went on holding,
/// and another client acquired once the server expired its session. The
/// diagnosis names that (the holder knew its hold was in doubt), not a
/// holder that never heard of it (bug 8's pause, which keeps its label).
const PARTITIONED_HOLDER: &str = r#"
recipe = "lock"
variant = "fixed"
clients = 3
seeds = "0..200"
duration_ms = 30000
heal_ms = 20000

[config]
path = "/locks/key"
parents = ["/locks", "/locks/key"]

[workload]
cycles = 5
hold_ms = [1, 6000]
think_ms = [0, 20]

[timing]
session_timeout_ms = 2000

[faults.rates]
disconnects_per_s = 0.05
down_ms = [3000, 5000]

[properties]
check = ["mutual_exclusion"]
"#;

#[test]
fn a_holder_that_heard_disconnected_and_went_on_is_named_as_such() {
    let file = Path::new("partitioned-holder.toml");
    let scenario = Scenario::parse(file, PARTITIONED_HOLDER, builtin()).expect("it parses");
    let runner = scenario.runner();
    let mut named = 0;
    for seed in 0..200 {
        for violation in runner.run(seed, false).violations {
            let diagnosis = violation.diagnosis.as_ref().expect("diagnosed");
            assert_eq!(
                diagnosis.mechanism, "held-through-disconnect",
                "seed {seed}: {diagnosis}"
            );
            assert!(
                diagnosis.summary.contains("heard Disconnected at"),
                "{diagnosis}"
            );
            let holder = diagnosis.findings.iter().flat_map(|f| &f.moments);
            assert!(holder
                .into_iter()
                .any(|(_, what)| what.contains("went on holding")));
            named += 1;
        }
    }
    assert!(named > 0, "no two holders in 200 seeds");
}

/// The built-in recipes and the test's own buggy recipes: `counting_sem`
/// (counts its leases, then creates its node), `leftover_lock` (a timed
/// acquire that gives up leaves its node), `fixture_rwlock`'s
/// `later_writer` (a reader waits on a later writer) and `fixture_lock`'s
/// `stale_watch_drops` (a stale creation watch, the real wait's event
/// dropped).
fn with_test_recipes() -> &'static zk_sim::scenario::SimRecipes {
    static REGISTRY: OnceLock<Registry> = OnceLock::new();
    REGISTRY
        .get_or_init(|| {
            let acquire = |timeout_ms| SemaphoreCall::Acquire {
                count: 1,
                timeout_ms,
            };
            let calls = HoldCalls::new(acquire(None), SemaphoreCall::Return);
            let counting = Variant::hold("counting", "counts, then creates", calls, |c| {
                counting::CountingSemaphore::new(c.path.clone(), c.unique_id, c.max_leases)
            })
            .needs_existing_path();
            let calls = HoldCalls::any_of(
                vec![acquire(Some(10)), acquire(None)],
                SemaphoreCall::Return,
            );
            let leftover = Variant::hold("leftover", "gives up, leaves its node", calls, |c| {
                leftover::LeftoverLock::new(c.path.clone(), c.unique_id)
            })
            .needs_existing_path();
            let (read, write) = (
                SharedLockCall::Acquire {
                    mode: LockMode::Read,
                },
                SharedLockCall::Acquire {
                    mode: LockMode::Write,
                },
            );
            let later = Bugs {
                reader_waits_on_later_writer: true,
                ..Bugs::NONE
            };
            let calls = HoldCalls::any_of(vec![read, write], SharedLockCall::Release);
            let later_writer =
                Variant::hold("later_writer", "waits on a later writer", calls, move |c| {
                    FixtureLock::new(c.path.clone(), c.unique_id, later)
                })
                .needs_existing_path();
            let dropping = Bugs {
                stale_watch: true,
                drops_deleted_event: true,
                ..Bugs::NONE
            };
            let calls = HoldCalls::new(write, SharedLockCall::Release);
            let stale_watch =
                Variant::hold("stale_watch_drops", "drops its event", calls, move |c| {
                    FixtureLock::new(c.path.clone(), c.unique_id, dropping)
                })
                .needs_existing_path();
            let calls = zkcheck::shapes::HoldCall::calls();
            let read_then_watch =
                Variant::hold("read_then_watch", "reads, then watches", calls, |c| {
                    baton::ReadThenWatch::new(&c.path, c.unique_id)
                })
                .needs_existing_path();
            Registry::builtin()
                .with(
                    RecipeEntry::new("counting_sem", RecipeKind::Semaphore, "/dl")
                        .variant(counting),
                )
                .with(
                    RecipeEntry::new("fixture_baton", RecipeKind::ExclusiveLock, "/dl")
                        .variant(read_then_watch),
                )
                .with(
                    RecipeEntry::new("leftover_lock", RecipeKind::Semaphore, "/dl")
                        .variant(leftover),
                )
                .with(
                    RecipeEntry::new("fixture_rwlock", RecipeKind::SharedLock, "/dl")
                        .variant(later_writer),
                )
                .with(
                    RecipeEntry::new("fixture_lock", RecipeKind::ExclusiveLock, "/dl")
                        .variant(stale_watch),
                )
        })
        .sim_recipes()
}

/// A lock kept in a persistent node's data, read and then watched in two
/// requests (`diagnosis_precision/baton.rs`): a release between the two is
/// a lost wake-up no mechanism names. It is `undiagnosed` with what the
/// client waits on, never `waits-on-finished-client` (no client is bound
/// to a persistent node).
#[test]
fn a_wake_up_lost_on_a_persistent_node_is_undiagnosed() {
    let scenario = test_scenario(
        "fixture_baton",
        "read_then_watch",
        "[workload]\ncycles = 5\nhold_ms = [1, 10]\nthink_ms = [0, 10]\n\n\
         [properties]\ncheck = [\"liveness\"]\n",
    );
    let counts = mechanisms(&scenario, 0..100, "liveness", |seed, diagnosis| {
        let waits = diagnosis
            .findings
            .iter()
            .find(|f| f.what.contains("a persistent node"));
        assert!(waits.is_some(), "seed {seed}: {diagnosis:#?}");
    });
    assert_eq!(
        counts.keys().collect::<Vec<_>>(),
        ["undiagnosed"],
        "{counts:?}"
    );
}

/// A scenario of one of the test's recipes: 3 clients, `body` appended.
fn test_scenario(recipe: &str, variant: &str, body: &str) -> Scenario {
    let text = format!(
        "recipe = \"{recipe}\"\nvariant = \"{variant}\"\nclients = 3\nduration_ms = 5000\nheal_ms = 10000\n\n\
         [config]\npath = \"/dl\"\nparents = [\"/dl\"]\n\n{body}"
    );
    Scenario::parse(Path::new("test-recipe.toml"), &text, with_test_recipes())
        .unwrap_or_else(|error| panic!("{error}"))
}

/// The mechanisms of `property`'s violations over `seeds`, counted; each
/// diagnosis is handed to `each` first.
fn mechanisms(
    scenario: &Scenario,
    seeds: std::ops::Range<u64>,
    property: &str,
    mut each: impl FnMut(u64, &zk_sim::diagnosis::Diagnosis),
) -> std::collections::BTreeMap<String, usize> {
    let runner = scenario.runner();
    let mut counts = std::collections::BTreeMap::new();
    for seed in seeds {
        for violation in runner.run(seed, false).violations {
            if violation.property_name() != property {
                continue;
            }
            let diagnosis = violation.diagnosis.as_ref().expect("diagnosed");
            each(seed, diagnosis);
            *counts.entry(diagnosis.mechanism.clone()).or_default() += 1;
        }
    }
    counts
}

/// A 2-lease semaphore that counts its leases and then creates its node,
/// 3 clients.
const COUNTING_SEMAPHORE: &str = r#"
recipe = "counting_sem"
variant = "counting"
clients = 3
duration_ms = 5000
heal_ms = 10000

[config]
path = "/dl"
parents = ["/dl"]
max_leases = 2

[workload]
cycles = 3
hold_ms = [1, 20]
think_ms = [0, 20]

[properties]
check = ["mutual_exclusion"]
"#;

/// Its holders never sort (their names, `lease-<id>-`, sort by the
/// client's id): a third holder is named by the order of its events, a
/// count read before another holder's create, never by a name order.
#[test]
fn a_semaphore_that_counts_then_creates_is_named_so_never_by_name_order() {
    let file = Path::new("counting-semaphore.toml");
    let scenario =
        Scenario::parse(file, COUNTING_SEMAPHORE, with_test_recipes()).expect("it parses");
    let runner = scenario.runner();
    let mut mechanisms = std::collections::BTreeMap::<String, usize>::new();
    for seed in 0..200 {
        for violation in runner.run(seed, false).violations {
            let diagnosis = violation.diagnosis.as_ref().expect("diagnosed");
            assert_ne!(
                diagnosis.mechanism, "sorted-by-name-not-sequence",
                "seed {seed}: {diagnosis}"
            );
            if diagnosis.mechanism == "counted-before-creating" {
                assert!(
                    diagnosis.summary.contains("after that count"),
                    "{diagnosis}"
                );
                let moments = diagnosis.findings.iter().flat_map(|f| &f.moments);
                let listed = moments
                    .into_iter()
                    .filter(|(_, what)| what.contains("its node not among them"))
                    .count();
                assert!(listed >= 2, "each holder's count is shown: {diagnosis}");
            }
            *mechanisms.entry(diagnosis.mechanism.clone()).or_default() += 1;
        }
    }
    let named = mechanisms
        .get("counted-before-creating")
        .copied()
        .unwrap_or(0);
    let all: usize = mechanisms.values().sum();
    assert!(all > 20, "too few violations to judge: {mechanisms:?}");
    assert!(named * 100 >= all * 95, "{mechanisms:?}");
}

/// A timed acquire that gives up leaves its node; a later untimed acquire
/// of the same client waits on it: the node of its own abandoned attempt
/// (`leftover-own-node`), not a node it fails to recognise.
#[test]
fn a_client_waiting_on_the_node_its_abandoned_attempt_left_is_named_so() {
    let scenario = test_scenario(
        "leftover_lock",
        "leftover",
        "[workload]\ncycles = 4\nhold_ms = [5, 30]\nthink_ms = [0, 10]\n\n[properties]\ncheck = [\"liveness\"]\n",
    );
    let counts = mechanisms(&scenario, 0..200, "liveness", |seed, diagnosis| {
        assert_ne!(
            diagnosis.mechanism, "waits-on-own-node",
            "seed {seed}: {diagnosis}"
        );
        for finding in &diagnosis.findings {
            if finding.mechanism == "leftover-own-node" {
                assert!(
                    finding.what.contains("that attempt timed out"),
                    "{diagnosis}"
                );
            }
        }
    });
    assert!(
        counts.get("leftover-own-node").copied().unwrap_or(0) > 0,
        "{counts:?}"
    );
}

/// A reader that waits on a later writer while the writer waits on it:
/// `circular-wait`, the cycle proven by each one's wait; never
/// `waits-on-own-node` (neither fails to recognise its node).
#[test]
fn a_reader_waiting_on_a_later_writer_is_a_proven_circular_wait() {
    let scenario = test_scenario(
        "fixture_rwlock",
        "later_writer",
        "[workload]\ncycles = 3\nhold_ms = [1, 10]\nthink_ms = [0, 10]\n\n[properties]\ncheck = [\"liveness\"]\n",
    );
    let counts = mechanisms(&scenario, 0..200, "liveness", |seed, diagnosis| {
        assert_ne!(
            diagnosis.mechanism, "waits-on-own-node",
            "seed {seed}: {diagnosis}"
        );
        if diagnosis.mechanism == "circular-wait" {
            assert!(
                diagnosis
                    .findings
                    .iter()
                    .any(|f| f.why.contains("which comes after its own node")),
                "{diagnosis}"
            );
        }
    });
    let circular = counts.get("circular-wait").copied().unwrap_or(0);
    assert!(circular > 0, "{counts:?}");
    for mechanism in counts.keys() {
        assert!(
            ["circular-wait", "undiagnosed", "queued-behind-stuck-client"]
                .contains(&mechanism.as_str()),
            "{counts:?}"
        );
    }
}

/// A lock that keeps a stale creation watch (on a node nobody creates) and
/// drops the deletion event of the node it waited on: what it waits on now
/// is that dropped event (its last request set the watch that fired), not
/// the stale creation watch still armed.
#[test]
fn a_stale_creation_watch_is_not_what_the_client_waits_on_now() {
    let scenario = test_scenario(
        "fixture_lock",
        "stale_watch_drops",
        "[workload]\ncycles = 2\nhold_ms = [1, 10]\nthink_ms = [0, 10]\n\n[properties]\ncheck = [\"liveness\"]\n",
    );
    let counts = mechanisms(&scenario, 0..100, "liveness", |seed, diagnosis| {
        assert!(
            !diagnosis.summary.contains(": waits on a creation watch"),
            "seed {seed}: {diagnosis}"
        );
        if diagnosis.mechanism == "event-dropped" {
            assert!(
                diagnosis.summary.contains("the watch still armed is stale"),
                "{diagnosis}"
            );
        }
    });
    let dropped = counts.get("event-dropped").copied().unwrap_or(0);
    let all: usize = counts.values().sum();
    assert!(all > 0 && dropped * 100 >= all * 95, "{counts:?}");
}
