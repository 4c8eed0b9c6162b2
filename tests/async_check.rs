//! `check` on an async recipe: exhaustive exploration by re-execution
//! (`zk_sim::explore`). A small async lock written for this test: the
//! buggy variant, after a lost create reply, tries again, finds its own
//! node and waits on it forever (liveness); the fixed one looks whether
//! the node is its own first. At 2 clients with one connection loss the
//! explorer finds the bug with a short choice string and shows the fix
//! holds exhaustively; a counterexample's choices replay byte for byte in
//! a second process. PCT sampling (`--strategy pct`) on the async example's
//! latch (examples/async-latch, compiled in here as it is): the bug at a
//! pinned run, the fix holding over a sample, the same runs for the same
//! seed. The example's async catalog (its mutex, semaphore and use of the
//! crate's lock and its lock on a persistent-watch cache, their bugs found
//! on their scenarios' own worlds): `mutex_check`, `leases`,
//! `crate_lock_check` and `cache_lock_check`.
//! A workload that achieves nothing gets no verdict. Ignored: the
//! cross-validation with the stateful checker, and the measurement of runs
//! to first failure (BENCHMARKS.md).

// Runs the simulator, which exists only with `--cfg madsim` (.cargo/config.toml).
#![cfg(madsim)]

// The example's latch and its registration, as the example builds them
// (they name the client crate as a user's Cargo.toml renames it).
extern crate zkcheck_zookeeper_client as zookeeper_client;
#[path = "../examples/async-latch/src/cache.rs"]
mod cache;
#[path = "../examples/async-latch/src/cache_lock.rs"]
mod cache_lock;
#[path = "../examples/async-latch/src/crate_lock.rs"]
mod crate_lock;
#[path = "../examples/async-latch/src/check.rs"]
mod example;
#[path = "../examples/async-latch/src/latch.rs"]
mod latch;
#[path = "../examples/async-latch/src/mutex.rs"]
mod mutex;
#[path = "../examples/async-latch/src/semaphore.rs"]
mod semaphore;
// The example's mutex: each of WriteLock's bugs found on its scenario's world.
#[path = "async_check/mutex.rs"]
mod mutex_check;
// The example's 2-lease semaphore checked on its scenario's own world.
#[path = "async_check/leases.rs"]
mod leases;
// The example's use of the crate's own lock: a contention given up while
// its connection is down leaves its node.
#[path = "async_check/crate_lock.rs"]
mod crate_lock_check;
// The example's leader latch on 3 servers, ensemble faults struck by the tape.
#[path = "async_check/ensemble_latch.rs"]
mod ensemble_latch;
// The example's lock on a persistent-watch cache: the cache that trusts
// its watch through a connection loss found, its fix exhausted.
#[path = "async_check/cache_lock.rs"]
mod cache_lock_check;
// What the choices do not decide (an unbiased select!): a search per
// runtime seed.
#[path = "async_check/runtime_seeds.rs"]
mod runtime_seeds;

use std::sync::OnceLock;
use zk_sim::explore::file::ChoiceFile;
use zk_sim::explore::pct::{sample, Samples, Sampling, Strategy};
use zk_sim::explore::run::{explore, replay, World};
use zk_sim::explore::search::{Bounds, Summary};
use zk_sim::explore::FaultAllowance;
use zkcheck::asynchronous::{workload, Context};
use zkcheck::{RecipeEntry, RecipeKind, Registry, Variant};
use zkcheck_zookeeper_client::{Acls, Client, CreateMode, Error};

/// This session's node at `node`, if it holds it: its creation zxid.
async fn mine(client: &Client, node: &str) -> Result<Option<i64>, Error> {
    let stat = client.check_stat(node).await?;
    let owner = client.session_id().0;
    Ok(stat
        .filter(|stat| stat.ephemeral_owner == owner)
        .map(|stat| stat.czxid))
}

/// Takes the lock node (its creation zxid is the token); waits while
/// another session holds it.
async fn lock(client: &Client, node: &str, buggy: bool) -> Result<i64, Error> {
    let options = CreateMode::Ephemeral.with_acls(Acls::anyone_all());
    loop {
        match client.create(node, b"", &options).await {
            Ok((stat, _)) => return Ok(stat.czxid),
            // The bug: a lost reply is retried blindly.
            Err(Error::ConnectionLoss) if buggy => {}
            Err(Error::ConnectionLoss) => match mine(client, node).await {
                Ok(Some(token)) => return Ok(token),
                Ok(None) | Err(Error::ConnectionLoss) => {}
                Err(error) => return Err(error),
            },
            Err(Error::NodeExists) => match client.check_and_watch_stat(node).await {
                Ok((Some(_), watcher)) => {
                    watcher.changed().await;
                }
                Ok((None, _)) | Err(Error::ConnectionLoss) => {}
                Err(error) => return Err(error),
            },
            Err(error) => return Err(error),
        }
    }
}

/// Deletes the lock node if this session holds it, retrying a lost reply.
async fn unlock(client: &Client, node: &str) {
    loop {
        let deleted = match mine(client, node).await {
            Ok(Some(_)) => client.delete(node, None).await,
            Ok(None) => Ok(()),
            Err(error) => Err(error),
        };
        match deleted {
            Err(Error::ConnectionLoss) => continue,
            _ => return,
        }
    }
}

/// How a variant takes the lock.
#[derive(Clone, Copy)]
enum Taking {
    /// Retries a lost create blindly (the bug).
    Blind,
    /// Looks whether a lost create's node is its own first.
    Careful,
    /// Careful, behind a coin that unchanged code flips: an unbiased
    /// `tokio::select!` of two branches ready at once. On the second
    /// branch the client holds without taking the lock (the bug). Which
    /// branch is the runtime's draw, the same in every execution of a
    /// runtime seed: no choice of the tape reaches it.
    Coin,
}

async fn take(client: &Client, node: &str, taking: Taking) -> Result<i64, Error> {
    if let Taking::Coin = taking {
        let hasty = tokio::select! {
            () = std::future::ready(()) => false,
            () = std::future::ready(()) => true,
        };
        if hasty {
            return Ok(0);
        }
    }
    lock(client, node, matches!(taking, Taking::Blind)).await
}

async fn cycles(client: Client, ctx: Context, taking: Taking) {
    let node = format!("{}/holder", ctx.path());
    for _ in ctx.cycles() {
        ctx.acquiring();
        match take(&client, &node, taking).await {
            Ok(token) => {
                ctx.acquired(token);
                ctx.sleep_ms(ctx.draw_ms(ctx.workload().hold_ms)).await;
                ctx.releasing();
                unlock(&client, &node).await;
                ctx.released();
            }
            Err(error) => ctx.failed(error.to_string()),
        }
        ctx.think().await;
    }
}

fn registry() -> &'static Registry {
    static REGISTRY: OnceLock<Registry> = OnceLock::new();
    REGISTRY.get_or_init(|| {
        let variant = |name: &str, taking: Taking| {
            let run = workload(move |client, ctx| cycles(client, ctx, taking));
            Variant::asynchronous(name, "a lock", RecipeKind::ExclusiveLock, run)
        };
        let idle = workload(|_client, _ctx| async {});
        example::registry().with(
            RecipeEntry::new("xlock", RecipeKind::ExclusiveLock, "/xlock")
                .variant(variant("buggy", Taking::Blind))
                .variant(variant("fixed", Taking::Careful))
                .variant(variant("coin", Taking::Coin))
                // Makes no call: every execution is vacuous.
                .variant(Variant::asynchronous(
                    "idle",
                    "does nothing",
                    RecipeKind::ExclusiveLock,
                    idle,
                )),
        )
    })
}

/// The async example's registry (its `latch` recipe).
fn latch_registry() -> &'static Registry {
    static REGISTRY: OnceLock<Registry> = OnceLock::new();
    REGISTRY.get_or_init(example::registry)
}

fn world(variant: &str) -> World {
    World::new("xlock", variant, 2, 1)
}

fn one_loss() -> FaultAllowance {
    FaultAllowance {
        connection_loss: 1,
        ..FaultAllowance::default()
    }
}

fn explored(variant: &str) -> Summary {
    explored_in(world(variant), one_loss())
}

/// The exhaustive search of `world` within `faults` (the default bounds
/// otherwise), as `check` runs it.
fn explored_in(world: World, faults: FaultAllowance) -> Summary {
    let scenario = world
        .scenario(registry().sim_recipes())
        .unwrap_or_else(|error| panic!("{error}"));
    let bounds = Bounds {
        faults,
        ..Bounds::default()
    };
    explore(&scenario, &bounds).expect("a deterministic world")
}

/// The counterexample of the buggy lock, as its choice file.
fn counterexample() -> ChoiceFile {
    let summary = explored("buggy");
    let found = summary.found.first().expect("a counterexample");
    world("buggy").choice_file(
        one_loss(),
        Some(found.property.clone()),
        found.choices.clone(),
    )
}

/// The trace of a choice file's run, one line per event.
fn trace_of(file: &ChoiceFile) -> String {
    let (tape, report) = replay(registry().sim_recipes(), file).expect("a run");
    assert_eq!(tape.misfit, None);
    let lines: Vec<String> = report.trace.lines.iter().map(|l| l.to_string()).collect();
    lines.join("\n")
}

#[test]
fn the_buggy_lock_is_found_with_a_short_counterexample() {
    let summary = explored("buggy");
    assert_eq!(summary.found.len(), 1, "{summary:?}");
    let found = &summary.found[0];
    assert_eq!(found.property, "liveness");
    assert_eq!(found.delays, 0, "the lost reply alone breaks it");
    assert!(found.choices.len() <= 3, "{found:?}");
    assert_eq!(
        found.choices,
        vec![0, 2],
        "c0's create applied, its reply lost"
    );
    // Was 17 before faults between requests (a blip or a partition as a
    // hold or think time starts) were choices too, 25 before a silence was
    // one of them and none was offered after the heal, 29 before an outage
    // (down for half the session timeout) was one of them.
    assert_eq!(summary.executions, 33, "{summary:?}");
}

#[test]
fn the_fixed_lock_holds_exhaustively() {
    let summary = explored("fixed");
    assert!(summary.found.is_empty(), "{summary:?}");
    assert!(summary.exhaustive, "{summary:?}");
    // Was (334, 118, 3) and an estimate of 35,384 before the session
    // layer's reconnect changes of 2026-11-27 (not the explorer's), then
    // (1117, 360, 5) and 19,946 before faults between requests (a blip or
    // a partition as a hold or think time starts) were choices too, then
    // (1438, 369, 5) and 1,128,034 before a silence was one of them and
    // none was offered after the heal, (1578, 369, 5) and 3,794,943 before
    // an outage (down for half the session timeout) was one of them.
    assert_eq!(
        (summary.executions, summary.pruned, summary.delay_bound),
        (1718, 423, 5),
        "{summary:?}"
    );
    // Knuth's estimate of the tree without the memo and the delay bound.
    let estimate = summary.estimate.total().map(f64::round);
    assert_eq!(estimate, Some(10270423.0), "{summary:?}");
}

#[test]
fn a_counterexample_replays_its_violation() {
    let file = counterexample();
    let (_, report) = replay(registry().sim_recipes(), &file).expect("a run");
    let violated: Vec<String> = report
        .violations
        .iter()
        .map(|v| v.property.to_string())
        .collect();
    assert_eq!(violated, vec!["liveness".to_string()]);
    assert!(report.violations[0].diagnosis.is_some());
}

/// The child's side of the next test: prints the trace of the choice file
/// named by `ZKCHECK_CHOICES` (run only by the parent, in a second process).
#[test]
fn child_prints_a_choice_files_trace() {
    let Ok(path) = std::env::var("ZKCHECK_CHOICES") else {
        return;
    };
    let text = std::fs::read_to_string(&path).expect("the parent's file");
    let file = ChoiceFile::parse(std::path::Path::new(&path), &text).expect("a choice file");
    println!("TRACE-BEGIN\n{}\nTRACE-END", trace_of(&file));
}

#[test]
fn a_choice_string_replays_byte_for_byte_in_a_second_process() {
    let file = counterexample();
    let here = trace_of(&file);
    assert_eq!(here, trace_of(&file), "the same process, twice");
    assert_eq!(here, trace_in_a_second_process(&file, "buggy"));
}

/// The trace of `file`'s run as a second process of this test binary
/// prints it (`name`: the file's, in a temp dir of its own).
fn trace_in_a_second_process(file: &ChoiceFile, name: &str) -> String {
    let dir = std::env::temp_dir().join(format!("zkcheck-choices-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a temp dir");
    let path = dir.join(format!("{name}.toml"));
    std::fs::write(&path, file.to_toml()).expect("written");
    let child = std::process::Command::new(std::env::current_exe().expect("this test binary"))
        .args([
            "--exact",
            "child_prints_a_choice_files_trace",
            "--nocapture",
        ])
        .env("ZKCHECK_CHOICES", &path)
        .output()
        .expect("the second process runs");
    let _ = std::fs::remove_dir_all(&dir);
    let stdout = String::from_utf8_lossy(&child.stdout);
    stdout
        .split("TRACE-BEGIN\n")
        .nth(1)
        .and_then(|rest| rest.split("\nTRACE-END").next())
        .unwrap_or_else(|| panic!("no trace from the child: {stdout}"))
        .to_string()
}

/// Cross-validation (issue 29 item 4): the explorer and the stateful
/// checker on the built-in hold recipes at 2 clients, 1 cycle, one
/// connection loss. For every original both find a violation of one same
/// property; every fixed variant holds under both, the explorer's search
/// exhaustive. (The explored world sets a sans-IO recipe up as its model
/// does: `curator_lock` original creates its own persistent parents, and
/// leaks them, only when they do not exist before the run.)
/// About 30 s (21 of them the stateful checker on the semaphore original):
/// `scripts/ci-check` runs it, `cargo test --release --workspace --test async_check -- --ignored`.
#[test]
#[ignore = "about 30 s: scripts/ci-check runs it"]
fn the_explorer_and_the_stateful_checker_agree_on_the_builtin_hold_recipes() {
    use zkcheck::models::run::RunOptions;
    use zkcheck::models::{FaultBudget, Setup};
    let registry = Registry::builtin();
    let recipes = [
        "lock",
        "curator_lock",
        "semaphore",
        "shared_lock",
        "election",
    ];
    for recipe in recipes {
        for variant in ["original", "fixed"] {
            let scenario = World::new(recipe, variant, 2, 1)
                .scenario(registry.sim_recipes())
                .unwrap_or_else(|error| panic!("{recipe} {variant}: {error}"));
            let bounds = Bounds {
                faults: one_loss(),
                max_executions: Some(100_000),
                ..Bounds::default()
            };
            let started = std::time::Instant::now();
            let explored = explore(&scenario, &bounds).expect("deterministic");
            let explored_s = started.elapsed().as_secs_f64();
            let budget: FaultBudget = "connection-loss=1".parse().expect("a budget");
            let setup = Setup::new(2).with_faults(budget);
            let model = registry.model(recipe, variant).expect("a model");
            let report = model.check(&setup, &RunOptions::default());
            let checked_s = started.elapsed().as_secs_f64() - explored_s;
            let stateful: Vec<&str> = report.failures().iter().map(|p| p.name).collect();
            let found: Vec<&str> = explored.found.iter().map(|f| f.property.as_str()).collect();
            let verdicts = format!(
                "{recipe} {variant}: explorer {found:?} ({} executions, exhaustive {}, {explored_s:.1} s), stateful {stateful:?} ({checked_s:.1} s)",
                explored.executions, explored.exhaustive
            );
            println!("{verdicts}");
            if variant == "original" {
                assert!(
                    found.iter().any(|property| stateful.contains(property)),
                    "no property violated under both: {verdicts}"
                );
            } else {
                assert!(found.is_empty() && stateful.is_empty(), "{verdicts}");
                assert!(explored.exhaustive, "{verdicts}");
            }
        }
    }
}

/// PCT's sampling of `recipe`/`variant` in `registry` at `clients` with
/// one connection loss.
fn sampled(
    registry: &Registry,
    world: World,
    strategy: Strategy,
    runs: u64,
    seed: u64,
    stop_at_first: bool,
) -> Samples {
    let clients = world.clients;
    let scenario = world
        .scenario(registry.sim_recipes())
        .unwrap_or_else(|error| panic!("{error}"));
    let sampling = Sampling {
        strategy,
        runs,
        seed,
        faults: one_loss(),
        durations: world.durations,
        stop_at_first,
        timeout: None,
        runtime_seeds: Default::default(),
    };
    sample(scenario.runner().as_ref(), clients, &sampling).expect("a deterministic world")
}

fn latch(variant: &str, clients: usize) -> World {
    World::new("latch", variant, clients, 1)
}

const PCT_SEED: u64 = 29;

#[test]
fn pct_finds_the_example_latchs_bug_at_a_pinned_run() {
    let samples = sampled(
        latch_registry(),
        latch("buggy", 2),
        Strategy::Pct { depth: 3 },
        50,
        PCT_SEED,
        false,
    );
    assert_eq!(samples.runs, 50);
    // PCT at depth 3 needs 19 runs here (9 before its faults could strike
    // between requests too); the failing one delays three times and loses
    // one create's reply.
    assert_eq!(samples.first_failure, Some(19), "{samples:?}");
    let first = &samples.found[0];
    assert_eq!(first.run, 19);
    assert_eq!(first.found.property, "liveness", "{samples:?}");
    // Its choices replay the violation, as `zkcheck replay` runs them.
    let file = latch("buggy", 2).choice_file(
        one_loss(),
        Some(first.found.property.clone()),
        first.found.choices.clone(),
    );
    let (tape, report) = replay(latch_registry().sim_recipes(), &file).expect("a run");
    assert_eq!(tape.misfit, None);
    assert!(
        report
            .violations
            .iter()
            .any(|v| v.property.to_string() == "liveness"),
        "{:?}",
        report.violations
    );
}

#[test]
fn pct_holds_on_the_fixed_latch_over_its_runs() {
    let samples = sampled(
        latch_registry(),
        latch("fixed", 2),
        Strategy::Pct { depth: 3 },
        100,
        PCT_SEED,
        false,
    );
    assert_eq!(samples.runs, 100);
    assert!(samples.found.is_empty(), "{samples:?}");
    assert!(!samples.all_vacuous());
}

#[test]
fn the_same_seed_draws_the_same_runs() {
    let draw = |seed| {
        sampled(
            registry(),
            world("fixed"),
            Strategy::Pct { depth: 3 },
            40,
            seed,
            false,
        )
    };
    let (once, again, other) = (draw(PCT_SEED), draw(PCT_SEED), draw(PCT_SEED + 1));
    assert_eq!(once.digest, again.digest);
    assert_eq!(once.executions, again.executions);
    assert_ne!(once.digest, other.digest, "another seed, other runs");
}

#[test]
fn a_workload_that_achieves_nothing_has_no_verdict() {
    let summary = explored("idle");
    assert!(summary.found.is_empty(), "{summary:?}");
    assert!(summary.all_vacuous(), "{summary:?}");
    let why = summary.vacuity.first.as_deref().unwrap_or_default();
    assert!(why.contains("no call was made"), "{why}");
    let samples = sampled(
        registry(),
        world("idle"),
        Strategy::Pct { depth: 2 },
        5,
        PCT_SEED,
        false,
    );
    assert!(samples.all_vacuous(), "{samples:?}");
    // A recipe that works is not vacuous.
    assert!(!explored("fixed").all_vacuous());
}

/// Runs to first failure (issue 29 item 3): PCT at depths 1, 2, 3 and
/// uniform random choices, over the explored world of each hold recipe's
/// original and the example's buggy latch, at 2 and 3 clients with one
/// connection loss; the median over 20 seeds of the first failing run
/// (capped; a seed that found nothing within the cap counts as more), and
/// the signatures (property/mechanism) of PCT d=3's first failing runs.
/// Prints the table BENCHMARKS.md shows:
/// `cargo test --release --workspace --test async_check -- --ignored --nocapture runs_to_first_failure`.
#[test]
#[ignore = "minutes: prints the table of BENCHMARKS.md"]
fn runs_to_first_failure() {
    const SEEDS: u64 = 20;
    const CAP: u64 = 300;
    let builtin = Registry::builtin();
    let cases: [(&Registry, &str, &str); 6] = [
        (&builtin, "lock", "original"),
        (&builtin, "curator_lock", "original"),
        (&builtin, "semaphore", "original"),
        (&builtin, "shared_lock", "original"),
        (&builtin, "election", "original"),
        (latch_registry(), "latch", "buggy"),
    ];
    let strategies = [
        ("PCT d=1", Strategy::Pct { depth: 1 }),
        ("PCT d=2", Strategy::Pct { depth: 2 }),
        ("PCT d=3", Strategy::Pct { depth: 3 }),
        ("uniform", Strategy::Uniform),
    ];
    println!("| recipe | clients | steps k | PCT d=1 | PCT d=2 | PCT d=3 | uniform | wall | PCT d=3 finds |");
    println!("|---|---|---|---|---|---|---|---|---|");
    for clients in [2, 3] {
        for (registry, recipe, variant) in cases {
            let started = std::time::Instant::now();
            let mut cells = Vec::new();
            let mut steps = 0;
            let mut signatures = std::collections::BTreeSet::new();
            for (_, strategy) in strategies {
                let mut firsts: Vec<u64> = (0..SEEDS)
                    .map(|seed| {
                        let world = World::new(recipe, variant, clients, 1);
                        let samples = sampled(registry, world.clone(), strategy, CAP, seed, true);
                        steps = samples.steps;
                        if strategy == (Strategy::Pct { depth: 3 }) {
                            signatures.extend(signature(registry, &world, &samples));
                        }
                        samples.first_failure.unwrap_or(CAP + 1)
                    })
                    .collect();
                firsts.sort_unstable();
                let median = firsts[firsts.len() / 2 - 1];
                let found = firsts.iter().filter(|&&n| n <= CAP).count();
                cells.push(match median {
                    m if m > CAP => format!(">{CAP} ({found}/{SEEDS})"),
                    m => format!("{m} ({found}/{SEEDS})"),
                });
            }
            let signatures: Vec<String> = signatures.into_iter().collect();
            println!(
                "| {recipe} {variant} | {clients} | {steps} | {} | {:.1} s | {} |",
                cells.join(" | "),
                started.elapsed().as_secs_f64(),
                signatures.join(", ")
            );
        }
    }
}

/// The signature (property/mechanism) of a sampling's first failing run,
/// replayed from its choices.
fn signature(registry: &Registry, world: &World, samples: &Samples) -> Option<String> {
    let first = samples.found.first()?;
    let file = world.choice_file(
        one_loss(),
        Some(first.found.property.clone()),
        first.found.choices.clone(),
    );
    let (_, report) = replay(registry.sim_recipes(), &file).expect("a run");
    let violation = report.violations.first()?;
    let mechanism = violation
        .diagnosis
        .as_ref()
        .map_or("(undiagnosed)", |d| d.mechanism.as_str());
    Some(format!("{}/{mechanism}", violation.property))
}
