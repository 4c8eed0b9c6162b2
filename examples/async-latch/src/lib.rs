//! A user's async recipes, plain code against the `zookeeper-client`
//! crate: a leader latch (`latch.rs`), a mutex in the shape of ZooKeeper's
//! `WriteLock` (`mutex.rs`), a semaphore (`semaphore.rs`), a mutex from
//! the crate's own lock (`crate_lock.rs`) and a lock on a children cache
//! kept by a persistent recursive watch (`cache.rs`, `cache_lock.rs`); and
//! zkcheck's glue around them (`check.rs`).

pub mod cache;
pub mod cache_lock;
pub mod crate_lock;
pub mod latch;
pub mod mutex;
pub mod semaphore;

pub mod check;
