//! Helpers shared by the recipe test binaries.

pub mod random_walk;
