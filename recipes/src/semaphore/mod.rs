//! Semaphore with leases (InterProcessSemaphoreV2 semantics, seed 002).
