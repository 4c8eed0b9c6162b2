//! A queue that correctly reports an offer as failed when its session
//! expired is not blamed for the take nobody can answer (issue 32, item 3):
//! at 3 clients with one expiry, neither the model checker nor the
//! simulator reports `no_stuck_waiter` or `liveness` for it; a consumer is
//! stuck only while an item it could take exists or will still be offered,
//! so a queue that waits without a watch while an item is there still is.
//!
//! The queue is written as a user writes one (a table of two variants, no
//! model of its own: the generic queue model checks it): offer creates a
//! persistent sequential child; an expiry while offering answers `Failed`
//! (the item may or may not be in the queue); take lists the children
//! (with a watch), reads the first, deletes it, and lists again after a new
//! session.

// Runs the simulator, which exists only with `--cfg madsim` (.cargo/config.toml).
#![cfg(madsim)]

use zk_models::properties;
use zk_models::queue::{model_of, QueueSite};
use zk_models::run::{CheckReport, RunOptions, Strategy, Verdict};
use zk_models::Setup;
use zk_recipes::queue::{QueueCall, QueueFailure, QueueOutcome};
use zk_recipes::zk::Acls;
use zk_recipes::zk::{
    CreateMode, Path, Reply, Request, SessionEvent, ZkError, ZkResult, ANY_VERSION,
};
use zk_recipes::{Input, Outbox, Recipe, Tag};
use zk_sim::oracles::Property;
use zk_sim::scenario::Scenario;
use zkcheck::{QueueCalls, RecipeEntry, RecipeKind, Registry, VariantTable};

const OFFER: Tag = Tag(1);
const LIST: Tag = Tag(2);
const READ: Tag = Tag(3);
const DELETE: Tag = Tag(4);

/// Where the running call is.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Step {
    Idle,
    Offer,
    List,
    /// A take found the queue empty and waits on its child watch.
    Wait,
    Read(Path),
    Delete(Vec<u8>),
    /// A take whose session expired: it lists again in the next session.
    Resume,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct ExpiringQueue {
    dir: Path,
    /// Lists with a watch (the fixed variant); without one, a take on an
    /// empty queue waits for nothing.
    watch: bool,
    step: Step,
}

impl ExpiringQueue {
    fn new(dir: Path, watch: bool) -> ExpiringQueue {
        ExpiringQueue {
            dir,
            watch,
            step: Step::Idle,
        }
    }

    fn list(&mut self, out: &mut Outbox<QueueOutcome>) {
        let path = self.dir.clone();
        let watch = self.watch;
        out.send(LIST, Request::GetChildren { path, watch });
        self.step = Step::List;
    }

    fn fail(&mut self, error: ZkError, out: &mut Outbox<QueueOutcome>) {
        self.step = Step::Idle;
        out.emit(QueueOutcome::Failed(QueueFailure::Keeper(error)));
    }

    fn on_call(&mut self, call: QueueCall, out: &mut Outbox<QueueOutcome>) {
        match call {
            QueueCall::Offer(data) => {
                let Ok(path) = self.dir.child("item-") else {
                    return self.fail(ZkError::BadArguments, out);
                };
                let mode = CreateMode::PersistentSequential;
                out.send(
                    OFFER,
                    Request::Create {
                        path,
                        data,
                        mode,
                        acl: Acls::Open,
                    },
                );
                self.step = Step::Offer;
            }
            QueueCall::Take | QueueCall::Poll => self.list(out),
        }
    }

    fn on_session(&mut self, event: SessionEvent, out: &mut Outbox<QueueOutcome>) {
        match (event, &self.step) {
            // The create may or may not have been applied: say so.
            (SessionEvent::Expired, Step::Offer) => self.fail(ZkError::SessionExpired, out),
            (SessionEvent::Expired, Step::Idle) => {}
            (SessionEvent::Expired, _) => self.step = Step::Resume,
            (SessionEvent::Connected { .. }, Step::Resume | Step::Wait) => self.list(out),
            _ => {}
        }
    }

    fn on_children(&mut self, mut names: Vec<String>, out: &mut Outbox<QueueOutcome>) {
        names.sort();
        match names.first().map(|name| self.dir.child(name)) {
            None => self.step = Step::Wait,
            Some(Ok(path)) => {
                let request = Request::GetData {
                    path: path.clone(),
                    watch: false,
                };
                out.send(READ, request);
                self.step = Step::Read(path);
            }
            Some(Err(_)) => self.fail(ZkError::BadArguments, out),
        }
    }

    fn on_reply(&mut self, tag: Tag, result: ZkResult, out: &mut Outbox<QueueOutcome>) {
        match (std::mem::replace(&mut self.step, Step::Idle), tag, result) {
            (Step::Offer, OFFER, Ok(_)) => out.emit(QueueOutcome::Offered),
            (Step::Offer, OFFER, Err(error)) => self.fail(error, out),
            (Step::List, LIST, Ok(Reply::Children(names))) => self.on_children(names, out),
            (Step::Read(path), READ, Ok(Reply::Data { data, .. })) => {
                let version = ANY_VERSION;
                out.send(DELETE, Request::Delete { path, version });
                self.step = Step::Delete(data);
            }
            (Step::Delete(data), DELETE, Ok(_)) => out.emit(QueueOutcome::Item(data)),
            // The session is gone: list again in the next one.
            (Step::List | Step::Read(_) | Step::Delete(_), _, Err(ZkError::SessionExpired)) => {
                self.step = Step::Resume
            }
            // Another consumer took it first: look again.
            (Step::Read(_) | Step::Delete(_), _, Err(_)) => self.list(out),
            (Step::List, LIST, Err(error)) => self.fail(error, out),
            // A late reply of an earlier step or session.
            (step, _, _) => self.step = step,
        }
    }
}

impl Recipe for ExpiringQueue {
    type Call = QueueCall;
    type Outcome = QueueOutcome;

    fn handle(&mut self, input: Input<QueueCall>, out: &mut Outbox<QueueOutcome>) {
        match input {
            Input::Call(call) => self.on_call(call, out),
            Input::Reply { tag, result } => self.on_reply(tag, result, out),
            Input::Session(event) => self.on_session(event, out),
            Input::Watch(_) if self.step == Step::Wait => self.list(out),
            _ => {}
        }
    }
}

fn dir() -> Path {
    Path::new("/q").expect("a path")
}

/// The built-in recipes and `expiring_queue`: two variants, one row each.
fn registry() -> Registry {
    let calls = QueueCalls::new(QueueCall::Offer, QueueCall::Take);
    let queues = VariantTable::queue(calls, |c, watch: bool| {
        ExpiringQueue::new(c.path.clone(), watch)
    })
    .needs_existing_path();
    Registry::builtin().with(
        RecipeEntry::new("expiring_queue", RecipeKind::Queue, "/q").with_variants(queues.rows([
            ("fixed", "fails an offer whose session expired", true),
            (
                "forgets_watch",
                "waits on an empty queue without a watch",
                false,
            ),
        ])),
    )
}

fn options() -> RunOptions {
    RunOptions {
        strategy: Strategy::Bfs,
        threads: 1,
        max_depth: None,
        timeout: None,
        progress_every: None,
        memory_budget: None,
    }
}

fn check(variant: &str, setup: &Setup) -> CheckReport {
    let model = registry()
        .model("expiring_queue", variant)
        .expect("a model");
    let report = model.check(setup, &options());
    assert!(report.exhaustive, "{}", report.summary());
    report
}

fn verdict(report: &CheckReport, property: &str) -> Verdict {
    report
        .property(property)
        .unwrap_or_else(|| panic!("no property {property}\n{}", report.summary()))
        .verdict
}

fn three_clients_one_expiry() -> Setup {
    Setup::new(3).with_faults("expiry=1".parse().expect("faults"))
}

#[test]
fn a_failed_offer_does_not_make_a_stuck_waiter_in_the_model() {
    let report = check("fixed", &three_clients_one_expiry());
    assert_eq!(verdict(&report, "no_stuck_waiter"), Verdict::Holds);
    assert_eq!(verdict(&report, "liveness"), Verdict::Holds);
    assert_eq!(verdict(&report, "workload_can_complete"), Verdict::Found);
}

/// The same model with the unconditional stuck-waiter and liveness
/// properties (every take must be answered): they fail, so the case the
/// queue's own properties accept is in the explored space.
#[test]
fn the_unconditional_properties_would_blame_the_failed_offer() {
    let site = QueueSite {
        name: "expiring_queue/fixed".into(),
        dir: dir(),
        setup_requests: vec![Request::Create {
            path: dir(),
            data: Vec::new(),
            mode: CreateMode::Persistent,
            acl: Acls::Open,
        }],
    };
    let setup = three_clients_one_expiry();
    let calls = QueueCalls::new(QueueCall::Offer, QueueCall::Take);
    let model = model_of(&site, &setup, &calls, |_| ExpiringQueue::new(dir(), true))
        .with_properties(vec![properties::no_stuck_waiter(), properties::liveness()]);
    let report = zk_models::run::check(model, &options());
    assert_eq!(verdict(&report, "no_stuck_waiter"), Verdict::Violated);
    assert_eq!(verdict(&report, "liveness"), Verdict::Violated);
}

#[test]
fn a_take_waiting_without_a_watch_while_an_item_is_there_is_still_stuck() {
    let report = check("forgets_watch", &Setup::new(2));
    assert_eq!(verdict(&report, "no_stuck_waiter"), Verdict::Violated);
    assert_eq!(verdict(&report, "liveness"), Verdict::Violated);
}

/// 3 clients (one producer), the producer's session expired while it
/// offers its items.
fn scenario() -> Scenario {
    let text = r#"description = "a producer's session expires while it offers"
recipe = "expiring_queue"
variant = "fixed"
clients = 3
seeds = "0..20"
duration_ms = 5000
heal_ms = 5000

[config]
path = "/q"
parents = ["/q"]

[workload]
producers = 1
items = 10
think_ms = [0, 2]

[timing]
session_timeout_ms = 2000

[properties]
check = ["exactly_once", "liveness", "no_leaks"]

[[faults.schedule]]
at_ms = 4
client = 0
fault = "expire"
"#;
    let file = std::path::Path::new("queue-failed-offer.toml");
    Scenario::parse(file, text, registry().sim_recipes()).unwrap_or_else(|error| panic!("{error}"))
}

#[test]
fn a_failed_offer_does_not_fail_liveness_in_the_simulator() {
    let scenario = scenario();
    assert!(scenario.properties.contains(&Property::Liveness));
    let runner = scenario.runner();
    let mut failed_offers = 0;
    for seed in 0..20 {
        let report = runner.run(seed, false);
        assert!(
            report.violations.is_empty(),
            "seed {seed}: {:?}",
            report.violations
        );
        let first_failure = report.stats.first_failure.unwrap_or_default();
        if first_failure.contains("SessionExpired") {
            failed_offers += 1;
        }
    }
    assert!(
        failed_offers > 0,
        "no seed failed an offer: the test is vacuous"
    );
}

/// A consumer whose take never returns (it lists an empty queue without a
/// watch) is the recipe's bug, on every seed: never
/// `liveness/heal-window-too-short`, "the harness's configuration", which
/// would tell a user to raise `heal_ms` for it. The consumer takes an item
/// first and calls `take` again in the same nanosecond; the bounded wait it
/// then runs is no timer of the harness's (issue 40, item 2).
#[test]
fn a_take_that_never_returns_is_not_blamed_on_the_heal_window() {
    let text = r#"description = "a consumer's take waits on nothing"
recipe = "expiring_queue"
variant = "forgets_watch"
clients = 2
seeds = "0..20"
duration_ms = 2000
heal_ms = 3000

[config]
path = "/q"
parents = ["/q"]

[workload]
producers = 1
items = 5
think_ms = [50, 200]

[properties]
check = ["exactly_once", "liveness"]
"#;
    let file = std::path::Path::new("queue-take-never-returns.toml");
    let scenario = Scenario::parse(file, text, registry().sim_recipes())
        .unwrap_or_else(|error| panic!("{error}"));
    let runner = scenario.runner();
    let mut after_an_item = 0;
    for seed in 0..20 {
        let report = runner.run(seed, false);
        let liveness = report
            .violations
            .iter()
            .find(|v| v.property == Property::Liveness)
            .unwrap_or_else(|| panic!("seed {seed}: the stuck take is not reported: {report:?}"));
        let signature = liveness.signature();
        let shown = liveness.to_string();
        assert_ne!(
            signature, "liveness/heal-window-too-short",
            "seed {seed}: {shown}"
        );
        assert!(
            !shown.contains("the harness's configuration"),
            "seed {seed}: {shown}"
        );
        assert_eq!(signature, "liveness/no-watch", "seed {seed}: {shown}");
        if report.stats.goals > 0 {
            after_an_item += 1;
        }
    }
    assert!(
        after_an_item > 0,
        "no consumer took an item before it got stuck: the case is not exercised"
    );
}
