//! The ZooKeeper client vocabulary ([`zk`]) and coordination recipes written
//! as sans-IO state machines ([`recipe::Recipe`]), each in an `original`
//! variant faithful to its seed text (bugs included) and a `fixed` variant.
//!
//! Invariant: nothing here depends on an async runtime, a clock, a random
//! source or I/O. Drivers live in `zk-sim`, `zk-models` and `zk-live`.

pub mod observe;
pub mod recipe;
pub mod rename;
pub mod sequence;
pub mod zk;

pub mod barrier;
pub mod curator_lock;
pub mod election;
pub mod lock;
pub mod queue;
pub mod semaphore;
pub mod shared_lock;

pub use observe::{
    check_property_name, Hold, HoldId, Observation, Observe, PropertyNameError,
    RESERVED_PROPERTY_NAMES,
};
pub use recipe::{
    ClientLibrary, FencingToken, FreshWatchers, Input, Outbox, Recipe, Tag, TimerCommand, TimerId,
    Watcher, WatcherId,
};
