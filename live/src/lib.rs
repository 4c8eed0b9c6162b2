//! The real-ZooKeeper driver: the vocabulary of `zk_recipes::zk` executed on a
//! real ZooKeeper 3.8 server through the `zookeeper-client` crate.
