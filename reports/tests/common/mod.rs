//! Sample reports built in code, shaped like what `zkcheck` writes: a lock
//! run where a paused holder and the next waiter both hold (bug 8), a
//! liveness run with a stuck client, a sweep with three buckets, a model
//! check with a violated property, a catalog of three bugs, a guided
//! campaign that failed and one that found nothing (each with two coverage
//! curves), a sweep with its coverage against a model, and a run whose
//! text tries to break out of its markup.

// Each test file uses some of the fixtures.
#![allow(dead_code)]

use zk_reports::schema::*;

/// Microseconds of simulated time, in ns.
pub const fn us(us: u64) -> u64 {
    us * 1_000
}

/// Milliseconds of simulated time, in ns.
pub const fn ms(ms: u64) -> u64 {
    ms * 1_000_000
}

/// Builds a trace, oldest first.
#[derive(Default)]
pub struct Trace(pub Vec<TraceEvent>);

impl Trace {
    pub fn ev(&mut self, at_ns: u64, client: Option<usize>, kind: TraceKind, text: &str) {
        self.0.push(TraceEvent {
            at_ns,
            client,
            kind,
            text: text.to_string(),
        });
    }

    /// The events, sorted by time (stable: same-time events keep their
    /// order).
    pub fn finish(mut self) -> Vec<TraceEvent> {
        self.0.sort_by_key(|e| e.at_ns);
        self.0
    }

    /// A request of `client` sent at `at`, applied 150 µs later and its
    /// reply delivered 150 µs after that.
    pub fn request(
        &mut self,
        at: u64,
        client: usize,
        tag: u32,
        request: &str,
        zxid: u64,
        result: &str,
    ) {
        self.ev(
            at,
            Some(client),
            TraceKind::Send,
            &format!("Tag({tag}) {request}"),
        );
        self.ev(
            at + us(150),
            None,
            TraceKind::Apply,
            &format!("#{tag} {request} -> {result} (zxid {zxid})"),
        );
        self.ev(
            at + us(300),
            Some(client),
            TraceKind::Deliver,
            &format!("reply {result}"),
        );
    }
}

fn create(seq: u32) -> (String, String) {
    (
        "Create { path: \"/locks/x-\", data: [], mode: EphemeralSequential }".to_string(),
        format!("Ok(Created {{ path: \"/locks/x-{seq:010}\" }})"),
    )
}

fn report(kind: ReportKind, title: &str, command: &str) -> Report {
    Report {
        schema_version: zk_reports::SCHEMA_VERSION,
        generated_by: "zkcheck 0.1.0".to_string(),
        kind,
        title: title.to_string(),
        command: command.to_string(),
        runs: Vec::new(),
        sweep: None,
        check: None,
        catalog: None,
        fuzz: None,
        coverage: None,
    }
}

pub const LOCK_SIGNATURE: &str = "mutual_exclusion/pause-past-session-timeout";
pub const LIVENESS_SIGNATURE: &str = "liveness/watch-on-deleted-node";
pub const LEAK_SIGNATURE: &str = "no_leaks/ephemeral-left-after-close";

/// Bug 8: c1 holds, is paused 3000 ms past its 2000 ms session timeout,
/// the server expires it and c2 acquires while c1 still believes it holds.
pub fn lock_run(seed: u64) -> Run {
    let mut t = Trace::default();
    t.ev(
        0,
        None,
        TraceKind::Phase,
        "workload starts: 3 clients, session timeout 2000ms",
    );
    for c in 0..3u64 {
        t.ev(
            us(100 + c * 10),
            Some(c as usize),
            TraceKind::Session,
            &format!("Connected {{ session: SessionId(0x{:x}) }}", 0x100 + c),
        );
    }
    // Everyone creates its node; c0 is first.
    for c in 0..3usize {
        let at = ms(1) + us(500 * c as u64);
        t.ev(at, Some(c), TraceKind::Call, "Lock");
        let (request, result) = create(c as u32);
        t.request(
            at + us(10),
            c,
            (c as u32) * 10 + 1,
            &request,
            2 + c as u64,
            &result,
        );
    }
    t.request(
        ms(3),
        0,
        2,
        "GetChildren { path: \"/locks\", watch: false }",
        4,
        "Ok(Children([\"x-0000000000\", \"x-0000000001\", \"x-0000000002\"]))",
    );
    t.ev(
        ms(3) + us(310),
        Some(0),
        TraceKind::Outcome,
        "Acquired { token: FencingToken(0) }",
    );
    for (c, pred) in [(1usize, 0u32), (2, 1)] {
        let at = ms(3) + us(400 * c as u64);
        t.request(
            at,
            c,
            (c as u32) * 10 + 2,
            "GetChildren { path: \"/locks\", watch: false }",
            4,
            "Ok(Children([\"x-0000000000\", \"x-0000000001\", \"x-0000000002\"]))",
        );
        t.request(
            at + us(400),
            c,
            (c as u32) * 10 + 3,
            &format!("Exists {{ path: \"/locks/x-{pred:010}\", watch: true }}"),
            4,
            "Ok(Stat { czxid: 2, .. })",
        );
    }
    t.ev(ms(150), Some(0), TraceKind::Timer, "hold over after 147ms");
    t.ev(ms(150) + us(5), Some(0), TraceKind::Call, "Unlock");
    t.request(
        ms(150) + us(10),
        0,
        3,
        "Delete { path: \"/locks/x-0000000000\", version: -1 }",
        5,
        "Ok(Deleted)",
    );
    t.ev(ms(150) + us(320), Some(0), TraceKind::Outcome, "Released");
    t.ev(
        ms(150) + us(330),
        Some(1),
        TraceKind::Deliver,
        "watch WatchedEvent { event_type: NodeDeleted, keeper_state: SyncConnected, path: \"/locks/x-0000000000\" }",
    );
    t.request(
        ms(150) + us(400),
        1,
        14,
        "GetChildren { path: \"/locks\", watch: false }",
        5,
        "Ok(Children([\"x-0000000001\", \"x-0000000002\"]))",
    );
    t.ev(
        ms(150) + us(710),
        Some(1),
        TraceKind::Outcome,
        "Acquired { token: FencingToken(1) }",
    );
    t.ev(ms(300), Some(1), TraceKind::Fault, "pause c1 for 3000 ms");
    for k in 0..4u64 {
        let at = ms(700) + ms(k * 666);
        t.request(at, 2, 30 + k as u32, "Ping", 5, "Ok(Pong)");
    }
    t.ev(
        ms(2300),
        None,
        TraceKind::Apply,
        "#40 CloseSession { session: SessionId(0x101), reason: Expired } -> Ok(deleted [\"/locks/x-0000000001\"]) (zxid 6)",
    );
    t.ev(
        ms(2300) + us(150),
        Some(2),
        TraceKind::Deliver,
        "watch WatchedEvent { event_type: NodeDeleted, keeper_state: SyncConnected, path: \"/locks/x-0000000001\" }",
    );
    t.request(
        ms(2300) + us(200),
        2,
        41,
        "GetChildren { path: \"/locks\", watch: false }",
        6,
        "Ok(Children([\"x-0000000002\"]))",
    );
    t.ev(
        ms(2300) + us(510),
        Some(2),
        TraceKind::Outcome,
        "Acquired { token: FencingToken(2) }",
    );
    t.ev(
        ms(3300),
        Some(1),
        TraceKind::Timer,
        "resume after pause (3000 ms)",
    );
    t.ev(
        ms(3300) + us(100),
        Some(1),
        TraceKind::Session,
        "Expired { session: SessionId(0x101) }",
    );
    t.ev(ms(3300) + us(110), Some(1), TraceKind::Outcome, "Lost");
    t.ev(
        ms(4000),
        None,
        TraceKind::Phase,
        "faults heal; liveness deadline 20000.000ms",
    );

    let at = ms(2300) + us(510);
    Run {
        scenario: "scenarios/bugs/bug8-pause-two-holders.toml".to_string(),
        recipe: "lock".to_string(),
        variant: "original".to_string(),
        seed: Some(seed),
        clients: 3,
        verdict: Verdict::Violation,
        replay: format!(
            "zkcheck replay scenarios/bugs/bug8-pause-two-holders.toml --seed {seed}"
        ),
        violations: vec![Violation {
            property: "mutual_exclusion".to_string(),
            signature: LOCK_SIGNATURE.to_string(),
            at_ns: at,
            message: "c2 acquired (token 2) while c1 holds (since 150.710ms, token 1)".to_string(),
            events: vec![
                "[150.710ms] c1 outcome Acquired { token: FencingToken(1) }".to_string(),
                "[300.000ms] c1 fault pause c1 for 3000 ms".to_string(),
                "[2300.000ms] server apply #40 CloseSession { session: SessionId(0x101), reason: Expired } -> Ok(deleted [\"/locks/x-0000000001\"]) (zxid 6)".to_string(),
                "[2300.510ms] c2 outcome Acquired { token: FencingToken(2) }".to_string(),
            ],
            diagnosis: Diagnosis {
                mechanism: "pause-past-session-timeout".to_string(),
                summary: "c1 was paused for 3000 ms, longer than its 2000 ms session timeout: \
                          the server expired its session and deleted its lock node, so c2 \
                          acquired while c1 still believed it held the lock."
                    .to_string(),
                findings: vec![
                    Finding {
                        client: Some(1),
                        path: Some("/locks/x-0000000001".to_string()),
                        mechanism: "pause-past-session-timeout".to_string(),
                        what: "held the lock (token 1) and was paused from 300.000ms to 3300.000ms"
                            .to_string(),
                        why: "its session expired at 2300.000ms while it was paused; it learns \
                              this only when it resumes and hears from the server"
                            .to_string(),
                        moments: vec![
                            Moment {
                                at_ns: ms(300),
                                what: "paused for 3000 ms".to_string(),
                            },
                            Moment {
                                at_ns: ms(2300),
                                what: "session expired, /locks/x-0000000001 deleted".to_string(),
                            },
                            Moment {
                                at_ns: ms(3300) + us(110),
                                what: "resumed and learned it lost the lock".to_string(),
                            },
                        ],
                    },
                    Finding {
                        client: Some(2),
                        path: Some("/locks/x-0000000002".to_string()),
                        mechanism: "acquired-after-expiry".to_string(),
                        what: "acquired with token 2 when the deletion of c1's node fired its watch"
                            .to_string(),
                        why: "for the server the lock was free: c1's ephemeral node was gone"
                            .to_string(),
                        moments: vec![],
                    },
                ],
            },
        }],
        trace: t.finish(),
        holds: vec![
            HoldSpan {
                client: 0,
                from_ns: ms(3) + us(310),
                until_ns: Some(ms(150) + us(320)),
                token: Some(0),
                ended: "released".to_string(),
                session_ended_ns: None,
            },
            HoldSpan {
                client: 1,
                from_ns: ms(150) + us(710),
                until_ns: Some(ms(3300) + us(110)),
                token: Some(1),
                ended: "lost".to_string(),
                session_ended_ns: Some(ms(2300)),
            },
            HoldSpan {
                client: 2,
                from_ns: ms(2300) + us(510),
                until_ns: None,
                token: Some(2),
                ended: "held at end".to_string(),
                session_ended_ns: None,
            },
        ],
        stats: RunStats {
            requests: 19,
            messages: 40,
            faults: 1,
            sim_time_ns: ms(5000),
        },
    }
}

/// A lock whose c2 watches a predecessor that was deleted before the
/// watch was set, and waits forever.
pub fn liveness_run() -> Run {
    let mut t = Trace::default();
    t.ev(0, None, TraceKind::Phase, "workload starts: 3 clients");
    for c in 0..3usize {
        let at = ms(1) + us(200 * c as u64);
        t.ev(at, Some(c), TraceKind::Call, "Lock");
        let (request, result) = create(c as u32);
        t.request(
            at + us(10),
            c,
            c as u32 * 10 + 1,
            &request,
            2 + c as u64,
            &result,
        );
    }
    t.request(
        ms(2),
        0,
        2,
        "GetChildren { path: \"/locks\", watch: false }",
        4,
        "Ok(Children([\"x-0000000000\", \"x-0000000001\", \"x-0000000002\"]))",
    );
    t.ev(
        ms(2) + us(310),
        Some(0),
        TraceKind::Outcome,
        "Acquired { token: FencingToken(0) }",
    );
    t.request(
        ms(2) + us(50),
        2,
        22,
        "GetChildren { path: \"/locks\", watch: false }",
        4,
        "Ok(Children([\"x-0000000000\", \"x-0000000001\", \"x-0000000002\"]))",
    );
    t.ev(
        ms(10),
        Some(1),
        TraceKind::Fault,
        "connection loss c1 (reconnects after 40 ms)",
    );
    t.ev(ms(10) + us(5), Some(1), TraceKind::Session, "Disconnected");
    t.ev(
        ms(11),
        Some(1),
        TraceKind::Outcome,
        "Failed { reason: \"connection loss\" }",
    );
    t.ev(
        ms(11) + us(1),
        None,
        TraceKind::Fault,
        "partition heals for every client",
    );
    t.request(
        ms(12),
        1,
        13,
        "Delete { path: \"/locks/x-0000000001\", version: -1 }",
        5,
        "Ok(Deleted)",
    );
    t.request(
        ms(13),
        2,
        23,
        "GetData { path: \"/locks/x-0000000001\", watch: true }",
        5,
        "Err(NoNode)",
    );
    t.ev(
        ms(13) + us(310),
        Some(2),
        TraceKind::Timer,
        "retry GetData in 0 ms",
    );
    t.ev(ms(60), Some(0), TraceKind::Call, "Unlock");
    t.request(
        ms(60) + us(5),
        0,
        3,
        "Delete { path: \"/locks/x-0000000000\", version: -1 }",
        6,
        "Ok(Deleted)",
    );
    t.ev(ms(60) + us(310), Some(0), TraceKind::Outcome, "Released");
    t.ev(
        ms(20000),
        None,
        TraceKind::Phase,
        "faults heal; liveness deadline 20000.000ms",
    );
    Run {
        scenario: "scenarios/lock-original.toml".to_string(),
        recipe: "lock".to_string(),
        variant: "original".to_string(),
        seed: Some(203),
        clients: 3,
        verdict: Verdict::Violation,
        replay: "zkcheck replay scenarios/lock-original.toml --seed 203".to_string(),
        violations: vec![Violation {
            property: "liveness".to_string(),
            signature: LIVENESS_SIGNATURE.to_string(),
            at_ns: ms(20000),
            message: "c2 called Lock at 1.400ms and has no outcome 20000.000ms later".to_string(),
            events: vec![
                "[12.150ms] server apply #13 Delete { path: \"/locks/x-0000000001\", version: -1 } -> Ok(Deleted) (zxid 5)".to_string(),
                "[13.150ms] server apply #23 GetData { path: \"/locks/x-0000000001\", watch: true } -> Err(NoNode) (zxid 5)".to_string(),
            ],
            diagnosis: Diagnosis {
                mechanism: "watch-on-deleted-node".to_string(),
                summary: "c2 set its watch on a predecessor that was already deleted, so no \
                          event will ever wake it."
                    .to_string(),
                findings: vec![Finding {
                    client: Some(2),
                    path: Some("/locks/x-0000000001".to_string()),
                    mechanism: "watch-on-deleted-node".to_string(),
                    what: "waits for a NodeDeleted event on /locks/x-0000000001".to_string(),
                    why: "the node was deleted at 12.150ms, before the GetData that set the \
                          watch (13.150ms) got NoNode; a watch on a missing node from GetData \
                          is never set"
                        .to_string(),
                    moments: vec![
                        Moment {
                            at_ns: ms(12) + us(150),
                            what: "predecessor deleted".to_string(),
                        },
                        Moment {
                            at_ns: ms(13) + us(150),
                            what: "GetData with watch -> NoNode".to_string(),
                        },
                    ],
                }],
            },
        }],
        trace: t.finish(),
        holds: vec![HoldSpan {
            client: 0,
            from_ns: ms(2) + us(310),
            until_ns: Some(ms(60) + us(310)),
            token: Some(0),
            ended: "released".to_string(),
            session_ended_ns: None,
        }],
        stats: RunStats {
            requests: 9,
            messages: 18,
            faults: 2,
            sim_time_ns: ms(20000),
        },
    }
}

/// A run that passed.
pub fn passing_run() -> Run {
    let mut run = lock_run(5);
    run.scenario = "scenarios/lock-fixed.toml".to_string();
    run.variant = "fixed".to_string();
    run.verdict = Verdict::Pass;
    run.replay = "zkcheck replay scenarios/lock-fixed.toml --seed 5".to_string();
    run.violations.clear();
    run
}

pub fn lock_report() -> Report {
    let mut report = report(
        ReportKind::Run,
        "bug 8: a paused holder and the next waiter both hold the lock",
        "zkcheck sim scenarios/bugs/bug8-pause-two-holders.toml --seed 17 --report target/zkcheck/report",
    );
    report.runs.push(lock_run(17));
    report
}

pub fn liveness_report() -> Report {
    let mut report = report(
        ReportKind::Run,
        "lock-original: a waiter stuck on a deleted node",
        "zkcheck sim scenarios/lock-original.toml --seed 203 --report target/zkcheck/report",
    );
    report.runs.push(liveness_run());
    report
}

pub fn passing_report() -> Report {
    let mut report = report(
        ReportKind::Run,
        "lock-fixed",
        "zkcheck sim scenarios/lock-fixed.toml --seed 5",
    );
    report.runs.push(passing_run());
    report
}

pub fn sweep_report() -> Report {
    let mut report = report(
        ReportKind::Sweep,
        "lock-original over 1000 seeds",
        "zkcheck sweep scenarios/lock-original.toml --seeds 0..1000 --all-violations --report target/zkcheck/sweep",
    );
    report.sweep = Some(Sweep {
        scenario: "scenarios/lock-original.toml".to_string(),
        recipe: "lock".to_string(),
        variant: "original".to_string(),
        seeds: "0..1000".to_string(),
        runs: 1000,
        passed: 950,
        failed: 50,
        buckets: vec![
            Bucket {
                signature: LOCK_SIGNATURE.to_string(),
                summary: "a holder paused past its session timeout and the next waiter both hold"
                    .to_string(),
                seeds: 37,
                first_seed: 17,
                replay: "zkcheck replay scenarios/lock-original.toml --seed 17".to_string(),
                first_seeds: vec![],
            },
            Bucket {
                signature: LIVENESS_SIGNATURE.to_string(),
                summary: "a waiter watches a predecessor that was already deleted".to_string(),
                seeds: 12,
                first_seed: 203,
                replay: "zkcheck replay scenarios/lock-original.toml --seed 203".to_string(),
                first_seeds: vec![],
            },
            Bucket {
                signature: LEAK_SIGNATURE.to_string(),
                summary: "a lock node outlived its session | found by the leak check".to_string(),
                seeds: 3,
                first_seed: 551,
                replay: "zkcheck replay scenarios/lock-original.toml --seed 551".to_string(),
                first_seeds: vec![],
            },
        ],
        kept_seeds_per_bucket: None,
        incomplete: None,
    });
    let mut first = lock_run(17);
    first.scenario = "scenarios/lock-original.toml".to_string();
    first.replay = "zkcheck replay scenarios/lock-original.toml --seed 17".to_string();
    report.runs.push(first);
    report.runs.push(liveness_run());
    report
}

/// A sweep where every seed passed.
pub fn clean_sweep_report() -> Report {
    let mut report = sweep_report();
    report.title = "lock-fixed over 1000 seeds".to_string();
    let sweep = report.sweep.as_mut().unwrap();
    sweep.variant = "fixed".to_string();
    sweep.passed = 1000;
    sweep.failed = 0;
    sweep.buckets.clear();
    report.runs.clear();
    report
}

pub fn check_report() -> Report {
    let mut report = report(
        ReportKind::Check,
        "model check: lock original, 2 clients",
        "zkcheck check lock --variant original --clients 2 --faults connection-loss=1,expiry=1",
    );
    let steps = [
        "1. c0 calls Lock",
        "2. c0 sends Create { path: \"/locks/x-\", mode: EphemeralSequential } -> /locks/x-0000000000",
        "3. c0 sends GetChildren(\"/locks\") -> [x-0000000000]",
        "4. c0 gets Acquired { token: FencingToken(0) }",
        "5. c1 calls Lock",
        "6. c1 sends Create { path: \"/locks/x-\", mode: EphemeralSequential } -> /locks/x-0000000001",
        "7. fault: the server expires c0's session (deletes /locks/x-0000000000)",
        "8. c1 sends GetChildren(\"/locks\") -> [x-0000000001]",
        "9. c1 gets Acquired { token: FencingToken(1) } while c0 holds",
    ];
    report.check = Some(Check {
        recipe: "lock".to_string(),
        variant: "original".to_string(),
        clients: 2,
        servers: 1,
        faults: "connection-loss=1,expiry=1".to_string(),
        strategy: "bfs".to_string(),
        unique_states: 48_213,
        states: 190_377,
        exhaustive: true,
        stopped_by: None,
        properties: vec![
            PropertyVerdict {
                name: "mutual_exclusion".to_string(),
                expectation: "always".to_string(),
                verdict: "violated".to_string(),
                steps: steps.iter().map(|s| s.to_string()).collect(),
                schedule: Some(
                    "target/zkcheck/lock-original-mutual_exclusion.schedule".to_string(),
                ),
            },
            PropertyVerdict {
                name: "no_leaks".to_string(),
                expectation: "always".to_string(),
                verdict: "holds".to_string(),
                steps: vec![],
                schedule: None,
            },
            PropertyVerdict {
                name: "liveness".to_string(),
                expectation: "eventually".to_string(),
                verdict: "holds".to_string(),
                steps: vec![],
                schedule: None,
            },
            PropertyVerdict {
                name: "can_acquire".to_string(),
                expectation: "sometimes".to_string(),
                verdict: "example found".to_string(),
                steps: steps[..4].iter().map(|s| s.to_string()).collect(),
                schedule: None,
            },
        ],
    });
    let mut replayed = lock_run(0);
    replayed.seed = None;
    replayed.scenario = "target/zkcheck/lock-original-mutual_exclusion.schedule".to_string();
    replayed.replay =
        "zkcheck replay target/zkcheck/lock-original-mutual_exclusion.schedule".to_string();
    report.runs.push(replayed);
    report
}

fn entry(bug: &str, title: &str, recipe: &str, signature: &str) -> CatalogEntry {
    CatalogEntry {
        bug: bug.to_string(),
        title: title.to_string(),
        scenario: format!("scenarios/bugs/{bug}.toml"),
        recipe: recipe.to_string(),
        variant: "original".to_string(),
        signature: signature.to_string(),
        simulation: SimFinding {
            seeds_run: 1000,
            seeds_caught: 0,
            first_seed: None,
            replay: None,
            other_signatures: vec![],
        },
        model: None,
        fixed: FixedFinding {
            variant: "fixed".to_string(),
            seeds_run: 1000,
            seeds_failed: 0,
            model_states: None,
            model_holds: None,
        },
        ok: true,
    }
}

pub fn catalog_report() -> Report {
    let mut report = report(
        ReportKind::Catalog,
        "bug catalog",
        "zkcheck catalog --report target/zkcheck/catalog",
    );
    let mut bug1 = entry(
        "bug1",
        "prefix ordering: children sorted by name, not by sequence",
        "lock",
        "mutual_exclusion/prefix-ordering",
    );
    bug1.simulation.seeds_caught = 412;
    bug1.simulation.first_seed = Some(3);
    bug1.simulation.replay =
        Some("zkcheck replay scenarios/bugs/bug1-prefix-ordering.toml --seed 3".to_string());
    bug1.model = Some(ModelFinding {
        property: "mutual_exclusion".to_string(),
        steps: Some(11),
        unique_states: 20_144,
        replayed_signatures: vec!["mutual_exclusion/sorted-by-name-not-sequence".to_string()],
    });
    bug1.fixed.model_states = Some(31_870);
    bug1.fixed.model_holds = Some(true);

    let mut bug4 = entry(
        "bug4",
        "herd effect: every waiter wakes on each release",
        "lock",
        "herd/watch-on-parent",
    );
    bug4.simulation.seeds_caught = 1000;
    bug4.simulation.first_seed = Some(0);
    bug4.simulation.replay =
        Some("zkcheck replay scenarios/bugs/bug4-herd-effect.toml --seed 0".to_string());

    let mut bug8 = entry(
        "bug8",
        "a holder paused past its session timeout and the next waiter both hold",
        "lock",
        LOCK_SIGNATURE,
    );
    bug8.simulation.seeds_caught = 37;
    bug8.simulation.first_seed = Some(17);
    bug8.simulation.replay =
        Some("zkcheck replay scenarios/bugs/bug8-pause-two-holders.toml --seed 17".to_string());
    bug8.simulation.other_signatures = vec![(LIVENESS_SIGNATURE.to_string(), 2)];
    bug8.model = Some(ModelFinding {
        property: "mutual_exclusion".to_string(),
        steps: None,
        unique_states: 48_213,
        replayed_signatures: Vec::new(),
    });
    bug8.fixed.seeds_failed = 2;
    bug8.ok = false;

    report.catalog = Some(Catalog {
        entries: vec![bug1, bug4, bug8],
    });
    report
}

pub const FUZZ_TAPE: &str = "target/zkcheck/fuzz/lock-original-run734.tape";
pub const FUZZ_REPLAY: &str = "zkcheck replay target/zkcheck/fuzz/lock-original-run734.tape";

/// What an abstract state keeps, as `zk_sim::guided::tally::ABSTRACTION` says it.
pub const ABSTRACTION: &str = "a state: the tree with sequence numbers by rank and owners by client, \
     each client's connection, session, last call and requests in flight, not a recipe's own state; \
     a client feature: one client's part with the tree as it sees it";

pub fn curve(label: &str, block: u64, new_states: &[u64]) -> CoverageCurve {
    CoverageCurve {
        label: label.to_string(),
        block,
        new_states: new_states.to_vec(),
        states: new_states.iter().sum(),
    }
}

/// A campaign's coverage: the guided runs' curve (546 states) and the
/// scenario's seeds' (377), blocks of 100 runs.
pub fn fuzz_coverage() -> Coverage {
    Coverage {
        abstraction: ABSTRACTION.to_string(),
        states: 598,
        transitions: 2315,
        features: 143,
        curves: vec![
            curve(
                "guided, campaign seed 7",
                100,
                &[310, 122, 64, 30, 12, 5, 2, 1],
            ),
            curve("seeds 0..734", 100, &[280, 60, 21, 9, 4, 2, 1, 0]),
        ],
        against_model: None,
    }
}

/// A campaign whose run 734 broke mutual exclusion (bug 8's run, replayed
/// from its tape).
pub fn fuzz_report() -> Report {
    let mut report = report(
        ReportKind::Fuzz,
        "fuzz lock-original (lock original), campaign seed 7",
        "zkcheck fuzz scenarios/lock-original.toml --campaign-seed 7 --runs 2000 --against-seeds --report target/zkcheck/fuzz",
    );
    report.fuzz = Some(Fuzz {
        scenario: "scenarios/lock-original.toml".to_string(),
        recipe: "lock".to_string(),
        variant: "original".to_string(),
        campaign_seed: 7,
        runs: 734,
        seed_runs: 200,
        corpus: 41,
        first_failing_run: Some(734),
        tape: Some(FUZZ_TAPE.to_string()),
        replay: Some(FUZZ_REPLAY.to_string()),
        timed_out: false,
    });
    report.coverage = Some(fuzz_coverage());
    let mut failing = lock_run(17);
    failing.scenario = "scenarios/lock-original.toml".to_string();
    failing.replay = FUZZ_REPLAY.to_string();
    report.runs.push(failing);
    report
}

/// A campaign of the fixed lock that broke nothing before its time budget
/// ran out.
pub fn clean_fuzz_report() -> Report {
    let mut report = fuzz_report();
    report.title = "fuzz lock-fixed (lock fixed), campaign seed 7".to_string();
    report.command =
        "zkcheck fuzz scenarios/lock-fixed.toml --campaign-seed 7 --runs 2000 --timeout 60 --against-seeds"
            .to_string();
    let fuzz = report.fuzz.as_mut().unwrap();
    fuzz.scenario = "scenarios/lock-fixed.toml".to_string();
    fuzz.variant = "fixed".to_string();
    fuzz.runs = 1500;
    fuzz.first_failing_run = None;
    fuzz.tape = None;
    fuzz.replay = None;
    fuzz.timed_out = true;
    report.runs.clear();
    report
}

/// The sweep with its seeds' coverage against the model's reachable set:
/// 410 of 512 shared states (80.1%).
pub fn coverage_sweep_report() -> Report {
    let mut report = sweep_report();
    report.command = format!(
        "{} --coverage --against-model connection-loss=1,expiry=1",
        report.command
    );
    report.coverage = Some(Coverage {
        abstraction: ABSTRACTION.to_string(),
        states: 545,
        transitions: 1904,
        features: 120,
        curves: vec![curve(
            "seeds 0..1000",
            100,
            &[402, 88, 31, 12, 7, 3, 1, 1, 0, 0],
        )],
        against_model: Some(ModelCoverage {
            model: "lock/original, 2 clients, 1 cycle, faults connection-loss=1,expiry=1"
                .to_string(),
            model_states: 48_213,
            reachable: 512,
            covered: 410,
            beyond_model: 3,
            beyond_model_first: vec![
                ("x-0:c0 x-1:c1 | c0 connected, c1 expired".to_string(), 17),
                ("x-1:c1 | c0 closed, c1 connected".to_string(), 203),
            ],
            never_reached: 102,
            shortest_never_reached: vec![
                (
                    "x-0:c0 | c0 disconnected (Create in flight), c1 idle".to_string(),
                    4,
                    Some("zkcheck replay target/zkcheck/never/n0001.schedule".to_string()),
                ),
                ("(empty) | c0 expired, c1 expired".to_string(), 6, None),
            ],
        }),
    });
    report
}

/// Text that tries to break out of its markup everywhere it can.
pub const HOSTILE: &str = "<script>alert(1)</script> & \"quoted\" 'single' </svg></pre>]]>";

pub fn hostile_report() -> Report {
    let mut report = lock_report();
    report.title = format!("title {HOSTILE}");
    report.command = format!("zkcheck sim '{HOSTILE}'");
    let run = &mut report.runs[0];
    run.trace[5].text = format!("Tag(4) {HOSTILE}");
    run.violations[0].message = format!("message {HOSTILE} <b>&amp;</b>");
    run.violations[0].signature = format!("mutual_exclusion/<x>&{HOSTILE}");
    run.violations[0].diagnosis.summary = format!("summary {HOSTILE}");
    run.violations[0].diagnosis.findings[0].what = format!("what {HOSTILE}");
    run.holds[1].ended = format!("lost {HOSTILE}");
    run.replay = format!("zkcheck replay '{HOSTILE}' --seed 17");
    let mut coverage = coverage_sweep_report().coverage.unwrap();
    coverage.abstraction = format!("abstraction {HOSTILE}");
    coverage.curves[0].label = format!("curve {HOSTILE}");
    let model = coverage.against_model.as_mut().unwrap();
    model.model = format!("model {HOSTILE}");
    model.beyond_model_first[0].0 = format!("beyond {HOSTILE}");
    model.shortest_never_reached[0].0 = format!("never {HOSTILE}");
    model.shortest_never_reached[0].2 = Some(format!("zkcheck replay '{HOSTILE}'"));
    report.coverage = Some(coverage);
    report
}

/// A run with a long trace (5000 events; the violation after event 3000).
pub fn long_report() -> Report {
    let mut report = lock_report();
    let run = &mut report.runs[0];
    let mut t = Trace::default();
    for i in 0..5000u64 {
        let client = (i % 3) as usize;
        let kind = match i % 4 {
            0 => TraceKind::Send,
            1 => TraceKind::Apply,
            2 => TraceKind::Deliver,
            _ => TraceKind::Outcome,
        };
        t.ev(
            ms(i),
            if kind == TraceKind::Apply {
                None
            } else {
                Some(client)
            },
            kind,
            &format!("event number {i}"),
        );
    }
    run.trace = t.finish();
    run.violations[0].at_ns = ms(3000) + us(500);
    run.stats.sim_time_ns = ms(5000);
    report
}

/// Every fixture with a name, for tests that go over all of them.
pub fn all() -> Vec<(&'static str, Report)> {
    vec![
        ("lock_run", lock_report()),
        ("liveness_run", liveness_report()),
        ("passing_run", passing_report()),
        ("sweep", sweep_report()),
        ("clean_sweep", clean_sweep_report()),
        ("check", check_report()),
        ("catalog", catalog_report()),
        ("fuzz", fuzz_report()),
        ("clean_fuzz", clean_fuzz_report()),
        ("coverage_sweep", coverage_sweep_report()),
    ]
}
