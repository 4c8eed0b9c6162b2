//! The generic model's rules, on the exclusive lock: fault branches, what a
//! stale client may do, fault pruning, getChildren order enumeration,
//! symmetry, bounds, and the counterexample and schedule it reports.

use crate::common::{check, check_with};
use stateright::Model;
use zk_models::run::Verdict;
use zk_models::schedule::Schedule;
use zk_models::state::Inbound;
use zk_models::{lock, Action, ChildOrderMode, ModelState, RecipeModel, Setup};
use zk_recipes::lock::FixedLock;
use zk_recipes::zk::{Path, Reply, ZkError};

fn fixed(faults: &str, clients: usize) -> RecipeModel<FixedLock> {
    lock::fixed(&Setup::new(clients).with_faults(faults.parse().unwrap()))
}

fn enabled<M: Model>(model: &M, state: &M::State) -> Vec<M::Action> {
    let mut actions = Vec::new();
    model.actions(state, &mut actions);
    actions
}

fn step(
    model: &RecipeModel<FixedLock>,
    state: &ModelState<FixedLock>,
    action: Action,
) -> ModelState<FixedLock> {
    assert!(
        enabled(model, state).contains(&action),
        "{action} not enabled"
    );
    model.next_state(state, action).unwrap()
}

fn lock_nodes(state: &ModelState<FixedLock>) -> Vec<Path> {
    let dir = Path::new("/locks").unwrap();
    state
        .server
        .paths()
        .into_iter()
        .filter(|p| p.parent().as_ref() == Some(&dir))
        .collect()
}

/// c0 has called Lock: its create waits to be sent.
fn create_queued(model: &RecipeModel<FixedLock>) -> ModelState<FixedLock> {
    let init = model.init_states().remove(0);
    step(model, &init, Action::Call(0))
}

#[test]
fn a_lost_request_is_applied_or_not_and_the_client_sees_connection_loss_either_way() {
    let model = fixed("connection-loss=1", 1);
    let queued = create_queued(&model);
    let applied = step(
        &model,
        &queued,
        Action::LoseRequest {
            client: 0,
            applied: true,
        },
    );
    let not_applied = step(
        &model,
        &queued,
        Action::LoseRequest {
            client: 0,
            applied: false,
        },
    );
    assert_eq!(lock_nodes(&applied).len(), 1, "the server created the node");
    assert!(
        lock_nodes(&not_applied).is_empty(),
        "the server never saw the create"
    );
    for state in [&applied, &not_applied] {
        assert_eq!(state.budget.connection_loss, 0);
        assert!(state.clients[0].inbox.is_empty(), "the reply is lost");
        assert!(enabled(&model, state).contains(&Action::Reconnect {
            client: 0,
            server: 0
        }));
        assert!(
            !enabled(&model, state).iter().any(|a| a.fault().is_some()),
            "the budget is spent"
        );
    }
}

#[test]
fn an_expired_client_keeps_acting_until_it_learns_then_gets_a_new_session() {
    let model = fixed("expiry=1", 1);
    let queued = create_queued(&model);
    let sent = step(
        &model,
        &queued,
        Action::Send {
            client: 0,
            order: 0,
        },
    );
    let delivered = step(&model, &sent, Action::Deliver(0));
    assert_eq!(lock_nodes(&delivered).len(), 1);
    let expired = step(
        &model,
        &delivered,
        Action::Expire {
            client: 0,
            order: 0,
        },
    );
    assert!(
        lock_nodes(&expired).is_empty(),
        "the server deleted the session's ephemeral"
    );
    let actions = enabled(&model, &expired);
    assert!(
        actions.contains(&Action::LearnExpiry {
            client: 0,
            server: 0
        }),
        "{actions:?}"
    );
    assert!(
        !actions.iter().any(|a| matches!(a, Action::Send { .. })),
        "a dead connection sends nothing: {actions:?}"
    );
    let learned = step(
        &model,
        &expired,
        Action::LearnExpiry {
            client: 0,
            server: 0,
        },
    );
    assert_eq!(learned.clients[0].generation, 1);
    assert!(learned.is_alive(0), "the client runs a new session");
}

#[test]
fn replies_come_back_in_order_and_faults_stop_once_a_client_is_done() {
    let model = fixed("connection-loss=1,expiry=1", 1);
    let mut state = model.init_states().remove(0);
    // Lock, then Unlock, with progress actions only (first one enabled).
    while !model.is_done(&state) || !model.is_quiescent(&state) {
        let action = enabled(&model, &state)
            .into_iter()
            .find(|a| a.is_progress())
            .expect("progress");
        if let Action::Deliver(0) = action {
            if let Some(Inbound::Reply { result, .. }) = state.clients[0].inbox.front() {
                assert!(!matches!(result, Err(ZkError::ConnectionLoss)));
            }
        }
        state = model.next_state(&state, action).unwrap();
    }
    assert!(lock_nodes(&state).is_empty());
    assert!(
        enabled(&model, &state).is_empty(),
        "a finished client holding nothing gets no fault"
    );
    assert!(model.is_terminal(&state));
}

#[test]
fn all_orders_enumerates_every_getchildren_arrangement() {
    let sorted = check_with("lock", "fixed", Setup::new(2), None);
    let all = check_with(
        "lock",
        "fixed",
        Setup::new(2).with_child_order(ChildOrderMode::AllOrders),
        None,
    );
    assert!(
        all.unique_states > sorted.unique_states,
        "{} vs {}",
        all.unique_states,
        sorted.unique_states
    );
    assert!(
        all.failures().is_empty(),
        "the fixed lock sorts for itself\n{}",
        all.summary()
    );
    let setup = Setup::new(2)
        .with_child_order(ChildOrderMode::AllOrders)
        .with_reduction(false);
    let model = lock::fixed(&setup);
    // Both create, then c0 lists two children: two orders, two branches.
    let mut state = model.init_states().remove(0);
    for action in [
        Action::Call(0),
        Action::Call(1),
        Action::Send {
            client: 0,
            order: 0,
        },
        Action::Send {
            client: 1,
            order: 0,
        },
        Action::Deliver(0),
    ] {
        state = model.next_state(&state, action).unwrap();
    }
    let sends: Vec<Action> = enabled(&model, &state)
        .into_iter()
        .filter(|a| matches!(a, Action::Send { client: 0, .. }))
        .collect();
    assert_eq!(
        sends,
        vec![
            Action::Send {
                client: 0,
                order: 0
            },
            Action::Send {
                client: 0,
                order: 1
            }
        ]
    );
    let reversed = model
        .next_state(
            &state,
            Action::Send {
                client: 0,
                order: 1,
            },
        )
        .unwrap();
    match reversed.clients[0].inbox.back() {
        Some(Inbound::Reply {
            result: Ok(Reply::Children(names)),
            ..
        }) => {
            assert_eq!(names, &["x-2-0000000001", "x-1-0000000000"]);
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn symmetry_saves_states_and_keeps_every_verdict() {
    // Symmetry alone, without the partial-order reduction (see
    // models/tests/suite/symmetry.rs for both together, and for ranks).
    let setup = Setup::new(3)
        .with_faults("connection-loss=1".parse().unwrap())
        .with_reduction(false);
    let full = check_with("lock", "fixed", setup.clone(), None);
    let reduced = check_with("lock", "fixed", setup.with_symmetry(true), None);
    assert_eq!(
        (full.unique_states, reduced.unique_states),
        (251_746, 42_002)
    );
    let verdicts = |r: &zk_models::run::CheckReport| {
        r.properties
            .iter()
            .map(|p| (p.name, p.verdict))
            .collect::<Vec<_>>()
    };
    assert_eq!(verdicts(&full), verdicts(&reduced));
}

#[test]
fn a_depth_bound_makes_the_search_non_exhaustive() {
    let bounded = check_with("lock", "fixed", Setup::new(2), Some(6));
    assert!(!bounded.exhaustive);
    assert!(bounded.max_depth <= 7);
    assert_eq!(
        bounded.property("workload_can_complete").unwrap().verdict,
        Verdict::NotFound
    );
    assert!(
        bounded.failures().is_empty(),
        "a missing example is no failure within bounds"
    );
    let full = check("lock", "fixed", 2, "none");
    assert!(full.exhaustive && full.failures().is_empty());
}

#[test]
fn the_liveness_counterexample_ends_in_a_stuck_terminal_state() {
    let report = check("lock", "original", 2, "none");
    let liveness = report.property("liveness").unwrap();
    assert_eq!(liveness.verdict, Verdict::Violated);
    let stuck = report.property("no_stuck_waiter").unwrap();
    let (liveness_steps, stuck_steps) = (
        liveness.trace.as_ref().unwrap().len(),
        stuck.trace.as_ref().unwrap().len(),
    );
    assert_eq!(
        liveness_steps, stuck_steps,
        "both end where a waiter waits forever"
    );
    let last = liveness.trace.as_ref().unwrap().last().unwrap();
    assert!(
        last.lines
            .iter()
            .any(|line| line.contains("receives reply")),
        "{:?}",
        last.lines
    );
}

#[test]
fn a_counterexample_becomes_a_schedule_with_one_step_per_action() {
    let report = check("lock", "original", 2, "connection-loss=1");
    let leak = report.property("no_leaks").unwrap();
    let schedule = report.schedule(leak).unwrap();
    assert_eq!(schedule.steps.len(), leak.trace.as_ref().unwrap().len());
    assert_eq!(
        (schedule.recipe.as_str(), schedule.variant.as_str()),
        ("lock", "original")
    );
    assert_eq!(schedule.faults, "connection-loss=1");
    assert_eq!(schedule.steps[0].op, "call");
    assert_eq!(schedule.steps[0].call.as_deref(), Some("Lock"));
    assert!(
        schedule
            .steps
            .iter()
            .any(|s| s.op == "lose_reply" || s.op == "lose_request"),
        "{:?}",
        schedule.steps
    );
    let parsed = Schedule::from_toml(&schedule.to_toml()).unwrap();
    assert_eq!(parsed, schedule);
}

#[test]
fn opt_in_watch_faults_are_explored_when_budgeted() {
    let plain = check("lock", "fixed", 2, "none");
    let spurious = check("lock", "fixed", 2, "spurious=1");
    let reorder = check("lock", "fixed", 3, "reorder=1");
    assert!(spurious.unique_states > plain.unique_states);
    for report in [&spurious, &reorder] {
        assert!(report.failures().is_empty(), "{}", report.summary());
    }
}

#[test]
fn a_timeout_stops_a_large_search_soon_without_false_liveness_verdicts() {
    // Exhausting this takes tens of seconds (13.7 M states); 300 ms cuts it.
    let setup = Setup::new(3).with_faults("connection-loss=1,expiry=1".parse().unwrap());
    let options = zk_models::run::RunOptions {
        strategy: zk_models::run::Strategy::Dfs,
        threads: 2,
        max_depth: None,
        timeout: Some(std::time::Duration::from_millis(300)),
        progress_every: None,
        memory_budget: None,
    };
    let report = zk_models::Registry::builtin()
        .model("lock", "fixed")
        .unwrap()
        .check(&setup, &options);
    assert!(!report.exhaustive);
    assert!(report.unique_states < 13_689_118, "{}", report.summary());
    // Stopping makes queued states look terminal; that must not read as a
    // liveness violation.
    assert_eq!(
        report.property("liveness").unwrap().verdict,
        Verdict::Holds,
        "{}",
        report.summary()
    );
    assert!(report.failures().is_empty(), "{}", report.summary());
}
