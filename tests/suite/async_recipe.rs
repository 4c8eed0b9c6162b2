//! Async recipes through the registry's door: a small lock written as async
//! code against the `zookeeper-client` API (simulated), registered with
//! `Variant::asynchronous`, swept like any recipe. The buggy variant ignores
//! NodeExists and breaks mutual exclusion; the fixed one waits on the
//! holder's node and holds. Same seed, same trace; the trace shows the
//! application's requests; `live` and `check` refuse what they cannot do.
//! (The live run of an async recipe itself: tests/suite/live_async.rs.)

// Runs the simulator, which exists only with `--cfg madsim` (.cargo/config.toml).
#![cfg(madsim)]

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;
use zk_sim::scenario::Scenario;
use zkcheck::asynchronous::{workload, Context};
use zkcheck::{RecipeEntry, RecipeKind, Registry, Variant};
use zkcheck_zookeeper_client::{Acls, Client, CreateMode, Error};

/// One try at the lock node: held (its creation zxid as the token), or
/// wait for the holder's node to go and try again.
async fn lock(client: &Client, node: &str, buggy: bool) -> Result<i64, Error> {
    let options = CreateMode::Ephemeral.with_acls(Acls::anyone_all());
    loop {
        match client.create(node, b"", &options).await {
            Ok((stat, _)) => return Ok(stat.czxid),
            // The bug: the node exists, so "someone created it for us".
            Err(Error::NodeExists) if buggy => return Ok(0),
            Err(Error::NodeExists) => {
                if let (Some(_), watcher) = client.check_and_watch_stat(node).await? {
                    watcher.changed().await;
                }
            }
            Err(error) => return Err(error),
        }
    }
}

/// State that outlives a run: what makes async code nondeterministic
/// across two runs of one seed (the `leaky` variant writes it in its node).
static RUNS: AtomicU64 = AtomicU64::new(0);

async fn leaky(client: Client, ctx: Context) {
    let run = RUNS.fetch_add(1, Ordering::Relaxed).to_string();
    let node = format!("{}/run-{}", ctx.path(), ctx.index());
    let options = CreateMode::Ephemeral.with_acls(Acls::anyone_all());
    ctx.acquiring();
    if client.create(&node, run.as_bytes(), &options).await.is_ok() {
        ctx.acquired(1);
        ctx.releasing();
        let _ = client.delete(&node, None).await;
        ctx.released();
    }
}

async fn cycles(client: Client, ctx: Context, buggy: bool) {
    let node = format!("{}/holder", ctx.path());
    for _ in 0..ctx.workload().cycles {
        if ctx.stopping() {
            break;
        }
        ctx.acquiring();
        match lock(&client, &node, buggy).await {
            Ok(token) => {
                tracing::info!(token, "holding the lock");
                ctx.acquired(token);
                ctx.sleep_ms(ctx.draw_ms(ctx.workload().hold_ms)).await;
                ctx.releasing();
                let _ = client.delete(&node, None).await;
                ctx.released();
            }
            Err(error) => ctx.failed(error.to_string()),
        }
        ctx.sleep_ms(ctx.draw_ms(ctx.workload().think_ms)).await;
    }
}

/// A reentrant lock: the client takes the lock, enters it again (a second
/// hold, counted, no request), leaves the inner one, holds on with the
/// outer one, then releases it. The buggy variant deletes the node when the
/// inner hold ends, while the outer one is still relied on.
async fn reentrant(client: Client, ctx: Context, buggy: bool) {
    let node = format!("{}/holder", ctx.path());
    let (outer, inner) = (ctx.hold(0), ctx.hold(1));
    for _ in 0..ctx.workload().cycles {
        if ctx.stopping() {
            break;
        }
        outer.acquiring();
        let Ok(token) = lock(&client, &node, false).await else {
            continue;
        };
        outer.acquired(token);
        inner.acquiring();
        inner.acquired(token);
        ctx.sleep_ms(ctx.draw_ms(ctx.workload().hold_ms)).await;
        inner.releasing();
        if buggy {
            let _ = client.delete(&node, None).await;
        }
        inner.released();
        ctx.sleep_ms(ctx.draw_ms(ctx.workload().hold_ms)).await;
        outer.releasing();
        delete_if_mine(&client, &node).await;
        outer.released();
        ctx.sleep_ms(ctx.draw_ms(ctx.workload().think_ms)).await;
    }
}

/// Takes the lock, then lets an unbiased `tokio::select!` (three branches
/// ready at once) and a `HashMap`'s iteration order choose how long it
/// holds, and logs both: unchanged code whose run must still be a
/// function of the seed.
async fn unbiased(client: Client, ctx: Context) {
    let node = format!("{}/holder", ctx.path());
    for _ in ctx.cycles() {
        ctx.acquiring();
        let Ok(token) = lock(&client, &node, false).await else {
            continue;
        };
        ctx.acquired(token);
        let branch: u64 = tokio::select! {
            () = std::future::ready(()) => 1,
            () = std::future::ready(()) => 2,
            () = std::future::ready(()) => 3,
        };
        let keys: std::collections::HashMap<u64, ()> = (0..8).map(|key| (key, ())).collect();
        let first_key = *keys.keys().next().expect("eight keys");
        tracing::info!(branch, first_key, "picked");
        ctx.sleep_ms(branch * 10 + first_key).await;
        ctx.releasing();
        let _ = client.delete(&node, None).await;
        ctx.released();
    }
}

/// Deletes `node` if this session owns it (another's is left alone).
async fn delete_if_mine(client: &Client, node: &str) {
    if let Ok(Some(stat)) = client.check_stat(node).await {
        if stat.ephemeral_owner == client.session_id().0 {
            let _ = client.delete(node, Some(stat.version)).await;
        }
    }
}

/// Sets a watch on a missing node, drops the watcher, then creates the
/// node itself: the dropped watcher must hear nothing.
async fn drops_a_watcher(client: Client, ctx: Context) {
    let node = format!("{}/watched-{}", ctx.path(), ctx.index());
    if let Ok((None, watcher)) = client.check_and_watch_stat(&node).await {
        drop(watcher);
    }
    let options = CreateMode::Ephemeral.with_acls(Acls::anyone_all());
    let _ = client.create(&node, b"", &options).await;
    ctx.sleep_ms(10).await;
}

/// Abandons a read (drops its future, as a timeout or a `select!` that
/// took another branch does), then carries on: the abandoned reply arrives
/// later and must reach nobody.
async fn impatient(client: Client, ctx: Context) {
    let path = ctx.path().to_string();
    drop(client.get_data(&path)); // sent when made, abandoned unanswered
    let (children, _) = client.get_children(&path).await.expect("the next request");
    tracing::info!(children = children.len(), "carried on");
    ctx.acquiring();
    ctx.acquired(1);
    ctx.releasing();
    ctx.released();
}

/// One fenced hold per cycle, lost at once (`lose`) or held to its end.
async fn fenced_holds(client: Client, ctx: Context, lose: bool) {
    let node = format!("{}/holder", ctx.path());
    for _ in ctx.cycles() {
        ctx.acquiring();
        let Ok(token) = lock(&client, &node, false).await else {
            continue;
        };
        match lose {
            true => ctx.hold_fenced(token, std::future::ready(())).await,
            false => ctx.hold_fenced(token, std::future::pending()).await,
        }
        let _ = client.delete(&node, None).await;
        ctx.released();
        ctx.think().await;
    }
}

fn registry() -> &'static Registry {
    static REGISTRY: OnceLock<Registry> = OnceLock::new();
    REGISTRY.get_or_init(|| {
        let variant = |name: &str, buggy: bool| {
            let run = workload(move |client, ctx| cycles(client, ctx, buggy));
            Variant::asynchronous(name, "an async test lock", RecipeKind::ExclusiveLock, run)
        };
        let leaky = Variant::asynchronous(
            "leaky",
            "keeps a counter across runs",
            RecipeKind::ExclusiveLock,
            workload(leaky),
        );
        let reentrant = |name: &str, buggy: bool| {
            let run = workload(move |client, ctx| reentrant(client, ctx, buggy));
            Variant::asynchronous(name, "a reentrant lock", RecipeKind::ExclusiveLock, run)
        };
        Registry::builtin().with(
            RecipeEntry::new("async_lock", RecipeKind::ExclusiveLock, "/alock")
                .variant(variant("buggy", true))
                .variant(variant("fixed", false))
                .variant(leaky)
                .variant(Variant::asynchronous(
                    "drops_a_watcher",
                    "drops an unfired watcher",
                    RecipeKind::ExclusiveLock,
                    workload(drops_a_watcher),
                ))
                .variant(Variant::asynchronous(
                    "impatient",
                    "abandons a read",
                    RecipeKind::ExclusiveLock,
                    workload(impatient),
                ))
                .variant(Variant::asynchronous(
                    "holds",
                    "fenced holds",
                    RecipeKind::ExclusiveLock,
                    workload(|client, ctx| fenced_holds(client, ctx, false)),
                ))
                .variant(Variant::asynchronous(
                    "loses",
                    "fenced holds lost at once",
                    RecipeKind::ExclusiveLock,
                    workload(|client, ctx| fenced_holds(client, ctx, true)),
                ))
                .variant(Variant::asynchronous(
                    "unbiased",
                    "an unbiased select! and a HashMap's order",
                    RecipeKind::ExclusiveLock,
                    workload(unbiased),
                ))
                .variant(reentrant("reentrant_buggy", true))
                .variant(reentrant("reentrant_fixed", false)),
        )
    })
}

const SCENARIO: &str = r#"
recipe = "async_lock"
variant = "fixed"
clients = 3
seeds = "0..50"
duration_ms = 5000
heal_ms = 5000

[config]
parents = ["/alock"]

[workload]
cycles = 5
hold_ms = [1, 10]
think_ms = [0, 10]

[properties]
check = ["mutual_exclusion", "liveness", "no_leaks"]
"#;

fn scenario(variant: &str) -> Scenario {
    let text = SCENARIO.replace("variant = \"fixed\"", &format!("variant = \"{variant}\""));
    let file = std::path::Path::new("async-lock.toml");
    Scenario::parse(file, &text, registry().sim_recipes()).unwrap_or_else(|error| panic!("{error}"))
}

#[test]
fn the_fixed_async_lock_holds_and_makes_progress() {
    let runner = scenario("fixed").runner();
    for seed in 0..50 {
        let report = runner.run(seed, false);
        assert!(
            report.violations.is_empty(),
            "seed {seed}: {:?}",
            report.violations
        );
        assert!(report.stats.goals >= 10, "seed {seed}: {:?}", report.stats);
    }
}

#[test]
fn every_waiter_watching_the_holder_s_node_is_a_herd() {
    // The fixed test lock is correct but herds: every waiter watches the
    // holder's node, so one release wakes them all. Counted from the watch
    // events the server delivers to the application's watchers.
    let text = SCENARIO.replace("clients = 3", "clients = 5").replace(
        r#"check = ["mutual_exclusion", "liveness", "no_leaks"]"#,
        r#"check = ["herd"]"#,
    );
    let file = std::path::Path::new("async-lock-herd.toml");
    let scenario = Scenario::parse(file, &text, registry().sim_recipes()).expect("a scenario");
    let runner = scenario.runner();
    let herds = (0..20).filter(|&seed| {
        let report = runner.run(seed, false);
        report
            .violations
            .iter()
            .any(|v| v.property.name() == "herd")
    });
    assert!(herds.count() >= 10);
}

#[test]
fn the_buggy_async_lock_breaks_mutual_exclusion() {
    let runner = scenario("buggy").runner();
    let failing: Vec<u64> = (0..50)
        .filter(|&seed| {
            let report = runner.run(seed, false);
            report
                .violations
                .iter()
                .any(|violation| violation.property.name() == "mutual_exclusion")
        })
        .collect();
    assert!(failing.len() >= 10, "only seeds {failing:?} failed");
}

#[test]
fn each_hold_of_a_client_is_judged_on_its_own() {
    let fixed = scenario("reentrant_fixed").runner();
    for seed in 0..20 {
        let report = fixed.run(seed, false);
        assert!(
            report.violations.is_empty(),
            "seed {seed}: {:?}",
            report.violations
        );
    }
    // The inner release freed the lock while the outer hold was still in
    // force: with one hold per client, that release would have ended it.
    let buggy = scenario("reentrant_buggy").runner();
    let caught = (0..20).filter(|&seed| {
        let report = buggy.run(seed, false);
        let names: Vec<_> = report
            .violations
            .iter()
            .map(|v| v.property.name())
            .collect();
        names.contains(&"mutual_exclusion")
    });
    assert!(caught.count() >= 5);
}

#[test]
fn a_watcher_dropped_before_it_fires_has_its_watch_removed() {
    let trace = scenario("drops_a_watcher")
        .runner()
        .run(1, true)
        .trace
        .to_string();
    assert!(
        trace.contains("drops watcher 0: its watch is removed"),
        "{trace}"
    );
    let created = trace
        .lines()
        .find(|line| line.contains("deliver") && line.contains("NodeCreated"))
        .unwrap_or_else(|| panic!("no NodeCreated delivered:\n{trace}"));
    assert!(created.contains("(no watch armed)"), "{created}");
    assert!(!trace.contains("Watch { id: 0"), "{trace}");
}

#[test]
fn a_request_whose_future_is_dropped_is_answered_to_nobody() {
    let runner = scenario("impatient").runner();
    for seed in 0..10 {
        let report = runner.run(seed, true);
        let trace = report.trace.to_string();
        // The abandoned read was sent and answered; the client went on.
        assert!(trace.contains("Reply { id: 0, result: Ok(Data"), "{trace}");
        assert!(
            trace.contains("Reply { id: 1, result: Ok(Children2"),
            "{trace}"
        );
        assert!(
            report.violations.is_empty(),
            "seed {seed}: {:?}",
            report.violations
        );
    }
}

#[test]
fn a_fenced_hold_is_written_at_both_ends_unless_it_is_lost_first() {
    // The application's calls, one trace line each (a report also shows as
    // the outcome it becomes).
    let count = |trace: &str, needle: &str| {
        let calls = trace.lines().filter(|line| line.contains(" call "));
        calls.filter(|line| line.contains(needle)).count()
    };
    let held = scenario("holds").runner().run(2, true);
    let trace = held.trace.to_string();
    let acquired = count(&trace, "observation: Acquired");
    assert!(acquired >= 5, "{trace}");
    assert_eq!(count(&trace, "write resource with token"), 2 * acquired);
    assert_eq!(count(&trace, "call: Release"), acquired);
    assert_eq!(count(&trace, "observation: Lost"), 0);
    assert!(held.violations.is_empty(), "{:?}", held.violations);
    let lost = scenario("loses").runner().run(2, true).trace.to_string();
    let acquired = count(&lost, "observation: Acquired");
    assert!(acquired >= 5, "{lost}");
    assert_eq!(count(&lost, "write resource with token"), acquired);
    assert_eq!(count(&lost, "observation: Lost"), acquired);
    assert_eq!(count(&lost, "call: Release"), 0);
}

#[test]
fn one_seed_gives_one_trace_with_the_application_s_requests() {
    let runner = scenario("fixed").runner();
    let first = runner.run(7, true).trace.to_string();
    let second = runner.run(7, true).trace.to_string();
    assert_eq!(first, second);
    assert!(first.contains("Create"), "{first}");
    assert!(first.contains("/alock/holder"), "{first}");
}

#[test]
fn state_kept_across_runs_shows_as_two_traces_parting_at_the_first_request_it_changes() {
    let runner = scenario("leaky").runner();
    let first = runner.run(3, true).trace;
    let second = runner.run(3, true).trace;
    let divergence = first.first_divergence(&second).expect("the runs part");
    assert!(divergence.starts_with("event "), "{divergence}");
    assert!(divergence.contains("Create"), "{divergence}");
    assert_eq!(first.first_divergence(&first), None);
}

/// The lines the `unbiased` variant logs in one run of `seed` (its
/// `select!` branches and first keys), with the run's whole trace.
fn unbiased_run(seed: u64) -> (Vec<String>, zk_sim::world::Trace) {
    use tracing_subscriber::filter::filter_fn;
    use tracing_subscriber::layer::{Layer, SubscriberExt};
    // As `replay` records them: madsim's own events are not the application's.
    let application = filter_fn(|meta| !meta.target().starts_with("madsim"));
    let layer = zk_sim::world::AppEvents.with_filter(application);
    let subscriber = tracing_subscriber::registry().with(layer);
    let runner = scenario("unbiased").runner();
    let trace = tracing::subscriber::with_default(subscriber, || runner.run(seed, true).trace);
    let picks = trace.lines.iter().map(ToString::to_string);
    let picks = picks.filter(|line| line.contains("picked")).map(|line| {
        let at = line.find("picked").expect("filtered");
        line[at..].to_string()
    });
    (picks.collect(), trace)
}

#[test]
fn an_unbiased_select_and_a_hash_map_s_order_are_functions_of_the_seed() {
    // Unchanged code: no `biased;`, a std HashMap. Each run has a thread of
    // its own with tokio's generator seeded by the run (world/isolated.rs).
    let (picks, first) = unbiased_run(5);
    assert!(!picks.is_empty(), "the variant logged nothing");
    let runner = scenario("unbiased").runner();
    for seed in 0..4 {
        runner.run(seed, false); // other seeds in between, on this thread
    }
    let (_, again) = unbiased_run(5);
    assert_eq!(first.first_divergence(&again), None);
    // The check can fail: the branch and the first key do vary.
    let mut seen = std::collections::BTreeSet::new();
    for seed in 0..10 {
        seen.extend(unbiased_run(seed).0);
    }
    let branches = ["branch=1", "branch=2", "branch=3"];
    let taken = branches
        .iter()
        .filter(|b| seen.iter().any(|p| p.contains(*b)));
    assert_eq!(taken.count(), 3, "{seen:?}");
    let first_keys: std::collections::BTreeSet<&str> = seen
        .iter()
        .filter_map(|p| p.split("first_key=").nth(1))
        .collect();
    assert!(first_keys.len() > 1, "{seen:?}");
}

#[test]
fn the_application_s_own_log_lines_are_in_the_trace_where_they_happened() {
    use tracing_subscriber::layer::SubscriberExt;
    let subscriber = tracing_subscriber::registry().with(zk_sim::world::AppEvents);
    let runner = scenario("fixed").runner();
    let trace = tracing::subscriber::with_default(subscriber, || runner.run(7, true).trace);
    let lines: Vec<String> = trace.lines.iter().map(ToString::to_string).collect();
    let logged = lines
        .iter()
        .position(|line| line.contains(" app ") && line.contains("holding the lock token="))
        .unwrap_or_else(|| panic!("no app line in\n{}", lines.join("\n")));
    // After the create that won the lock, before the acquisition it reports.
    assert!(lines[..logged]
        .iter()
        .any(|line| line.contains("Ok(Created")));
    assert!(lines[logged..]
        .iter()
        .any(|line| line.contains("observation: Acquired")));
    assert!(
        lines[logged].contains(" c"),
        "a client's line: {}",
        lines[logged]
    );
}

#[test]
fn live_runs_an_async_recipe_but_refuses_what_it_cannot_judge_there() {
    assert_eq!(zk_sim::scenario::unsupported(&scenario("fixed")), None);
    let text = SCENARIO.replace(
        r#"check = ["mutual_exclusion", "liveness", "no_leaks"]"#,
        r#"check = ["mutual_exclusion", "herd", "liveness"]"#,
    );
    let file = std::path::Path::new("async-lock-herd.toml");
    let herd = Scenario::parse(file, &text, registry().sim_recipes()).expect("a scenario");
    let why = zk_sim::scenario::unsupported(&herd).expect("herd refused live");
    assert!(
        why.contains("`herd`") && why.contains("async recipe"),
        "{why}"
    );
}

/// A silent connection runs live for every recipe (the client's proxy holds
/// its bytes); the client-side expiry policy is refused only for an async
/// recipe (whose application's real client library the driver cannot make
/// give up), not for a sans-IO one.
#[test]
fn live_runs_a_silent_connection_and_refuses_an_async_recipes_client_side_expiry_by_its_key() {
    let sans_io = SCENARIO
        .replace("recipe = \"async_lock\"", "recipe = \"lock\"")
        .replace(
            "parents = [\"/alock\"]",
            "path = \"/locks\"\nparents = [\"/locks\"]",
        );
    let builtin = zkcheck::Registry::builtin();
    let cases = [
        (SCENARIO, registry(), "silences_per_s = 0.1", None),
        (
            SCENARIO,
            registry(),
            "client_expiry = true",
            Some("client_expiry"),
        ),
        (sans_io.as_str(), &builtin, "silences_per_s = 0.1", None),
        (sans_io.as_str(), &builtin, "client_expiry = true", None),
    ];
    for (base, recipes, line, refused_key) in cases {
        let text = format!("{base}\n[faults.rates]\n{line}\n");
        let file = std::path::Path::new("lock-faults.toml");
        let scenario = Scenario::parse(file, &text, recipes.sim_recipes())
            .unwrap_or_else(|error| panic!("{error}"));
        let why = zk_sim::scenario::unsupported(&scenario);
        match refused_key {
            Some(key) => {
                let why = why.unwrap_or_else(|| panic!("`{line}` refused live"));
                assert!(why.contains(&format!("faults.rates.{key}")), "{why}");
            }
            None => assert_eq!(why, None, "`{line}` runs live"),
        }
    }
    let text = format!("{SCENARIO}\n[faults.rates]\nclient_expiry = true\n");
    let file = std::path::Path::new("async-lock-client-expiry.toml");
    let scenario = Scenario::parse(file, &text, registry().sim_recipes()).expect("a scenario");
    let why = zk_sim::scenario::unsupported(&scenario).expect("refused live");
    assert!(why.contains("async recipe"), "{why}");
}

#[test]
fn an_async_variant_has_no_model() {
    let entry = registry()
        .entries()
        .iter()
        .find(|entry| entry.name() == "async_lock");
    let entry = entry.expect("registered");
    assert!(entry.variants().iter().all(|variant| !variant.has_model()));
    let Err(refused) = registry().model("async_lock", "fixed") else {
        panic!("an async variant got a model");
    };
    assert!(
        refused.to_string().contains("is an async recipe"),
        "{refused}"
    );
}

#[test]
fn an_async_run_replays_from_its_tape_alone() {
    // The run's thread of its own takes the tape over and hands back what
    // it drew; the unbiased select! and the HashMap are left to the seed.
    for variant in ["fixed", "unbiased"] {
        let runner = scenario(variant).runner();
        for seed in 0..3 {
            crate::draw_tape::replays_exactly_from_its_tape(runner.as_ref(), seed, variant);
        }
    }
}
