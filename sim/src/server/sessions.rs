//! Sessions: the live ones with their timeout and the last time the server
//! heard from them, and what closing or expiring one does to the tree.

use super::{ChildOrder, Notification, SessionError, ZkServer};
use std::collections::BTreeMap;
use zk_recipes::zk::{AuthId, Path, SessionId};

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(super) struct Session {
    timeout_ms: u64,
    last_heard_ms: i64,
    /// The identities it added with addAuth, in order, each once. A real
    /// server keeps them per connection and the client sends them again
    /// on each reconnect, before anything else: the same identities.
    auth: Vec<AuthId>,
}

impl Session {
    /// Not heard from within the timeout (SessionTrackerImpl expires a
    /// session once `now >= last touch + timeout`; ticks are not modelled).
    fn is_due(&self, now_ms: i64) -> bool {
        let silent_ms = i128::from(now_ms) - i128::from(self.last_heard_ms);
        silent_ms >= i128::from(self.timeout_ms)
    }
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub(crate) struct SessionTable {
    pub(super) live: BTreeMap<SessionId, Session>,
}

impl SessionTable {
    pub fn open(
        &mut self,
        id: SessionId,
        timeout_ms: u64,
        now_ms: i64,
    ) -> Result<(), SessionError> {
        if self.live.contains_key(&id) {
            return Err(SessionError::Duplicate(id));
        }
        self.live.insert(
            id,
            Session {
                timeout_ms,
                last_heard_ms: now_ms,
                auth: Vec::new(),
            },
        );
        Ok(())
    }

    pub fn is_alive(&self, id: SessionId) -> bool {
        self.live.contains_key(&id)
    }

    /// When the server last heard from the session, if it is alive.
    pub fn last_heard_ms(&self, id: SessionId) -> Option<i64> {
        self.live.get(&id).map(|session| session.last_heard_ms)
    }

    /// Records that the server heard from the session; ignored for dead ones.
    pub fn touch(&mut self, id: SessionId, now_ms: i64) {
        if let Some(session) = self.live.get_mut(&id) {
            session.last_heard_ms = now_ms;
        }
    }

    /// The identities the session added (none for an unknown session: a
    /// follower may serve one it has not seen created).
    pub fn auth_of(&self, id: SessionId) -> &[AuthId] {
        self.live.get(&id).map_or(&[], |session| &session.auth)
    }

    /// The session adds `auth` to its identities, if alive and not yet.
    pub fn add_auth(&mut self, id: SessionId, auth: AuthId) {
        if let Some(session) = self.live.get_mut(&id) {
            if !session.auth.contains(&auth) {
                session.auth.push(auth);
            }
        }
    }

    pub fn remove(&mut self, id: SessionId) -> Result<(), SessionError> {
        self.live
            .remove(&id)
            .map(|_| ())
            .ok_or(SessionError::NotAlive(id))
    }

    /// The sessions due for expiry, in id order.
    pub fn due(&self, now_ms: i64) -> Vec<SessionId> {
        self.live
            .iter()
            .filter(|(_, session)| session.is_due(now_ms))
            .map(|(id, _)| *id)
            .collect()
    }
}

impl ZkServer {
    /// The closeSession transaction: one zxid, then the session's
    /// ephemerals deleted in the order `order` arranges them (DataTree.
    /// killSession walks a HashSet: an order the recipe cannot rely on),
    /// firing their watches, then the session's own watches forgotten.
    pub(super) fn end_session(
        &mut self,
        id: SessionId,
        order: &mut dyn ChildOrder,
    ) -> Result<Vec<Notification>, SessionError> {
        self.sessions.remove(id)?;
        let zxid = self.next_zxid();
        // DataTree.killSession deletes the ephemerals (firing their watches,
        // the closing session's own included, as the conformance suite saw on
        // 3.8.0) before the connection and its watches are dropped.
        let doomed = arranged(self.tree.ephemerals_of(id), order);
        let mut notifications = Vec::new();
        for path in &doomed {
            let change = self.tree.delete_node(path, zxid);
            self.fire(&change, &mut notifications);
        }
        self.forget_watches(id);
        Ok(notifications)
    }

    /// Expires the due sessions in id order, one closeSession each.
    pub(super) fn expire_due(
        &mut self,
        order: &mut dyn ChildOrder,
    ) -> (Vec<SessionId>, Vec<Notification>) {
        let due = self.sessions.due(self.now_ms);
        let mut notifications = Vec::new();
        for &id in &due {
            notifications.extend(self.end_session(id, order).expect("a due session is alive"));
        }
        (due, notifications)
    }
}

/// The paths in the order `order` arranges their names.
fn arranged<'a>(paths: impl Iterator<Item = &'a Path>, order: &mut dyn ChildOrder) -> Vec<Path> {
    let mut names: Vec<String> = paths.map(|path| path.as_str().to_string()).collect();
    order.arrange(&mut names);
    names
        .into_iter()
        .map(|name| Path::new(name).expect("an ephemeral's path is valid"))
        .collect()
}
