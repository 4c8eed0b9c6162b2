//! Leader election (seed 003) on the synchronous stepper: the happy path of
//! both variants, every known bug that concerns the election (2: blind retry
//! of a sequential create, 4: herd effect) and the further seed bugs found
//! (swallowed watcher errors, ignored expiry, the counter stuck at i32::MAX)
//! pinned on `original` with explicit step orders, and the same steps on
//! `fixed` holding the properties: never two leaders, one wakeup per leader
//! change, no node left behind, fencing tokens increasing.

use zk_recipes::election::{
    ElectionCall, ElectionError, ElectionOutcome, FixedElection, OriginalElection,
};
use zk_recipes::zk::Acls;
use zk_recipes::zk::{
    CreateMode, EventType, KeeperState, Path, Request, SessionId, WatchedEvent, ZkError,
};
use zk_recipes::{FencingToken, Input, Outbox, Recipe};
use zk_sim::client::ConnectionState;
use zk_sim::stepper::{ClientId, Stepper};

const PARENT: &str = "/leader";
/// Session ids of the clients: client `i` gets `FIRST_SESSION + i`.
const FIRST_SESSION: i64 = 0x100;

/// A recipe plus counters of the node events it received and the
/// getChildren reads it asked for (the herd bound's measures).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct Counted<R> {
    inner: R,
    node_events: u32,
    children_reads: u32,
}

impl<R: Recipe> Recipe for Counted<R> {
    type Call = R::Call;
    type Outcome = R::Outcome;

    fn handle(&mut self, input: Input<R::Call>, out: &mut Outbox<R::Outcome>) {
        if matches!(&input, Input::Watch(event) | Input::WatcherEvent { event, .. } if event.event_type != EventType::None)
        {
            self.node_events += 1;
        }
        let before = out.requests.len();
        self.inner.handle(input, out);
        let reads = out.requests[before..]
            .iter()
            .filter(|(_, request, _)| {
                matches!(
                    request,
                    Request::GetChildren { .. } | Request::GetChildren2 { .. }
                )
            })
            .count();
        self.children_reads += reads as u32;
    }
}

/// The counters of every client: (node events, children reads).
type Counters = Vec<(u32, u32)>;

/// An election under test: a stepper, its clients and the leader checks.
struct Election<R: Recipe<Call = ElectionCall, Outcome = ElectionOutcome>> {
    stepper: Stepper<Counted<R>>,
    clients: usize,
    /// Every Elected token in the order the clients announced them.
    tokens: Vec<FencingToken>,
    seen_outcomes: Vec<usize>,
}

impl<R: Recipe<Call = ElectionCall, Outcome = ElectionOutcome>> Election<R> {
    /// `clients` contenders made by `make(i)`, connected, the parent created.
    fn new(clients: usize, make: impl Fn(usize) -> R) -> Self {
        let mut stepper = Stepper::new();
        let parent = Request::Create {
            path: parent(),
            data: Vec::new(),
            mode: CreateMode::Persistent,
            acl: Acls::Open,
        };
        stepper.admin(&parent).expect("create the election parent");
        for i in 0..clients {
            let recipe = Counted {
                inner: make(i),
                node_events: 0,
                children_reads: 0,
            };
            stepper.add_client(recipe, FIRST_SESSION + i as i64);
        }
        Election {
            stepper,
            clients,
            tokens: Vec::new(),
            seen_outcomes: vec![0; clients],
        }
    }

    /// Volunteers `client` and lets it alone run until quiet (arrival order).
    fn volunteer(&mut self, client: ClientId) {
        self.stepper.call(client, ElectionCall::Volunteer);
        self.run_client_checked(client);
    }

    fn resign(&mut self, client: ClientId) {
        self.stepper.call(client, ElectionCall::Resign);
    }

    /// Round-robin until quiet, checking after every step that at most one
    /// client believes it leads.
    fn run_checked(&mut self) {
        loop {
            let mut moved = false;
            for client in 0..self.clients {
                moved |= self.step_checked(client);
            }
            if !moved {
                return;
            }
        }
    }

    fn run_client_checked(&mut self, client: ClientId) {
        while self.step_checked(client) {}
    }

    fn step_checked(&mut self, client: ClientId) -> bool {
        let moved = self.stepper.step(client);
        self.observe();
        let leaders = self.leaders();
        assert!(
            leaders.len() <= 1,
            "two leaders {leaders:?}\n{}",
            self.stepper.trace()
        );
        moved
    }

    /// Records the tokens of new Elected outcomes in announcement order.
    fn observe(&mut self) {
        for client in 0..self.clients {
            let outcomes = self.stepper.outcomes(client);
            for outcome in &outcomes[self.seen_outcomes[client]..] {
                if let ElectionOutcome::Elected { token } = outcome {
                    self.tokens.push(*token);
                }
            }
            self.seen_outcomes[client] = outcomes.len();
        }
    }

    /// The clients whose last Elected / Resigned / Lost is Elected.
    fn leaders(&self) -> Vec<ClientId> {
        (0..self.clients)
            .filter(|c| believes_leading(self.stepper.outcomes(*c)))
            .collect()
    }

    fn outcomes(&self, client: ClientId) -> &[ElectionOutcome] {
        self.stepper.outcomes(client)
    }

    /// The nodes under the election parent.
    fn nodes(&self) -> Vec<Path> {
        let parent = parent();
        self.stepper
            .server()
            .paths()
            .into_iter()
            .filter(|p| p.parent().as_ref() == Some(&parent))
            .collect()
    }

    fn counters(&self) -> Counters {
        (0..self.clients)
            .map(|c| {
                let recipe = self.stepper.recipe(c);
                (recipe.node_events, recipe.children_reads)
            })
            .collect()
    }

    fn trace(&self) -> &str {
        self.stepper.trace()
    }
}

fn parent() -> Path {
    Path::new(PARENT).unwrap()
}

fn original(_: usize) -> OriginalElection {
    OriginalElection::new(parent())
}

fn fixed(i: usize) -> FixedElection {
    FixedElection::new(parent(), 0xA0 + i as u64)
}

fn believes_leading(outcomes: &[ElectionOutcome]) -> bool {
    let last = outcomes
        .iter()
        .rev()
        .find(|o| !matches!(o, ElectionOutcome::Failed(_)));
    matches!(last, Some(ElectionOutcome::Elected { .. }))
}

fn elected_count(outcomes: &[ElectionOutcome]) -> usize {
    outcomes
        .iter()
        .filter(|o| matches!(o, ElectionOutcome::Elected { .. }))
        .count()
}

/// Per-client difference of two counter snapshots.
fn delta(after: &Counters, before: &Counters) -> Counters {
    after
        .iter()
        .zip(before)
        .map(|(a, b)| (a.0 - b.0, a.1 - b.1))
        .collect()
}

// ---- happy path ----

/// Contenders volunteer in order 0..n; each leader resigns in turn; the next
/// in arrival order takes over with a larger token; nothing is left behind.
fn leaders_follow_arrival_order<R: Recipe<Call = ElectionCall, Outcome = ElectionOutcome>>(
    make: impl Fn(usize) -> R,
) {
    let mut election = Election::new(4, make);
    for client in 0..4 {
        election.volunteer(client);
    }
    election.run_checked();
    for expected in 0..4 {
        assert_eq!(election.leaders(), vec![expected], "{}", election.trace());
        election.resign(expected);
        election.run_checked();
        assert_eq!(
            election.outcomes(expected).last(),
            Some(&ElectionOutcome::Resigned)
        );
    }
    assert!(election.leaders().is_empty());
    assert_eq!(election.tokens.len(), 4, "{}", election.trace());
    assert!(
        election.tokens.windows(2).all(|w| w[0] < w[1]),
        "tokens {:?}",
        election.tokens
    );
    assert_eq!(election.nodes(), Vec::<Path>::new(), "{}", election.trace());
}

#[test]
fn happy_path_original_leaders_follow_arrival_order() {
    leaders_follow_arrival_order(original);
}

#[test]
fn happy_path_fixed_leaders_follow_arrival_order() {
    leaders_follow_arrival_order(fixed);
}

// ---- known bug 4: herd effect ----

/// Five contenders; the leader resigns. Returns the per-client counters of
/// the joins and of the leader change.
fn herd<R: Recipe<Call = ElectionCall, Outcome = ElectionOutcome>>(
    make: impl Fn(usize) -> R,
) -> (Election<R>, Counters, Counters) {
    let mut election = Election::new(5, make);
    let start = election.counters();
    for client in 0..5 {
        election.volunteer(client);
    }
    election.run_checked();
    let joined = election.counters();
    assert_eq!(election.leaders(), vec![0]);
    election.resign(0);
    election.run_checked();
    assert_eq!(election.leaders(), vec![1], "{}", election.trace());
    let change = delta(&election.counters(), &joined);
    (election, delta(&joined, &start), change)
}

#[test]
fn bug4_herd_original_wakes_every_waiter_per_leader_change() {
    let (election, joins, change) = herd(original);
    // Every waiter (clients 1..5) is woken and re-reads the list ...
    assert_eq!(&change[1..], &[(1, 1); 4], "{}", election.trace());
    // ... and so is the resigned leader, whose child watch was still armed.
    assert_eq!(change[0].0, 1);
    let wakeups: u32 = change.iter().map(|c| c.0).sum();
    assert_eq!(wakeups, 5, "N notifications for one leader change");
    // Every join woke the earlier contenders (joins that come before a
    // contender re-reads coalesce into one one-shot watch event).
    assert_eq!(&joins[..4], &[(1, 2); 4], "{}", election.trace());
    assert_eq!(joins[4], (0, 1));
}

#[test]
fn bug4_herd_fixed_wakes_only_the_successor() {
    let (election, joins, change) = herd(fixed);
    assert_eq!(
        change,
        vec![(0, 0), (1, 1), (0, 0), (0, 0), (0, 0)],
        "{}",
        election.trace()
    );
    assert_eq!(
        joins.iter().map(|c| c.0).sum::<u32>(),
        0,
        "joins wake nobody"
    );
}

// ---- known bug 2: blind retry of the sequential create ----

/// Shortest: one contender; its create is applied but the reply is lost.
fn lost_create_reply<R: Recipe<Call = ElectionCall, Outcome = ElectionOutcome>>(
    make: impl Fn(usize) -> R,
) -> Election<R> {
    let mut election = Election::new(2, make);
    election.stepper.call(0, ElectionCall::Volunteer);
    assert!(election.stepper.apply_then_disconnect(0));
    election.stepper.reconnect(0);
    election.run_checked();
    election.volunteer(1);
    election.run_checked();
    election
}

#[test]
fn bug2_blind_retry_original_orphan_blocks_the_election() {
    let mut election = lost_create_reply(original);
    // Client 0 owns two nodes: the orphan sorts before its retry, so it
    // waits for itself, and client 1 waits behind both: no leader.
    assert!(election.leaders().is_empty(), "{}", election.trace());
    assert_eq!(election.nodes().len(), 3);
    let session = election.stepper.session_id(0);
    assert_eq!(election.stepper.server().ephemerals_of(session).len(), 2);
    // Only the end of client 0's session unblocks the election.
    election.stepper.expire(0);
    election.run_checked();
    assert_eq!(election.leaders(), vec![1], "{}", election.trace());
}

#[test]
fn bug2_blind_retry_fixed_adopts_its_node() {
    let mut election = lost_create_reply(fixed);
    assert_eq!(election.leaders(), vec![0], "{}", election.trace());
    assert_eq!(election.nodes().len(), 2, "one node per contender");
    election.resign(0);
    election.run_checked();
    assert_eq!(election.leaders(), vec![1], "{}", election.trace());
    election.resign(1);
    election.run_checked();
    assert!(election.nodes().is_empty());
}

// ---- seed bug: the watcher ignores state events, expiry goes unnoticed ----

/// Client 0 leads, client 1 waits; client 0's session expires and it learns.
fn leader_expires<R: Recipe<Call = ElectionCall, Outcome = ElectionOutcome>>(
    make: impl Fn(usize) -> R,
) -> Election<R> {
    let mut election = Election::new(2, make);
    election.volunteer(0);
    election.volunteer(1);
    assert_eq!(election.leaders(), vec![0]);
    election.stepper.expire(0);
    election.stepper.run();
    election.observe();
    election
}

#[test]
fn expiry_ignored_original_two_leaders() {
    let election = leader_expires(original);
    assert_eq!(election.stepper.state(0), ConnectionState::Expired);
    assert_eq!(
        election.leaders(),
        vec![0, 1],
        "client 0 never learns\n{}",
        election.trace()
    );
}

#[test]
fn expiry_fixed_leader_reports_lost_then_can_volunteer_again() {
    let mut election = leader_expires(fixed);
    assert_eq!(election.outcomes(0).last(), Some(&ElectionOutcome::Lost));
    assert_eq!(election.leaders(), vec![1], "{}", election.trace());
    election.stepper.new_session(0, 0x900);
    election.volunteer(0);
    election.run_checked();
    assert_eq!(election.leaders(), vec![1]);
    election.resign(1);
    election.run_checked();
    assert_eq!(election.leaders(), vec![0], "{}", election.trace());
    assert!(
        election.tokens.windows(2).all(|w| w[0] < w[1]),
        "tokens {:?}",
        election.tokens
    );
}

#[test]
fn expiry_fixed_waiter_starts_over_in_its_new_session() {
    let mut election = Election::new(2, fixed);
    election.volunteer(0);
    election.volunteer(1);
    election.stepper.expire(1);
    election.stepper.new_session(1, 0x901);
    election.run_checked();
    assert_eq!(
        election.nodes().len(),
        2,
        "client 1 volunteered again\n{}",
        election.trace()
    );
    election.resign(0);
    election.run_checked();
    assert_eq!(election.leaders(), vec![1], "{}", election.trace());
}

// ---- seed bug: errors inside the watcher are swallowed ----

/// Client 0 leads and resigns; client 1's re-read, triggered by the watch,
/// loses its reply to a connection loss.
fn watcher_read_lost<R: Recipe<Call = ElectionCall, Outcome = ElectionOutcome>>(
    make: impl Fn(usize) -> R,
) -> Election<R> {
    let mut election = Election::new(2, make);
    election.volunteer(0);
    election.volunteer(1);
    election.resign(0);
    election.run_client_checked(0);
    assert!(election.stepper.deliver(1), "client 1 is woken");
    assert!(election.stepper.apply_then_disconnect(1));
    election.stepper.reconnect(1);
    election.run_checked();
    election
}

#[test]
fn watcher_error_swallowed_original_never_elected() {
    let election = watcher_read_lost(original);
    assert!(election.leaders().is_empty(), "{}", election.trace());
    assert_eq!(
        election.nodes().len(),
        1,
        "client 1 is the only contender left"
    );
    assert_eq!(
        election.stepper.client(1).watches.armed_count(),
        0,
        "and it watches nothing"
    );
}

#[test]
fn watcher_error_fixed_retries_and_is_elected() {
    let election = watcher_read_lost(fixed);
    assert_eq!(election.leaders(), vec![1], "{}", election.trace());
}

// ---- the parent's sequence counter at i32::MAX ----

/// The parent's counter is at i32::MAX: ZooKeeper 3.8 names client 0's node
/// ...2147483647 and, not wrapping between requests, the next one too.
fn counter_at_cap<R: Recipe<Call = ElectionCall, Outcome = ElectionOutcome>>(
    make: impl Fn(usize) -> R,
) -> Election<R> {
    let mut election = Election::new(2, make);
    election
        .stepper
        .server_mut()
        .set_sequence_counter(&parent(), i32::MAX)
        .unwrap();
    election.volunteer(0);
    election.stepper.call(1, ElectionCall::Volunteer);
    election.stepper.run();
    election.observe();
    election
}

#[test]
fn sequence_cap_original_newcomer_fails_with_node_exists() {
    let election = counter_at_cap(original);
    assert_eq!(election.leaders(), vec![0], "{}", election.trace());
    let expected = ElectionOutcome::Failed(ElectionError::Zk(ZkError::NodeExists));
    assert_eq!(election.outcomes(1), &[expected], "{}", election.trace());
}

#[test]
fn sequence_cap_fixed_tie_abandons_instead_of_two_leaders() {
    // Unique names make the creates succeed with equal numbers; ranking by
    // number alone would elect both (it did before the tie check).
    let election = counter_at_cap(fixed);
    assert_eq!(election.leaders(), vec![0], "{}", election.trace());
    let expected = ElectionOutcome::Failed(ElectionError::SequenceExhausted);
    assert_eq!(election.outcomes(1), &[expected], "{}", election.trace());
    assert_eq!(election.nodes().len(), 1, "client 1 deleted its node");
}

// ---- known bug 8's election form: a paused leader ----

#[test]
fn pause_fixed_two_believers_are_told_apart_by_the_token() {
    let mut election = Election::new(2, fixed);
    election.volunteer(0);
    election.volunteer(1);
    // Client 0 pauses past its session timeout: it does not know.
    election.stepper.expire_on_server(0);
    election.stepper.run();
    election.observe();
    // No recipe can prevent the stale belief; the token orders the two.
    assert_eq!(election.leaders(), vec![0, 1], "{}", election.trace());
    assert!(
        election.tokens[0] < election.tokens[1],
        "the resource rejects client 0's token"
    );
    // Once it resumes and talks to the server, it steps down.
    election.resign(0);
    election.stepper.run();
    election.observe();
    assert_eq!(election.leaders(), vec![1], "{}", election.trace());
}

// ---- fixed under a fault at every step ----

/// A fault the sweep injects in place of one send.
#[derive(Clone, Copy, Debug)]
enum Fault {
    /// The request is applied, its reply lost; the client reconnects.
    LostReply,
    /// The client's session expires (it learns at once) and it gets a new one.
    Expiry,
    /// The connection drops before the request is sent: it fails with
    /// ConnectionLoss without being applied; the client reconnects.
    NotApplied,
}

/// Steps an election round-robin until quiet, replacing the `fault_at`-th
/// send with `fault`, and keeps the workload going: a new leader resigns at
/// once, a client that lost its leadership volunteers again.
struct FaultySchedule {
    fault: Fault,
    fault_at: usize,
    sends: usize,
    next_session: i64,
    /// Per client, how many of its outcomes the workload has reacted to.
    reacted: Vec<usize>,
}

impl FaultySchedule {
    fn run(&mut self, election: &mut Election<FixedElection>) {
        loop {
            let mut moved = false;
            for client in 0..election.clients {
                let can_send = election.stepper.state(client) == ConnectionState::Connected
                    && !election.stepper.client(client).outgoing.is_empty();
                if can_send && self.sends == self.fault_at {
                    self.inject(election, client);
                    moved = true;
                } else {
                    moved |= election.step_checked(client);
                }
                self.sends += usize::from(can_send);
                election.observe();
                self.react(election, client);
            }
            if !moved {
                return;
            }
        }
    }

    fn inject(&mut self, election: &mut Election<FixedElection>, client: ClientId) {
        match self.fault {
            Fault::LostReply => {
                election.stepper.apply_then_disconnect(client);
                election.stepper.reconnect(client);
            }
            Fault::Expiry => {
                election.stepper.expire(client);
                election.stepper.new_session(client, self.next_session);
                self.next_session += 1;
            }
            Fault::NotApplied => {
                election.stepper.disconnect(client);
                election.stepper.reconnect(client);
            }
        }
    }

    fn react(&mut self, election: &mut Election<FixedElection>, client: ClientId) {
        let outcomes = election.outcomes(client);
        if outcomes.len() == self.reacted[client] {
            return;
        }
        self.reacted[client] = outcomes.len();
        match outcomes.last() {
            Some(ElectionOutcome::Elected { .. }) => election.resign(client),
            Some(ElectionOutcome::Lost) => election.stepper.call(client, ElectionCall::Volunteer),
            _ => {}
        }
    }
}

/// Three fixed contenders under a [`FaultySchedule`]. Checks after every
/// step: never two leaders. At the end: everyone was elected and resigned,
/// tokens increased, no node is left. Returns the number of sends.
fn sweep(fault: Fault, fault_at: usize) -> usize {
    let mut election = Election::new(3, fixed);
    for client in 0..3 {
        election.stepper.call(client, ElectionCall::Volunteer);
    }
    let mut schedule = FaultySchedule {
        fault,
        fault_at,
        sends: 0,
        next_session: 0x1000,
        reacted: vec![0; 3],
    };
    schedule.run(&mut election);
    let context = format!("{fault:?} at send {fault_at}\n{}", election.trace());
    for client in 0..3 {
        let outcomes = election.outcomes(client);
        assert!(
            elected_count(outcomes) >= 1,
            "client {client} never led: {context}"
        );
        assert_eq!(
            outcomes.last(),
            Some(&ElectionOutcome::Resigned),
            "client {client}: {context}"
        );
        assert!(
            !outcomes
                .iter()
                .any(|o| matches!(o, ElectionOutcome::Failed(_))),
            "{context}"
        );
    }
    assert!(
        election.tokens.windows(2).all(|w| w[0] < w[1]),
        "tokens {:?}: {context}",
        election.tokens
    );
    assert_eq!(election.nodes(), Vec::<Path>::new(), "{context}");
    schedule.sends
}

#[test]
fn fixed_survives_a_lost_reply_at_every_step() {
    let sends = sweep(Fault::LostReply, usize::MAX);
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

#[test]
fn fixed_leads_only_with_a_node_of_its_session() {
    // A node carrying client 0's id but owned by another session (a stale
    // node of an id collision): client 0 must not lead with it.
    let mut election = Election::new(1, fixed);
    let squatter = SessionId(0x7777);
    election
        .stepper
        .server_mut()
        .open_session(squatter, 10_000)
        .unwrap();
    let name = format!("{PARENT}/{}", fixed(0).node_prefix());
    let request = Request::Create {
        path: Path::sequential_prefix(name).unwrap(),
        data: Vec::new(),
        mode: CreateMode::EphemeralSequential,
        acl: Acls::Open,
    };
    let mut order = zk_sim::server::SortedOrder;
    election
        .stepper
        .server_mut()
        .apply(squatter, &request, &mut order)
        .result
        .unwrap();
    // Client 0's create reply is lost; the lookup finds two nodes with its
    // id and takes the older one, the squatter's.
    election.stepper.call(0, ElectionCall::Volunteer);
    assert!(election.stepper.apply_then_disconnect(0));
    election.stepper.reconnect(0);
    election.run_checked();
    assert!(election.leaders().is_empty(), "{}", election.trace());
    assert!(
        matches!(
            election.outcomes(0).last(),
            Some(ElectionOutcome::Failed(_))
        ),
        "{:?}\n{}",
        election.outcomes(0),
        election.trace()
    );
}

#[test]
fn fixed_resign_while_the_create_is_in_flight_withdraws_the_node() {
    let mut election = Election::new(2, fixed);
    election.stepper.call(0, ElectionCall::Volunteer);
    assert!(
        election.stepper.send(0),
        "the create is applied, its reply not yet delivered"
    );
    election.resign(0);
    election.volunteer(1);
    election.run_checked();
    assert_eq!(
        election.outcomes(0),
        &[ElectionOutcome::Resigned],
        "{}",
        election.trace()
    );
    assert_eq!(election.leaders(), vec![1], "{}", election.trace());
    assert_eq!(election.nodes().len(), 1, "client 0's node is gone");
}

// ---- fixed under spurious wakeups and an expiry learned late ----

fn node_event(event_type: EventType, path: &Path) -> WatchedEvent {
    WatchedEvent::node(event_type, path.clone())
}

/// 0 leads, 1 waits on 0, 2 waits on 1. Spurious events (deletions of nodes
/// still there, one while 1's read is in flight, a children change, a state
/// event) and a duplicate of every real wakeup: never two leaders, each
/// leads once, in arrival order.
#[test]
fn fixed_spurious_and_duplicated_wakeups_keep_one_leader() {
    let mut election = Election::new(3, fixed);
    for client in 0..3 {
        election.volunteer(client);
    }
    let nodes = election.nodes();
    let deleted = |i: usize| node_event(EventType::NodeDeleted, &nodes[i]);
    election.stepper.inject_watch_event(1, deleted(0));
    election
        .stepper
        .inject_watch_event(2, node_event(EventType::NodeChildrenChanged, &parent()));
    election
        .stepper
        .inject_watch_event(0, WatchedEvent::state(KeeperState::SyncConnected));
    assert!(election.stepper.send(1), "1's read is on the wire");
    election.stepper.inject_watch_event(1, deleted(0));
    election.run_checked();
    assert_eq!(election.leaders(), vec![0], "{}", election.trace());
    election.resign(0);
    election.run_checked();
    assert_eq!(election.leaders(), vec![1], "{}", election.trace());
    election.stepper.inject_watch_event(1, deleted(0));
    election.stepper.inject_watch_event(2, deleted(1));
    election.run_checked();
    assert_eq!(election.leaders(), vec![1], "{}", election.trace());
    election.resign(1);
    election.run_checked();
    election.stepper.inject_watch_event(2, deleted(1));
    election.run_checked();
    assert_eq!(election.leaders(), vec![2], "{}", election.trace());
    election.resign(2);
    election.run_checked();
    for client in 0..3 {
        assert_eq!(
            elected_count(election.outcomes(client)),
            1,
            "{}",
            election.trace()
        );
    }
    assert!(
        election.tokens.windows(2).all(|w| w[0] < w[1]),
        "tokens {:?}",
        election.tokens
    );
    assert!(election.nodes().is_empty(), "{}", election.trace());
}

/// 0 leads, 1 waits on 0, 2 waits on 1. 1's session expires while 1 is
/// paused; 0 resigns and 2 leads; only then does 1 learn of the expiry: it
/// has nothing to lose, volunteers again in its new session and leads
/// after 2.
#[test]
fn fixed_waiter_learning_its_expiry_late_starts_over() {
    let mut election = Election::new(3, fixed);
    for client in 0..3 {
        election.volunteer(client);
    }
    election.stepper.expire_on_server(1);
    election.resign(0);
    election.run_checked();
    assert_eq!(election.leaders(), vec![2], "{}", election.trace());
    assert!(election.outcomes(1).is_empty(), "{}", election.trace());
    election.stepper.notice_expiry(1);
    assert!(
        election.outcomes(1).is_empty(),
        "a contender has nothing to lose"
    );
    election.stepper.new_session(1, 0x901);
    election.run_checked();
    assert_eq!(election.leaders(), vec![2], "1 queues behind 2");
    election.resign(2);
    election.run_checked();
    assert_eq!(election.leaders(), vec![1], "{}", election.trace());
    assert!(
        election.tokens.windows(2).all(|w| w[0] < w[1]),
        "tokens {:?}",
        election.tokens
    );
    election.resign(1);
    election.run_checked();
    assert!(election.nodes().is_empty(), "{}", election.trace());
}
