//! Leader loss on a three-server ensemble, as a real 3.8 ensemble shows it
//! (issue 31): the followers notice tickTime × syncLimit after the leader
//! went, then every server closes every client connection (what was in
//! flight fails, a write that waited never commits), and clients
//! reconnect once a new leader serves; a cut-off old leader stops serving
//! then; the new leader gives every session, connected or not, a fresh
//! timeout. Read from the trace of the fixed WriteLock's runs.

// Runs the simulator, which exists only with `--cfg madsim` (.cargo/config.toml).
#![cfg(madsim)]

use crate::common::trace_lines::{
    client_lines, first_world_line as world_line, near, passing_run as run, MS,
};
use zk_recipes::lock::FixedLock;
use zk_sim::faults::Fault;
use zk_sim::world::{Simulation, TraceKind, TraceLine, WorldConfig};

/// tickTime 200 ms × syncLimit 10: the defaults (scripts/zk-server's).
const DETECT_MS: u64 = 2_000;

use crate::common::ensemble_world;

fn world(schedule: Vec<(f64, usize, Fault)>) -> Simulation<FixedLock> {
    assert_eq!(WorldConfig::default().leader_loss_detect_ms(), DETECT_MS);
    ensemble_world::fixed_lock_on_three_servers(schedule)
}

/// A server answered a request (a read's answer, or a write's reply from
/// the session's server): (time, client, server).
fn answers(lines: &[TraceLine]) -> Vec<(u64, usize, usize)> {
    lines
        .iter()
        .filter(|line| line.kind == TraceKind::Apply && line.text.contains(", server "))
        .map(|line| {
            let server = line.text.rsplit(", server ").next().unwrap();
            let server = server.trim_end_matches(')').parse().unwrap();
            (line.at_ns, line.client.unwrap(), server)
        })
        .collect()
}

#[test]
fn a_lost_leader_closes_every_connection_when_the_followers_notice() {
    let sim = world(vec![(300.0, 0, Fault::LeaderChange { window_ms: 300 })]);
    let mut fresh_commits = 0;
    for seed in 0..5 {
        let report = run(&sim, seed);
        let lines = &report.trace.lines;
        let notice = world_line(lines, "notice leader 0 is gone");
        let elected = world_line(lines, " leads");
        assert!(near(notice, 300 + DETECT_MS), "seed {seed}: {notice}");
        assert!(near(elected, 300 + DETECT_MS + 300), "seed {seed}");
        // Every client had a session: every one is disconnected at once,
        // but one whose write waited for a leader: its pings queued behind
        // the write, it heard nothing and left at its read timeout (2/3 of
        // the 3 s session: as soon as the notice, or before it).
        let closed = client_lines(lines, "leader lost: server ");
        let timed_out: Vec<(u64, usize)> = client_lines(lines, "read timeout: heard nothing")
            .into_iter()
            .filter(|&(at, _)| (300 * MS..=notice).contains(&at))
            .collect();
        let mut who: Vec<usize> = closed.iter().chain(&timed_out).map(|&(_, c)| c).collect();
        who.sort_unstable();
        assert_eq!(who, vec![0, 1, 2, 3, 4], "seed {seed}");
        assert!(closed.iter().all(|&(at, _)| at == notice));
        // No write commits from the loss to the election; no server answers
        // between the notice and the election.
        let commits = client_lines(lines, "committed by leader");
        assert!(
            !commits
                .iter()
                .any(|&(at, _)| (300 * MS..elected).contains(&at)),
            "seed {seed}: a write committed without a leader"
        );
        assert!(!answers(lines)
            .iter()
            .any(|&(at, ..)| (notice..elected).contains(&at)));
        // Clients reconnect only once the new leader serves.
        for (at, client) in client_lines(lines, "reconnected into the same session") {
            assert!(
                !(notice..elected).contains(&at),
                "seed {seed}: c{client} reconnected at {at}"
            );
        }
        // A write that waited through the loss never commits: each
        // client's first commit after the election follows a send of its
        // own after the election.
        for client in 0..5 {
            let Some(&(commit, _)) = commits
                .iter()
                .find(|&&(at, c)| c == client && at >= elected)
            else {
                continue;
            };
            let resent = lines.iter().any(|line| {
                line.client == Some(client)
                    && line.kind == TraceKind::Send
                    && (elected..=commit).contains(&line.at_ns)
            });
            assert!(resent, "seed {seed}: c{client}'s waiting write committed");
            fresh_commits += 1;
        }
    }
    assert!(fresh_commits > 0, "no client wrote after an election");
}

#[test]
fn a_cut_off_leader_stops_serving_when_the_followers_notice() {
    let partition = Fault::Partition {
        server: 0,
        down_ms: 5_000,
        detect_ms: None,
    };
    let sim = world(vec![(300.0, 0, partition)]);
    let mut moved = 0;
    for seed in 0..5 {
        let report = run(&sim, seed);
        let lines = &report.trace.lines;
        let notice = world_line(lines, "notice leader 0 is gone");
        let elected = world_line(lines, " leads");
        let back = world_line(lines, "server 0 is back");
        assert!(near(notice, 300 + DETECT_MS), "seed {seed}: {notice}");
        let served: Vec<u64> = answers(lines)
            .into_iter()
            .filter(|&(at, _, server)| server == 0 && (300 * MS..back).contains(&at))
            .map(|(at, ..)| at)
            .collect();
        assert!(
            served.iter().all(|&at| at < notice && at < elected),
            "seed {seed}: the cut-off leader served at {served:?} (notice {notice})"
        );
        // Its clients stay connected until the notice, then move.
        for (at, client) in client_lines(lines, "server 0 stops: connection dropped") {
            assert_eq!(at, notice, "seed {seed}: c{client}");
            moved += 1;
        }
    }
    assert!(moved > 0, "no client of the cut-off leader in 5 seeds");
}

#[test]
fn a_disconnected_session_gets_a_fresh_timeout_from_the_new_leader() {
    // c0 is cut off from 1,000 ms to the heal (10 s); the leader is lost
    // at 1,500 ms: noticed at 3,500, a new leader at 3,800 gives c0's
    // session a fresh 3,000 ms: it expires at the first tick from 6,800.
    let sim = world(vec![
        (1_000.0, 0, Fault::Disconnect { down_ms: 9_000 }),
        (1_500.0, 0, Fault::LeaderChange { window_ms: 300 }),
    ]);
    for seed in 0..5 {
        let report = run(&sim, seed);
        let lines = &report.trace.lines;
        let elected = world_line(lines, " leads");
        assert!(near(elected, 1_500 + DETECT_MS + 300), "seed {seed}");
        let expired = client_lines(lines, "server expired session");
        let (at, _) = *expired
            .iter()
            .find(|&&(_, client)| client == 0)
            .unwrap_or_else(|| panic!("seed {seed}: c0's session never expired"));
        assert!(
            (elected + 3_000 * MS..elected + 3_600 * MS).contains(&at),
            "seed {seed}: c0's session expired at {at} (elected {elected})"
        );
    }
}

#[test]
fn a_reconnection_to_a_cut_off_follower_hangs_until_its_connect_timeout() {
    // Server 2 is cut off at 300 ms and notices at 2,300; every client's
    // connection drops at 500 ms, and some reconnect to server 2. The
    // server never answers such an attempt; the client gives it up at its
    // connect timeout (the Java client's 3,000 ms / 3 servers), before the
    // notice would refuse it, and tries again (issue 42 item 3).
    let partition = Fault::Partition {
        server: 2,
        down_ms: 5_000,
        detect_ms: None,
    };
    let mut schedule = vec![(300.0, 0, partition)];
    schedule.extend((0..5).map(|client| (500.0, client, Fault::Disconnect { down_ms: 0 })));
    let sim = world(schedule);
    let connect_timeout_ns = sim
        .config
        .connect_timeout_ms(zk_recipes::ClientLibrary::Java)
        * MS;
    assert_eq!(connect_timeout_ns, 1_000 * MS);
    let mut hung = 0;
    for seed in 0..5 {
        let report = run(&sim, seed);
        let lines = &report.trace.lines;
        let notice = world_line(lines, "server 2 notices it lost the leader");
        assert!(near(notice, 300 + DETECT_MS), "seed {seed}");
        for (at, client) in client_lines(lines, "hangs: server 2 reaches no leader") {
            assert!(at < notice, "seed {seed}");
            let ends = ["refused", "reconnected", "times out"];
            let next = lines
                .iter()
                .find(|line| {
                    line.client == Some(client)
                        && line.at_ns > at
                        && line.kind != TraceKind::Call
                        && ends.iter().any(|end| line.text.contains(end))
                })
                .unwrap_or_else(|| panic!("seed {seed}: c{client} hangs for ever"));
            // Within a microsecond: a trace line's time has the event's
            // tie-breaking nanoseconds in it.
            let due = (at + connect_timeout_ns).min(notice);
            assert!(
                next.at_ns.abs_diff(due) < 1_000,
                "seed {seed}: c{client}: {next} (due {due})"
            );
            let expected = if due == notice {
                "refused"
            } else {
                "times out"
            };
            assert!(next.text.contains(expected), "seed {seed}: {next}");
            hung += 1;
        }
    }
    assert!(hung > 0, "no reconnection reached server 2 in 5 seeds");
}

#[test]
fn in_swarm_mode_a_partition_is_noticed_around_the_session_timeout() {
    let partition = Fault::Partition {
        server: 2,
        down_ms: 5_000,
        detect_ms: None,
    };
    let mut sim = world(vec![(300.0, 0, partition)]);
    sim.config.faults.swarm = true;
    let (mut before, mut after) = (0, 0);
    for seed in 0..20 {
        let report = run(&sim, seed);
        let line = report
            .trace
            .lines
            .iter()
            .find(|line| {
                line.text
                    .starts_with("server 2 will notice it is cut off in ")
            })
            .expect("the partition strikes");
        let detect_ms: u64 = line
            .text
            .split_whitespace()
            .nth(9)
            .unwrap()
            .parse()
            .unwrap();
        // The session timeout is 3,000 ms: drawn in [1,500, 4,500].
        assert!(
            (1_500..=4_500).contains(&detect_ms),
            "seed {seed}: {detect_ms}"
        );
        if detect_ms < 3_000 {
            before += 1;
        } else {
            after += 1;
        }
    }
    assert!(before > 0 && after > 0, "before {before}, after {after}");
}
