//! Liveness as cycles (`zk_models::lasso`): a livelocking fixture is
//! reported as a lasso whose cycle really returns to its start, its fixed
//! counterpart and a fixed built-in recipe report none, a cycle only an
//! unfair scheduler could keep going is not reported, and a lasso becomes a
//! schedule that replays on the simulator's stepper.
//!
//! The fixtures (`common/polling.rs`, `common/polite.rs`,
//! `common/churn.rs`) are test recipes, not shipped ones.

#[path = "../common/churn.rs"]
mod churn;
#[path = "../common/polite.rs"]
mod polite;
#[path = "../common/polling.rs"]
mod polling;

use std::path::Path;
use zk_models::lasso::{self, FairnessUnit, LassoOptions, LassoReport, LassoVerdict, StepKind};
use zk_models::properties;
use zk_models::run::{self, RunOptions};
use zk_models::schedule::Schedule;
use zk_models::stateright::Model;
use zk_models::workload::hold_cycles;
use zk_models::{ClientSpec, Oracles, RecipeModel, Registry, Setup};
use zk_recipes::lock::LockCall;
use zk_recipes::zk::Acls;
use zk_recipes::zk::{CreateMode, Path as ZkPath, Request};

fn registry() -> Registry {
    Registry::builtin()
        .with(polling::entry())
        .with(polite::entry())
        .with(churn::entry())
}

fn search(recipe: &str, variant: &str, setup: Setup) -> LassoReport {
    registry()
        .model(recipe, variant)
        .expect("a registered model")
        .lasso(&setup, &LassoOptions::default())
}

fn two_clients(faults: &str) -> Setup {
    Setup::new(2).with_faults(faults.parse().expect("a fault budget"))
}

/// The polling lock built by hand (the registry's model is type-erased),
/// to re-apply a lasso's actions through the stateright `Model` trait.
fn polling_model(free_on_no_node: bool) -> RecipeModel<polling::PollingLock> {
    let dir = ZkPath::new("/polling").expect("a path");
    let clients = ClientSpec::many(
        2,
        |c| polling::PollingLock::new(dir.clone(), c as u64 + 1, free_on_no_node),
        |_| hold_cycles(LockCall::Lock, LockCall::Unlock, 1),
    );
    let mkdir = [Request::Create {
        path: dir.clone(),
        data: Vec::new(),
        mode: CreateMode::Persistent,
        acl: Acls::Open,
    }];
    let setup = two_clients("none");
    RecipeModel::new(
        "polling_lock/livelock",
        &mkdir,
        clients,
        setup.faults,
        Oracles::default(),
    )
    .with_setup(&setup)
    .with_properties(vec![properties::liveness()])
}

#[test]
fn a_waiter_polling_a_released_lock_forever_is_a_lasso() {
    let report = search("polling_lock", "livelock", two_clients("none"));
    assert_eq!(
        report.verdict(),
        LassoVerdict::Livelock,
        "{}",
        report.summary()
    );
    assert_eq!(
        (report.states, report.edges),
        (100, 166),
        "{}",
        report.summary()
    );
    assert_eq!(report.progress_on_cycles, 0);
    let lasso = report.lasso.as_ref().expect("a lasso");
    let rendered = lasso::render_lasso(lasso);
    // c0 locks and unlocks; c1's create failed meanwhile, and it polls
    // the missing node: timer, getData, NoNode, timer, ...
    assert_eq!(
        (lasso.prefix.len(), lasso.cycle.len()),
        (12, 3),
        "{rendered}"
    );
    assert_eq!(lasso.waiting, [1]);
    let ops: Vec<String> = lasso.cycle.iter().map(|s| s.action.to_string()).collect();
    assert_eq!(
        ops,
        ["c1 fire_timer", "c1 send", "c1 deliver"],
        "{rendered}"
    );
    assert!(rendered.contains("13. c1 fire_timer"), "{rendered}");
    assert!(report
        .summary()
        .contains("livelock (lasso): 12 steps to the cycle, 3 steps around it"));
}

#[test]
fn the_lasso_cycle_returns_to_its_start_when_its_actions_are_reapplied() {
    let mut model = polling_model(false);
    model.reduction = false;
    let report = lasso::search(model.clone(), &LassoOptions::default());
    // The same model as the registry's generic one.
    assert_eq!((report.states, report.edges), (100, 166));
    let lasso = report.lasso.expect("a lasso");
    let enabled = |state: &_, action| {
        let mut actions = Vec::new();
        model.actions(state, &mut actions);
        actions.contains(&action)
    };
    let mut state = model.init_states().remove(0);
    for step in &lasso.prefix {
        assert!(enabled(&state, step.action), "{}", step.action);
        state = model.next_state(&state, step.action).expect("a successor");
    }
    let start = state.clone();
    assert!(start.clients[1].pending.is_some(), "c1 waits for its Lock");
    for _round in 0..2 {
        for step in &lasso.cycle {
            assert!(enabled(&state, step.action), "{}", step.action);
            state = model.next_state(&state, step.action).expect("a successor");
            assert_eq!(state.clients[1].pending, start.clients[1].pending);
        }
        assert_eq!(state, start, "the cycle ends where it started");
    }
}

#[test]
fn terminal_path_liveness_does_not_see_the_livelock() {
    // Why the lasso search exists: the ordinary check passes this recipe.
    let report = registry()
        .model("polling_lock", "livelock")
        .unwrap()
        .check(&two_clients("none"), &RunOptions::default());
    assert!(report.exhaustive);
    assert!(report.failures().is_empty(), "{}", report.summary());
    assert_eq!(
        report.property("liveness").unwrap().verdict,
        run::Verdict::Holds
    );
}

#[test]
fn the_fixed_polling_lock_has_no_lasso() {
    let report = search("polling_lock", "fixed", two_clients("none"));
    assert_eq!(
        report.verdict(),
        LassoVerdict::NoLivelock,
        "{}",
        report.summary()
    );
    assert_eq!(
        (report.states, report.edges),
        (112, 180),
        "{}",
        report.summary()
    );
    assert_eq!(report.progress_on_cycles, 0);
    assert!(report.summary().contains("no livelock"));
}

#[test]
fn a_cycle_that_starves_a_continuously_enabled_client_is_not_reported() {
    // While c0 holds, c1 polls in a cycle; c0's Unlock call is enabled in
    // every state of it and never taken. Only an unfair scheduler keeps
    // that going: not a livelock. The same holds with the roles swapped.
    let report = search("polling_lock", "fixed", two_clients("none"));
    assert_eq!(report.waiting_components, 6, "{}", report.summary());
    assert_eq!(report.unfair.len(), 6, "{}", report.summary());
    let call = |client| FairnessUnit::Client {
        client,
        kind: StepKind::Call,
    };
    assert!(
        report.unfair.contains(&vec![call(0)]),
        "{:?}",
        report.unfair
    );
    assert!(
        report.unfair.contains(&vec![call(1)]),
        "{:?}",
        report.unfair
    );
    assert!(report.lasso.is_none());
}

#[test]
fn the_fixed_lock_with_a_connection_loss_has_no_lasso() {
    let report = search("lock", "fixed", two_clients("connection-loss=1"));
    assert_eq!(
        report.verdict(),
        LassoVerdict::NoLivelock,
        "{}",
        report.summary()
    );
    assert_eq!(
        (report.states, report.edges),
        (2126, 4756),
        "{}",
        report.summary()
    );
    assert_eq!(report.progress_on_cycles, 0);
    // Its waiting cycles are reconnect attempts failing forever while a
    // reconnect stays possible: the network never healing, not a livelock.
    let reconnect = |client| FairnessUnit::Client {
        client,
        kind: StepKind::Reconnect,
    };
    assert!(report.waiting_components > 0);
    assert!(report
        .unfair
        .iter()
        .all(|starved| starved.contains(&reconnect(0)) || starved.contains(&reconnect(1))));
}

#[test]
fn a_search_cut_by_its_state_limit_is_no_verdict() {
    let options = LassoOptions {
        max_states: 50,
        ..LassoOptions::default()
    };
    let report = registry()
        .model("polling_lock", "fixed")
        .unwrap()
        .lasso(&two_clients("none"), &options);
    assert!(
        matches!(report.verdict(), LassoVerdict::Inconclusive(_)),
        "{}",
        report.summary()
    );
    assert!(
        report.summary().contains("NO VERDICT"),
        "{}",
        report.summary()
    );
}

#[test]
fn a_lasso_becomes_a_schedule_that_replays_as_a_lasso() {
    let report = search("polling_lock", "livelock", two_clients("none"));
    let schedule = report.schedule().expect("a lasso's schedule");
    assert_eq!(schedule.cycle_start, Some(12));
    assert_eq!(schedule.steps.len(), 15);
    assert_eq!(schedule.property, lasso::PROGRESS);
    let text = schedule.to_toml();
    assert!(text.contains("cycle_start = 12"), "{text}");
    let parsed = Schedule::parse(Path::new("l.toml"), &text, &registry()).expect("valid");
    assert_eq!(parsed, schedule);
    let model = registry().model("polling_lock", "livelock").unwrap();
    let replayed = model.replay(&parsed).expect("it replays");
    let cycle = replayed.lasso.as_ref().expect("replayed as a lasso");
    assert_eq!(cycle.rounds, 2);
    assert!(cycle.returned, "{}", replayed.trace);
    assert_eq!(cycle.waiting, [1]);
    assert!(cycle.pending_stayed);
    // After the lasso the stepper heals the run: c1 still polls, and the
    // simulator's liveness oracle reports its call unanswered.
    assert!(replayed.agrees(), "{:?}", replayed.violations);
}

#[test]
fn a_bad_cycle_start_is_refused_with_its_line() {
    let report = search("polling_lock", "livelock", two_clients("none"));
    let text = report.schedule().unwrap().to_toml();
    for (bad, message) in [
        ("cycle_start = 15", "a cycle needs at least one"),
        ("cycle_start = 99", "a cycle needs at least one"),
    ] {
        let changed = text.replace("cycle_start = 12", bad);
        let error = Schedule::parse(Path::new("l.toml"), &changed, &registry()).unwrap_err();
        assert_eq!(error.key, "cycle_start", "{error}");
        assert!(error.line > 0, "{error}");
        assert!(error.to_string().contains(message), "{error}");
    }
    let example = text.replace("expect = \"violation\"", "expect = \"example\"");
    let error = Schedule::parse(Path::new("l.toml"), &example, &registry()).unwrap_err();
    assert_eq!(error.key, "cycle_start", "{error}");
    let negative = text.replace("cycle_start = 12", "cycle_start = -1");
    let error = Schedule::parse(Path::new("l.toml"), &negative, &registry()).unwrap_err();
    assert_eq!(error.key, "cycle_start", "{error}");
}

#[test]
fn polite_waiters_stepping_back_for_each_other_are_a_lasso() {
    // Ranks: every round makes new sequence numbers and zxids, the same
    // relative to each other.
    let report = search(
        "polite_lock",
        "livelock",
        two_clients("none").with_ranks(true),
    );
    assert_eq!(
        report.verdict(),
        LassoVerdict::Livelock,
        "{}",
        report.summary()
    );
    let lasso = report.lasso.as_ref().unwrap();
    assert_eq!(lasso.waiting.len(), 2, "{}", lasso::render_lasso(lasso));
    // Pinned: 842 ranked states; 10 steps to the cycle, 14 around it.
    assert_eq!(
        (
            report.states,
            report.edges,
            lasso.prefix.len(),
            lasso.cycle.len()
        ),
        (842, 1_592, 10, 14)
    );
}

#[test]
fn polite_waiters_stepping_back_for_a_lower_node_only_have_no_lasso() {
    let report = search("polite_lock", "fixed", two_clients("none").with_ranks(true));
    assert_eq!(
        report.verdict(),
        LassoVerdict::NoLivelock,
        "{}",
        report.summary()
    );
}

#[test]
fn without_the_rank_abstraction_the_polite_lock_search_is_no_verdict() {
    // Without ranks every round of stepping back makes new sequence
    // numbers and zxids: the search runs into its limit without a verdict.
    let options = LassoOptions {
        max_states: 20_000,
        ..LassoOptions::default()
    };
    let report = registry()
        .model("polite_lock", "livelock")
        .unwrap()
        .lasso(&two_clients("none"), &options);
    assert!(
        matches!(report.verdict(), LassoVerdict::Inconclusive(_)),
        "{}",
        report.summary()
    );
}

fn churn_clients(clients: usize) -> Setup {
    Setup::new(clients).with_ranks(true)
}

#[test]
fn a_latch_resetting_whenever_it_does_not_see_itself_first_is_a_lasso_at_three_clients() {
    // Issue 32, item 6. While c0 leads, c1 and c2 reset; after it resigned
    // each lists while the other's node, about to be reset, is still lower.
    let report = search("churn_latch", "reset", churn_clients(3));
    assert_eq!(
        report.verdict(),
        LassoVerdict::Livelock,
        "{}",
        report.summary()
    );
    let lasso = report.lasso.as_ref().expect("a lasso");
    let rendered = lasso::render_lasso(lasso);
    assert_eq!(lasso.waiting, [1, 2], "{rendered}");
    // Pinned: ranked states and transitions; 19 steps to the cycle, 12
    // around it.
    assert_eq!(
        (
            report.states,
            report.edges,
            lasso.prefix.len(),
            lasso.cycle.len()
        ),
        (39_146, 111_612, 19, 12),
        "{rendered}"
    );
    // Every round of the cycle deletes and re-creates both waiters' nodes.
    let creates = rendered
        .lines()
        .skip_while(|line| !line.starts_with("the cycle"))
        .filter(|line| line.contains("server applies create /latch/n-"))
        .count();
    assert_eq!(creates, 2, "{rendered}");
    let schedule = report.schedule().expect("a lasso's schedule");
    assert_eq!(schedule.cycle_start, Some(19));
}

#[test]
fn the_resetting_latch_has_no_livelock_at_two_clients() {
    // The first round's lowest node leads; alone, the other leads next.
    let report = search("churn_latch", "reset", churn_clients(2));
    assert_eq!(
        report.verdict(),
        LassoVerdict::NoLivelock,
        "{}",
        report.summary()
    );
    assert_eq!(
        (report.states, report.edges),
        (320, 588),
        "{}",
        report.summary()
    );
}

#[test]
fn the_latch_waiting_behind_the_next_lower_node_has_no_lasso_at_three_clients() {
    let report = search("churn_latch", "fixed", churn_clients(3));
    assert_eq!(
        report.verdict(),
        LassoVerdict::NoLivelock,
        "{}",
        report.summary()
    );
    assert_eq!(
        (report.states, report.edges),
        (18_176, 45_408),
        "{}",
        report.summary()
    );
}

#[test]
fn without_ranks_the_resetting_latch_search_is_no_verdict() {
    // Every reset makes a new sequence number and zxids.
    let options = LassoOptions {
        max_states: 20_000,
        ..LassoOptions::default()
    };
    let report = registry()
        .model("churn_latch", "reset")
        .unwrap()
        .lasso(&Setup::new(3), &options);
    assert!(
        matches!(report.verdict(), LassoVerdict::Inconclusive(_)),
        "{}",
        report.summary()
    );
}

#[test]
fn the_resetting_latch_renaming_passes_the_self_check() {
    use zk_models::canonical::{self_check, Canonical};
    use zk_recipes::election::ElectionCall;
    let dir = ZkPath::new("/latch").expect("a path");
    let clients = ClientSpec::many(
        3,
        |_| churn::ChurnLatch::new(dir.clone(), true),
        |_| hold_cycles(ElectionCall::Volunteer, ElectionCall::Resign, 1),
    );
    let mkdir = [Request::Create {
        path: dir.clone(),
        data: Vec::new(),
        mode: CreateMode::Persistent,
        acl: Acls::Open,
    }];
    let setup = Setup::new(3);
    let model = RecipeModel::new(
        "churn_latch/reset",
        &mkdir,
        clients,
        setup.faults,
        Oracles::default(),
    )
    .with_renaming()
    .with_setup(&setup)
    .with_properties(vec![properties::liveness()]);
    let form = Canonical {
        symmetry: true,
        ranks: true,
    };
    let seen = self_check(&model, form, 20, 60, 32).expect("a sound renaming");
    assert!(seen.states > 500, "{seen:?}");
}
