//! The constructor both seed queues share, step for step: seed 000's
//! `DistributedQueue(zookeeper, dir, acl)` and seed 001's `Queue(address,
//! name)` ask `exists(dir)`, create `dir` PERSISTENT if it is missing, and
//! return whatever happens (errors are logged or printed). A call the
//! application makes before the constructor returned waits for it.

use super::QueueOutcome;
use crate::zk::Acls;
use crate::zk::{CreateMode, Path, Reply, Request, ZkResult};
use crate::{Outbox, Tag};

/// `exists(dir, false)`.
pub(super) const INIT_EXISTS: Tag = Tag(1);
/// `create(dir, new byte[0], acl, PERSISTENT)`.
pub(super) const INIT_CREATE: Tag = Tag(2);

/// Where the constructor is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(super) enum SeedConstructor {
    NotConnected,
    CheckingDir,
    CreatingDir,
    Returned,
}

impl SeedConstructor {
    /// The constructor runs once the session is first connected.
    pub(super) fn on_connected(&mut self, dir: &Path, out: &mut Outbox<QueueOutcome>) {
        if *self == SeedConstructor::NotConnected {
            // seed 000 DistributedQueue(): Stat s = zookeeper.exists(dir, false)
            // seed 001 Queue(): Stat s = zk.exists(root, false)
            *self = SeedConstructor::CheckingDir;
            let request = Request::Exists {
                path: dir.clone(),
                watch: false,
            };
            out.send(INIT_EXISTS, request);
        }
    }

    /// True while a reply belongs to the constructor.
    pub(super) fn is_running(self) -> bool {
        matches!(
            self,
            SeedConstructor::CheckingDir | SeedConstructor::CreatingDir
        )
    }

    pub(super) fn has_returned(self) -> bool {
        self == SeedConstructor::Returned
    }

    /// The constructor's reply; true when the constructor returns with it.
    pub(super) fn on_reply(
        &mut self,
        dir: &Path,
        tag: Tag,
        result: ZkResult,
        out: &mut Outbox<QueueOutcome>,
    ) -> bool {
        match (tag, result) {
            (INIT_EXISTS, Ok(Reply::Exists(None))) => {
                // seed 000: if (s == null) zookeeper.create(dir, ..., PERSISTENT)
                // seed 001: if (s == null) zk.create(root, ..., PERSISTENT)
                *self = SeedConstructor::CreatingDir;
                let request = Request::Create {
                    path: dir.clone(),
                    data: Vec::new(),
                    mode: CreateMode::Persistent,
                    acl: Acls::Open,
                };
                out.send(INIT_CREATE, request);
                false
            }
            // Any other answer, errors included (logged, printed), returns.
            (INIT_EXISTS | INIT_CREATE, _) => {
                *self = SeedConstructor::Returned;
                true
            }
            _ => false, // not a constructor reply: ignored
        }
    }
}
