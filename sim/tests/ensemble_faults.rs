//! The faults that strike a server of the ensemble, in simulated runs of
//! the fixed WriteLock on three servers, read from the trace: a crash moves
//! the crashed server's clients to the others; a partition gives stale
//! reads until the server notices, then its clients move; a leader change
//! holds every write back for its window; a lag spike makes one follower's
//! replies lag. The lock holds through each.

use zk_recipes::lock::FixedLock;
use zk_recipes::zk::{CreateMode, Path, Request};
use zk_sim::faults::{Fault, FaultPlan, MsRange, ScheduledFault, Trigger};
use zk_sim::oracles::{OracleConfig, Property};
use zk_sim::world::workloads::{hold_cycles, WorkloadSpec};
use zk_sim::world::{RunReport, Simulation, TraceKind, TraceLine, WorldConfig};

const MS: u64 = 1_000_000;

fn world(schedule: Vec<(f64, Fault)>) -> Simulation<FixedLock> {
    let locks = Path::new("/locks").unwrap();
    let config = WorldConfig {
        clients: 5,
        servers: 3,
        session_timeout_ms: 3_000,
        fault_phase_ms: 10_000,
        heal_ms: 10_000,
        setup: vec![Request::Create {
            path: locks.clone(),
            data: Vec::new(),
            mode: CreateMode::Persistent,
        }],
        faults: FaultPlan::scheduled(
            schedule
                .into_iter()
                .map(|(at_ms, fault)| ScheduledFault {
                    trigger: Trigger::AtMs(at_ms),
                    client: 0,
                    fault,
                })
                .collect(),
        ),
        oracles: OracleConfig {
            properties: [
                Property::FencedMutualExclusion,
                Property::Liveness,
                Property::NoLeaks,
            ]
            .into_iter()
            .collect(),
            fifo_dir: Some(locks),
            ..OracleConfig::default()
        },
        trace: true,
        ..WorldConfig::default()
    };
    let spec = WorkloadSpec {
        cycles: 40,
        hold_ms: MsRange::new(5, 40),
        think_ms: MsRange::new(0, 20),
        ..WorkloadSpec::default()
    };
    Simulation::new(
        config,
        |_, uid| FixedLock::new(Path::new("/locks").unwrap(), uid),
        move |client| {
            hold_cycles(
                client,
                spec.clone(),
                zk_sim::world::adapters::HoldCalls::new(
                    zk_recipes::lock::LockCall::Lock,
                    zk_recipes::lock::LockCall::Unlock,
                ),
            )
        },
    )
}

fn run(sim: &Simulation<FixedLock>, seed: u64) -> RunReport {
    let report = sim.run(seed);
    assert!(
        report.passed(),
        "seed {seed}: {:?}\n{}",
        report.violations,
        text(&report.trace.lines)
    );
    report
}

fn text(lines: &[TraceLine]) -> String {
    lines
        .iter()
        .map(|line| line.to_string())
        .collect::<Vec<_>>()
        .join("\n")
}

/// A reply the trace shows: when, to whom, its zxid, the server, the request.
#[derive(Debug)]
struct Applied {
    at_ns: u64,
    client: usize,
    zxid: u64,
    server: usize,
    request: String,
}

fn applied(lines: &[TraceLine]) -> Vec<Applied> {
    lines
        .iter()
        .filter(|line| line.kind == TraceKind::Apply)
        .map(|line| {
            let tail = line.text.rsplit("(zxid ").next().unwrap();
            let (zxid, server) = tail.trim_end_matches(')').split_once(", server ").unwrap();
            let request = line.text.split_whitespace().nth(1).unwrap().to_string();
            Applied {
                at_ns: line.at_ns,
                client: line.client.unwrap(),
                zxid: zxid.parse().unwrap(),
                server: server.parse().unwrap(),
                request,
            }
        })
        .collect()
}

/// The time of the first world-level fault line containing `text`.
fn fault_line(lines: &[TraceLine], text: &str) -> Option<u64> {
    lines
        .iter()
        .find(|line| line.kind == TraceKind::Fault && line.client.is_none() && line.text.contains(text))
        .map(|line| line.at_ns)
}

/// The clients whose connection the server's stop dropped, and when.
fn dropped_by(lines: &[TraceLine], server: usize) -> Vec<(u64, usize)> {
    let text = format!("server {server} stops: connection dropped");
    lines
        .iter()
        .filter(|line| line.text == text)
        .map(|line| (line.at_ns, line.client.unwrap()))
        .collect()
}

#[test]
fn a_crash_moves_the_crashed_servers_clients_to_the_others() {
    let sim = world(vec![(300.0, Fault::ServerCrash {
        server: 1,
        down_ms: 2_000,
    })]);
    let mut moved = 0;
    for seed in 0..10 {
        let report = run(&sim, seed);
        let lines = &report.trace.lines;
        assert_eq!(fault_line(lines, "server 1 crashes"), Some(300 * MS));
        assert_eq!(fault_line(lines, "server 1 is back"), Some(2_300 * MS));
        let replies = applied(lines);
        assert!(
            !replies
                .iter()
                .any(|r| r.server == 1 && (300 * MS..2_300 * MS).contains(&r.at_ns)),
            "seed {seed}: a crashed server answered"
        );
        for (at, client) in dropped_by(lines, 1) {
            assert_eq!(at, 300 * MS);
            moved += usize::from(replies.iter().any(|r| {
                r.client == client && r.server != 1 && (at..2_300 * MS).contains(&r.at_ns)
            }));
        }
        assert_eq!(report.fault_history.len(), 1, "seed {seed}");
    }
    assert!(moved > 0, "no client of server 1 moved in 10 seeds");
}

#[test]
fn a_crashed_leader_is_replaced_by_an_election() {
    let sim = world(vec![(300.0, Fault::ServerCrash {
        server: 0,
        down_ms: 1_000,
    })]);
    for seed in 0..5 {
        let report = run(&sim, seed);
        let lines = &report.trace.lines;
        let elected = lines
            .iter()
            .find(|line| line.client.is_none() && line.text.ends_with(" leads"))
            .unwrap_or_else(|| panic!("seed {seed}: no election"));
        assert_eq!(elected.at_ns, 500 * MS, "the election takes 200 ms");
        assert_ne!(elected.text, "server 0 leads", "a crashed server cannot lead");
        let replies = applied(lines);
        assert!(replies
            .iter()
            .any(|r| r.server == 0 && r.at_ns > 1_300 * MS), "seed {seed}: server 0 serves again");
    }
}

#[test]
fn a_partitioned_server_serves_stale_reads_until_it_notices_then_its_clients_move() {
    let sim = world(vec![(300.0, Fault::Partition {
        server: 2,
        down_ms: 3_000,
        detect_ms: Some(1_000),
    })]);
    let (mut stale, mut moved) = (0, 0);
    for seed in 0..10 {
        let report = run(&sim, seed);
        let lines = &report.trace.lines;
        assert_eq!(
            fault_line(lines, "server 2 notices it lost the leader"),
            Some(1_300 * MS)
        );
        let replies = applied(lines);
        let cut_off = (300 * MS)..(1_300 * MS);
        // While cut off it applies nothing: its replies stay at one zxid
        // while the others move on.
        let frozen: Vec<&Applied> = replies
            .iter()
            .filter(|r| r.server == 2 && cut_off.contains(&r.at_ns))
            .collect();
        if let Some(first) = frozen.first() {
            assert!(frozen.iter().all(|r| r.zxid == first.zxid), "seed {seed}: {frozen:?}");
            let newer = replies
                .iter()
                .any(|r| r.server != 2 && r.at_ns <= frozen.last().unwrap().at_ns && r.zxid > first.zxid);
            stale += usize::from(newer);
        }
        assert!(
            !replies
                .iter()
                .any(|r| r.server == 2 && (1_300 * MS..3_300 * MS).contains(&r.at_ns)),
            "seed {seed}: it stopped serving once it noticed"
        );
        for (at, client) in dropped_by(lines, 2) {
            assert_eq!(at, 1_300 * MS);
            moved += usize::from(
                replies
                    .iter()
                    .any(|r| r.client == client && r.server != 2 && r.at_ns > at),
            );
        }
    }
    assert!(stale > 0, "no stale read from the partitioned server in 10 seeds");
    assert!(moved > 0, "no client of the partitioned server moved in 10 seeds");
}

#[test]
fn a_leader_change_holds_every_write_back_for_its_window() {
    let sim = world(vec![(300.0, Fault::LeaderChange { window_ms: 1_000 })]);
    let mut held = 0;
    for seed in 0..10 {
        let report = run(&sim, seed);
        let lines = &report.trace.lines;
        let elected = lines
            .iter()
            .find(|line| line.client.is_none() && line.text.ends_with(" leads"))
            .unwrap();
        assert_eq!(elected.at_ns, 1_300 * MS);
        assert_ne!(elected.text, "server 0 leads", "leadership moves");
        // Every create sent during the window is applied after it.
        for client in 0..5 {
            let sends: Vec<u64> = lines
                .iter()
                .filter(|l| l.client == Some(client) && l.kind == TraceKind::Send)
                .filter(|l| l.text.contains("Create {") && (300 * MS..1_300 * MS).contains(&l.at_ns))
                .map(|l| l.at_ns)
                .collect();
            for sent in sends {
                let answer = applied(lines)
                    .into_iter()
                    .find(|r| r.client == client && r.request == "Create" && r.at_ns >= sent);
                if let Some(answer) = answer {
                    assert!(answer.at_ns >= 1_300 * MS, "seed {seed}: c{client}'s create went through at {}", answer.at_ns);
                    held += 1;
                }
            }
        }
    }
    assert!(held > 0, "no create was sent during the window in 10 seeds");
}

#[test]
fn a_lag_spike_makes_one_followers_replies_lag() {
    let spike = Fault::LagSpike {
        server: 1,
        delay_ms: 400,
        window_ms: 3_000,
    };
    let sim = world(vec![(300.0, spike)]);
    let (mut slow, mut fast) = (0, 0);
    for seed in 0..10 {
        let report = run(&sim, seed);
        let lines = &report.trace.lines;
        let replies = applied(lines);
        for client in 0..5 {
            let creates = lines
                .iter()
                .filter(|l| l.client == Some(client) && l.kind == TraceKind::Send)
                .filter(|l| l.text.contains("Create {") && (300 * MS..3_000 * MS).contains(&l.at_ns));
            for sent in creates {
                let Some(answer) = replies
                    .iter()
                    .find(|r| r.client == client && r.request == "Create" && r.at_ns >= sent.at_ns)
                else {
                    continue;
                };
                let took = answer.at_ns - sent.at_ns;
                if answer.server == 1 {
                    assert!(took >= 400 * MS, "seed {seed}: a create on server 1 took {took} ns");
                    slow += 1;
                } else if took < 100 * MS {
                    fast += 1;
                }
            }
        }
    }
    assert!(slow > 0 && fast > 0, "slow {slow}, fast {fast}");
}

#[test]
fn ensemble_faults_are_deterministic() {
    let sim = world(vec![
        (200.0, Fault::LagSpike {
            server: 2,
            delay_ms: 100,
            window_ms: 500,
        }),
        (400.0, Fault::ServerCrash {
            server: 0,
            down_ms: 700,
        }),
        (900.0, Fault::Partition {
            server: 1,
            down_ms: 1_000,
            detect_ms: None,
        }),
        (1_500.0, Fault::LeaderChange { window_ms: 300 }),
    ]);
    for seed in 0..3 {
        let a = run(&sim, seed);
        let b = run(&sim, seed);
        assert_eq!(a.trace.hash(), b.trace.hash(), "seed {seed}");
        assert_eq!(a.fault_history, b.fault_history);
    }
}
