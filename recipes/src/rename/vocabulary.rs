//! [`Rename`] for the ZooKeeper vocabulary: paths, sessions, stats,
//! requests, replies, results and events, each renamed field by field
//! through a [`Renaming`]; a stat's `cversion` with its node's sequence
//! counter, a multi's results each with the path of its op.

use super::{Rename, Renaming};
use crate::zk::{
    MultiOp, OpResult, Path, ReadOp, ReadResult, Reply, Request, SessionEvent, SessionId, Stat,
    WatchedEvent, ZkResult,
};

impl Rename for Path {
    fn rename(&mut self, r: &mut Renaming) {
        *self = r.path(self);
    }
}

impl Rename for SessionId {
    fn rename(&mut self, r: &mut Renaming) {
        *self = r.session(*self);
    }
}

impl<T: Rename> Rename for Option<T> {
    fn rename(&mut self, r: &mut Renaming) {
        if let Some(value) = self {
            value.rename(r);
        }
    }
}

impl Rename for Stat {
    fn rename(&mut self, r: &mut Renaming) {
        self.czxid = r.zxid(self.czxid);
        self.mzxid = r.zxid(self.mzxid);
        self.pzxid = r.zxid(self.pzxid);
        self.ephemeral_owner = r.session_raw(self.ephemeral_owner);
    }
}

impl Rename for Request {
    fn rename(&mut self, r: &mut Renaming) {
        match self {
            Request::Create { path, data, .. } | Request::SetData { path, data, .. } => {
                *data = r.data(path, data);
                path.rename(r);
            }
            Request::Delete { path, .. }
            | Request::Exists { path, .. }
            | Request::GetData { path, .. }
            | Request::GetChildren { path, .. }
            | Request::GetChildren2 { path, .. }
            | Request::Check { path, .. }
            | Request::Sync { path }
            | Request::AddWatch { path, .. }
            | Request::GetAllChildrenNumber { path }
            | Request::GetAcl { path }
            | Request::SetAcl { path, .. } => path.rename(r),
            // The session's own identities name no node.
            Request::AddAuth { .. } | Request::WhoAmI => {}
            // A prefix of text, not a node: renamed as a path would be.
            Request::GetEphemerals { prefix } => prefix.rename(r),
            Request::Multi(ops) => ops.iter_mut().for_each(|op| op.rename(r)),
            Request::MultiRead(ops) => ops.iter_mut().for_each(|op| match op {
                ReadOp::GetData { path } | ReadOp::GetChildren { path } => path.rename(r),
            }),
        }
    }
}

impl Rename for MultiOp {
    fn rename(&mut self, r: &mut Renaming) {
        match self {
            MultiOp::Create { path, data, .. } | MultiOp::SetData { path, data, .. } => {
                *data = r.data(path, data);
                path.rename(r);
            }
            MultiOp::Delete { path, .. } | MultiOp::Check { path, .. } => path.rename(r),
        }
    }
}

/// A reply to `request` (children lists need the parent they list).
pub fn rename_reply(reply: &mut Reply, request: Option<&Path>, r: &mut Renaming) {
    match reply {
        Reply::Created { path, stat } => {
            rename_stat_of(stat, Some(path), r);
            path.rename(r);
        }
        Reply::Exists(stat) => {
            if let Some(stat) = stat {
                rename_stat_of(stat, request, r);
            }
        }
        Reply::Data { data, stat } => {
            if let Some(path) = request {
                *data = r.data(path, data);
            }
            rename_stat_of(stat, request, r);
        }
        Reply::DataSet(stat) => rename_stat_of(stat, request, r),
        Reply::Children(children) => {
            let parent = request.expect("a children reply answers a path");
            *children = r.children(parent, children);
        }
        Reply::Children2 { children, stat } => {
            let parent = request.expect("a children reply answers a path");
            *children = r.children(parent, children);
            rename_stat_of(stat, request, r);
        }
        Reply::Multi(results) => results.iter_mut().for_each(|result| result.rename(r)),
        Reply::Synced { path } => path.rename(r),
        Reply::Acl { stat, .. } | Reply::AclSet(stat) => rename_stat_of(stat, request, r),
        Reply::Deleted
        | Reply::Checked
        | Reply::WatchAdded
        | Reply::AllChildrenNumber(_)
        | Reply::AuthAdded
        | Reply::AuthIds(_) => {}
        Reply::Ephemerals(paths) => paths.iter_mut().for_each(|path| path.rename(r)),
        // Data and children need each read's path: rename_result_of renames
        // them with the request; without it only the stats.
        Reply::MultiRead(results) => results.iter_mut().for_each(|result| {
            if let ReadResult::Data { stat, .. } = result {
                rename_stat_of(stat, None, r);
            }
        }),
    }
}

/// The stat of the node at `path` (`None`: unknown), renamed. Its
/// `cversion` is made of the node's sequence counter (`2 * counter -
/// children`, as the server computes it), which ranks rename: the counter
/// it was made of is ranked with the node's other sequence numbers, so a
/// stat in flight agrees with the ones the renamed tree gives.
pub fn rename_stat_of(stat: &mut Stat, path: Option<&Path>, r: &mut Renaming) {
    stat.rename(r);
    let Some(path) = path.filter(|_| r.ranks_sequences()) else {
        return;
    };
    let doubled = i64::from(stat.cversion) + i64::from(stat.num_children);
    if doubled <= 0 || doubled % 2 != 0 || doubled / 2 > i64::from(i32::MAX) {
        return;
    }
    let counter = r.sequence(path, (doubled / 2) as i32);
    stat.cversion = counter.wrapping_mul(2).wrapping_sub(stat.num_children);
}

/// A result of a request to `path`.
pub fn rename_result(result: &mut ZkResult, path: Option<&Path>, r: &mut Renaming) {
    if let Ok(reply) = result {
        rename_reply(reply, path, r);
    }
}

/// A result of `request` (`None`: unknown): as [`rename_result`], and the
/// results of a multi each with the path of its op, so that a `setData`'s
/// stat inside a multi is renamed as [`rename_stat_of`] renames it.
pub fn rename_result_of(result: &mut ZkResult, request: Option<&Request>, r: &mut Renaming) {
    if let (Ok(Reply::MultiRead(results)), Some(Request::MultiRead(ops))) = (&mut *result, request)
    {
        for (result, op) in results.iter_mut().zip(ops) {
            rename_read_result(result, op, r);
        }
        return;
    }
    let (Ok(Reply::Multi(results)), Some(Request::Multi(ops))) = (&mut *result, request) else {
        return rename_result(result, request.and_then(Request::path), r);
    };
    for (result, op) in results.iter_mut().zip(ops) {
        match (result, op) {
            (OpResult::DataSet(stat), MultiOp::SetData { path, .. }) => {
                rename_stat_of(stat, Some(path), r)
            }
            (OpResult::Created { path, stat }, _) => {
                rename_stat_of(stat, Some(path), r);
                path.rename(r);
            }
            (result, _) => result.rename(r),
        }
    }
}

/// The result of one read of a multi-read, renamed as the reply of the same
/// read alone would be.
fn rename_read_result(result: &mut ReadResult, op: &ReadOp, r: &mut Renaming) {
    match result {
        ReadResult::Data { data, stat } => {
            *data = r.data(op.path(), data);
            rename_stat_of(stat, Some(op.path()), r);
        }
        ReadResult::Children(children) => *children = r.children(op.path(), children),
        ReadResult::Error(_) => {}
    }
}

impl Rename for OpResult {
    fn rename(&mut self, r: &mut Renaming) {
        match self {
            OpResult::Created { path, stat } => {
                path.rename(r);
                stat.rename(r);
            }
            OpResult::DataSet(stat) => stat.rename(r),
            OpResult::Deleted | OpResult::Checked => {}
        }
    }
}

impl Rename for WatchedEvent {
    fn rename(&mut self, r: &mut Renaming) {
        self.path.rename(r);
    }
}

impl Rename for SessionEvent {
    fn rename(&mut self, r: &mut Renaming) {
        if let SessionEvent::Connected { session_id } = self {
            session_id.rename(r);
        }
    }
}
