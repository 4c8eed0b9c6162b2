//! The client session layer's timing and its session policies (issue 31
//! item 5, issue 32 item 1): reconnect attempts timed as the client
//! library the recipe targets (Java's ClientCnxn and StaticHostProvider,
//! or the `zookeeper-client` crate), a `silent` connection noticed only at
//! the read timeout, client-side session expiry as Curator does it, and a
//! new session starting with last zxid 0.

// Runs the simulator, which exists only with `--cfg madsim` (.cargo/config.toml).
#![cfg(madsim)]

use rand::SeedableRng;
use std::collections::BTreeSet;
use zk_recipes::zk::Acls;
use zk_recipes::zk::{
    CreateMode, EventType, Path, Reply, Request, SessionEvent, SessionId, WatchedEvent, ZkError,
};
use zk_recipes::{ClientLibrary, Input, Observation, Observe, Outbox, Recipe, Tag};
use zk_sim::client::{ClientSession, ConnectionState};
use zk_sim::faults::{Fault, FaultPlan, FaultRates, MsRange, ScheduledFault, Trigger};
use zk_sim::oracles::{CallObservation, ObserveCall, OracleConfig, Property};
use zk_sim::world::{Client, ReconnectTiming, RunReport, Simulation, TraceKind, WorldConfig};

// ---------------------------------------------------------------------------
// A probe recipe: creates an ephemeral node on request; on every session
// it gets (also the first) checks with a watch whether the node exists;
// reports replies, the node's owner, node events and session events.

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct Probe<const RUST: bool>;

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum ProbeCall {
    Create,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum ProbeOutcome {
    Created(Result<(), ZkError>),
    /// The node's ephemeral owner, if it exists, as a new session sees it.
    Owner(Option<i64>),
    Saw(EventType),
    Session(SessionEvent),
}

const CREATE: Tag = Tag(1);
const EXISTS: Tag = Tag(2);

fn node() -> Path {
    Path::new("/eph").unwrap()
}

impl<const RUST: bool> Recipe for Probe<RUST> {
    type Call = ProbeCall;
    type Outcome = ProbeOutcome;
    const CLIENT_LIBRARY: ClientLibrary = if RUST {
        ClientLibrary::ZookeeperClientRust
    } else {
        ClientLibrary::Java
    };

    fn handle(&mut self, input: Input<ProbeCall>, out: &mut Outbox<ProbeOutcome>) {
        match input {
            Input::Call(ProbeCall::Create) => out.send(
                CREATE,
                Request::Create {
                    path: node(),
                    data: Vec::new(),
                    mode: CreateMode::Ephemeral,
                    acl: Acls::Open,
                },
            ),
            Input::Session(event) => {
                if let SessionEvent::Connected { .. } = event {
                    let (path, watch) = (node(), true);
                    out.send(EXISTS, Request::Exists { path, watch });
                }
                out.emit(ProbeOutcome::Session(event));
            }
            Input::Reply { tag, result } if tag == CREATE => {
                out.emit(ProbeOutcome::Created(result.map(|_: Reply| ())))
            }
            Input::Reply { result, .. } => {
                if let Ok(Reply::Exists(stat)) = result {
                    let owner = stat.map(|stat| stat.ephemeral_owner);
                    out.emit(ProbeOutcome::Owner(owner));
                }
            }
            Input::Watch(WatchedEvent {
                event_type,
                path: Some(_),
                ..
            }) => out.emit(ProbeOutcome::Saw(event_type)),
            Input::Watch(_) | Input::WatcherEvent { .. } | Input::Timer(_) => {}
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

fn at(ms: f64, fault: Fault) -> ScheduledFault {
    ScheduledFault {
        trigger: Trigger::AtMs(ms),
        client: 0,
        fault,
    }
}

fn config(schedule: Vec<ScheduledFault>) -> WorldConfig {
    WorldConfig {
        clients: 1,
        session_timeout_ms: 3_000,
        fault_phase_ms: 12_000,
        heal_ms: 12_000,
        faults: FaultPlan::scheduled(schedule),
        oracles: OracleConfig {
            properties: BTreeSet::from([Property::Liveness]),
            ..OracleConfig::default()
        },
        trace: true,
        ..WorldConfig::default()
    }
}

/// The time of the first trace line containing `needle`, in ms.
fn first_ms(report: &RunReport, needle: &str) -> Option<u64> {
    report
        .trace
        .lines
        .iter()
        .find(|line| line.to_string().contains(needle))
        .map(|line| line.at_ns / 1_000_000)
}

/// The times of every trace line containing `needle`, in ms.
fn all_ms(report: &RunReport, needle: &str) -> Vec<u64> {
    report
        .trace
        .lines
        .iter()
        .filter(|line| line.to_string().contains(needle))
        .map(|line| line.at_ns / 1_000_000)
        .collect()
}

fn count(report: &RunReport, needle: &str) -> usize {
    report
        .trace
        .lines
        .iter()
        .filter(|line| line.to_string().contains(needle))
        .count()
}

/// Client 0 connects and then idles for 4 s.
async fn idle(client: Client<Probe<false>>) {
    client.connected().await;
    client.sleep_ms(4_000).await;
}

// ---------------------------------------------------------------------------
// 1. Reconnect timing.

#[test]
fn java_timing_one_server_every_attempt_waits_one_to_two_seconds() {
    let config = WorldConfig::default();
    let mut rng = rand::rngs::SmallRng::seed_from_u64(7);
    for attempt in 1..40 {
        let ms = config.reconnect_delay_draw_ms(ClientLibrary::Java, attempt, &mut rng);
        assert!((1_000..=2_000).contains(&ms), "attempt {attempt}: {ms} ms");
    }
}

#[test]
fn java_timing_several_servers_next_host_at_once_spin_after_a_round() {
    let config = WorldConfig {
        servers: 3,
        ..WorldConfig::default()
    };
    let mut rng = rand::rngs::SmallRng::seed_from_u64(7);
    for attempt in 1..40 {
        let ms = config.reconnect_delay_draw_ms(ClientLibrary::Java, attempt, &mut rng);
        let expected = if attempt % 3 == 0 {
            1_000..=2_000
        } else {
            0..=1_000
        };
        assert!(expected.contains(&ms), "attempt {attempt}: {ms} ms");
    }
}

#[test]
fn the_rust_crate_retries_at_once_then_backs_off() {
    let mut rng = rand::rngs::SmallRng::seed_from_u64(7);
    let one = WorldConfig::default();
    let draw = |config: &WorldConfig, attempt, rng: &mut rand::rngs::SmallRng| {
        config.reconnect_delay_draw_ms(ClientLibrary::ZookeeperClientRust, attempt, rng)
    };
    assert_eq!(draw(&one, 1, &mut rng), 0);
    assert!((100..200).contains(&draw(&one, 2, &mut rng)));
    assert!((200..300).contains(&draw(&one, 3, &mut rng)));
    assert!((400..500).contains(&draw(&one, 4, &mut rng)));
    // Never past the crate's own deadline, 7/5 of the session timeout.
    assert_eq!(draw(&one, 30, &mut rng), 4_000 * 7 / 5);
    let three = WorldConfig {
        servers: 3,
        ..WorldConfig::default()
    };
    assert_eq!(
        draw(&three, 2, &mut rng),
        0,
        "the first round tries each server at once"
    );
    assert!((300..400).contains(&draw(&three, 4, &mut rng)));
    assert!((50..100).contains(&draw(&three, 5, &mut rng)));
}

#[test]
fn a_fixed_delay_applies_to_every_attempt() {
    let config = WorldConfig {
        servers: 3,
        reconnect_delay_ms: MsRange::new(5, 50),
        reconnect_timing: ReconnectTiming::Fixed,
        ..WorldConfig::default()
    };
    let mut rng = rand::rngs::SmallRng::seed_from_u64(7);
    for library in [ClientLibrary::Java, ClientLibrary::ZookeeperClientRust] {
        for attempt in 1..10 {
            let ms = config.reconnect_delay_draw_ms(library, attempt, &mut rng);
            assert!(
                (5..=50).contains(&ms),
                "{library:?} attempt {attempt}: {ms} ms"
            );
        }
    }
}

#[test]
fn a_dropped_java_client_reconnects_one_to_two_seconds_later() {
    // A drop with the network back at once: the Java client's first
    // attempt comes after its 1 s spin and 0..1 s sleep (one server).
    let schedule = vec![at(500.0, Fault::Disconnect { down_ms: 0 })];
    let sim = Simulation::new(config(schedule), |_, _| Probe::<false>, idle);
    for seed in 0..6 {
        let report = sim.run(seed);
        assert!(report.passed(), "{:?}\n{}", report.violations, report.trace);
        let back = first_ms(&report, "reconnected into the same session").expect("reconnects");
        assert!(
            (1_500..=2_510).contains(&back),
            "seed {seed}: reconnected at {back} ms\n{}",
            report.trace
        );
    }
}

#[test]
fn a_dropped_rust_crate_client_reconnects_at_once() {
    let schedule = vec![at(500.0, Fault::Disconnect { down_ms: 0 })];
    let sim = Simulation::new(
        config(schedule),
        |_, _| Probe::<true>,
        |client: Client<Probe<true>>| async move {
            client.connected().await;
            client.sleep_ms(2_000).await;
        },
    );
    let report = sim.run(1);
    assert!(report.passed(), "{:?}\n{}", report.violations, report.trace);
    let back = first_ms(&report, "reconnected into the same session").expect("reconnects");
    assert!(
        (500..=510).contains(&back),
        "reconnected at {back} ms\n{}",
        report.trace
    );
}

// ---------------------------------------------------------------------------
// 2. A silent connection.

/// Client 0 creates its node at `create_at_ms` and waits for the reply.
async fn create_at(client: Client<Probe<false>>, create_at_ms: u64) -> (ProbeOutcome, u64) {
    client.connected().await;
    client.sleep_ms(create_at_ms).await;
    client.call(ProbeCall::Create);
    loop {
        if let outcome @ ProbeOutcome::Created(_) = client.next_outcome().await {
            return (outcome, client.now_ns() / 1_000_000);
        }
    }
}

#[test]
fn a_silent_connection_is_noticed_at_the_read_timeout() {
    // T = 3 s: the read timeout is 2 s from the last byte heard. The
    // connection goes silent at 1 s for 6 s; a create sent at ~1.1 s hangs
    // (no reply, no error) until the read timeout, then fails with
    // ConnectionLoss, never applied; each reconnect attempt in the
    // silence hangs for the connect timeout (3 s with one server); the
    // server heard nothing, so its timer expires the session.
    let schedule = vec![at(1_000.0, Fault::Silent { down_ms: 6_000 })];
    let sim = Simulation::new(
        config(schedule),
        |_, _| Probe::<false>,
        |client: Client<Probe<false>>| async move {
            let (outcome, failed_ms) = create_at(client.clone(), 1_100).await;
            assert_eq!(outcome, ProbeOutcome::Created(Err(ZkError::ConnectionLoss)));
            // Noticed no sooner than 2 s after the last ping (sent at most
            // a third of T before the silence), no later than 2 s after it.
            assert!(
                (2_000..=3_010).contains(&failed_ms),
                "failed at {failed_ms} ms"
            );
            client.sleep_ms(9_000).await;
        },
    );
    for seed in 0..4 {
        let report = sim.run(seed);
        let trace = report.trace.to_string();
        assert_eq!(
            report.workloads_done, 1,
            "seed {seed}: {:?}\n{trace}",
            report.violations
        );
        let applied_creates = report
            .trace
            .lines
            .iter()
            .filter(|line| line.kind == TraceKind::Apply && line.text.contains("Create"))
            .count();
        assert_eq!(applied_creates, 0, "never applied:\n{trace}");
        let noticed = first_ms(&report, "read timeout: heard nothing").expect(&trace);
        let hangs = first_ms(&report, "connection attempt hangs").expect(&trace);
        let timed_out = first_ms(&report, "connection attempt times out").expect(&trace);
        assert!(noticed < hangs && hangs + 3_000 <= timed_out + 1, "{trace}");
        let expired = first_ms(&report, "server expired session").expect(&trace);
        assert!(
            expired < 7_000,
            "the server's timer ran in the silence:\n{trace}"
        );
        assert!(count(&report, "learns its session expired") >= 1, "{trace}");
    }
}

/// A second silence striking a connection already silent lengthens it and
/// does not restart the client's read timeout: the pings the client sent
/// into the first were never answered. (A world that counted them as heard
/// kept an async latch's leader connected through a silence longer than
/// its session: the fixed latch failed `one_leader` on
/// examples/async-latch/scenarios/latch-silent.toml, seed 160.)
#[test]
fn a_silence_striking_a_silent_connection_does_not_restart_the_read_timeout() {
    let schedule = vec![
        at(1_000.0, Fault::Silent { down_ms: 6_000 }),
        at(1_900.0, Fault::Silent { down_ms: 6_000 }),
    ];
    let sim = Simulation::new(
        config(schedule),
        |_, _| Probe::<false>,
        |client: Client<Probe<false>>| async move {
            client.sleep_ms(12_000).await;
        },
    );
    for seed in 0..4 {
        let report = sim.run(seed);
        let trace = report.trace.to_string();
        // T = 3 s: the read timeout is 2 s from the last byte heard, at
        // most a ping interval (1 s) before the first silence; not 2 s
        // from the ping sent into it (at about 1 s, T/3 after the last).
        let noticed = first_ms(&report, "read timeout: heard nothing").expect(&trace);
        assert!(
            (2_000..=3_000).contains(&noticed),
            "seed {seed}: noticed at {noticed} ms\n{trace}"
        );
    }
}

#[test]
fn a_short_silence_delays_a_request_without_failing_it() {
    // Silent for 1 s (below the 2 s read timeout): the create is held up
    // and applied when the silence ends; nothing fails.
    let schedule = vec![at(1_000.0, Fault::Silent { down_ms: 1_000 })];
    let sim = Simulation::new(
        config(schedule),
        |_, _| Probe::<false>,
        |client: Client<Probe<false>>| async move {
            let (outcome, replied_ms) = create_at(client, 1_100).await;
            assert_eq!(outcome, ProbeOutcome::Created(Ok(())));
            assert!(
                (2_000..=2_100).contains(&replied_ms),
                "replied at {replied_ms} ms"
            );
        },
    );
    let report = sim.run(3);
    let trace = report.trace.to_string();
    assert!(report.passed(), "{:?}\n{trace}", report.violations);
    assert_eq!(report.workloads_done, 1, "{trace}");
    assert_eq!(count(&report, "read timeout"), 0, "{trace}");
    assert_eq!(count(&report, "disconnected"), 0, "{trace}");
}

// ---------------------------------------------------------------------------
// 3. Client-side expiry, and 4. a new session's last zxid.

/// The world of the client-side expiry case: T = 2 s, the server checks
/// for expired sessions every second, client 0 creates its ephemeral node
/// and its network is down from 300 ms to 2.3 s.
fn client_expiry_world(client_expiry: bool) -> WorldConfig {
    let mut config = config(vec![at(300.0, Fault::Disconnect { down_ms: 2_000 })]);
    config.session_timeout_ms = 2_000;
    config.tick_time_ms = 1_000;
    config.faults.rates = FaultRates {
        client_expiry,
        ..FaultRates::default()
    };
    config
}

/// Creates the node, then collects outcomes until 6 s.
async fn create_and_watch(client: Client<Probe<false>>) -> Vec<ProbeOutcome> {
    client.connected().await;
    client.call(ProbeCall::Create);
    let mut seen = Vec::new();
    while client.now_ns() < 6_000_000_000 {
        if let Some(outcome) = client.outcome_within(500).await {
            seen.push(outcome);
        }
    }
    seen
}

#[test]
fn after_a_client_side_expiry_the_new_session_sees_the_old_ephemeral_then_its_deletion() {
    let sim = Simulation::new(
        client_expiry_world(true),
        |_, _| Probe::<false>,
        |client: Client<Probe<false>>| async move {
            let seen = create_and_watch(client).await;
            let expired = seen
                .iter()
                .position(|o| *o == ProbeOutcome::Session(SessionEvent::Expired))
                .unwrap_or_else(|| panic!("no Expired: {seen:?}"));
            let connected = |o: &ProbeOutcome| match o {
                ProbeOutcome::Session(SessionEvent::Connected { session_id }) => Some(*session_id),
                _ => None,
            };
            let old = seen.iter().find_map(connected).expect("a first session");
            let reopened = seen
                .iter()
                .rposition(|o| connected(o).is_some())
                .expect("a new session");
            assert!(expired < reopened, "{seen:?}");
            assert_ne!(connected(&seen[reopened]), Some(old), "{seen:?}");
            // The new session sees the old session's node, alive...
            assert_eq!(
                seen[reopened + 1],
                ProbeOutcome::Owner(Some(old.0)),
                "{seen:?}"
            );
            // ... and later watches it vanish with the old session.
            assert!(
                seen[reopened..].contains(&ProbeOutcome::Saw(EventType::NodeDeleted)),
                "{seen:?}"
            );
        },
    );
    for seed in 0..4 {
        let report = sim.run(seed);
        let trace = report.trace.to_string();
        assert_eq!(report.workloads_done, 1, "{:?}\n{trace}", report.violations);
        let gave_up = first_ms(&report, "gives up on session").expect(&trace);
        assert!(
            (2_300..=2_310).contains(&gave_up),
            "gave up at {gave_up} ms\n{trace}"
        );
        let opened = all_ms(&report, "opened");
        assert_eq!(opened.len(), 2, "{trace}");
        let expired = first_ms(&report, "server expired session").expect(&trace);
        assert!(
            gave_up < opened[1] && opened[1] < expired,
            "the server still held it:\n{trace}"
        );
        assert_eq!(count(&report, "learns its session expired"), 0, "{trace}");
    }
}

#[test]
fn without_client_side_expiry_the_client_waits_to_hear_expired_from_the_server() {
    let sim = Simulation::new(
        client_expiry_world(false),
        |_, _| Probe::<false>,
        |client: Client<Probe<false>>| async move {
            let seen = create_and_watch(client).await;
            let sessions: Vec<(usize, SessionId)> = seen
                .iter()
                .enumerate()
                .filter_map(|(i, o)| match o {
                    ProbeOutcome::Session(SessionEvent::Connected { session_id }) => {
                        Some((i, *session_id))
                    }
                    _ => None,
                })
                .collect();
            let (first, last) = (sessions[0], sessions[sessions.len() - 1]);
            // A new session comes after the server's expiry: the node is gone.
            if first.1 != last.1 {
                assert_eq!(seen[last.0 + 1], ProbeOutcome::Owner(None), "{seen:?}");
            }
        },
    );
    let mut learned = 0;
    for seed in 0..6 {
        let report = sim.run(seed);
        let trace = report.trace.to_string();
        assert_eq!(report.workloads_done, 1, "{:?}\n{trace}", report.violations);
        assert_eq!(count(&report, "gives up on session"), 0, "{trace}");
        learned += count(&report, "learns its session expired");
    }
    assert!(learned > 0, "no seed had the server expire the session");
}

#[test]
fn swarm_mode_draws_client_side_expiry_per_seed() {
    let plan = FaultPlan {
        rates: FaultRates {
            client_expiry: true,
            ..FaultRates::default()
        },
        swarm: true,
        ..FaultPlan::default()
    };
    let drawn: BTreeSet<bool> = (0..32)
        .map(|seed| plan.materialize(seed, 1, 1).rates.client_expiry)
        .collect();
    assert_eq!(drawn, BTreeSet::from([false, true]));
    let off = FaultPlan {
        swarm: true,
        ..FaultPlan::default()
    };
    assert!((0..32).all(|seed| !off.materialize(seed, 1, 1).rates.client_expiry));
}

#[test]
fn a_new_session_after_an_expiry_starts_with_last_zxid_zero() {
    let mut session = ClientSession::new(Probe::<false>);
    session.connected(SessionId(1));
    let tag = session.next_to_send().expect("the exists check").0;
    assert_eq!(tag, EXISTS);
    session.reply(Ok(Reply::Exists(None)), 42);
    assert_eq!(session.last_zxid, 42);
    session.expired();
    assert_eq!(session.state, ConnectionState::Expired);
    session.connected(SessionId(2));
    assert_eq!(
        session.last_zxid, 0,
        "Java's new handle starts at lastZxid 0"
    );
}

/// The server expires a session on its tickTime's ticks (200 ms by
/// default), up to one tick after its timeout, as a real 3.8 server does
/// (live/tests/real_server/silence.rs measured 24 to 176 ms late at a
/// 2 s session): the client creates its node, its network goes down 10 ms
/// in (before its first ping), and the server expires it on the first tick
/// at or past its last request plus 2 s.
#[test]
fn the_server_expires_a_session_on_its_next_tick_past_the_timeout() {
    let mut world = config(vec![at(10.0, Fault::Disconnect { down_ms: 5_000 })]);
    world.session_timeout_ms = 2_000;
    let sim = Simulation::new(
        world,
        |_, _| Probe::<false>,
        |client: Client<Probe<false>>| async move {
            create_and_watch(client).await;
        },
    );
    for seed in 0..4 {
        let report = sim.run(seed);
        let trace = report.trace.to_string();
        let touched = first_ms(&report, "c0 apply").expect(&trace);
        let expired = first_ms(&report, "server expired session").expect(&trace);
        assert_eq!(expired % 200, 0, "not on a 200 ms tick:\n{trace}");
        assert!(
            (touched + 2_000..touched + 2_200).contains(&expired),
            "last heard at {touched} ms, expired at {expired} ms:\n{trace}"
        );
    }
}
