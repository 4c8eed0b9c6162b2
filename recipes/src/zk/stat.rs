//! Node metadata (`Stat`) and the identifiers it refers to.

use serde::{Deserialize, Serialize};

/// A ZooKeeper transaction id: every write the server commits gets the next one.
pub type Zxid = i64;

/// A session id as the server hands it out. Recipes see it (seed 000 names
/// its lock nodes `x-<sessionId>-`), so simulations draw it from the seed.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, Default,
)]
pub struct SessionId(pub i64);

/// A znode's metadata, field for field ZooKeeper's `Stat`. Times are
/// simulated milliseconds on the server's clock.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
pub struct Stat {
    /// Zxid of the create.
    pub czxid: Zxid,
    /// Zxid of the last data change (the create, or the last set_data).
    pub mzxid: Zxid,
    /// Zxid of the last change to the children list.
    pub pzxid: Zxid,
    pub ctime_ms: i64,
    pub mtime_ms: i64,
    /// Data version: number of set_data calls.
    pub version: i32,
    /// Child version: number of child creates and deletes.
    pub cversion: i32,
    /// ACL version: the number of setACL calls.
    pub aversion: i32,
    /// The owning session for an ephemeral; 0 otherwise. Containers and TTL
    /// nodes also show 0: the server encodes their kind in this field
    /// internally (`EphemeralType`) but hides it from clients
    /// (`DataNode.getClientEphemeralOwner`), as measured on 3.8.0.
    pub ephemeral_owner: i64,
    pub data_length: i32,
    pub num_children: i32,
}
