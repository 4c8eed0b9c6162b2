//! The `zookeeper-client` crate's own client-side expiry, in the simulated
//! world: a disconnected async client gives up reconnecting 7/5 of the
//! session timeout after it last received anything from a server (its
//! handle turns Expired) while the server still holds its session and
//! ephemeral node until its own, coarser, expiry; the application connects
//! again and finds the old node. A client back within the deadline keeps
//! its session.

// Runs the simulator, which exists only with `--cfg madsim` (.cargo/config.toml).
#![cfg(madsim)]

use std::sync::OnceLock;
use tracing_subscriber::layer::SubscriberExt;
use zk_sim::scenario::Scenario;
use zk_sim::world::{TraceKind, TraceLine};
use zkcheck::asynchronous::{workload, Context};
use zkcheck::{RecipeEntry, RecipeKind, Registry, Variant};
use zkcheck_zookeeper_client::{Acls, Client, CreateMode, SessionState};

/// The session timeout T of both worlds, in ms: the crate gives up at 7/5 T.
const SESSION_TIMEOUT_MS: u64 = 2_000;
const DEADLINE_MS: u64 = SESSION_TIMEOUT_MS * 7 / 5;
/// The server's tickTime: it expires sessions in 5 s buckets, so one last heard at 0.3 s
/// goes at 5 s, long after the crate gave up on it.
const TICK_TIME_MS: u64 = 5_000;

/// Creates an ephemeral node, waits for its handle to turn Expired,
/// connects again and watches the old node until it goes.
async fn outlives(client: Client, ctx: Context) {
    let node = format!("{}/eph", ctx.path());
    let old = client.session_id().0;
    let options = CreateMode::Ephemeral.with_acls(Acls::anyone_all());
    if client.create(&node, b"", &options).await.is_err() {
        return;
    }
    let mut states = client.state_watcher();
    while states.peek_state() != SessionState::Expired {
        states.changed().await;
    }
    tracing::info!("handle expired");
    let Ok(fresh) = Client::connect(ctx.cluster()).await else {
        return;
    };
    tracing::info!("connected again");
    if let Ok((Some(stat), watcher)) = fresh.check_and_watch_stat(&node).await {
        let owner_is_old = stat.ephemeral_owner == old;
        tracing::info!(owner_is_old, "old node still there");
        watcher.changed().await;
        tracing::info!("old node deleted");
    }
}

/// Creates an ephemeral node, then reports its session after 6 s.
async fn keeps(client: Client, ctx: Context) {
    let node = format!("{}/eph", ctx.path());
    let options = CreateMode::Ephemeral.with_acls(Acls::anyone_all());
    if client.create(&node, b"", &options).await.is_err() {
        return;
    }
    ctx.sleep_ms(6_000).await;
    let connected = client.state() == SessionState::SyncConnected;
    let mine = matches!(
        client.check_stat(&node).await,
        Ok(Some(stat)) if stat.ephemeral_owner == client.session_id().0
    );
    tracing::info!(connected, mine, "after the disconnect");
}

fn registry() -> &'static Registry {
    static REGISTRY: OnceLock<Registry> = OnceLock::new();
    REGISTRY.get_or_init(|| {
        let kind = RecipeKind::ExclusiveLock;
        Registry::builtin().with(
            RecipeEntry::new("expiry_probe", kind, "/probe")
                .variant(Variant::asynchronous(
                    "outlives",
                    "waits out its session",
                    kind,
                    workload(outlives),
                ))
                .variant(Variant::asynchronous(
                    "keeps",
                    "keeps its session",
                    kind,
                    workload(keeps),
                )),
        )
    })
}

/// One client, disconnected at 300 ms for `down_ms`.
fn scenario(variant: &str, down_ms: u64) -> Scenario {
    let text = format!(
        r#"
recipe = "expiry_probe"
variant = "{variant}"
clients = 1
seeds = "0..1"
duration_ms = 8000
heal_ms = 8000

[config]
parents = ["/probe"]

[workload]
cycles = 1

[timing]
session_timeout_ms = {SESSION_TIMEOUT_MS}
tick_time_ms = {TICK_TIME_MS}

[properties]
check = ["liveness"]

[[faults.schedule]]
at_ms = 300
client = 0
fault = "disconnect"
down_ms = {down_ms}
"#
    );
    let file = std::path::Path::new("expiry-probe.toml");
    Scenario::parse(file, &text, registry().sim_recipes()).unwrap_or_else(|error| panic!("{error}"))
}

/// The run's trace lines, with the application's own log lines.
fn trace_of(scenario: &Scenario, seed: u64) -> Vec<TraceLine> {
    let subscriber = tracing_subscriber::registry().with(zk_sim::world::AppEvents);
    let runner = scenario.runner();
    tracing::subscriber::with_default(subscriber, || runner.run(seed, true).trace.lines)
}

const MS: u64 = 1_000_000;

/// The time of the first line of client 0 containing `text`, in ns.
fn first_ns(lines: &[TraceLine], text: &str) -> Option<u64> {
    lines
        .iter()
        .find(|line| line.client == Some(0) && line.text.contains(text))
        .map(|line| line.at_ns)
}

fn dump(lines: &[TraceLine]) -> String {
    let text: Vec<String> = lines.iter().map(ToString::to_string).collect();
    text.join("\n")
}

#[test]
fn the_crate_gives_up_at_last_received_plus_7_5_of_t_while_the_server_keeps_the_node() {
    for seed in 0..3 {
        let lines = trace_of(&scenario("outlives", 4_000), seed);
        let all = dump(&lines);
        let gives_up = first_ns(&lines, "gives up on session").expect(&all);
        // What the client last received: the reply to its create, before
        // the disconnect at 300 ms (its first ping would be at T/3).
        let last_recv = lines
            .iter()
            .rfind(|l| l.client == Some(0) && l.kind == TraceKind::Deliver && l.at_ns < 300 * MS)
            .map(|l| l.at_ns)
            .expect(&all);
        assert!(last_recv > 0, "{all}");
        // At the deadline (the scheduler wakes a few ns late at most).
        let deadline = last_recv + DEADLINE_MS * MS;
        assert!((deadline..deadline + MS).contains(&gives_up), "{all}");
        assert!(
            all.contains("the zookeeper-client crate's own deadline); the server still holds it"),
            "{all}"
        );
        let expired = first_ns(&lines, "handle expired").expect(&all);
        assert!((gives_up..gives_up + MS).contains(&expired), "{all}");
        // The application connects again once the network is back (4.3 s);
        // the old session's node is still there, until the server's own
        // expiry at its 5 s bucket.
        let again = first_ns(&lines, "connected again").expect(&all);
        assert!((4_300 * MS..TICK_TIME_MS * MS).contains(&again), "{all}");
        let still = first_ns(&lines, "old node still there owner_is_old=true").expect(&all);
        assert!(still < TICK_TIME_MS * MS, "{all}");
        let deleted = first_ns(&lines, "old node deleted").expect(&all);
        let server_expiry = first_ns(&lines, "server expired session").expect(&all);
        let bucket = TICK_TIME_MS * MS;
        assert!((bucket..bucket + MS).contains(&server_expiry), "{all}");
        assert!(
            (server_expiry..server_expiry + 100 * MS).contains(&deleted),
            "{all}"
        );
        // The world opened no session of its own between the give-up and
        // the application's connect.
        let opened: Vec<u64> = lines
            .iter()
            .filter(|l| l.client == Some(0) && l.text.contains("opened"))
            .map(|l| l.at_ns)
            .collect();
        assert_eq!(opened.len(), 2, "{all}");
        assert!(opened[1] >= 4_300 * MS, "{all}");
    }
}

#[test]
fn a_client_back_before_7_5_of_t_keeps_its_session() {
    for seed in 0..3 {
        let lines = trace_of(&scenario("keeps", 1_500), seed);
        let all = dump(&lines);
        assert!(first_ns(&lines, "gives up on session").is_none(), "{all}");
        assert!(
            first_ns(&lines, "reconnected into the same session").is_some(),
            "{all}"
        );
        let report = first_ns(&lines, "after the disconnect connected=true mine=true");
        assert!(report.is_some(), "{all}");
    }
}
