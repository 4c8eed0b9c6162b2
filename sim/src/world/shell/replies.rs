//! What the servers did, handed to the clients: a session opened, a write
//! committed (traced and recorded then), replies (or their loss, by
//! fault), watch notifications, sessions closed under their clients.

use super::super::events::ToClient;
use super::super::shared::{trace, Awaited, Shared, SimRecipe};
use crate::ensemble::EnsembleEvent;
use crate::server::Applied;
use zk_recipes::zk::{Reply, SessionId};

impl<R: SimRecipe> Shared<R> {
    /// Hands what the servers did to the clients: watch notifications,
    /// replies (or their loss, by fault), sessions closed under them.
    pub(in crate::world) fn dispatch(&mut self, events: Vec<EnsembleEvent>) {
        for event in events {
            match event {
                EnsembleEvent::Notify(notification) => self.route(vec![notification]),
                EnsembleEvent::Committed {
                    session, applied, ..
                } => self.committed(session, applied),
                EnsembleEvent::Reply { session, applied } => self.reply(session, applied),
                EnsembleEvent::Opened { session } => self.opened(session),
                EnsembleEvent::Closed { session } => self.closed_under(session),
            }
        }
    }

    fn opened(&mut self, session: SessionId) {
        let Some(&client) = self.owners.get(&session) else {
            return;
        };
        if self.clients[client].link.session == Some(session) {
            self.clients[client].link.server_up = true;
            self.send_to_client(client, ToClient::Connected);
        }
    }

    /// The leader committed the client's oldest write not committed yet:
    /// the trace and the history show it now, whatever becomes of its
    /// reply (a connection lost before the client's server applies it
    /// loses the reply, not the write).
    fn committed(&mut self, session: SessionId, applied: Applied) {
        let Some(&client) = self.owners.get(&session) else {
            return;
        };
        let Some(awaited) = self.clients[client]
            .awaiting
            .iter_mut()
            .find(|a| !a.committed && a.request.is_write())
        else {
            return;
        };
        awaited.committed = true;
        let awaited = awaited.clone();
        let at = match self.ensemble.servers() {
            1 => String::new(),
            _ => format!(", committed by leader {}", self.ensemble.leader()),
        };
        let now = self.now_ns();
        self.history
            .applied(client, now, session, &awaited.request, &applied.result);
        self.trace_apply(client, &awaited, &applied, &at);
    }

    /// The trace line of a request applied (`at`: where, on an ensemble).
    fn trace_apply(&mut self, client: usize, awaited: &Awaited, applied: &Applied, at: &str) {
        trace!(
            self,
            Some(client),
            Apply,
            "#{} {:?} -> {:?} (zxid {}{at})",
            awaited.number,
            awaited.request,
            applied.result,
            applied.zxid
        );
    }

    /// The reply to the client's oldest request the server took.
    fn reply(&mut self, session: SessionId, applied: Applied) {
        let Some(&client) = self.owners.get(&session) else {
            return;
        };
        let Some(awaited) = self.clients[client].awaiting.pop_front() else {
            return;
        };
        if let Ok(
            Reply::Children(names)
            | Reply::Children2 {
                children: names, ..
            },
        ) = &applied.result
        {
            self.stats.children_returned += names.len() as u64;
        }
        let now = self.now_ns();
        let number = awaited.number;
        let at = match self.ensemble.servers() {
            1 => String::new(),
            _ => format!(", server {}", self.clients[client].link.server),
        };
        if !awaited.committed {
            self.history
                .applied(client, now, session, &awaited.request, &applied.result);
        }
        // A committed write was traced at its commit; on an ensemble its
        // session's server answering it is a line of its own.
        if !awaited.committed || !at.is_empty() {
            self.trace_apply(client, &awaited, &applied, &at);
        }
        if let Some(down_ms) = awaited.lose_reply_down_ms {
            trace!(
                self,
                Some(client),
                Fault,
                "reply to request #{number} lost after apply"
            );
            self.history.reply_lost(client, now);
            self.drop_connection(client, down_ms);
            return;
        }
        self.send_to_client(
            client,
            ToClient::Reply {
                result: applied.result,
                zxid: applied.zxid,
            },
        );
    }

    /// The session's server applied the session's close: it closes the
    /// connection (the client learns its session expired).
    fn closed_under(&mut self, session: SessionId) {
        let Some(&client) = self.owners.get(&session) else {
            return;
        };
        if self.clients[client].link.session == Some(session) {
            self.close_connection(client);
        }
    }
}
