//! The ZooKeeper client vocabulary: what a recipe can say to a ZooKeeper server
//! and what it can hear back. Shared by the recipes, the in-memory server, the
//! model checker and the real-server driver, so all of them speak one language.
//!
//! The names follow ZooKeeper 3.8's Java client (`CreateMode`, `Stat`,
//! `KeeperException.Code`, `WatchedEvent`) so a reader of the seed code finds
//! the same words here.

mod acl;
mod create_mode;
mod error;
mod event;
mod path;
mod path_text;
mod reply;
mod request;
mod stat;

pub use acl::{ipv4, Acl, Acls, AuthId, Perms};
pub use create_mode::CreateMode;
pub use error::ZkError;
pub use event::{EventType, KeeperState, SessionEvent, WatchedEvent};
pub use path::{Path, PathError};
pub use reply::{OpResult, ReadResult, Reply};
pub use request::{AddWatchMode, MultiOp, ReadOp, Request, ANY_VERSION};
pub use stat::{SessionId, Stat, Zxid};

/// What the server answers to one request.
pub type ZkResult = Result<Reply, ZkError>;
