//! The exclusive lock (seed 000's WriteLock) against the in-memory server,
//! stepped in explicit orders: the happy path for both variants, every known
//! bug that concerns this recipe reproduced on `original` and shown fixed on
//! `fixed` with the same steps, bugs of the seed code that the list does not
//! name, and fault sweeps over the fixed variant.
//!
//! Client session ids (and the fixed variant's unique ids) are small decimal
//! numbers of equal length, so the original's string order of prefixes is
//! their numeric order: 100 < 200 < 300.

use std::collections::BTreeSet;
use zk_recipes::lock::{FixedLock, LockCall, LockError, LockOutcome, OriginalLock};
use zk_recipes::zk::Acls;
use zk_recipes::zk::{
    CreateMode, EventType, KeeperState, Path, PathError, Request, WatchedEvent, ZkError,
};
use zk_recipes::{FencingToken, Input, Outbox, Recipe};
use zk_sim::stepper::{ClientId, Stepper};

const LOCKS: &str = "/locks";

fn locks_dir() -> Path {
    Path::new(LOCKS).unwrap()
}

fn original(_uid: u64) -> OriginalLock {
    OriginalLock::new(locks_dir())
}

fn fixed(uid: u64) -> FixedLock {
    FixedLock::new(locks_dir(), uid)
}

trait LockRecipe: Recipe<Call = LockCall, Outcome = LockOutcome> {}
impl<R: Recipe<Call = LockCall, Outcome = LockOutcome>> LockRecipe for R {}

/// A stepper with the lock directory in place.
fn new_stepper<R: LockRecipe>() -> Stepper<R> {
    let mut s = Stepper::new();
    let mkdir = Request::Create {
        path: locks_dir(),
        data: Vec::new(),
        mode: CreateMode::Persistent,
        acl: Acls::Open,
    };
    s.admin(&mkdir).expect("create /locks");
    s
}

/// Adds a client whose session id (and unique id) is `id`.
fn add<R: LockRecipe>(s: &mut Stepper<R>, make: fn(u64) -> R, id: u64) -> ClientId {
    s.add_client(make(id), id as i64)
}

/// Names of the nodes under /locks, sorted.
fn lock_nodes<R: LockRecipe>(s: &Stepper<R>) -> Vec<String> {
    let dir = locks_dir();
    s.server()
        .paths()
        .into_iter()
        .filter(|p| p.parent().as_ref() == Some(&dir))
        .map(|p| p.name().to_string())
        .collect()
}

fn tokens(outcomes: &[LockOutcome]) -> Vec<FencingToken> {
    outcomes
        .iter()
        .filter_map(|o| match o {
            LockOutcome::Acquired { token } => Some(*token),
            _ => None,
        })
        .collect()
}

fn acquired<R: LockRecipe>(s: &Stepper<R>, c: ClientId) -> usize {
    tokens(s.outcomes(c)).len()
}

fn token_of<R: LockRecipe>(s: &Stepper<R>, c: ClientId) -> FencingToken {
    *tokens(s.outcomes(c))
        .last()
        .unwrap_or_else(|| panic!("c{c} never acquired\n{}", s.trace()))
}

/// Steps `c` until the next request it would send matches `wanted`.
fn advance_until_next_is<R: LockRecipe>(
    s: &mut Stepper<R>,
    c: ClientId,
    wanted: fn(&Request) -> bool,
) {
    loop {
        if s.client(c)
            .outgoing
            .front()
            .is_some_and(|(_, request, _)| wanted(request))
        {
            return;
        }
        assert!(
            s.step(c),
            "c{c} went quiet before the expected request\n{}",
            s.trace()
        );
    }
}

fn is_lock_node_create(request: &Request) -> bool {
    matches!(
        request,
        Request::Create {
            mode: CreateMode::EphemeralSequential,
            ..
        }
    )
}

fn is_watching_exists(request: &Request) -> bool {
    matches!(request, Request::Exists { watch: true, .. })
}

fn is_get_children(request: &Request) -> bool {
    matches!(request, Request::GetChildren { .. })
}

/// A lock recipe that counts the node events (watch notifications other
/// than connection state changes) the client session handed it.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct Counted<R> {
    inner: R,
    node_events: u32,
}

impl<R: LockRecipe> Recipe for Counted<R> {
    type Call = LockCall;
    type Outcome = LockOutcome;

    fn handle(&mut self, input: Input<LockCall>, out: &mut Outbox<LockOutcome>) {
        if matches!(&input, Input::Watch(event) | Input::WatcherEvent { event, .. } if event.event_type != EventType::None)
        {
            self.node_events += 1;
        }
        self.inner.handle(input, out);
    }
}

/// Adds a counted client whose session id (and unique id) is `id`.
fn add_counted<R: LockRecipe>(
    s: &mut Stepper<Counted<R>>,
    make: fn(u64) -> R,
    id: u64,
) -> ClientId {
    let recipe = Counted {
        inner: make(id),
        node_events: 0,
    };
    s.add_client(recipe, id as i64)
}

/// Steps all clients round-robin until none can move, as `Stepper::run`
/// does, and returns the clients woken by a node event, in delivery order
/// (one step delivers at most one event).
fn run_noting_wakeups<R: LockRecipe>(
    s: &mut Stepper<Counted<R>>,
    clients: &[ClientId],
) -> Vec<ClientId> {
    let mut woken = Vec::new();
    loop {
        let mut moved = false;
        for &c in clients {
            let before = s.recipe(c).node_events;
            moved |= s.step(c);
            if s.recipe(c).node_events > before {
                woken.push(c);
            }
        }
        if !moved {
            return woken;
        }
    }
}

/// A shared resource that refuses writes carrying a token older than one
/// it has seen: the fenced form of mutual exclusion.
#[derive(Default)]
struct FencedResource {
    newest: Option<FencingToken>,
}

impl FencedResource {
    fn write(&mut self, token: FencingToken) -> bool {
        if self.newest.is_some_and(|newest| token < newest) {
            return false;
        }
        self.newest = Some(token);
        true
    }
}

// ---------------------------------------------------------------------------
// Happy path
// ---------------------------------------------------------------------------

/// Four contenders queue in arrival order; each release hands the lock to
/// the next; tokens grow; nothing is left behind.
fn happy_path<R: LockRecipe>(make: fn(u64) -> R) {
    let mut s = new_stepper();
    let clients: Vec<ClientId> = [100, 200, 300, 400]
        .into_iter()
        .map(|id| add(&mut s, make, id))
        .collect();
    for &c in &clients {
        s.call(c, LockCall::Lock);
        s.run_client(c);
    }
    s.run();
    let mut order = Vec::new();
    let mut last_token = None;
    for _ in 0..clients.len() {
        let holders: Vec<ClientId> = clients
            .iter()
            .copied()
            .filter(|&c| acquired(&s, c) == 1 && !s.outcomes(c).contains(&LockOutcome::Released))
            .collect();
        assert_eq!(
            holders.len(),
            1,
            "exactly one holder at a time: {holders:?}\n{}",
            s.trace()
        );
        let holder = holders[0];
        let token = token_of(&s, holder);
        assert!(
            last_token < Some(token),
            "tokens grow: {last_token:?} then {token:?}"
        );
        last_token = Some(token);
        order.push(holder);
        s.call(holder, LockCall::Unlock);
        s.run();
        assert_eq!(
            s.outcomes(holder).last(),
            Some(&LockOutcome::Released),
            "{}",
            s.trace()
        );
    }
    assert_eq!(order, clients, "granted in arrival order\n{}", s.trace());
    for &c in &clients {
        assert_eq!(
            s.outcomes(c).len(),
            2,
            "one Acquired and one Released each: {:?}",
            s.outcomes(c)
        );
    }
    assert!(lock_nodes(&s).is_empty(), "leaked: {:?}", lock_nodes(&s));
}

#[test]
fn happy_path_original_grants_in_arrival_order() {
    happy_path(original);
}

#[test]
fn happy_path_fixed_grants_in_arrival_order() {
    happy_path(fixed);
}

// ---------------------------------------------------------------------------
// Known bug 1: ordering by prefix (`x-<sessionId>`) before the sequence
// ---------------------------------------------------------------------------

/// Holder H (id 200) holds; newcomer N (id 100) arrives later.
fn prefix_ordering_two_contenders<R: LockRecipe>(
    make: fn(u64) -> R,
) -> (Stepper<R>, ClientId, ClientId) {
    let mut s = new_stepper();
    let holder = add(&mut s, make, 200);
    let newcomer = add(&mut s, make, 100);
    s.call(holder, LockCall::Lock);
    s.run_client(holder);
    assert_eq!(acquired(&s, holder), 1, "{}", s.trace());
    s.call(newcomer, LockCall::Lock);
    s.run_client(newcomer);
    (s, holder, newcomer)
}

#[test]
fn bug1_prefix_ordering_original_two_holders() {
    let (s, holder, newcomer) = prefix_ordering_two_contenders(original);
    assert_eq!(lock_nodes(&s), vec!["x-100-0000000001", "x-200-0000000000"]);
    assert_eq!(
        acquired(&s, newcomer),
        1,
        "x-100-… sorts before x-200-…: the newcomer takes it\n{}",
        s.trace()
    );
    assert!(
        s.recipe(holder).is_owner() && s.recipe(newcomer).is_owner(),
        "two holders at once"
    );
    assert!(!s.outcomes(holder).contains(&LockOutcome::Released));
}

#[test]
fn bug1_prefix_ordering_fixed_holds() {
    let (mut s, holder, newcomer) = prefix_ordering_two_contenders(fixed);
    assert_eq!(
        acquired(&s, newcomer),
        0,
        "the newcomer waits\n{}",
        s.trace()
    );
    s.call(holder, LockCall::Unlock);
    s.run();
    assert_eq!(acquired(&s, newcomer), 1, "{}", s.trace());
    assert!(token_of(&s, holder) < token_of(&s, newcomer));
}

/// H (100) holds, W (300) waits, N (200) arrives last; H releases.
fn prefix_ordering_three_contenders<R: LockRecipe>(
    make: fn(u64) -> R,
) -> (Stepper<Counted<R>>, [ClientId; 3], Vec<ClientId>) {
    let mut s = new_stepper();
    let clients = [
        add_counted(&mut s, make, 100),
        add_counted(&mut s, make, 300),
        add_counted(&mut s, make, 200),
    ];
    for c in clients {
        s.call(c, LockCall::Lock);
        s.run_client(c);
    }
    s.call(clients[0], LockCall::Unlock);
    let notified = run_noting_wakeups(&mut s, &clients);
    (s, clients, notified)
}

#[test]
fn bug1_prefix_ordering_original_breaks_fifo() {
    let (s, [_, early, late], notified) = prefix_ordering_three_contenders(original);
    assert_eq!(
        acquired(&s, late),
        1,
        "the later x-200 overtakes the earlier x-300\n{}",
        s.trace()
    );
    assert_eq!(acquired(&s, early), 0);
    // Both sorted themselves right behind x-100 and watched it: one release, two wakeups.
    assert_eq!(notified, vec![early, late], "{}", s.trace());
}

#[test]
fn bug1_prefix_ordering_fixed_keeps_fifo() {
    let (s, [_, early, late], notified) = prefix_ordering_three_contenders(fixed);
    assert_eq!(acquired(&s, early), 1, "{}", s.trace());
    assert_eq!(acquired(&s, late), 0);
    assert_eq!(notified, vec![early]);
}

// ---------------------------------------------------------------------------
// Known bugs 2 and 3: the create reply is lost
// ---------------------------------------------------------------------------

/// Client A (100) locks; the server applies its create but the reply is lost
/// to a connection loss; A reconnects into the same session and goes on.
fn create_reply_lost<R: LockRecipe>(make: fn(u64) -> R) -> (Stepper<R>, ClientId) {
    let mut s = new_stepper();
    let a = add(&mut s, make, 100);
    s.call(a, LockCall::Lock);
    advance_until_next_is(&mut s, a, is_lock_node_create);
    assert!(s.apply_then_disconnect(a));
    s.reconnect(a);
    s.run();
    (s, a)
}

#[test]
fn bug2_create_retry_original_no_duplicate_but_orphan_blocks_waiters() {
    let (mut s, a) = create_reply_lost(original);
    // Seed 000 looks for `x-<sessionId>-` before creating again: no duplicate …
    assert_eq!(lock_nodes(&s), vec!["x-100-0000000000"], "{}", s.trace());
    // … but it adopts the node under its bare name (bug 3) and never holds it.
    assert_eq!(acquired(&s, a), 0, "{}", s.trace());
    let b = add(&mut s, original, 200);
    s.call(b, LockCall::Lock);
    s.run();
    assert_eq!(acquired(&s, b), 0, "B waits behind A's node\n{}", s.trace());
    s.call(a, LockCall::Unlock);
    s.run();
    assert!(
        matches!(
            s.outcomes(a),
            [
                LockOutcome::Released,
                LockOutcome::Failed(LockError::InvalidPath(_))
            ]
        ),
        "{:?}",
        s.outcomes(a)
    );
    // The orphan stays while A's session lives: B waits forever.
    assert_eq!(lock_nodes(&s), vec!["x-100-0000000000", "x-200-0000000001"]);
    assert_eq!(acquired(&s, b), 0, "{}", s.trace());
}

#[test]
fn bug2_create_retry_fixed_adopts_own_node() {
    let (mut s, a) = create_reply_lost(fixed);
    assert_eq!(
        lock_nodes(&s),
        vec!["x-100-0000000000"],
        "no second node\n{}",
        s.trace()
    );
    assert_eq!(acquired(&s, a), 1, "{}", s.trace());
    let b = add(&mut s, fixed, 200);
    s.call(b, LockCall::Lock);
    s.run();
    assert_eq!(acquired(&s, b), 0);
    s.call(a, LockCall::Unlock);
    s.run();
    assert_eq!(s.outcomes(a).last(), Some(&LockOutcome::Released));
    assert_eq!(acquired(&s, b), 1, "{}", s.trace());
    assert!(token_of(&s, a) < token_of(&s, b));
    s.call(b, LockCall::Unlock);
    s.run();
    assert!(lock_nodes(&s).is_empty(), "leaked: {:?}", lock_nodes(&s));
}

#[test]
fn bug3_bare_id_original_watches_itself_and_leaks() {
    let (mut s, a) = create_reply_lost(original);
    let own = Path::new("/locks/x-100-0000000000").unwrap();
    assert_eq!(
        s.recipe(a).id(),
        Some("x-100-0000000000"),
        "a bare child name, not a full path"
    );
    assert!(!s.recipe(a).is_owner());
    assert_eq!(
        acquired(&s, a),
        0,
        "alone, and still never the owner\n{}",
        s.trace()
    );
    assert!(
        s.client(a).watches.data.contains_key(&own),
        "it watches its own node: {:?}",
        s.client(a).watches
    );
    s.call(a, LockCall::Unlock);
    s.run();
    assert_eq!(
        s.outcomes(a),
        [
            LockOutcome::Released,
            LockOutcome::Failed(LockError::InvalidPath(PathError::NotAbsolute(
                "x-100-0000000000".into()
            )))
        ]
    );
    assert_eq!(lock_nodes(&s), vec!["x-100-0000000000"], "the node leaks");
    // Locking again adopts the leaked node under its bare name: still stuck.
    s.call(a, LockCall::Lock);
    s.run();
    assert_eq!(acquired(&s, a), 0, "{}", s.trace());
}

#[test]
fn bug3_bare_id_fixed_acquires_and_cleans_up() {
    let (mut s, a) = create_reply_lost(fixed);
    assert_eq!(
        s.recipe(a).node(),
        Some(Path::new("/locks/x-100-0000000000").unwrap())
    );
    assert_eq!(acquired(&s, a), 1, "{}", s.trace());
    assert!(s.client(a).watches.data.is_empty() && s.client(a).watches.exist.is_empty());
    s.call(a, LockCall::Unlock);
    s.run();
    assert_eq!(s.outcomes(a).last(), Some(&LockOutcome::Released));
    assert!(lock_nodes(&s).is_empty());
}

// ---------------------------------------------------------------------------
// Known bug 4: the herd effect (both variants watch only the predecessor)
// ---------------------------------------------------------------------------

fn one_notification_per_release<R: LockRecipe>(make: fn(u64) -> R) {
    let mut s = new_stepper();
    let clients: Vec<ClientId> = [100, 200, 300, 400, 500]
        .into_iter()
        .map(|id| add_counted(&mut s, make, id))
        .collect();
    for &c in &clients {
        s.call(c, LockCall::Lock);
        s.run_client(c);
    }
    for (i, &holder) in clients.iter().enumerate() {
        assert_eq!(acquired(&s, holder), 1, "{}", s.trace());
        s.call(holder, LockCall::Unlock);
        let notified = run_noting_wakeups(&mut s, &clients);
        let expected: Vec<ClientId> = clients.get(i + 1).copied().into_iter().collect();
        assert_eq!(notified, expected, "release by c{holder}\n{}", s.trace());
    }
    assert!(lock_nodes(&s).is_empty());
}

#[test]
fn bug4_herd_original_one_notification_per_release() {
    one_notification_per_release(original);
}

#[test]
fn bug4_herd_fixed_one_notification_per_release() {
    one_notification_per_release(fixed);
}

// ---------------------------------------------------------------------------
// Known bug 8: two holders after a pause; fencing tokens
// ---------------------------------------------------------------------------

/// A (100) holds, B (200) waits; A pauses past its session timeout: the
/// server expires it (A does not know) and B takes the lock.
fn pause_past_session_timeout<R: LockRecipe>(
    make: fn(u64) -> R,
) -> (Stepper<R>, ClientId, ClientId) {
    let mut s = new_stepper();
    let a = add(&mut s, make, 100);
    let b = add(&mut s, make, 200);
    s.call(a, LockCall::Lock);
    s.run_client(a);
    s.call(b, LockCall::Lock);
    s.run();
    assert_eq!((acquired(&s, a), acquired(&s, b)), (1, 0), "{}", s.trace());
    s.expire_on_server(a);
    s.run();
    assert_eq!(acquired(&s, b), 1, "{}", s.trace());
    // Both act as holder; only fencing tells them apart.
    let (stale, fresh) = (token_of(&s, a), token_of(&s, b));
    assert!(stale < fresh, "{stale:?} < {fresh:?}");
    let mut resource = FencedResource::default();
    assert!(resource.write(fresh), "the new holder writes");
    assert!(!resource.write(stale), "the stale holder is refused");
    (s, a, b)
}

#[test]
fn bug8_pause_original_two_holders_stale_token_refused() {
    let (mut s, a, _) = pause_past_session_timeout(original);
    assert!(s.recipe(a).is_owner(), "A still believes it holds");
    // The pause ends and A learns of the expiry: that changes nothing, there
    // is no LockListener callback for it.
    s.notice_expiry(a);
    assert!(
        s.outcomes(a).len() == 1 && s.recipe(a).is_owner(),
        "{:?}",
        s.outcomes(a)
    );
    // Its unlock reports lockReleased, then the exception.
    s.call(a, LockCall::Unlock);
    s.run();
    assert_eq!(
        s.outcomes(a)[1..],
        [
            LockOutcome::Released,
            LockOutcome::Failed(LockError::Zk(ZkError::SessionExpired))
        ]
    );
}

#[test]
fn bug8_pause_fixed_reports_lost_when_it_learns() {
    let (mut s, a, b) = pause_past_session_timeout(fixed);
    assert!(s.recipe(a).holds(), "no recipe can know while paused");
    // The pause ends; told of the expiry, the fixed lock reports the loss.
    s.notice_expiry(a);
    assert_eq!(s.outcomes(a)[1..], [LockOutcome::Lost], "{}", s.trace());
    assert!(!s.recipe(a).holds());
    // A new session: A queues behind B and gets a larger token.
    s.new_session(a, 101);
    s.call(a, LockCall::Lock);
    s.run();
    assert_eq!(acquired(&s, a), 1, "A waits for B\n{}", s.trace());
    s.call(b, LockCall::Unlock);
    s.run();
    assert_eq!(acquired(&s, a), 2, "{}", s.trace());
    assert!(token_of(&s, a) > token_of(&s, b));
    s.call(a, LockCall::Unlock);
    s.run();
    assert!(lock_nodes(&s).is_empty(), "{}", s.trace());
}

#[test]
fn bug8_pause_fixed_unlock_before_learning_reports_lost() {
    let (mut s, a, b) = pause_past_session_timeout(fixed);
    // Resuming without hearing it, its unlock finds the session gone: Lost, not Released.
    s.call(a, LockCall::Unlock);
    s.run();
    assert_eq!(s.outcomes(a)[1..], [LockOutcome::Lost], "{}", s.trace());
    // Learning of the expiry afterwards reports nothing twice.
    s.notice_expiry(a);
    assert_eq!(s.outcomes(a)[1..], [LockOutcome::Lost], "{}", s.trace());
    s.call(b, LockCall::Unlock);
    s.run();
    assert!(lock_nodes(&s).is_empty());
}

// ---------------------------------------------------------------------------
// Bugs of the seed code the list does not name
// ---------------------------------------------------------------------------

/// A (100) holds, B (200) waits and gives up (Unlock); then A releases.
fn cancelled_waiter<R: LockRecipe>(make: fn(u64) -> R) -> (Stepper<R>, ClientId, ClientId) {
    let mut s = new_stepper();
    let a = add(&mut s, make, 100);
    let b = add(&mut s, make, 200);
    s.call(a, LockCall::Lock);
    s.run_client(a);
    s.call(b, LockCall::Lock);
    s.run();
    s.call(b, LockCall::Unlock);
    s.run();
    assert_eq!(s.outcomes(b), [LockOutcome::Released], "{}", s.trace());
    s.call(a, LockCall::Unlock);
    s.run();
    (s, a, b)
}

#[test]
fn unlisted_cancelled_waiter_original_relocks_from_stale_watch() {
    let (s, _, b) = cancelled_waiter(original);
    // B's exists watch on A's node outlived its unlock; LockWatcher calls
    // lock(), which creates a new node and takes the lock nobody asked for.
    assert_eq!(
        s.outcomes(b)[1..],
        [LockOutcome::Acquired {
            token: FencingToken(2)
        }],
        "{}",
        s.trace()
    );
    assert_eq!(lock_nodes(&s), vec!["x-200-0000000002"], "a zombie holder");
}

#[test]
fn unlisted_cancelled_waiter_fixed_stays_out() {
    let (s, _, b) = cancelled_waiter(fixed);
    assert_eq!(s.outcomes(b), [LockOutcome::Released], "{}", s.trace());
    assert!(lock_nodes(&s).is_empty());
}

/// B lists the children while A holds; A releases before B's exists(A).
fn predecessor_gone_before_exists<R: LockRecipe>(make: fn(u64) -> R) -> (Stepper<R>, ClientId) {
    let mut s = new_stepper();
    let a = add(&mut s, make, 100);
    let b = add(&mut s, make, 200);
    s.call(a, LockCall::Lock);
    s.run_client(a);
    s.call(b, LockCall::Lock);
    advance_until_next_is(&mut s, b, is_watching_exists);
    s.call(a, LockCall::Unlock);
    s.run_client(a);
    s.run();
    (s, b)
}

#[test]
fn unlisted_predecessor_gone_original_waiter_stuck() {
    let (s, b) = predecessor_gone_before_exists(original);
    // exists() found nothing; execute() returned false with only a NodeCreated
    // watch on a sequential name that never comes back.
    assert_eq!(acquired(&s, b), 0, "{}", s.trace());
    assert_eq!(
        lock_nodes(&s),
        vec!["x-200-0000000001"],
        "B is first, and waits forever"
    );
}

#[test]
fn unlisted_predecessor_gone_fixed_lists_again() {
    let (s, b) = predecessor_gone_before_exists(fixed);
    assert_eq!(acquired(&s, b), 1, "{}", s.trace());
}

/// B waits on A; B's connection drops, A releases meanwhile, B reconnects:
/// B hears Disconnected and SyncConnected on its watch, then NodeDeleted.
fn release_while_waiter_disconnected<R: LockRecipe>(make: fn(u64) -> R) -> (Stepper<R>, ClientId) {
    let mut s = new_stepper();
    let a = add(&mut s, make, 100);
    let b = add(&mut s, make, 200);
    s.call(a, LockCall::Lock);
    s.run_client(a);
    s.call(b, LockCall::Lock);
    s.run();
    s.disconnect(b);
    s.call(a, LockCall::Unlock);
    s.run_client(a);
    s.reconnect(b);
    s.run();
    (s, b)
}

#[test]
fn unlisted_state_events_original_acquired_three_times() {
    let (s, b) = release_while_waiter_disconnected(original);
    // LockWatcher ran lock() for Disconnected, SyncConnected and NodeDeleted;
    // each run found B first and called lockAcquired() again.
    assert_eq!(
        tokens(s.outcomes(b)),
        vec![FencingToken(1); 3],
        "{}",
        s.trace()
    );
}

#[test]
fn unlisted_state_events_fixed_acquired_once() {
    let (s, b) = release_while_waiter_disconnected(fixed);
    assert_eq!(acquired(&s, b), 1, "{}", s.trace());
}

/// A locks; its first two requests are applied but their replies lost; A
/// calls Unlock while the retry is pending (the original sleeps in
/// retryOperation), then reconnects.
fn unlock_during_retry<R: LockRecipe>(make: fn(u64) -> R) -> (Stepper<R>, ClientId) {
    let mut s = new_stepper();
    let a = add(&mut s, make, 100);
    s.call(a, LockCall::Lock);
    assert!(s.apply_then_disconnect(a));
    s.reconnect(a);
    assert!(s.apply_then_disconnect(a));
    s.call(a, LockCall::Unlock);
    s.reconnect(a);
    s.run();
    while s.fire_next_timer(a) {
        s.run();
    }
    (s, a)
}

#[test]
fn unlisted_unlock_during_retry_original_grants_after_unlock() {
    let (s, a) = unlock_during_retry(original);
    // unlock() waits for the monitor: lock() finishes first and grants.
    assert_eq!(
        s.outcomes(a),
        [
            LockOutcome::Acquired {
                token: FencingToken(0)
            },
            LockOutcome::Released
        ]
    );
    assert!(lock_nodes(&s).is_empty());
}

#[test]
fn unlisted_unlock_during_retry_fixed_cancels() {
    let (s, a) = unlock_during_retry(fixed);
    assert_eq!(s.outcomes(a), [LockOutcome::Released], "{}", s.trace());
    assert!(
        lock_nodes(&s).is_empty(),
        "the adopted node is deleted: {:?}",
        lock_nodes(&s)
    );
}

/// A holds, B waits; B's session expires (B learns it) and B gets a new session.
fn waiter_expires<R: LockRecipe>(make: fn(u64) -> R) -> (Stepper<R>, ClientId, ClientId) {
    let mut s = new_stepper();
    let a = add(&mut s, make, 100);
    let b = add(&mut s, make, 200);
    s.call(a, LockCall::Lock);
    s.run_client(a);
    s.call(b, LockCall::Lock);
    s.run();
    s.expire(b);
    s.new_session(b, 201);
    s.run();
    s.call(a, LockCall::Unlock);
    s.run();
    (s, a, b)
}

#[test]
fn unlisted_expired_waiter_original_never_told() {
    let (mut s, _, b) = waiter_expires(original);
    // LockWatcher's lock() failed with SessionExpired and logged it.
    assert!(s.outcomes(b).is_empty(), "{:?}", s.outcomes(b));
    assert!(
        lock_nodes(&s).is_empty(),
        "B's node went with its session; B waits for nothing"
    );
    // The lock is bound to the dead handle: a new lock() fails.
    s.call(b, LockCall::Lock);
    s.run();
    assert_eq!(
        s.outcomes(b),
        [LockOutcome::Failed(LockError::Zk(ZkError::SessionExpired))]
    );
}

#[test]
fn unlisted_expired_waiter_fixed_starts_over() {
    let (mut s, _, b) = waiter_expires(fixed);
    assert_eq!(
        acquired(&s, b),
        1,
        "the pending lock call restarted in the new session\n{}",
        s.trace()
    );
    s.call(b, LockCall::Unlock);
    s.run();
    assert!(lock_nodes(&s).is_empty());
}

#[test]
fn fixed_holder_expiry_reports_lost_and_can_lock_again() {
    let mut s = new_stepper();
    let a = add(&mut s, fixed, 100);
    let b = add(&mut s, fixed, 200);
    s.call(a, LockCall::Lock);
    s.run_client(a);
    s.call(b, LockCall::Lock);
    s.run();
    s.expire(a);
    assert_eq!(s.outcomes(a)[1..], [LockOutcome::Lost]);
    s.run();
    assert_eq!(acquired(&s, b), 1);
    s.new_session(a, 101);
    s.call(a, LockCall::Lock);
    s.run();
    s.call(b, LockCall::Unlock);
    s.run();
    assert!(token_of(&s, a) > token_of(&s, b), "{}", s.trace());
    s.call(a, LockCall::Unlock);
    s.run();
    assert!(lock_nodes(&s).is_empty());
}

/// ZooKeeper 3.8 stops a parent's counter at 2^31-1: every later node is
/// numbered `2147483647` again and cannot be ordered against the others
/// (ordering the ties by czxid could deadlock). The fixed lock gives such a
/// node up with SequenceExhausted; the node below the limit still acquires.
#[test]
fn fixed_gives_up_nodes_at_the_sequence_counter_end() {
    let mut s: Stepper<FixedLock> = new_stepper();
    s.server_mut()
        .set_sequence_counter(&locks_dir(), i32::MAX - 1)
        .unwrap();
    let clients: Vec<ClientId> = [100, 300, 200]
        .into_iter()
        .map(|id| add(&mut s, fixed, id))
        .collect();
    for &c in &clients {
        s.call(c, LockCall::Lock);
        s.run_client(c);
    }
    s.run();
    assert_eq!(acquired(&s, clients[0]), 1, "{}", s.trace());
    for &c in &clients[1..] {
        assert_eq!(
            s.outcomes(c),
            [LockOutcome::Failed(LockError::SequenceExhausted)],
            "c{c}\n{}",
            s.trace()
        );
    }
    assert_eq!(lock_nodes(&s), vec!["x-100-2147483646"], "{}", s.trace());
    s.call(clients[0], LockCall::Unlock);
    s.run();
    assert!(lock_nodes(&s).is_empty(), "{:?}", lock_nodes(&s));
}

// ---------------------------------------------------------------------------
// Fault sweeps over the fixed variant
// ---------------------------------------------------------------------------

/// How many rounds a holder keeps the lock before unlocking.
const HOLD_ROUNDS: usize = 2;
const MAX_ROUNDS: usize = 200;

/// Three fixed clients each want the lock once (again after a `Lost`); a
/// holder unlocks after `HOLD_ROUNDS` rounds. `inject(s, client, round)` may
/// replace a client's step in that round by a fault (returning true). Checks mutual
/// exclusion at every `Acquired`, completion and no leaked node.
fn fixed_workload(
    mut inject: impl FnMut(&mut Stepper<FixedLock>, ClientId, usize) -> bool,
) -> Stepper<FixedLock> {
    let mut s = new_stepper();
    let clients: Vec<ClientId> = [100, 200, 300]
        .into_iter()
        .map(|id| add(&mut s, fixed, id))
        .collect();
    let mut holder: Option<(ClientId, usize)> = None;
    let mut released = BTreeSet::new();
    for &c in &clients {
        s.call(c, LockCall::Lock);
    }
    for round in 0..MAX_ROUNDS {
        for &c in &clients {
            if !inject(&mut s, c, round) {
                s.step(c);
            }
            for outcome in s.take_outcomes(c) {
                match outcome {
                    LockOutcome::Acquired { .. } => {
                        assert!(
                            holder.is_none(),
                            "c{c} acquired while {holder:?} holds\n{}",
                            s.trace()
                        );
                        holder = Some((c, round));
                    }
                    LockOutcome::Released => {
                        released.insert(c);
                    }
                    LockOutcome::Lost => {
                        if holder.is_some_and(|(h, _)| h == c) {
                            holder = None;
                        }
                        released.remove(&c);
                        s.call(c, LockCall::Lock);
                    }
                    LockOutcome::Failed(error) => panic!("c{c} failed: {error}\n{}", s.trace()),
                }
            }
        }
        if let Some((h, since)) = holder {
            if round >= since + HOLD_ROUNDS {
                s.call(h, LockCall::Unlock);
                holder = None;
            }
        }
        if released.len() == clients.len() && holder.is_none() {
            break;
        }
    }
    assert_eq!(
        released.len(),
        clients.len(),
        "every client got and released the lock\n{}",
        s.trace()
    );
    s.run();
    assert!(
        lock_nodes(&s).is_empty(),
        "leaked {:?}\n{}",
        lock_nodes(&s),
        s.trace()
    );
    s
}

/// For each client and each of its requests in turn: the connection drops
/// with the request applied by the server and its reply lost (`applied`),
/// or before the request is sent (not applied); the client reconnects at
/// once or after a few rounds. Stops for a client once its runs have no
/// request left to hit.
fn connection_loss_sweep(applied: bool) {
    for target in 0..3 {
        for outage_rounds in [0, 3] {
            let mut hit = 0;
            for nth_send in 0.. {
                let (mut sends, mut fired, mut down_since) = (0, false, None);
                fixed_workload(|s, c, round| {
                    if c != target {
                        return false;
                    }
                    if down_since.is_some_and(|since| round > since + outage_rounds) {
                        s.reconnect(c);
                        down_since = None;
                        return true;
                    }
                    if down_since.is_some() || s.client(c).outgoing.is_empty() {
                        return false;
                    }
                    sends += 1;
                    if sends - 1 != nth_send {
                        return false;
                    }
                    if applied {
                        s.apply_then_disconnect(c);
                    } else {
                        s.disconnect(c);
                    }
                    (fired, down_since) = (true, Some(round));
                    true
                });
                if !fired {
                    break;
                }
                hit += 1;
            }
            assert!(hit >= 3, "c{target}: only {hit} requests to hit");
        }
    }
}

#[test]
fn fixed_connection_loss_sweep() {
    connection_loss_sweep(true);
}

#[test]
fn fixed_connection_loss_not_applied_sweep() {
    connection_loss_sweep(false);
}

/// For each client and each round until the workload ends: the session
/// expires (the client learns it) and the client opens a new one.
#[test]
fn fixed_expiry_sweep() {
    for target in 0..3 {
        let mut hit = 0;
        for at in 0.. {
            let mut fired = false;
            fixed_workload(|s, c, round| {
                if c != target || round != at {
                    return false;
                }
                s.expire(c);
                s.new_session(c, 900 + c as i64);
                fired = true;
                true
            });
            if !fired {
                break;
            }
            hit += 1;
        }
        assert!(hit >= 8, "c{target}: only {hit} rounds to hit");
    }
}

/// For each client and each round until the workload ends: unless it holds
/// the lock, the client pauses past its session timeout (the server expires
/// the session; the client does not know and does not move), resumes three
/// rounds later, learns of the expiry and opens a new session.
#[test]
fn fixed_late_expiry_sweep() {
    const PAUSE_ROUNDS: usize = 3;
    for target in 0..3 {
        let mut hit = 0;
        for at in 0.. {
            let (mut last_round, mut paused_since, mut fired) = (0, None, false);
            fixed_workload(|s, c, round| {
                last_round = round;
                if c != target {
                    return false;
                }
                if let Some(since) = paused_since {
                    if round >= since + PAUSE_ROUNDS {
                        s.notice_expiry(c);
                        s.new_session(c, 900 + c as i64);
                        paused_since = None;
                    }
                    return true;
                }
                if round != at || s.recipe(c).holds() {
                    return false;
                }
                s.expire_on_server(c);
                (fired, paused_since) = (true, Some(round));
                true
            });
            if at > last_round {
                break;
            }
            hit += usize::from(fired);
        }
        assert!(hit >= 10, "c{target}: only {hit} rounds to hit");
    }
}

fn node_deleted(name: &str) -> WatchedEvent {
    WatchedEvent::node(EventType::NodeDeleted, locks_dir().child(name).unwrap())
}

#[test]
fn fixed_spurious_wakeup_only_relists() {
    // A spurious node event while waiting only causes a re-check.
    let mut s = new_stepper();
    let a = add(&mut s, fixed, 100);
    let b = add(&mut s, fixed, 200);
    s.call(a, LockCall::Lock);
    s.run_client(a);
    s.call(b, LockCall::Lock);
    s.run();
    s.inject_watch_event(b, node_deleted("x-100-0000000000"));
    assert!(s.outcomes(b).is_empty());
    let requests: Vec<&Request> = s.client(b).outgoing.iter().map(|(_, r, _)| r).collect();
    assert!(
        matches!(requests.as_slice(), [r] if is_get_children(r)),
        "re-lists: {requests:?}"
    );
    s.run();
    assert_eq!(acquired(&s, b), 0, "A still holds\n{}", s.trace());
    s.call(a, LockCall::Unlock);
    s.run();
    assert_eq!(acquired(&s, b), 1, "{}", s.trace());
}

/// A holds, B waits on A, C waits on B. Spurious events (node events for
/// nodes that are still there, a state event no watch asked for), one of
/// them while C's re-check is in flight, and a duplicate of every real
/// wakeup: never two holders, each acquires once, in arrival order.
#[test]
fn fixed_spurious_and_duplicated_wakeups_keep_one_holder() {
    let mut s = new_stepper();
    let [a, b, c] = [100, 200, 300].map(|id| add(&mut s, fixed, id));
    for client in [a, b, c] {
        s.call(client, LockCall::Lock);
        s.run_client(client);
    }
    let holders = |s: &Stepper<FixedLock>| {
        [a, b, c]
            .into_iter()
            .filter(|&client| s.recipe(client).holds())
            .collect::<Vec<_>>()
    };
    s.inject_watch_event(c, node_deleted("x-200-0000000001"));
    s.inject_watch_event(b, WatchedEvent::state(KeeperState::SyncConnected));
    assert!(s.send(c), "C's re-check is on the wire");
    s.inject_watch_event(c, node_deleted("x-100-0000000000"));
    s.run();
    assert_eq!(holders(&s), vec![a], "{}", s.trace());
    s.call(a, LockCall::Unlock);
    s.run();
    assert_eq!(holders(&s), vec![b], "{}", s.trace());
    // The real wakeup again, and C woken for B while B holds.
    s.inject_watch_event(b, node_deleted("x-100-0000000000"));
    s.inject_watch_event(c, node_deleted("x-200-0000000001"));
    s.run();
    assert_eq!(holders(&s), vec![b], "{}", s.trace());
    s.call(b, LockCall::Unlock);
    s.run();
    s.inject_watch_event(c, node_deleted("x-200-0000000001"));
    s.run();
    assert_eq!(holders(&s), vec![c], "{}", s.trace());
    s.call(c, LockCall::Unlock);
    s.run();
    let grants: Vec<usize> = [a, b, c]
        .iter()
        .map(|&client| acquired(&s, client))
        .collect();
    assert_eq!(grants, [1, 1, 1], "{}", s.trace());
    assert!(token_of(&s, a) < token_of(&s, b) && token_of(&s, b) < token_of(&s, c));
    assert!(lock_nodes(&s).is_empty(), "leaked: {:?}", lock_nodes(&s));
}

/// A holds, B waits on A, C waits on B. B's session expires while B is
/// paused; A releases and C takes the lock; only then does B learn of the
/// expiry. B has nothing to lose, starts over in its new session and gets
/// the lock after C.
#[test]
fn fixed_waiter_learning_its_expiry_late_starts_over() {
    let mut s = new_stepper();
    let [a, b, c] = [100, 200, 300].map(|id| add(&mut s, fixed, id));
    for client in [a, b, c] {
        s.call(client, LockCall::Lock);
        s.run_client(client);
    }
    s.run();
    s.expire_on_server(b);
    s.run();
    assert_eq!(acquired(&s, c), 0, "C now waits on A\n{}", s.trace());
    s.call(a, LockCall::Unlock);
    s.run();
    assert_eq!(acquired(&s, c), 1, "{}", s.trace());
    assert!(s.outcomes(b).is_empty(), "B heard nothing\n{}", s.trace());
    s.notice_expiry(b);
    assert!(s.outcomes(b).is_empty(), "a waiter has nothing to lose");
    s.new_session(b, 201);
    s.run();
    assert_eq!(acquired(&s, b), 0, "B queues behind C\n{}", s.trace());
    s.call(c, LockCall::Unlock);
    s.run();
    assert_eq!(acquired(&s, b), 1, "{}", s.trace());
    assert!(token_of(&s, c) < token_of(&s, b));
    s.call(b, LockCall::Unlock);
    s.run();
    assert!(lock_nodes(&s).is_empty(), "leaked: {:?}", lock_nodes(&s));
}

/// A's lock node create is queued when the connection drops: it fails with
/// ConnectionLoss and was not applied. After the reconnect A looks for its
/// node, finds none, creates one (just one) and gets the lock after B.
#[test]
fn fixed_create_not_applied_is_created_once() {
    let mut s = new_stepper();
    let b = add(&mut s, fixed, 200);
    let a = add(&mut s, fixed, 100);
    s.call(b, LockCall::Lock);
    s.run_client(b);
    s.call(a, LockCall::Lock);
    advance_until_next_is(&mut s, a, is_lock_node_create);
    s.disconnect(a);
    assert_eq!(lock_nodes(&s), vec!["x-200-0000000000"], "not applied");
    s.reconnect(a);
    s.run();
    assert_eq!(lock_nodes(&s), vec!["x-100-0000000001", "x-200-0000000000"]);
    assert_eq!(acquired(&s, a), 0, "{}", s.trace());
    s.call(b, LockCall::Unlock);
    s.run();
    assert_eq!(acquired(&s, a), 1, "{}", s.trace());
    s.call(a, LockCall::Unlock);
    s.run();
    assert!(lock_nodes(&s).is_empty(), "leaked: {:?}", lock_nodes(&s));
}
