//! Barriers (seed 001's tutorial Barrier and the fixed double barrier) on the
//! synchronous stepper: the happy path of both variants, known bug 5 (a: host
//! name collisions, b: the leave race) and the further seed bugs found (a lost
//! create reply, an expired waiter) pinned on `original` with explicit step
//! orders, and the same steps on `fixed` holding the properties: nobody passes
//! the entry before `size` members entered, nobody is stranded, no node is
//! left behind.

use zk_recipes::barrier::fixed::READY;
use zk_recipes::barrier::{
    BarrierCall, BarrierError, BarrierOutcome, FixedBarrier, OriginalBarrier, TutorialNodeMode,
};
use zk_recipes::zk::Acls;
use zk_recipes::zk::{CreateMode, EventType, KeeperState, Path, Request, WatchedEvent, ZkError};
use zk_recipes::Recipe;
use zk_sim::client::ConnectionState;
use zk_sim::stepper::{ClientId, Stepper};

const ROOT: &str = "/b1";
/// Session ids of the members: member `i` gets `FIRST_SESSION + i`.
const FIRST_SESSION: i64 = 0x100;

/// A barrier under test: a stepper and its members.
struct Barrier<R: Recipe<Call = BarrierCall, Outcome = BarrierOutcome>> {
    stepper: Stepper<R>,
    members: usize,
}

impl<R: Recipe<Call = BarrierCall, Outcome = BarrierOutcome>> Barrier<R> {
    /// `members` members made by `make(i)`, connected, the root created.
    fn new(members: usize, make: impl Fn(usize) -> R) -> Self {
        let mut stepper = Stepper::new();
        let root = Request::Create {
            path: root(),
            data: Vec::new(),
            mode: CreateMode::Persistent,
            acl: Acls::Open,
        };
        stepper.admin(&root).expect("create the barrier root");
        for i in 0..members {
            stepper.add_client(make(i), FIRST_SESSION + i as i64);
        }
        Barrier { stepper, members }
    }

    fn call(&mut self, member: ClientId, call: BarrierCall) {
        self.stepper.call(member, call);
    }

    /// Calls `call` on `member` and lets it alone run until quiet.
    fn call_and_run(&mut self, member: ClientId, call: BarrierCall) {
        self.stepper.call(member, call);
        self.stepper.run_client(member);
    }

    fn run(&mut self) {
        self.stepper.run();
    }

    fn outcomes(&self, member: ClientId) -> &[BarrierOutcome] {
        self.stepper.outcomes(member)
    }

    fn has(&self, member: ClientId, outcome: &BarrierOutcome) -> bool {
        self.outcomes(member).contains(outcome)
    }

    /// The members that have passed the entry.
    fn entered(&self) -> Vec<ClientId> {
        (0..self.members)
            .filter(|m| self.has(*m, &BarrierOutcome::Entered))
            .collect()
    }

    /// The members that have passed the exit.
    fn left(&self) -> Vec<ClientId> {
        (0..self.members)
            .filter(|m| self.has(*m, &BarrierOutcome::Left))
            .collect()
    }

    /// The nodes under the barrier root.
    fn nodes(&self) -> Vec<Path> {
        let root = root();
        self.stepper
            .server()
            .paths()
            .into_iter()
            .filter(|p| p.parent().as_ref() == Some(&root))
            .collect()
    }

    fn trace(&self) -> &str {
        self.stepper.trace()
    }
}

fn root() -> Path {
    Path::new(ROOT).unwrap()
}

/// Seed 001's member on its own host.
fn original(size: usize) -> impl Fn(usize) -> OriginalBarrier {
    move |i| OriginalBarrier::new(root(), size, format!("host-{i}"))
}

/// Seed 001's members all on one host.
fn original_one_host(size: usize, mode: TutorialNodeMode) -> impl Fn(usize) -> OriginalBarrier {
    move |_| OriginalBarrier::with_node_mode(root(), size, "host-a", mode)
}

fn fixed(size: usize) -> impl Fn(usize) -> FixedBarrier {
    move |i| FixedBarrier::new(root(), size, 0xB0 + i as u64)
}

fn failed(error: ZkError) -> BarrierOutcome {
    BarrierOutcome::Failed(BarrierError::Zk(error))
}

/// Every member entered and left exactly once, without failures, and no
/// node is left under the root.
fn assert_all_entered_and_left<R: Recipe<Call = BarrierCall, Outcome = BarrierOutcome>>(
    barrier: &Barrier<R>,
) {
    for member in 0..barrier.members {
        let expected = [BarrierOutcome::Entered, BarrierOutcome::Left];
        assert_eq!(
            barrier.outcomes(member),
            &expected,
            "member {member}\n{}",
            barrier.trace()
        );
    }
    assert_eq!(barrier.nodes(), Vec::<Path>::new(), "{}", barrier.trace());
}

// ---- happy path ----

/// Three members; the third enters last and leaves last: nobody passes the
/// entry or the exit before it.
fn enter_and_leave_together<R: Recipe<Call = BarrierCall, Outcome = BarrierOutcome>>(
    make: impl Fn(usize) -> R,
) {
    let mut barrier = Barrier::new(3, make);
    barrier.call(0, BarrierCall::Enter);
    barrier.call(1, BarrierCall::Enter);
    barrier.run();
    assert!(barrier.entered().is_empty(), "{}", barrier.trace());
    barrier.call(2, BarrierCall::Enter);
    barrier.run();
    assert_eq!(barrier.entered(), vec![0, 1, 2], "{}", barrier.trace());
    barrier.call(0, BarrierCall::Leave);
    barrier.call(1, BarrierCall::Leave);
    barrier.run();
    assert!(barrier.left().is_empty(), "{}", barrier.trace());
    barrier.call(2, BarrierCall::Leave);
    barrier.run();
    assert_all_entered_and_left(&barrier);
}

#[test]
fn happy_path_original_enter_and_leave_together() {
    enter_and_leave_together(original(3));
}

#[test]
fn happy_path_fixed_enter_and_leave_together() {
    enter_and_leave_together(fixed(3));
}

// ---- known bug 5a: two members on one host ----

#[test]
fn bug5a_same_host_original_second_member_fails_and_barrier_never_fills() {
    let mut barrier = Barrier::new(2, original_one_host(2, TutorialNodeMode::Ephemeral));
    barrier.call_and_run(0, BarrierCall::Enter);
    barrier.call_and_run(1, BarrierCall::Enter);
    barrier.run();
    assert_eq!(
        barrier.outcomes(1),
        &[failed(ZkError::NodeExists)],
        "{}",
        barrier.trace()
    );
    assert!(
        barrier.entered().is_empty(),
        "member 0 waits for a second node that never comes"
    );
}

#[test]
fn bug5a_same_host_upstream_sequential_original_leave_fails_and_leaks() {
    // Shortest form: one member is enough, its leave deletes `root/host-a`.
    let mut barrier = Barrier::new(
        2,
        original_one_host(2, TutorialNodeMode::EphemeralSequential),
    );
    barrier.call(0, BarrierCall::Enter);
    barrier.call(1, BarrierCall::Enter);
    barrier.run();
    assert_eq!(barrier.entered(), vec![0, 1], "{}", barrier.trace());
    barrier.call(0, BarrierCall::Leave);
    barrier.call(1, BarrierCall::Leave);
    barrier.run();
    for member in 0..2 {
        assert_eq!(
            barrier.outcomes(member).last(),
            Some(&failed(ZkError::NoNode)),
            "{}",
            barrier.trace()
        );
    }
    assert_eq!(
        barrier.nodes().len(),
        2,
        "both sequential nodes stay until the sessions end"
    );
}

#[test]
fn bug5a_same_host_fixed_unique_names_pass() {
    // The fixed member has no host name: the same steps as the first 5a test.
    let mut barrier = Barrier::new(2, fixed(2));
    barrier.call_and_run(0, BarrierCall::Enter);
    barrier.call_and_run(1, BarrierCall::Enter);
    barrier.run();
    assert_eq!(barrier.entered(), vec![0, 1], "{}", barrier.trace());
    barrier.call(0, BarrierCall::Leave);
    barrier.call(1, BarrierCall::Leave);
    barrier.run();
    assert_all_entered_and_left(&barrier);
}

// ---- known bug 5b: the leave race ----

/// Member 0 waits; member 1 completes the count, passes and starts leaving
/// before member 0 has handled its wakeup.
fn leave_race<R: Recipe<Call = BarrierCall, Outcome = BarrierOutcome>>(
    make: impl Fn(usize) -> R,
) -> Barrier<R> {
    let mut barrier = Barrier::new(2, make);
    barrier.call_and_run(0, BarrierCall::Enter);
    barrier.call_and_run(1, BarrierCall::Enter);
    assert_eq!(barrier.entered(), vec![1], "{}", barrier.trace());
    barrier.call_and_run(1, BarrierCall::Leave);
    barrier.run();
    barrier
}

#[test]
fn bug5b_leave_race_original_strands_both_members() {
    let barrier = leave_race(original(2));
    // Member 0 re-counted after member 1 deleted its node: 1 < 2, forever;
    // member 1 waits forever for member 0's node to go.
    assert_eq!(barrier.entered(), vec![1], "{}", barrier.trace());
    assert!(barrier.left().is_empty(), "{}", barrier.trace());
    assert_eq!(barrier.nodes().len(), 1);
}

#[test]
fn bug5b_leave_race_fixed_ready_node_lets_the_slow_member_through() {
    let mut barrier = leave_race(fixed(2));
    assert_eq!(barrier.entered(), vec![0, 1], "{}", barrier.trace());
    assert!(
        barrier.left().is_empty(),
        "member 1 waits for member 0 to leave"
    );
    barrier.call(0, BarrierCall::Leave);
    barrier.run();
    assert_all_entered_and_left(&barrier);
}

// ---- seed bug: a lost create reply escapes enter(), the node stays ----

/// Member 0's create is applied but its reply is lost; then member 1 enters
/// and both leave if they can.
fn lost_create_reply<R: Recipe<Call = BarrierCall, Outcome = BarrierOutcome>>(
    make: impl Fn(usize) -> R,
) -> Barrier<R> {
    let mut barrier = Barrier::new(2, make);
    barrier.call(0, BarrierCall::Enter);
    assert!(barrier.stepper.apply_then_disconnect(0));
    barrier.stepper.reconnect(0);
    barrier.run();
    barrier.call(1, BarrierCall::Enter);
    barrier.run();
    for member in barrier.entered() {
        barrier.call(member, BarrierCall::Leave);
    }
    barrier.run();
    barrier
}

#[test]
fn lost_create_reply_original_member_fails_but_counts_and_strands_the_leaver() {
    let barrier = lost_create_reply(original(2));
    assert_eq!(
        barrier.outcomes(0),
        &[failed(ZkError::ConnectionLoss)],
        "{}",
        barrier.trace()
    );
    // Member 1 passed on the strength of member 0's node ...
    assert_eq!(barrier.entered(), vec![1], "{}", barrier.trace());
    // ... and waits forever for that node, which nobody will delete.
    assert!(barrier.left().is_empty(), "{}", barrier.trace());
    assert_eq!(barrier.nodes(), vec![root().child("host-0").unwrap()]);
}

#[test]
fn lost_create_reply_fixed_retry_adopts_the_node() {
    let barrier = lost_create_reply(fixed(2));
    assert_all_entered_and_left(&barrier);
}

// ---- seed bug: an expired waiter fails and strands the others ----

/// Member 0 waits; its session expires and it gets a new one; member 1 enters.
fn waiter_expires<R: Recipe<Call = BarrierCall, Outcome = BarrierOutcome>>(
    make: impl Fn(usize) -> R,
) -> Barrier<R> {
    let mut barrier = Barrier::new(2, make);
    barrier.call_and_run(0, BarrierCall::Enter);
    barrier.stepper.expire(0);
    barrier.stepper.new_session(0, 0x900);
    barrier.run();
    barrier.call(1, BarrierCall::Enter);
    barrier.run();
    barrier
}

#[test]
fn expiry_original_waiter_fails_and_strands_the_other() {
    let barrier = waiter_expires(original(2));
    assert_eq!(
        barrier.outcomes(0),
        &[failed(ZkError::SessionExpired)],
        "{}",
        barrier.trace()
    );
    assert!(
        barrier.entered().is_empty(),
        "member 1 counts 1 of 2, forever\n{}",
        barrier.trace()
    );
}

#[test]
fn expiry_fixed_waiter_starts_over_in_its_new_session() {
    let mut barrier = waiter_expires(fixed(2));
    assert_eq!(barrier.entered(), vec![0, 1], "{}", barrier.trace());
    barrier.call(0, BarrierCall::Leave);
    barrier.call(1, BarrierCall::Leave);
    barrier.run();
    assert_all_entered_and_left(&barrier);
}

#[test]
fn expiry_fixed_member_expired_after_entering_still_leaves() {
    let mut barrier = Barrier::new(2, fixed(2));
    barrier.call(0, BarrierCall::Enter);
    barrier.call(1, BarrierCall::Enter);
    barrier.run();
    assert_eq!(barrier.entered(), vec![0, 1]);
    barrier.stepper.expire(0);
    barrier.stepper.new_session(0, 0x900);
    barrier.call(1, BarrierCall::Leave);
    barrier.run();
    assert_eq!(
        barrier.left(),
        vec![1],
        "member 0's node went with its session"
    );
    barrier.call(0, BarrierCall::Leave);
    barrier.run();
    assert_all_entered_and_left(&barrier);
}

// ---- fixed under a fault at every step ----

/// A fault the sweep injects in place of one send.
#[derive(Clone, Copy, Debug)]
enum Fault {
    /// The request is applied, its reply lost; the member reconnects.
    LostReply,
    /// The member's session expires (it learns at once) and it gets a new one.
    Expiry,
    /// The connection drops before the request is sent: it fails with
    /// ConnectionLoss without being applied; the member reconnects.
    NotApplied,
}

/// Steps a barrier round-robin until quiet, replacing the `fault_at`-th
/// send (counted in `sends` across calls) with `fault`.
struct FaultySchedule {
    fault: Fault,
    fault_at: usize,
    sends: usize,
    next_session: i64,
}

impl FaultySchedule {
    fn run<R: Recipe<Call = BarrierCall, Outcome = BarrierOutcome>>(
        &mut self,
        barrier: &mut Barrier<R>,
    ) {
        loop {
            let mut moved = false;
            for member in 0..barrier.members {
                let can_send = barrier.stepper.state(member) == ConnectionState::Connected
                    && !barrier.stepper.client(member).outgoing.is_empty();
                if can_send && self.sends == self.fault_at {
                    self.inject(barrier, member);
                    moved = true;
                } else {
                    moved |= barrier.stepper.step(member);
                }
                self.sends += usize::from(can_send);
            }
            if !moved {
                return;
            }
        }
    }

    fn inject<R: Recipe<Call = BarrierCall, Outcome = BarrierOutcome>>(
        &mut self,
        barrier: &mut Barrier<R>,
        member: ClientId,
    ) {
        match self.fault {
            Fault::LostReply => {
                barrier.stepper.apply_then_disconnect(member);
                barrier.stepper.reconnect(member);
            }
            Fault::Expiry => {
                barrier.stepper.expire(member);
                barrier.stepper.new_session(member, self.next_session);
                self.next_session += 1;
            }
            Fault::NotApplied => {
                barrier.stepper.disconnect(member);
                barrier.stepper.reconnect(member);
            }
        }
    }
}

/// Three fixed members, the third entering and leaving last, with one fault
/// at send `fault_at`. Returns the number of sends.
fn sweep(fault: Fault, fault_at: usize) -> usize {
    let mut schedule = FaultySchedule {
        fault,
        fault_at,
        sends: 0,
        next_session: 0x1000,
    };
    let mut barrier = Barrier::new(3, fixed(3));
    let context = |barrier: &Barrier<FixedBarrier>| {
        format!("{fault:?} at send {fault_at}\n{}", barrier.trace())
    };
    barrier.call(0, BarrierCall::Enter);
    barrier.call(1, BarrierCall::Enter);
    schedule.run(&mut barrier);
    assert!(
        barrier.entered().is_empty(),
        "passed early: {}",
        context(&barrier)
    );
    barrier.call(2, BarrierCall::Enter);
    schedule.run(&mut barrier);
    assert_eq!(barrier.entered(), vec![0, 1, 2], "{}", context(&barrier));
    barrier.call(0, BarrierCall::Leave);
    barrier.call(1, BarrierCall::Leave);
    schedule.run(&mut barrier);
    assert!(
        barrier.left().is_empty(),
        "left early: {}",
        context(&barrier)
    );
    barrier.call(2, BarrierCall::Leave);
    schedule.run(&mut barrier);
    for member in 0..3 {
        let expected = [BarrierOutcome::Entered, BarrierOutcome::Left];
        assert_eq!(
            barrier.outcomes(member),
            &expected,
            "member {member}: {}",
            context(&barrier)
        );
    }
    assert_eq!(barrier.nodes(), Vec::<Path>::new(), "{}", context(&barrier));
    schedule.sends
}

#[test]
fn fixed_survives_a_lost_reply_at_every_step() {
    let sends = sweep(Fault::LostReply, usize::MAX);
    assert!(
        sends > 20,
        "the sweep covers the whole protocol ({sends} sends)"
    );
    for fault_at in 0..sends {
        sweep(Fault::LostReply, fault_at);
    }
}

#[test]
fn fixed_survives_an_expiry_at_every_step() {
    let sends = sweep(Fault::Expiry, usize::MAX);
    for fault_at in 0..sends {
        sweep(Fault::Expiry, fault_at);
    }
}

#[test]
fn fixed_survives_a_request_not_applied_at_every_step() {
    let sends = sweep(Fault::NotApplied, usize::MAX);
    for fault_at in 0..sends {
        sweep(Fault::NotApplied, fault_at);
    }
}

// ---- fixed under spurious wakeups and an expiry learned late ----

fn member_event(event_type: EventType, member: usize) -> WatchedEvent {
    let name = FixedBarrier::new(root(), 3, 0xB0 + member as u64).node_name();
    WatchedEvent::node(event_type, root().child(&name).unwrap())
}

fn ready_created() -> WatchedEvent {
    WatchedEvent::node(EventType::NodeCreated, root().child(READY).unwrap())
}

/// Three members. Spurious events while members wait to enter (`ready`
/// created although it is not, one while the check is in flight, a
/// children change, a state event) and to leave (deletions of members still
/// there), and a duplicate of every real wakeup: nobody passes early,
/// everybody passes once, nothing is left.
#[test]
fn fixed_spurious_and_duplicated_wakeups_let_nobody_through_early() {
    let mut barrier = Barrier::new(3, fixed(3));
    barrier.call(0, BarrierCall::Enter);
    barrier.call(1, BarrierCall::Enter);
    barrier.run();
    barrier.stepper.inject_watch_event(0, ready_created());
    barrier.stepper.inject_watch_event(
        1,
        WatchedEvent::node(EventType::NodeChildrenChanged, root()),
    );
    barrier
        .stepper
        .inject_watch_event(1, WatchedEvent::state(KeeperState::SyncConnected));
    assert!(barrier.stepper.send(0), "member 0's check is on the wire");
    barrier.stepper.inject_watch_event(0, ready_created());
    barrier.run();
    assert!(barrier.entered().is_empty(), "{}", barrier.trace());
    barrier.call(2, BarrierCall::Enter);
    barrier.run();
    assert_eq!(barrier.entered(), vec![0, 1, 2], "{}", barrier.trace());
    for member in 0..3 {
        barrier.stepper.inject_watch_event(member, ready_created());
    }
    barrier.run();
    barrier.call(0, BarrierCall::Leave);
    barrier.call(1, BarrierCall::Leave);
    barrier.run();
    // Member 0 (the lowest) waits for member 2, member 1 for member 0.
    barrier
        .stepper
        .inject_watch_event(0, member_event(EventType::NodeDeleted, 2));
    barrier
        .stepper
        .inject_watch_event(1, member_event(EventType::NodeDeleted, 0));
    barrier.run();
    assert!(barrier.left().is_empty(), "{}", barrier.trace());
    barrier.call(2, BarrierCall::Leave);
    barrier.run();
    for member in 0..3 {
        barrier
            .stepper
            .inject_watch_event(member, member_event(EventType::NodeDeleted, 2));
    }
    barrier.run();
    assert_all_entered_and_left(&barrier);
}

/// Member 0 waits to enter; its session expires while it is paused (its
/// node goes); member 1 enters and counts 1 of 2; only then does member 0
/// learn of the expiry: it enters again in its new session and both pass.
#[test]
fn fixed_waiter_learning_its_expiry_late_starts_over() {
    let mut barrier = Barrier::new(2, fixed(2));
    barrier.call_and_run(0, BarrierCall::Enter);
    barrier.stepper.expire_on_server(0);
    barrier.call_and_run(1, BarrierCall::Enter);
    barrier.run();
    assert!(barrier.entered().is_empty(), "{}", barrier.trace());
    barrier.stepper.notice_expiry(0);
    assert!(barrier.outcomes(0).is_empty(), "{}", barrier.trace());
    barrier.stepper.new_session(0, 0x900);
    barrier.run();
    assert_eq!(barrier.entered(), vec![0, 1], "{}", barrier.trace());
    barrier.call(0, BarrierCall::Leave);
    barrier.call(1, BarrierCall::Leave);
    barrier.run();
    assert_all_entered_and_left(&barrier);
}

/// A member counted by the last arrival expires before it sees `ready`; the
/// others pass, leave and delete `ready`. Back in a new session, the member
/// must not wait for a round that is over: its Enter fails with
/// SessionExpired and nothing is left under the root.
#[test]
fn fixed_member_expired_after_being_counted_fails_instead_of_waiting_forever() {
    let mut barrier = Barrier::new(2, fixed(2));
    barrier.call(0, BarrierCall::Enter);
    // Member 0 reads the root and creates its node; its count is not sent.
    while barrier.nodes().is_empty() {
        assert!(barrier.stepper.step(0), "{}", barrier.trace());
    }
    barrier.call_and_run(1, BarrierCall::Enter);
    assert_eq!(barrier.entered(), vec![1], "{}", barrier.trace());
    barrier.stepper.expire(0);
    barrier.call_and_run(1, BarrierCall::Leave);
    assert_eq!(barrier.left(), vec![1], "{}", barrier.trace());
    barrier.stepper.new_session(0, FIRST_SESSION + 0x10);
    barrier.run();
    assert_eq!(
        barrier.outcomes(0),
        &[failed(ZkError::SessionExpired)],
        "{}",
        barrier.trace()
    );
    assert!(barrier.nodes().is_empty(), "{:?}", barrier.nodes());
}

/// A member that expires before anyone counted it joins again in its new
/// session (no round opened meanwhile), so the others are not stranded.
#[test]
fn fixed_member_expired_before_the_round_opened_joins_again() {
    let mut barrier = Barrier::new(2, fixed(2));
    barrier.call_and_run(0, BarrierCall::Enter);
    barrier.stepper.expire(0);
    barrier.call_and_run(1, BarrierCall::Enter);
    assert!(barrier.entered().is_empty(), "{}", barrier.trace());
    barrier.stepper.new_session(0, FIRST_SESSION + 0x10);
    barrier.run();
    assert_eq!(barrier.entered(), vec![0, 1], "{}", barrier.trace());
    barrier.call(0, BarrierCall::Leave);
    barrier.call(1, BarrierCall::Leave);
    barrier.run();
    assert_all_entered_and_left(&barrier);
}

/// Found by the model checker (30 steps): member 0 counts both nodes; member
/// 1 expires, and in its new session reads the root's round count before
/// member 0 opens the round with its stale count. Member 0 passes and
/// leaves; member 1 joins again, alone. It must notice, when it counts, that
/// a round opened since its Enter began, and fail instead of waiting forever
/// for a round that is over, taking its new node back.
#[test]
fn fixed_rejoiner_that_read_the_root_before_a_stale_count_opened_the_round_fails() {
    let mut barrier = Barrier::new(2, fixed(2));
    barrier.call(0, BarrierCall::Enter);
    for _ in 0..2 {
        // Read the root, create the node.
        assert!(barrier.stepper.send(0) && barrier.stepper.deliver(0));
    }
    barrier.call(1, BarrierCall::Enter);
    assert!(barrier.stepper.send(1) && barrier.stepper.deliver(1));
    assert!(barrier.stepper.send(1), "member 1's create is applied");
    // Member 0 counts two members; its multi opening the round waits.
    assert!(barrier.stepper.send(0) && barrier.stepper.deliver(0));
    barrier.stepper.expire_on_server(1);
    barrier.stepper.notice_expiry(1);
    barrier.stepper.new_session(1, FIRST_SESSION + 0x10);
    assert!(
        barrier.stepper.send(1),
        "member 1 reads the root: no round yet"
    );
    barrier.stepper.run_client(0);
    assert_eq!(barrier.entered(), vec![0], "{}", barrier.trace());
    barrier.call(0, BarrierCall::Leave);
    barrier.stepper.run_client(0);
    assert_eq!(barrier.left(), vec![0], "{}", barrier.trace());
    barrier.run();
    assert_eq!(
        barrier.outcomes(1),
        &[failed(ZkError::SessionExpired)],
        "{}",
        barrier.trace()
    );
    assert!(barrier.nodes().is_empty(), "{:?}", barrier.nodes());
}
