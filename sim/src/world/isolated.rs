//! One run, isolated from the thread that asks for it: tokio's generator
//! seeded by the run, and for application code an OS thread of its own.
//!
//! Why: an application's code may draw from two generators that live on
//! its thread, not in the simulation. A `tokio::select!` without `biased;`
//! starts at a branch drawn from tokio's thread-local generator, seeded
//! once per thread from a process-wide counter; and std's `HashMap` keys
//! are made once per thread (madsim seeds them from the run's seed, but
//! only on a thread where no `HashMap` was made before) and then counted up
//! by every map. On a thread that ran other seeds before, both depend on
//! what ran there, so one seed gave two runs.
//!
//! - Every run is inside `with_seeded_tokio`: a current-thread tokio
//!   runtime built with `rng_seed` from the run's seed (tokio offers it
//!   only with `--cfg tokio_unstable`, which `.cargo/config.toml` sets),
//!   so the branch a `select!` tries first is a function of the seed; the
//!   thread's own generator is back when the run ends.
//! - A run of application code (an async recipe) goes on a fresh OS
//!   thread ([`run_isolated`]), so its `HashMap`s' order is a function of
//!   the seed too. It costs a thread a run (25-75 µs), which zkcheck's own
//!   sans-IO recipes, whose order never depends on a hash, do not pay.
//!
//! Panics: the run's own panic hook state goes with it ([`catch`]): a
//! panic on the run's thread is caught there, its message and location
//! recorded, and raised again on the caller's thread, as if it had
//! happened there. What a caller set up on its thread for a run goes with
//! it: the explorer's tape (moved over and back) and the thread's default
//! `tracing` subscriber (where the application's log lines go).

use std::any::Any;
use std::cell::{Cell, RefCell};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Once;

/// The run thread's stack: the main thread's (a run polls deep futures).
#[cfg(madsim)]
const RUN_THREAD_STACK_BYTES: usize = 8 << 20;

thread_local! {
    /// This thread runs inside [`catch`]: the hook keeps the message.
    static CATCHING: Cell<bool> = const { Cell::new(false) };
    /// The last caught panic's message with its location.
    static CAUGHT: RefCell<Option<String>> = const { RefCell::new(None) };
}

#[cfg(madsim)]
/// Runs `run` (one seed of the world) on a fresh thread of its own;
/// returns what it returns, and raises again on this thread what panicked
/// there. `run` makes the madsim runtime first (madsim seeds the thread's
/// `HashMap` keys when it is the first to use them) and runs it inside
/// `with_seeded_tokio`.
pub fn run_isolated<T: Send>(run: impl FnOnce() -> T + Send) -> T {
    let catching = CATCHING.with(Cell::get);
    let dispatch = tracing::dispatcher::get_default(Clone::clone);
    let tape = crate::world::choice_tape::take();
    let draws = super::draws::take();
    let (outcome, tape, drawn) = std::thread::scope(|scope| {
        std::thread::Builder::new()
            .name("zk-sim run".to_string())
            .stack_size(RUN_THREAD_STACK_BYTES)
            .spawn_scoped(scope, move || {
                CATCHING.with(|c| c.set(catching));
                if let Some(tape) = tape {
                    crate::world::choice_tape::install(tape);
                }
                if let Some(draws) = draws {
                    super::draws::install(draws);
                }
                let run = || match dispatch.is::<tracing::subscriber::NoSubscriber>() {
                    // A scoped default slows every event of every thread.
                    true => run(),
                    false => tracing::dispatcher::with_default(&dispatch, run),
                };
                let outcome = catch_unwind(AssertUnwindSafe(run))
                    .map_err(|payload| (payload, CAUGHT.with(|c| c.borrow_mut().take())));
                let drawn = super::draws::collect();
                (outcome, crate::world::choice_tape::take(), drawn)
            })
            .expect("an OS thread for a run")
            .join()
            .expect("the run thread catches its panics")
    });
    if let Some(tape) = tape {
        crate::world::choice_tape::install(tape);
    }
    if let Some(drawn) = drawn {
        super::draws::give_back(drawn);
    }
    match outcome {
        Ok(value) => value,
        Err((payload, caught)) => {
            CAUGHT.with(|c| *c.borrow_mut() = caught);
            std::panic::resume_unwind(payload)
        }
    }
}

/// Runs `run` inside a current-thread tokio runtime seeded by `seed`: while
/// it runs, `tokio::select!` draws from the runtime's generator. The
/// runtime has no driver and runs no task of its own; the budget is
/// unconstrained, so tokio's cooperative scheduling never makes a
/// simulated task yield.
#[cfg(all(madsim, tokio_unstable))]
pub(crate) fn with_seeded_tokio<T>(seed: u64, run: impl FnOnce() -> T) -> T {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .rng_seed(tokio::runtime::RngSeed::from_bytes(&seed.to_le_bytes()))
        .build()
        .expect("a current-thread tokio runtime without drivers");
    runtime.block_on(tokio::task::unconstrained(async move { run() }))
}

/// Without `--cfg tokio_unstable`, tokio offers no seed: a `select!`
/// without `biased;` draws from the thread's generator.
#[cfg(all(madsim, not(tokio_unstable)))]
pub(crate) fn with_seeded_tokio<T>(_seed: u64, run: impl FnOnce() -> T) -> T {
    run()
}

/// Whether a `select!` without `biased;` is a function of the seed in
/// this build (it is built with `--cfg tokio_unstable`).
pub const SELECT_IS_SEEDED: bool = cfg!(tokio_unstable);

/// Runs `run`; a panic inside it (on this thread, or on the thread of a
/// run it started) comes back as its message and location
/// (`message (at file:line:column)`), and the hook prints nothing unless
/// `RUST_BACKTRACE` is set.
pub fn catch<T>(run: impl FnOnce() -> T) -> Result<T, String> {
    install_hook();
    let was_catching = CATCHING.with(|c| c.replace(true));
    let outcome = catch_unwind(AssertUnwindSafe(run));
    CATCHING.with(|c| c.set(was_catching));
    outcome.map_err(|payload| {
        CAUGHT
            .with(|caught| caught.borrow_mut().take())
            .unwrap_or_else(|| payload_text(payload.as_ref()))
    })
}

fn install_hook() {
    static INSTALL: Once = Once::new();
    INSTALL.call_once(|| {
        let default_hook = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if !CATCHING.with(Cell::get) {
                return default_hook(info);
            }
            let mut text = payload_text(info.payload());
            if let Some(location) = info.location() {
                text.push_str(&format!(" (at {location})"));
            }
            CAUGHT.with(|caught| *caught.borrow_mut() = Some(text));
            if std::env::var_os("RUST_BACKTRACE").is_some() {
                default_hook(info);
            }
        }));
    });
}

/// A panic's message, if it has one.
pub fn payload_text(payload: &(dyn Any + Send)) -> String {
    payload
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_else(|| "a panic without a message".to_string())
}
