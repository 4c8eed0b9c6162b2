//! Answering a session at its server: each session's requests wait in
//! order in its connection's queue, and the head is answered once it is
//! ready (its opening, write or sync applied there, its revalidation
//! come).

use super::{Ensemble, EnsembleEvent, Queued, ServerIndex};
use crate::server::{Applied, ChildOrder};
use zk_recipes::zk::{Reply, SessionId};

impl Ensemble {
    /// Answers, session by session in id order, every request at the head
    /// of a queue on `server` that can be answered now.
    pub(super) fn answer_ready(
        &mut self,
        server: ServerIndex,
        order: &mut dyn ChildOrder,
        events: &mut Vec<EnsembleEvent>,
    ) {
        let sessions: Vec<SessionId> = self
            .connections
            .iter()
            .filter(|(_, c)| c.server == server)
            .map(|(session, _)| *session)
            .collect();
        for session in sessions {
            while self.answer_head(session, order, events) {}
        }
    }

    pub(super) fn answer_all(
        &mut self,
        order: &mut dyn ChildOrder,
        events: &mut Vec<EnsembleEvent>,
    ) {
        for server in 0..self.replicas.len() {
            self.answer_ready(server, order, events);
        }
    }

    /// Answers the session's oldest request if it is ready (its events
    /// into `events`); false when nothing was ready.
    fn answer_head(
        &mut self,
        session: SessionId,
        order: &mut dyn ChildOrder,
        events: &mut Vec<EnsembleEvent>,
    ) -> bool {
        let Some(connection) = self.connections.get(&session) else {
            return false;
        };
        let server = connection.server;
        let replica = &self.replicas[server];
        let Some(head) = connection.queue.front() else {
            return false;
        };
        if !replica.serving {
            return false;
        }
        let ready = match head {
            Queued::Opening { index } => replica.applied > *index,
            Queued::Read { .. } => true,
            Queued::Write { applied, .. } => applied.is_some(),
            Queued::Sync { until, .. } => until.is_some_and(|until| replica.applied >= until),
            Queued::Revalidate { until } => replica.applied >= *until,
            Queued::SetWatches { .. } => true,
        };
        if !ready {
            return false;
        }
        let Some(queued) = self.connection_mut(session).queue.pop_front() else {
            return false;
        };
        let core = &mut self.replicas[server].core;
        let applied = match queued {
            Queued::Opening { .. } => {
                events.push(EnsembleEvent::Opened { session });
                return true;
            }
            // A follower serves a session it has not seen created yet.
            Queued::Read { request } => core.serve_read(session, &request, order),
            Queued::Write { applied, .. } => applied.expect("ready"),
            Queued::Sync { request, .. } => Applied {
                result: Ok(Reply::Synced {
                    path: request.path().expect("sync names a path").clone(),
                }),
                zxid: core.last_zxid(),
                notifications: Vec::new(),
            },
            // Revalidated: what waited behind it may be ready too.
            Queued::Revalidate { .. } => return true,
            Queued::SetWatches {
                relative_zxid,
                watches,
            } => {
                let notifications = core.set_watches(session, relative_zxid, &watches);
                events.extend(notifications.into_iter().map(EnsembleEvent::Notify));
                return true;
            }
        };
        events.push(EnsembleEvent::Reply { session, applied });
        true
    }
}
