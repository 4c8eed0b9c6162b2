//! Applying one client request: the session check, reads (which may arm a
//! watch and consume no zxid), multi-reads, addWatch, single writes and
//! multis (one zxid each, whether they succeed or fail), and the watches a
//! write fires.

use super::writes::{self, WriteContext, WriteOp};
use super::{access, multi, Applied, ChildOrder, Notification, ZkServer};
use std::collections::BTreeMap;
use zk_recipes::zk::{
    Acls, MultiOp, OpResult, Path, Perms, ReadOp, ReadResult, Reply, Request, SessionId, Stat,
    ZkError, ZkResult,
};

/// ZooKeeper's own configuration node (`getConfig` reads it).
pub const CONFIG_NODE: &str = "/zookeeper/config";

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
            Request::GetAllChildrenNumber { path } => self.all_children_number(session, path),
            Request::GetAcl { path } => self.get_acl(session, path),
            Request::SetAcl { path, acl, version } => self.set_acl(session, path, acl, *version),
            Request::AddAuth { scheme, auth } => self.add_auth(session, scheme, auth),
            Request::WhoAmI => Ok(Reply::AuthIds(access::who_am_i(
                self.sessions.auth_of(session),
            ))),
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

    /// getData arms a data watch only if the node exists and may be read.
    fn get_data(&mut self, session: SessionId, path: &Path, watch: bool) -> ZkResult {
        if path.as_str() == CONFIG_NODE && !self.tree.contains(path) {
            return Ok(self.config_node(session, path, watch));
        }
        let node = self.tree.get(path).ok_or(ZkError::NoNode)?;
        access::check(&node.acl, Perms::READ, self.sessions.auth_of(session))?;
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
        access::check(&node.acl, Perms::READ, self.sessions.auth_of(session))?;
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
    fn all_children_number(&self, session: SessionId, path: &Path) -> ZkResult {
        let node = self.tree.get(path).ok_or(ZkError::NoNode)?;
        access::check(&node.acl, Perms::READ, self.sessions.auth_of(session))?;
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

    /// `/zookeeper/config` of a standalone 3.8 server, which is all the
    /// tree keeps of ZooKeeper's own nodes: no data, a zero stat but for
    /// the ACL version DataTree leaves at -1, readable by anyone.
    fn config_node(&mut self, session: SessionId, path: &Path, watch: bool) -> Reply {
        if watch {
            self.watch_data(path, session);
        }
        let stat = Stat {
            czxid: 0,
            mzxid: 0,
            pzxid: 0,
            ctime_ms: 0,
            mtime_ms: 0,
            version: 0,
            cversion: 0,
            aversion: -1,
            ephemeral_owner: 0,
            data_length: 0,
            num_children: 0,
        };
        Reply::Data {
            data: Vec::new(),
            stat,
        }
    }

    /// getACL: READ or ADMIN on the node; without ADMIN digest hashes
    /// are shown as `x`.
    fn get_acl(&self, session: SessionId, path: &Path) -> ZkResult {
        let node = self.tree.get(path).ok_or(ZkError::NoNode)?;
        let added = self.sessions.auth_of(session);
        access::check(&node.acl, Perms(Perms::READ.0 | Perms::ADMIN.0), added)?;
        let acl = match access::check(&node.acl, Perms::ADMIN, added) {
            Ok(()) => node.acl.clone(),
            Err(_) => access::redacted(&node.acl),
        };
        Ok(Reply::Acl {
            acl,
            stat: node.stat(),
        })
    }

    /// setACL: a write (one zxid, also when refused) that fires no watch.
    fn set_acl(&mut self, session: SessionId, path: &Path, acl: &Acls, version: i32) -> ZkResult {
        let ctx = self.write_context(session);
        writes::set_acl(&mut self.tree, path, acl, version, &ctx).map(Reply::AclSet)
    }

    /// addAuth: the identity joins the session's (once); no zxid.
    pub fn add_auth(&mut self, session: SessionId, scheme: &str, auth: &[u8]) -> ZkResult {
        if let Some(id) = access::authenticate(scheme, auth)? {
            self.sessions.add_auth(session, id);
        }
        Ok(Reply::AuthAdded)
    }

    /// Consumes the request's zxid.
    fn write_context(&mut self, session: SessionId) -> WriteContext {
        WriteContext {
            auth: self.sessions.auth_of(session).to_vec(),
            session,
            zxid: self.next_zxid(),
            time_ms: self.now_ms,
            extended_types_enabled: self.config.extended_types_enabled,
            prepared_counters: BTreeMap::new(),
        }
    }
}
