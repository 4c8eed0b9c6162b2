//! Applying one client request: the session check, reads (which may arm a
//! watch and consume no zxid), multi-reads, addWatch, single writes and
//! multis (one zxid each, whether they succeed or fail), and the watches a
//! write fires.

use super::writes::{self, WriteContext, WriteOp};
use super::{multi, Applied, ChildOrder, Notification, ZkServer};
use std::collections::BTreeMap;
use zk_recipes::zk::{
    MultiOp, OpResult, Path, ReadOp, ReadResult, Reply, Request, SessionId, ZkError, ZkResult,
};

impl ZkServer {
    pub(super) fn apply_request(
        &mut self,
        session: SessionId,
        request: &Request,
        order: &mut dyn ChildOrder,
    ) -> Applied {
        if !self.sessions.is_alive(session) {
            return Applied {
                result: Err(ZkError::SessionExpired),
                zxid: self.last_zxid,
                notifications: Vec::new(),
            };
        }
        self.heard_from(session);
        self.apply_unchecked(session, request, order)
    }

    /// [`ZkServer::apply_request`] without the session check.
    pub(super) fn apply_unchecked(
        &mut self,
        session: SessionId,
        request: &Request,
        order: &mut dyn ChildOrder,
    ) -> Applied {
        let mut notifications = Vec::new();
        let result = match request {
            Request::Exists { path, watch } => self.exists(session, path, *watch),
            Request::GetData { path, watch } => self.get_data(session, path, *watch),
            Request::GetChildren { path, watch } => self
                .get_children(session, path, *watch, order)
                .map(|(children, _)| Reply::Children(children)),
            Request::GetChildren2 { path, watch } => self
                .get_children(session, path, *watch, order)
                .map(|(children, stat)| Reply::Children2 { children, stat }),
            Request::Sync { path } => Ok(Reply::Synced { path: path.clone() }),
            // FinalRequestProcessor: no check of the path's node.
            Request::AddWatch { path, mode } => {
                self.add_watch(path, session, *mode);
                Ok(Reply::WatchAdded)
            }
            Request::Multi(ops) => self.multi(session, ops, &mut notifications),
            Request::MultiRead(reads) => {
                Ok(Reply::MultiRead(self.multi_read(session, reads, order)))
            }
            Request::GetEphemerals { prefix } => {
                Ok(Reply::Ephemerals(self.ephemerals(session, prefix)))
            }
            Request::GetAllChildrenNumber { path } => self.all_children_number(path),
            write => {
                let op = WriteOp::of_request(write).expect("every other request is a write");
                self.write(session, op, &mut notifications)
            }
        };
        Applied {
            result,
            zxid: self.last_zxid,
            notifications,
        }
    }

    /// exists arms a data watch whether or not the node exists.
    fn exists(&mut self, session: SessionId, path: &Path, watch: bool) -> ZkResult {
        if watch {
            self.watch_data(path, session);
        }
        Ok(Reply::Exists(self.tree.get(path).map(|node| node.stat())))
    }

    /// getData arms a data watch only if the node exists.
    fn get_data(&mut self, session: SessionId, path: &Path, watch: bool) -> ZkResult {
        let node = self.tree.get(path).ok_or(ZkError::NoNode)?;
        let reply = Reply::Data {
            data: node.data.clone(),
            stat: node.stat(),
        };
        if watch {
            self.watch_data(path, session);
        }
        Ok(reply)
    }

    /// getChildren arms a child watch only if the node exists.
    fn get_children(
        &mut self,
        session: SessionId,
        path: &Path,
        watch: bool,
        order: &mut dyn ChildOrder,
    ) -> Result<(Vec<String>, zk_recipes::zk::Stat), ZkError> {
        let node = self.tree.get(path).ok_or(ZkError::NoNode)?;
        let mut children: Vec<String> = node.children.iter().cloned().collect();
        let stat = node.stat();
        order.arrange(&mut children);
        if watch {
            self.watch_children(path, session);
        }
        Ok((children, stat))
    }

    /// FinalRequestProcessor's multiRead: each read as alone without its
    /// watch, a failure its own result.
    fn multi_read(
        &mut self,
        session: SessionId,
        reads: &[ReadOp],
        order: &mut dyn ChildOrder,
    ) -> Vec<ReadResult> {
        reads
            .iter()
            .map(|read| match read {
                ReadOp::GetData { path } => match self.get_data(session, path, false) {
                    Ok(Reply::Data { data, stat }) => ReadResult::Data { data, stat },
                    Ok(other) => unreachable!("getData answers Data, not {other:?}"),
                    Err(error) => ReadResult::Error(error),
                },
                ReadOp::GetChildren { path } => {
                    match self.get_children(session, path, false, order) {
                        Ok((children, _)) => ReadResult::Children(children),
                        Err(error) => ReadResult::Error(error),
                    }
                }
            })
            .collect()
    }

    /// FinalRequestProcessor's getEphemerals: the session's ephemerals whose
    /// path starts with `prefix` as text (all of them for `/`).
    fn ephemerals(&self, session: SessionId, prefix: &Path) -> Vec<Path> {
        self.tree
            .ephemerals_of(session)
            .filter(|path| prefix.is_root() || path.as_str().starts_with(prefix.as_str()))
            .cloned()
            .collect()
    }

    /// DataTree.getAllChildrenNumber: the nodes under `path` at any depth.
    /// ZooKeeper's own `/zookeeper` subtree is not modelled, so at `/` the
    /// count is a real server's less its three nodes there.
    fn all_children_number(&self, path: &Path) -> ZkResult {
        if !self.tree.contains(path) {
            return Err(ZkError::NoNode);
        }
        let is_under = |other: &&Path| match path.is_root() {
            true => !other.is_root(),
            false => (other.as_str().strip_prefix(path.as_str()))
                .is_some_and(|rest| rest.starts_with('/')),
        };
        let under = self.tree.paths().filter(is_under).count();
        Ok(Reply::AllChildrenNumber(under as u32))
    }

    fn write(
        &mut self,
        session: SessionId,
        op: WriteOp<'_>,
        notifications: &mut Vec<Notification>,
    ) -> ZkResult {
        let mut ctx = self.write_context(session);
        let (result, change) = writes::apply(&mut self.tree, op, &mut ctx)?;
        if let Some(change) = change {
            self.fire(&change, notifications);
        }
        Ok(match result {
            OpResult::Created { path, stat } => Reply::Created { path, stat },
            OpResult::Deleted => Reply::Deleted,
            OpResult::DataSet(stat) => Reply::DataSet(stat),
            OpResult::Checked => Reply::Checked,
        })
    }

    fn multi(
        &mut self,
        session: SessionId,
        ops: &[MultiOp],
        notifications: &mut Vec<Notification>,
    ) -> ZkResult {
        let mut ctx = self.write_context(session);
        let (results, changes) = multi::apply_all(&mut self.tree, ops, &mut ctx)?;
        for change in &changes {
            self.fire(change, notifications);
        }
        Ok(Reply::Multi(results))
    }

    /// Consumes the request's zxid.
    fn write_context(&mut self, session: SessionId) -> WriteContext {
        WriteContext {
            session,
            zxid: self.next_zxid(),
            time_ms: self.now_ms,
            extended_types_enabled: self.config.extended_types_enabled,
            prepared_counters: BTreeMap::new(),
        }
    }
}
