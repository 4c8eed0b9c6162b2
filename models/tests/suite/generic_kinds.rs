//! Queues and barriers get generic models, and several variants register as
//! a table: a queue or barrier registered with `Variant::queue` /
//! `Variant::barrier` (no model of its own) is model-checked from the same
//! constructor and calls the simulator runs, and explores exactly the
//! states of the shipped queue and barrier (whose registrations use the
//! same generic models); a `VariantTable` makes one variant per
//! `(name, description, flag)` row; the ready outcome and call shapes and
//! the `observe_outcomes!` / `observe_calls!` macros observe as written.

use zk_models::registry::shapes::{
    BarrierCall, BarrierOutcome, HoldCall, HoldOutcome, QueueCall as ReadyQueueCall,
    QueueOutcome as ReadyQueueOutcome,
};
use zk_models::run::{CheckReport, RunOptions, Strategy, Verdict};
use zk_models::{
    BarrierCalls, ClientContext, HoldCalls, QueueCalls, RecipeEntry, RecipeKind, Registry, Setup,
    Variant,
};
use zk_recipes::barrier::{self as barrier_recipes, FixedBarrier, OriginalBarrier};
use zk_recipes::lock::{FixedLock, LockCall};
use zk_recipes::queue::{FixedQueue, QueueCall};
use zk_recipes::{FencingToken, Hold, Observation, Observe};
use zk_sim::oracles::{CallObservation, ObserveCall};

/// A user's registrations of the shipped queue and barrier machines, under
/// other names and directories, with no model of their own.
fn users_registry() -> Registry {
    let queue_calls = QueueCalls::new(QueueCall::Offer, QueueCall::Take);
    let barrier_calls = BarrierCalls::new(
        barrier_recipes::BarrierCall::Enter,
        barrier_recipes::BarrierCall::Leave,
    );
    Registry::empty()
        .with(
            RecipeEntry::new("my_queue", RecipeKind::Queue, "/jobs").variant(
                Variant::queue("fixed", "receipts", queue_calls, |c: &ClientContext| {
                    FixedQueue::new(c.path.clone(), c.unique_id)
                })
                .needs_existing_path(),
            ),
        )
        .with(
            RecipeEntry::new("my_barrier", RecipeKind::Barrier, "/rendezvous")
                .variant(
                    Variant::barrier(
                        "original",
                        "tutorial",
                        barrier_calls.clone(),
                        |c: &ClientContext| {
                            OriginalBarrier::new(
                                c.path.clone(),
                                c.barrier_size,
                                format!("h{}", c.client),
                            )
                        },
                    )
                    .needs_existing_path(),
                )
                .variant(
                    Variant::barrier("fixed", "ready node", barrier_calls, |c: &ClientContext| {
                        FixedBarrier::new(c.path.clone(), c.barrier_size, c.unique_id)
                    })
                    .needs_existing_path(),
                ),
        )
}

fn check(registry: &Registry, recipe: &str, variant: &str, setup: Setup) -> CheckReport {
    let model = registry.model(recipe, variant).expect("a generic model");
    let options = RunOptions {
        strategy: Strategy::Bfs,
        threads: 1,
        max_depth: None,
        timeout: None,
        progress_every: None,
        memory_budget: None,
    };
    let report = model.check(&setup, &options);
    assert!(report.exhaustive, "{}", report.summary());
    report
}

fn verdict(report: &CheckReport, property: &str) -> Verdict {
    report
        .property(property)
        .unwrap_or_else(|| panic!("no property {property}\n{}", report.summary()))
        .verdict
}

#[test]
fn a_users_queue_is_checked_by_the_generic_model_as_the_shipped_one() {
    let report = check(&users_registry(), "my_queue", "fixed", Setup::new(2));
    assert!(report.failures().is_empty(), "{}", report.summary());
    // models/tests/suite/state_counts.rs pins 499 for the shipped fixed queue.
    assert_eq!(report.unique_states, 499);
    let fifo = check(
        &users_registry(),
        "my_queue",
        "fixed",
        Setup::new(2).with_cycles(2),
    );
    assert_eq!(verdict(&fifo, "fifo"), Verdict::Holds);
}

#[test]
fn a_users_barrier_is_checked_by_the_generic_model_as_the_shipped_one() {
    let report = check(&users_registry(), "my_barrier", "fixed", Setup::new(2));
    assert!(report.failures().is_empty(), "{}", report.summary());
    // models/tests/suite/state_counts.rs pins 1,053 for the shipped fixed barrier.
    assert_eq!(report.unique_states, 1_053);
}

#[test]
fn the_generic_barrier_model_finds_the_leave_race_of_bug_5b() {
    let report = check(&users_registry(), "my_barrier", "original", Setup::new(2));
    assert_eq!(verdict(&report, "no_stuck_waiter"), Verdict::Violated);
    assert_eq!(verdict(&report, "barrier"), Verdict::Holds);
}

fn lock_calls() -> HoldCalls<LockCall> {
    HoldCalls::new(LockCall::Lock, LockCall::Unlock)
}

/// Two variants of the fixed lock, one row each: the flag says whether it
/// skips the sync before its recovery read.
fn table_registry() -> Registry {
    let locks = zk_models::registry::VariantTable::hold(lock_calls(), |c, unsynced: bool| {
        if unsynced {
            FixedLock::without_recovery_sync(c.path.clone(), c.unique_id)
        } else {
            FixedLock::new(c.path.clone(), c.unique_id)
        }
    })
    .needs_existing_path();
    Registry::empty().with(
        RecipeEntry::new("table_lock", RecipeKind::ExclusiveLock, "/t").with_variants(locks.rows(
            [
                ("fixed", "syncs before its recovery read", false),
                ("unsynced", "no sync: fails on an ensemble only", true),
            ],
        )),
    )
}

#[test]
fn a_table_registers_one_variant_per_row_with_the_shared_settings() {
    let registry = table_registry();
    let entry = &registry.entries()[0];
    let rows: Vec<(&str, &str)> = entry
        .variants()
        .iter()
        .map(|v| (v.name(), v.about()))
        .collect();
    assert_eq!(
        rows,
        [
            ("fixed", "syncs before its recovery read"),
            ("unsynced", "no sync: fails on an ensemble only")
        ]
    );
    let spec = registry
        .sim_recipes()
        .find("table_lock")
        .expect("registered");
    for variant in &spec.variants {
        assert!(variant.needs_existing_path, "{}", variant.name);
        assert!(entry.variants().iter().all(Variant::has_model));
    }
}

#[test]
fn each_row_s_flag_reaches_its_constructor() {
    // The unsynced lock explores fewer states than the fixed one with a
    // connection loss (models/tests/suite/state_counts.rs: 1,642 against 1,810).
    let setup = || Setup::new(2).with_faults("connection-loss=1".parse().expect("faults"));
    let fixed = check(&table_registry(), "table_lock", "fixed", setup());
    let unsynced = check(&table_registry(), "table_lock", "unsynced", setup());
    assert!(fixed.failures().is_empty(), "{}", fixed.summary());
    assert_ne!(fixed.unique_states, unsynced.unique_states);
}

/// A user's own outcome and call enums, observed by the macros.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Outcome {
    Acquired(i64),
    Shared { token: i64 },
    Released,
    Failed(String),
    Took(Vec<u8>),
}

zk_models::observe_outcomes!(Outcome {
    Acquired(sequence) => acquired(sequence),
    Shared { token } => shared(token),
    Released => released(),
    Failed(why) => failed(why),
    Took(item) => taken(item),
});

/// An outcome enum that reports its own invariant: the macro declares it.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Checked {
    Held,
    Broke(String),
}

zk_models::observe_outcomes!(Checked {
    invariants: ["node_kept"];
    Held => acquired(1),
    Broke(why) => violated("node_kept", why),
});

#[test]
fn the_macro_declares_the_invariants_it_is_given() {
    assert_eq!(<Checked as Observe>::INVARIANTS, ["node_kept"]);
    assert!(<Outcome as Observe>::INVARIANTS.is_empty());
    assert_eq!(
        Checked::Broke("reset".into()).observe(),
        Observation::Violated {
            property: "node_kept".into(),
            detail: "reset".into()
        }
    );
    assert!(matches!(
        Checked::Held.observe(),
        Observation::Acquired { .. }
    ));
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Call {
    Lock,
    Put(Vec<u8>),
    Ping,
}

zk_models::observe_calls!(Call {
    Lock => acquire(),
    Put(item) => offer(item),
    Ping => other(),
});

#[test]
fn the_macros_observe_each_variant_as_its_arm_says() {
    assert_eq!(
        Outcome::Acquired(7).observe(),
        Observation::Acquired {
            hold: Hold::Exclusive,
            token: FencingToken(7)
        }
    );
    assert_eq!(
        Outcome::Shared { token: 3 }.observe(),
        Observation::Acquired {
            hold: Hold::Shared,
            token: FencingToken(3)
        }
    );
    assert_eq!(Outcome::Released.observe(), Observation::Released);
    assert_eq!(
        Outcome::Failed("no".into()).observe(),
        Observation::Failed {
            reason: "no".into()
        }
    );
    assert_eq!(
        Outcome::Took(b"x".to_vec()).observe(),
        Observation::Taken {
            item: b"x".to_vec()
        }
    );
    assert_eq!(Call::Lock.observe_call(), CallObservation::Acquire);
    assert_eq!(
        Call::Put(b"y".to_vec()).observe_call(),
        CallObservation::Offer {
            item: b"y".to_vec()
        }
    );
    assert_eq!(Call::Ping.observe_call(), CallObservation::Other);
}

#[test]
fn the_ready_shapes_observe_as_the_built_in_recipes_do() {
    assert_eq!(
        HoldOutcome::exclusive(4).observe(),
        Observation::Acquired {
            hold: Hold::Exclusive,
            token: FencingToken(4)
        }
    );
    assert_eq!(HoldOutcome::Lost.observe(), Observation::Lost);
    assert_eq!(
        HoldCall::calls(),
        HoldCalls::new(HoldCall::Acquire, HoldCall::Release)
    );
    assert_eq!(HoldCall::Release.observe_call(), CallObservation::Release);
    assert_eq!(
        ReadyQueueOutcome::Took(b"i".to_vec()).observe(),
        Observation::Taken {
            item: b"i".to_vec()
        }
    );
    assert!(matches!(
        ReadyQueueOutcome::Offered.observe(),
        Observation::Offered { .. }
    ));
    let queue = ReadyQueueCall::calls();
    assert_eq!(
        (queue.offer)(b"z".to_vec()).observe_call(),
        CallObservation::Offer {
            item: b"z".to_vec()
        }
    );
    assert_eq!(queue.take.observe_call(), CallObservation::Take);
    assert_eq!(BarrierOutcome::Left.observe(), Observation::Left);
    assert_eq!(
        BarrierCall::calls().enter.observe_call(),
        CallObservation::Enter
    );
    assert_eq!(
        BarrierOutcome::Failed("x".into()).observe(),
        Observation::Failed { reason: "x".into() }
    );
}
