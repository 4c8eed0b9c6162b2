//! The server's watch tables (ZooKeeper's `WatchManager`, one for data
//! watches and one for child watches; exists watches are data watches).
//! Watches are one-shot and kept per session: a session registered several
//! times on one path is one watcher and gets one event per trigger.

use super::tree::{Change, DataTree};
use super::{Notification, WatchSet};
use std::collections::{BTreeMap, BTreeSet};
use zk_recipes::zk::{EventType, Path, SessionId, WatchedEvent, Zxid};

#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub(crate) struct WatchTable {
    pub(super) data: BTreeMap<Path, BTreeSet<SessionId>>,
    pub(super) child: BTreeMap<Path, BTreeSet<SessionId>>,
}

impl WatchTable {
    /// Arms a data watch (getData and exists).
    pub fn watch_data(&mut self, path: &Path, session: SessionId) {
        add(&mut self.data, path, session);
    }

    /// Arms a child watch (getChildren).
    pub fn watch_children(&mut self, path: &Path, session: SessionId) {
        add(&mut self.child, path, session);
    }

    /// Whether the session has a data watch on `path`.
    pub fn watches_data(&self, path: &Path, session: SessionId) -> bool {
        self.data.get(path).is_some_and(|s| s.contains(&session))
    }

    /// Whether the session has a child watch on `path`.
    pub fn watches_children(&self, path: &Path, session: SessionId) -> bool {
        self.child.get(path).is_some_and(|s| s.contains(&session))
    }

    /// Whether the session has any watch.
    pub fn has_session(&self, session: SessionId) -> bool {
        let mut tables = self.data.values().chain(self.child.values());
        tables.any(|sessions| sessions.contains(&session))
    }

    /// Whether `change` triggers a watch (else [`WatchTable::fire`] changes
    /// nothing).
    pub fn fired_by(&self, change: &Change) -> bool {
        match change {
            Change::Created { path, parent, .. } => {
                self.data.contains_key(path) || self.child.contains_key(parent)
            }
            Change::Deleted { path, parent, .. } => {
                self.data.contains_key(path)
                    || self.child.contains_key(path)
                    || self.child.contains_key(parent)
            }
            Change::DataSet { path, .. } => self.data.contains_key(path),
        }
    }

    /// Forgets every watch of the session.
    pub fn remove_session(&mut self, session: SessionId) {
        for table in [&mut self.data, &mut self.child] {
            table.retain(|_, sessions| {
                sessions.remove(&session);
                !sessions.is_empty()
            });
        }
    }

    /// Fires the watches a change triggers, as DataTree does after applying it.
    pub fn fire(&mut self, change: &Change, out: &mut Vec<Notification>) {
        match change {
            Change::Created { path, parent, .. } => {
                notify(
                    take(&mut self.data, path),
                    EventType::NodeCreated,
                    path,
                    out,
                );
                notify(
                    take(&mut self.child, parent),
                    EventType::NodeChildrenChanged,
                    parent,
                    out,
                );
            }
            Change::Deleted { path, parent, .. } => {
                // One NodeDeleted per session even if it had both kinds of
                // watch on the path (WatchManager's `supress` set).
                let mut deleted = take(&mut self.data, path);
                deleted.append(&mut take(&mut self.child, path));
                notify(deleted, EventType::NodeDeleted, path, out);
                notify(
                    take(&mut self.child, parent),
                    EventType::NodeChildrenChanged,
                    parent,
                    out,
                );
            }
            Change::DataSet { path, .. } => {
                notify(
                    take(&mut self.data, path),
                    EventType::NodeDataChanged,
                    path,
                    out,
                );
            }
        }
    }

    /// DataTree.setWatches: fires at once what changed after `relative_zxid`
    /// (or is gone, or for exist watches: exists now), arms the rest.
    pub fn reregister(
        &mut self,
        tree: &DataTree,
        session: SessionId,
        relative_zxid: Zxid,
        watches: &WatchSet,
    ) -> Vec<Notification> {
        let mut out = Vec::new();
        let mut fire_now =
            |event_type, path: &Path| out.push(notification(session, event_type, path));
        for path in &watches.data {
            match tree.get(path) {
                None => fire_now(EventType::NodeDeleted, path),
                Some(node) if node.mzxid > relative_zxid => {
                    fire_now(EventType::NodeDataChanged, path)
                }
                Some(_) => add(&mut self.data, path, session),
            }
        }
        for path in &watches.exist {
            match tree.get(path) {
                Some(_) => fire_now(EventType::NodeCreated, path),
                None => add(&mut self.data, path, session),
            }
        }
        for path in &watches.child {
            match tree.get(path) {
                None => fire_now(EventType::NodeDeleted, path),
                Some(node) if node.pzxid > relative_zxid => {
                    fire_now(EventType::NodeChildrenChanged, path)
                }
                Some(_) => add(&mut self.child, path, session),
            }
        }
        out
    }
}

fn add(table: &mut BTreeMap<Path, BTreeSet<SessionId>>, path: &Path, session: SessionId) {
    match table.get_mut(path) {
        Some(sessions) => {
            sessions.insert(session);
        }
        None => {
            table.insert(path.clone(), BTreeSet::from([session]));
        }
    }
}

fn take(table: &mut BTreeMap<Path, BTreeSet<SessionId>>, path: &Path) -> BTreeSet<SessionId> {
    table.remove(path).unwrap_or_default()
}

/// One notification per session, in session id order.
fn notify(
    sessions: BTreeSet<SessionId>,
    event_type: EventType,
    path: &Path,
    out: &mut Vec<Notification>,
) {
    out.extend(
        sessions
            .into_iter()
            .map(|session| notification(session, event_type, path)),
    );
}

fn notification(session: SessionId, event_type: EventType, path: &Path) -> Notification {
    Notification {
        session,
        event: WatchedEvent::node(event_type, path.clone()),
    }
}
