//! `check` on an async recipe: exhaustive exploration by re-execution
//! (`zk_sim::explore`). A small async lock written for this test: the
//! buggy variant, after a lost create reply, tries again, finds its own
//! node and waits on it forever (liveness); the fixed one looks whether
//! the node is its own first. At 2 clients with one connection loss the
//! explorer finds the bug with a short choice string and shows the fix
//! holds exhaustively; a counterexample's choices replay byte for byte in
//! a second process.

// Runs the simulator, which exists only with `--cfg madsim` (.cargo/config.toml).
#![cfg(madsim)]

use std::sync::OnceLock;
use zk_sim::explore::file::ChoiceFile;
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

async fn cycles(client: Client, ctx: Context, buggy: bool) {
    let node = format!("{}/holder", ctx.path());
    for _ in ctx.cycles() {
        ctx.acquiring();
        match lock(&client, &node, buggy).await {
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
        let variant = |name: &str, buggy: bool| {
            let run = workload(move |client, ctx| cycles(client, ctx, buggy));
            Variant::asynchronous(name, "a lock", RecipeKind::ExclusiveLock, run)
        };
        Registry::builtin().with(
            RecipeEntry::new("xlock", RecipeKind::ExclusiveLock, "/xlock")
                .variant(variant("buggy", true))
                .variant(variant("fixed", false)),
        )
    })
}

fn world(variant: &str) -> World {
    World {
        recipe: "xlock".into(),
        variant: variant.into(),
        clients: 2,
        cycles: 1,
    }
}

fn one_loss() -> FaultAllowance {
    FaultAllowance {
        connection_loss: 1,
        expiry: 0,
    }
}

fn explored(variant: &str) -> Summary {
    let scenario = world(variant)
        .scenario(registry().sim_recipes())
        .unwrap_or_else(|error| panic!("{error}"));
    let bounds = Bounds {
        faults: one_loss(),
        ..Bounds::default()
    };
    explore(&scenario, &bounds).expect("a deterministic world")
}

/// The counterexample of the buggy lock, as its choice file.
fn counterexample() -> ChoiceFile {
    let summary = explored("buggy");
    let found = summary.found.first().expect("a counterexample");
    ChoiceFile {
        recipe: "xlock".into(),
        variant: "buggy".into(),
        clients: 2,
        cycles: 1,
        faults: one_loss(),
        property: Some(found.property.clone()),
        choices: found.choices.clone(),
    }
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
    assert_eq!(summary.executions, 17, "{summary:?}");
}

#[test]
fn the_fixed_lock_holds_exhaustively() {
    let summary = explored("fixed");
    assert!(summary.found.is_empty(), "{summary:?}");
    assert!(summary.exhaustive, "{summary:?}");
    assert_eq!(
        (summary.executions, summary.pruned, summary.delay_bound),
        (334, 118, 3),
        "{summary:?}"
    );
    // Knuth's estimate of the tree without the memo and the delay bound.
    let estimate = summary.estimate.total().map(f64::round);
    assert_eq!(estimate, Some(35384.0), "{summary:?}");
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
    let dir = std::env::temp_dir().join(format!("zkcheck-choices-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a temp dir");
    let path = dir.join("buggy.toml");
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
    let there = stdout
        .split("TRACE-BEGIN\n")
        .nth(1)
        .and_then(|rest| rest.split("\nTRACE-END").next())
        .unwrap_or_else(|| panic!("no trace from the child: {stdout}"));
    assert_eq!(here, there);
}

/// Cross-validation (issue 29 item 4): the explorer and the stateful
/// checker on the built-in hold recipes at 2 clients, 1 cycle, one
/// connection loss. For every original both find a violation of one same
/// property; every fixed variant holds under both, the explorer's search
/// exhaustive. (The explored world sets a sans-IO recipe up as its model
/// does: `curator_lock` original creates its own persistent parents, and
/// leaks them, only when they do not exist before the run.)
/// About 30 s (21 of them the stateful checker on the semaphore original):
/// `scripts/ci-check` runs it, `cargo test --test async_check -- --ignored`.
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
            let scenario = World {
                recipe: recipe.into(),
                variant: variant.into(),
                clients: 2,
                cycles: 1,
            }
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
