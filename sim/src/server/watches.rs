//! The server's watch tables (ZooKeeper 3.8.0's `WatchManager`, one for
//! data watches and one for child watches; exists watches are data
//! watches), with the modes of `WatcherModeManager`: a one-shot watch, a
//! persistent one (`addWatch` PERSISTENT: in both tables, stays armed) and
//! a persistent recursive one (PERSISTENT_RECURSIVE: in the data table
//! only, fires for the path and every node under it).
//!
//! Watches are kept per session: a session registered several times on one
//! path is one watcher and gets one event per trigger and table. As in
//! 3.8.0 (before ZOOKEEPER-4466), a session has one mode per path and
//! table: the last registration sets it, so a one-shot watch set on a path
//! a persistent watch of the same session covers turns that table's watch
//! one-shot, and an `addWatch` turns a one-shot watch persistent.

use super::tree::{Change, DataTree};
use super::{Notification, WatchSet};
use std::collections::{BTreeMap, BTreeSet};
use zk_recipes::zk::{AddWatchMode, EventType, Path, SessionId, WatchedEvent, Zxid};

/// How a session's watch on a path is armed in one table (the recursive
/// mode lives in [`WatchTable::recursive`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) enum Mode {
    /// Fires once, then is gone.
    OneShot,
    /// `addWatch` PERSISTENT: fires and stays armed.
    Persistent,
}

/// The sessions watching each path, with their mode.
pub(crate) type Watchers = BTreeMap<Path, BTreeMap<SessionId, Mode>>;

#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub(crate) struct WatchTable {
    pub(super) data: Watchers,
    pub(super) child: Watchers,
    /// The data table's recursive watches: per path, the sessions watching
    /// it and everything under it.
    pub(super) recursive: BTreeMap<Path, BTreeSet<SessionId>>,
}

impl WatchTable {
    /// Arms a one-shot data watch (getData and exists).
    pub fn watch_data(&mut self, path: &Path, session: SessionId) {
        self.set_data_mode(path, session, Mode::OneShot);
    }

    /// Arms a one-shot child watch (getChildren).
    pub fn watch_children(&mut self, path: &Path, session: SessionId) {
        add(&mut self.child, path, session, Mode::OneShot);
    }

    /// Arms a persistent watch (addWatch): PERSISTENT in both tables,
    /// PERSISTENT_RECURSIVE in the data table only (DataTree.addWatch).
    pub fn add_watch(&mut self, path: &Path, session: SessionId, mode: AddWatchMode) {
        match mode {
            AddWatchMode::Persistent => {
                self.set_data_mode(path, session, Mode::Persistent);
                add(&mut self.child, path, session, Mode::Persistent);
            }
            AddWatchMode::PersistentRecursive => {
                remove(&mut self.data, path, session);
                match self.recursive.get_mut(path) {
                    Some(sessions) => {
                        sessions.insert(session);
                    }
                    None => {
                        self.recursive
                            .insert(path.clone(), BTreeSet::from([session]));
                    }
                }
            }
        }
    }

    /// Sets the session's data-table mode on `path` (it replaces a
    /// recursive watch there: one mode per path and table).
    fn set_data_mode(&mut self, path: &Path, session: SessionId, mode: Mode) {
        if let Some(sessions) = self.recursive.get_mut(path) {
            sessions.remove(&session);
            if sessions.is_empty() {
                self.recursive.remove(path);
            }
        }
        add(&mut self.data, path, session, mode);
    }

    /// Whether the session has a one-shot data watch on `path`.
    pub fn watches_data(&self, path: &Path, session: SessionId) -> bool {
        mode_of(&self.data, path, session) == Some(Mode::OneShot)
    }

    /// Whether the session has a one-shot child watch on `path`.
    pub fn watches_children(&self, path: &Path, session: SessionId) -> bool {
        mode_of(&self.child, path, session) == Some(Mode::OneShot)
    }

    /// Whether an addWatch of `mode` would change nothing.
    pub fn has_watch(&self, path: &Path, session: SessionId, mode: AddWatchMode) -> bool {
        match mode {
            AddWatchMode::Persistent => {
                mode_of(&self.data, path, session) == Some(Mode::Persistent)
                    && mode_of(&self.child, path, session) == Some(Mode::Persistent)
            }
            AddWatchMode::PersistentRecursive => self
                .recursive
                .get(path)
                .is_some_and(|sessions| sessions.contains(&session)),
        }
    }

    /// Whether the session has any watch.
    pub fn has_session(&self, session: SessionId) -> bool {
        let mut tables = self.data.values().chain(self.child.values());
        tables.any(|sessions| sessions.contains_key(&session))
            || self.recursive.values().any(|s| s.contains(&session))
    }

    /// Whether a recursive watch covers `path` (on it or an ancestor).
    fn recursive_covers(&self, path: &Path) -> bool {
        self.recursive.keys().any(|watched| watched.covers(path))
    }

    /// Whether `change` triggers a watch (else [`WatchTable::fire`] changes
    /// nothing).
    pub fn fired_by(&self, change: &Change) -> bool {
        match change {
            Change::Created { path, parent, .. } => {
                self.data.contains_key(path)
                    || self.child.contains_key(parent)
                    || self.recursive_covers(path)
            }
            Change::Deleted { path, parent, .. } => {
                self.data.contains_key(path)
                    || self.child.contains_key(path)
                    || self.child.contains_key(parent)
                    || self.recursive_covers(path)
            }
            Change::DataSet { path, .. } => {
                self.data.contains_key(path) || self.recursive_covers(path)
            }
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
        self.recursive.retain(|_, sessions| {
            sessions.remove(&session);
            !sessions.is_empty()
        });
    }

    /// Fires the watches a change triggers, as DataTree does after applying it.
    pub fn fire(&mut self, change: &Change, out: &mut Vec<Notification>) {
        match change {
            Change::Created { path, parent, .. } => {
                let created = self.trigger_data(path);
                notify(created, EventType::NodeCreated, path, out);
                let children = trigger(&mut self.child, parent);
                notify(children, EventType::NodeChildrenChanged, parent, out);
            }
            Change::Deleted { path, parent, .. } => {
                // One NodeDeleted per session even if it had both kinds of
                // watch on the path (WatchManager's `supress` set).
                let mut deleted = self.trigger_data(path);
                deleted.append(&mut trigger(&mut self.child, path));
                notify(deleted, EventType::NodeDeleted, path, out);
                let children = trigger(&mut self.child, parent);
                notify(children, EventType::NodeChildrenChanged, parent, out);
            }
            Change::DataSet { path, .. } => {
                let changed = self.trigger_data(path);
                notify(changed, EventType::NodeDataChanged, path, out);
            }
        }
    }

    /// The data table's triggerWatch: the watchers on `path` (one-shot ones
    /// removed) and the recursive watchers on it and its ancestors.
    fn trigger_data(&mut self, path: &Path) -> BTreeSet<SessionId> {
        let mut sessions = trigger(&mut self.data, path);
        for (watched, watchers) in &self.recursive {
            if watched.covers(path) {
                sessions.extend(watchers.iter().copied());
            }
        }
        sessions
    }

    /// DataTree.setWatches: fires at once what changed after `relative_zxid`
    /// (or is gone, or for exist watches: exists now), arms the rest; then
    /// arms the persistent and the recursive watches as they are, with no
    /// event for what changed meanwhile (3.8.0 sends none: ZOOKEEPER-4698).
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
                Some(_) => self.watch_data(path, session),
            }
        }
        for path in &watches.exist {
            match tree.get(path) {
                Some(_) => fire_now(EventType::NodeCreated, path),
                None => self.watch_data(path, session),
            }
        }
        for path in &watches.child {
            match tree.get(path) {
                None => fire_now(EventType::NodeDeleted, path),
                Some(node) if node.pzxid > relative_zxid => {
                    fire_now(EventType::NodeChildrenChanged, path)
                }
                Some(_) => self.watch_children(path, session),
            }
        }
        for path in &watches.persistent {
            self.add_watch(path, session, AddWatchMode::Persistent);
        }
        for path in &watches.recursive {
            self.add_watch(path, session, AddWatchMode::PersistentRecursive);
        }
        out
    }
}

fn mode_of(table: &Watchers, path: &Path, session: SessionId) -> Option<Mode> {
    table.get(path).and_then(|s| s.get(&session)).copied()
}

fn add(table: &mut Watchers, path: &Path, session: SessionId, mode: Mode) {
    match table.get_mut(path) {
        Some(sessions) => {
            sessions.insert(session, mode);
        }
        None => {
            table.insert(path.clone(), BTreeMap::from([(session, mode)]));
        }
    }
}

fn remove(table: &mut Watchers, path: &Path, session: SessionId) {
    if let Some(sessions) = table.get_mut(path) {
        sessions.remove(&session);
        if sessions.is_empty() {
            table.remove(path);
        }
    }
}

/// The sessions watching `path` in one table; the one-shot watches are
/// removed, the persistent ones stay.
fn trigger(table: &mut Watchers, path: &Path) -> BTreeSet<SessionId> {
    let Some(sessions) = table.get_mut(path) else {
        return BTreeSet::new();
    };
    let fired = sessions.keys().copied().collect();
    sessions.retain(|_, mode| *mode == Mode::Persistent);
    if sessions.is_empty() {
        table.remove(path);
    }
    fired
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

#[cfg(test)]
mod tests {
    use zk_recipes::zk::Path;

    fn p(path: &str) -> Path {
        Path::new(path).unwrap()
    }

    #[test]
    fn a_recursive_watch_covers_its_path_and_descendants_only() {
        assert!(p("/a").covers(&p("/a")));
        assert!(p("/a").covers(&p("/a/b/c")));
        assert!(!p("/a").covers(&p("/ab")));
        assert!(!p("/a/b").covers(&p("/a")));
        assert!(p("/").covers(&p("/x")));
    }
}
