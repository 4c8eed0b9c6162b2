//! Helpers shared by the recipe test binaries.

#[cfg(madsim)]
pub mod ensemble_world;
pub mod random_walk;
#[cfg(madsim)]
pub mod trace_lines;
