//! The conformance suite: the in-memory server (`zk_sim::server::ZkServer`)
//! against a real ZooKeeper 3.8. Each case runs the same steps on both, each
//! under a fresh top-level node, and compares replies (errors and a failed
//! multi's index included), created names, stats (without absolute zxids and
//! times), children as sets and the watch events every session received.
//!
//! Hand-written cases cover each rule of the server; a property test adds
//! random sequences and shrinks a failure to a minimal sequence.
//!
//! Run: `scripts/zk-server start; cargo test --release --workspace --test real_server -- --ignored conformance::`
//! (`ZK_ADDR` overrides 127.0.0.1:2181; `CONFORMANCE_CASES` and
//! `CONFORMANCE_SEED` change the property test's case count and sequences).
//! Without a server the tests are ignored, and with `--ignored` they fail
//! saying so: they never pass without having run.

use crate::conformance_support::script::*;
use crate::conformance_support::{random, Failure, Harness};
use proptest::test_runner::{Config, RngAlgorithm, TestError, TestRng, TestRunner};
use std::sync::atomic::{AtomicUsize, Ordering};
use zk_recipes::zk::CreateMode::{self, *};
use zk_recipes::zk::ZkError::*;
use zk_recipes::zk::ANY_VERSION as ANY;

const TTL_LONG: CreateMode = PersistentWithTtl { ttl_ms: 3_600_000 };

#[test]
#[ignore = "needs a real ZooKeeper: scripts/zk-server start; cargo test --release --workspace --test real_server -- --ignored conformance::"]
fn sequential_names_count_every_child_create_per_parent() {
    let script = Script::new("sequential", 2)
        .on(0, persistent("~/a"))
        .ok()
        .on(0, create("~/a/lock-", b"", PersistentSequential))
        .ok()
        .on(1, create("~/a/lock-", b"x", EphemeralSequential))
        .ok()
        .on(0, persistent("~/a/plain"))
        .on(0, create("~/a/lock-", b"", PersistentSequential))
        .on(0, delete_any("~/a/lock-0000000000"))
        .ok()
        .on(0, delete_any("~/a/lock-0000000003"))
        .ok()
        .on(1, create("~/a/lock-", b"", EphemeralSequential))
        .on(0, create("~/a/other-", b"", PersistentSequential))
        .on(0, create("~/lock-", b"", PersistentSequential))
        .on(0, persistent("~/q"))
        .on(0, create("~/q/", b"", PersistentSequential))
        .ok()
        .on(
            0,
            create(
                "~/q/",
                b"",
                PersistentSequentialWithTtl { ttl_ms: 3_600_000 },
            ),
        )
        .on(1, get_children("~/a", false))
        .on(1, get_children("~/q", false))
        .on(0, exists("~/a", false))
        // A plain create can take the name the counter gives next: the
        // sequential create then fails, and does not advance the counter.
        .on(0, persistent("~/c"))
        .on(0, persistent("~/c/s-0000000001"))
        .on(0, create("~/c/s-", b"", PersistentSequential))
        .err(NodeExists)
        .on(0, create("~/c/s-", b"", EphemeralSequential))
        .err(NodeExists)
        .on(0, delete_any("~/c/s-0000000001"))
        .on(0, create("~/c/s-", b"", PersistentSequential))
        .ok()
        .on(0, get_children2("~/c", false));
    Harness::new().check(&script);
}

#[test]
#[ignore = "needs a real ZooKeeper: scripts/zk-server start; cargo test --release --workspace --test real_server -- --ignored conformance::"]
fn cversion_counts_child_creates_and_deletes() {
    let script = Script::new("cversion", 1)
        .on(0, persistent("~/p"))
        .on(0, exists("~/p", false))
        .on(0, persistent("~/p/a"))
        .on(0, create("~/p/e", b"", Ephemeral))
        .on(0, create("~/p/s-", b"", PersistentSequential))
        .on(0, get_children2("~/p", false))
        .on(0, delete_any("~/p/a"))
        .on(0, delete_any("~/p/e"))
        .on(0, exists("~/p", false))
        .on(0, set_data("~/p/s-0000000002", b"data", ANY))
        .on(0, exists("~/p", false))
        .on(0, persistent("~/p/s-0000000002"))
        .err(NodeExists)
        .on(0, exists("~/p", false))
        .on(0, create("~/p/s-", b"", PersistentSequential))
        .on(0, get_children2("~/p", false))
        .on(0, get_children2("~/p/s-0000000002", false))
        .on(0, delete_any("~/p/missing"))
        .err(NoNode)
        .on(0, get_children2("~", false));
    Harness::new().check(&script);
}

#[test]
#[ignore = "needs a real ZooKeeper: scripts/zk-server start; cargo test --release --workspace --test real_server -- --ignored conformance::"]
fn every_error_code() {
    let script = Script::new("errors", 2)
        .on(0, persistent("~/missing/child"))
        .err(NoNode)
        .on(0, create("~/missing/seq-", b"", PersistentSequential))
        .err(NoNode)
        .on(0, delete_any("~/missing"))
        .err(NoNode)
        .on(0, set_data("~/missing", b"x", ANY))
        .err(NoNode)
        .on(0, get_data("~/missing", false))
        .err(NoNode)
        .on(0, get_children("~/missing", false))
        .err(NoNode)
        .on(0, get_children2("~/missing", false))
        .err(NoNode)
        .on(0, check("~/missing", ANY))
        .err(NoNode)
        .on(0, exists("~/missing", false))
        .ok()
        .on(0, persistent("~/n"))
        .on(1, persistent("~/n"))
        .err(NodeExists)
        .on(1, create("~/n", b"", Ephemeral))
        .err(NodeExists)
        .on(0, persistent("~/n/child"))
        .on(1, delete_any("~/n"))
        .err(NotEmpty)
        .on(1, delete("~/n", 4))
        .err(BadVersion)
        .on(1, multi(vec![op_delete("~/n", 4)]))
        .multi_err(0, BadVersion)
        .on(0, delete("~/n/child", 1))
        .err(BadVersion)
        .on(0, set_data("~/n/child", b"x", 3))
        .err(BadVersion)
        .on(0, check("~/n/child", 1))
        .err(BadVersion)
        .on(0, check("~/n/child", 0))
        .ok()
        .on(1, create("~/eph", b"", Ephemeral))
        .on(0, persistent("~/eph/child"))
        .err(NoChildrenForEphemerals)
        .on(0, create("~/eph/seq-", b"", EphemeralSequential))
        .err(NoChildrenForEphemerals)
        .on(0, create("~/eph/c", b"", Container))
        .err(NoChildrenForEphemerals)
        .on(0, delete_any("~/eph"))
        .ok()
        .on(0, create("~/ttl0", b"", PersistentWithTtl { ttl_ms: 0 }))
        .err(BadArguments);
    Harness::new().check(&script);
}

/// multiRead, getEphemerals and getAllChildrenNumber through the live
/// adapter: each read of a multi-read with its own result, a session's
/// ephemerals by text prefix, counts at any depth.
#[test]
#[ignore = "needs a real ZooKeeper: scripts/zk-server start; cargo test --release --workspace --test real_server -- --ignored conformance::"]
fn multi_reads_ephemeral_listings_and_descendant_counts() {
    let script = Script::new("more-reads", 2)
        .on(0, persistent("~/t"))
        .on(0, persistent("~/t/a"))
        .on(0, create("~/t/e", b"", Ephemeral))
        .on(0, create("~/e1", b"", Ephemeral))
        .on(1, create("~/o", b"", Ephemeral))
        .on(0, descendants("~"))
        .ok()
        .on(0, descendants("~/t"))
        .ok()
        .on(0, descendants("~/missing"))
        .err(NoNode)
        .on(0, ephemerals("~"))
        .ok()
        .on(0, ephemerals("~/e"))
        .ok()
        .on(1, ephemerals("~"))
        .ok()
        .on(0, ephemerals("~/missing"))
        .ok()
        .on(
            0,
            multi_read(vec![
                read_data("~/t"),
                read_children("~/t"),
                read_data("~/missing"),
                read_children("~/t/e"),
            ]),
        )
        .ok();
    Harness::new().check(&script);
}

#[test]
#[ignore = "needs a real ZooKeeper: scripts/zk-server start; cargo test --release --workspace --test real_server -- --ignored conformance::"]
fn data_and_exists_watches_fire_once_on_their_triggers() {
    let script = Script::new("data-watch", 3)
        .on(0, persistent("~/n"))
        .on(1, get_data("~/n", true))
        .on(2, exists("~/n", true))
        .on(0, set_data("~/n", b"1", ANY))
        .events(1, 1)
        .events(2, 1)
        .on(0, set_data("~/n", b"2", ANY))
        .events(1, 0)
        .on(1, get_data("~/n", true))
        .on(1, exists("~/n", true))
        .on(2, get_data("~/n", true))
        .on(0, persistent("~/n/child"))
        .events(1, 0)
        .on(0, set_data("~/n", b"3", 7))
        .err(BadVersion)
        .events(1, 0)
        .on(
            0,
            multi(vec![op_set_data("~/n", b"4", ANY), op_check("~/n", 0)]),
        )
        .multi_err(1, BadVersion)
        .events(1, 0)
        .on(0, delete_any("~/n/child"))
        .on(0, delete_any("~/n"))
        .events(1, 1)
        .events(2, 1)
        .on(1, get_data("~/n", true))
        .err(NoNode)
        .on(2, exists("~/n", true))
        .on(0, persistent("~/n"))
        .events(1, 0)
        .events(2, 1)
        .on(1, exists("~/n", true))
        .on(0, delete_any("~/n"))
        .events(1, 1)
        .on(0, persistent("~/n"))
        .events(1, 0)
        .on(2, exists("~/n", true))
        .on(2, set_data("~/n", b"own", ANY))
        .events(2, 1);
    Harness::new().check(&script);
}

#[test]
#[ignore = "needs a real ZooKeeper: scripts/zk-server start; cargo test --release --workspace --test real_server -- --ignored conformance::"]
fn child_watches_fire_on_child_changes_and_deletion() {
    let script = Script::new("child-watch", 3)
        .on(0, persistent("~/p"))
        .on(1, get_children("~/p", true))
        .on(2, get_children2("~/p", true))
        .on(0, create("~/p/s-", b"", PersistentSequential))
        .events(1, 1)
        .events(2, 1)
        .on(1, get_children("~/p", true))
        .on(0, set_data("~/p/s-0000000000", b"x", ANY))
        .events(1, 0)
        .on(0, persistent("~/p/s-0000000000/grandchild"))
        .events(1, 0)
        .on(0, set_data("~/p", b"x", ANY))
        .events(1, 0)
        .on(0, delete_any("~/p/s-0000000000/grandchild"))
        .on(0, delete_any("~/p/s-0000000000"))
        .events(1, 1)
        .on(1, get_children("~/p", true))
        .on(2, get_children("~/p", true))
        .on(2, get_data("~/p", true))
        .on(0, get_children("~", true))
        .on(0, delete_any("~/p"))
        .events(0, 1)
        .events(1, 1)
        .events(2, 1)
        .on(1, get_children("~/p", true))
        .err(NoNode)
        .on(0, persistent("~/p"))
        .events(1, 0);
    Harness::new().check(&script);
}

#[test]
#[ignore = "needs a real ZooKeeper: scripts/zk-server start; cargo test --release --workspace --test real_server -- --ignored conformance::"]
fn closing_a_session_deletes_its_ephemerals_and_fires_their_watches() {
    let script = Script::new("close", 3)
        .on(0, persistent("~/p"))
        .on(1, create("~/p/e", b"", Ephemeral))
        .on(1, create("~/p/s-", b"", EphemeralSequential))
        .on(1, create("~/p/s-", b"", EphemeralSequential))
        .on(1, persistent("~/p/keep"))
        .on(0, get_data("~/p/e", true))
        .on(0, get_children("~/p", true))
        .on(2, exists("~/p/s-0000000001", true))
        .on(2, get_children("~/p/s-0000000002", true))
        .on(1, exists("~/p/e", true))
        .on(1, get_children("~/p", true))
        .on(0, exists("~/p/e", false))
        .close(1)
        .events(0, 2)
        .events(2, 2)
        .on(1, exists("~/p", false))
        .err(SessionExpired)
        .on(0, get_children2("~/p", false))
        .on(0, create("~/p/s-", b"", PersistentSequential))
        .ok()
        .close(1)
        .on(2, create("~/p/e", b"", Ephemeral))
        .ok();
    Harness::new().check(&script);
}

#[test]
#[ignore = "needs a real ZooKeeper: scripts/zk-server start; cargo test --release --workspace --test real_server -- --ignored conformance::"]
fn versions_are_checked_and_counted() {
    let script = Script::new("versions", 2)
        .on(0, create("~/v", b"start", Persistent))
        .on(0, set_data("~/v", b"a", 0))
        .ok()
        .on(1, set_data("~/v", b"b", 0))
        .err(BadVersion)
        .on(1, set_data("~/v", b"bb", 1))
        .ok()
        .on(1, set_data("~/v", b"", ANY))
        .on(0, get_data("~/v", false))
        .on(0, check("~/v", 3))
        .ok()
        .on(0, check("~/v", ANY))
        .ok()
        .on(
            0,
            multi(vec![
                op_set_data("~/v", b"m", 3),
                op_check("~/v", 4),
                op_set_data("~/v", b"n", 4),
            ]),
        )
        .ok()
        .on(0, delete("~/v", 4))
        .err(BadVersion)
        .on(0, delete("~/v", 5))
        .ok()
        .on(0, exists("~/v", false));
    Harness::new().check(&script);
}

#[test]
#[ignore = "needs a real ZooKeeper: scripts/zk-server start; cargo test --release --workspace --test real_server -- --ignored conformance::"]
fn multi_is_all_or_nothing_and_names_the_failing_op() {
    let script = Script::new("multi", 2)
        .on(0, persistent("~/m"))
        .on(1, get_children("~/m", true))
        .on(1, exists("~/m/a", true))
        .on(
            0,
            multi(vec![
                op_check("~/m/none", ANY),
                op_create("~/m/a", Persistent),
            ]),
        )
        .multi_err(0, NoNode)
        .events(1, 0)
        .on(
            0,
            multi(vec![
                op_create("~/m/a", Persistent),
                op_create("~/m/a/b", Persistent),
                op_create("~/m/a", Persistent),
            ]),
        )
        .multi_err(2, NodeExists)
        .events(1, 0)
        .on(
            0,
            multi(vec![
                op_create("~/m/s-", PersistentSequential),
                op_delete("~/m/zzz", ANY),
            ]),
        )
        .multi_err(1, NoNode)
        .on(0, exists("~/m/a", false))
        .on(0, get_children2("~/m", false))
        .on(
            0,
            multi(vec![
                op_create("~/m/s-", PersistentSequential),
                op_create("~/m/s-", EphemeralSequential),
                op_create("~/m/a", Persistent),
                op_create("~/m/a/b", Container),
                op_create("~/m/a/b/c", Persistent),
                op_set_data("~/m/a", b"x", 0),
                op_check("~/m/a", 1),
            ]),
        )
        .ok()
        .events(1, 2)
        .on(
            0,
            multi(vec![
                op_delete("~/m/a/b/c", ANY),
                op_delete("~/m/a/b", ANY),
                op_create("~/m/a/b", Persistent),
            ]),
        )
        .ok()
        .on(
            0,
            multi(vec![op_create("~/m/t", Persistent), op_delete("~/m/t", 0)]),
        )
        .ok()
        .on(
            0,
            multi(vec![
                op_create("~/m/e", Ephemeral),
                op_create("~/m/e/x", Persistent),
            ]),
        )
        .multi_err(1, NoChildrenForEphemerals)
        .on(0, multi(vec![]))
        .on(0, create("~/m/s-", b"", PersistentSequential))
        .on(0, get_children2("~/m", false))
        .on(0, get_data("~/m/a", false));
    Harness::new().check(&script);
}

#[test]
#[ignore = "needs a real ZooKeeper: scripts/zk-server start; cargo test --release --workspace --test real_server -- --ignored conformance::"]
fn containers_are_reaped_after_their_last_child_goes() {
    let script = Script::new("container", 3)
        .on(0, create("~/used", b"", Container))
        .on(0, create("~/never", b"", Container))
        .on(0, exists("~/used", false))
        .on(0, persistent("~/used/child"))
        .on(1, get_data("~/used", true))
        .on(1, get_children("~", true))
        .wait_ms(500)
        .on(0, exists("~/used", false))
        .present()
        .on(0, delete_any("~/used/child"))
        .events(1, 2)
        .wait_ms(500)
        .on(0, exists("~/used", false))
        .absent()
        .on(0, exists("~/never", false))
        .present()
        .on(0, create("~/c2", b"", Container))
        .on(0, create("~/c2/s-", b"", EphemeralSequential))
        .on(0, create("~/c2/s-", b"", PersistentSequential))
        .on(1, exists("~/c2", true))
        .close(0)
        .wait_ms(500)
        .on(1, exists("~/c2", false))
        .present()
        .on(1, delete_any("~/c2/s-0000000001"))
        .on(1, exists("~/c2", false))
        .absent()
        .on(1, get_children2("~", false))
        .on(1, create("~/c3", b"", Container))
        .on(2, create("~/c3/e", b"", Ephemeral))
        .on(1, get_children("~/c3", true))
        .on(1, get_data("~/c3", true))
        .close(2)
        .events(1, 2)
        .on(1, exists("~/c3", false))
        .absent()
        // A child created and deleted in one multi makes the container
        // eligible: its cversion is no longer 0.
        .on(1, exists("~/c4", true))
        .on(
            1,
            multi(vec![
                op_create("~/c4", Container),
                op_create("~/c4/x", Persistent),
                op_delete("~/c4/x", ANY),
            ]),
        )
        .ok()
        .events(1, 1)
        .on(1, exists("~/c4", false))
        .absent();
    Harness::new().check(&script);
}

#[test]
#[ignore = "needs a real ZooKeeper: scripts/zk-server start; cargo test --release --workspace --test real_server -- --ignored conformance::"]
fn ttl_nodes_expire_only_without_children() {
    let script = Script::new("ttl", 2)
        .on(0, create("~/t", b"", PersistentWithTtl { ttl_ms: 600 }))
        .on(0, create("~/held", b"", PersistentWithTtl { ttl_ms: 600 }))
        .on(0, create("~/held/child", b"", Persistent))
        .on(
            0,
            create("~/seq-", b"", PersistentSequentialWithTtl { ttl_ms: 600 }),
        )
        .on(0, create("~/long", b"", TTL_LONG))
        .on(0, exists("~/t", false))
        .on(0, exists("~/long", false))
        .on(1, exists("~/t", true))
        .wait_ms(1500)
        .events(1, 1)
        .on(1, exists("~/t", false))
        .absent()
        .on(1, exists("~/seq-0000000002", false))
        .absent()
        .on(1, exists("~/held", false))
        .present()
        .on(1, exists("~/long", false))
        .present()
        .on(1, delete_any("~/held/child"))
        .wait_ms(500)
        .on(1, exists("~/held", false))
        .absent()
        // Refused by the client before sending (so is a TTL of 0, in
        // every_error_code), as the Java client does; the sim must agree.
        .on(0, create("~/bad", b"", PersistentWithTtl { ttl_ms: -1 }))
        .err(BadArguments);
    Harness::new().check(&script);
}

#[test]
#[ignore = "needs a real ZooKeeper: scripts/zk-server start; cargo test --release --workspace --test real_server -- --ignored conformance::"]
fn ttl_counts_from_the_last_data_change() {
    let script = Script::new("ttl-renew", 1)
        .on(0, create("~/t", b"", PersistentWithTtl { ttl_ms: 1000 }))
        .wait_ms(600)
        .on(0, set_data("~/t", b"renewed", ANY))
        .ok()
        .wait_ms(600)
        .on(0, exists("~/t", true))
        .present()
        .wait_ms(1000)
        .events(0, 1)
        .on(0, exists("~/t", false))
        .absent();
    Harness::new().check(&script);
}

#[test]
#[ignore = "needs a real ZooKeeper: scripts/zk-server start; cargo test --release --workspace --test real_server -- --ignored conformance::"]
fn get_children2_stat_and_sync() {
    let script = Script::new("children2", 2)
        .on(0, create("~/d", b"123", Persistent))
        .on(0, get_children2("~/d", false))
        .on(1, create("~/d/e", b"", Ephemeral))
        .on(0, create("~/d/p", b"xy", Persistent))
        .on(0, set_data("~/d", b"", ANY))
        .on(1, get_children2("~/d", true))
        .on(0, delete_any("~/d/p"))
        .events(1, 1)
        .on(1, get_children2("~/d", false))
        .on(1, get_children2("~/d/e", false))
        .on(0, sync("~/d"))
        .ok()
        .on(0, sync("~/missing"))
        .on(0, get_data("~/d/e", false))
        .on(0, exists("~/d/e", false));
    Harness::new().check(&script);
}

/// Random sequences of 3 to 25 steps by three sessions (256 of them, always
/// the same unless `CONFORMANCE_SEED` is set: a run takes seconds); a failure
/// prints the minimal sequence proptest shrank it to, with both servers'
/// outcomes.
#[test]
#[ignore = "needs a real ZooKeeper: scripts/zk-server start; cargo test --release --workspace --test real_server -- --ignored conformance::"]
fn random_sequences_agree() {
    let harness = Harness::new();
    let cases = env_number("CONFORMANCE_CASES").unwrap_or(256) as u32;
    let config = Config {
        cases,
        failure_persistence: None,
        max_shrink_iters: 1_000,
        max_shrink_time: 180_000,
        ..Config::default()
    };
    let rng = match env_number("CONFORMANCE_SEED") {
        Some(seed) => TestRng::from_seed(RngAlgorithm::ChaCha, &[seed.to_le_bytes(); 4].concat()),
        None => TestRng::deterministic_rng(RngAlgorithm::ChaCha),
    };
    let mut runner = TestRunner::new_with_rng(config, rng);
    let (runs, steps) = (AtomicUsize::new(0), AtomicUsize::new(0));
    let result = runner.run(&random::steps(25), |steps_of_case| {
        runs.fetch_add(1, Ordering::Relaxed);
        steps.fetch_add(steps_of_case.len(), Ordering::Relaxed);
        let script = Script {
            name: "random".into(),
            sessions: random::SESSIONS,
            steps: steps_of_case,
            expects: vec![],
        };
        harness
            .compare(&script)
            .map_err(|Failure(report)| proptest::test_runner::TestCaseError::fail(report))
    });
    eprintln!(
        "random_sequences_agree: {} runs ({} steps) incl. shrinking, {cases} cases required\ncoverage: {}",
        runs.into_inner(),
        steps.into_inner(),
        harness.coverage.summary()
    );
    match result {
        Ok(()) => {}
        Err(TestError::Fail(report, minimal)) => {
            panic!(
                "a random sequence of {} steps disagrees (minimal after shrinking):\n{report}",
                minimal.len()
            )
        }
        Err(TestError::Abort(reason)) => panic!("the property test aborted: {reason}"),
    }
}

/// A number from the environment; unset or empty means none.
fn env_number(name: &str) -> Option<u64> {
    let value = std::env::var(name).ok().filter(|value| !value.is_empty())?;
    Some(
        value
            .parse()
            .unwrap_or_else(|_| panic!("{name} must be a number, not {value:?}")),
    )
}
