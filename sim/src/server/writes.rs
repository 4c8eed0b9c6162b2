//! One write op (create, delete, set_data, check) checked the way
//! `PrepRequestProcessor` checks it, in the same order (permissions
//! included), then applied to the tree. Shared by single requests and by
//! the ops of a multi.

use super::access;
use super::node::{Node, NodeKind, MAX_TTL_MS};
use super::shared::Shared;
use super::tree::{Change, DataTree};
use std::collections::BTreeMap;
use zk_recipes::zk::{
    Acls, AuthId, CreateMode, MultiOp, OpResult, Path, Perms, Request, SessionId, ZkError, Zxid,
    ANY_VERSION,
};

/// A write op borrowed from a [`Request`] or a [`MultiOp`].
#[derive(Clone, Copy, Debug)]
pub(crate) enum WriteOp<'a> {
    Create {
        path: &'a Path,
        data: &'a [u8],
        mode: CreateMode,
        acl: &'a Acls,
    },
    Delete {
        path: &'a Path,
        version: i32,
    },
    SetData {
        path: &'a Path,
        data: &'a [u8],
        version: i32,
    },
    Check {
        path: &'a Path,
        version: i32,
    },
}

impl<'a> WriteOp<'a> {
    /// The write op of a single request; `None` for reads, sync and multi.
    pub fn of_request(request: &'a Request) -> Option<WriteOp<'a>> {
        Some(match request {
            Request::Create {
                path,
                data,
                mode,
                acl,
            } => WriteOp::Create {
                path,
                data,
                mode: *mode,
                acl,
            },
            Request::Delete { path, version } => WriteOp::Delete {
                path,
                version: *version,
            },
            Request::SetData {
                path,
                data,
                version,
            } => WriteOp::SetData {
                path,
                data,
                version: *version,
            },
            Request::Check { path, version } => WriteOp::Check {
                path,
                version: *version,
            },
            _ => return None,
        })
    }

    pub fn of_multi_op(op: &'a MultiOp) -> WriteOp<'a> {
        match op {
            MultiOp::Create {
                path,
                data,
                mode,
                acl,
            } => WriteOp::Create {
                path,
                data,
                mode: *mode,
                acl,
            },
            MultiOp::Delete { path, version } => WriteOp::Delete {
                path,
                version: *version,
            },
            MultiOp::SetData {
                path,
                data,
                version,
            } => WriteOp::SetData {
                path,
                data,
                version: *version,
            },
            MultiOp::Check { path, version } => WriteOp::Check {
                path,
                version: *version,
            },
        }
    }
}

/// The transaction a request runs in.
pub(crate) struct WriteContext {
    pub session: SessionId,
    pub zxid: Zxid,
    pub time_ms: i64,
    pub extended_types_enabled: bool,
    /// The identities the session added (`addAuth`), for the permission
    /// checks.
    pub auth: Vec<AuthId>,
    /// Sequence counters as PrepRequestProcessor's pending change records
    /// see them, where they differ from the tree: after i32::MAX the tree's
    /// counter stays put but the next op of the same multi sees i32::MIN.
    pub prepared_counters: BTreeMap<Path, i32>,
}

/// Checks and applies one op; the change is `None` for a check. The tree
/// is written only once the op passed its checks, so a refused op does not
/// copy a tree that the model checker's states share.
pub(crate) fn apply(
    tree: &mut Shared<DataTree>,
    op: WriteOp<'_>,
    ctx: &mut WriteContext,
) -> Result<(OpResult, Option<Change>), ZkError> {
    match op {
        WriteOp::Create {
            path,
            data,
            mode,
            acl,
        } => {
            let (change, result) = create(tree, path, data, mode, acl, ctx)?;
            Ok((result, Some(change)))
        }
        WriteOp::Delete { path, version } => {
            Ok((OpResult::Deleted, Some(delete(tree, path, version, ctx)?)))
        }
        WriteOp::SetData {
            path,
            data,
            version,
        } => {
            let change = set_data(tree, path, data, version, ctx)?;
            let stat = tree.get(path).expect("just set").stat();
            Ok((OpResult::DataSet(stat), Some(change)))
        }
        WriteOp::Check { path, version } => {
            check(tree, path, version, ctx)?;
            Ok((OpResult::Checked, None))
        }
    }
}

/// The name suffix of a sequential create: Java's `%010d` (`-000000001` for -1).
pub(crate) fn sequence_suffix(counter: i32) -> String {
    format!("{counter:010}")
}

fn create(
    tree: &mut Shared<DataTree>,
    requested: &Path,
    data: &[u8],
    mode: CreateMode,
    acl: &Acls,
    ctx: &mut WriteContext,
) -> Result<(Change, OpResult), ZkError> {
    check_create_mode(mode, ctx.extended_types_enabled)?;
    let acl = access::fixup(acl, &ctx.auth)?;
    let parent = requested.parent().unwrap_or_else(Path::root);
    let parent_node = tree.get(&parent).ok_or(ZkError::NoNode)?;
    access::check(&parent_node.acl, Perms::CREATE, &ctx.auth)?;
    let committed = parent_node.child_creates;
    let counter = ctx
        .prepared_counters
        .get(&parent)
        .copied()
        .unwrap_or(committed);
    let path = created_path(requested, mode, counter)?;
    if tree.contains(&path) {
        return Err(ZkError::NodeExists);
    }
    if matches!(parent_node.kind, NodeKind::Ephemeral { .. }) {
        return Err(ZkError::NoChildrenForEphemerals);
    }
    let next = counter.wrapping_add(1);
    if next > committed {
        ctx.prepared_counters.remove(&parent);
    } else {
        ctx.prepared_counters.insert(parent.clone(), next);
    }
    let node = Node::new(
        data.to_vec(),
        NodeKind::of_create(mode, ctx.session),
        acl,
        ctx.zxid,
        ctx.time_ms,
    );
    let stat = node.stat();
    let change = tree.create_node(path.clone(), parent, node, next, ctx.zxid);
    Ok((change, OpResult::Created { path, stat }))
}

/// PrepRequestProcessor.validateCreateRequest: TTL modes need extended types
/// and a TTL in `1..=MAX_TTL_MS`.
fn check_create_mode(mode: CreateMode, extended_types_enabled: bool) -> Result<(), ZkError> {
    match mode.ttl_ms() {
        Some(_) if !extended_types_enabled => Err(ZkError::Unimplemented),
        Some(ttl_ms) if !(1..=MAX_TTL_MS).contains(&ttl_ms) => Err(ZkError::BadArguments),
        _ => Ok(()),
    }
}

/// The path a create makes: the requested one, plus the counter if
/// sequential; a non-sequential path ending with `/` is BadArguments.
fn created_path(requested: &Path, mode: CreateMode, counter: i32) -> Result<Path, ZkError> {
    if mode.is_sequential() {
        Path::new(format!("{requested}{}", sequence_suffix(counter)))
            .map_err(|_| ZkError::BadArguments)
    } else if requested.ends_with_slash() {
        Err(ZkError::BadArguments)
    } else {
        Ok(requested.clone())
    }
}

fn delete(
    tree: &mut Shared<DataTree>,
    path: &Path,
    version: i32,
    ctx: &WriteContext,
) -> Result<Change, ZkError> {
    if path.is_root() {
        return Err(ZkError::BadArguments);
    }
    let parent = path.parent().expect("not the root");
    let parent_node = tree.get(&parent).ok_or(ZkError::NoNode)?;
    access::check(&parent_node.acl, Perms::DELETE, &ctx.auth)?;
    let node = tree.get(path).ok_or(ZkError::NoNode)?;
    check_version(node.version, version)?;
    if !node.children.is_empty() {
        return Err(ZkError::NotEmpty);
    }
    Ok(tree.delete_node(path, ctx.zxid))
}

fn set_data(
    tree: &mut Shared<DataTree>,
    path: &Path,
    data: &[u8],
    version: i32,
    ctx: &WriteContext,
) -> Result<Change, ZkError> {
    if path.ends_with_slash() {
        return Err(ZkError::BadArguments);
    }
    let node = tree.get(path).ok_or(ZkError::NoNode)?;
    access::check(&node.acl, Perms::WRITE, &ctx.auth)?;
    check_version(node.version, version)?;
    let next_version = node.version.wrapping_add(1);
    Ok(tree.set_data(path, data.to_vec(), next_version, ctx.zxid, ctx.time_ms))
}

fn check(tree: &DataTree, path: &Path, version: i32, ctx: &WriteContext) -> Result<(), ZkError> {
    if path.ends_with_slash() {
        return Err(ZkError::BadArguments);
    }
    let node = tree.get(path).ok_or(ZkError::NoNode)?;
    access::check(&node.acl, Perms::READ, &ctx.auth)?;
    check_version(node.version, version)
}

/// setACL: the path, the new ACL made concrete, the node, ADMIN on it,
/// its ACL version; the ACL version moves, no other stat field does.
pub(crate) fn set_acl(
    tree: &mut Shared<DataTree>,
    path: &Path,
    acl: &Acls,
    version: i32,
    ctx: &WriteContext,
) -> Result<zk_recipes::zk::Stat, ZkError> {
    if path.ends_with_slash() {
        return Err(ZkError::BadArguments);
    }
    let acl = access::fixup(acl, &ctx.auth)?;
    let node = tree.get(path).ok_or(ZkError::NoNode)?;
    access::check(&node.acl, Perms::ADMIN, &ctx.auth)?;
    check_version(node.aversion, version)?;
    let aversion = node.aversion.wrapping_add(1);
    let node = tree.get_mut(path).expect("checked above");
    node.acl = acl;
    node.aversion = aversion;
    Ok(node.stat())
}

/// PrepRequestProcessor.checkAndIncVersion's check.
fn check_version(current: i32, expected: i32) -> Result<(), ZkError> {
    if expected == ANY_VERSION || expected == current {
        Ok(())
    } else {
        Err(ZkError::BadVersion)
    }
}
