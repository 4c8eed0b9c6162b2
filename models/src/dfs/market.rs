//! Work sharing between a search's threads (stateright's job market, on
//! std's locks): a thread that runs out of states waits for a batch; a
//! busy thread hands part of its stack to the threads waiting. The search
//! is over when every thread waits, or when one thread leaves (done, or
//! unwinding from a panic).

use std::collections::VecDeque;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};

struct Market<Job> {
    open: bool,
    threads: usize,
    /// Threads working (not waiting for a batch).
    working: usize,
    batches: Vec<VecDeque<Job>>,
}

/// One thread's door to the market. Dropping it closes the market.
pub struct Broker<Job> {
    market: Arc<Mutex<Market<Job>>>,
    new_batch: Arc<Condvar>,
}

impl<Job> Broker<Job> {
    /// A market for `threads` threads, holding the first batch.
    pub fn new(threads: usize, first: VecDeque<Job>) -> Broker<Job> {
        Broker {
            market: Arc::new(Mutex::new(Market {
                open: true,
                threads,
                working: threads,
                batches: vec![first],
            })),
            new_batch: Arc::new(Condvar::new()),
        }
    }

    /// Another thread's door.
    pub fn door(&self) -> Broker<Job> {
        Broker {
            market: Arc::clone(&self.market),
            new_batch: Arc::clone(&self.new_batch),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Market<Job>> {
        self.market.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The next batch; empty when the search is over.
    pub fn pop(&mut self) -> VecDeque<Job> {
        let mut market = self.lock();
        loop {
            if !market.open {
                return VecDeque::new();
            }
            if let Some(batch) = market.batches.pop() {
                return batch;
            }
            market.working -= 1;
            if market.working == 0 {
                // Every thread is waiting: nothing is left anywhere.
                market.open = false;
                self.new_batch.notify_all();
                return VecDeque::new();
            }
            market = self
                .new_batch
                .wait(market)
                .unwrap_or_else(PoisonError::into_inner);
            market.working += 1;
        }
    }

    /// Moves part of `jobs` (its newest end) to each waiting thread.
    pub fn share(&mut self, jobs: &mut VecDeque<Job>) {
        let mut market = self.lock();
        if !market.open {
            jobs.clear();
            return;
        }
        let waiting = market.threads - market.working;
        let pieces = 1 + waiting.min(jobs.len());
        let size = jobs.len() / pieces;
        for _ in 1..pieces {
            let batch = jobs.split_off(jobs.len() - size);
            if !batch.is_empty() {
                market.batches.push(batch);
                self.new_batch.notify_one();
            }
        }
    }

    /// Every thread has left or waits with nothing left to do.
    pub fn is_closed(&self) -> bool {
        let market = self.lock();
        !market.open && market.batches.is_empty()
    }
}

impl<Job> Drop for Broker<Job> {
    fn drop(&mut self) {
        let mut market = self.lock();
        market.open = false;
        market.batches.clear();
        self.new_batch.notify_all();
    }
}
