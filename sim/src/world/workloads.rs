//! The built-in application workloads, written as async code that drives
//! the recipe through an [`App`] (the simulator's [`super::Client`] or the
//! real-server driver's) exactly as a user's own workload would.
//!
//! - [`hold_cycles`]: acquire, use the fenced resource, hold, release,
//!   think, repeat (locks, elections, semaphores, shared locks).
//! - [`queue_traffic`]: producers offer numbered items, consumers take
//!   until every acknowledged item was delivered (and any item of a failed
//!   offer that shows up).
//! - [`barrier_rounds`]: arrive (staggered), enter, work, leave, repeat.
//!
//! When the faults heal, workloads finish the cycle they are in and stop.

use super::adapters::{BarrierCalls, HoldCalls, QueueCalls};
use super::app::{App, Call};
use crate::faults::MsRange;
use serde::{Deserialize, Serialize};
use std::sync::Mutex;
use zk_recipes::{FencingToken, Hold, Observation, Observe};

/// Parameters of the built-in workloads.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct WorkloadSpec {
    /// Acquire / release cycles per client (hold workloads).
    pub cycles: u32,
    pub hold_ms: MsRange,
    pub think_ms: MsRange,
    /// Write to the fenced resource at the start and end of every hold.
    pub use_resource: bool,
    /// Queue: how many clients produce (the others consume).
    pub producers: usize,
    /// Queue: items per producer.
    pub items: u32,
    /// Queue: how long a consumer waits for a take before checking whether
    /// everything was delivered.
    pub take_wait_ms: u64,
    /// Barrier: rounds per client.
    pub rounds: u32,
    pub work_ms: MsRange,
    /// Barrier: how long after the start of its round a member arrives
    /// (drawn per member and round from the seed): members do not all
    /// enter at once, which would hide arrival races.
    pub arrive_ms: MsRange,
}

impl Default for WorkloadSpec {
    fn default() -> Self {
        WorkloadSpec {
            cycles: 20,
            hold_ms: MsRange::new(1, 10),
            think_ms: MsRange::new(0, 10),
            use_resource: true,
            producers: 1,
            items: 20,
            take_wait_ms: 200,
            rounds: 1,
            work_ms: MsRange::new(1, 20),
            arrive_ms: MsRange::new(0, 10),
        }
    }
}

fn observe<O: Observe>(outcome: &O) -> Observation {
    outcome.observe()
}

/// Acquire, hold, release, think; `cycles` times or until the faults heal.
pub async fn hold_cycles<A: App>(client: A, spec: WorkloadSpec, calls: HoldCalls<Call<A>>) {
    let acquire_calls = &calls.acquire;
    for _ in 0..spec.cycles {
        if client.stopping() {
            break;
        }
        let pick = client.pick(acquire_calls.len());
        client.call(acquire_calls[pick].clone());
        let held = loop {
            match observe(&client.next_outcome().await) {
                Observation::Acquired { token, hold } => break Some((token, hold)),
                Observation::Failed { .. } | Observation::TimedOut => break None,
                _ => continue, // a late answer to an earlier call
            }
        };
        if let Some((token, kind)) = held {
            let fenced = spec.use_resource && kind == Hold::Exclusive;
            hold(&client, &spec, token, fenced).await;
        }
        // Released, or the recipe's answer to a release without a hold
        // (the application calls release in a `finally`).
        client.call(calls.release.clone());
        while !matches!(
            observe(&client.next_outcome().await),
            Observation::Released | Observation::Lost | Observation::Failed { .. }
        ) {}
        client.sleep_ms(client.draw_ms(spec.think_ms)).await;
    }
}

/// Holds for the hold time (writing to the fenced resource at both ends
/// when `fenced`), unless the recipe reports the hold lost meanwhile.
async fn hold<A: App>(client: &A, spec: &WorkloadSpec, token: FencingToken, fenced: bool) {
    if fenced {
        client.write_resource(token);
    }
    let mut remaining = client.draw_ms(spec.hold_ms);
    let started = client.now_ns();
    while remaining > 0 {
        match client.outcome_within(remaining).await {
            None => break,
            Some(outcome) if observe(&outcome) == Observation::Lost => return,
            Some(_) => {
                let spent = (client.now_ns() - started) / 1_000_000;
                remaining = remaining.saturating_sub(spent.max(1));
            }
        }
    }
    if fenced {
        client.write_resource(token);
    }
}

/// Progress shared by the clients of one queue run.
#[derive(Default)]
pub struct QueueBoard {
    producers_done: usize,
    acknowledged: u64,
    /// Offers answered `Failed`: each item may or may not be in the queue.
    failed: u64,
    taken: u64,
}

impl QueueBoard {
    /// Every producer is done and every acknowledged item was taken.
    fn acknowledged_taken(&self, producers: usize) -> bool {
        self.producers_done >= producers && self.taken >= self.acknowledged
    }

    /// As many items taken as were acknowledged or failed: no item of a
    /// failed offer can still be in the queue.
    fn all_taken(&self, producers: usize) -> bool {
        self.acknowledged_taken(producers) && self.taken >= self.acknowledged + self.failed
    }
}

/// Producers offer `items` numbered items each; consumers take until every
/// producer is done and every acknowledged item was delivered. An offer
/// answered `Failed` may or may not have enqueued its item: consumers then
/// wait one more `take_wait_ms` for it, and stop if none comes (a consumer
/// is stuck only if an item it could take exists or will still be offered).
pub async fn queue_traffic<A: App>(client: A, spec: WorkloadSpec, calls: QueueCalls<Call<A>>) {
    let board = client.run_state::<QueueBoard>();
    let producers = spec
        .producers
        .clamp(1, client.clients().saturating_sub(1).max(1));
    if client.index() < producers {
        produce(&client, &spec, &calls, &board).await;
        board.lock().expect("board").producers_done += 1;
    } else {
        consume(&client, &spec, &calls, &board, producers).await;
    }
}

async fn produce<A: App>(
    client: &A,
    spec: &WorkloadSpec,
    calls: &QueueCalls<Call<A>>,
    board: &Mutex<QueueBoard>,
) {
    for n in 0..spec.items {
        if client.stopping() {
            break;
        }
        client.call((calls.offer)(
            format!("c{}-{n}", client.index()).into_bytes(),
        ));
        loop {
            match observe(&client.next_outcome().await) {
                Observation::Offered { .. } => {
                    board.lock().expect("board").acknowledged += 1;
                    break;
                }
                Observation::Failed { .. } => {
                    board.lock().expect("board").failed += 1;
                    break;
                }
                _ => continue,
            }
        }
        client.sleep_ms(client.draw_ms(spec.think_ms)).await;
    }
}

async fn consume<A: App>(
    client: &A,
    spec: &WorkloadSpec,
    calls: &QueueCalls<Call<A>>,
    board: &Mutex<QueueBoard>,
    producers: usize,
) {
    let progress =
        |check: fn(&QueueBoard, usize) -> bool| check(&board.lock().expect("board"), producers);
    let mut waiting = false;
    while !progress(QueueBoard::all_taken) {
        if !waiting {
            client.call(calls.take.clone());
            waiting = true;
        }
        let Some(outcome) = client.outcome_within(spec.take_wait_ms).await else {
            // No item within the wait: a failed offer's item is not there.
            if progress(QueueBoard::acknowledged_taken) {
                break;
            }
            continue; // still waiting for an item
        };
        match observe(&outcome) {
            Observation::Taken { .. } => {
                board.lock().expect("board").taken += 1;
                waiting = false;
            }
            Observation::Empty | Observation::Failed { .. } => {
                waiting = false;
                client.sleep_ms(client.draw_ms(spec.think_ms).max(1)).await;
            }
            _ => {}
        }
    }
}

/// Arrive, enter, work, leave, think; `rounds` times (a barrier cannot
/// stop early without stranding the others). Each member arrives after a
/// delay drawn from `arrive_ms`, so members enter at different times.
pub async fn barrier_rounds<A: App>(client: A, spec: WorkloadSpec, calls: BarrierCalls<Call<A>>) {
    for _ in 0..spec.rounds {
        client.sleep_ms(client.draw_ms(spec.arrive_ms)).await;
        client.call(calls.enter.clone());
        if !await_either(&client, Observation::Entered).await {
            break;
        }
        client.sleep_ms(client.draw_ms(spec.work_ms)).await;
        client.call(calls.leave.clone());
        if !await_either(&client, Observation::Left).await {
            break;
        }
        client.sleep_ms(client.draw_ms(spec.think_ms)).await;
    }
}

/// Waits for `wanted` (true) or a failure (false).
async fn await_either<A: App>(client: &A, wanted: Observation) -> bool {
    loop {
        let seen = observe(&client.next_outcome().await);
        if seen == wanted {
            return true;
        }
        if matches!(seen, Observation::Failed { .. }) {
            return false;
        }
    }
}
