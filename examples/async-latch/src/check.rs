//! zkcheck's glue: the latch registered as a leader election, the mutex
//! as a lock and the semaphore as a semaphore, their workloads and what
//! the application reports to the oracles.

use crate::latch::LeaderLatch;
use crate::mutex::{Mistakes, Mutex};
use crate::semaphore::Semaphore;
use zkcheck::asynchronous::{workload, Context};
use zkcheck::{RecipeEntry, RecipeKind, Registry, Variant};
use zookeeper_client::{Client, SessionState};

/// The leases the application's semaphore grants (its configuration; a
/// scenario's `max_leases` tells the oracle the same number).
pub const LEASES: usize = 2;

/// The built-in recipes, `latch` with its three variants, `mutex` with
/// its four and `leases` with its two.
pub fn registry() -> Registry {
    let variant = |name: &str, about: &str, buggy: bool| {
        let run = workload(move |client, ctx| lead(client, ctx, buggy, false));
        Variant::asynchronous(name, about, RecipeKind::Election, run)
    };
    let stubborn = workload(|client, ctx| lead(client, ctx, false, true));
    Registry::builtin()
        .with(
            RecipeEntry::new("latch", RecipeKind::Election, "/latch")
                .variant(variant(
                    "buggy",
                    "waits on a predecessor already gone",
                    true,
                ))
                .variant(variant("fixed", "re-reads the candidates instead", false))
                .variant(Variant::asynchronous(
                    "stubborn",
                    "keeps leading while disconnected, until it hears its session expired",
                    RecipeKind::Election,
                    stubborn,
                )),
        )
        .with(mutex())
        .with(leases())
}

/// The mutex: fixed, and with each of the original recipe's bugs.
fn mutex() -> RecipeEntry {
    let variant = |name: &str, about: &str, mistakes: Mistakes| {
        let run = workload(move |client, ctx| lock_cycles(client, ctx, mistakes));
        Variant::asynchronous(name, about, RecipeKind::ExclusiveLock, run)
    };
    let none = Mistakes::default();
    RecipeEntry::new("mutex", RecipeKind::ExclusiveLock, "/mutex")
        .variant(variant(
            "by_name",
            "orders the contenders by name: the session id before the sequence",
            Mistakes {
                sort_by_name: true,
                ..none
            },
        ))
        .variant(variant(
            "blind_retry",
            "creates again after a lost reply without looking for its node",
            Mistakes {
                blind_retry: true,
                ..none
            },
        ))
        .variant(variant(
            "release_once",
            "does not retry a lost delete: its node stays",
            Mistakes {
                release_once: true,
                ..none
            },
        ))
        .variant(variant(
            "fixed",
            "orders by sequence, recovers its node, retries its delete",
            none,
        ))
}

/// The semaphore: `buggy` counts its leases, then creates its own.
fn leases() -> RecipeEntry {
    let variant = |name: &str, about: &str, buggy: bool| {
        let run = workload(move |client, ctx| hold_leases(client, ctx, buggy));
        Variant::asynchronous(name, about, RecipeKind::Semaphore, run)
    };
    RecipeEntry::new("leases", RecipeKind::Semaphore, "/leases")
        .variant(variant(
            "buggy",
            "counts the leases, then creates its own",
            true,
        ))
        .variant(variant(
            "fixed",
            "creates its node, then holds while among the first",
            false,
        ))
}

/// Runs for leadership, leads for the hold time (or until the session is
/// in doubt), steps down; `cycles` times.
async fn lead(mut client: Client, ctx: Context, buggy: bool, stubborn: bool) {
    for cycle in ctx.cycles() {
        if client.state() == SessionState::Expired {
            client = Client::connect(ctx.cluster()).await.expect("a new session");
        }
        let id = format!("c{}-{cycle}", ctx.index());
        let mut latch = LeaderLatch::new(client.clone(), ctx.path(), &id, buggy);
        if stubborn {
            latch = latch.keep_leading_while_disconnected();
        }
        ctx.acquiring();
        match latch.acquire().await {
            Ok(token) => ctx.hold_fenced(token, latch.suspended()).await,
            Err(error) => ctx.failed(error.to_string()),
        }
        let _ = latch.release().await;
        ctx.released();
        ctx.think().await;
    }
}

/// Takes a lease, holds it for the hold time, gives it back; `cycles`
/// times.
async fn hold_leases(client: Client, ctx: Context, buggy: bool) {
    let mut semaphore = Semaphore::new(client, ctx.path(), LEASES);
    if buggy {
        semaphore = semaphore.count_then_create();
    }
    for _ in ctx.cycles() {
        ctx.acquiring();
        match semaphore.acquire().await {
            Ok(lease) => {
                ctx.acquired_leases(1, lease.sequence);
                ctx.sleep_ms(ctx.draw_ms(ctx.workload().hold_ms)).await;
                ctx.releasing();
                let _ = semaphore.release(lease).await;
                ctx.released();
            }
            Err(error) => ctx.failed(error.to_string()),
        }
        ctx.think().await;
    }
}

/// Takes the lock, holds it for the hold time, releases it; `cycles`
/// times.
async fn lock_cycles(mut client: Client, ctx: Context, mistakes: Mistakes) {
    for _ in ctx.cycles() {
        if client.state() == SessionState::Expired {
            client = Client::connect(ctx.cluster()).await.expect("a new session");
        }
        let mut mutex = Mutex::new(client.clone(), ctx.path(), mistakes);
        ctx.acquiring();
        match mutex.acquire().await {
            Ok(token) => {
                ctx.acquired(token);
                ctx.sleep_ms(ctx.draw_ms(ctx.workload().hold_ms)).await;
                ctx.releasing();
            }
            Err(error) => ctx.failed(error.to_string()),
        }
        let _ = mutex.release().await;
        ctx.released();
        ctx.think().await;
    }
}
