//! A panic inside a simulated run is an internal error of zkcheck (a bug
//! in the harness, or in code it runs), never a property violation of the
//! recipe under test: every command that runs seeds (`sim`, `sweep`,
//! `replay`, `bugs`, and `zkcheck::testing`) catches it around the run,
//! counts it apart from violations and exits [`EXIT_INTERNAL_ERROR`] (3)
//! unless a violation was also found (1 wins).
//!
//! The panic message: the default panic hook would print every caught
//! panic to stderr (a sweep with a thousand panicking seeds, a thousand
//! blocks of noise). While a run is caught on a thread, the hook installed
//! here keeps the message and its location for the command to print once,
//! with the seed and the command that reruns it, and prints nothing;
//! with `RUST_BACKTRACE` set it also lets the default hook print (with
//! the backtrace). Panics outside a caught run are printed as usual.
//! madsim itself prints one line per panic in a simulated task (`context:
//! node=.. task=.. (spawned at ..)`) before the panic reaches the hook:
//! that line stays, and is the only stderr trace of a caught panic.
//!
//! [`EXIT_INTERNAL_ERROR`]: super::common::EXIT_INTERNAL_ERROR

use super::seed_commands::SeedCommands;
use zk_sim::scenario::Scenario;

/// Runs `run`; a panic inside it (on this thread or on the thread of a
/// run it started) comes back as its message and location
/// (`message (at file:line:column)`).
pub fn catch<T>(run: impl FnOnce() -> T) -> Result<T, String> {
    zk_sim::world::isolated::catch(run)
}

/// The command that reruns one seed of a scenario on its own (`sim`,
/// which reports the internal error again), quoted so it pastes.
pub fn rerun_command(program: &str, scenario: &Scenario, seed: u64) -> String {
    SeedCommands::of(program, scenario).rerun(seed)
}

/// The lines that report one internal error: what, the seed, the panic
/// and how to rerun it.
pub fn describe(seed: u64, panic: &str, rerun: &str) -> String {
    format!(
        "INTERNAL ERROR of zkcheck (seed {seed}): the run panicked: {panic}\n  \
         {}\n  \
         rerun: {rerun}   (RUST_BACKTRACE=1 for a backtrace)",
        cause(panic)
    )
}

/// What a panic says about where the fault lies: an OS thread started by
/// the code under test (madsim refuses one inside a simulated run, its
/// scheduling not being the seed's), or a bug of zkcheck's.
fn cause(panic: &str) -> &'static str {
    // std asserts that pthread_attr_init succeeded, which madsim makes
    // fail inside a simulation; an older std says "failed to spawn thread".
    let std_thread = panic.contains("/std/src/sys/") && panic.contains("thread");
    if std_thread || panic.contains("failed to spawn thread") {
        "the code under test started an OS thread inside a simulated run, which the simulator \
         refuses (its scheduling is not the seed's): use a task (`tokio::spawn` from \
         madsim-tokio) and simulated time (`tokio::time`) instead"
    } else {
        "this is a bug in zkcheck (or in code it runs), not a property violation of the recipe"
    }
}
