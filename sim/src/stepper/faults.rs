//! The faults a test injects at chosen steps: a request or its reply lost
//! with the connection, a disconnect and the reconnect (to a server of the
//! test's choosing in ensemble mode), a failed reconnect attempt, an expiry
//! the client learns at once or later, a client giving up on its session,
//! a leader loss, spurious watch events, and a run of the reaper.

use super::{ClientId, Stepper};
use crate::client::{ClientSession, ConnectionState};
use crate::ensemble::{ConnectError, DeletionOrder, ServerIndex};
use crate::server::PermutedOrder;
use zk_recipes::zk::{SessionId, WatchedEvent};
use zk_recipes::{Observe, Recipe};

impl<R: Recipe<Outcome: Observe>> Stepper<R> {
    /// The server applies the client's next request, but the reply is lost
    /// because the connection drops: every request in flight fails with
    /// ConnectionLoss. False if there was nothing to send.
    pub fn apply_then_disconnect(&mut self, client: ClientId) -> bool {
        let sent = self.send(client);
        self.disconnect(client);
        sent
    }

    /// The client's next request is lost before the server sees it, and
    /// the connection drops. False if there was nothing to send.
    pub fn lose_request(&mut self, client: ClientId) -> bool {
        let lost = self.clients[client].session.next_to_send();
        if let Some((tag, request)) = &lost {
            self.log(
                client,
                &format!("fault: {tag:?} {request:?} lost before the server"),
            );
            self.history
                .lost_before_apply(client, self.history_ns, request);
        }
        self.disconnect(client);
        lost.is_some()
    }

    /// The connection drops: queued replies and notifications are lost;
    /// requests in flight (applied, reply lost) and requests not yet sent
    /// (not applied) fail with ConnectionLoss; the server forgets the
    /// session's watches. The session lives on.
    pub fn disconnect(&mut self, client: ClientId) {
        self.log(client, "fault: disconnect");
        let session = self.session_id(client);
        self.record_connection_loss(client);
        self.clients[client].inbox.clear();
        match &mut self.ensemble {
            Some(ensemble) => ensemble.disconnect(session),
            None => self.server.disconnect(session),
        }
        self.input(client, ClientSession::disconnected);
    }

    /// A reconnect attempt fails (the server cannot be reached): every
    /// request queued since the disconnect fails with ConnectionLoss, not
    /// applied, as the Java client's cleanup() does at each failed attempt.
    /// The client stays disconnected. False if it was not disconnected or
    /// had nothing queued.
    pub fn fail_reconnect_attempt(&mut self, client: ClientId) -> bool {
        if self.clients[client].session.state != ConnectionState::Disconnected {
            return false;
        }
        self.log(client, "fault: reconnect attempt fails");
        self.clients[client].session.reconnect_failed() > 0
    }

    /// Reconnects into the same session and re-registers its watches (in
    /// ensemble mode at the leader, which is never behind).
    pub fn reconnect(&mut self, client: ClientId) {
        self.reconnect_to(client, 0)
            .expect("the leader takes a live session");
    }

    /// Reconnects into the same session at `server` (ensemble mode; 0
    /// otherwise) and re-registers its watches. A server behind what the
    /// client has seen refuses it (the client stays disconnected). In
    /// ensemble mode the session's requests wait for the leader's
    /// revalidation unless [`Stepper::revalidate_reconnects`] turned it off.
    pub fn reconnect_to(
        &mut self,
        client: ClientId,
        server: ServerIndex,
    ) -> Result<(), ConnectError> {
        let session = self.session_id(client);
        if let Some(ensemble) = &mut self.ensemble {
            let last_zxid = self.clients[client].session.last_zxid;
            match self.revalidate {
                true => ensemble.connect_revalidated(server, session, last_zxid)?,
                false => ensemble.connect(server, session, last_zxid)?,
            }
        }
        let at = match self.ensemble {
            Some(_) => format!(" to server {server}"),
            None => String::new(),
        };
        self.log(client, &format!("fault-heal: reconnect{at}"));
        let (watches, last_zxid) = self.input(client, ClientSession::reconnected);
        let notifications = match &mut self.ensemble {
            Some(ensemble) => ensemble.set_watches(session, last_zxid, &watches),
            None => self.server.set_watches(session, last_zxid, &watches),
        };
        self.route(notifications);
        Ok(())
    }

    /// The server expires the session (its ephemerals go, watches fire) and
    /// the client learns it at once.
    pub fn expire(&mut self, client: ClientId) {
        self.expire_on_server(client);
        self.notice_expiry(client);
    }

    /// The client learns that its session expired on the server earlier
    /// (after `expire_on_server`: the pause is over, or the partition healed).
    pub fn notice_expiry(&mut self, client: ClientId) {
        assert!(
            !self.server().is_session_alive(self.session_id(client)),
            "session still alive"
        );
        self.log(client, "client learns its session expired");
        self.record_connection_loss(client);
        self.clients[client].inbox.clear();
        self.input(client, ClientSession::expired);
    }

    /// Client-side expiry (Curator 3.0+: the client gives up after the
    /// session timeout spent disconnected): the client sees Expired while
    /// the server keeps the session and its ephemerals, until
    /// [`Stepper::expire_session_on_server`]. Open the client's next
    /// session with [`Stepper::new_session_on`]. False (nothing done)
    /// unless the client is disconnected.
    pub fn give_up_session(&mut self, client: ClientId) -> bool {
        if self.state(client) != ConnectionState::Disconnected {
            return false;
        }
        self.log(
            client,
            "fault: client gives up on its session (client-side expiry)",
        );
        self.clients[client].inbox.clear();
        self.input(client, ClientSession::expired);
        true
    }

    /// The server expires `session`, one a client gave up on (or any
    /// session it still has), its ephemerals deleted in the `order`-th
    /// permutation of path order; watches fire for the clients connected
    /// now. False if the server no longer has the session.
    pub fn expire_session_on_server(&mut self, session: SessionId, order: u16) -> bool {
        if !self.server().is_session_alive(session) {
            return false;
        }
        let owner = self.owners.get(&session).copied();
        if let Some(client) = owner {
            self.log(
                client,
                &format!("server expires session {session:?} (abandoned)"),
            );
            let current = self.clients[client].session.session_id == Some(session);
            self.history
                .session_ended(client, self.history_ns, session, current);
        }
        self.close_on_server(session, order);
        true
    }

    /// The leader is lost: every connected client is disconnected at once
    /// (each as [`Stepper::disconnect`]); the sessions live on.
    pub fn leader_loss(&mut self) {
        for client in 0..self.clients.len() {
            if self.state(client) == ConnectionState::Connected {
                self.log(client, "fault: leader lost");
                self.disconnect(client);
            }
        }
    }

    /// The server expires the session but the client does not know yet (it
    /// is paused, or partitioned): it keeps acting on what it believes.
    pub fn expire_on_server(&mut self, client: ClientId) {
        self.expire_on_server_in_order(client, 0);
    }

    /// As [`Stepper::expire_on_server`], the session's ephemerals deleted
    /// in the `order`-th permutation of path order (see [`PermutedOrder`]).
    pub fn expire_on_server_in_order(&mut self, client: ClientId, order: u16) {
        self.log(client, "fault: session expired on the server");
        let session = self.session_id(client);
        self.history
            .session_ended(client, self.history_ns, session, true);
        self.close_on_server(session, order);
    }

    /// Closes a live session on the server (or the ensemble's leader) and
    /// hands the resulting events to the clients.
    fn close_on_server(&mut self, session: SessionId, order: u16) {
        match &mut self.ensemble {
            Some(ensemble) => {
                let events = ensemble
                    .close_session(
                        session,
                        DeletionOrder::Permuted(order),
                        &mut PermutedOrder(0),
                    )
                    .expect("session alive");
                self.dispatch(events);
            }
            None => {
                let notifications = self
                    .server
                    .close_session(session, &mut PermutedOrder(order))
                    .expect("session alive");
                self.route(notifications);
            }
        }
    }

    /// A spurious watch event (beyond ZooKeeper's guarantees, to test
    /// robustness): handed to the recipe at once, armed watch or not.
    pub fn inject_watch_event(&mut self, client: ClientId, event: WatchedEvent) {
        self.log(client, &format!("fault: spurious {event:?}"));
        self.history
            .event_delivered(client, self.history_ns, &event, false);
        self.input(client, |session| session.spurious_event(event));
    }

    /// A watch event for an armed watch although its node did not change:
    /// the watch fires as if it had (beyond ZooKeeper's guarantees).
    pub fn fire_armed_watch(&mut self, client: ClientId, event: WatchedEvent) -> bool {
        self.log(
            client,
            &format!("fault: spurious {event:?} on an armed watch"),
        );
        self.notify(client, event)
    }

    /// Runs the server's container / TTL reaper.
    pub fn reap(&mut self) {
        if let Some(ensemble) = &mut self.ensemble {
            let events = ensemble.reap(&mut PermutedOrder(0));
            let server = ensemble.committed();
            self.history
                .reaped(self.history_ns, |path| server.node_kind(path).is_some());
            return self.dispatch(events);
        }
        let notifications = self.server.reap();
        let server = &self.server;
        self.history
            .reaped(self.history_ns, |path| server.node_kind(path).is_some());
        self.route(notifications);
    }
}
