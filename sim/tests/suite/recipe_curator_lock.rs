//! The Curator-style lock (recipes/src/curator_lock) against the in-memory
//! server, step by step: happy paths for both variants, and each known bug
//! (7: nodes left behind, 8: two holders after a pause, 2: a lost create
//! reply) plus the bugs found in seed 002's usage (a used-up sequence counter
//! breaking Curator's order, a nested acquire waiting for itself), reproduced
//! on `original` and shown fixed on `fixed` with the same steps.

use crate::common::random_walk::{heal, random_action};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::collections::BTreeMap;
use zk_recipes::curator_lock::{
    FixedCuratorLock, LockCall, LockError, LockOutcome, OriginalCuratorLock,
};
use zk_recipes::zk::Acls;
use zk_recipes::zk::{
    CreateMode, EventType, KeeperState, Path, Reply, Request, WatchedEvent, ANY_VERSION,
};
use zk_recipes::{FencingToken, Observe, Recipe};
use zk_sim::client::ConnectionState;
use zk_sim::stepper::{ClientId, Stepper};

const LOCK: &str = "/locks/order-17";
const ACQUIRE: LockCall = LockCall::Acquire { timeout_ms: None };
const ACQUIRE_60S: LockCall = LockCall::Acquire {
    timeout_ms: Some(60_000),
};

fn path(text: &str) -> Path {
    Path::new(text).unwrap()
}

fn original(unique_id: u64) -> OriginalCuratorLock {
    OriginalCuratorLock::new(path(LOCK), unique_id)
}

fn fixed(unique_id: u64) -> FixedCuratorLock {
    FixedCuratorLock::new(path(LOCK), unique_id)
}

/// A stepper with one client per recipe, session ids 0x10, 0x20, ...
fn stepper<R: Recipe<Outcome: Observe>>(recipes: Vec<R>) -> Stepper<R> {
    let mut stepper = Stepper::new();
    for (i, recipe) in recipes.into_iter().enumerate() {
        stepper.add_client(recipe, 0x10 * (i as i64 + 1));
    }
    stepper
}

/// Creates the lock path as a persistent node (tests that are not about parents).
fn precreate_lock_path<R: Recipe<Outcome: Observe>>(stepper: &mut Stepper<R>) {
    for node in ["/locks", LOCK] {
        let create = Request::Create {
            path: path(node),
            data: Vec::new(),
            mode: CreateMode::Persistent,
            acl: Acls::Open,
        };
        stepper.admin(&create).unwrap();
    }
}

/// Every node in the tree but the root and /zookeeper.
fn tree<R: Recipe<Outcome: Observe>>(stepper: &Stepper<R>) -> Vec<String> {
    stepper
        .server()
        .paths()
        .iter()
        .map(|p| p.as_str().to_string())
        .filter(|p| p != "/" && !p.starts_with("/zookeeper"))
        .collect()
}

fn lock_children<R: Recipe<Outcome: Observe>>(stepper: &mut Stepper<R>) -> Vec<String> {
    match stepper.admin(&Request::GetChildren {
        path: path(LOCK),
        watch: false,
    }) {
        Ok(Reply::Children(mut children)) => {
            children.sort();
            children
        }
        _ => Vec::new(),
    }
}

/// Runs the container reaper until nothing more goes.
fn reap_all<R: Recipe<Outcome: Observe>>(stepper: &mut Stepper<R>) {
    for _ in 0..4 {
        stepper.reap();
    }
}

fn take<R: Recipe<Outcome = LockOutcome>>(
    stepper: &mut Stepper<R>,
    client: ClientId,
) -> Vec<LockOutcome> {
    stepper.take_outcomes(client)
}

fn token_of(outcomes: &[LockOutcome]) -> FencingToken {
    match outcomes {
        [LockOutcome::Acquired { token }] => *token,
        other => panic!("expected one Acquired, got {other:?}"),
    }
}

/// Three clients ask at once, then release in turn: returns the tokens in
/// the order the clients were granted the lock, and checks the order.
fn three_take_turns<R: Recipe<Call = LockCall, Outcome = LockOutcome>>(
    stepper: &mut Stepper<R>,
) -> Vec<FencingToken> {
    for client in 0..3 {
        stepper.call(client, ACQUIRE);
        stepper.run_client(client);
    }
    stepper.run();
    let mut tokens = Vec::new();
    for holder in 0..3 {
        let token = token_of(&take(stepper, holder));
        for waiter in holder + 1..3 {
            assert!(
                stepper.outcomes(waiter).is_empty(),
                "c{waiter} must wait for c{holder}\n{}",
                stepper.trace()
            );
        }
        tokens.push(token);
        stepper.call(holder, LockCall::Release);
        stepper.run();
        assert_eq!(
            take(stepper, holder),
            [LockOutcome::Released],
            "{}",
            stepper.trace()
        );
    }
    tokens
}

fn assert_increasing(tokens: &[FencingToken]) {
    assert!(
        tokens.windows(2).all(|w| w[0] < w[1]),
        "tokens must increase: {tokens:?}"
    );
}

// ---- happy paths ----

#[test]
fn original_three_contenders_take_turns_in_arrival_order() {
    let mut stepper = stepper(vec![original(1), original(2), original(3)]);
    let tokens = three_take_turns(&mut stepper);
    assert_increasing(&tokens);
    assert!(lock_children(&mut stepper).is_empty());
}

#[test]
fn fixed_three_contenders_take_turns_in_arrival_order() {
    let mut stepper = stepper(vec![fixed(1), fixed(2), fixed(3)]);
    let tokens = three_take_turns(&mut stepper);
    assert_increasing(&tokens);
    reap_all(&mut stepper);
    assert!(
        tokens.len() == 3 && tree(&stepper).is_empty(),
        "left: {:?}",
        tree(&stepper)
    );
}

#[test]
fn fixed_waiter_watches_only_its_predecessor() {
    let mut stepper = stepper(vec![fixed(1), fixed(2), fixed(3)]);
    for client in 0..3 {
        stepper.call(client, ACQUIRE);
        stepper.run();
    }
    let session_of = |c: ClientId| {
        stepper
            .client(c)
            .watches
            .data
            .keys()
            .cloned()
            .collect::<Vec<_>>()
    };
    let (first, second) = (session_of(1), session_of(2));
    assert_eq!(first.len(), 1, "c1 watches one node");
    assert_eq!(second.len(), 1, "c2 watches one node");
    assert_ne!(first, second, "c1 and c2 watch different nodes");
}

#[test]
fn fixed_acquire_is_reentrant_with_the_same_token() {
    let mut stepper = stepper(vec![fixed(1), fixed(2)]);
    stepper.call(0, ACQUIRE);
    stepper.run();
    let token = token_of(&take(&mut stepper, 0));
    stepper.call(0, ACQUIRE_60S);
    assert_eq!(take(&mut stepper, 0), [LockOutcome::Acquired { token }]);
    stepper.call(1, ACQUIRE);
    stepper.call(0, LockCall::Release);
    stepper.run();
    assert_eq!(take(&mut stepper, 0), [LockOutcome::Released]);
    assert!(stepper.outcomes(1).is_empty(), "still held once by c0");
    stepper.call(0, LockCall::Release);
    stepper.run();
    assert_eq!(take(&mut stepper, 0), [LockOutcome::Released]);
    assert!(token_of(&take(&mut stepper, 1)) > token);
}

#[test]
fn fixed_timed_out_waiter_deletes_its_node() {
    let mut stepper = stepper(vec![fixed(1), fixed(2)]);
    stepper.call(0, ACQUIRE);
    stepper.run();
    stepper.call(
        1,
        LockCall::Acquire {
            timeout_ms: Some(1_000),
        },
    );
    stepper.run();
    assert_eq!(lock_children(&mut stepper).len(), 2);
    assert!(stepper.fire_next_timer(1));
    stepper.run();
    assert_eq!(take(&mut stepper, 1), [LockOutcome::TimedOut]);
    assert_eq!(
        lock_children(&mut stepper).len(),
        1,
        "only the holder's node is left"
    );
}

#[test]
fn fixed_waiter_wakes_after_a_reconnect_when_its_predecessor_left_meanwhile() {
    let mut stepper = stepper(vec![fixed(1), fixed(2)]);
    stepper.call(0, ACQUIRE);
    stepper.run();
    stepper.call(1, ACQUIRE);
    stepper.run();
    stepper.disconnect(1);
    stepper.call(0, LockCall::Release);
    stepper.run();
    assert!(stepper.outcomes(1).is_empty());
    stepper.reconnect(1);
    stepper.run();
    assert!(
        matches!(
            take(&mut stepper, 1).as_slice(),
            [LockOutcome::Acquired { .. }]
        ),
        "{}",
        stepper.trace()
    );
}

#[test]
fn fixed_waiter_whose_session_expired_starts_over_in_the_new_session() {
    let mut stepper = stepper(vec![fixed(1), fixed(2)]);
    stepper.call(0, ACQUIRE);
    stepper.run();
    stepper.call(1, ACQUIRE);
    stepper.run();
    stepper.expire(1);
    assert!(
        stepper.outcomes(1).is_empty(),
        "a waiter has nothing to lose"
    );
    stepper.new_session(1, 0x21);
    stepper.run();
    assert_eq!(lock_children(&mut stepper).len(), 2, "c1 queued again");
    stepper.call(0, LockCall::Release);
    stepper.run();
    assert!(
        matches!(
            take(&mut stepper, 1).as_slice(),
            [LockOutcome::Acquired { .. }]
        ),
        "{}",
        stepper.trace()
    );
}

#[test]
fn fixed_tokens_grow_when_the_reaped_parent_is_created_again() {
    let mut stepper = stepper(vec![fixed(1), fixed(2)]);
    stepper.call(0, ACQUIRE);
    stepper.run();
    let first = token_of(&take(&mut stepper, 0));
    stepper.call(0, LockCall::Release);
    stepper.run();
    reap_all(&mut stepper);
    assert!(tree(&stepper).is_empty());
    stepper.call(1, ACQUIRE);
    stepper.run();
    assert!(
        lock_children(&mut stepper)[0].ends_with("lock-0000000000"),
        "the sequence restarted"
    );
    assert!(
        token_of(&take(&mut stepper, 1)) > first,
        "the czxid token did not"
    );
}

#[test]
fn fixed_release_after_a_lost_delete_reply_is_released() {
    let mut stepper = stepper(vec![fixed(1)]);
    stepper.call(0, ACQUIRE);
    stepper.run();
    take(&mut stepper, 0);
    stepper.call(0, LockCall::Release);
    assert!(stepper.apply_then_disconnect(0));
    stepper.reconnect(0);
    stepper.run();
    assert_eq!(take(&mut stepper, 0), [LockOutcome::Released]);
}

#[test]
fn fixed_holder_whose_node_was_deleted_by_someone_else_reports_lost() {
    let mut stepper = stepper(vec![fixed(1)]);
    stepper.call(0, ACQUIRE);
    stepper.run();
    take(&mut stepper, 0);
    let node = format!("{LOCK}/{}", lock_children(&mut stepper)[0]);
    stepper
        .admin(&Request::Delete {
            path: path(&node),
            version: ANY_VERSION,
        })
        .unwrap();
    stepper.call(0, LockCall::Release);
    stepper.run();
    assert_eq!(take(&mut stepper, 0), [LockOutcome::Lost]);
}

// ---- bug 7: lock nodes left behind ----

#[test]
fn bug7_nodes_left_behind_original_leaks_the_parents() {
    let mut stepper = stepper(vec![original(1), original(2)]);
    three_or_two_acquire_release(&mut stepper);
    reap_all(&mut stepper);
    assert_eq!(
        tree(&stepper),
        ["/locks", LOCK],
        "the seed's cleanup job exists for these"
    );
}

#[test]
fn bug7_nodes_left_behind_fixed_leaves_nothing() {
    let mut stepper = stepper(vec![fixed(1), fixed(2)]);
    three_or_two_acquire_release(&mut stepper);
    assert_eq!(
        tree(&stepper),
        ["/locks", LOCK],
        "containers until the reaper runs"
    );
    reap_all(&mut stepper);
    assert!(tree(&stepper).is_empty(), "left: {:?}", tree(&stepper));
}

/// Two clients acquire and release the lock one after the other.
fn three_or_two_acquire_release<R: Recipe<Call = LockCall, Outcome = LockOutcome>>(
    stepper: &mut Stepper<R>,
) {
    for client in 0..2 {
        stepper.call(client, ACQUIRE);
        stepper.run();
        stepper.call(client, LockCall::Release);
        stepper.run();
        let outcomes = take(stepper, client);
        assert!(
            matches!(
                outcomes.as_slice(),
                [LockOutcome::Acquired { .. }, LockOutcome::Released]
            ),
            "{outcomes:?}"
        );
    }
}

// ---- bug 8: two holders after a pause ----

/// c0 holds; c1 waits; c0's session expires on the server while c0 is
/// paused (it does not know). Returns (c0's token, c1's token).
fn pause_holder<R: Recipe<Call = LockCall, Outcome = LockOutcome>>(
    stepper: &mut Stepper<R>,
) -> (FencingToken, FencingToken) {
    stepper.call(0, ACQUIRE);
    stepper.run();
    let stale = token_of(&take(stepper, 0));
    stepper.call(1, ACQUIRE);
    stepper.run();
    stepper.expire_on_server(0);
    stepper.run_client(1);
    let fresh = token_of(&take(stepper, 1));
    (stale, fresh)
}

#[test]
fn bug8_pause_original_two_holders_and_never_told() {
    let mut stepper = stepper(vec![original(1), original(2)]);
    let (stale, fresh) = pause_holder(&mut stepper);
    // Both believe they hold the lock; only the token tells them apart.
    assert_eq!(stepper.recipe(0).held_count(), 1);
    assert!(
        stale < fresh,
        "the stale holder's token is smaller: {stale:?} < {fresh:?}"
    );
    // Its release is retried forever on the dead handle: never Lost.
    stepper.call(0, LockCall::Release);
    stepper.run();
    assert!(
        stepper.outcomes(0).iter().all(|o| *o != LockOutcome::Lost),
        "{}",
        stepper.trace()
    );
}

#[test]
fn bug8_pause_fixed_fenced_and_reports_lost() {
    let mut stepper = stepper(vec![fixed(1), fixed(2)]);
    let (stale, fresh) = pause_holder(&mut stepper);
    // No recipe can stop a paused holder from believing; the token fences it.
    assert_eq!(stepper.recipe(0).hold_count(), 1);
    assert!(
        stale < fresh,
        "the stale holder's token is smaller: {stale:?} < {fresh:?}"
    );
    stepper.call(0, LockCall::Release);
    stepper.run();
    assert_eq!(
        take(&mut stepper, 0),
        [LockOutcome::Lost],
        "{}",
        stepper.trace()
    );
}

#[test]
fn bug8_expiry_noticed_original_holder_keeps_believing() {
    let mut stepper = stepper(vec![original(1), original(2)]);
    stepper.call(0, ACQUIRE);
    stepper.run();
    take(&mut stepper, 0);
    stepper.call(1, ACQUIRE);
    stepper.run();
    stepper.expire(0);
    stepper.new_session(0, 0x11);
    stepper.run();
    assert!(matches!(
        take(&mut stepper, 1).as_slice(),
        [LockOutcome::Acquired { .. }]
    ));
    assert!(stepper.outcomes(0).is_empty(), "c0 is not told");
    assert_eq!(
        stepper.recipe(0).held_count(),
        1,
        "and still believes it holds"
    );
}

#[test]
fn bug8_expiry_noticed_fixed_holder_reports_lost_at_once() {
    let mut stepper = stepper(vec![fixed(1), fixed(2)]);
    stepper.call(0, ACQUIRE);
    stepper.run();
    take(&mut stepper, 0);
    stepper.call(1, ACQUIRE);
    stepper.run();
    stepper.expire(0);
    assert_eq!(take(&mut stepper, 0), [LockOutcome::Lost]);
    stepper.new_session(0, 0x11);
    stepper.run();
    assert!(matches!(
        take(&mut stepper, 1).as_slice(),
        [LockOutcome::Acquired { .. }]
    ));
    assert_eq!(stepper.recipe(0).hold_count(), 0);
}

// ---- bug 2: a lost create reply (Curator's protection handles it) ----

/// c0's create is applied but its reply lost; c0 reconnects into the same
/// session and carries on; then c1 must get the lock once c0 releases.
fn lost_create_reply<R: Recipe<Call = LockCall, Outcome = LockOutcome>>(stepper: &mut Stepper<R>) {
    precreate_lock_path(stepper);
    stepper.call(0, ACQUIRE);
    assert!(stepper.apply_then_disconnect(0));
    stepper.reconnect(0);
    stepper.run();
    assert!(
        matches!(take(stepper, 0).as_slice(), [LockOutcome::Acquired { .. }]),
        "{}",
        stepper.trace()
    );
    let session = stepper.session_id(0);
    assert_eq!(
        stepper.server().ephemerals_of(session).len(),
        1,
        "no orphan, no duplicate"
    );
    stepper.call(1, ACQUIRE);
    stepper.call(0, LockCall::Release);
    stepper.run();
    assert!(
        matches!(take(stepper, 1).as_slice(), [LockOutcome::Acquired { .. }]),
        "{}",
        stepper.trace()
    );
    assert!(stepper.server().ephemerals_of(session).is_empty());
}

#[test]
fn bug2_lost_create_reply_original_protection_adopts_the_node() {
    lost_create_reply(&mut stepper(vec![original(1), original(2)]));
}

#[test]
fn bug2_lost_create_reply_fixed_adopts_the_node() {
    lost_create_reply(&mut stepper(vec![fixed(1), fixed(2)]));
}

// ---- found in seed 002's Curator: the parent's counter runs out ----

/// Creates the lock path with its sequence counter at its end: ZooKeeper
/// then names every new child `...2147483647`.
fn lock_path_at_counter_end<R: Recipe<Outcome: Observe>>(
    stepper: &mut Stepper<R>,
    lock_mode: CreateMode,
) {
    for (node, mode) in [("/locks", CreateMode::Persistent), (LOCK, lock_mode)] {
        stepper
            .admin(&Request::Create {
                path: path(node),
                data: Vec::new(),
                mode,
                acl: Acls::Open,
            })
            .unwrap();
    }
    stepper
        .server_mut()
        .set_sequence_counter(&path(LOCK), i32::MAX)
        .unwrap();
}

#[test]
fn counter_end_original_two_holders() {
    // c0 holds with ...2147483647; c1's node gets the same number, so the two
    // share Curator's sort key and the (stable) sort keeps getChildren's
    // order, which is the server's hash order: under some orders c1 is first.
    let two_holders: Vec<u64> = (0..8)
        .filter(|&seed| {
            let mut stepper = Stepper::with_child_order_seed(seed);
            stepper.add_client(original(1), 0x10);
            stepper.add_client(original(2), 0x20);
            lock_path_at_counter_end(&mut stepper, CreateMode::Persistent);
            stepper.call(0, ACQUIRE);
            stepper.run();
            assert!(matches!(
                take(&mut stepper, 0).as_slice(),
                [LockOutcome::Acquired { .. }]
            ));
            stepper.call(1, ACQUIRE);
            stepper.run();
            let children = lock_children(&mut stepper);
            assert!(
                children.iter().all(|n| n.ends_with("lock-2147483647")),
                "{children:?}"
            );
            let c1_holds = matches!(
                take(&mut stepper, 1).as_slice(),
                [LockOutcome::Acquired { .. }]
            );
            c1_holds && stepper.recipe(0).held_count() == 1
        })
        .collect();
    assert!(
        !two_holders.is_empty(),
        "some child order gives two holders"
    );
}

#[test]
fn counter_end_fixed_gives_up_and_heals_once_the_container_is_reaped() {
    for seed in 0..8 {
        let mut stepper = Stepper::with_child_order_seed(seed);
        stepper.add_client(fixed(1), 0x10);
        stepper.add_client(fixed(2), 0x20);
        lock_path_at_counter_end(&mut stepper, CreateMode::Container);
        for client in 0..2 {
            stepper.call(client, ACQUIRE);
            stepper.run();
            let outcomes = take(&mut stepper, client);
            assert_eq!(
                outcomes,
                [LockOutcome::Failed(LockError::SequenceExhausted)],
                "{}",
                stepper.trace()
            );
        }
        assert!(lock_children(&mut stepper).is_empty(), "both nodes deleted");
        stepper.reap();
        stepper.call(0, ACQUIRE);
        stepper.call(1, ACQUIRE);
        stepper.run();
        assert!(
            matches!(
                take(&mut stepper, 0).as_slice(),
                [LockOutcome::Acquired { .. }]
            ),
            "{}",
            stepper.trace()
        );
        assert!(stepper.outcomes(1).is_empty(), "c1 waits its turn");
    }
}

// ---- found in seed 002's usage: a nested acquire waits for itself ----

#[test]
fn nested_acquire_original_waits_for_itself_until_timeout() {
    let mut stepper = stepper(vec![original(1)]);
    stepper.call(0, ACQUIRE_60S);
    stepper.run();
    take(&mut stepper, 0);
    // Same key again before the transaction hook released the first mutex.
    stepper.call(0, ACQUIRE_60S);
    stepper.run();
    assert!(
        stepper.outcomes(0).is_empty(),
        "blocked behind its own node"
    );
    assert_eq!(lock_children(&mut stepper).len(), 2);
    assert!(stepper.fire_next_timer(0));
    stepper.run();
    assert_eq!(take(&mut stepper, 0), [LockOutcome::TimedOut]);
    stepper.call(0, LockCall::Release);
    stepper.run();
    assert_eq!(take(&mut stepper, 0), [LockOutcome::Released]);
    assert!(lock_children(&mut stepper).is_empty());
}

#[test]
fn nested_acquire_fixed_is_reentrant() {
    let mut stepper = stepper(vec![fixed(1)]);
    stepper.call(0, ACQUIRE_60S);
    stepper.run();
    let token = token_of(&take(&mut stepper, 0));
    stepper.call(0, ACQUIRE_60S);
    stepper.run();
    assert_eq!(take(&mut stepper, 0), [LockOutcome::Acquired { token }]);
    assert_eq!(lock_children(&mut stepper).len(), 1);
    for _ in 0..2 {
        stepper.call(0, LockCall::Release);
        stepper.run();
    }
    assert_eq!(
        take(&mut stepper, 0),
        [LockOutcome::Released, LockOutcome::Released]
    );
    assert!(lock_children(&mut stepper).is_empty());
}

// ---- random walks: the fixed lock under every fault ----

/// What the application side of a lock random walk has seen.
#[derive(Default)]
struct LockObserver {
    /// Client -> how many acquires it holds, as its outcomes say.
    holds: BTreeMap<ClientId, u32>,
    /// The call each client waits an answer for.
    pending: BTreeMap<ClientId, LockCall>,
    /// The largest token granted so far.
    max_token: Option<FencingToken>,
}

impl LockObserver {
    /// The application makes a call. A Release ends its critical section
    /// at once: the next waiter may be granted before the releaser hears
    /// the reply of its delete.
    fn call(&mut self, client: ClientId, call: LockCall) {
        self.pending.insert(client, call);
        if call == LockCall::Release {
            if let Some(depth) = self.holds.get_mut(&client) {
                *depth -= 1;
                if *depth == 0 {
                    self.holds.remove(&client);
                }
            }
        }
    }

    /// An outcome of `client`, whose session is `alive` on the server. A
    /// grant to a live session must carry a token above every token granted
    /// before; a paused client (session already gone) may still report an
    /// older grant late: the fencing resource rejects its token.
    fn absorb(&mut self, client: ClientId, outcome: &LockOutcome, alive: bool, trace: &str) {
        let pending = self.pending.remove(&client);
        match outcome {
            LockOutcome::Acquired { token } => {
                let depth = self.holds.entry(client).or_insert(0);
                if *depth == 0 {
                    if alive {
                        assert!(
                            self.max_token < Some(*token),
                            "token {token:?} after {:?}\n{trace}",
                            self.max_token
                        );
                    }
                    self.max_token = self.max_token.max(Some(*token));
                }
                *depth += 1;
            }
            // The hold ended when the client called Release (see `call`).
            LockOutcome::Released => {}
            LockOutcome::Lost => {
                self.holds.remove(&client);
                // Unsolicited unless it answers a Release.
                if let Some(call @ LockCall::Acquire { .. }) = pending {
                    self.pending.insert(client, call);
                }
            }
            LockOutcome::TimedOut | LockOutcome::Failed(_) => {}
        }
    }
}

/// One random walk of three fixed clients; panics with the trace on a
/// violated property.
fn fixed_lock_random_walk(seed: u64, pauses: bool) {
    let mut rng = SmallRng::seed_from_u64(seed);
    let mut stepper = Stepper::with_child_order_seed(seed);
    for client in 0..3 {
        stepper.add_client(fixed(client as u64 + 1), 0x10 * (client as i64 + 1));
    }
    let (mut zombies, mut next_session) = ([false; 3], 0x100_i64);
    let mut seen = LockObserver::default();
    let observe = |stepper: &mut Stepper<FixedCuratorLock>, seen: &mut LockObserver| {
        for client in 0..3 {
            let alive = stepper
                .server()
                .is_session_alive(stepper.session_id(client));
            for outcome in stepper.take_outcomes(client) {
                seen.absorb(client, &outcome, alive, stepper.trace());
            }
        }
        // Holders in live sessions: a paused one may still believe, but its
        // session (and node) is gone.
        let live = |c: &&ClientId| stepper.server().is_session_alive(stepper.session_id(**c));
        let live_holders: Vec<_> = seen.holds.keys().filter(live).collect();
        assert!(
            live_holders.len() <= 1,
            "two holders {live_holders:?}\n{}",
            stepper.trace()
        );
    };
    for _ in 0..400 {
        let client = rng.gen_range(0..3);
        if !seen.pending.contains_key(&client) && !zombies[client] && rng.gen_bool(0.15) {
            let call = match (seen.holds.contains_key(&client), rng.gen_range(0..4)) {
                (true, 0) => ACQUIRE,
                (true, _) => LockCall::Release,
                (false, 0) => LockCall::Acquire {
                    timeout_ms: Some(rng.gen_range(1..5_000)),
                },
                (false, _) => ACQUIRE,
            };
            seen.call(client, call);
            stepper.call(client, call);
        } else {
            random_action(
                &mut stepper,
                &mut rng,
                client,
                &mut zombies,
                &mut next_session,
                pauses,
            );
        }
        observe(&mut stepper, &mut seen);
        if !zombies.contains(&true) {
            assert!(
                seen.holds.len() <= 1,
                "two holders {:?}\n{}",
                seen.holds,
                stepper.trace()
            );
        }
    }
    // Heal: no more faults; holders release; everything settles.
    heal(&mut stepper, &mut zombies, &mut next_session);
    for _ in 0..50 {
        stepper.run();
        observe(&mut stepper, &mut seen);
        for client in (0..3).filter(|c| !zombies[*c]) {
            if seen.holds.contains_key(&client) && !seen.pending.contains_key(&client) {
                seen.call(client, LockCall::Release);
                stepper.call(client, LockCall::Release);
            }
        }
        stepper.run();
        observe(&mut stepper, &mut seen);
        for client in 0..3 {
            stepper.fire_next_timer(client);
        }
    }
    let healthy_pending: Vec<_> = seen.pending.iter().filter(|(c, _)| !zombies[**c]).collect();
    assert!(
        healthy_pending.is_empty(),
        "unanswered {healthy_pending:?}\n{}",
        stepper.trace()
    );
    reap_all(&mut stepper);
    assert!(
        tree(&stepper).is_empty(),
        "left {:?}\n{}",
        tree(&stepper),
        stepper.trace()
    );
}

#[test]
fn fixed_random_walks_with_faults_hold_mutual_exclusion_and_leave_nothing() {
    for seed in 0..300 {
        fixed_lock_random_walk(seed, false);
    }
}

#[test]
fn fixed_random_walks_with_pauses_keep_tokens_increasing() {
    for seed in 1_000..1_300 {
        fixed_lock_random_walk(seed, true);
    }
}

// ---- the fixed lock under faults at chosen steps ----

fn lock_node_event(event_type: EventType, name: &str) -> WatchedEvent {
    WatchedEvent::node(event_type, path(&format!("{LOCK}/{name}")))
}

/// The clients that believe they hold the lock.
fn fixed_holders(stepper: &Stepper<FixedCuratorLock>) -> Vec<ClientId> {
    (0..3)
        .filter(|&client| stepper.recipe(client).hold_count() > 0)
        .collect()
}

/// c0 holds, c1 waits on c0, c2 on c1. Spurious events (node events for
/// nodes still there, one while c2's read is in flight, a state event no
/// watch asked for) and a duplicate of every real wakeup: one holder at a
/// time, each acquires once, in arrival order.
#[test]
fn fixed_spurious_and_duplicated_wakeups_keep_one_holder() {
    let mut stepper = stepper(vec![fixed(1), fixed(2), fixed(3)]);
    for client in 0..3 {
        stepper.call(client, ACQUIRE);
        stepper.run();
    }
    let nodes = lock_children(&mut stepper);
    let deleted = |i: usize| lock_node_event(EventType::NodeDeleted, &nodes[i]);
    stepper.inject_watch_event(1, deleted(0));
    stepper.inject_watch_event(2, lock_node_event(EventType::NodeDataChanged, &nodes[1]));
    stepper.inject_watch_event(1, WatchedEvent::state(KeeperState::SyncConnected));
    assert!(stepper.send(2), "c2's read is on the wire");
    stepper.inject_watch_event(2, deleted(1));
    stepper.run();
    assert_eq!(fixed_holders(&stepper), vec![0], "{}", stepper.trace());
    stepper.call(0, LockCall::Release);
    stepper.run();
    assert_eq!(fixed_holders(&stepper), vec![1], "{}", stepper.trace());
    stepper.inject_watch_event(1, deleted(0));
    stepper.inject_watch_event(2, deleted(1));
    stepper.run();
    assert_eq!(fixed_holders(&stepper), vec![1], "{}", stepper.trace());
    stepper.call(1, LockCall::Release);
    stepper.run();
    stepper.inject_watch_event(2, deleted(1));
    stepper.run();
    assert_eq!(fixed_holders(&stepper), vec![2], "{}", stepper.trace());
    stepper.call(2, LockCall::Release);
    stepper.run();
    let tokens: Vec<FencingToken> = (0..3)
        .map(|client| match take(&mut stepper, client).as_slice() {
            [LockOutcome::Acquired { token }, LockOutcome::Released] => *token,
            other => panic!("c{client}: {other:?}\n{}", stepper.trace()),
        })
        .collect();
    assert_increasing(&tokens);
    reap_all(&mut stepper);
    assert!(tree(&stepper).is_empty(), "left: {:?}", tree(&stepper));
}

/// c0 holds, c1 waits on c0, c2 on c1. c1's session expires while c1 is
/// paused; c0 releases and c2 takes the lock; only then does c1 learn of
/// the expiry: it has nothing to lose, starts over in its new session and
/// gets the lock after c2.
#[test]
fn fixed_waiter_learning_its_expiry_late_starts_over() {
    let mut stepper = stepper(vec![fixed(1), fixed(2), fixed(3)]);
    for client in 0..3 {
        stepper.call(client, ACQUIRE);
        stepper.run();
    }
    let first = token_of(&take(&mut stepper, 0));
    stepper.expire_on_server(1);
    stepper.call(0, LockCall::Release);
    stepper.run();
    assert_eq!(take(&mut stepper, 0), [LockOutcome::Released]);
    let second = token_of(&take(&mut stepper, 2));
    assert!(stepper.outcomes(1).is_empty(), "{}", stepper.trace());
    stepper.notice_expiry(1);
    assert!(
        stepper.outcomes(1).is_empty(),
        "a waiter has nothing to lose"
    );
    stepper.new_session(1, 0x21);
    stepper.run();
    assert!(stepper.outcomes(1).is_empty(), "c1 queues behind c2");
    stepper.call(2, LockCall::Release);
    stepper.run();
    let third = token_of(&take(&mut stepper, 1));
    assert_increasing(&[first, second, third]);
    stepper.call(1, LockCall::Release);
    stepper.run();
    reap_all(&mut stepper);
    assert!(tree(&stepper).is_empty(), "left: {:?}", tree(&stepper));
}

/// c0 acquires (creating the parents) and releases to c1, then acquires
/// again, waits for c1 and releases; the connection drops before c0's
/// `nth_send`-th request is sent (it fails with ConnectionLoss, not
/// applied) and c0 reconnects at once. Checks one holder at a time, the
/// grants in order, nothing left. False once c0 sends fewer requests.
fn not_applied_at(nth_send: usize) -> bool {
    let mut stepper = stepper(vec![fixed(1), fixed(2)]);
    let (mut sends, mut fired) = (0, false);
    let mut run = |stepper: &mut Stepper<FixedCuratorLock>| loop {
        let mut moved = false;
        for client in 0..2 {
            let can_send = stepper.state(client) == ConnectionState::Connected
                && !stepper.client(client).outgoing.is_empty();
            if client == 0 && can_send && sends == nth_send {
                stepper.disconnect(0);
                stepper.reconnect(0);
                fired = true;
                moved = true;
            } else {
                moved |= stepper.step(client);
            }
            sends += usize::from(client == 0 && can_send);
            let holders = (0..2)
                .filter(|&c| stepper.recipe(c).hold_count() > 0)
                .count();
            assert!(holders <= 1, "two holders\n{}", stepper.trace());
        }
        if !moved {
            return;
        }
    };
    for (client, call) in [
        (0, ACQUIRE),
        (1, ACQUIRE),
        (0, LockCall::Release),
        (0, ACQUIRE),
        (1, LockCall::Release),
        (0, LockCall::Release),
    ] {
        stepper.call(client, call);
        run(&mut stepper);
    }
    let context = format!("not applied at c0's send {nth_send}\n{}", stepper.trace());
    let (c0, c1) = (take(&mut stepper, 0), take(&mut stepper, 1));
    let tokens = match (c0.as_slice(), c1.as_slice()) {
        (
            [LockOutcome::Acquired { token: a }, LockOutcome::Released, LockOutcome::Acquired { token: c }, LockOutcome::Released],
            [LockOutcome::Acquired { token: b }, LockOutcome::Released],
        ) => [*a, *b, *c],
        other => panic!("{other:?}: {context}"),
    };
    assert_increasing(&tokens);
    reap_all(&mut stepper);
    assert!(
        tree(&stepper).is_empty(),
        "left {:?}: {context}",
        tree(&stepper)
    );
    fired
}

#[test]
fn fixed_request_not_applied_at_every_step_is_sent_again() {
    let mut hit = 0;
    while not_applied_at(hit) {
        hit += 1;
    }
    assert!(hit >= 10, "only {hit} requests to hit");
}
