//! The queue recipes on the synchronous stepper: seed 000's
//! DistributedQueue and seed 001's tutorial Queue (bugs included) next to
//! the fixed queue. Happy paths with several producers and consumers; bug 6
//! of known-bugs.md reproduced on the originals with explicit step orders
//! and held by the fixed queue on the same steps; further seed bugs; and a
//! seeded random fault search that the fixed queue must survive and that
//! finds a violation in the original.
//!
//! Properties: every offered item is delivered exactly once, and each
//! consumer receives one producer's items in the order they were offered.

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::collections::{BTreeMap, BTreeSet};
use zk_recipes::queue::{
    DistributedQueueOriginal, FixedQueue, QueueCall, QueueFailure, QueueOutcome,
    TutorialQueueOriginal,
};
use zk_recipes::zk::Acls;
use zk_recipes::zk::{CreateMode, EventType, KeeperState, Path, Request, WatchedEvent, ZkError};
use zk_recipes::{Observation, Observe, Recipe};
use zk_sim::client::ConnectionState;
use zk_sim::stepper::{ClientId, Stepper};

const QUEUE_DIR: &str = "/q";

fn dir() -> Path {
    Path::new(QUEUE_DIR).unwrap()
}

/// A queue variant the tests build, one per client with a unique id.
trait Variant: Recipe<Call = QueueCall, Outcome = QueueOutcome> {
    fn build(uid: u64) -> Self;
}

impl Variant for DistributedQueueOriginal {
    fn build(_uid: u64) -> Self {
        DistributedQueueOriginal::new(dir())
    }
}

impl Variant for TutorialQueueOriginal {
    fn build(_uid: u64) -> Self {
        TutorialQueueOriginal::new(dir())
    }
}

impl Variant for FixedQueue {
    fn build(uid: u64) -> Self {
        FixedQueue::new(dir(), uid)
    }
}

fn item(text: &str) -> Vec<u8> {
    text.as_bytes().to_vec()
}

fn offer(text: &str) -> QueueCall {
    QueueCall::Offer(item(text))
}

fn got(text: &str) -> QueueOutcome {
    QueueOutcome::Item(item(text))
}

fn keeper(error: ZkError) -> QueueOutcome {
    QueueOutcome::Failed(QueueFailure::Keeper(error))
}

/// A stepper (getChildren shuffled with `seed`) whose queue directory exists,
/// with `count` connected clients whose constructors have run.
fn setup<R: Variant>(count: usize, seed: u64) -> (Stepper<R>, Vec<ClientId>) {
    let mut st = Stepper::with_child_order_seed(seed);
    st.admin(&Request::Create {
        path: dir(),
        data: Vec::new(),
        mode: CreateMode::Persistent,
        acl: Acls::Open,
    })
    .unwrap();
    let clients = (0..count)
        .map(|i| {
            let client = st.add_client(R::build(i as u64 + 1), 100 + i as i64);
            st.run_client(client);
            client
        })
        .collect();
    (st, clients)
}

/// The client sends its next request and handles everything queued for it
/// (notifications that came first, then the reply).
fn round_trip<R: Variant>(st: &mut Stepper<R>, client: ClientId) {
    assert!(
        st.send(client),
        "c{client} has no request to send\n{}",
        st.trace()
    );
    while st.deliver(client) {}
}

/// Offers `text` from `producer` and runs it alone until it answers.
fn offer_now<R: Variant>(st: &mut Stepper<R>, producer: ClientId, text: &str) {
    st.call(producer, offer(text));
    st.run_client(producer);
    assert_eq!(
        st.take_outcomes(producer),
        vec![QueueOutcome::Offered],
        "{}",
        st.trace()
    );
}

/// The payloads in the queue directory, oldest first.
fn queued<R: Variant>(st: &Stepper<R>) -> Vec<Vec<u8>> {
    let server = st.server();
    server
        .paths()
        .into_iter()
        .filter(|path| path.parent() == Some(dir()))
        .filter_map(|path| server.data(&path).map(<[u8]>::to_vec))
        .collect()
}

/// Nodes under the receipts directory of the fixed queue.
fn receipts<R: Variant>(st: &Stepper<R>) -> Vec<Path> {
    st.server()
        .paths()
        .into_iter()
        .filter(|path| path.as_str().starts_with("/q-receipts/"))
        .collect()
}

// ---------------------------------------------------------------- oracle

/// Exactly once, and FIFO per producer within each consumer; the first
/// violation otherwise. `offered[p]` lists producer p's payloads in offer
/// order; `delivered[c]` lists what consumer c received, in order.
fn check_exactly_once_fifo(
    offered: &[Vec<Vec<u8>>],
    delivered: &[Vec<Vec<u8>>],
) -> Result<(), String> {
    let mut origin = BTreeMap::new();
    for (producer, items) in offered.iter().enumerate() {
        for (index, item) in items.iter().enumerate() {
            origin.insert(item.clone(), (producer, index));
        }
    }
    let mut count: BTreeMap<&Vec<u8>, usize> = BTreeMap::new();
    for (consumer, items) in delivered.iter().enumerate() {
        for item in items {
            if !origin.contains_key(item) {
                return Err(format!(
                    "consumer {consumer} got {:?}, never offered",
                    show(item)
                ));
            }
            *count.entry(item).or_default() += 1;
        }
    }
    for item in origin.keys() {
        match count.get(item).copied().unwrap_or(0) {
            1 => {}
            0 => return Err(format!("{:?} lost: never delivered", show(item))),
            n => return Err(format!("{:?} delivered {n} times", show(item))),
        }
    }
    for (consumer, items) in delivered.iter().enumerate() {
        let mut last_index: BTreeMap<usize, usize> = BTreeMap::new();
        for item in items {
            let (producer, index) = origin[item];
            if let Some(previous) = last_index.insert(producer, index) {
                if index < previous {
                    return Err(format!("consumer {consumer} got producer {producer}'s item {index} after {previous}"));
                }
            }
        }
    }
    Ok(())
}

fn show(item: &[u8]) -> String {
    String::from_utf8_lossy(item).into_owned()
}

// ---------------------------------------------------------------- workload

/// Producers offer their payloads one at a time and consumers take until
/// every payload is delivered, as an application would: a failed call is
/// retried (the tutorial's main loop does `i--`).
struct Workload {
    producers: Vec<(ClientId, Vec<Vec<u8>>)>,
    consumers: Vec<ClientId>,
    next_offer: BTreeMap<ClientId, usize>,
    busy: BTreeSet<ClientId>,
    delivered: BTreeMap<ClientId, Vec<Vec<u8>>>,
    failures: Vec<(ClientId, QueueOutcome)>,
}

impl Workload {
    /// `items_each` payloads `p<i>-<n>` for each producer.
    fn new(producers: &[ClientId], consumers: &[ClientId], items_each: usize) -> Self {
        let producers = producers
            .iter()
            .enumerate()
            .map(|(p, &client)| {
                (
                    client,
                    (0..items_each)
                        .map(|n| item(&format!("p{p}-{n}")))
                        .collect(),
                )
            })
            .collect();
        Workload {
            producers,
            consumers: consumers.to_vec(),
            next_offer: BTreeMap::new(),
            busy: BTreeSet::new(),
            delivered: BTreeMap::new(),
            failures: Vec::new(),
        }
    }

    fn total(&self) -> usize {
        self.producers.iter().map(|(_, items)| items.len()).sum()
    }

    fn delivered_count(&self) -> usize {
        self.delivered.values().map(Vec::len).sum()
    }

    fn offers_done(&self) -> bool {
        self.producers
            .iter()
            .all(|(client, items)| self.next_offer.get(client).copied().unwrap_or(0) == items.len())
    }

    fn is_done(&self) -> bool {
        self.offers_done() && self.delivered_count() >= self.total()
    }

    /// Gives every idle client its next call.
    fn issue<R: Variant>(&mut self, st: &mut Stepper<R>) {
        for (client, items) in &self.producers {
            let next = self.next_offer.get(client).copied().unwrap_or(0);
            if next < items.len() && self.busy.insert(*client) {
                st.call(*client, QueueCall::Offer(items[next].clone()));
            }
        }
        let wanted = self.delivered_count() < self.total();
        for client in &self.consumers {
            if wanted && self.busy.insert(*client) {
                st.call(*client, QueueCall::Take);
            }
        }
    }

    /// Reads the clients' new outcomes.
    fn collect<R: Variant>(&mut self, st: &mut Stepper<R>) {
        let clients: Vec<ClientId> = self
            .producers
            .iter()
            .map(|(c, _)| *c)
            .chain(self.consumers.clone())
            .collect();
        for client in clients {
            for outcome in st.take_outcomes(client) {
                self.busy.remove(&client);
                match outcome {
                    QueueOutcome::Offered => *self.next_offer.entry(client).or_default() += 1,
                    QueueOutcome::Item(data) => {
                        self.delivered.entry(client).or_default().push(data)
                    }
                    other => self.failures.push((client, other)), // retried by the next issue
                }
            }
        }
    }

    /// Steps all clients round-robin with the workload's calls until it is
    /// done (true) or nobody can move (false: a lost item or a stuck client).
    fn run<R: Variant>(&mut self, st: &mut Stepper<R>) -> bool {
        for _ in 0..100_000 {
            self.issue(st);
            let mut moved = false;
            for client in self
                .producers
                .iter()
                .map(|(c, _)| *c)
                .chain(self.consumers.clone())
            {
                moved |= st.step(client);
            }
            self.collect(st);
            if self.is_done() {
                return true;
            }
            if !moved {
                return false;
            }
        }
        panic!("workload did not settle\n{}", st.trace());
    }

    fn check(&self) -> Result<(), String> {
        let offered: Vec<Vec<Vec<u8>>> = self
            .producers
            .iter()
            .map(|(_, items)| items.clone())
            .collect();
        let delivered: Vec<Vec<Vec<u8>>> = self
            .consumers
            .iter()
            .map(|c| self.delivered.get(c).cloned().unwrap_or_default())
            .collect();
        check_exactly_once_fifo(&offered, &delivered)
    }
}

/// Two producers with four items each, two consumers.
fn happy_path<R: Variant>(seed: u64) -> (Stepper<R>, Workload) {
    let (mut st, c) = setup::<R>(4, seed);
    let mut workload = Workload::new(&c[0..2], &c[2..4], 4);
    assert!(workload.run(&mut st), "workload stuck\n{}", st.trace());
    assert_eq!(workload.check(), Ok(()), "{}", st.trace());
    assert!(queued(&st).is_empty(), "items left behind\n{}", st.trace());
    (st, workload)
}

#[test]
fn happy_path_distributed_original_delivers_each_item_once_in_order() {
    for seed in 0..5 {
        let (_, workload) = happy_path::<DistributedQueueOriginal>(seed);
        assert_eq!(workload.failures, vec![]);
    }
}

#[test]
fn happy_path_tutorial_original_delivers_each_item_once_in_order() {
    for seed in 0..5 {
        let (st, workload) = happy_path::<TutorialQueueOriginal>(seed);
        // Consumers racing for the head fail with NoNode (bug 6); the
        // application's retry is safe here because nothing was taken.
        for (_, failure) in &workload.failures {
            assert_eq!(*failure, keeper(ZkError::NoNode), "{}", st.trace());
        }
    }
}

#[test]
fn happy_path_fixed_delivers_each_item_once_in_order_and_leaves_no_receipt() {
    for seed in 0..5 {
        let (mut st, workload) = happy_path::<FixedQueue>(seed);
        assert_eq!(workload.failures, vec![]);
        st.reap();
        assert_eq!(receipts(&st), Vec::<Path>::new());
        assert!(
            !st.server()
                .paths()
                .contains(&Path::new("/q-receipts").unwrap()),
            "empty container not reaped"
        );
    }
}

#[test]
fn single_consumer_gets_items_in_queue_order() {
    fn check<R: Variant>() {
        let (mut st, c) = setup::<R>(3, 7);
        for (n, producer) in [c[0], c[1], c[0], c[1], c[0]].into_iter().enumerate() {
            offer_now(&mut st, producer, &format!("i{n}"));
        }
        for n in 0..5 {
            st.call(c[2], QueueCall::Poll);
            st.run_client(c[2]);
            assert_eq!(
                st.take_outcomes(c[2]),
                vec![got(&format!("i{n}"))],
                "{}",
                st.trace()
            );
        }
        st.call(c[2], QueueCall::Poll);
        st.run_client(c[2]);
        assert_eq!(st.take_outcomes(c[2]), vec![QueueOutcome::Empty]);
    }
    check::<DistributedQueueOriginal>();
    check::<TutorialQueueOriginal>();
    check::<FixedQueue>();
}

#[test]
fn take_waits_for_an_offer() {
    fn check<R: Variant>() {
        let (mut st, c) = setup::<R>(2, 3);
        st.call(c[1], QueueCall::Take);
        st.run();
        assert_eq!(st.outcomes(c[1]), &[] as &[QueueOutcome]);
        offer_now(&mut st, c[0], "late");
        st.run();
        assert_eq!(st.take_outcomes(c[1]), vec![got("late")], "{}", st.trace());
    }
    check::<DistributedQueueOriginal>();
    check::<TutorialQueueOriginal>();
    check::<FixedQueue>();
}

// ---------------------------------------------------------------- bug 6: consumers racing for one head
//
// Steps: P offers "a". C1 and C2 take: C1 lists, C2 lists, C1 reads "a",
// C2 reads "a", C1 removes "a" (delete; the fixed queue's claim multi),
// C2 removes "a".

fn race_for_the_head<R: Variant>() -> (Stepper<R>, Vec<ClientId>) {
    let (mut st, c) = setup::<R>(3, 1);
    offer_now(&mut st, c[0], "a");
    st.call(c[1], QueueCall::Take);
    st.call(c[2], QueueCall::Take);
    for client in [c[1], c[2], c[1], c[2], c[1], c[2]] {
        round_trip(&mut st, client);
    }
    (st, c)
}

#[test]
fn bug6_consumer_race_tutorial_original_fails_with_no_node() {
    let (st, c) = race_for_the_head::<TutorialQueueOriginal>();
    assert_eq!(st.outcomes(c[1]), &[got("a")], "{}", st.trace());
    assert_eq!(
        st.outcomes(c[2]),
        &[keeper(ZkError::NoNode)],
        "{}",
        st.trace()
    );
}

#[test]
fn bug6_consumer_race_distributed_original_holds() {
    let (mut st, c) = race_for_the_head::<DistributedQueueOriginal>();
    st.run();
    assert_eq!(st.outcomes(c[1]), &[got("a")], "{}", st.trace());
    assert!(
        st.recipe(c[2]).is_waiting(),
        "C2 tries the next node, lists again and waits\n{}",
        st.trace()
    );
    offer_now(&mut st, c[0], "b");
    st.run();
    assert_eq!(st.outcomes(c[2]), &[got("b")], "{}", st.trace());
}

#[test]
fn bug6_consumer_race_fixed_holds() {
    let (mut st, c) = race_for_the_head::<FixedQueue>();
    st.run();
    assert_eq!(st.outcomes(c[1]), &[got("a")], "{}", st.trace());
    assert!(st.recipe(c[2]).is_waiting(), "{}", st.trace());
    offer_now(&mut st, c[0], "b");
    st.run();
    assert_eq!(st.outcomes(c[2]), &[got("b")], "{}", st.trace());
    assert_eq!(receipts(&st), Vec::<Path>::new());
}

// ---------------------------------------------------------------- bug 6: applied delete, lost reply
//
// Steps: P offers "a" and "b". C takes: lists, reads "a", then the server
// applies C's removal of "a" (delete; the fixed queue's claim multi) and the
// connection drops before the reply. C reconnects; a failed take is retried.

fn delete_applied_then_connection_loss<R: Variant>() -> (Stepper<R>, Vec<ClientId>) {
    let (mut st, c) = setup::<R>(2, 2);
    offer_now(&mut st, c[0], "a");
    offer_now(&mut st, c[0], "b");
    st.call(c[1], QueueCall::Take);
    round_trip(&mut st, c[1]); // getChildren
    round_trip(&mut st, c[1]); // getData(a)
    assert!(st.apply_then_disconnect(c[1])); // delete(a) applied, reply lost
    st.reconnect(c[1]);
    st.run_client(c[1]);
    if matches!(st.outcomes(c[1]), [QueueOutcome::Failed(_)]) {
        st.call(c[1], QueueCall::Take); // the application retries
        st.run_client(c[1]);
    }
    (st, c)
}

#[test]
fn bug6_delete_applied_then_connection_loss_distributed_original_loses_item() {
    let (st, c) = delete_applied_then_connection_loss::<DistributedQueueOriginal>();
    assert_eq!(
        st.outcomes(c[1]),
        &[keeper(ZkError::ConnectionLoss), got("b")],
        "{}",
        st.trace()
    );
    assert!(
        queued(&st).is_empty(),
        "\"a\" was deleted but never delivered"
    );
    let verdict = check_exactly_once_fifo(&[vec![item("a"), item("b")]], &[vec![item("b")]]);
    assert_eq!(verdict, Err("\"a\" lost: never delivered".to_string()));
}

#[test]
fn bug6_delete_applied_then_connection_loss_tutorial_original_loses_item() {
    let (st, c) = delete_applied_then_connection_loss::<TutorialQueueOriginal>();
    assert_eq!(
        st.outcomes(c[1]),
        &[keeper(ZkError::ConnectionLoss), got("b")],
        "{}",
        st.trace()
    );
    assert!(
        queued(&st).is_empty(),
        "\"a\" was deleted but never delivered"
    );
}

#[test]
fn bug6_delete_applied_then_connection_loss_fixed_holds() {
    let (st, c) = delete_applied_then_connection_loss::<FixedQueue>();
    assert_eq!(st.outcomes(c[1]), &[got("a")], "{}", st.trace());
    assert_eq!(queued(&st), vec![item("b")]);
    assert_eq!(receipts(&st), Vec::<Path>::new());
}

/// The same with the session expiring after the delete was applied: the
/// client learns it with the connection loss, then gets a new session.
fn delete_applied_then_session_expired<R: Variant>() -> (Stepper<R>, Vec<ClientId>) {
    let (mut st, c) = setup::<R>(2, 2);
    offer_now(&mut st, c[0], "a");
    st.call(c[1], QueueCall::Take);
    round_trip(&mut st, c[1]); // getChildren
    round_trip(&mut st, c[1]); // getData(a)
    assert!(st.send(c[1])); // delete(a) applied ...
    st.expire(c[1]); // ... and the reply lost with the session
    st.new_session(c[1], 900);
    st.run_client(c[1]);
    (st, c)
}

#[test]
fn bug6_delete_applied_then_session_expired_distributed_original_loses_item() {
    let (st, c) = delete_applied_then_session_expired::<DistributedQueueOriginal>();
    assert_eq!(
        st.outcomes(c[1]),
        &[keeper(ZkError::ConnectionLoss)],
        "{}",
        st.trace()
    );
    assert!(
        queued(&st).is_empty(),
        "\"a\" was deleted but never delivered"
    );
}

#[test]
fn bug6_delete_applied_then_session_expired_fixed_holds() {
    let (st, c) = delete_applied_then_session_expired::<FixedQueue>();
    assert_eq!(
        st.outcomes(c[1]),
        &[got("a")],
        "the take resumes in the new session\n{}",
        st.trace()
    );
    assert_eq!(receipts(&st), Vec::<Path>::new());
}

// ---------------------------------------------------------------- bug 6: applied create, lost reply
//
// Steps: the server applies P's offer of "a" and the connection drops before
// the reply. P reconnects; a failed offer is retried. C then takes twice.

fn create_applied_then_connection_loss<R: Variant>() -> (Stepper<R>, Vec<ClientId>) {
    let (mut st, c) = setup::<R>(2, 4);
    st.call(c[0], offer("a"));
    assert!(st.apply_then_disconnect(c[0])); // create(qn-) applied, reply lost
    st.reconnect(c[0]);
    st.run_client(c[0]);
    if matches!(st.outcomes(c[0]), [QueueOutcome::Failed(_)]) {
        st.call(c[0], offer("a")); // the application retries
        st.run_client(c[0]);
    }
    for _ in 0..2 {
        st.call(c[1], QueueCall::Poll);
        st.run_client(c[1]);
    }
    (st, c)
}

#[test]
fn bug6_create_applied_then_connection_loss_distributed_original_duplicates_item() {
    let (st, c) = create_applied_then_connection_loss::<DistributedQueueOriginal>();
    assert_eq!(
        st.outcomes(c[0]),
        &[keeper(ZkError::ConnectionLoss), QueueOutcome::Offered]
    );
    assert_eq!(st.outcomes(c[1]), &[got("a"), got("a")], "{}", st.trace());
    let verdict = check_exactly_once_fifo(&[vec![item("a")]], &[vec![item("a"), item("a")]]);
    assert_eq!(verdict, Err("\"a\" delivered 2 times".to_string()));
}

#[test]
fn bug6_create_applied_then_connection_loss_tutorial_original_duplicates_item() {
    let (st, c) = create_applied_then_connection_loss::<TutorialQueueOriginal>();
    assert_eq!(
        st.outcomes(c[0]),
        &[keeper(ZkError::ConnectionLoss), QueueOutcome::Offered]
    );
    assert_eq!(st.outcomes(c[1]), &[got("a"), got("a")], "{}", st.trace());
}

#[test]
fn bug6_create_applied_then_connection_loss_fixed_holds() {
    let (st, c) = create_applied_then_connection_loss::<FixedQueue>();
    assert_eq!(
        st.outcomes(c[0]),
        &[QueueOutcome::Offered],
        "{}",
        st.trace()
    );
    assert_eq!(
        st.outcomes(c[1]),
        &[got("a"), QueueOutcome::Empty],
        "{}",
        st.trace()
    );
    assert_eq!(receipts(&st), Vec::<Path>::new());
}

/// Why the fixed producer checks a receipt rather than looking for its item
/// (`qn-<uid>-` in getChildren, the usual advice): a consumer may take the
/// item before the producer looks, and the producer would offer it again.
#[test]
fn bug6_create_applied_item_consumed_before_producer_recovers_fixed_holds() {
    let (mut st, c) = setup::<FixedQueue>(2, 5);
    st.call(c[0], offer("a"));
    // The first write finds the receipts container missing; the second
    // creates it with the item and the receipt.
    round_trip(&mut st, c[0]);
    assert!(st.apply_then_disconnect(c[0]));
    st.call(c[1], QueueCall::Take);
    st.run_client(c[1]);
    assert_eq!(st.take_outcomes(c[1]), vec![got("a")], "{}", st.trace());
    st.reconnect(c[0]);
    st.run_client(c[0]);
    assert_eq!(
        st.outcomes(c[0]),
        &[QueueOutcome::Offered],
        "{}",
        st.trace()
    );
    assert!(queued(&st).is_empty(), "offered again: {:?}", queued(&st));
    assert_eq!(receipts(&st), Vec::<Path>::new());
}

// ---------------------------------------------------------------- further seed bugs

/// Seed 000 take(): a failed read escapes, so a blocking take fails although
/// nothing was taken (here the getData reply is lost to a connection loss).
#[test]
fn take_read_connection_loss_distributed_original_fails() {
    let (mut st, c) = setup::<DistributedQueueOriginal>(2, 6);
    offer_now(&mut st, c[0], "a");
    st.call(c[1], QueueCall::Take);
    round_trip(&mut st, c[1]); // getChildren
    assert!(st.apply_then_disconnect(c[1])); // getData(a), reply lost
    st.reconnect(c[1]);
    st.run_client(c[1]);
    assert_eq!(
        st.outcomes(c[1]),
        &[keeper(ZkError::ConnectionLoss)],
        "{}",
        st.trace()
    );
    assert_eq!(queued(&st), vec![item("a")]);
}

#[test]
fn take_read_connection_loss_fixed_reads_again() {
    let (mut st, c) = setup::<FixedQueue>(2, 6);
    offer_now(&mut st, c[0], "a");
    st.call(c[1], QueueCall::Take);
    round_trip(&mut st, c[1]); // getChildren
    assert!(st.apply_then_disconnect(c[1])); // getData(a), reply lost
    st.reconnect(c[1]);
    st.run_client(c[1]);
    assert_eq!(st.outcomes(c[1]), &[got("a")], "{}", st.trace());
}

/// Seed 000 take() and offer(): on NoNode they create the directory, and a
/// NodeExists from a concurrent creator escapes. Steps: the empty queue
/// directory is deleted (a cleanup job); C1 and C2 take: C1 lists (NoNode),
/// C2 lists (NoNode), C1 creates the directory, C2 creates it (NodeExists).
#[test]
fn dir_recreate_race_distributed_original_take_fails_with_node_exists() {
    let (mut st, c) = setup::<DistributedQueueOriginal>(3, 8);
    st.admin(&Request::Delete {
        path: dir(),
        version: -1,
    })
    .unwrap();
    st.call(c[1], QueueCall::Take);
    st.call(c[2], QueueCall::Take);
    for client in [c[1], c[2], c[1], c[2]] {
        round_trip(&mut st, client);
    }
    assert_eq!(
        st.outcomes(c[2]),
        &[keeper(ZkError::NodeExists)],
        "{}",
        st.trace()
    );
}

#[test]
fn dir_recreate_race_fixed_holds() {
    let (mut st, c) = setup::<FixedQueue>(3, 8);
    st.admin(&Request::Delete {
        path: dir(),
        version: -1,
    })
    .unwrap();
    st.call(c[1], QueueCall::Take);
    st.call(c[2], QueueCall::Take);
    for client in [c[1], c[2], c[1], c[2]] {
        round_trip(&mut st, client);
    }
    st.run();
    assert!(
        st.recipe(c[1]).is_waiting() && st.recipe(c[2]).is_waiting(),
        "{}",
        st.trace()
    );
    offer_now(&mut st, c[0], "a");
    st.run();
    let delivered: Vec<QueueOutcome> = [c[1], c[2]]
        .iter()
        .flat_map(|&client| st.outcomes(client).to_vec())
        .collect();
    assert_eq!(delivered, vec![got("a")], "{}", st.trace());
}

/// Seed 001 consume(): `new Integer(s.substring(7))` on every child, so one
/// child not named `element<n>` makes every consume fail.
#[test]
fn foreign_child_tutorial_original_fails_every_take() {
    let (mut st, c) = setup::<TutorialQueueOriginal>(2, 9);
    let foreign = dir().child("config").unwrap();
    st.admin(&Request::Create {
        path: foreign,
        data: Vec::new(),
        mode: CreateMode::Persistent,
        acl: Acls::Open,
    })
    .unwrap();
    offer_now(&mut st, c[0], "a");
    for _ in 0..2 {
        st.call(c[1], QueueCall::Take);
        st.run_client(c[1]);
    }
    let failed = QueueOutcome::Failed(QueueFailure::MalformedChild("config".to_string()));
    assert_eq!(
        st.outcomes(c[1]),
        &[failed.clone(), failed],
        "{}",
        st.trace()
    );
}

#[test]
fn foreign_child_distributed_original_and_fixed_skip_it() {
    fn check<R: Variant>() {
        let (mut st, c) = setup::<R>(2, 9);
        let foreign = dir().child("config").unwrap();
        st.admin(&Request::Create {
            path: foreign,
            data: Vec::new(),
            mode: CreateMode::Persistent,
            acl: Acls::Open,
        })
        .unwrap();
        offer_now(&mut st, c[0], "a");
        st.call(c[1], QueueCall::Take);
        st.run_client(c[1]);
        assert_eq!(st.outcomes(c[1]), &[got("a")], "{}", st.trace());
    }
    check::<DistributedQueueOriginal>();
    check::<FixedQueue>();
}

/// Seed 000 take(): the LatchChildWatcher fires on state events too, so a
/// waiting take lists again on Disconnected (the request waits for the
/// reconnect) and fails with SessionExpired when the session expires.
#[test]
fn take_state_events_distributed_original_rereads_and_fails_on_expiry() {
    let (mut st, c) = setup::<DistributedQueueOriginal>(2, 10);
    st.call(c[1], QueueCall::Take);
    st.run_client(c[1]);
    assert!(st.recipe(c[1]).is_waiting());
    st.disconnect(c[1]);
    assert!(
        !st.recipe(c[1]).is_waiting(),
        "woken by the Disconnected state event"
    );
    assert_eq!(
        st.client(c[1]).outgoing.len(),
        1,
        "getChildren queued while disconnected"
    );
    st.reconnect(c[1]);
    st.run_client(c[1]);
    assert!(st.recipe(c[1]).is_waiting());
    st.expire(c[1]);
    assert_eq!(
        st.outcomes(c[1]),
        &[keeper(ZkError::SessionExpired)],
        "{}",
        st.trace()
    );
}

#[test]
fn take_state_events_fixed_keeps_waiting_and_survives_expiry() {
    let (mut st, c) = setup::<FixedQueue>(2, 10);
    st.call(c[1], QueueCall::Take);
    st.run_client(c[1]);
    assert!(st.recipe(c[1]).is_waiting());
    st.disconnect(c[1]);
    assert!(
        st.recipe(c[1]).is_waiting(),
        "a state event says nothing about the children"
    );
    assert!(st.client(c[1]).outgoing.is_empty());
    st.reconnect(c[1]);
    st.run_client(c[1]);
    st.expire(c[1]);
    assert_eq!(st.outcomes(c[1]), &[] as &[QueueOutcome]);
    st.new_session(c[1], 901);
    st.run_client(c[1]);
    assert!(
        st.recipe(c[1]).is_waiting(),
        "lists again in the new session\n{}",
        st.trace()
    );
    offer_now(&mut st, c[0], "a");
    st.run();
    assert_eq!(st.outcomes(c[1]), &[got("a")], "{}", st.trace());
}

/// ZooKeeper 3.8 does not wrap a parent's sequence counter between requests:
/// at `i32::MAX` every sequential create gets the same name. Offers then
/// fail with NodeExists until the head is consumed; nothing is duplicated.
#[test]
fn sequence_counter_exhausted_offers_fail_until_consumed() {
    fn check<R: Variant>() {
        let (mut st, c) = setup::<R>(2, 11);
        st.server_mut()
            .set_sequence_counter(&dir(), i32::MAX)
            .unwrap();
        offer_now(&mut st, c[0], "a");
        st.call(c[0], offer("b"));
        st.run_client(c[0]);
        assert_eq!(
            st.take_outcomes(c[0]),
            vec![keeper(ZkError::NodeExists)],
            "{}",
            st.trace()
        );
        assert_eq!(
            queued(&st),
            vec![item("a")],
            "the failed offer enqueued nothing"
        );
        st.call(c[1], QueueCall::Take);
        st.run_client(c[1]);
        offer_now(&mut st, c[0], "b");
        st.call(c[1], QueueCall::Take);
        st.run_client(c[1]);
        assert_eq!(st.outcomes(c[1]), &[got("a"), got("b")], "{}", st.trace());
        assert!(queued(&st).is_empty());
    }
    check::<DistributedQueueOriginal>();
    check::<FixedQueue>();
}

// ---------------------------------------------------------------- fixed: writes not applied

/// The next request `client` will send, if any.
/// The sync a fixed queue sends before it looks for a receipt.
fn sync_receipts() -> Request {
    Request::Sync {
        path: Path::new("/q-receipts").unwrap(),
    }
}

fn next_request<R: Variant>(st: &Stepper<R>, client: ClientId) -> Option<Request> {
    st.client(client)
        .outgoing
        .front()
        .map(|(_, request, _)| request.clone())
}

/// The connection drops while the offer's write waits to be sent: it fails
/// with ConnectionLoss and was not applied. The producer asks its receipt,
/// finds none, writes again, and the item is in the queue once.
#[test]
fn fixed_offer_not_applied_is_written_again() {
    let (mut st, _) = setup::<FixedQueue>(0, 12);
    let c = [st.add_client(FixedQueue::build(1), 100)];
    // At its first connection the queue makes sure of its directory; the
    // receipts container is only created together with a receipt.
    assert_eq!(
        next_request(&st, c[0]),
        Some(Request::Create {
            path: dir(),
            data: Vec::new(),
            mode: CreateMode::Persistent,
            acl: Acls::Open
        })
    );
    round_trip(&mut st, c[0]);
    assert_eq!(next_request(&st, c[0]), None);
    let receipt = Path::new("/q-receipts/p-1").unwrap();
    st.call(c[0], offer("a"));
    // The first write finds the receipts container missing: the next one
    // creates it in the same multi.
    round_trip(&mut st, c[0]);
    let write = next_request(&st, c[0]).unwrap();
    assert!(
        matches!(&write, Request::Multi(ops) if ops.len() == 3),
        "{write:?}"
    );
    st.disconnect(c[0]);
    assert!(queued(&st).is_empty(), "not applied");
    // Its server may be behind the write: sync, then look for the receipt.
    assert_eq!(next_request(&st, c[0]), Some(sync_receipts()));
    st.reconnect(c[0]);
    round_trip(&mut st, c[0]);
    assert_eq!(
        next_request(&st, c[0]),
        Some(Request::Exists {
            path: receipt.clone(),
            watch: false
        })
    );
    round_trip(&mut st, c[0]);
    assert_eq!(
        next_request(&st, c[0]),
        Some(write),
        "not applied: written again"
    );
    round_trip(&mut st, c[0]);
    assert_eq!(
        next_request(&st, c[0]),
        Some(Request::Delete {
            path: receipt,
            version: -1
        })
    );
    round_trip(&mut st, c[0]);
    assert_eq!(next_request(&st, c[0]), None);
    assert_eq!(
        st.outcomes(c[0]),
        &[QueueOutcome::Offered],
        "{}",
        st.trace()
    );
    assert_eq!(queued(&st), vec![item("a")], "enqueued once");
    assert_eq!(receipts(&st), Vec::<Path>::new());
}

/// The connection drops while a consumer's claim waits to be sent (not
/// applied); another consumer takes that item meanwhile. The first one
/// finds no receipt, claims again, loses the race on the delete, and moves
/// on to the next item. The reply of its receipt cleanup is lost after the
/// server applied it: the NoNode of the retry still answers the item.
#[test]
fn fixed_claim_not_applied_is_claimed_again_and_lost_race_moves_on() {
    let (mut st, c) = setup::<FixedQueue>(3, 13);
    offer_now(&mut st, c[0], "one");
    offer_now(&mut st, c[0], "two");
    st.call(c[1], QueueCall::Poll);
    assert_eq!(
        next_request(&st, c[1]),
        Some(Request::GetChildren {
            path: dir(),
            watch: false
        })
    );
    round_trip(&mut st, c[1]);
    assert_eq!(
        next_request(&st, c[1]),
        Some(Request::GetData {
            path: Path::new("/q/qn-0000000000").unwrap(),
            watch: false
        })
    );
    round_trip(&mut st, c[1]);
    let claim = next_request(&st, c[1]).unwrap();
    st.disconnect(c[1]);
    assert_eq!(queued(&st), vec![item("one"), item("two")], "not applied");
    assert_eq!(next_request(&st, c[1]), Some(sync_receipts()));
    // Meanwhile another consumer takes it.
    st.call(c[2], QueueCall::Poll);
    st.run_client(c[2]);
    assert_eq!(st.outcomes(c[2]), &[got("one")], "{}", st.trace());
    st.reconnect(c[1]);
    round_trip(&mut st, c[1]);
    assert_eq!(
        next_request(&st, c[1]),
        Some(Request::Exists {
            path: Path::new("/q-receipts/c-2").unwrap(),
            watch: false
        })
    );
    round_trip(&mut st, c[1]);
    assert_eq!(
        next_request(&st, c[1]),
        Some(claim),
        "not applied: claimed again"
    );
    // The multi fails on the delete: try the next item.
    round_trip(&mut st, c[1]);
    assert_eq!(
        next_request(&st, c[1]),
        Some(Request::GetData {
            path: Path::new("/q/qn-0000000001").unwrap(),
            watch: false
        })
    );
    round_trip(&mut st, c[1]);
    round_trip(&mut st, c[1]);
    let cleanup = Request::Delete {
        path: Path::new("/q-receipts/c-2").unwrap(),
        version: -1,
    };
    assert_eq!(next_request(&st, c[1]), Some(cleanup.clone()));
    assert!(st.apply_then_disconnect(c[1]));
    assert_eq!(next_request(&st, c[1]), Some(cleanup));
    st.reconnect(c[1]);
    st.run_client(c[1]);
    assert_eq!(st.outcomes(c[1]), &[got("two")], "{}", st.trace());
    assert!(queued(&st).is_empty());
    assert_eq!(receipts(&st), Vec::<Path>::new());
}

/// One producer offers three items, two consumers take them; the `nth_send`
/// request of any client is not sent: the connection drops before it (it
/// fails with ConnectionLoss, not applied) and the client reconnects.
/// Checks exactly-once FIFO delivery, no failed call, nothing left. False
/// once the run has fewer sends.
fn fixed_not_applied_at(nth_send: usize) -> bool {
    let (mut st, c) = setup::<FixedQueue>(3, 16);
    let mut workload = Workload::new(&c[0..1], &c[1..3], 3);
    let (mut sends, mut fired) = (0, false);
    while !workload.is_done() {
        workload.issue(&mut st);
        let mut moved = false;
        for &client in &c {
            let can_send = st.state(client) == ConnectionState::Connected
                && !st.client(client).outgoing.is_empty();
            if can_send && sends == nth_send {
                st.disconnect(client);
                st.reconnect(client);
                fired = true;
                moved = true;
            } else {
                moved |= st.step(client);
            }
            sends += usize::from(can_send);
        }
        workload.collect(&mut st);
        assert!(
            moved || workload.is_done(),
            "stuck at send {nth_send}\n{}",
            st.trace()
        );
    }
    let context = format!("not applied at send {nth_send}\n{}", st.trace());
    assert_eq!(workload.check(), Ok(()), "{context}");
    assert_eq!(workload.failures, vec![], "{context}");
    assert!(queued(&st).is_empty(), "{context}");
    assert_eq!(receipts(&st), Vec::<Path>::new(), "{context}");
    fired
}

#[test]
fn fixed_request_not_applied_at_every_step_is_sent_again() {
    let mut hit = 0;
    while fixed_not_applied_at(hit) {
        hit += 1;
    }
    assert!(hit >= 20, "only {hit} requests to hit");
}

#[test]
fn fixed_answers_busy_to_a_second_call_without_disturbing_the_first() {
    let (mut st, c) = setup::<FixedQueue>(1, 14);
    st.call(c[0], QueueCall::Poll);
    let pending = st.client(c[0]).outgoing.clone();
    st.call(c[0], QueueCall::Take);
    assert_eq!(
        st.outcomes(c[0]),
        &[QueueOutcome::Failed(QueueFailure::Busy)]
    );
    assert_eq!(st.client(c[0]).outgoing, pending, "nothing sent for it");
    st.run_client(c[0]);
    assert_eq!(
        st.outcomes(c[0]),
        &[
            QueueOutcome::Failed(QueueFailure::Busy),
            QueueOutcome::Empty
        ]
    );
}

/// Two consumers wait on an empty queue. Spurious events (a children change
/// that did not happen, a node event, a state event, one event during a
/// poll's read) and a duplicate of every real wakeup: every item is
/// delivered once, nobody is answered without an item.
#[test]
fn fixed_spurious_and_duplicated_wakeups_deliver_each_item_once() {
    let (mut st, c) = setup::<FixedQueue>(3, 15);
    let changed = WatchedEvent::node(EventType::NodeChildrenChanged, dir());
    st.call(c[1], QueueCall::Take);
    st.call(c[2], QueueCall::Take);
    st.run();
    st.inject_watch_event(c[1], changed.clone());
    st.inject_watch_event(c[2], WatchedEvent::state(KeeperState::Disconnected));
    let gone = dir().child("qn-0000000000").unwrap();
    st.inject_watch_event(c[2], WatchedEvent::node(EventType::NodeDeleted, gone));
    st.run();
    for consumer in [c[1], c[2]] {
        assert!(st.recipe(consumer).is_waiting(), "{}", st.trace());
    }
    offer_now(&mut st, c[0], "a");
    st.run();
    for consumer in [c[1], c[2]] {
        st.inject_watch_event(consumer, changed.clone());
    }
    st.run();
    offer_now(&mut st, c[0], "b");
    st.run();
    for consumer in [c[1], c[2]] {
        st.inject_watch_event(consumer, changed.clone());
    }
    st.run();
    st.call(c[1], QueueCall::Poll);
    assert!(st.send(c[1]), "the poll's read is on the wire");
    st.inject_watch_event(c[1], changed);
    st.run();
    let delivered: Vec<Vec<u8>> = [c[1], c[2]]
        .iter()
        .flat_map(|&consumer| st.outcomes(consumer).to_vec())
        .filter_map(|outcome| match outcome {
            QueueOutcome::Item(data) => Some(data),
            _ => None,
        })
        .collect();
    assert_eq!(
        check_exactly_once_fifo(&[vec![item("a"), item("b")]], &[delivered]),
        Ok(()),
        "{}",
        st.trace()
    );
    let answers: usize = [c[1], c[2]].iter().map(|&x| st.outcomes(x).len()).sum();
    assert_eq!(answers, 3, "two items and the poll's Empty\n{}", st.trace());
    assert_eq!(st.outcomes(c[1]).last(), Some(&QueueOutcome::Empty));
    assert_eq!(receipts(&st), Vec::<Path>::new());
}

#[test]
fn outcomes_map_onto_oracle_observations() {
    assert_eq!(got("a").observe(), Observation::Taken { item: item("a") });
    assert_eq!(QueueOutcome::Empty.observe(), Observation::Empty);
    let failed = keeper(ZkError::ConnectionLoss).observe();
    assert!(
        matches!(&failed, Observation::Failed { reason } if reason.contains("ConnectionLoss")),
        "{failed:?}"
    );
    let lost_race = QueueOutcome::keeper(&ZkError::MultiFailed {
        index: 0,
        error: Box::new(ZkError::NoNode),
    });
    assert_eq!(
        lost_race,
        keeper(ZkError::NoNode),
        "a failed multi reports its failing op's error"
    );
}

// ---------------------------------------------------------------- random faults

/// A seeded run of two producers (three items each) and two consumers with
/// up to `fault_budget` faults (lost replies, disconnects, expiries) at
/// random steps, then a heal phase; the property verdict.
fn random_fault_run<R: Variant>(
    seed: u64,
    fault_budget: usize,
) -> Result<Vec<(ClientId, QueueOutcome)>, String> {
    let (mut st, c) = setup::<R>(4, seed);
    let mut workload = Workload::new(&c[0..2], &c[2..4], 3);
    let mut rng = SmallRng::seed_from_u64(seed);
    let mut faults = fault_budget;
    let mut next_session_id = 1_000;
    for _ in 0..300 {
        workload.issue(&mut st);
        let client = c[rng.gen_range(0..c.len())];
        let state = st.state(client);
        match rng.gen_range(0..12) {
            0 if faults > 0 && state == ConnectionState::Connected => {
                faults -= 1;
                st.apply_then_disconnect(client);
            }
            1 if faults > 0 && state == ConnectionState::Connected => {
                faults -= 1;
                st.disconnect(client);
            }
            2 if faults > 0 && state != ConnectionState::Expired => {
                faults -= 1;
                st.expire(client);
            }
            3 | 4 => heal(&mut st, client, &mut next_session_id),
            5 => st.reap(), // the receipts container goes when empty
            _ => {
                st.step(client);
            }
        }
        workload.collect(&mut st);
    }
    for &client in &c {
        heal(&mut st, client, &mut next_session_id);
    }
    let finished = workload.run(&mut st);
    workload.check()?;
    if !finished {
        return Err("stuck".to_string());
    }
    if !queued(&st).is_empty() {
        return Err(format!(
            "left in the queue: {:?}",
            queued(&st).iter().map(|i| show(i)).collect::<Vec<_>>()
        ));
    }
    Ok(workload.failures)
}

/// Reconnects a disconnected client, gives an expired one a new session.
fn heal<R: Variant>(st: &mut Stepper<R>, client: ClientId, next_session_id: &mut i64) {
    match st.state(client) {
        ConnectionState::Disconnected => st.reconnect(client),
        ConnectionState::Expired => {
            *next_session_id += 1;
            st.new_session(client, *next_session_id);
        }
        ConnectionState::Connected => {}
    }
}

#[test]
fn random_faults_fixed_holds() {
    for seed in 0..200 {
        let verdict = random_fault_run::<FixedQueue>(seed, 6);
        assert_eq!(
            verdict,
            Ok(vec![]),
            "seed {seed}: a violation or a failed call"
        );
    }
}

#[test]
fn random_faults_find_a_violation_in_distributed_original() {
    let violations: Vec<(u64, String)> = (0..200)
        .filter_map(|seed| {
            random_fault_run::<DistributedQueueOriginal>(seed, 6)
                .err()
                .map(|e| (seed, e))
        })
        .collect();
    assert!(
        !violations.is_empty(),
        "200 seeds with faults found no lost or duplicated item"
    );
    println!(
        "{} of 200 seeds violate; first: {:?}",
        violations.len(),
        &violations[..violations.len().min(3)]
    );
}

/// After the server reaps the receipts container, a client connecting (or
/// writing) later must not leave an empty container that never had a child:
/// the server would never reap it. The fixed queue creates the container
/// only in the multi that writes a receipt into it.
#[test]
fn fixed_receipts_container_never_outlives_its_use_after_a_reap() {
    let (mut st, clients) = setup::<FixedQueue>(1, 7);
    let receipts_dir = Path::new("/q-receipts").unwrap();
    offer_now(&mut st, clients[0], "a");
    st.reap();
    assert!(
        !st.server().paths().contains(&receipts_dir),
        "{}",
        st.trace()
    );
    // A client connecting after the reap: its setup runs.
    let late = st.add_client(FixedQueue::build(9), 109);
    st.run_client(late);
    st.reap();
    assert!(
        !st.server().paths().contains(&receipts_dir),
        "an empty receipts container was left that the server never reaps\n{}",
        st.trace()
    );
    // Writing still works: the container comes with the receipt, and goes.
    offer_now(&mut st, late, "b");
    st.call(clients[0], QueueCall::Take);
    st.run();
    assert_eq!(
        st.take_outcomes(clients[0]),
        vec![got("a")],
        "{}",
        st.trace()
    );
    st.reap();
    assert!(
        !st.server().paths().contains(&receipts_dir),
        "{}",
        st.trace()
    );
    assert_eq!(queued(&st), vec![item("b")]);
}
