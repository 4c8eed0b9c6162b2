//! Every known bug of /work/shared/known-bugs.md in reach of a small model:
//! `zkcheck check` finds it on the `original` variant, with a shortest
//! counterexample (BFS) whose length is pinned here and is no longer than
//! the hand-written reproduction in `sim/tests/recipe_*.rs`. Each
//! reproduction is replayed step for step on the stepper (cited by test
//! name) to count its steps at the model's granularity.

use crate::common::{check, counterexample_steps, Counting};
use zk_recipes::barrier::{BarrierCall, OriginalBarrier};
use zk_recipes::curator_lock::{self, OriginalCuratorLock};
use zk_recipes::election::{ElectionCall, OriginalElection};
use zk_recipes::lock::{LockCall, OriginalLock};
use zk_recipes::queue::{DistributedQueueOriginal, QueueCall, TutorialQueueOriginal};
use zk_recipes::shared_lock::{LockMode, OriginalSharedLock, SharedLockCall};
use zk_recipes::zk::Acls;
use zk_recipes::zk::{CreateMode, Path, Request};
use zk_recipes::{Observe, Recipe};
use zk_sim::stepper::Stepper;

fn path(text: &str) -> Path {
    Path::new(text).unwrap()
}

/// A stepper with persistent `nodes` created first.
fn counting<R: Recipe<Outcome: Observe>>(nodes: &[&str]) -> Counting<R> {
    let mut stepper = Stepper::new();
    for node in nodes {
        let create = Request::Create {
            path: path(node),
            data: Vec::new(),
            mode: CreateMode::Persistent,
            acl: Acls::Open,
        };
        stepper.admin(&create).unwrap();
    }
    Counting::new(stepper)
}

fn is_sequential_create(request: &Request) -> bool {
    matches!(
        request,
        Request::Create {
            mode: CreateMode::EphemeralSequential,
            ..
        }
    )
}

// ---- bug 1: prefix ordering ----

/// sim/tests/suite/recipe_lock.rs `bug1_prefix_ordering_original_two_holders`.
fn bug1_reproduction_steps() -> usize {
    let mut s = counting::<OriginalLock>(&["/locks"]);
    let holder = s.add_client(OriginalLock::new(path("/locks")), 200);
    let newcomer = s.add_client(OriginalLock::new(path("/locks")), 100);
    s.call(holder, LockCall::Lock);
    s.run_client(holder);
    s.call(newcomer, LockCall::Lock);
    s.run_client(newcomer);
    s.steps
}

#[test]
fn bug1_prefix_ordering_two_holders_and_fifo_broken() {
    let report = check("lock", "original", 2, "none");
    let reproduction = bug1_reproduction_steps();
    assert_eq!(reproduction, 18);
    assert_eq!(counterexample_steps(&report, "mutual_exclusion"), 18);
    assert_eq!(counterexample_steps(&report, "fifo"), 15);
    assert!(counterexample_steps(&report, "fifo") <= reproduction);
    assert!(counterexample_steps(&report, "mutual_exclusion") <= reproduction);
}

// ---- bug 2: non-idempotent sequential create ----

/// sim/tests/suite/recipe_election.rs `bug2_blind_retry_original_orphan_blocks_the_election`.
fn bug2_election_reproduction_steps() -> usize {
    let mut s = counting::<OriginalElection>(&["/leader"]);
    for i in 0..2 {
        s.add_client(OriginalElection::new(path("/leader")), 0x100 + i);
    }
    s.call(0, ElectionCall::Volunteer);
    s.apply_then_disconnect(0);
    s.reconnect(0);
    s.run();
    s.call(1, ElectionCall::Volunteer);
    s.run_client(1);
    s.run();
    s.steps
}

#[test]
fn bug2_blind_create_retry_election_orphan_blocks_everyone() {
    let report = check("election", "original", 2, "connection-loss=1");
    let steps = counterexample_steps(&report, "no_stuck_waiter");
    assert_eq!(steps, 10);
    assert!(
        steps <= bug2_election_reproduction_steps(),
        "{steps} > {}",
        bug2_election_reproduction_steps()
    );
    assert_eq!(counterexample_steps(&report, "no_leaks"), 14);
}

/// sim/tests/suite/recipe_shared_lock.rs `bug2_blind_retry_original_writer_waits_for_its_own_orphan`.
fn bug2_shared_lock_reproduction_steps() -> usize {
    let mut s = counting::<OriginalSharedLock>(&["/shared", "/shared/db"]);
    for i in 0..2 {
        s.add_client(OriginalSharedLock::new(path("/shared/db")), 0x10 * (i + 1));
    }
    s.call(
        0,
        SharedLockCall::Acquire {
            mode: LockMode::Write,
        },
    );
    s.advance_until(0, is_sequential_create);
    s.apply_then_disconnect(0);
    s.reconnect(0);
    s.run();
    s.call(
        1,
        SharedLockCall::Acquire {
            mode: LockMode::Read,
        },
    );
    s.run();
    s.steps
}

#[test]
fn bug2_blind_create_retry_shared_lock_writer_waits_for_its_orphan() {
    let report = check("shared_lock", "original", 2, "connection-loss=1");
    let steps = counterexample_steps(&report, "no_stuck_waiter");
    assert_eq!(steps, 16);
    assert!(
        steps <= bug2_shared_lock_reproduction_steps(),
        "{steps} > {}",
        bug2_shared_lock_reproduction_steps()
    );
}

// ---- bug 3: recovered id is a bare name ----

/// sim/tests/suite/recipe_lock.rs `bug3_bare_id_original_watches_itself_and_leaks`.
fn bug3_reproduction_steps() -> usize {
    let mut s = counting::<OriginalLock>(&["/locks"]);
    let a = s.add_client(OriginalLock::new(path("/locks")), 100);
    s.call(a, LockCall::Lock);
    s.advance_until(a, is_sequential_create);
    s.apply_then_disconnect(a);
    s.reconnect(a);
    s.run();
    s.call(a, LockCall::Unlock);
    s.run();
    s.steps
}

#[test]
fn bug3_bare_id_never_owner_and_leaks_its_node() {
    let report = check("lock", "original", 1, "connection-loss=1");
    let leak = counterexample_steps(&report, "no_leaks");
    assert_eq!(leak, 12);
    assert!(
        leak <= bug3_reproduction_steps(),
        "{leak} > {}",
        bug3_reproduction_steps()
    );
    assert_eq!(counterexample_steps(&report, "no_stuck_waiter"), 13);
}

// ---- bug 4: herd effect ----

/// sim/tests/suite/recipe_election.rs `bug4_herd_original_wakes_every_waiter_per_leader_change`
/// (five contenders; the leader resigns).
fn bug4_reproduction_steps() -> usize {
    let mut s = counting::<OriginalElection>(&["/leader"]);
    for i in 0..5 {
        s.add_client(OriginalElection::new(path("/leader")), 0x100 + i);
    }
    for client in 0..5 {
        s.call(client, ElectionCall::Volunteer);
        s.run_client(client);
    }
    s.run();
    s.call(0, ElectionCall::Resign);
    s.run_client(0);
    s.run();
    s.steps
}

#[test]
fn bug4_herd_one_release_wakes_every_contender() {
    // Herd bound 1 per release: the leader's resignation (a delete)
    // notifies both clients watching the election node's children.
    let report = check("election", "original", 2, "none");
    let steps = counterexample_steps(&report, "herd");
    assert_eq!(steps, 11);
    assert!(steps <= bug4_reproduction_steps());
    // The fixed election wakes only the successor, with three contenders too.
    let fixed = check("election", "fixed", 3, "none");
    assert_eq!(
        fixed.property("herd").unwrap().verdict,
        zk_models::run::Verdict::Holds
    );
}

// ---- bug 5: barrier ----

fn barrier_counting(host: impl Fn(i64) -> String) -> Counting<OriginalBarrier> {
    let mut s = counting::<OriginalBarrier>(&["/b1"]);
    for i in 0..2 {
        s.add_client(OriginalBarrier::new(path("/b1"), 2, host(i)), 0x100 + i);
    }
    s
}

/// sim/tests/suite/recipe_barrier.rs `bug5a_same_host_original_second_member_fails_and_barrier_never_fills`.
fn bug5a_reproduction_steps() -> usize {
    let mut s = barrier_counting(|_| "host-a".to_string());
    s.call(0, BarrierCall::Enter);
    s.run_client(0);
    s.call(1, BarrierCall::Enter);
    s.run_client(1);
    s.run();
    s.steps
}

#[test]
fn bug5a_same_host_members_collide_and_the_barrier_never_fills() {
    let report = check("barrier", "original_shared_host", 2, "none");
    let steps = counterexample_steps(&report, "no_stuck_waiter");
    assert_eq!(steps, 8);
    assert!(
        steps <= bug5a_reproduction_steps(),
        "{steps} > {}",
        bug5a_reproduction_steps()
    );
}

/// sim/tests/suite/recipe_barrier.rs `bug5b_leave_race_original_strands_both_members`.
fn bug5b_reproduction_steps() -> usize {
    let mut s = barrier_counting(|i| format!("host-{i}"));
    s.call(0, BarrierCall::Enter);
    s.run_client(0);
    s.call(1, BarrierCall::Enter);
    s.run_client(1);
    s.call(1, BarrierCall::Leave);
    s.run_client(1);
    s.run();
    s.steps
}

#[test]
fn bug5b_leave_race_strands_the_slow_member() {
    let report = check("barrier", "original", 2, "none");
    let steps = counterexample_steps(&report, "no_stuck_waiter");
    assert_eq!(steps, 16);
    assert!(
        steps <= bug5b_reproduction_steps(),
        "{steps} > {}",
        bug5b_reproduction_steps()
    );
}

// ---- bug 6: queue consumption ----

/// sim/tests/suite/recipe_queue.rs `bug6_delete_applied_then_connection_loss_*_original_loses_item`.
fn bug6_reproduction_steps<R: Recipe<Call = QueueCall, Outcome: Observe>>(
    make: impl Fn() -> R,
) -> usize {
    let mut s = counting::<R>(&["/q"]);
    for i in 0..2 {
        let client = s.add_client(make(), 100 + i);
        s.run_client(client);
    }
    for item in ["a", "b"] {
        s.call(0, QueueCall::Offer(item.as_bytes().to_vec()));
        s.run_client(0);
    }
    s.call(1, QueueCall::Take);
    for _ in 0..2 {
        assert!(s.send(1));
        while s.deliver(1) {}
    }
    s.apply_then_disconnect(1);
    s.reconnect(1);
    s.run_client(1);
    s.call(1, QueueCall::Take);
    s.run_client(1);
    s.steps
}

#[test]
fn bug6_applied_delete_with_lost_reply_loses_an_item() {
    for variant in ["original", "tutorial_original"] {
        let report = check("queue", variant, 2, "connection-loss=1");
        let steps = counterexample_steps(&report, "exactly_once");
        assert_eq!(steps, 15, "{variant}");
        let reproduction = match variant {
            "original" => bug6_reproduction_steps(|| DistributedQueueOriginal::new(path("/q"))),
            _ => bug6_reproduction_steps(|| TutorialQueueOriginal::new(path("/q"))),
        };
        assert!(steps <= reproduction, "{variant}: {steps} > {reproduction}");
    }
}

// ---- bug 7: lock nodes left behind ----

fn curator_counting() -> Counting<OriginalCuratorLock> {
    let mut s = Counting::new(Stepper::new());
    for i in 0..2 {
        s.add_client(
            OriginalCuratorLock::new(path("/locks/order-17"), i as u64 + 1),
            0x10 * (i + 1),
        );
    }
    s
}

const ACQUIRE: curator_lock::LockCall = curator_lock::LockCall::Acquire { timeout_ms: None };

/// sim/tests/suite/recipe_curator_lock.rs `bug7_nodes_left_behind_original_leaks_the_parents`.
fn bug7_reproduction_steps() -> usize {
    let mut s = curator_counting();
    for client in 0..2 {
        s.call(client, ACQUIRE);
        s.run();
        s.call(client, curator_lock::LockCall::Release);
        s.run();
    }
    s.steps
}

#[test]
fn bug7_curator_lock_leaves_its_parents_behind() {
    let report = check("curator_lock", "original", 2, "none");
    let steps = counterexample_steps(&report, "no_leaks");
    assert_eq!(steps, 22);
    assert!(
        steps <= bug7_reproduction_steps(),
        "{steps} > {}",
        bug7_reproduction_steps()
    );
}

// ---- bug 8: two holders after a pause ----

/// sim/tests/suite/recipe_curator_lock.rs `bug8_expiry_noticed_original_holder_keeps_believing`.
fn bug8_reproduction_steps() -> usize {
    let mut s = curator_counting();
    s.call(0, ACQUIRE);
    s.run();
    s.call(1, ACQUIRE);
    s.run();
    s.expire(0);
    s.stepper.new_session(0, 0x11);
    s.run();
    s.steps
}

#[test]
fn bug8_pause_holder_is_never_told_and_overlaps_the_next() {
    let report = check("curator_lock", "original", 2, "expiry=1");
    let steps = counterexample_steps(&report, "expiry_reported");
    assert_eq!(steps, 13);
    assert!(
        steps <= bug8_reproduction_steps(),
        "{steps} > {}",
        bug8_reproduction_steps()
    );
    // The pause itself (a stale holder overlapping a live one) is reachable
    // for every lock, fixed or not; fencing tokens make it harmless.
    for variant in ["original", "fixed"] {
        let report = check("curator_lock", variant, 2, "expiry=1");
        let overlap = report.property("stale_holder_overlap").unwrap();
        assert_eq!(overlap.verdict, zk_models::run::Verdict::Found, "{variant}");
        assert_eq!(
            report.property("fenced_mutual_exclusion").unwrap().verdict,
            zk_models::run::Verdict::Holds
        );
    }
    let lock = check("lock", "original", 2, "expiry=1");
    assert_eq!(counterexample_steps(&lock, "expiry_reported"), 11);
}
