//! Exclusive lock: ZooKeeper's WriteLock recipe (seed 000), `original` and `fixed`.
