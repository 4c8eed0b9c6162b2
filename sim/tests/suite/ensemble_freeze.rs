//! A frozen server (`Fault::Freeze`: SIGSTOP, a long GC pause) on a
//! three-server ensemble: it answers nothing and closes nothing, so its
//! clients hang until their own read timeout (the Java client's 2/3 of the
//! session timeout: 4 s here, past the followers' notice at tickTime ×
//! syncLimit, 2 s); a frozen leader is replaced when the followers notice,
//! but its clients are not closed then (a cut-off leader's are); a freeze
//! shorter than the notice ends with nobody having noticed: the held
//! requests are answered, a leader leads on. Also what else makes a
//! server's clients hear nothing: pings queued behind a write that waits
//! for a leader, and a follower whose lag passes the sync limit. Read
//! from the fixed WriteLock's traces.

// Runs the simulator, which exists only with `--cfg madsim` (.cargo/config.toml).
#![cfg(madsim)]

use crate::common::ensemble_world::fixed_lock_on_three_servers_with;
use crate::common::trace_lines::{client_lines, near, passing_run as run, world_lines, MS};
use zk_recipes::lock::FixedLock;
use zk_sim::faults::Fault;
use zk_sim::world::{Simulation, TraceKind, TraceLine};
/// tickTime 200 ms × syncLimit 10: when the followers notice.
const DETECT_MS: u64 = 2_000;
/// A session timeout whose Java read timeout (4 s) outlasts the notice.
const SESSION_MS: u64 = 6_000;
const READ_TIMEOUT_MS: u64 = SESSION_MS * 2 / 3;
const FROZEN_AT_MS: u64 = 300;

fn world(server: usize, down_ms: u64) -> Simulation<FixedLock> {
    let freeze = Fault::Freeze { server, down_ms };
    fixed_lock_on_three_servers_with(SESSION_MS, vec![(FROZEN_AT_MS as f64, 0, freeze)])
}

/// Answers of `server` (a read's answer or a write's reply): times.
fn answers_of(lines: &[TraceLine], server: usize) -> Vec<u64> {
    let tail = format!(", server {server})");
    lines
        .iter()
        .filter(|line| line.kind == TraceKind::Apply && line.text.ends_with(&tail))
        .map(|line| line.at_ns)
        .collect()
}

/// The clients on `server` when it froze: the last server each attempt
/// went to before then.
fn clients_on(lines: &[TraceLine], server: usize) -> Vec<usize> {
    let mut on = std::collections::BTreeMap::new();
    for line in lines.iter().filter(|l| l.at_ns < FROZEN_AT_MS * MS) {
        if let (Some(client), Some(rest)) = (line.client, line.text.split("goes to server ").nth(1))
        {
            on.insert(client, rest.starts_with(&server.to_string()));
        }
    }
    on.into_iter()
        .filter(|(_, on)| *on)
        .map(|(c, _)| c)
        .collect()
}

#[test]
fn a_frozen_leader_is_replaced_and_its_clients_leave_at_their_read_timeout() {
    let down_ms = 5_000;
    let sim = world(0, down_ms);
    let mut left = 0;
    for seed in 0..5 {
        let report = run(&sim, seed);
        let lines = &report.trace.lines;
        let thaw = (FROZEN_AT_MS + down_ms) * MS;
        let notice = world_lines(lines, "notice leader 0 is gone");
        assert_eq!(notice.len(), 1, "seed {seed}");
        assert!(near(notice[0], FROZEN_AT_MS + DETECT_MS), "seed {seed}");
        assert!(
            world_lines(lines, " leads").iter().any(|&at| at < thaw),
            "seed {seed}: no new leader while server 0 was frozen"
        );
        assert!(
            answers_of(lines, 0)
                .iter()
                .all(|&at| !(FROZEN_AT_MS * MS..thaw).contains(&at)),
            "seed {seed}: the frozen leader answered"
        );
        assert!(
            client_lines(lines, "leader lost: server 0 closes").is_empty(),
            "seed {seed}: the frozen leader closed a connection"
        );
        for client in clients_on(lines, 0) {
            let timed_out = client_lines(lines, "read timeout: heard nothing")
                .into_iter()
                .find(|&(at, c)| c == client && at > FROZEN_AT_MS * MS)
                .unwrap_or_else(|| panic!("seed {seed}: c{client} never timed out"));
            assert!(
                timed_out.0 <= (FROZEN_AT_MS + READ_TIMEOUT_MS) * MS && timed_out.0 < thaw,
                "seed {seed}: c{client} left the frozen leader at {}",
                timed_out.0
            );
            left += 1;
        }
        let thawed = world_lines(lines, "server 0 thaws");
        assert_eq!(thawed.len(), 1, "seed {seed}");
        assert!(near(thawed[0], FROZEN_AT_MS + down_ms), "seed {seed}");
    }
    assert!(left > 0, "no client on the frozen leader in 5 seeds");
}

#[test]
fn a_short_freeze_goes_unnoticed_and_what_waited_is_answered() {
    let down_ms = 1_000;
    for server in [0, 1] {
        let sim = world(server, down_ms);
        let mut answered_after = 0;
        for seed in 0..5 {
            let report = run(&sim, seed);
            let lines = &report.trace.lines;
            let thaw = (FROZEN_AT_MS + down_ms) * MS;
            assert!(
                world_lines(lines, "notice leader").is_empty(),
                "server {server}, seed {seed}: noticed"
            );
            assert!(client_lines(lines, "read timeout").is_empty());
            assert!(client_lines(lines, "connection dropped").is_empty());
            assert!(answers_of(lines, server)
                .iter()
                .all(|&at| !(FROZEN_AT_MS * MS..thaw).contains(&at)));
            answered_after += answers_of(lines, server)
                .iter()
                .filter(|&&at| (thaw..thaw + 5 * MS).contains(&at))
                .count();
            let leads_on = world_lines(lines, "leads on: nobody noticed");
            assert_eq!(leads_on.len(), usize::from(server == 0), "seed {seed}");
        }
        assert!(answered_after > 0, "server {server}: nothing waited");
    }
}

/// A client whose write waits at a follower cut off from the leader hears
/// nothing more (a 3.8 server answers a session in order: its pings queue
/// behind the write) and gives the connection up at its read timeout (the
/// Java client's 2/3 of a 2 s session: 1,333 ms), before the follower
/// notices the cut (tickTime × syncLimit, 2 s) and drops the others.
#[test]
fn pings_behind_a_waiting_write_let_the_client_time_out_before_the_follower_notices() {
    let partition = Fault::Partition {
        server: 1,
        down_ms: 5_000,
        detect_ms: None,
    };
    let session_ms = 2_000;
    let read_timeout_ms = session_ms * 2 / 3;
    let sim = fixed_lock_on_three_servers_with(session_ms, vec![(300.0, 0, partition)]);
    let mut timed_out = 0;
    for seed in 0..10 {
        let report = run(&sim, seed);
        let lines = &report.trace.lines;
        let noticed = world_lines(lines, "server 1 notices it lost the leader");
        assert_eq!(noticed.len(), 1, "seed {seed}");
        assert!(near(noticed[0], 300 + DETECT_MS), "seed {seed}");
        for (at, client) in client_lines(lines, "read timeout: heard nothing") {
            if !(300 * MS..noticed[0]).contains(&at) {
                continue;
            }
            // Last heard at most a ping interval (T/3) before the cut.
            let earliest = 300 + read_timeout_ms - session_ms / 3;
            assert!(at >= earliest * MS, "seed {seed}: c{client} at {at}");
            timed_out += 1;
        }
    }
    assert!(
        timed_out > 0,
        "no write waited at the cut-off follower in 10 seeds"
    );
}

/// A lag spike past tickTime × syncLimit: the follower hears nothing from
/// its leader for that long, drops out (its clients' connections close),
/// syncs again and serves; a spike within the limit leaves it in (real
/// 3.8: `a_follower_lagging_past_the_sync_limit_is_dropped_and_resyncs`,
/// 1,991 ms after a 3 s lag began).
#[test]
fn a_follower_lagging_past_the_sync_limit_drops_out_and_syncs_again() {
    let spike = |delay_ms| Fault::LagSpike {
        server: 1,
        delay_ms,
        window_ms: 4_000,
    };
    let within = fixed_lock_on_three_servers_with(SESSION_MS, vec![(300.0, 0, spike(1_000))]);
    let past = fixed_lock_on_three_servers_with(SESSION_MS, vec![(300.0, 0, spike(3_000))]);
    let mut closed = 0;
    for seed in 0..5 {
        let report = run(&within, seed);
        assert!(world_lines(&report.trace.lines, "drops out").is_empty());
        let report = run(&past, seed);
        let lines = &report.trace.lines;
        let dropped = world_lines(lines, "server 1 heard nothing from leader 0");
        assert_eq!(dropped.len(), 1, "seed {seed}");
        assert!(near(dropped[0], 300 + DETECT_MS), "seed {seed}");
        let back = world_lines(lines, "server 1 is back");
        assert!(back.iter().any(|&at| at == dropped[0]), "seed {seed}");
        for (at, _) in client_lines(lines, "server 1 stops: connection dropped") {
            assert_eq!(at, dropped[0], "seed {seed}");
            closed += 1;
        }
    }
    assert!(closed > 0, "no client on the lagging follower in 5 seeds");
}
