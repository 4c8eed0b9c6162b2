//! The faults that strike a server of the ensemble, in simulated runs of
//! the fixed WriteLock on three servers, read from the trace: a crash moves
//! the crashed server's clients to the others; a partition gives stale
//! reads until the server notices, then its clients move; a leader change
//! holds every write back for its window; a lag spike makes one follower's
//! replies lag. The lock holds through each.

// Runs the simulator, which exists only with `--cfg madsim` (.cargo/config.toml).
#![cfg(madsim)]

use std::collections::BTreeSet;
use zk_recipes::lock::FixedLock;
use zk_recipes::zk::Acls;
use zk_recipes::zk::{CreateMode, Path, Request};
use zk_recipes::{Input, Observation, Observe, Outbox, Recipe, Tag};
use zk_sim::faults::{Fault, FaultPlan, ScheduledFault, Trigger};
use zk_sim::oracles::{CallObservation, ObserveCall};
use zk_sim::oracles::{OracleConfig, Property};
use zk_sim::world::Client;
use zk_sim::world::{Simulation, TraceKind, TraceLine, WorldConfig};

use crate::common::ensemble_world;
use crate::common::trace_lines::{near, passing_run as run, MS};

fn world(schedule: Vec<(f64, Fault)>) -> Simulation<FixedLock> {
    let schedule = schedule
        .into_iter()
        .map(|(at_ms, fault)| (at_ms, 0, fault))
        .collect();
    ensemble_world::fixed_lock_on_three_servers(schedule)
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

/// Requests answered by a server (a write's commit by the leader, traced
/// when it happens, is not an answer: its reply comes from the session's
/// server, traced as a read's answer is).
fn applied(lines: &[TraceLine]) -> Vec<Applied> {
    lines
        .iter()
        .filter(|line| line.kind == TraceKind::Apply && line.text.contains(", server "))
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
        .find(|line| {
            line.kind == TraceKind::Fault && line.client.is_none() && line.text.contains(text)
        })
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
    let sim = world(vec![(
        300.0,
        Fault::ServerCrash {
            server: 1,
            down_ms: 2_000,
        },
    )]);
    let mut moved = 0;
    for seed in 0..10 {
        let report = run(&sim, seed);
        let lines = &report.trace.lines;
        let crash = fault_line(lines, "server 1 crashes").unwrap();
        let back = fault_line(lines, "server 1 is back").unwrap();
        assert!(near(crash, 300) && near(back, 2_300), "{crash} {back}");
        let replies = applied(lines);
        assert!(
            !replies
                .iter()
                .any(|r| r.server == 1 && (crash..back).contains(&r.at_ns)),
            "seed {seed}: a crashed server answered"
        );
        for (at, client) in dropped_by(lines, 1) {
            assert_eq!(at, crash);
            moved += usize::from(
                replies
                    .iter()
                    .any(|r| r.client == client && r.server != 1 && (at..back).contains(&r.at_ns)),
            );
        }
        assert_eq!(report.fault_history.len(), 1, "seed {seed}");
    }
    assert!(moved > 0, "no client of server 1 moved in 10 seeds");
}

#[test]
fn a_crashed_leader_is_replaced_by_an_election() {
    let sim = world(vec![(
        300.0,
        Fault::ServerCrash {
            server: 0,
            down_ms: 3_000,
        },
    )]);
    let mut windows_ms = BTreeSet::new();
    for seed in 0..5 {
        let report = run(&sim, seed);
        let lines = &report.trace.lines;
        let elected = lines
            .iter()
            .find(|line| line.client.is_none() && line.text.ends_with(" leads"))
            .unwrap_or_else(|| panic!("seed {seed}: no election"));
        // The followers notice 2,000 ms later (tickTime 200 × syncLimit
        // 10), then the election takes 200 to 650 ms (election_ms).
        let window_ms = (elected.at_ns / MS).saturating_sub(2_300);
        assert!((200..=650).contains(&window_ms), "{}", elected.at_ns);
        windows_ms.insert(window_ms);
        assert_ne!(
            elected.text, "server 0 leads",
            "a crashed server cannot lead"
        );
        let back = fault_line(lines, "server 0 is back").unwrap();
        assert!(near(back, 3_300));
        assert!(!applied(lines)
            .iter()
            .any(|r| r.server == 0 && (300 * MS..back).contains(&r.at_ns)));
    }
    assert!(
        windows_ms.len() > 1,
        "every election took {windows_ms:?} ms"
    );
}

/// Reads and writes with no waiting in between: `Write` creates a fresh
/// node, `Read` lists the root.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct Probe(u64, u64);

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum ProbeCall {
    Write,
    Read,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct Done;

impl Recipe for Probe {
    type Call = ProbeCall;
    type Outcome = Done;

    fn handle(&mut self, input: Input<ProbeCall>, out: &mut Outbox<Done>) {
        match input {
            Input::Call(ProbeCall::Write) => {
                self.1 += 1;
                out.send(
                    Tag(1),
                    Request::Create {
                        path: Path::new(format!("/w-{}-{}", self.0, self.1)).unwrap(),
                        data: Vec::new(),
                        mode: CreateMode::Persistent,
                        acl: Acls::Open,
                    },
                )
            }
            Input::Call(ProbeCall::Read) => out.send(
                Tag(2),
                Request::GetChildren {
                    path: Path::root(),
                    watch: false,
                },
            ),
            Input::Reply { .. } => out.emit(Done),
            _ => {}
        }
    }
}

impl Observe for Done {
    fn observe(&self) -> Observation {
        Observation::Failed {
            reason: "done".into(),
        }
    }
}

impl ObserveCall for ProbeCall {
    fn observe_call(&self) -> CallObservation {
        CallObservation::Other
    }
}

#[test]
fn a_partitioned_server_serves_stale_reads_until_it_notices_then_its_clients_move() {
    let schedule = vec![ScheduledFault {
        trigger: Trigger::AtMs(300.0),
        client: 0,
        fault: Fault::Partition {
            server: 2,
            down_ms: 3_000,
            detect_ms: Some(1_000),
        },
    }];
    let config = WorldConfig {
        clients: 6,
        servers: 3,
        fault_phase_ms: 5_000,
        heal_ms: 5_000,
        faults: FaultPlan::scheduled(schedule),
        oracles: OracleConfig {
            properties: [Property::Liveness].into_iter().collect(),
            ..OracleConfig::default()
        },
        trace: true,
        ..WorldConfig::default()
    };
    // Clients 0 and 1 write, the others read, every 10 ms for 4 s.
    let sim = Simulation::new(
        config,
        |client, _| Probe(client as u64, 0),
        |client: Client<Probe>| async move {
            let call = if client.index() < 2 {
                ProbeCall::Write
            } else {
                ProbeCall::Read
            };
            for _ in 0..400 {
                client.call(call.clone());
                let _ = client.next_outcome().await;
                client.sleep_ms(10).await;
            }
        },
    );
    let (mut stale, mut moved) = (0, 0);
    for seed in 0..5 {
        let report = run(&sim, seed);
        let lines = &report.trace.lines;
        let start = fault_line(lines, "server 2 is cut off").unwrap();
        let noticed = fault_line(lines, "server 2 notices it lost the leader").unwrap();
        let back = fault_line(lines, "server 2 is back").unwrap();
        assert!(near(start, 300) && near(noticed, 1_300) && near(back, 3_300));
        let replies = applied(lines);
        // While cut off it applies nothing: its replies stay at one zxid
        // while the others move on.
        let frozen: Vec<&Applied> = replies
            .iter()
            .filter(|r| r.server == 2 && (start..noticed).contains(&r.at_ns))
            .collect();
        if let Some(first) = frozen.first() {
            assert!(
                frozen.iter().all(|r| r.zxid == first.zxid),
                "seed {seed}: {frozen:?}"
            );
            stale += frozen
                .iter()
                .filter(|f| {
                    replies
                        .iter()
                        .any(|r| r.server != 2 && r.at_ns <= f.at_ns && r.zxid > f.zxid)
                })
                .count();
        }
        assert!(
            !replies
                .iter()
                .any(|r| r.server == 2 && (noticed..back).contains(&r.at_ns)),
            "seed {seed}: it stopped serving once it noticed"
        );
        for (at, client) in dropped_by(lines, 2) {
            assert_eq!(at, noticed);
            moved += usize::from(
                replies
                    .iter()
                    .any(|r| r.client == client && r.server != 2 && r.at_ns > at),
            );
        }
    }
    assert!(
        stale > 0,
        "no stale read from the partitioned server in 5 seeds"
    );
    assert!(
        moved > 0,
        "no client of the partitioned server moved in 5 seeds"
    );
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
        // Noticed 2,000 ms after the change, then the 1,000 ms window.
        assert!(near(elected.at_ns, 3_300), "{}", elected.at_ns);
        assert_ne!(elected.text, "server 0 leads", "leadership moves");
        let change = fault_line(lines, "leader change").unwrap();
        // Every create sent during the window is applied after it.
        for client in 0..5 {
            let sends: Vec<u64> = lines
                .iter()
                .filter(|l| l.client == Some(client) && l.kind == TraceKind::Send)
                .filter(|l| {
                    l.text.contains("Create {") && (change..elected.at_ns).contains(&l.at_ns)
                })
                .map(|l| l.at_ns)
                .collect();
            for sent in sends {
                let answer = applied(lines)
                    .into_iter()
                    .find(|r| r.client == client && r.request == "Create" && r.at_ns >= sent);
                if let Some(answer) = answer {
                    assert!(
                        answer.at_ns >= elected.at_ns,
                        "seed {seed}: c{client}'s create went through at {}",
                        answer.at_ns
                    );
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
                .filter(|l| {
                    l.text.contains("Create {") && (300 * MS..3_000 * MS).contains(&l.at_ns)
                });
            for sent in creates {
                let Some(answer) = replies
                    .iter()
                    .find(|r| r.client == client && r.request == "Create" && r.at_ns >= sent.at_ns)
                else {
                    continue;
                };
                let took = answer.at_ns - sent.at_ns;
                if answer.server == 1 {
                    assert!(
                        took >= 400 * MS,
                        "seed {seed}: a create on server 1 took {took} ns"
                    );
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
        (
            200.0,
            Fault::LagSpike {
                server: 2,
                delay_ms: 100,
                window_ms: 500,
            },
        ),
        (
            400.0,
            Fault::ServerCrash {
                server: 0,
                down_ms: 700,
            },
        ),
        (
            900.0,
            Fault::Partition {
                server: 1,
                down_ms: 1_000,
                detect_ms: None,
            },
        ),
        (1_500.0, Fault::LeaderChange { window_ms: 300 }),
    ]);
    for seed in 0..3 {
        let a = run(&sim, seed);
        let b = run(&sim, seed);
        assert_eq!(a.trace.hash(), b.trace.hash(), "seed {seed}");
        assert_eq!(a.fault_history, b.fault_history);
    }
}
