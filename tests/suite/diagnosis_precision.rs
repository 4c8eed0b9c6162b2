//! Diagnosis precision on a labelled set (issue 32, item 2): every catalog
//! entry (`scenarios/bugs/*.toml`), every violating fixture scenario
//! (`tests/fixtures/`), and fixture recipes written to reproduce the
//! diagnoses users found confidently wrong (`diagnosis_precision/
//! fixtures.rs`): a lock that keeps a stale creation watch beside the
//! watch it waits on, a lock holding two nodes, a reader that holds under
//! a writer, a delete that fails at a reconnect attempt; and shapes the
//! catalog lacks (issue 40): a semaphore that counts before it creates, a
//! timed acquire that leaves its node, a reader that waits on a later
//! writer, a stale creation watch beside a dropped event, a wake-up lost
//! between a read and a watch (right answer: `undiagnosed`).
//!
//! Each run's failing seeds must name an accepted mechanism; precision per
//! mechanism (correct labels / labels given) must be at least 95%. The
//! default test runs a few hundred seeds; the full measurement (the
//! catalog's whole seed ranges) is `#[ignore]`d:
//! `cargo test --release --workspace --test suite -- --ignored --nocapture diagnosis_precision::`
//! prints the table BENCHMARKS.md shows.

// Runs the simulator, which exists only with `--cfg madsim` (.cargo/config.toml).
#![cfg(madsim)]

// Shared with diagnosis.rs, which uses a few of their bugs.
#[path = "../diagnosis_precision/baton.rs"]
pub(crate) mod baton;
#[path = "../diagnosis_precision/counting.rs"]
pub(crate) mod counting;
#[path = "../diagnosis_precision/fixtures.rs"]
pub(crate) mod fixtures;
#[path = "../diagnosis_precision/leftover.rs"]
pub(crate) mod leftover;

use fixtures::{Bugs, FixtureLock, Release};
use std::ops::Range;
use std::path::Path as FsPath;
use std::sync::OnceLock;
use zk_recipes::semaphore::SemaphoreCall;
use zk_recipes::shared_lock::{LockMode, SharedLockCall};
use zk_recipes::zk::Path;
use zk_sim::oracles::Property;
use zk_sim::precision::{measure, Labelled, PrecisionReport, UNDIAGNOSED};
use zk_sim::scenario::Scenario;
use zkcheck::{HoldCalls, RecipeEntry, RecipeKind, Registry, Variant};

/// The floor every mechanism's precision is held to.
const FLOOR: f64 = 0.95;

fn dir() -> Path {
    Path::new("/dl").expect("a path")
}

/// The built-in recipes and the fixture locks: `fixture_lock` (every
/// client writes: an exclusive lock) and `fixture_rwlock` (reads and
/// writes), one variant per bug.
fn registry() -> &'static Registry {
    static REGISTRY: OnceLock<Registry> = OnceLock::new();
    REGISTRY.get_or_init(|| {
        let write = SharedLockCall::Acquire {
            mode: LockMode::Write,
        };
        let read = SharedLockCall::Acquire {
            mode: LockMode::Read,
        };
        let exclusive = |name: &str, bugs: Bugs| {
            let calls = HoldCalls::new(write, SharedLockCall::Release);
            Variant::hold(name, "a test-only lock", calls, move |c| {
                FixtureLock::new(dir(), c.unique_id, bugs)
            })
            .needs_existing_path()
        };
        let shared = |name: &str, bugs: Bugs| {
            let calls = HoldCalls::any_of(vec![read, write], SharedLockCall::Release);
            Variant::hold(name, "a test-only read/write lock", calls, move |c| {
                FixtureLock::new(dir(), c.unique_id, bugs)
            })
            .needs_existing_path()
        };
        let bugs = |stale_watch, release| Bugs {
            stale_watch,
            release,
            ..Bugs::NONE
        };
        Registry::builtin()
            .with(
                RecipeEntry::new("fixture_lock", RecipeKind::ExclusiveLock, "/dl")
                    .variant(exclusive("stale_watch_forget", bugs(true, Release::Forget)))
                    .variant(exclusive("forget", bugs(false, Release::Forget)))
                    .variant(exclusive("delete_once", bugs(false, Release::Once)))
                    .variant(exclusive("fixed", Bugs::NONE))
                    .variant(exclusive(
                        "stale_watch_drops",
                        Bugs {
                            stale_watch: true,
                            drops_deleted_event: true,
                            ..Bugs::NONE
                        },
                    )),
            )
            .with(
                RecipeEntry::new("fixture_rwlock", RecipeKind::SharedLock, "/dl")
                    .variant(shared(
                        "predecessor_only",
                        Bugs {
                            reader_checks_predecessor_only: true,
                            ..Bugs::NONE
                        },
                    ))
                    .variant(shared("fixed", Bugs::NONE))
                    .variant(shared(
                        "later_writer",
                        Bugs {
                            reader_waits_on_later_writer: true,
                            ..Bugs::NONE
                        },
                    )),
            )
            .with(semaphores())
            .with(
                RecipeEntry::new("fixture_baton", RecipeKind::ExclusiveLock, "/dl").variant(
                    Variant::hold(
                        "read_then_watch",
                        "reads, then watches",
                        zkcheck::shapes::HoldCall::calls(),
                        |c| baton::ReadThenWatch::new(&dir(), c.unique_id),
                    )
                    .needs_existing_path(),
                ),
            )
    })
}

/// The semaphore-shaped fixtures (issue 40): `counting_sem` counts its
/// leases, then creates its node; `leftover_lock`'s timed acquire that
/// gives up leaves its node.
fn semaphores() -> RecipeEntry {
    let acquire = |timeout_ms| SemaphoreCall::Acquire {
        count: 1,
        timeout_ms,
    };
    let calls = HoldCalls::new(acquire(None), SemaphoreCall::Return);
    let counting = Variant::hold("counting", "counts, then creates", calls, |c| {
        counting::CountingSemaphore::new(dir(), c.unique_id, c.max_leases)
    })
    .needs_existing_path();
    let calls = HoldCalls::any_of(
        vec![acquire(Some(10)), acquire(None)],
        SemaphoreCall::Return,
    );
    let leftover = Variant::hold("leftover", "gives up, leaves its node", calls, |c| {
        leftover::LeftoverLock::new(dir(), c.unique_id)
    })
    .needs_existing_path();
    RecipeEntry::new("fixture_semaphore", RecipeKind::Semaphore, "/dl")
        .variant(counting)
        .variant(leftover)
}

fn load(file: &str) -> Scenario {
    let path = FsPath::new(env!("CARGO_MANIFEST_DIR")).join(file);
    Scenario::load(&path, registry().sim_recipes()).unwrap_or_else(|e| panic!("{file}: {e}"))
}

/// A fixture scenario: `recipe`'s `variant`, 3 clients, `body` (workload,
/// faults, properties) appended.
fn fixture(recipe: &str, variant: &str, body: &str) -> Scenario {
    let text = format!(
        r#"description = "diagnosis precision fixture"
recipe = "{recipe}"
variant = "{variant}"
clients = 3
duration_ms = 5000
heal_ms = 10000

[config]
path = "/dl"
parents = ["/dl"]

{body}"#
    );
    let file = FsPath::new("diagnosis-precision-fixture.toml");
    Scenario::parse(file, &text, registry().sim_recipes()).unwrap_or_else(|e| panic!("{e}"))
}

/// The stuck mechanisms of the original lock (seed 000's WriteLock) that
/// need no fault or the faults of bugs 3 and 10: bug 9 (no fault), bug 10
/// (a lost delete), bug 3 (a lost create reply; a loss before apply loses
/// the reply of the create in flight before it too). A failing seed of
/// one of its entries may rightly show any of them.
const LOCK_ORIGINAL: [&str; 3] = ["watch-on-deleted-node", "release-lost", "waits-on-own-node"];

/// The stuck mechanisms of the original election under lost replies:
/// bug 2's orphan (a create's reply lost, created again), the same
/// re-create after another request's reply was lost (its first node, whose
/// name it knew, stays: two nodes), and a lost getChildren it never sends
/// again (seed 0 of bug 2's entry: the first contender waits with no watch),
/// and a failed call's node left behind (the original's `fail`: "the node
/// stays"), which its next attempt waits on.
const ELECTION_ORIGINAL: &[&str] = &[
    "orphan-node",
    "holds-two-nodes",
    "request-lost-not-retried",
    "leftover-own-node",
];

/// The catalog: each entry's property and mechanism, over `seeds`, and the
/// other mechanisms its recipe rightly shows there (the same variant's
/// other bugs). A queue's exactly-once bug rightly shows as a lost or a
/// duplicated item.
fn catalog(seeds: impl Fn(&str) -> Range<u64>) -> Vec<Labelled> {
    let entries: &[(&str, Property, &[&str])] = &[
        (
            "bug1-prefix-ordering",
            Property::Fifo,
            &["sorted-by-name-not-sequence"],
        ),
        (
            "bug2-nonidempotent-create",
            Property::Liveness,
            ELECTION_ORIGINAL,
        ),
        (
            "bug3-recovered-id-not-full-path",
            Property::Liveness,
            &["waits-on-own-node", LOCK_ORIGINAL[0], LOCK_ORIGINAL[1]],
        ),
        (
            "bug4-herd-effect",
            Property::Herd,
            &["one-release-wakes-many"],
        ),
        (
            "bug5a-barrier-host-names",
            Property::Liveness,
            &["name-collision"],
        ),
        (
            "bug5b-barrier-leave-race",
            Property::Liveness,
            &["children-left-before-read"],
        ),
        (
            "bug6-queue-lost-item",
            Property::ExactlyOnce,
            &["item-lost", "item-delivered-twice"],
        ),
        (
            "bug6-tutorial-queue",
            Property::ExactlyOnce,
            &["item-lost", "item-delivered-twice"],
        ),
        (
            "bug7-lock-nodes-left",
            Property::NoLeaks,
            &["parent-never-deleted"],
        ),
        (
            "bug8-pause-two-holders",
            Property::MutualExclusion,
            &["stale-holder-after-expiry"],
        ),
        (
            "bug9-predecessor-vanishes",
            Property::Liveness,
            &["watch-on-deleted-node"],
        ),
        (
            "bug10-release-lost",
            Property::Liveness,
            &["release-lost", LOCK_ORIGINAL[0], LOCK_ORIGINAL[2]],
        ),
        (
            "bug11-stale-recovery-read",
            Property::Liveness,
            &["orphan-node"],
        ),
        (
            "bug14-adopted-abandoned-node",
            Property::MutualExclusion,
            &["adopted-abandoned-node"],
        ),
    ];
    entries
        .iter()
        .map(|(name, property, accept)| {
            let scenario = load(&format!("scenarios/bugs/{name}.toml"));
            Labelled::new(*name, scenario, seeds(name), *property, accept)
        })
        .collect()
}

/// Where the stale-recovery-read scenario's seeds start (bug 11's and the
/// fixture's: their first failing seed is 586).
const STALE_READ_FROM: u64 = 580;

/// The fixtures: the violating fixture scenario of `tests/fixtures/` and
/// the fixture locks.
fn fixtures(seeds: Range<u64>) -> Vec<Labelled> {
    let lock = |cycles: u32| {
        format!("[workload]\ncycles = {cycles}\nhold_ms = [1, 10]\nthink_ms = [0, 10]\n")
    };
    let leaks_and_liveness = "[properties]\ncheck = [\"liveness\", \"no_leaks\"]\n";
    vec![
        Labelled::new(
            "fixture: unsynced lock, stale recovery read",
            load("tests/fixtures/lock-unsynced-stale-recovery.toml"),
            // Its first failing seeds are 586 and 856: its window starts
            // at 580.
            STALE_READ_FROM + seeds.start..STALE_READ_FROM + seeds.end,
            Property::Liveness,
            &["orphan-node"],
        ),
        // A stale creation watch on a node nobody creates, beside the
        // watch it waits on: a holder that never deleted its node.
        Labelled::new(
            "fixture: stale creation watch, release forgets its node",
            fixture(
                "fixture_lock",
                "stale_watch_forget",
                &format!("{}{leaks_and_liveness}", lock(1)),
            ),
            seeds.clone(),
            Property::Liveness,
            &["waits-on-finished-client"],
        )
        .and(Property::NoLeaks, &["never-deleted"]),
        // A holder that forgot its node and contends again: two nodes.
        Labelled::new(
            "fixture: release forgets its node, next cycle holds two",
            fixture(
                "fixture_lock",
                "forget",
                &format!("{}{leaks_and_liveness}", lock(3)),
            ),
            seeds.clone(),
            Property::Liveness,
            &["holds-two-nodes"],
        )
        .and(Property::NoLeaks, &["never-deleted"]),
        // A reader that holds under a writer (names read-/write-).
        Labelled::new(
            "fixture: reader checks its predecessor only",
            fixture(
                "fixture_rwlock",
                "predecessor_only",
                &format!("{}[properties]\ncheck = [\"mutual_exclusion\"]\n", lock(5)),
            ),
            seeds.clone(),
            Property::MutualExclusion,
            &["two-live-holders"],
        ),
        // A delete sent once: queued while disconnected, it fails at a
        // reconnect attempt (or is lost on the wire) and is not retried.
        Labelled::new(
            "fixture: delete sent once, lost or failed at a reconnect",
            fixture(
                "fixture_lock",
                "delete_once",
                &format!(
                    "[workload]\ncycles = 5\nhold_ms = [50, 300]\nthink_ms = [0, 20]\n\n\
                     [timing]\nsession_timeout_ms = 10000\n\n\
                     [faults.rates]\ndisconnects_per_s = 1.0\ndown_ms = [300, 1500]\n\n\
                     {leaks_and_liveness}"
                ),
            ),
            seeds,
            Property::Liveness,
            &["release-lost"],
        )
        .and(Property::NoLeaks, &["delete-lost"]),
    ]
}

/// Recipes of shapes the catalog does not have (issue 40, item 3): a
/// semaphore that counts before it creates, a timed acquire that leaves
/// its node, a reader that waits on a later writer, a stale creation watch
/// beside a dropped event.
fn outside_shapes(seeds: Range<u64>) -> Vec<Labelled> {
    let cycles = |n: u32, check: &str| {
        format!(
            "[workload]\ncycles = {n}\nhold_ms = [1, 20]\nthink_ms = [0, 20]\n\n\
             [properties]\ncheck = [\"{check}\"]\n"
        )
    };
    vec![
        Labelled::new(
            "fixture: semaphore counts its leases, then creates",
            fixture(
                "fixture_semaphore",
                "counting",
                &format!("max_leases = 2\n\n{}", cycles(3, "mutual_exclusion")),
            ),
            seeds.clone(),
            Property::MutualExclusion,
            &["counted-before-creating"],
        ),
        // Others blocked by the leftover wait on a client holding two nodes,
        // or, once its workload is done, on a finished client's node.
        Labelled::new(
            "fixture: a timed acquire that gives up leaves its node",
            fixture("fixture_semaphore", "leftover", &cycles(4, "liveness")),
            seeds.clone(),
            Property::Liveness,
            &[
                "leftover-own-node",
                "holds-two-nodes",
                "waits-on-finished-client",
            ],
        ),
        Labelled::new(
            "fixture: a reader waits on a later writer",
            fixture("fixture_rwlock", "later_writer", &cycles(3, "liveness")),
            seeds.clone(),
            Property::Liveness,
            &["circular-wait"],
        ),
        // A wake-up lost between a read and a watch: no mechanism names it.
        Labelled::new(
            "fixture: a baton read, then watched",
            fixture("fixture_baton", "read_then_watch", &cycles(5, "liveness")),
            seeds.clone(),
            Property::Liveness,
            &[UNDIAGNOSED],
        ),
        Labelled::new(
            "fixture: stale creation watch, deletion event dropped",
            fixture("fixture_lock", "stale_watch_drops", &cycles(2, "liveness")),
            seeds,
            Property::Liveness,
            &["event-dropped"],
        ),
    ]
}

fn assert_floor(report: &PrecisionReport) {
    let below = report.below(FLOOR);
    assert!(
        below.is_empty(),
        "precision below {:.0}%: {below:?}\nmislabels: {:#?}\n{}",
        FLOOR * 100.0,
        report.mislabels,
        report.table()
    );
}

/// The cheap labelled set: 20 seeds per catalog entry (for bug 11, whose
/// first failing seed is 586, 20 around it; 60 for bug 14, whose first
/// failing seeds are 35 and 56), 60 per fixture (about 600 runs, a second).
#[test]
fn every_mechanism_is_right_at_least_95_percent_of_the_time() {
    let mut set = catalog(|name| match name {
        "bug11-stale-recovery-read" => STALE_READ_FROM..STALE_READ_FROM + 20,
        "bug14-adopted-abandoned-node" => 0..60,
        _ => 0..20,
    });
    set.extend(fixtures(0..60));
    set.extend(outside_shapes(0..60));
    let report = measure(&set);
    assert_floor(&report);
    for run in &report.runs {
        // A run whose right answer is `undiagnosed` gives no label.
        let undiagnosed = run.name.contains("baton") && run.undiagnosed > 0;
        assert!(
            run.correct > 0 || undiagnosed,
            "{} ({}): no failing seed labelled right: {run:?}",
            run.name,
            run.property
        );
    }
}

/// The cases users found, one seed each: the mechanisms the old
/// diagnosis gave them are gone.
#[test]
fn the_reported_mislabels_are_gone() {
    let mut set = fixtures(0..30);
    set.remove(0);
    let report = measure(&set);
    for wrong in [
        "watch-on-deleted-node",
        "circular-wait",
        "sorted-by-name-not-sequence",
    ] {
        assert!(
            !report.mechanisms.contains_key(wrong),
            "{wrong} given: {}",
            report.table()
        );
    }
    let leaks = report
        .runs
        .iter()
        .find(|r| r.name.contains("delete sent once") && r.property == "no_leaks")
        .expect("the delete fixture labels no_leaks");
    assert_eq!(
        leaks.labels.get("never-deleted"),
        None,
        "a delete that was tried is not 'never sent': {leaks:?}"
    );
}

/// The full measurement BENCHMARKS.md shows: every catalog entry's whole
/// seed range, 300 seeds per fixture.
#[test]
#[ignore = "a measurement (about a minute in release): cargo test --release --workspace --test suite -- --ignored --nocapture diagnosis_precision::"]
fn full_measurement() {
    let mut set = catalog(|name| {
        let scenario = load(&format!("scenarios/bugs/{name}.toml"));
        scenario.seeds.first..scenario.seeds.last + 1
    });
    set.extend(fixtures(0..300));
    set.extend(outside_shapes(0..300));
    let report = measure(&set);
    println!("{}", report.table());
    for mislabel in &report.mislabels {
        println!("mislabel: {mislabel:?}");
    }
    assert_floor(&report);
}
