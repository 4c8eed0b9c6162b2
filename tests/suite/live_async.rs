//! `live` on an async recipe: the application's own async code against the
//! real `zookeeper-client` crate, on a real ZooKeeper, with every fault the
//! live driver injects through the client's proxy (a lost request, a lost
//! reply, a drop, a pause, an expiry), judged by the simulator's oracles.
//!
//! The workloads here use the real crate directly (this test binary is
//! built with `--cfg madsim`, under which `zkcheck::asynchronous::workload`
//! builds the simulated client; a user's live build has no madsim and
//! uses `workload` as is, see examples/async-latch).
//!
//! Needs a real ZooKeeper 3.8 at `ZK_ADDR` (default 127.0.0.1:2181):
//! `scripts/zk-server start; cargo test --release --workspace --test suite -- --ignored live_async::`.

use std::sync::{Arc, OnceLock};
use std::time::Duration;
use zk_live::{run_live, LiveOptions};
use zk_sim::async_recipe::{AsyncWorkload, Context};
use zk_sim::faults::Fault;
use zk_sim::oracles::Property;
use zk_sim::scenario::Scenario;
use zkcheck::{RecipeEntry, RecipeKind, Registry, Variant};
use zookeeper_client::{Acls, Client, CreateMode, Error, SessionState};

/// The client's first session (or a new one after an expiry), through its
/// proxy, with the scenario's session timeout.
async fn connect(ctx: &Context) -> Result<Client, Error> {
    Client::connector()
        .with_session_timeout(Duration::from_millis(ctx.session_timeout_ms()))
        .connect(ctx.cluster())
        .await
}

/// Takes the lock node: held (its creation zxid as the token), or waits
/// for the holder's node to go. `guarded` also recovers a create whose
/// reply was lost (the node is ours if our session owns it); unguarded,
/// a client that finds the node taken believes it holds the lock anyway.
async fn lock(client: &Client, node: &str, guarded: bool) -> Result<i64, Error> {
    let options = CreateMode::Ephemeral.with_acls(Acls::anyone_all());
    loop {
        match client.create(node, b"", &options).await {
            Ok((stat, _)) => return Ok(stat.czxid),
            Err(Error::NodeExists | Error::ConnectionLoss) if guarded => {
                match client.check_and_watch_stat(node).await? {
                    (Some(stat), _) if stat.ephemeral_owner == client.session_id().0 => {
                        return Ok(stat.czxid)
                    }
                    (Some(_), watcher) => {
                        watcher.changed().await;
                    }
                    (None, _) => {}
                }
            }
            Err(Error::NodeExists) => return Ok(0),
            Err(error) => return Err(error),
        }
    }
}

/// Deletes the lock node until it is gone or the session is.
async fn unlock(client: &Client, node: &str) {
    loop {
        match client.delete(node, None).await {
            Err(Error::ConnectionLoss) => tokio::time::sleep(Duration::from_millis(20)).await,
            _ => return,
        }
    }
}

/// Resolves when the session is in doubt (disconnected or expired): the
/// holder may have lost the lock without knowing.
fn suspended(client: &Client) -> impl std::future::Future<Output = ()> {
    let mut states = client.state_watcher();
    async move { while states.changed().await == SessionState::SyncConnected {} }
}

async fn cycles(ctx: Context, guarded: bool) {
    let Ok(mut client) = connect(&ctx).await else {
        return ctx.failed("no first session");
    };
    let node = format!("{}/holder", ctx.path());
    for _ in ctx.cycles() {
        if client.state() == SessionState::Expired {
            match connect(&ctx).await {
                Ok(fresh) => client = fresh,
                Err(error) => {
                    ctx.failed(error.to_string());
                    continue;
                }
            }
        }
        ctx.acquiring();
        match lock(&client, &node, guarded).await {
            Ok(token) => {
                ctx.hold_fenced(token, suspended(&client)).await;
                unlock(&client, &node).await;
                ctx.released();
            }
            Err(error) => ctx.failed(error.to_string()),
        }
        ctx.think().await;
    }
}

fn variant(name: &str, guarded: bool) -> Variant {
    let run: AsyncWorkload = Arc::new(move |ctx| Box::pin(cycles(ctx, guarded)));
    Variant::asynchronous(name, "a live test lock", RecipeKind::ExclusiveLock, run)
}

fn registry() -> &'static Registry {
    static REGISTRY: OnceLock<Registry> = OnceLock::new();
    REGISTRY.get_or_init(|| {
        Registry::builtin().with(
            RecipeEntry::new("live_lock", RecipeKind::ExclusiveLock, "/live_lock")
                .variant(variant("unguarded", false))
                .variant(variant("guarded", true)),
        )
    })
}

const QUIET: &str = r#"
recipe = "live_lock"
variant = "unguarded"
clients = 3
duration_ms = 3000
heal_ms = 5000

[config]
parents = ["/live_lock"]

[workload]
cycles = 4
hold_ms = [30, 60]
think_ms = [0, 20]

[timing]
session_timeout_ms = 4000

[properties]
check = ["mutual_exclusion", "liveness", "no_leaks"]
"#;

/// Every fault the live driver injects, once each, early in the run.
const FAULTS: &str = r#"
[[faults.schedule]]
request = 3
client = 0
fault = "lose_reply"
down_ms = 200

[[faults.schedule]]
request = 4
client = 1
fault = "lose_request"
down_ms = 100

[[faults.schedule]]
at_ms = 150
client = 2
fault = "disconnect"
down_ms = 300

[[faults.schedule]]
at_ms = 400
client = 1
fault = "pause"
pause_ms = 300

[[faults.schedule]]
at_ms = 700
client = 2
fault = "expire"
"#;

/// Under faults a holder can lose its lock before it learns it (an
/// expiry): what a recipe can promise there is fenced exclusion.
const FENCED: &str = r#"check = ["fenced_mutual_exclusion", "liveness", "no_leaks"]"#;

fn scenario(variant: &str, faults: &str) -> Scenario {
    let text = QUIET.replace(
        "variant = \"unguarded\"",
        &format!("variant = \"{variant}\""),
    );
    let text = match faults {
        "" => text,
        _ => text.replace(
            r#"check = ["mutual_exclusion", "liveness", "no_leaks"]"#,
            FENCED,
        ),
    };
    let text = format!("{text}{faults}");
    let file = std::path::Path::new("live-lock.toml");
    Scenario::parse(file, &text, registry().sim_recipes()).unwrap_or_else(|error| panic!("{error}"))
}

fn options(seed: u64) -> LiveOptions {
    LiveOptions {
        addr: zk_live::zk_addr_from_env(),
        seed,
        root: None,
    }
}

#[test]
#[ignore = "needs a real ZooKeeper at ZK_ADDR (scripts/zk-server start)"]
fn an_unguarded_async_lock_breaks_mutual_exclusion_live() {
    let _server = crate::common::real_server_to_myself();
    let live =
        run_live(&scenario("unguarded", ""), &options(1)).unwrap_or_else(|error| panic!("{error}"));
    let violated: Vec<Property> = live.report.violations.iter().map(|v| v.property).collect();
    assert!(
        violated.contains(&Property::MutualExclusion),
        "two clients should hold the lock at once: {:?}",
        live.report.violations
    );
}

#[test]
#[ignore = "needs a real ZooKeeper at ZK_ADDR (scripts/zk-server start)"]
fn a_guarded_async_lock_holds_live_through_every_fault() {
    let _server = crate::common::real_server_to_myself();
    let live = run_live(&scenario("guarded", FAULTS), &options(2))
        .unwrap_or_else(|error| panic!("{error}"));
    let report = &live.report;
    assert!(report.violations.is_empty(), "{:?}", report.violations);
    assert_eq!(report.workloads_done, 3, "every client finished its cycles");
    let struck: Vec<&Fault> = report.fault_history.iter().map(|f| &f.fault).collect();
    for expected in ["LoseReply", "LoseRequest", "Disconnect", "Pause", "Expire"] {
        assert!(
            struck
                .iter()
                .any(|fault| format!("{fault:?}").starts_with(expected)),
            "{expected} did not strike: {struck:?}"
        );
    }
    assert!(report.stats.requests > 10, "{:?}", report.stats);
}
