//! Shared (read/write) lock as in the ZooKeeper recipes documentation.
