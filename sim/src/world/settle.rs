//! When the end-of-run checks may judge the world: once it has settled
//! after the heal.
//!
//! A client is settled when nothing it has started can still change the
//! server's tree or wake its recipe:
//! - it runs (not paused) and has handled everything that reached it;
//! - it is connected: no connection attempt in flight or pending, its
//!   session layer is Connected, the server has its connection up and its
//!   session alive (a session expiring meanwhile shows as a connection the
//!   server closed, or an attempt pending), unless its workload is done and
//!   its `zookeeper-client` handle gave up on its session (the application
//!   opens no other);
//! - its session layer has no request queued (a request emitted while
//!   disconnected waits there for the reconnect) and none in flight (its
//!   reply, or its loss, is still to come);
//! - its recipe has no timer pending (firing it may send something: a
//!   timed acquire gives up and deletes its node);
//! - no message is on its way to it on its current connection (a
//!   notification wakes a waiting recipe).
//!
//! The world is settled when every client is, and no ephemeral node is
//! owned by a session no client holds (such a session is abandoned, and
//! expires with its nodes; a session its client counts expired, as one
//! given up on the client's own deadline while the servers still hold it,
//! is abandoned too). The checks then see the final tree: with every
//! workload done and the faults healed, a settled client receives no input
//! (no call, reply, notification, timer or session event; its pings keep
//! its session alive), so no recipe acts again and the tree changes only
//! by the server's own container and TTL reaping, which the end checks run
//! themselves. Pings and replies on dropped connections are harmless and
//! not waited for.
//!
//! The supervisor waits for this in simulated time after the settle time,
//! bounded by the heal deadline (`heal_ms` after the heal point): past it
//! the checks run on the world as it is, with a trace line saying what had
//! not settled.

use super::events::Event;
use super::shared::{enter, trace, Phase, Shared, SimRecipe};
use crate::client::ConnectionState;
use crate::server::NodeKind;
use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};
use std::task::Poll;
use zk_recipes::zk::SessionId;

impl<R: SimRecipe> Shared<R> {
    /// Clients with a message on its way to them on their current
    /// connection.
    fn awaited_deliveries(&self) -> BTreeSet<usize> {
        self.queue
            .pending()
            .filter_map(|event| match event {
                Event::ToClient { client, epoch, .. }
                    if *epoch == self.clients[*client].link.epoch =>
                {
                    Some(*client)
                }
                _ => None,
            })
            .collect()
    }

    /// Why one client has not settled (empty: it has).
    fn client_unsettled(&self, client: usize, delivery_due: bool) -> Vec<String> {
        let slot = &self.clients[client];
        let session = &slot.session;
        let mut why = Vec::new();
        if slot.paused {
            why.push("paused".to_string());
        }
        if !slot.inbox.is_empty() {
            why.push(format!("{} input(s) not handled yet", slot.inbox.len()));
        }
        let server_side_up = slot.link.server_up
            && slot.link.session.is_some()
            && slot.link.session == session.session_id
            && session
                .session_id
                .is_some_and(|id| self.ensemble.committed().is_session_alive(id));
        // A `zookeeper-client` handle that gave up on its session opens no
        // other until its application connects again: once the workload is
        // done, nothing will.
        let gave_up_for_good = slot.workload_done && slot.link.awaits_connect;
        if slot.connecting.is_some() || slot.retry.is_some() {
            why.push("connecting".to_string());
        } else if (session.state != ConnectionState::Connected || !server_side_up)
            && !gave_up_for_good
        {
            why.push(format!("not connected ({:?})", session.state));
        }
        if !session.outgoing.is_empty() {
            why.push(format!(
                "{} request(s) waiting to be sent",
                session.outgoing.len()
            ));
        }
        if !session.in_flight.is_empty() {
            why.push(format!("{} request(s) in flight", session.in_flight.len()));
        }
        if !session.timers.is_empty() {
            why.push(format!("{} recipe timer(s) pending", session.timers.len()));
        }
        if delivery_due {
            why.push("a message on its way to it".to_string());
        }
        why
    }

    /// Ephemeral nodes whose session no client holds any more (a client
    /// whose session layer counts its session expired, as one that gave
    /// it up on its own deadline does while the server still holds it,
    /// holds it no more).
    fn abandoned_ephemerals(&self) -> Vec<String> {
        let held: BTreeSet<SessionId> = self
            .clients
            .iter()
            .filter(|slot| slot.session.state != ConnectionState::Expired)
            .filter_map(|slot| slot.session.session_id)
            .collect();
        self.ensemble
            .committed()
            .paths()
            .into_iter()
            .filter_map(|path| match self.ensemble.committed().node_kind(&path) {
                Some(NodeKind::Ephemeral { owner }) if !held.contains(&owner) => Some(format!(
                    "{path}: ephemeral of session {:#x}, which no client holds",
                    owner.0
                )),
                _ => None,
            })
            .collect()
    }

    /// What has not settled yet, one entry per client or node (empty: the
    /// world has settled; see the module documentation).
    pub fn unsettled(&self) -> Vec<String> {
        let deliveries = self.awaited_deliveries();
        let mut notes: Vec<String> = (0..self.clients.len())
            .filter_map(|client| {
                let why = self.client_unsettled(client, deliveries.contains(&client));
                (!why.is_empty()).then(|| format!("c{client}: {}", why.join(", ")))
            })
            .collect();
        notes.extend(self.abandoned_ephemerals());
        notes
    }

    /// Wakes the supervisor if it waits for the world to settle (called
    /// by every task after it changed the world).
    pub fn poke_supervisor(&mut self) {
        if self.settling {
            if let Some(waker) = self.supervisor.take() {
                waker.wake();
            }
        }
    }
}

/// Waits until the world has settled or the run is over (the heal
/// deadline passed, or a violation stopped it).
pub async fn wait_until_settled<R: SimRecipe>(shared: &Arc<Mutex<Shared<R>>>) {
    let mut waited = false;
    std::future::poll_fn(|cx| {
        let mut world = enter(shared);
        if world.phase == Phase::Done {
            world.settling = false;
            return Poll::Ready(());
        }
        let unsettled = world.unsettled();
        if unsettled.is_empty() {
            world.settling = false;
            if waited {
                trace!(
                    world,
                    None,
                    Phase,
                    "settled: every client connected and quiet"
                );
            }
            return Poll::Ready(());
        }
        if !waited {
            waited = true;
            trace!(
                world,
                None,
                Phase,
                "end checks wait for the world to settle: {}",
                unsettled.join("; ")
            );
        }
        world.settling = true;
        world.supervisor = Some(cx.waker().clone());
        Poll::Pending
    })
    .await
}
