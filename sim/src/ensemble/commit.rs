//! The committed log: the leader commits a transaction (at once, or once
//! a leader is there for what waited), each replica applies the log in
//! order, and a session's write keeps its result at the session's server
//! for the reply.

use super::{Change, Ensemble, EnsembleEvent, Queued, ServerIndex, Txn, Waiting};
use crate::server::{Applied, PermutedOrder};
use zk_recipes::zk::SessionId;

impl Ensemble {
    /// With a leader, commits the closes that waited for one and the
    /// writes of every session whose server reaches the leader, in the
    /// order they came (the other writes keep waiting), and gives waiting
    /// syncs their target.
    pub(super) fn forward_waiting(&mut self, events: &mut Vec<EnsembleEvent>) {
        if self.electing {
            return;
        }
        let waiting = std::mem::take(&mut self.waiting);
        for next in waiting {
            match next {
                Waiting::Close { session, order } => {
                    self.commit(Change::Close { session, order }, events);
                }
                // A write whose connection is gone (a close before it
                // ended the session) failed with it.
                Waiting::Write(session) => match self.server_of(session) {
                    None => {}
                    Some(server) if self.replicas[server].in_quorum => {
                        self.commit_waiting_write(session, events)
                    }
                    Some(_) => self.waiting.push_back(next),
                },
            }
        }
        let committed = self.committed_count();
        for connection in self.connections.values_mut() {
            if !self.replicas[connection.server].in_quorum {
                continue;
            }
            for queued in &mut connection.queue {
                if let Queued::Sync {
                    until: until @ None,
                    ..
                } = queued
                {
                    *until = Some(committed);
                }
            }
        }
    }

    /// Appends a transaction and lets the leader apply it.
    pub(super) fn commit(&mut self, change: Change, events: &mut Vec<EnsembleEvent>) -> usize {
        assert!(!self.electing, "no commit without a leader");
        assert_eq!(self.lag(self.leader), 0, "the leader applied every commit");
        self.log.push(Txn {
            time_ms: self.now_ms,
            change,
        });
        let index = self.committed_count() - 1;
        self.apply_one(self.leader, events);
        index
    }

    /// Commits the session's oldest write that waits for a leader (its
    /// queue slot learns its log index before the leader applies it).
    pub(super) fn commit_waiting_write(
        &mut self,
        session: SessionId,
        events: &mut Vec<EnsembleEvent>,
    ) {
        let Some(request) = self.connections.get(&session).and_then(|c| {
            c.queue.iter().find_map(|queued| match queued {
                Queued::Write {
                    request,
                    index: None,
                    ..
                } => Some(request.clone()),
                _ => None,
            })
        }) else {
            return;
        };
        let index = self.committed_count();
        let slot = self
            .connection_mut(session)
            .queue
            .iter_mut()
            .find_map(|queued| match queued {
                Queued::Write {
                    index: slot @ None, ..
                } => Some(slot),
                _ => None,
            });
        *slot.expect("found above") = Some(index);
        let committed = self.commit(Change::Request { session, request }, events);
        debug_assert_eq!(committed, index);
    }

    /// `server` applies the next transaction of the log.
    pub(super) fn apply_one(&mut self, server: ServerIndex, events: &mut Vec<EnsembleEvent>) {
        let index = self.replicas[server].applied;
        self.replicas[server].applied += 1;
        let txn = self.log[index - self.log_start].clone();
        self.trim_log();
        let core = &mut self.replicas[server].core;
        if txn.time_ms > core.now_ms() {
            core.set_time_ms(txn.time_ms);
        }
        match txn.change {
            Change::Open {
                session,
                timeout_ms,
            } => core
                .open_session(session, timeout_ms)
                .expect("the leader opened it"),
            Change::Request { session, request } => {
                let applied = core.apply(session, &request, &mut PermutedOrder(0));
                let committed = (server == self.leader).then(|| EnsembleEvent::Committed {
                    session,
                    request,
                    applied: applied.clone(),
                });
                events.extend(
                    applied
                        .notifications
                        .iter()
                        .cloned()
                        .map(EnsembleEvent::Notify),
                );
                events.extend(committed);
                self.record_write(server, session, index, applied);
            }
            Change::Close { session, order } => {
                let notifications = order
                    .with(|order| core.close_session(session, order))
                    .unwrap_or_default();
                events.extend(notifications.into_iter().map(EnsembleEvent::Notify));
                if self.server_of(session) == Some(server) {
                    self.connections.remove(&session);
                    events.push(EnsembleEvent::Closed { session });
                }
            }
            Change::Reap => events.extend(core.reap().into_iter().map(EnsembleEvent::Notify)),
        }
    }

    /// Forgets the transactions every replica has applied.
    fn trim_log(&mut self) {
        let applied_everywhere = self.replicas.iter().map(|r| r.applied).min().unwrap_or(0);
        if applied_everywhere > self.log_start {
            self.log.drain(..applied_everywhere - self.log_start);
            self.log_start = applied_everywhere;
        }
    }

    /// Keeps the result of a session's write for its reply, if the session
    /// waits for it at this server.
    fn record_write(
        &mut self,
        server: ServerIndex,
        session: SessionId,
        index: usize,
        applied: Applied,
    ) {
        let Some(connection) = self.connections.get_mut(&session) else {
            return;
        };
        if connection.server != server {
            return;
        }
        for queued in &mut connection.queue {
            if let Queued::Write {
                index: Some(i),
                applied: slot,
                ..
            } = queued
            {
                if *i == index {
                    *slot = Some(applied);
                    return;
                }
            }
        }
    }
}
