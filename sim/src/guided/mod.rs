//! Coverage of many runs, and a search guided by it.
//!
//! - [`tally`]: the abstract states and steps a campaign of runs reached
//!   (`sweep --coverage`), each with the first run that reached it, and the
//!   curve of new states per block of runs.
//! - [`mutate`]: another run near a recorded one, made by changing its
//!   draw tape (a word, a stream cut short, a splice of two tapes, another
//!   runtime seed, a fault struck at one of its requests): any word is a
//!   legal draw, so every mutant is a run of the same world.
//! - [`campaign`]: `zkcheck fuzz`: a corpus of tapes that reached new
//!   client features, mutated and run again beside the scenario's next
//!   seeds (each move made as often as it pays) under one campaign seed,
//!   until a run breaks a property or the budget is spent.

pub mod campaign;
pub mod mutate;
pub mod tally;
