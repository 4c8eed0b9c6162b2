//! The model's setup beyond its size: several acquire/release cycles per
//! client, an initial server state (nodes, a parent's sequence counter,
//! session ids), and the server's container reaper as a model action
//! (`Action::Reap`), with the paths it takes replayed on the simulator.

use crate::common::{assert_all_hold, counterexample_steps};
use stateright::Model;
use zk_models::model::can_reap;
use zk_models::replay::replay;
use zk_models::run::{self, CheckReport, RunOptions, Verdict};
use zk_models::schedule::Schedule;
use zk_models::setup::{InitialNode, Setup};
use zk_models::{curator_lock, lock, Action, ModelRecipe, ModelState, RecipeModel};
use zk_recipes::zk::{Path, SessionId};

fn path(text: &str) -> Path {
    Path::new(text).unwrap()
}

/// BFS on one thread: every discovery is a shortest path.
fn check<R: ModelRecipe>(model: RecipeModel<R>) -> CheckReport {
    run::check(model, &RunOptions::default())
}

fn verdict(report: &CheckReport, property: &str) -> Verdict {
    report.property(property).expect("a property").verdict
}

/// Replays the discovery of `property` on the simulator's stepper.
fn replays_with_the_same_verdict<R: ModelRecipe>(
    model: &RecipeModel<R>,
    report: &CheckReport,
    property: &str,
) {
    let schedule = report.schedule(report.property(property).unwrap()).unwrap();
    let replayed = replay(model, &schedule).expect("the schedule replays");
    assert!(
        replayed.agrees(),
        "{property}: simulator says {:?}\n{}",
        replayed.violations,
        replayed.trace
    );
}

fn children(state: &ModelState<impl ModelRecipe>, parent: &str) -> Vec<String> {
    let parent = path(parent);
    state
        .server
        .paths()
        .into_iter()
        .filter(|p| p.parent().as_ref() == Some(&parent))
        .map(|p| p.to_string())
        .collect()
}

// ---- cycles ----

#[test]
fn two_cycles_grow_the_fixed_lock_and_it_still_holds_everything() {
    let one = check(lock::fixed(&Setup::new(2)));
    let two_model = lock::fixed(&Setup::new(2).with_cycles(2));
    assert_eq!(two_model.workload(0).len(), 4, "lock, unlock, lock, unlock");
    let two = check(two_model);
    assert_eq!((one.unique_states, two.unique_states), (226, 3_046));
    assert!(two.exhaustive);
    assert_all_hold(&two);
    let loss = Setup::new(2)
        .with_cycles(2)
        .with_faults("connection-loss=1".parse().unwrap());
    let report = check(lock::fixed(&loss));
    assert_eq!(report.unique_states, 30_884);
    assert_all_hold(&report);
}

#[test]
fn a_second_cycle_keeps_the_original_locks_shortest_counterexamples() {
    let report = check(lock::original(&Setup::new(2).with_cycles(2)));
    assert_eq!(report.unique_states, 5_779);
    assert_eq!(counterexample_steps(&report, "mutual_exclusion"), 18);
    assert_eq!(counterexample_steps(&report, "fifo"), 15);
}

// ---- a parent's sequence counter ----

#[test]
fn a_sequence_counter_started_near_the_end_names_the_first_node() {
    let setup = Setup::new(2).with_sequence_start(path("/locks"), i32::MAX - 1);
    let model = lock::fixed(&setup);
    let mut state = model.init_states().remove(0);
    for action in [
        Action::Call(0),
        Action::Send {
            client: 0,
            order: 0,
        },
    ] {
        state = model.next_state(&state, action).unwrap();
    }
    assert_eq!(children(&state, "/locks"), ["/locks/x-1-2147483646"]);
    // The first node holds; the second, numbered 2147483647, gives up
    // (SequenceExhausted) instead of being ordered: nothing breaks.
    let report = check(model);
    assert_eq!(report.unique_states, 196);
    assert_all_hold(&report);
}

/// ZooKeeper 3.8 stops a parent's counter at 2^31-1 and names every later
/// node `...2147483647`. The original lock's fencing token is the sequence
/// number, so one client locking twice gets the same token twice: a
/// resource that rejects stale tokens cannot tell the two tenures apart.
/// Below the end the same workload holds.
#[test]
fn at_the_counter_end_the_original_lock_grants_the_same_token_twice() {
    let setup = Setup::new(1).with_cycles(2);
    let below = check(lock::original(&setup));
    assert_eq!(below.unique_states, 25);
    assert_all_hold(&below);
    let model = lock::original(&setup.with_sequence_start(path("/locks"), i32::MAX));
    let at_end = check(model.clone());
    assert_eq!(counterexample_steps(&at_end, "fenced_mutual_exclusion"), 21);
    let trace = at_end.property("fenced_mutual_exclusion").unwrap();
    let last = trace.trace.as_ref().unwrap().last().unwrap();
    assert!(
        last.lines.iter().any(|line| line.contains("2147483647")),
        "{:?}",
        last.lines
    );
    replays_with_the_same_verdict(&model, &at_end, "fenced_mutual_exclusion");
    // The fixed lock refuses such a node (and its parent is persistent, so
    // its counter never restarts): no call waits, none acquires.
    let fixed = check(lock::fixed(
        &Setup::new(2).with_sequence_start(path("/locks"), i32::MAX),
    ));
    assert_eq!(verdict(&fixed, "fenced_mutual_exclusion"), Verdict::Holds);
    assert_eq!(verdict(&fixed, "liveness"), Verdict::Holds);
    assert_eq!(verdict(&fixed, "lock_acquired"), Verdict::NotFound);
}

// ---- session ids ----

#[test]
fn the_first_session_id_numbers_every_session() {
    let model = lock::original(&Setup::new(2).with_first_session(SessionId(999)));
    let init = model.init_states().remove(0);
    let ids: Vec<i64> = init.clients.iter().map(|c| c.session_id.0).collect();
    assert_eq!(ids, [999, 1000]);
    assert_eq!(model.session_id(1, 2), SessionId(1000 + 2 * 256));
    // c0 creates x-999-..., c1 x-1000-...: the original lock orders by
    // prefix, as strings, so c1 sorts first whatever the arrival order.
    let report = check(model.clone());
    assert_eq!(counterexample_steps(&report, "mutual_exclusion"), 18);
    replays_with_the_same_verdict(&model, &report, "mutual_exclusion");
}

// ---- initial nodes and the container reaper ----

#[test]
fn only_a_container_that_had_a_child_can_be_reaped() {
    let kept = Setup::new(1).with_node(InitialNode::container(path("/spare")));
    let model = lock::fixed(&kept);
    let init = model.init_states().remove(0);
    assert!(init.server.node_kind(&path("/spare")).is_some());
    assert!(!can_reap(&init.server));
    let mut actions = Vec::new();
    model.actions(&init, &mut actions);
    assert!(!actions.contains(&Action::Reap), "{actions:?}");
    // The counter counts creates: one started above 0 counts as a child had.
    let counted = kept.with_sequence_start(path("/spare"), 5);
    let model = lock::fixed(&counted);
    let init = model.init_states().remove(0);
    let mut actions = Vec::new();
    model.actions(&init, &mut actions);
    assert!(actions.contains(&Action::Reap), "{actions:?}");
    let reaped = model.next_state(&init, Action::Reap).unwrap();
    assert!(reaped.server.node_kind(&path("/spare")).is_none());
}

#[test]
#[should_panic(expected = "setup request")]
fn an_initial_node_the_recipe_creates_already_is_refused() {
    lock::fixed(&Setup::new(1).with_node(InitialNode::persistent(path("/locks"))));
}

/// One Curator-lock client, two cycles: after the first release the server
/// reaps the empty lock containers, the second acquire's create finds its
/// parent gone (NoNode), creates it again and acquires. The same path
/// replays on the simulator's stepper without a violation.
#[test]
fn a_client_finds_its_reaped_parent_gone_and_creates_it_again() {
    let model = curator_lock::fixed(&Setup::new(1).with_cycles(2));
    let mut state = model.init_states().remove(0);
    let mut path = Vec::new();
    let mut lines = Vec::new();
    while !model.is_terminal(&state) {
        let mut actions = Vec::new();
        model.actions(&state, &mut actions);
        // The reaper as soon as it can, else the first action.
        let action = actions
            .iter()
            .copied()
            .find(|a| *a == Action::Reap)
            .unwrap_or(actions[0]);
        let (next, narrated) = model.describe(&state, action);
        lines.extend(narrated);
        path.push((state, Some(action)));
        state = next;
    }
    path.push((state.clone(), None));
    assert!(model.is_done(&state));
    assert_eq!(state.server.paths(), [Path::root()], "everything reaped");
    let reaped = lines
        .iter()
        .position(|l| l.contains("reaper deletes empty container(s) /locks/order-17"))
        .unwrap_or_else(|| panic!("{lines:#?}"));
    let parent_gone = lines[reaped..]
        .iter()
        .position(|l| l.contains("server applies create /locks/order-17/") && l.ends_with("NoNode"))
        .unwrap_or_else(|| panic!("{lines:#?}"));
    let acquired_after = lines[reaped + parent_gone..]
        .iter()
        .any(|l| l.contains("outcome Acquired"));
    assert!(acquired_after, "{lines:#?}");
    let trace = run::trace(&model, path);
    let reaps = trace.iter().filter(|s| s.action == Action::Reap).count();
    assert_eq!(reaps, 4, "/locks/order-17 then /locks, after each release");
    let schedule = Schedule {
        recipe: "curator_lock".into(),
        variant: "fixed".into(),
        clients: 1,
        cycles: 2,
        servers: 1,
        revalidate: true,
        faults: "none".into(),
        property: "workload_can_complete".into(),
        expect: "example".into(),
        cycle_start: None,
        initial: None,
        state: None,
        steps: trace.iter().map(|step| step.schedule.clone()).collect(),
    };
    assert!(schedule.to_toml().contains("op = \"reap\""));
    let replayed = replay(&model, &schedule).expect("the path replays");
    assert!(
        replayed.agrees(),
        "{:?}\n{}",
        replayed.violations,
        replayed.trace
    );
    // The schedule records its cycles: the registry's replay (what
    // `zkcheck replay` runs) builds the same two-cycle workload.
    let text = schedule.to_toml();
    assert!(text.contains("cycles = 2"), "{text}");
    let registered = zk_models::Registry::builtin()
        .model("curator_lock", "fixed")
        .unwrap();
    let again = registered
        .replay(&schedule)
        .expect("the registry replays it");
    assert_eq!(again.trace, replayed.trace);
}

/// A container parent started at the counter's end: the first acquire gives
/// its node up (SequenceExhausted), the emptied container is reaped, and the
/// next acquire creates it again, counting from 0: only the reaper lets the
/// lock be acquired at all.
#[test]
fn the_reaper_restarts_a_container_parents_counter() {
    let setup = Setup::new(1)
        .with_cycles(2)
        .with_node(InitialNode::persistent(path("/locks")))
        .with_node(InitialNode::container(path("/locks/order-17")))
        .with_sequence_start(path("/locks/order-17"), i32::MAX);
    let report = check(curator_lock::fixed(&setup));
    assert_eq!(report.unique_states, 83);
    assert_all_hold(&report);
    let example = report.property("lock_acquired").unwrap();
    let steps = example.trace.as_ref().unwrap();
    assert_eq!(steps[1].action, Action::Reap);
    assert!(
        steps
            .iter()
            .flat_map(|s| &s.lines)
            .any(|l| l.contains("created /locks/order-17/_c_1-lock-0000000000")),
        "{}",
        run::render_trace(steps)
    );
}
