//! Async recipes: a user's own async code, written against a ZooKeeper
//! client library (the `zookeeper-client` crate), run unchanged in the
//! simulated world. Part of the world (the bridge is how an async client
//! reaches it); its users name it `crate::async_recipe`.
//!
//! The simulated client crate (`client/`, `zkcheck-zookeeper-client`) sits
//! on a [`Bridge`] per client: its requests go through the same session
//! layer, server or ensemble, faults and oracles as every sans-IO recipe's,
//! as the calls of a pass-through machine ([`ApiRecipe`]). The application
//! tells the oracles what it saw through its [`Context`].
//!
//! ```text
//! user's async fn(Client, Context)      (unchanged code + observation calls)
//!   -> zkcheck-zookeeper-client         (the crate's API; futures, watchers)
//!   -> Bridge                           (replies, watch events, session states by id)
//!   -> ClientSession<ApiRecipe>         (the session layer: the crate's rules)
//!   -> the world: server/ensemble, faults, oracles, trace
//! ```
//!
//! An async variant is registered with [`AsyncWorkload`] through
//! `SimVariant::asynchronous` (and the models registry's door).

#[cfg(madsim)]
mod bridge;
mod context;
mod recipe;

#[cfg(madsim)]
pub(crate) use bridge::forget_bridges;
#[cfg(madsim)]
pub use bridge::{Awaited, Bridge, ClaimError, PersistentEvents, Reply, Ticket, WatchEvent};
pub use context::{Context, Sleep, World};
pub use recipe::{ApiCall, ApiOutcome, ApiRecipe};

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

/// A registered async workload: what each client runs, given its context.
pub type AsyncWorkload = Arc<dyn Fn(Context) -> AsyncRun + Send + Sync>;

/// One client's run of an async workload.
pub type AsyncRun = Pin<Box<dyn Future<Output = ()> + Send>>;
