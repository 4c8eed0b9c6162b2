//! The semaphore (recipes/src/semaphore) against the in-memory server, step
//! by step: happy paths for both variants, known bugs 7 (nodes left behind)
//! and 8 (more holders than leases after a pause), a lost create reply, and
//! the bugs found in Curator 2.5.0's InterProcessSemaphoreV2 as seed 002
//! uses it (partial acquisitions deadlock; a lease lost with its session
//! stays counted), each on `original` and, with the same steps, on `fixed`.

use crate::common::random_walk::{heal, random_action};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::collections::BTreeMap;
use zk_recipes::semaphore::{FixedSemaphore, OriginalSemaphore, SemaphoreCall, SemaphoreOutcome};
use zk_recipes::zk::{EventType, KeeperState, Path, Reply, Request, WatchedEvent};
use zk_recipes::{FencingToken, Observe, Recipe};
use zk_sim::client::ConnectionState;
use zk_sim::stepper::{ClientId, Stepper};

const SEMAPHORE: &str = "/semaphores/db";

fn path(text: &str) -> Path {
    Path::new(text).unwrap()
}

fn original(max_leases: u32, unique_id: u64) -> OriginalSemaphore {
    OriginalSemaphore::new(path(SEMAPHORE), max_leases, unique_id)
}

fn fixed(max_leases: u32, unique_id: u64) -> FixedSemaphore {
    FixedSemaphore::new(path(SEMAPHORE), max_leases, unique_id)
}

fn acquire(count: u32) -> SemaphoreCall {
    SemaphoreCall::Acquire {
        count,
        timeout_ms: None,
    }
}

/// A stepper with one client per recipe, session ids 0x10, 0x20, ...
fn stepper<R: Recipe<Outcome: Observe>>(recipes: Vec<R>) -> Stepper<R> {
    let mut stepper = Stepper::new();
    for (i, recipe) in recipes.into_iter().enumerate() {
        stepper.add_client(recipe, 0x10 * (i as i64 + 1));
    }
    stepper
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

fn children<R: Recipe<Outcome: Observe>>(stepper: &mut Stepper<R>, parent: &str) -> Vec<String> {
    match stepper.admin(&Request::GetChildren {
        path: path(parent),
        watch: false,
    }) {
        Ok(Reply::Children(children)) => children,
        _ => Vec::new(),
    }
}

fn reap_all<R: Recipe<Outcome: Observe>>(stepper: &mut Stepper<R>) {
    for _ in 0..4 {
        stepper.reap();
    }
}

fn take<R: Recipe<Outcome = SemaphoreOutcome>>(
    stepper: &mut Stepper<R>,
    client: ClientId,
) -> Vec<SemaphoreOutcome> {
    stepper.take_outcomes(client)
}

/// The leases and token of the one Acquired the client reported.
fn acquired(outcomes: &[SemaphoreOutcome]) -> (u32, FencingToken) {
    match outcomes {
        [SemaphoreOutcome::Acquired { leases, token }] => (*leases, *token),
        other => panic!("expected one Acquired, got {other:?}"),
    }
}

/// Max 2 leases, three clients asking for one each: two hold, the third
/// waits until one returns. Returns the tokens in grant order.
fn two_of_three<R: Recipe<Call = SemaphoreCall, Outcome = SemaphoreOutcome>>(
    stepper: &mut Stepper<R>,
) -> Vec<FencingToken> {
    let mut tokens = Vec::new();
    for client in 0..3 {
        stepper.call(client, acquire(1));
        stepper.run();
    }
    for client in 0..2 {
        let (leases, token) = acquired(&take(stepper, client));
        assert_eq!(leases, 1);
        tokens.push(token);
    }
    assert!(
        stepper.outcomes(2).is_empty(),
        "c2 waits\n{}",
        stepper.trace()
    );
    stepper.call(0, SemaphoreCall::Return);
    stepper.run();
    assert_eq!(take(stepper, 0), [SemaphoreOutcome::Returned]);
    tokens.push(acquired(&take(stepper, 2)).1);
    for client in [1, 2] {
        stepper.call(client, SemaphoreCall::Return);
        stepper.run();
        assert_eq!(take(stepper, client), [SemaphoreOutcome::Returned]);
    }
    tokens
}

// ---- happy paths, and bug 7 (nodes left behind) ----

#[test]
fn bug7_nodes_left_behind_original_two_of_three_then_leaks_parents() {
    let mut stepper = stepper(vec![original(2, 1), original(2, 2), original(2, 3)]);
    let tokens = two_of_three(&mut stepper);
    assert!(tokens[0] < tokens[2] && tokens[1] < tokens[2], "{tokens:?}");
    reap_all(&mut stepper);
    let expected = [
        "/semaphores",
        SEMAPHORE,
        "/semaphores/db/leases",
        "/semaphores/db/locks",
    ];
    assert_eq!(tree(&stepper), expected, "persistent parents stay");
}

#[test]
fn bug7_nodes_left_behind_fixed_two_of_three_then_nothing_left() {
    let mut stepper = stepper(vec![fixed(2, 1), fixed(2, 2), fixed(2, 3)]);
    let tokens = two_of_three(&mut stepper);
    assert!(tokens[0] < tokens[2] && tokens[1] < tokens[2], "{tokens:?}");
    reap_all(&mut stepper);
    assert!(tree(&stepper).is_empty(), "left: {:?}", tree(&stepper));
}

#[test]
fn fixed_takes_all_leases_at_once_in_arrival_order() {
    // Max 3: c0 takes 2; c1 wants 2 and waits; c2 wants 1, fits, but
    // queues behind c1 (FIFO, all or nothing).
    let mut stepper = stepper(vec![fixed(3, 1), fixed(3, 2), fixed(3, 3)]);
    stepper.call(0, acquire(2));
    stepper.run();
    assert_eq!(acquired(&take(&mut stepper, 0)).0, 2);
    for client in [1, 2] {
        stepper.call(client, acquire([2, 1][client - 1]));
        stepper.run();
        assert!(stepper.outcomes(client).is_empty(), "c{client} waits");
    }
    stepper.call(0, SemaphoreCall::Return);
    stepper.run();
    assert_eq!(acquired(&take(&mut stepper, 1)).0, 2);
    assert_eq!(acquired(&take(&mut stepper, 2)).0, 1);
}

#[test]
fn fixed_refuses_counts_it_can_never_grant() {
    let mut stepper = stepper(vec![fixed(2, 1)]);
    for count in [0, 3] {
        stepper.call(0, acquire(count));
        let outcomes = take(&mut stepper, 0);
        assert!(
            matches!(outcomes.as_slice(), [SemaphoreOutcome::Failed(_)]),
            "{outcomes:?}"
        );
    }
}

#[test]
fn fixed_timed_out_waiter_deletes_its_node() {
    let mut stepper = stepper(vec![fixed(1, 1), fixed(1, 2)]);
    stepper.call(0, acquire(1));
    stepper.run();
    stepper.call(
        1,
        SemaphoreCall::Acquire {
            count: 1,
            timeout_ms: Some(1_000),
        },
    );
    stepper.run();
    assert!(stepper.fire_next_timer(1));
    stepper.run();
    assert_eq!(take(&mut stepper, 1), [SemaphoreOutcome::TimedOut]);
    assert_eq!(
        children(&mut stepper, SEMAPHORE).len(),
        1,
        "only the holder's node"
    );
}

// ---- found in V2: a request for several leases takes them one by one ----

/// Max 2; c0 and c1 each want 2, interleaved round robin.
fn both_want_all<R: Recipe<Call = SemaphoreCall, Outcome = SemaphoreOutcome>>(
    stepper: &mut Stepper<R>,
) {
    stepper.call(0, acquire(2));
    stepper.call(1, acquire(2));
    stepper.run();
}

#[test]
fn partial_acquire_original_deadlock() {
    let mut stepper = stepper(vec![original(2, 1), original(2, 2)]);
    both_want_all(&mut stepper);
    // Each took one lease; the mutex holder made a third and waits for the
    // count to drop, the other waits for the mutex: nobody moves again.
    assert!(
        stepper.outcomes(0).is_empty() && stepper.outcomes(1).is_empty(),
        "{}",
        stepper.trace()
    );
    let leases = children(&mut stepper, "/semaphores/db/leases");
    assert_eq!(leases.len(), 3, "{leases:?}");
    for client in 0..2 {
        let owned = stepper.server().ephemerals_of(stepper.session_id(client));
        let lease_nodes = owned
            .iter()
            .filter(|p| p.as_str().contains("/leases/"))
            .count();
        assert!(lease_nodes >= 1, "c{client} sits on part of its leases");
    }
    stepper.run();
    assert!(
        stepper.outcomes(0).is_empty() && stepper.outcomes(1).is_empty(),
        "still stuck"
    );
}

#[test]
fn partial_acquire_fixed_one_gets_all_then_the_other() {
    let mut stepper = stepper(vec![fixed(2, 1), fixed(2, 2)]);
    both_want_all(&mut stepper);
    let first = (0..2)
        .find(|&c| !stepper.outcomes(c).is_empty())
        .expect("one client holds");
    let other = 1 - first;
    assert_eq!(acquired(&take(&mut stepper, first)).0, 2);
    assert!(stepper.outcomes(other).is_empty());
    stepper.call(first, SemaphoreCall::Return);
    stepper.run();
    assert_eq!(acquired(&take(&mut stepper, other)).0, 2);
}

// ---- found in V2: a lease lost with its session stays in the result ----

/// c0 (max 2, wants 1) creates its lease node; its session expires before
/// it counts the leases; it goes on in a new session.
fn lease_lost_before_counting<R: Recipe<Call = SemaphoreCall, Outcome = SemaphoreOutcome>>(
    stepper: &mut Stepper<R>,
    lease_parent: &str,
) {
    stepper.call(0, acquire(1));
    while children(stepper, lease_parent)
        .iter()
        .all(|n| !n.contains("lease-"))
    {
        assert!(
            stepper.step(0),
            "c0 stopped before creating its lease\n{}",
            stepper.trace()
        );
    }
    stepper.step(0); // the create's reply
    stepper.expire(0);
    stepper.new_session(0, 0x11);
    stepper.run();
}

#[test]
fn dead_lease_original_counts_one_lease_too_many() {
    let mut stepper = stepper(vec![original(2, 1)]);
    lease_lost_before_counting(&mut stepper, "/semaphores/db/leases");
    let (leases, _) = acquired(&take(&mut stepper, 0));
    assert_eq!(
        leases,
        2,
        "asked for 1, told 2 (one of them dead)\n{}",
        stepper.trace()
    );
    assert_eq!(
        children(&mut stepper, "/semaphores/db/leases").len(),
        1,
        "only one lease node is real"
    );
}

#[test]
fn dead_lease_fixed_counts_what_it_holds() {
    let mut stepper = stepper(vec![fixed(2, 1)]);
    lease_lost_before_counting(&mut stepper, SEMAPHORE);
    let (leases, _) = acquired(&take(&mut stepper, 0));
    assert_eq!(leases, 1, "{}", stepper.trace());
    assert_eq!(children(&mut stepper, SEMAPHORE).len(), 1);
}

// ---- bug 8's twin: more holders than leases after a pause ----

/// Max 1: c0 holds, c1 waits, c0's session expires while c0 is paused.
fn pause_holder<R: Recipe<Call = SemaphoreCall, Outcome = SemaphoreOutcome>>(
    stepper: &mut Stepper<R>,
) -> (FencingToken, FencingToken) {
    stepper.call(0, acquire(1));
    stepper.run();
    let stale = acquired(&take(stepper, 0)).1;
    stepper.call(1, acquire(1));
    stepper.run();
    stepper.expire_on_server(0);
    stepper.run_client(1);
    let fresh = acquired(&take(stepper, 1)).1;
    (stale, fresh)
}

#[test]
fn bug8_pause_original_two_holders_of_one_lease_never_told() {
    let mut stepper = stepper(vec![original(1, 1), original(1, 2)]);
    let (stale, fresh) = pause_holder(&mut stepper);
    assert_eq!(stepper.recipe(0).leases_held(), 1, "c0 still believes");
    assert!(stale < fresh);
    stepper.call(0, SemaphoreCall::Return);
    stepper.run();
    assert!(
        !stepper.outcomes(0).contains(&SemaphoreOutcome::Lost),
        "{}",
        stepper.trace()
    );
}

#[test]
fn bug8_pause_fixed_fenced_and_reports_lost() {
    let mut stepper = stepper(vec![fixed(1, 1), fixed(1, 2)]);
    let (stale, fresh) = pause_holder(&mut stepper);
    assert!(stale < fresh, "the stale holder's token is smaller");
    stepper.call(0, SemaphoreCall::Return);
    stepper.run();
    assert_eq!(take(&mut stepper, 0), [SemaphoreOutcome::Lost]);
}

#[test]
fn bug8_expiry_noticed_fixed_reports_lost_at_once() {
    let mut stepper = stepper(vec![fixed(1, 1)]);
    stepper.call(0, acquire(1));
    stepper.run();
    take(&mut stepper, 0);
    stepper.expire(0);
    assert_eq!(take(&mut stepper, 0), [SemaphoreOutcome::Lost]);
    assert_eq!(stepper.recipe(0).leases_held(), 0);
}

// ---- bug 2: a lost create reply (protected creates in both) ----

fn lost_lease_create_reply<R: Recipe<Call = SemaphoreCall, Outcome = SemaphoreOutcome>>(
    stepper: &mut Stepper<R>,
    lease_parent: &str,
) {
    stepper.call(0, acquire(1));
    // Step until the next request is the lease create, then lose its reply.
    loop {
        let next = stepper
            .client(0)
            .outgoing
            .front()
            .map(|(_, request, _)| request.clone());
        if let Some(Request::Create { path, .. }) = &next {
            if path.as_str().starts_with(lease_parent) && path.as_str().ends_with("lease-") {
                break;
            }
        }
        assert!(stepper.step(0), "no lease create\n{}", stepper.trace());
    }
    assert!(stepper.apply_then_disconnect(0));
    stepper.reconnect(0);
    stepper.run();
    assert!(
        matches!(
            take(stepper, 0).as_slice(),
            [SemaphoreOutcome::Acquired { leases: 1, .. }]
        ),
        "{}",
        stepper.trace()
    );
    let leases = children(stepper, lease_parent)
        .into_iter()
        .filter(|n| n.contains("lease-"))
        .count();
    assert_eq!(leases, 1, "no orphan, no duplicate");
}

#[test]
fn bug2_lost_create_reply_original_protection_adopts_the_node() {
    lost_lease_create_reply(&mut stepper(vec![original(2, 1)]), "/semaphores/db/leases");
}

#[test]
fn bug2_lost_create_reply_fixed_adopts_the_node() {
    lost_lease_create_reply(&mut stepper(vec![fixed(2, 1)]), SEMAPHORE);
}

// ---- random walks: the fixed semaphore under every fault ----

/// What the application side of a semaphore random walk has seen.
#[derive(Default)]
struct LeaseObserver {
    /// Client -> leases it holds, as its outcomes say.
    holds: BTreeMap<ClientId, u32>,
    /// The call each client waits an answer for.
    pending: BTreeMap<ClientId, SemaphoreCall>,
}

impl LeaseObserver {
    /// The application makes a call; a Return ends its use of the leases at once.
    fn call(&mut self, client: ClientId, call: SemaphoreCall) {
        self.pending.insert(client, call);
        if call == SemaphoreCall::Return {
            self.holds.remove(&client);
        }
    }

    fn absorb(&mut self, client: ClientId, outcome: &SemaphoreOutcome) {
        let pending = self.pending.remove(&client);
        match outcome {
            SemaphoreOutcome::Acquired { leases, .. } => {
                self.holds.insert(client, *leases);
            }
            SemaphoreOutcome::Lost => {
                self.holds.remove(&client);
                // Unsolicited unless it answers a Return.
                if let Some(call @ SemaphoreCall::Acquire { .. }) = pending {
                    self.pending.insert(client, call);
                }
            }
            SemaphoreOutcome::Returned
            | SemaphoreOutcome::TimedOut
            | SemaphoreOutcome::Failed(_) => {}
        }
    }
}

/// One random walk of three fixed clients sharing `MAX` leases.
fn fixed_semaphore_random_walk(seed: u64, pauses: bool) {
    const MAX: u32 = 2;
    let mut rng = SmallRng::seed_from_u64(seed);
    let mut stepper = Stepper::with_child_order_seed(seed);
    for client in 0..3 {
        stepper.add_client(fixed(MAX, client as u64 + 1), 0x10 * (client as i64 + 1));
    }
    let (mut zombies, mut next_session) = ([false; 3], 0x100_i64);
    let mut seen = LeaseObserver::default();
    let observe = |stepper: &mut Stepper<FixedSemaphore>, seen: &mut LeaseObserver| {
        for client in 0..3 {
            for outcome in stepper.take_outcomes(client) {
                seen.absorb(client, &outcome);
            }
        }
        // Leases of clients in live sessions (a paused one may still believe).
        let live = |c: &ClientId| stepper.server().is_session_alive(stepper.session_id(*c));
        let held: u32 = seen
            .holds
            .iter()
            .filter(|(c, _)| live(c))
            .map(|(_, n)| n)
            .sum();
        assert!(
            held <= MAX,
            "{held} leases held {:?}\n{}",
            seen.holds,
            stepper.trace()
        );
    };
    for _ in 0..400 {
        let client = rng.gen_range(0..3);
        if !seen.pending.contains_key(&client) && !zombies[client] && rng.gen_bool(0.15) {
            let call = if seen.holds.contains_key(&client) {
                SemaphoreCall::Return
            } else {
                let timeout_ms = rng.gen_bool(0.3).then(|| rng.gen_range(1..5_000));
                SemaphoreCall::Acquire {
                    count: rng.gen_range(1..=MAX),
                    timeout_ms,
                }
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
    }
    heal(&mut stepper, &mut zombies, &mut next_session);
    for _ in 0..50 {
        stepper.run();
        observe(&mut stepper, &mut seen);
        for client in (0..3).filter(|c| !zombies[*c]) {
            if seen.holds.contains_key(&client) && !seen.pending.contains_key(&client) {
                seen.call(client, SemaphoreCall::Return);
                stepper.call(client, SemaphoreCall::Return);
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
fn fixed_random_walks_with_faults_never_exceed_max_leases_and_leave_nothing() {
    for seed in 0..300 {
        fixed_semaphore_random_walk(seed, false);
    }
}

#[test]
fn fixed_random_walks_with_pauses_never_exceed_max_leases_among_live_sessions() {
    for seed in 1_000..1_300 {
        fixed_semaphore_random_walk(seed, true);
    }
}

// ---- the fixed semaphore under faults at chosen steps ----

fn children_changed() -> WatchedEvent {
    WatchedEvent::node(EventType::NodeChildrenChanged, path(SEMAPHORE))
}

/// The clients that believe they hold leases.
fn fixed_holders(stepper: &Stepper<FixedSemaphore>, clients: usize) -> Vec<ClientId> {
    (0..clients)
        .filter(|&client| stepper.recipe(client).leases_held() > 0)
        .collect()
}

/// One lease; c0 holds, c1 and c2 wait (child watch). Spurious events (a
/// children change that did not happen, one while c1's read is in flight,
/// a node event of a node nobody watches, a state event) and a duplicate of
/// every real wakeup: one holder at a time, each served once, in order.
#[test]
fn fixed_spurious_and_duplicated_wakeups_keep_the_lease_count() {
    let mut stepper = stepper(vec![fixed(1, 1), fixed(1, 2), fixed(1, 3)]);
    for client in 0..3 {
        stepper.call(client, acquire(1));
        stepper.run();
    }
    let holder_node = format!("{SEMAPHORE}/{}", {
        let mut nodes = children(&mut stepper, SEMAPHORE);
        nodes.sort();
        nodes.remove(0)
    });
    stepper.inject_watch_event(1, children_changed());
    stepper.inject_watch_event(2, children_changed());
    stepper.inject_watch_event(
        1,
        WatchedEvent::node(EventType::NodeDeleted, path(&holder_node)),
    );
    stepper.inject_watch_event(2, WatchedEvent::state(KeeperState::Disconnected));
    assert!(stepper.send(1), "c1's count is on the wire");
    stepper.inject_watch_event(1, children_changed());
    stepper.run();
    assert_eq!(fixed_holders(&stepper, 3), vec![0], "{}", stepper.trace());
    stepper.call(0, SemaphoreCall::Return);
    stepper.run();
    assert_eq!(fixed_holders(&stepper, 3), vec![1], "{}", stepper.trace());
    for client in [1, 2] {
        stepper.inject_watch_event(client, children_changed());
    }
    stepper.run();
    assert_eq!(fixed_holders(&stepper, 3), vec![1], "{}", stepper.trace());
    stepper.call(1, SemaphoreCall::Return);
    stepper.run();
    stepper.inject_watch_event(2, children_changed());
    stepper.run();
    assert_eq!(fixed_holders(&stepper, 3), vec![2], "{}", stepper.trace());
    stepper.call(2, SemaphoreCall::Return);
    stepper.run();
    let tokens: Vec<FencingToken> = (0..3)
        .map(|client| match take(&mut stepper, client).as_slice() {
            [SemaphoreOutcome::Acquired { leases: 1, token }, SemaphoreOutcome::Returned] => *token,
            other => panic!("c{client}: {other:?}\n{}", stepper.trace()),
        })
        .collect();
    assert!(tokens.windows(2).all(|w| w[0] < w[1]), "{tokens:?}");
    reap_all(&mut stepper);
    assert!(tree(&stepper).is_empty(), "left: {:?}", tree(&stepper));
}

/// One lease; c0 holds, c1 and c2 wait. c1's session expires while c1 is
/// paused; c0 returns and c2 takes the lease; only then does c1 learn of
/// the expiry: it has nothing to lose, starts over in its new session and
/// gets the lease after c2.
#[test]
fn fixed_waiter_learning_its_expiry_late_starts_over() {
    let mut stepper = stepper(vec![fixed(1, 1), fixed(1, 2), fixed(1, 3)]);
    for client in 0..3 {
        stepper.call(client, acquire(1));
        stepper.run();
    }
    let first = acquired(&take(&mut stepper, 0)).1;
    stepper.expire_on_server(1);
    stepper.call(0, SemaphoreCall::Return);
    stepper.run();
    assert_eq!(take(&mut stepper, 0), [SemaphoreOutcome::Returned]);
    let second = acquired(&take(&mut stepper, 2)).1;
    assert!(stepper.outcomes(1).is_empty(), "{}", stepper.trace());
    stepper.notice_expiry(1);
    assert!(
        stepper.outcomes(1).is_empty(),
        "a waiter has nothing to lose"
    );
    stepper.new_session(1, 0x21);
    stepper.run();
    assert!(stepper.outcomes(1).is_empty(), "c1 queues behind c2");
    stepper.call(2, SemaphoreCall::Return);
    stepper.run();
    let third = acquired(&take(&mut stepper, 1)).1;
    assert!(
        first < second && second < third,
        "{first:?} {second:?} {third:?}"
    );
    stepper.call(1, SemaphoreCall::Return);
    stepper.run();
    reap_all(&mut stepper);
    assert!(tree(&stepper).is_empty(), "left: {:?}", tree(&stepper));
}

/// One lease. c0 acquires (creating the parent) and returns to c1, then
/// acquires again, waits for c1 and returns; the connection drops before
/// c0's `nth_send`-th request is sent (it fails with ConnectionLoss, not
/// applied) and c0 reconnects at once. Checks at most one holder, the
/// grants in order, nothing left. False once c0 sends fewer requests.
fn not_applied_at(nth_send: usize) -> bool {
    let mut stepper = stepper(vec![fixed(1, 1), fixed(1, 2)]);
    let (mut sends, mut fired) = (0, false);
    let mut run = |stepper: &mut Stepper<FixedSemaphore>| loop {
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
            let holders = fixed_holders(stepper, 2);
            assert!(holders.len() <= 1, "{holders:?}\n{}", stepper.trace());
        }
        if !moved {
            return;
        }
    };
    for (client, call) in [
        (0, acquire(1)),
        (1, acquire(1)),
        (0, SemaphoreCall::Return),
        (0, acquire(1)),
        (1, SemaphoreCall::Return),
        (0, SemaphoreCall::Return),
    ] {
        stepper.call(client, call);
        run(&mut stepper);
    }
    let context = format!("not applied at c0's send {nth_send}\n{}", stepper.trace());
    let (c0, c1) = (take(&mut stepper, 0), take(&mut stepper, 1));
    let tokens = match (c0.as_slice(), c1.as_slice()) {
        (
            [SemaphoreOutcome::Acquired { token: a, .. }, SemaphoreOutcome::Returned, SemaphoreOutcome::Acquired { token: c, .. }, SemaphoreOutcome::Returned],
            [SemaphoreOutcome::Acquired { token: b, .. }, SemaphoreOutcome::Returned],
        ) => [*a, *b, *c],
        other => panic!("{other:?}: {context}"),
    };
    assert!(
        tokens.windows(2).all(|w| w[0] < w[1]),
        "{tokens:?}: {context}"
    );
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
