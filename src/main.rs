//! `zkcheck`: the command line of the ZooKeeper recipe checker, on the
//! built-in recipes. A user's own binary is the same one line with its own
//! registry (see `zkcheck::main_with` and docs/own-recipe.md).

use std::process::ExitCode;

fn main() -> ExitCode {
    zkcheck::main_with(zkcheck::Registry::builtin())
}
