//! The shared (read/write) lock (recipes/src/shared_lock) against the
//! in-memory server, step by step: the documented order for both variants,
//! known bug 2 (a blind retry of the sequential create leaves an orphan of
//! the client's own session: a writer waits for itself, a reader's orphan
//! blocks every later writer) and bug 8's twin (a writer and a reader
//! together after a pause), on `original` and, same steps, on `fixed`.

use crate::common::random_walk::{heal, random_action};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::collections::BTreeMap;
use zk_recipes::shared_lock::{
    FixedSharedLock, LockMode, OriginalSharedLock, SharedLockCall, SharedLockOutcome,
};
use zk_recipes::zk::Acls;
use zk_recipes::zk::{CreateMode, EventType, KeeperState, Path, Reply, Request, WatchedEvent};
use zk_recipes::{FencingToken, Observe, Recipe};
use zk_sim::client::ConnectionState;
use zk_sim::stepper::{ClientId, Stepper};

const LOCK: &str = "/shared/db";
const READ: SharedLockCall = SharedLockCall::Acquire {
    mode: LockMode::Read,
};
const WRITE: SharedLockCall = SharedLockCall::Acquire {
    mode: LockMode::Write,
};

fn path(text: &str) -> Path {
    Path::new(text).unwrap()
}

/// Original clients, with the lock node the documentation assumes.
fn originals(count: usize) -> Stepper<OriginalSharedLock> {
    let mut stepper = Stepper::new();
    for node in ["/shared", LOCK] {
        let create = Request::Create {
            path: path(node),
            data: Vec::new(),
            mode: CreateMode::Persistent,
            acl: Acls::Open,
        };
        stepper.admin(&create).unwrap();
    }
    for i in 0..count {
        stepper.add_client(OriginalSharedLock::new(path(LOCK)), 0x10 * (i as i64 + 1));
    }
    stepper
}

/// Fixed clients; they create their container parents themselves.
fn fixeds(count: usize) -> Stepper<FixedSharedLock> {
    let mut stepper = Stepper::new();
    for i in 0..count {
        stepper.add_client(
            FixedSharedLock::new(path(LOCK), i as u64 + 1),
            0x10 * (i as i64 + 1),
        );
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

fn lock_children<R: Recipe<Outcome: Observe>>(stepper: &mut Stepper<R>) -> Vec<String> {
    match stepper.admin(&Request::GetChildren {
        path: path(LOCK),
        watch: false,
    }) {
        Ok(Reply::Children(children)) => children,
        _ => Vec::new(),
    }
}

fn take<R: Recipe<Outcome = SharedLockOutcome>>(
    stepper: &mut Stepper<R>,
    client: ClientId,
) -> Vec<SharedLockOutcome> {
    stepper.take_outcomes(client)
}

fn acquired(outcomes: &[SharedLockOutcome], expected: LockMode) -> FencingToken {
    match outcomes {
        [SharedLockOutcome::Acquired { mode, token }] if *mode == expected => *token,
        other => panic!("expected one Acquired {expected:?}, got {other:?}"),
    }
}

fn release<R: Recipe<Call = SharedLockCall, Outcome = SharedLockOutcome>>(
    stepper: &mut Stepper<R>,
    client: ClientId,
) {
    stepper.call(client, SharedLockCall::Release);
    stepper.run();
    assert_eq!(
        take(stepper, client),
        [SharedLockOutcome::Released],
        "{}",
        stepper.trace()
    );
}

/// r0 and r1 read together; w2 waits for both; r3 arrives after w2 and
/// waits for it; then w2 writes alone, then r3 reads.
fn documented_order<R: Recipe<Call = SharedLockCall, Outcome = SharedLockOutcome>>(
    stepper: &mut Stepper<R>,
) {
    for (client, call) in [READ, READ, WRITE, READ].into_iter().enumerate() {
        stepper.call(client, call);
        stepper.run();
    }
    acquired(&take(stepper, 0), LockMode::Read);
    acquired(&take(stepper, 1), LockMode::Read);
    assert!(
        stepper.outcomes(2).is_empty() && stepper.outcomes(3).is_empty(),
        "{}",
        stepper.trace()
    );
    release(stepper, 0);
    assert!(stepper.outcomes(2).is_empty(), "w2 waits for r1 too");
    release(stepper, 1);
    acquired(&take(stepper, 2), LockMode::Write);
    assert!(stepper.outcomes(3).is_empty(), "r3 waits for w2");
    release(stepper, 2);
    acquired(&take(stepper, 3), LockMode::Read);
    release(stepper, 3);
}

#[test]
fn original_follows_the_documented_order() {
    let mut stepper = originals(4);
    documented_order(&mut stepper);
    assert!(lock_children(&mut stepper).is_empty());
}

#[test]
fn fixed_follows_the_documented_order_and_leaves_nothing() {
    let mut stepper = fixeds(4);
    documented_order(&mut stepper);
    for _ in 0..3 {
        stepper.reap();
    }
    assert!(tree(&stepper).is_empty(), "left: {:?}", tree(&stepper));
}

#[test]
fn fixed_reader_watches_the_writer_not_the_other_readers() {
    let mut stepper = fixeds(3);
    for (client, call) in [WRITE, READ, READ].into_iter().enumerate() {
        stepper.call(client, call);
        stepper.run();
    }
    let writer_node = stepper.server().ephemerals_of(stepper.session_id(0))[0].clone();
    for reader in [1, 2] {
        let watched: Vec<Path> = stepper
            .client(reader)
            .watches
            .data
            .keys()
            .cloned()
            .collect();
        assert_eq!(
            watched,
            std::slice::from_ref(&writer_node),
            "r{reader} watches the writer only"
        );
    }
    acquired(&take(&mut stepper, 0), LockMode::Write);
    release(&mut stepper, 0);
    acquired(&take(&mut stepper, 1), LockMode::Read);
    acquired(&take(&mut stepper, 2), LockMode::Read);
}

// ---- bug 2: the blind retry of the sequential create ----

/// c0's create is applied but its reply lost; c0 reconnects and goes on.
fn lose_first_create_reply<R: Recipe<Call = SharedLockCall, Outcome = SharedLockOutcome>>(
    stepper: &mut Stepper<R>,
    call: SharedLockCall,
) {
    stepper.call(0, call);
    // The fixed lock first creates its parents; lose the reply of the node's create.
    while !matches!(
        stepper.client(0).outgoing.front(),
        Some((
            _,
            Request::Create {
                mode: CreateMode::EphemeralSequential,
                ..
            },
            _
        ))
    ) {
        assert!(stepper.step(0), "{}", stepper.trace());
    }
    assert!(stepper.apply_then_disconnect(0));
    stepper.reconnect(0);
    stepper.run();
}

#[test]
fn bug2_blind_retry_original_writer_waits_for_its_own_orphan() {
    let mut stepper = originals(2);
    lose_first_create_reply(&mut stepper, WRITE);
    let owned = stepper.server().ephemerals_of(stepper.session_id(0));
    assert_eq!(owned.len(), 2, "the orphan and the retry: {owned:?}");
    assert!(
        stepper.outcomes(0).is_empty(),
        "w0 waits for its own orphan\n{}",
        stepper.trace()
    );
    stepper.call(1, READ);
    stepper.run();
    assert!(
        stepper.outcomes(1).is_empty(),
        "and so does everyone behind it"
    );
}

#[test]
fn bug2_blind_retry_original_reader_orphan_blocks_writers_after_release() {
    let mut stepper = originals(2);
    lose_first_create_reply(&mut stepper, READ);
    acquired(&take(&mut stepper, 0), LockMode::Read);
    release(&mut stepper, 0);
    let owned = stepper.server().ephemerals_of(stepper.session_id(0));
    assert_eq!(owned.len(), 1, "the orphan outlives the release: {owned:?}");
    stepper.call(1, WRITE);
    stepper.run();
    assert!(
        stepper.outcomes(1).is_empty(),
        "w1 waits for the orphan as long as r0's session lives"
    );
}

#[test]
fn bug2_lost_create_reply_fixed_writer_adopts_its_node() {
    let mut stepper = fixeds(2);
    lose_first_create_reply(&mut stepper, WRITE);
    acquired(&take(&mut stepper, 0), LockMode::Write);
    assert_eq!(
        stepper.server().ephemerals_of(stepper.session_id(0)).len(),
        1
    );
    stepper.call(1, READ);
    stepper.run();
    release(&mut stepper, 0);
    acquired(&take(&mut stepper, 1), LockMode::Read);
}

#[test]
fn bug2_lost_create_reply_fixed_reader_leaves_no_orphan() {
    let mut stepper = fixeds(2);
    lose_first_create_reply(&mut stepper, READ);
    acquired(&take(&mut stepper, 0), LockMode::Read);
    release(&mut stepper, 0);
    assert!(stepper
        .server()
        .ephemerals_of(stepper.session_id(0))
        .is_empty());
    stepper.call(1, WRITE);
    stepper.run();
    acquired(&take(&mut stepper, 1), LockMode::Write);
}

// ---- bug 8's twin: a writer and a reader together after a pause ----

/// w0 holds; r1 waits; w0's session expires while w0 is paused.
fn pause_writer<R: Recipe<Call = SharedLockCall, Outcome = SharedLockOutcome>>(
    stepper: &mut Stepper<R>,
) -> (FencingToken, FencingToken) {
    stepper.call(0, WRITE);
    stepper.run();
    let stale = acquired(&take(stepper, 0), LockMode::Write);
    stepper.call(1, READ);
    stepper.run();
    stepper.expire_on_server(0);
    stepper.run_client(1);
    (stale, acquired(&take(stepper, 1), LockMode::Read))
}

#[test]
fn bug8_pause_original_writer_and_reader_together_never_told() {
    let mut stepper = originals(2);
    let (stale, fresh) = pause_writer(&mut stepper);
    assert_eq!(
        stepper.recipe(0).holding(),
        Some(LockMode::Write),
        "w0 still believes"
    );
    assert!(stale < fresh);
    stepper.call(0, SharedLockCall::Release);
    stepper.run();
    assert!(
        !stepper.outcomes(0).contains(&SharedLockOutcome::Lost),
        "{:?}",
        stepper.outcomes(0)
    );
}

#[test]
fn bug8_pause_fixed_fenced_and_reports_lost() {
    let mut stepper = fixeds(2);
    let (stale, fresh) = pause_writer(&mut stepper);
    assert!(stale < fresh, "the stale writer's token is smaller");
    stepper.call(0, SharedLockCall::Release);
    stepper.run();
    assert_eq!(take(&mut stepper, 0), [SharedLockOutcome::Lost]);
}

#[test]
fn bug8_expiry_noticed_fixed_writer_reports_lost_at_once() {
    let mut stepper = fixeds(2);
    stepper.call(0, WRITE);
    stepper.run();
    take(&mut stepper, 0);
    stepper.expire(0);
    assert_eq!(take(&mut stepper, 0), [SharedLockOutcome::Lost]);
    assert_eq!(stepper.recipe(0).holding(), None);
}

// ---- random walks: the fixed shared lock under every fault ----

/// What the application side of a shared lock random walk has seen.
#[derive(Default)]
struct ModeObserver {
    /// Client -> the mode it holds, as its outcomes say.
    holds: BTreeMap<ClientId, LockMode>,
    /// The call each client waits an answer for.
    pending: BTreeMap<ClientId, SharedLockCall>,
    /// The largest token granted, and the largest granted to a writer.
    max_token: Option<FencingToken>,
    max_write_token: Option<FencingToken>,
}

impl ModeObserver {
    /// The application makes a call; a Release ends its critical section at once.
    fn call(&mut self, client: ClientId, call: SharedLockCall) {
        self.pending.insert(client, call);
        if call == SharedLockCall::Release {
            self.holds.remove(&client);
        }
    }

    /// An outcome of `client`, whose session is `alive`. A writer granted
    /// in a live session comes after every grant before it; a reader after
    /// every writer before it. (A paused client may report a grant late.)
    fn absorb(&mut self, client: ClientId, outcome: &SharedLockOutcome, alive: bool, trace: &str) {
        let pending = self.pending.remove(&client);
        match outcome {
            SharedLockOutcome::Acquired { mode, token } => {
                let after = match mode {
                    LockMode::Write => self.max_token,
                    LockMode::Read => self.max_write_token,
                };
                assert!(
                    !alive || after < Some(*token),
                    "{mode:?} token {token:?} after {after:?}\n{trace}"
                );
                self.max_token = self.max_token.max(Some(*token));
                if *mode == LockMode::Write {
                    self.max_write_token = self.max_write_token.max(Some(*token));
                }
                self.holds.insert(client, *mode);
            }
            SharedLockOutcome::Lost => {
                self.holds.remove(&client);
                if let Some(call @ SharedLockCall::Acquire { .. }) = pending {
                    self.pending.insert(client, call);
                }
            }
            SharedLockOutcome::Released | SharedLockOutcome::Failed(_) => {}
        }
    }
}

/// One random walk of three fixed clients.
fn fixed_shared_lock_random_walk(seed: u64, pauses: bool) {
    let mut rng = SmallRng::seed_from_u64(seed);
    let mut stepper = Stepper::with_child_order_seed(seed);
    for client in 0..3 {
        let recipe = FixedSharedLock::new(path(LOCK), client as u64 + 1);
        stepper.add_client(recipe, 0x10 * (client as i64 + 1));
    }
    let (mut zombies, mut next_session) = ([false; 3], 0x100_i64);
    let mut seen = ModeObserver::default();
    let observe = |stepper: &mut Stepper<FixedSharedLock>, seen: &mut ModeObserver| {
        for client in 0..3 {
            let alive = stepper
                .server()
                .is_session_alive(stepper.session_id(client));
            for outcome in stepper.take_outcomes(client) {
                seen.absorb(client, &outcome, alive, stepper.trace());
            }
        }
        let live = |c: &ClientId| stepper.server().is_session_alive(stepper.session_id(*c));
        let holders: Vec<_> = seen.holds.iter().filter(|(c, _)| live(c)).collect();
        let writers = holders
            .iter()
            .filter(|(_, m)| **m == LockMode::Write)
            .count();
        assert!(
            writers == 0 || holders.len() == 1,
            "holders {holders:?}\n{}",
            stepper.trace()
        );
    };
    for _ in 0..400 {
        let client = rng.gen_range(0..3);
        if !seen.pending.contains_key(&client) && !zombies[client] && rng.gen_bool(0.15) {
            let call = match (seen.holds.contains_key(&client), rng.gen_bool(0.5)) {
                (true, _) => SharedLockCall::Release,
                (false, true) => READ,
                (false, false) => WRITE,
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
                seen.call(client, SharedLockCall::Release);
                stepper.call(client, SharedLockCall::Release);
            }
        }
        stepper.run();
        observe(&mut stepper, &mut seen);
    }
    let healthy_pending: Vec<_> = seen.pending.iter().filter(|(c, _)| !zombies[**c]).collect();
    assert!(
        healthy_pending.is_empty(),
        "unanswered {healthy_pending:?}\n{}",
        stepper.trace()
    );
    for _ in 0..3 {
        stepper.reap();
    }
    assert!(
        tree(&stepper).is_empty(),
        "left {:?}\n{}",
        tree(&stepper),
        stepper.trace()
    );
}

#[test]
fn fixed_random_walks_with_faults_never_a_writer_with_anyone_and_leave_nothing() {
    for seed in 0..300 {
        fixed_shared_lock_random_walk(seed, false);
    }
}

#[test]
fn fixed_random_walks_with_pauses_never_a_writer_with_anyone_among_live_sessions() {
    for seed in 1_000..1_300 {
        fixed_shared_lock_random_walk(seed, true);
    }
}

// ---- the fixed shared lock under faults at chosen steps ----

fn deleted(node: &str) -> WatchedEvent {
    WatchedEvent::node(EventType::NodeDeleted, path(&format!("{LOCK}/{node}")))
}

/// The mode each client believes it holds.
fn fixed_holders(stepper: &Stepper<FixedSharedLock>, clients: usize) -> Vec<(ClientId, LockMode)> {
    (0..clients)
        .filter_map(|client| Some((client, stepper.recipe(client).holding()?)))
        .collect()
}

/// Never a writer together with another holder.
fn assert_exclusive_writer(stepper: &Stepper<FixedSharedLock>, clients: usize) {
    let holders = fixed_holders(stepper, clients);
    let writers = holders
        .iter()
        .filter(|(_, m)| *m == LockMode::Write)
        .count();
    assert!(
        writers == 0 || holders.len() == 1,
        "holders {holders:?}\n{}",
        stepper.trace()
    );
}

/// w0 writes; r1 and r2 wait for w0; w3 waits for r2. Spurious deletions
/// of nodes still there (one while w3's read is in flight), a state event,
/// and a duplicate of every real wakeup: never a writer with anyone, and
/// the documented order.
#[test]
fn fixed_spurious_and_duplicated_wakeups_never_let_a_writer_share() {
    let mut stepper = fixeds(4);
    for (client, call) in [WRITE, READ, READ, WRITE].into_iter().enumerate() {
        stepper.call(client, call);
        stepper.run();
    }
    let mut nodes = lock_children(&mut stepper);
    nodes.sort();
    let [w0, _, r2, _] = [0, 1, 2, 3].map(|i| nodes[i].clone());
    stepper.inject_watch_event(1, deleted(&w0));
    stepper.inject_watch_event(2, WatchedEvent::state(KeeperState::SyncConnected));
    assert!(stepper.send(1), "r1's re-check is on the wire");
    stepper.inject_watch_event(1, deleted(&w0));
    stepper.inject_watch_event(3, deleted(&r2));
    stepper.run();
    assert_exclusive_writer(&stepper, 4);
    assert_eq!(
        fixed_holders(&stepper, 4),
        vec![(0, LockMode::Write)],
        "{}",
        stepper.trace()
    );
    acquired(&take(&mut stepper, 0), LockMode::Write);
    release(&mut stepper, 0);
    assert_eq!(
        fixed_holders(&stepper, 4),
        vec![(1, LockMode::Read), (2, LockMode::Read)],
        "{}",
        stepper.trace()
    );
    for reader in [1, 2] {
        stepper.inject_watch_event(reader, deleted(&w0));
    }
    stepper.inject_watch_event(3, deleted(&r2));
    stepper.run();
    assert_exclusive_writer(&stepper, 4);
    for reader in [1, 2] {
        acquired(&take(&mut stepper, reader), LockMode::Read);
    }
    release(&mut stepper, 1);
    assert_eq!(
        fixed_holders(&stepper, 4),
        vec![(2, LockMode::Read)],
        "w3 waits for r2\n{}",
        stepper.trace()
    );
    release(&mut stepper, 2);
    stepper.inject_watch_event(3, deleted(&r2));
    stepper.run();
    assert_eq!(fixed_holders(&stepper, 4), vec![(3, LockMode::Write)]);
    acquired(&take(&mut stepper, 3), LockMode::Write);
    release(&mut stepper, 3);
    for _ in 0..3 {
        stepper.reap();
    }
    assert!(tree(&stepper).is_empty(), "left: {:?}", tree(&stepper));
}

/// w0 writes; r1 waits for w0, w2 for r1. r1's session expires while r1 is
/// paused; w0 releases and w2 writes; only then does r1 learn of the
/// expiry: it has nothing to lose, starts over in its new session and reads
/// after w2.
#[test]
fn fixed_waiter_learning_its_expiry_late_starts_over() {
    let mut stepper = fixeds(3);
    for (client, call) in [WRITE, READ, WRITE].into_iter().enumerate() {
        stepper.call(client, call);
        stepper.run();
    }
    let first = acquired(&take(&mut stepper, 0), LockMode::Write);
    stepper.expire_on_server(1);
    release(&mut stepper, 0);
    let second = acquired(&take(&mut stepper, 2), LockMode::Write);
    assert!(stepper.outcomes(1).is_empty(), "{}", stepper.trace());
    stepper.notice_expiry(1);
    assert!(
        stepper.outcomes(1).is_empty(),
        "a waiter has nothing to lose"
    );
    stepper.new_session(1, 0x21);
    stepper.run();
    assert!(stepper.outcomes(1).is_empty(), "r1 waits for w2");
    release(&mut stepper, 2);
    let third = acquired(&take(&mut stepper, 1), LockMode::Read);
    assert!(
        first < second && second < third,
        "{first:?} {second:?} {third:?}"
    );
    release(&mut stepper, 1);
    for _ in 0..3 {
        stepper.reap();
    }
    assert!(tree(&stepper).is_empty(), "left: {:?}", tree(&stepper));
}

/// c0 writes (creating the parents) and releases to reader c1, then asks to
/// write again, waits for c1 and releases; the connection drops before
/// c0's `nth_send`-th request is sent (it fails with ConnectionLoss, not
/// applied) and c0 reconnects at once. Checks the writer is never with
/// anyone, the grants in order, nothing left. False once c0 sends fewer
/// requests.
fn not_applied_at(nth_send: usize) -> bool {
    let mut stepper = fixeds(2);
    let (mut sends, mut fired) = (0, false);
    let mut run = |stepper: &mut Stepper<FixedSharedLock>| loop {
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
            assert_exclusive_writer(stepper, 2);
        }
        if !moved {
            return;
        }
    };
    for (client, call) in [
        (0, WRITE),
        (1, READ),
        (0, SharedLockCall::Release),
        (0, WRITE),
        (1, SharedLockCall::Release),
        (0, SharedLockCall::Release),
    ] {
        stepper.call(client, call);
        run(&mut stepper);
    }
    let context = format!("not applied at c0's send {nth_send}\n{}", stepper.trace());
    let (c0, c1) = (take(&mut stepper, 0), take(&mut stepper, 1));
    let tokens = match (c0.as_slice(), c1.as_slice()) {
        (
            [SharedLockOutcome::Acquired {
                mode: LockMode::Write,
                token: a,
            }, SharedLockOutcome::Released, SharedLockOutcome::Acquired {
                mode: LockMode::Write,
                token: c,
            }, SharedLockOutcome::Released],
            [SharedLockOutcome::Acquired {
                mode: LockMode::Read,
                token: b,
            }, SharedLockOutcome::Released],
        ) => [*a, *b, *c],
        other => panic!("{other:?}: {context}"),
    };
    assert!(
        tokens.windows(2).all(|w| w[0] < w[1]),
        "{tokens:?}: {context}"
    );
    for _ in 0..3 {
        stepper.reap();
    }
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
