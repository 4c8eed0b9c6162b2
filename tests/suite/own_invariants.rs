//! Issue 40, item 4, for async recipes: the reset-churn latch (async code
//! against the `zookeeper-client` API that deletes and re-creates its node
//! on every reconnect) is caught by `node_churn` in a seed sweep under its
//! own signature while its fix holds; an application that states its own
//! invariant with `ctx.violation` fails the run under the invariant's name
//! (printed, bucketed, replayed, and found by the async explorer); a name
//! that cannot name an invariant is refused.

// Runs the simulator, which exists only with `--cfg madsim` (.cargo/config.toml).
#![cfg(madsim)]

use std::future::Future;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::pin::pin;
use std::sync::OnceLock;
use std::task::Poll;
use zk_sim::explore::run::{explore, replay, World};
use zk_sim::explore::search::Bounds;
use zk_sim::explore::FaultAllowance;
use zk_sim::scenario::Scenario;
use zk_sim::world::RunReport;
use zkcheck::asynchronous::{workload, Context};
use zkcheck::{testing, RecipeEntry, RecipeKind, Registry, Variant};
use zkcheck_zookeeper_client::{Acls, Client, CreateMode, Error, SessionState};

/// The invariant the `reset_reports` variant states.
const INVARIANT: &str = "node_kept_across_reconnects";

/// Seeds a sweep runs.
const SWEEP_SEEDS: u64 = 1_000;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// Keeps its node across reconnects.
    Fixed,
    /// Re-creates its node on every reconnect while it waits (the bug).
    Reset,
    /// The same, and reports each reset with `ctx.violation`.
    ResetReports,
    /// Reports under a built-in property's name (a programmer error).
    BadName,
}

/// One candidacy of the latch.
struct Latch {
    client: Client,
    dir: String,
    prefix: String,
    node: Option<String>,
}

/// Whether `a` finished first (`a` wins a tie: no draw outside the seed).
async fn first_of(a: impl Future, b: impl Future) -> bool {
    let (mut a, mut b) = (pin!(a), pin!(b));
    std::future::poll_fn(|cx| {
        if a.as_mut().poll(cx).is_ready() {
            return Poll::Ready(true);
        }
        b.as_mut().poll(cx).map(|_| false)
    })
    .await
}

/// Returns once the session dropped and came back (same session).
async fn reconnected(client: &Client) {
    let mut states = client.state_watcher();
    while states.peek_state() == SessionState::SyncConnected {
        states.changed().await;
    }
    while states.changed().await != SessionState::SyncConnected {}
}

/// Returns once the session is no longer surely connected.
async fn suspended(client: &Client) {
    let mut states = client.state_watcher();
    while states.peek_state() == SessionState::SyncConnected {
        states.changed().await;
    }
}

fn sequence(name: &str) -> i64 {
    name.rsplit('-')
        .next()
        .and_then(|digits| digits.parse().ok())
        .unwrap_or(i64::MAX)
}

impl Latch {
    /// Creates our node; after a lost reply, looks for it by our prefix
    /// and creates it again only if the lost create was never applied.
    async fn create(&mut self) -> Result<String, Error> {
        let options = CreateMode::EphemeralSequential.with_acls(Acls::anyone_all());
        let path = format!("{}/{}", self.dir, self.prefix);
        loop {
            let name = match self.client.create(&path, b"", &options).await {
                Ok((_, sequence)) => Some(format!("{}{sequence}", self.prefix)),
                Err(Error::ConnectionLoss) => self.find().await?,
                Err(error) => return Err(error),
            };
            if let Some(name) = name {
                self.node = Some(name.clone());
                return Ok(name);
            }
        }
    }

    async fn find(&self) -> Result<Option<String>, Error> {
        loop {
            match self.client.list_children(&self.dir).await {
                Ok(children) => {
                    return Ok(children.into_iter().find(|n| n.starts_with(&self.prefix)))
                }
                Err(Error::ConnectionLoss) => continue,
                Err(error) => return Err(error),
            }
        }
    }

    /// Waits until this candidate leads; its sequence number is the token.
    async fn acquire(&mut self, ctx: &Context, mode: Mode) -> Result<i64, Error> {
        let mut me = self.create().await?;
        loop {
            let mut children = match self.client.list_children(&self.dir).await {
                Ok(children) => children,
                Err(Error::ConnectionLoss) if mode == Mode::Fixed => continue,
                // A reset on a lost connection too (what the explorer's
                // per-request faults reach).
                Err(Error::ConnectionLoss) => {
                    me = self.reset(ctx, mode, &me).await?;
                    continue;
                }
                Err(error) => return Err(error),
            };
            children.sort_by_key(|name| sequence(name));
            let Some(position) = children.iter().position(|name| *name == me) else {
                return Err(Error::NoNode); // our node is gone: the session expired
            };
            if position == 0 {
                return Ok(sequence(&me));
            }
            let predecessor = format!("{}/{}", self.dir, children[position - 1]);
            let watcher = match self.client.check_and_watch_stat(&predecessor).await {
                Ok((Some(_), watcher)) => watcher,
                Ok((None, _)) | Err(Error::ConnectionLoss) => continue,
                Err(error) => return Err(error),
            };
            if mode == Mode::Fixed {
                watcher.changed().await;
            } else if !first_of(watcher.changed(), reconnected(&self.client)).await {
                me = self.reset(ctx, mode, &me).await?;
            }
        }
    }

    /// The bug: deletes our node and creates a new one.
    async fn reset(&mut self, ctx: &Context, mode: Mode, node: &str) -> Result<String, Error> {
        self.report_reset(ctx, mode, node);
        self.release().await?;
        self.create().await
    }

    fn report_reset(&self, ctx: &Context, mode: Mode, node: &str) {
        let detail = format!("re-creating {node} after a reconnect in the same session");
        match mode {
            Mode::ResetReports => ctx.violation(INVARIANT, detail),
            Mode::BadName => ctx.violation("one_leader", detail),
            Mode::Fixed | Mode::Reset => {}
        }
    }

    /// Deletes our node, if we have one.
    async fn release(&mut self) -> Result<(), Error> {
        let Some(name) = self.node.take() else {
            return Ok(());
        };
        let path = format!("{}/{name}", self.dir);
        loop {
            match self.client.delete(&path, None).await {
                Ok(()) | Err(Error::NoNode) | Err(Error::SessionExpired) => return Ok(()),
                Err(Error::ConnectionLoss) => continue,
                Err(error) => return Err(error),
            }
        }
    }
}

async fn lead(mut client: Client, ctx: Context, mode: Mode) {
    for cycle in ctx.cycles() {
        if client.state() == SessionState::Expired {
            client = Client::connect(ctx.cluster()).await.expect("a new session");
        }
        let mut latch = Latch {
            client: client.clone(),
            dir: ctx.path().to_string(),
            prefix: format!("c{}-{cycle}-", ctx.index()),
            node: None,
        };
        ctx.acquiring();
        match latch.acquire(&ctx, mode).await {
            Ok(token) => ctx.hold_fenced(token, suspended(&client)).await,
            Err(error) => ctx.failed(error.to_string()),
        }
        let _ = latch.release().await;
        ctx.released();
        ctx.think().await;
    }
}

fn registry() -> &'static Registry {
    static REGISTRY: OnceLock<Registry> = OnceLock::new();
    REGISTRY.get_or_init(|| {
        let variant = |name: &str, about: &str, mode: Mode| {
            let run = workload(move |client, ctx| lead(client, ctx, mode));
            Variant::asynchronous(name, about, RecipeKind::Election, run)
        };
        Registry::builtin().with(
            RecipeEntry::new("async_reset_latch", RecipeKind::Election, "/latch")
                .variant(variant("fixed", "keeps its node", Mode::Fixed))
                .variant(variant("reset", "re-creates it on reconnect", Mode::Reset))
                .variant(variant("reset_reports", "and says so", Mode::ResetReports))
                .variant(variant("bad_name", "says so as one_leader", Mode::BadName)),
        )
    })
}

/// Three candidates, a reconnect every few hundred ms each, no expiry.
const SCENARIO: &str = r#"
recipe = "async_reset_latch"
variant = "fixed"
clients = 3
seeds = "0..1000"
duration_ms = 5000
heal_ms = 5000

[config]
parents = ["/latch"]

[workload]
cycles = 20
hold_ms = [50, 200]
think_ms = [0, 20]

[faults.rates]
disconnects_per_s = 4.0
down_ms = [0, 100]

[properties]
check = ["node_churn", "one_leader"]
"#;

fn scenario_text(variant: &str) -> String {
    SCENARIO.replace("variant = \"fixed\"", &format!("variant = \"{variant}\""))
}

fn scenario(variant: &str) -> Scenario {
    let file = std::path::Path::new("async-reset-latch.toml");
    Scenario::parse(file, &scenario_text(variant), registry().sim_recipes())
        .unwrap_or_else(|error| panic!("{error}"))
}

fn signatures(report: &RunReport) -> Vec<String> {
    report.violations.iter().map(|v| v.signature()).collect()
}

#[test]
fn node_churn_catches_the_async_reset_churn_latch_and_its_fix_holds() {
    let (reset, fixed) = (scenario("reset").runner(), scenario("fixed").runner());
    let mut caught = 0;
    for seed in 0..SWEEP_SEEDS {
        let report = fixed.run(seed, false);
        assert!(
            report.violations.is_empty(),
            "fixed, seed {seed}: {:?}",
            signatures(&report)
        );
        let found = signatures(&reset.run(seed, false));
        caught += u64::from(found.iter().any(|s| s == "node_churn/create-churn"));
        assert!(
            found.iter().all(|s| s.starts_with("node_churn/")),
            "reset, seed {seed}: {found:?}"
        );
    }
    // Measured: caught on all 1,000 seeds; the fix holds on all of them.
    assert!(caught >= SWEEP_SEEDS * 9 / 10, "caught on {caught} seeds");
}

#[test]
fn ctx_violation_fails_the_run_under_the_invariant_s_name() {
    let runner = scenario("reset_reports").runner();
    let report = (0..20)
        .map(|seed| runner.run(seed, false))
        .find(|report| !report.violations.is_empty())
        .expect("a seed that reconnects");
    let own = report
        .violations
        .iter()
        .find(|v| v.property_name() == INVARIANT)
        .unwrap_or_else(|| panic!("{:?}", signatures(&report)));
    assert_eq!(own.signature(), format!("{INVARIANT}/reported"));
    assert!(own.message.contains("after a reconnect"), "{own}");
    // Replayed: the same seed, the same violations.
    assert_eq!(
        signatures(&runner.run(report.seed, false)),
        signatures(&report)
    );
}

#[test]
fn a_sweep_prints_and_buckets_the_invariant_under_its_name() {
    let dir = std::env::temp_dir().join(format!("zkcheck-own-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a temp dir");
    let path = dir.join("async-reset-latch.toml");
    std::fs::write(&path, scenario_text("reset_reports")).expect("written");
    let sweep = || testing::scenario(registry(), &path).seeds("0..20").passes();
    let payload = catch_unwind(AssertUnwindSafe(sweep)).expect_err("the sweep fails");
    let _ = std::fs::remove_dir_all(&dir);
    let text = payload
        .downcast_ref::<String>()
        .cloned()
        .unwrap_or_default();
    assert!(
        text.contains(&format!("VIOLATION of {INVARIANT}")),
        "{text}"
    );
    assert!(text.contains(&format!("{INVARIANT}/reported")), "{text}");
}

#[test]
fn the_async_explorer_finds_ctx_violation() {
    let world = World::new("async_reset_latch", "reset_reports", 2, 1);
    let scenario = world
        .scenario(registry().sim_recipes())
        .unwrap_or_else(|error| panic!("{error}"));
    let bounds = Bounds {
        faults: FaultAllowance {
            connection_loss: 1,
            ..FaultAllowance::default()
        },
        ..Bounds::default()
    };
    let summary = explore(&scenario, &bounds).expect("a deterministic world");
    // Measured: found after 17 executions.
    let found = summary
        .found
        .iter()
        .find(|found| found.property == INVARIANT)
        .unwrap_or_else(|| panic!("{summary:?}"));
    // Its choices replay the violation.
    let file = world.choice_file(
        bounds.faults,
        Some(found.property.clone()),
        found.choices.clone(),
    );
    let (_, report) = replay(registry().sim_recipes(), &file).expect("a run");
    assert!(
        signatures(&report).contains(&format!("{INVARIANT}/reported")),
        "{:?}",
        signatures(&report)
    );
}

#[test]
fn a_built_in_property_s_name_is_refused() {
    let runner = scenario("bad_name").runner();
    let panicked = (0..20).any(|seed| {
        let run = catch_unwind(AssertUnwindSafe(|| runner.run(seed, false)));
        let Err(payload) = run else {
            return false;
        };
        let text = payload
            .downcast_ref::<String>()
            .cloned()
            .unwrap_or_default();
        assert!(
            text.contains("`one_leader` is a built-in property's name"),
            "{text}"
        );
        true
    });
    assert!(panicked, "no seed reconnected while waiting");
}

#[test]
fn invariant_is_never_selected_and_node_churn_is_refused_where_it_cannot_judge() {
    let parse = |text: &str| {
        Scenario::parse(
            std::path::Path::new("s.toml"),
            text,
            registry().sim_recipes(),
        )
        .map(|_| ())
        .map_err(|error| error.to_string())
    };
    let selected = SCENARIO.replace(
        r#"check = ["node_churn", "one_leader"]"#,
        r#"check = ["invariant"]"#,
    );
    let error = parse(&selected).expect_err("refused");
    assert!(error.contains("always judged"), "{error}");
    let semaphore = r#"
recipe = "semaphore"
variant = "fixed"
clients = 3
[properties]
check = ["node_churn"]
"#;
    let error = parse(semaphore).expect_err("refused");
    assert!(error.contains("`node_churn` does not apply"), "{error}");
    assert_eq!(parse(SCENARIO), Ok(()));
}
