//! The session's armed one-shot watches, turned into Java-client-like events.
//!
//! `zookeeper-client` hands out one receiver per watched request and, when a
//! notification arrives, fires every receiver on that path interested in it
//! (an exists and a getData watch on one node both fire on NodeDataChanged).
//! The Java client with its default watcher delivers that notification once.
//! This table restores the Java behaviour: it keeps the receivers, polls them
//! without blocking ([`WatchTable::sweep`]) and reports each (type, path)
//! fired in one sweep once.
//!
//! Why one event per (type, path) per sweep is exact: the client fires all
//! receivers of one notification at once, in its session task, before it
//! handles any later reply. The session sweeps after every reply and only
//! then arms the receiver that reply created. So a receiver armed after a
//! notification N was handled cannot be in a sweep together with a receiver
//! fired by N: that one was already seen by the sweep before the arming.
//! Receivers fired together for one (type, path) are thus one notification.
//!
//! What is lost: the order of notifications on different paths between two
//! sweeps (a sweep reports its events sorted). [`WatchTable::poll_fired`]
//! lets a driver wait for a notification; what it finds waits for the next
//! sweep, and nothing is armed in between (arming follows a sweep), so the
//! argument holds.

use crate::convert::event_from_client;
use std::collections::{BTreeMap, BTreeSet};
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};
use zk_recipes::zk::{Path, WatchedEvent};
use zookeeper_client as zkc;

type PendingEvent = Pin<Box<dyn Future<Output = zkc::WatchedEvent> + Send>>;

/// Receivers of armed one-shot watches, by watched path.
#[derive(Default)]
pub struct WatchTable {
    pending: BTreeMap<Path, Vec<PendingEvent>>,
    /// Fired by [`WatchTable::poll_fired`], not yet swept.
    fired: BTreeSet<WatchedEvent>,
}

impl WatchTable {
    /// Keeps the receiver of a watch the server just armed on `path`.
    /// Call [`WatchTable::sweep`] first (see the module doc).
    pub fn arm(&mut self, path: Path, watcher: zkc::OneshotWatcher) {
        self.pending
            .entry(path)
            .or_default()
            .push(Box::pin(watcher.changed()));
    }

    /// The node events fired since the last sweep, each notification once,
    /// sorted. Fired receivers are forgotten; session events (the client
    /// fires every receiver when the session ends) are dropped here.
    pub fn sweep(&mut self) -> Vec<WatchedEvent> {
        self.collect(&mut Context::from_waker(Waker::noop()));
        std::mem::take(&mut self.fired).into_iter().collect()
    }

    /// Ready once a receiver has fired (its event waits for the next
    /// sweep); otherwise `cx` is woken when one fires.
    pub fn poll_fired(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        self.collect(cx);
        if self.fired.is_empty() {
            Poll::Pending
        } else {
            Poll::Ready(())
        }
    }

    /// Moves the events of fired receivers into `fired`.
    fn collect(&mut self, context: &mut Context<'_>) {
        let fired = &mut self.fired;
        for receivers in self.pending.values_mut() {
            receivers.retain_mut(|receiver| match receiver.as_mut().poll(context) {
                Poll::Pending => true,
                Poll::Ready(event) => {
                    fired.extend(event_from_client(&event));
                    false
                }
            });
        }
        self.pending.retain(|_, receivers| !receivers.is_empty());
    }

    /// Number of receivers still waiting.
    pub fn armed_count(&self) -> usize {
        self.pending.values().map(Vec::len).sum()
    }

    /// Forgets every receiver without polling it (after the session closed).
    pub fn clear(&mut self) {
        self.pending.clear();
        self.fired.clear();
    }
}
