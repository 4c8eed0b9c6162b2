//! A queue's two promises checked apart: `exactly_once` (each acknowledged
//! item taken once, none twice, none that nobody offered) and `fifo` (each
//! consumer takes a producer's items in offer order). A small test-only
//! queue, registered through the registry's door, takes the head (holds
//! both), the tail (every item once, out of order: breaks `fifo` only) or
//! peeks at the head without removing it (duplicates: breaks
//! `exactly_once`), in the simulator and in the model checker. The shipped
//! queue scenarios name both properties, and a scenario that names none
//! checks both.

// Runs the simulator, which exists only with `--cfg madsim` (.cargo/config.toml).
#![cfg(madsim)]

use zk_models::run::{CheckReport, RunOptions, Strategy, Verdict};
use zk_models::Setup;
use zk_recipes::queue::{QueueCall, QueueOutcome};
use zk_recipes::zk::Acls;
use zk_recipes::zk::{CreateMode, Path, Reply, Request, ZkResult};
use zk_recipes::{Input, Outbox, Recipe, Tag};
use zk_sim::oracles::Property;
use zk_sim::scenario::Scenario;
use zkcheck::{QueueCalls, RecipeEntry, RecipeKind, Registry, Variant};

const OFFER: Tag = Tag(1);
const LIST: Tag = Tag(2);
const READ: Tag = Tag(3);
const DELETE: Tag = Tag(4);

/// Which child a take picks, and whether it removes it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Pick {
    /// The oldest child, deleted: a FIFO queue.
    Head,
    /// The newest child, deleted: each item once, last in first out.
    Tail,
    /// The oldest child, never deleted: the same item again and again.
    Peek,
}

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
}

/// A queue on the test's own terms: no recovery from faults (the tests
/// run without any).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct ToyQueue {
    dir: Path,
    pick: Pick,
    step: Step,
}

impl ToyQueue {
    fn new(dir: Path, pick: Pick) -> ToyQueue {
        ToyQueue {
            dir,
            pick,
            step: Step::Idle,
        }
    }

    fn list(&mut self, out: &mut Outbox<QueueOutcome>) {
        let path = self.dir.clone();
        out.send(LIST, Request::GetChildren { path, watch: true });
        self.step = Step::List;
    }

    fn on_call(&mut self, call: QueueCall, out: &mut Outbox<QueueOutcome>) {
        match call {
            QueueCall::Offer(data) => {
                let Ok(path) = self.dir.child("item-") else {
                    return out.emit(QueueOutcome::Empty);
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

    fn on_children(&mut self, mut names: Vec<String>, out: &mut Outbox<QueueOutcome>) {
        names.sort();
        let name = match self.pick {
            Pick::Head | Pick::Peek => names.first(),
            Pick::Tail => names.last(),
        };
        match name.map(|name| self.dir.child(name)) {
            None => self.step = Step::Wait,
            Some(Ok(node)) => {
                let request = Request::GetData {
                    path: node.clone(),
                    watch: false,
                };
                out.send(READ, request);
                self.step = Step::Read(node);
            }
            Some(Err(_)) => out.emit(QueueOutcome::Empty),
        }
    }

    fn on_reply(&mut self, tag: Tag, result: ZkResult, out: &mut Outbox<QueueOutcome>) {
        match (std::mem::replace(&mut self.step, Step::Idle), tag, result) {
            (Step::Offer, OFFER, Ok(_)) => out.emit(QueueOutcome::Offered),
            (Step::List, LIST, Ok(Reply::Children(names)))
            | (
                Step::List,
                LIST,
                Ok(Reply::Children2 {
                    children: names, ..
                }),
            ) => self.on_children(names, out),
            (Step::Read(_), READ, Ok(Reply::Data { data, .. })) if self.pick == Pick::Peek => {
                out.emit(QueueOutcome::Item(data))
            }
            (Step::Read(path), READ, Ok(Reply::Data { data, .. })) => {
                out.send(DELETE, Request::Delete { path, version: -1 });
                self.step = Step::Delete(data);
            }
            (Step::Delete(data), DELETE, Ok(_)) => out.emit(QueueOutcome::Item(data)),
            // Another consumer took it first: look again.
            (Step::Read(_) | Step::Delete(_), _, Err(_)) => self.list(out),
            (_, _, Err(error)) => out.emit(QueueOutcome::keeper(&error)),
            (step, _, _) => self.step = step,
        }
    }
}

impl Recipe for ToyQueue {
    type Call = QueueCall;
    type Outcome = QueueOutcome;

    fn handle(&mut self, input: Input<QueueCall>, out: &mut Outbox<QueueOutcome>) {
        match input {
            Input::Call(call) => self.on_call(call, out),
            Input::Reply { tag, result } => self.on_reply(tag, result, out),
            Input::Watch(_) if self.step == Step::Wait => self.list(out),
            _ => {}
        }
    }
}

fn dir() -> Path {
    Path::new("/q").expect("a path")
}

/// The built-in recipes and `toy_queue` with one variant per [`Pick`],
/// each with the queue model (its consumers take `--cycles` items each).
fn registry() -> Registry {
    let variant = |name: &str, pick: Pick| {
        let calls = QueueCalls::new(QueueCall::Offer, QueueCall::Take);
        let model_name = name.to_string();
        Variant::queue(name, "a test-only queue", calls, move |_| {
            ToyQueue::new(dir(), pick)
        })
        .needs_existing_path()
        .model(move |setup| {
            zk_models::queue::model(&model_name, setup, |_| ToyQueue::new(dir(), pick))
        })
    };
    Registry::builtin().with(
        RecipeEntry::new("toy_queue", RecipeKind::Queue, "/q")
            .variant(variant("head", Pick::Head))
            .variant(variant("tail", Pick::Tail))
            .variant(variant("peek", Pick::Peek)),
    )
}

/// A fault-free scenario of `variant` checking `check` (a TOML list;
/// empty: the kind's defaults).
fn scenario(recipe: &str, variant: &str, check: &str) -> Scenario {
    let properties = match check {
        "" => String::new(),
        check => format!("[properties]\ncheck = {check}\n"),
    };
    let text = format!(
        r#"description = "queue delivery, split"
recipe = "{recipe}"
variant = "{variant}"
clients = 4
seeds = "0..20"
duration_ms = 5000
heal_ms = 5000

[config]
path = "/q"
parents = ["/q"]

[workload]
producers = 2
items = 10
think_ms = [0, 3]

{properties}"#
    );
    let file = std::path::Path::new("queue-split.toml");
    Scenario::parse(file, &text, registry().sim_recipes()).unwrap_or_else(|error| panic!("{error}"))
}

/// Every property broken on seeds 0..20 (with its seed count).
fn broken(scenario: &Scenario) -> Vec<(Property, usize)> {
    let runner = scenario.runner();
    let mut counts = std::collections::BTreeMap::new();
    for seed in 0..20 {
        for violation in runner.run(seed, false).violations {
            *counts.entry(violation.property).or_insert(0) += 1;
        }
    }
    counts.into_iter().collect()
}

fn properties_of(broken: &[(Property, usize)]) -> Vec<Property> {
    broken.iter().map(|(property, _)| *property).collect()
}

const BOTH: &str = r#"["exactly_once", "fifo", "liveness", "no_leaks"]"#;

#[test]
fn a_queue_defaults_to_exactly_once_and_fifo() {
    let defaults = RecipeKind::Queue.default_properties();
    assert!(defaults.contains(&Property::ExactlyOnce), "{defaults:?}");
    assert!(defaults.contains(&Property::Fifo), "{defaults:?}");
    assert!(RecipeKind::Queue
        .applicable_properties()
        .contains(&Property::Fifo));
    let named = scenario("toy_queue", "tail", "");
    assert!(named.properties.contains(&Property::Fifo));
    assert!(named.properties.contains(&Property::ExactlyOnce));
}

#[test]
fn the_head_queue_holds_both() {
    assert_eq!(broken(&scenario("toy_queue", "head", BOTH)), []);
}

#[test]
fn the_tail_queue_breaks_fifo_only() {
    let found = broken(&scenario("toy_queue", "tail", BOTH));
    assert_eq!(properties_of(&found), [Property::Fifo], "{found:?}");
}

#[test]
fn the_tail_queue_checked_for_exactly_once_alone_passes() {
    let check = r#"["exactly_once", "liveness", "no_leaks"]"#;
    assert_eq!(broken(&scenario("toy_queue", "tail", check)), []);
}

#[test]
fn the_peek_queue_breaks_exactly_once() {
    let check = r#"["exactly_once", "fifo"]"#;
    let found = broken(&scenario("toy_queue", "peek", check));
    assert!(
        properties_of(&found).contains(&Property::ExactlyOnce),
        "{found:?}"
    );
}

#[test]
fn a_queue_order_violation_gets_the_queue_diagnosis() {
    let runner = scenario("toy_queue", "tail", BOTH).runner();
    let violation = (0..20)
        .flat_map(|seed| runner.run(seed, false).violations)
        .find(|v| v.property == Property::Fifo)
        .expect("the tail queue breaks fifo");
    assert_eq!(violation.signature(), "fifo/out-of-order", "{violation}");
}

#[test]
fn the_fixed_queue_holds_both() {
    let text = std::fs::read_to_string("scenarios/queue-fixed.toml").expect("shipped");
    let file = std::path::Path::new("scenarios/queue-fixed.toml");
    let fixed = Scenario::parse(file, &text, registry().sim_recipes())
        .unwrap_or_else(|error| panic!("{error}"));
    assert!(fixed.properties.contains(&Property::Fifo));
    assert!(fixed.properties.contains(&Property::ExactlyOnce));
    let runner = fixed.runner();
    for seed in 0..10 {
        let report = runner.run(seed, false);
        assert!(
            report.violations.is_empty(),
            "seed {seed}: {:?}",
            report.violations
        );
    }
}

/// Two takes per consumer: `fifo` can fail.
fn two_takes(clients: usize) -> Setup {
    Setup::new(clients).with_cycles(2)
}

/// Exhausts `recipe`/`variant` on `setup` (no faults).
fn check(recipe: &str, variant: &str, setup: Setup) -> CheckReport {
    let entry = registry().model(recipe, variant).expect("a model");
    let options = RunOptions {
        strategy: Strategy::Bfs,
        threads: 1,
        max_depth: None,
        timeout: None,
        progress_every: None,
        memory_budget: None,
    };
    let report = entry.check(&setup, &options);
    assert!(report.exhaustive, "{}", report.summary());
    report
}

fn verdict(report: &CheckReport, property: &str) -> Verdict {
    report
        .property(property)
        .unwrap_or_else(|| panic!("no property {property}\n{}", report.summary()))
        .verdict
}

#[test]
fn the_model_of_the_tail_queue_breaks_fifo_only() {
    let report = check("toy_queue", "tail", two_takes(2));
    assert_eq!(verdict(&report, "fifo"), Verdict::Violated);
    assert_eq!(verdict(&report, "exactly_once"), Verdict::Holds);
}

#[test]
fn the_model_of_the_peek_queue_breaks_exactly_once() {
    let report = check("toy_queue", "peek", two_takes(2));
    assert_eq!(verdict(&report, "exactly_once"), Verdict::Violated);
}

#[test]
fn the_model_of_the_head_queue_holds_both() {
    let report = check("toy_queue", "head", two_takes(2));
    assert_eq!(verdict(&report, "exactly_once"), Verdict::Holds);
    assert_eq!(verdict(&report, "fifo"), Verdict::Holds);
}

#[test]
fn the_shipped_queue_models_name_fifo_where_it_can_fail() {
    for variant in ["original", "tutorial_original", "fixed"] {
        let entry = registry().model("queue", variant).expect("a model");
        let names = entry.property_names(&two_takes(2));
        assert!(names.contains(&"exactly_once"), "{variant}: {names:?}");
        assert!(names.contains(&"fifo"), "{variant}: {names:?}");
        // One take per consumer: no order to judge.
        let names = entry.property_names(&Setup::new(2));
        assert!(names.contains(&"exactly_once"), "{variant}: {names:?}");
        assert!(!names.contains(&"fifo"), "{variant}: {names:?}");
    }
    let report = check("queue", "fixed", two_takes(2));
    assert_eq!(verdict(&report, "exactly_once"), Verdict::Holds);
    assert_eq!(verdict(&report, "fifo"), Verdict::Holds);
}

/// What the checker finds, pinned: unique states and the shortest
/// counterexample of each broken property (2 clients, 2 takes, no faults).
#[test]
fn the_toy_queue_models_are_pinned() {
    let shortest = |report: &CheckReport, property: &str| {
        let result = report.property(property).expect("a property");
        result.trace.as_ref().map(Vec::len)
    };
    let tail = check("toy_queue", "tail", two_takes(2));
    let peek = check("toy_queue", "peek", two_takes(2));
    let head = check("toy_queue", "head", two_takes(2));
    let found = (
        (tail.unique_states, shortest(&tail, "fifo")),
        (peek.unique_states, shortest(&peek, "exactly_once")),
        head.unique_states,
    );
    assert_eq!(found, ((151, Some(20)), (110, Some(12)), 133));
}
