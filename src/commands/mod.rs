//! One module per subcommand: its arguments and its `run`.

pub mod check;
pub mod explore;
pub mod replay;
pub mod schedule;
pub mod sim;
pub mod sweep;
