//! zkcheck's glue: the latch registered as a leader election, its workload
//! and what the application reports to the oracles.

use crate::latch::LeaderLatch;
use zkcheck::asynchronous::{workload, Context};
use zkcheck::{RecipeEntry, RecipeKind, Registry, Variant};
use zookeeper_client::{Client, SessionState};

/// The built-in recipes and `latch` with its three variants.
pub fn registry() -> Registry {
    let variant = |name: &str, about: &str, buggy: bool| {
        let run = workload(move |client, ctx| lead(client, ctx, buggy, false));
        Variant::asynchronous(name, about, RecipeKind::Election, run)
    };
    let stubborn = workload(|client, ctx| lead(client, ctx, false, true));
    Registry::builtin().with(
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
