//! zkcheck's glue: the latch registered as a leader election, the mutex
//! and the baton as locks and the counter semaphore as a semaphore; their
//! workloads and what the application reports to the oracles.

use crate::baton::Baton;
use crate::counter_semaphore::CounterSemaphore;
use crate::lease_mutex::LeaseMutex;
use crate::session_latch::SessionLatch;
use zkcheck::asynchronous::{workload, Context};
use zkcheck::{RecipeEntry, RecipeKind, Registry, Variant};
use zookeeper_client::{Client, SessionState};

/// The leases the counter semaphore grants (a scenario's `max_leases`
/// tells the oracle the same number).
pub const LEASES: u64 = 2;

/// The built-in recipes and this crate's four, each with a buggy and a
/// fixed variant.
pub fn registry() -> Registry {
    let latch = |name: &str, about: &str, buggy: bool| {
        let run = workload(move |client, ctx| lead(client, ctx, buggy));
        Variant::asynchronous(name, about, RecipeKind::Election, run)
    };
    let mutex = |name: &str, about: &str, buggy: bool| {
        let run = workload(move |client, ctx| lock_cycles(client, ctx, buggy));
        Variant::asynchronous(name, about, RecipeKind::ExclusiveLock, run)
    };
    let semaphore = |name: &str, about: &str, buggy: bool| {
        let run = workload(move |client, ctx| lease_cycles(client, ctx, buggy));
        Variant::asynchronous(name, about, RecipeKind::Semaphore, run)
    };
    let baton = |name: &str, about: &str, buggy: bool| {
        let run = workload(move |client, ctx| baton_cycles(client, ctx, buggy));
        Variant::asynchronous(name, about, RecipeKind::ExclusiveLock, run)
    };
    Registry::builtin()
        .with(
            RecipeEntry::new("session_latch", RecipeKind::Election, "/latch")
                .variant(latch(
                    "recreate_after_loss",
                    "a new node after a connection loss",
                    true,
                ))
                .variant(latch("fixed", "keeps its node while it is there", false)),
        )
        .with(
            RecipeEntry::new("lease_mutex", RecipeKind::ExclusiveLock, "/mutex")
                .variant(mutex(
                    "ignores_session",
                    "holds on through a disconnect",
                    true,
                ))
                .variant(mutex(
                    "fixed",
                    "stops holding when its session is in doubt",
                    false,
                )),
        )
        .with(
            RecipeEntry::new("counter_semaphore", RecipeKind::Semaphore, "/sem")
                .variant(semaphore("unversioned", "writes the counter blindly", true))
                .variant(semaphore(
                    "fixed",
                    "writes the counter at the version read",
                    false,
                )),
        )
        .with(
            RecipeEntry::new("baton", RecipeKind::ExclusiveLock, "/baton")
                .variant(baton(
                    "read_then_watch",
                    "reads, then watches: two requests",
                    true,
                ))
                .variant(baton("fixed", "reads and watches in one request", false)),
        )
}

/// A new session when the last one expired.
async fn alive(client: Client, ctx: &Context) -> Client {
    match client.state() {
        SessionState::Expired => Client::connect(ctx.cluster()).await.expect("a new session"),
        _ => client,
    }
}

/// Runs for leadership, leads for the hold time, steps down; `cycles` times.
async fn lead(mut client: Client, ctx: Context, buggy: bool) {
    for cycle in ctx.cycles() {
        client = alive(client, &ctx).await;
        let id = format!("c{}-{cycle}", ctx.index());
        let mut latch = SessionLatch::new(client.clone(), ctx.path(), &id, buggy);
        ctx.acquiring();
        match latch.acquire().await {
            Ok(token) => {
                ctx.became_leader(token);
                ctx.sleep_ms(ctx.draw_ms(ctx.workload().hold_ms)).await;
                ctx.releasing();
            }
            Err(error) => ctx.failed(error.to_string()),
        }
        let _ = latch.release().await;
        ctx.released();
        ctx.think().await;
    }
}

/// Takes the mutex, holds it, releases it; `cycles` times. The buggy
/// holder holds for the hold time whatever its session does.
async fn lock_cycles(mut client: Client, ctx: Context, ignores_session: bool) {
    for cycle in ctx.cycles() {
        client = alive(client, &ctx).await;
        let id = format!("c{}-{cycle}", ctx.index());
        let mut mutex = LeaseMutex::new(client.clone(), ctx.path(), &id);
        ctx.acquiring();
        match mutex.acquire().await {
            Ok(token) if ignores_session => {
                ctx.acquired(token);
                ctx.sleep_ms(ctx.draw_ms(ctx.workload().hold_ms)).await;
                ctx.releasing();
            }
            Ok(token) => ctx.hold_fenced(token, mutex.suspended()).await,
            Err(error) => ctx.failed(error.to_string()),
        }
        let _ = mutex.release().await;
        ctx.released();
        ctx.think().await;
    }
}

/// Takes a lease, holds it, gives it back; `cycles` times.
async fn lease_cycles(client: Client, ctx: Context, unversioned: bool) {
    let semaphore = CounterSemaphore::new(client, ctx.path(), LEASES, unversioned);
    if let Err(error) = semaphore.prepare().await {
        ctx.failed(error.to_string());
        return;
    }
    for _ in ctx.cycles() {
        ctx.acquiring();
        match semaphore.acquire().await {
            Ok(token) => {
                ctx.acquired_leases(1, token);
                ctx.sleep_ms(ctx.draw_ms(ctx.workload().hold_ms)).await;
                ctx.releasing();
                let _ = semaphore.release().await;
                ctx.released();
            }
            Err(error) => ctx.failed(error.to_string()),
        }
        ctx.think().await;
    }
}

/// Takes the baton, holds it, gives it back; `cycles` times.
async fn baton_cycles(client: Client, ctx: Context, read_then_watch: bool) {
    let id = format!("c{}", ctx.index());
    let baton = Baton::new(client, ctx.path(), &id, read_then_watch);
    if let Err(error) = baton.prepare().await {
        ctx.failed(error.to_string());
        return;
    }
    for _ in ctx.cycles() {
        ctx.acquiring();
        match baton.acquire().await {
            Ok(token) => {
                ctx.acquired(token);
                ctx.sleep_ms(ctx.draw_ms(ctx.workload().hold_ms)).await;
                ctx.releasing();
                let _ = baton.release().await;
                ctx.released();
            }
            Err(error) => ctx.failed(error.to_string()),
        }
        ctx.think().await;
    }
}
