//! The client session layer, as the Java ZooKeeper client behaves: pending
//! request FIFO, watch tables, state events to every watcher, watch
//! re-registration on reconnect. Shared by the stepper and the madsim world.
