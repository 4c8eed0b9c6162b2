//! Distributed queues (seed 000 DistributedQueue, seed 001 tutorial Queue) and the fixed exactly-once queue.
