//! A synchronous driver for unit tests: steps recipe machines against the
//! in-memory server in an order the test chooses, with faults at chosen steps.
