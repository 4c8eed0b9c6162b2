//! Barriers (seed 001 tutorial Barrier and the fixed double barrier with a ready node).
