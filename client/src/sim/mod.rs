//! The `zookeeper-client` 0.11 API on zkcheck's simulated world (built
//! with `--cfg madsim`).
//!
//! Every [`Client`] is a session of the simulated client whose node the
//! calling task runs on (its `zk_sim::async_recipe::Bridge`): requests go
//! through the world's session layer, server or ensemble and faults, and
//! the oracles judge what the application reports. Signatures are the real
//! crate's, so code written for it compiles unchanged.
//!
//! The types the real crate lets anyone build (errors, stats, events, ACLs,
//! multi results) are its own, re-exported; the others are rebuilt here
//! with the same names and methods. A call the simulation does not cover
//! fails with `Error::UnexpectedError` naming the call (never a panic).
//!
//! Known differences from the real crate:
//! - The session timeout is the world's (`WorldConfig::session_timeout_ms`),
//!   whatever the connector asks for; connection timeout, read-only mode,
//!   detached sessions, fail-eagerly and the server version are accepted
//!   and ignored, and so are the connector's auth packets (`auth` on the
//!   client is simulated).
//! - ACLs, `auth` (digest and ip), `get_acl`, `set_acl` and
//!   `list_auth_users` follow a 3.8 server (`zk_sim::server`'s access
//!   control); every client is `ip:127.0.0.1`. Another auth scheme fails
//!   naming itself (the `AuthFailed` session it gets is not simulated).
//! - `get_config` reads a standalone server's `/zookeeper/config` (empty,
//!   ACL version -1), also on an ensemble.
//! - One live session per simulated client: a second `connect` while the
//!   first session lives fails (`ClaimError::SecondSession`); after an
//!   expiry, `connect` gets the world's next session. Sessions are never
//!   closed when the last handle drops (the world owns them).
//! - `Connector::with_session` binds a new handle to that session if it is
//!   the client's live one (no new connection), else fails SessionExpired.
//! - Not covered (it fails naming the call): `update_ensemble`.
//! - ZooKeeper's own `/zookeeper` subtree is not simulated (but for the
//!   config node): `/` lists no
//!   `zookeeper` child, and `count_descendants_number("/")` is a real
//!   server's less its three nodes there.
//! - `lock` runs the real crate's algorithm on the calls above; Curator's
//!   `{uuid}` is drawn from the session and a run-wide count, not the OS;
//!   its background deletes are simulated tasks on the client's node.
//! - Watch events carry `zxid` -1 (as servers before 3.9 send).
//! - A `PersistentWatcher` pends after handing out `Expired` (the crate
//!   panics); dropping it removes its watch on the client's side only (the
//!   crate also sends removeWatches, which changes nothing a watcher sees).
//! - The connect string is only read for its chroot suffix (`host/app`).

mod client;
mod connector;
mod convert;
mod errors;
mod lock;
mod locking;
mod multi;
mod paths;
mod types;
mod watcher;

pub use client::Client;
pub use connector::Connector;
pub use lock::{LockClient, LockOptions, LockPrefix, OwnedLockClient};
pub use multi::{CheckWriter, MultiReader, MultiWriter};
pub use types::{CreateMode, CreateOptions, CreateSequence, SessionInfo};
pub use upstream::{
    Acl, Acls, AddWatchMode, AuthId, AuthUser, CheckWriteError, EnsembleUpdate, Error, EventType,
    MultiReadResult, MultiWriteError, MultiWriteResult, Permission, SessionId, SessionState, Stat,
    WatchedEvent,
};
pub use watcher::{OneshotWatcher, PersistentWatcher, StateWatcher};
