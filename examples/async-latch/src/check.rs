//! zkcheck's glue: the latch registered as a leader election, the mutex,
//! the crate's own lock and the cache's lock as locks and the semaphore as
//! a semaphore,
//! their workloads and what the application reports to the oracles.

use crate::cache::Staleness;
use crate::cache_lock::CacheLock;
use crate::crate_lock::{self, CrateLock, NotAcquired};
use crate::latch::LeaderLatch;
use crate::mutex::{Mistakes, Mutex};
use crate::semaphore::Semaphore;
use zkcheck::asynchronous::{workload, Context};
use zkcheck::{RecipeEntry, RecipeKind, Registry, Variant};
use zookeeper_client::{Client, SessionState};

/// The leases the application's semaphore grants (its configuration; a
/// scenario's `max_leases` tells the oracle the same number).
pub const LEASES: usize = 2;

/// How long the `timed` crate lock waits before it gives a contention up.
pub const LOCK_PATIENCE_MS: u64 = 200;

/// The built-in recipes, `latch` with its three variants, `mutex` with
/// its four, `leases`, `crate_lock` and `cache_lock` with two each.
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
        .with(crate_lock())
        .with(cache_lock())
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

/// The crate's own lock (`Client::lock`): `timed` gives a contention up
/// after [`LOCK_PATIENCE_MS`] by dropping it, `waits` waits as long as it
/// takes.
fn crate_lock() -> RecipeEntry {
    let variant = |name: &str, about: &str, patience_ms: Option<u64>| {
        let run = workload(move |client, ctx| crate_lock_cycles(client, ctx, patience_ms));
        Variant::asynchronous(name, about, RecipeKind::ExclusiveLock, run)
    };
    RecipeEntry::new("crate_lock", RecipeKind::ExclusiveLock, "/crate-lock")
        .variant(variant(
            "timed",
            "gives a contention up after 200 ms by dropping it (the crate leaves its node when the create's reply is awaited)",
            Some(LOCK_PATIENCE_MS),
        ))
        .variant(variant(
            "waits",
            "waits as long as it takes: nothing is dropped mid-contention",
            None,
        ))
}

/// The lock on a children cache kept by a persistent recursive watch:
/// `trusting` never reads the directory again after a connection loss.
fn cache_lock() -> RecipeEntry {
    let variant = |name: &str, about: &str, staleness: Staleness| {
        let run = workload(move |client, ctx| cache_lock_cycles(client, ctx, staleness));
        Variant::asynchronous(name, about, RecipeKind::ExclusiveLock, run)
    };
    RecipeEntry::new("cache_lock", RecipeKind::ExclusiveLock, "/cache-lock")
        .variant(variant(
            "trusting",
            "trusts its persistent watch through a connection loss: a holder that left meanwhile stays in its cache",
            Staleness::Trusted,
        ))
        .variant(variant(
            "fixed",
            "reads the directory again after every reconnect",
            Staleness::Rebuilt,
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

/// Takes the crate's lock (giving it up after `patience_ms`, if any),
/// holds it for the hold time, drops it (the crate deletes the node in the
/// background); `cycles` times.
async fn crate_lock_cycles(mut client: Client, ctx: Context, patience_ms: Option<u64>) {
    for _ in ctx.cycles() {
        if client.state() == SessionState::Expired {
            client = Client::connect(ctx.cluster()).await.expect("a new session");
        }
        let lock = CrateLock::new(client.clone(), ctx.path());
        ctx.acquiring();
        let acquired = match patience_ms {
            Some(ms) => lock.acquire_unless(ctx.sleep_ms(ms)).await,
            None => lock.acquire().await,
        };
        match acquired {
            Ok(held) => {
                ctx.acquired(crate_lock::token(&held));
                ctx.sleep_ms(ctx.draw_ms(ctx.workload().hold_ms)).await;
                ctx.releasing();
                drop(held);
            }
            Err(NotAcquired::Failed(error)) => ctx.failed(error.to_string()),
            Err(NotAcquired::GaveUp) => ctx.failed(format!("gave up after {LOCK_PATIENCE_MS} ms")),
        }
        ctx.released();
        ctx.think().await;
    }
}

/// Takes the cache's lock, holds it for the hold time, releases it;
/// `cycles` times.
async fn cache_lock_cycles(mut client: Client, ctx: Context, staleness: Staleness) {
    for cycle in ctx.cycles() {
        if client.state() == SessionState::Expired {
            client = Client::connect(ctx.cluster()).await.expect("a new session");
        }
        let id = format!("c{}-{cycle}", ctx.index());
        let mut lock = CacheLock::new(client.clone(), ctx.path(), &id, staleness);
        ctx.acquiring();
        match lock.acquire().await {
            Ok(token) => {
                ctx.acquired(token);
                ctx.sleep_ms(ctx.draw_ms(ctx.workload().hold_ms)).await;
                ctx.releasing();
            }
            Err(error) => ctx.failed(error.to_string()),
        }
        let _ = lock.release().await;
        ctx.released();
        ctx.think().await;
    }
}
