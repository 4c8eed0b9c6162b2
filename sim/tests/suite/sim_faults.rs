//! The world's fault model, checked with a small probe recipe of this file
//! and with the WriteLock: connection loss before and after apply, reconnect
//! into the same session with watch re-registration, expiry noticed late,
//! pauses longer than the session timeout, swarm mode.

// Runs the simulator, which exists only with `--cfg madsim` (.cargo/config.toml).
#![cfg(madsim)]

use std::collections::BTreeSet;
use zk_recipes::lock::FixedLock;
use zk_recipes::zk::Acls;
use zk_recipes::zk::{
    CreateMode, EventType, Path, Reply, Request, SessionEvent, WatchedEvent, ZkError,
};
use zk_recipes::{Input, Observation, Observe, Outbox, Recipe, Tag};
use zk_sim::faults::{Fault, FaultPlan, FaultRates, MsRange, ScheduledFault, Trigger};
use zk_sim::oracles::{CallObservation, ObserveCall, OracleConfig, Property};
use zk_sim::world::workloads::{hold_cycles, WorkloadSpec};
use zk_sim::world::{Client, RunReport, Simulation, WorldConfig};

/// The lock's workload calls.
fn lock_calls() -> zk_sim::world::adapters::HoldCalls<zk_recipes::lock::LockCall> {
    zk_sim::world::adapters::HoldCalls::new(
        zk_recipes::lock::LockCall::Lock,
        zk_recipes::lock::LockCall::Unlock,
    )
}

/// A probe: creates or watches a path on request and reports what it sees.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct Probe;

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum ProbeCall {
    Watch,
    Create,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum ProbeOutcome {
    Replied(Result<(), ZkError>),
    Saw(EventType),
}

const WATCH: Tag = Tag(1);
const CREATE: Tag = Tag(2);

fn probe_path() -> Path {
    Path::new("/probe").unwrap()
}

impl Recipe for Probe {
    type Call = ProbeCall;
    type Outcome = ProbeOutcome;

    fn handle(&mut self, input: Input<ProbeCall>, out: &mut Outbox<ProbeOutcome>) {
        match input {
            Input::Call(ProbeCall::Watch) => out.send(
                WATCH,
                Request::Exists {
                    path: probe_path(),
                    watch: true,
                },
            ),
            Input::Call(ProbeCall::Create) => out.send(
                CREATE,
                Request::Create {
                    path: probe_path(),
                    data: Vec::new(),
                    mode: CreateMode::Persistent,
                    acl: Acls::Open,
                },
            ),
            Input::Reply { result, .. } => {
                out.emit(ProbeOutcome::Replied(result.map(|_: Reply| ())))
            }
            Input::Watch(WatchedEvent {
                event_type,
                path: Some(_),
                ..
            }) => out.emit(ProbeOutcome::Saw(event_type)),
            Input::Watch(_)
            | Input::WatcherEvent { .. }
            | Input::Session(SessionEvent::Connected { .. })
            | Input::Session(_)
            | Input::Timer(_) => {}
        }
    }
}

impl Observe for ProbeOutcome {
    fn observe(&self) -> Observation {
        Observation::Failed {
            reason: format!("{self:?}"),
        }
    }
}

impl ObserveCall for ProbeCall {
    fn observe_call(&self) -> CallObservation {
        CallObservation::Other
    }
}

fn probe_config(schedule: Vec<ScheduledFault>) -> WorldConfig {
    WorldConfig {
        clients: 2,
        session_timeout_ms: 1_000,
        fault_phase_ms: 5_000,
        heal_ms: 5_000,
        faults: FaultPlan::scheduled(schedule),
        oracles: OracleConfig {
            properties: BTreeSet::from([Property::Liveness]),
            ..OracleConfig::default()
        },
        trace: true,
        ..WorldConfig::default()
    }
}

fn at(ms: f64, client: usize, fault: Fault) -> ScheduledFault {
    ScheduledFault {
        trigger: Trigger::AtMs(ms),
        client,
        fault,
    }
}

/// Client 0 watches /probe, client 1 creates it at 300 ms; returns what
/// client 0 saw.
async fn watch_then_create(client: Client<Probe>) {
    if client.index() == 0 {
        client.call(ProbeCall::Watch);
        assert_eq!(client.next_outcome().await, ProbeOutcome::Replied(Ok(())));
        assert_eq!(
            client.next_outcome().await,
            ProbeOutcome::Saw(EventType::NodeCreated)
        );
    } else {
        client.sleep_ms(300).await;
        client.call(ProbeCall::Create);
        assert_eq!(client.next_outcome().await, ProbeOutcome::Replied(Ok(())));
    }
}

fn lines(report: &RunReport, needle: &str) -> usize {
    report
        .trace
        .lines
        .iter()
        .filter(|line| line.to_string().contains(needle))
        .count()
}

#[test]
fn a_watch_fires_normally() {
    let sim = Simulation::new(probe_config(Vec::new()), |_, _| Probe, watch_then_create);
    let report = sim.run(1);
    assert!(report.passed(), "{:?}\n{}", report.violations, report.trace);
    assert_eq!(report.workloads_done, 2);
}

#[test]
fn reconnect_re_registers_a_watch_and_fires_it_if_the_node_changed() {
    // Client 0 is partitioned from 100 ms to 600 ms while /probe is
    // created: the notification is lost with the connection, and the
    // re-registered exists watch fires NodeCreated on reconnect. A 2 s
    // session outlives the client's reconnect (a 1 s one, last heard at
    // 3 ms, expires on the server's tick at 1,200 ms, before it).
    let schedule = vec![at(100.0, 0, Fault::Disconnect { down_ms: 500 })];
    let config = WorldConfig {
        session_timeout_ms: 2_000,
        ..probe_config(schedule)
    };
    let sim = Simulation::new(config, |_, _| Probe, watch_then_create);
    let report = sim.run(1);
    assert!(report.passed(), "{:?}\n{}", report.violations, report.trace);
    assert_eq!(
        lines(&report, "c0 session  reconnected into the same session"),
        1,
        "{}",
        report.trace
    );
    assert_eq!(
        lines(&report, "learns its session expired"),
        0,
        "{}",
        report.trace
    );
}

#[test]
fn a_request_made_while_disconnected_fails_at_the_next_failed_reconnect_attempt() {
    // Client 0 loses the network from 100 ms to 3100 ms and calls create at
    // 150 ms. With the Java client's timing (a 1 s spin plus a random
    // 0..1 s sleep before each attempt), the first attempt fails between
    // 1100 and 2100 ms and fails the queued create with ConnectionLoss, as
    // ClientCnxn's cleanup does (measured on a real 3.8 server: 1.9 s after
    // the send, not applied, still disconnected). The create never runs.
    let schedule = vec![at(100.0, 0, Fault::Disconnect { down_ms: 3_000 })];
    let config = WorldConfig {
        session_timeout_ms: 10_000,
        reconnect_delay_ms: MsRange::new(1_000, 2_000),
        ..probe_config(schedule)
    };
    let sim = Simulation::new(
        config,
        |_, _| Probe,
        |client: Client<Probe>| async move {
            if client.index() != 0 {
                return;
            }
            client.sleep_ms(150).await;
            let sent_ns = client.now_ns();
            client.call(ProbeCall::Create);
            assert_eq!(
                client.next_outcome().await,
                ProbeOutcome::Replied(Err(ZkError::ConnectionLoss))
            );
            let after_ms = (client.now_ns() - sent_ns) / 1_000_000;
            assert!(
                (950..=1_950).contains(&after_ms),
                "failed after {after_ms} ms"
            );
        },
    );
    for seed in 0..8 {
        let report = sim.run(seed);
        let trace = report.trace.to_string();
        assert!(report.passed(), "{:?}\n{trace}", report.violations);
        assert_eq!(report.workloads_done, 2, "{trace}");
        let failed_at = trace
            .find("c0 session  reconnect attempt fails: 1 queued request(s)")
            .expect(&trace);
        let reconnected_at = trace
            .find("c0 session  reconnected into the same session")
            .expect(&trace);
        assert!(failed_at < reconnected_at, "{trace}");
        assert_eq!(lines(&report, "c0 apply"), 0, "never applied: {trace}");
    }
}

#[test]
fn a_partition_longer_than_the_timeout_expires_the_session() {
    let schedule = vec![at(100.0, 0, Fault::Disconnect { down_ms: 2_500 })];
    let sim = Simulation::new(
        probe_config(schedule),
        |_, _| Probe,
        |client: Client<Probe>| async move {
            client.call(ProbeCall::Watch);
            client.next_outcome().await;
            client.sleep_ms(4_000).await;
        },
    );
    let report = sim.run(1);
    let trace = report.trace.to_string();
    let expired_at = trace
        .find("c0 session  server expired session")
        .expect(&trace);
    let learned_at = trace
        .find("c0 session  learns its session expired")
        .expect(&trace);
    let reopened_at = trace.rfind("c0 session  session").expect(&trace);
    assert!(
        expired_at < learned_at && learned_at < reopened_at,
        "{trace}"
    );
}

#[test]
fn loss_before_apply_and_after_apply_are_both_reachable() {
    // Client 1's first request is lost before apply; client 0's first is
    // applied and its reply lost.
    let schedule = vec![
        ScheduledFault {
            trigger: Trigger::Request(1),
            client: 1,
            fault: Fault::LoseRequest { down_ms: 0 },
        },
        ScheduledFault {
            trigger: Trigger::Request(1),
            client: 0,
            fault: Fault::LoseReply { down_ms: 0 },
        },
    ];
    let sim = Simulation::new(
        probe_config(schedule),
        |_, _| Probe,
        |client: Client<Probe>| async move {
            client.call(ProbeCall::Create);
            client.next_outcome().await;
        },
    );
    let report = sim.run(3);
    let trace = report.trace.to_string();
    assert_eq!(
        lines(&report, "c1 FAULT    request #1 lost before apply"),
        1,
        "{trace}"
    );
    assert_eq!(lines(&report, "c1 apply    #1 "), 0, "{trace}");
    assert_eq!(lines(&report, "c0 apply    #1 Create"), 1, "{trace}");
    assert_eq!(
        lines(&report, "c0 FAULT    reply to request #1 lost after apply"),
        1,
        "{trace}"
    );
    // Both clients saw ConnectionLoss; only the applied create made the node.
    assert_eq!(
        lines(&report, "reply Err(ConnectionLoss)"),
        0,
        "the session layer answers, not the server"
    );
    assert_eq!(report.fault_history.len(), 2);
}

fn fixed_lock_world(faults: FaultPlan, properties: &[Property]) -> WorldConfig {
    let locks = Path::new("/locks").unwrap();
    WorldConfig {
        clients: 3,
        session_timeout_ms: 1_000,
        fault_phase_ms: 10_000,
        heal_ms: 10_000,
        setup: vec![Request::Create {
            path: locks.clone(),
            data: Vec::new(),
            mode: CreateMode::Persistent,
            acl: Acls::Open,
        }],
        faults,
        oracles: OracleConfig {
            properties: properties.iter().copied().collect(),
            fifo_dir: Some(locks),
            ..OracleConfig::default()
        },
        ..WorldConfig::default()
    }
}

fn fixed_lock(config: WorldConfig) -> Simulation<FixedLock> {
    let spec = WorkloadSpec {
        cycles: 30,
        hold_ms: MsRange::new(50, 200),
        ..WorkloadSpec::default()
    };
    Simulation::new(
        config,
        |_, uid| FixedLock::new(Path::new("/locks").unwrap(), uid),
        move |client| hold_cycles(client, spec.clone(), lock_calls()),
    )
}

fn pauses() -> FaultPlan {
    FaultPlan {
        rates: FaultRates {
            pauses_per_s: 0.2,
            pause_ms: MsRange::new(1_500, 2_500),
            ..FaultRates::default()
        },
        ..FaultPlan::default()
    }
}

#[test]
fn a_pause_past_the_timeout_gives_two_holders_that_fencing_rejects() {
    let plain = fixed_lock(fixed_lock_world(pauses(), &[Property::MutualExclusion]));
    let two_holders = (0..100).filter(|seed| !plain.run(*seed).passed()).count();
    assert!(
        two_holders > 0,
        "no pause ever overlapped two holders in 100 seeds"
    );
    let fenced = fixed_lock(fixed_lock_world(
        pauses(),
        &[Property::FencedMutualExclusion, Property::Liveness],
    ));
    for seed in 0..100 {
        let report = fenced.run(seed);
        assert!(report.passed(), "seed {seed}: {:?}", report.violations);
    }
}

#[test]
fn swarm_mode_draws_fault_kinds_from_the_seed() {
    let plan = FaultPlan {
        rates: FaultRates {
            disconnects_per_s: 1.0,
            pauses_per_s: 0.5,
            loss_after_apply: 0.05,
            ..FaultRates::default()
        },
        swarm: true,
        ..FaultPlan::default()
    };
    let sim = fixed_lock(fixed_lock_world(plan, &[Property::FencedMutualExclusion]));
    let kinds: BTreeSet<Vec<&str>> = (0..16)
        .map(|seed| {
            let report = sim.run(seed);
            let mut kinds: Vec<&str> = report
                .fault_history
                .iter()
                .map(|fault| match fault.fault {
                    Fault::Disconnect { .. } => "disconnect",
                    Fault::Pause { .. } => "pause",
                    Fault::LoseReply { .. } => "lose_reply",
                    _ => "other",
                })
                .collect();
            kinds.sort();
            kinds.dedup();
            kinds
        })
        .collect();
    assert!(
        kinds.len() >= 3,
        "swarm drew too few different fault mixes: {kinds:?}"
    );
}
