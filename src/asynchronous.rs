//! Async recipes: an application's own async code against the
//! `zookeeper-client` crate, checked unchanged.
//!
//! The application's crate depends on `zookeeper-client` under zkcheck's
//! package (`zookeeper-client = { package = "zkcheck-zookeeper-client", .. }`)
//! and on `tokio` under madsim's (`tokio = { package = "madsim-tokio", .. }`):
//! without `--cfg madsim` both are the real crates; with it, every `Client`
//! is a session of the simulated ZooKeeper and tokio's time and tasks are
//! simulated. The glue registers a workload per variant:
//!
//! ```text
//! RecipeEntry::new("latch", RecipeKind::Election, "/latch").variant(Variant::asynchronous(
//!     "fixed", "the latch with its fix", RecipeKind::Election,
//!     asynchronous::workload(|zk, ctx| async move { latch_cycles(zk, ctx, false).await }),
//! ))
//! ```
//!
//! The workload reports what the application saw through its [`Context`]
//! (`acquired(token)`, `releasing()`, `lost()`, ...), and the oracles of the
//! recipe's kind judge it.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;
pub use zk_sim::async_recipe::{AsyncWorkload, Context};
use zkcheck_zookeeper_client::Client;

/// The registered form of `run`: each client connects its first session
/// (with the scenario's session timeout) and runs `run(client, context)`.
/// In the simulator a first session that cannot be had is an internal
/// error of zkcheck (the world opened it); in a live run, the harness's
/// failure (the server is unreachable through the client's proxy).
pub fn workload<F, Fut>(run: F) -> AsyncWorkload
where
    F: Fn(Client, Context) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = ()> + Send + 'static,
{
    let run = Arc::new(run);
    Arc::new(move |context: Context| {
        let run = run.clone();
        Box::pin(async move {
            let timeout = Duration::from_millis(context.session_timeout_ms());
            let client = Client::connector()
                .with_session_timeout(timeout)
                .connect(context.cluster())
                .await
                .unwrap_or_else(|error| {
                    panic!(
                        "client {} cannot connect its first session: {error}",
                        context.index()
                    )
                });
            run(client, context).await
        })
    })
}
