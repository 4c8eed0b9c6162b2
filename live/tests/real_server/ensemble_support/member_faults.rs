//! What the leader-loss and cut-off-follower cases need around a member
//! fault: guards that undo the fault however the test ends, clocks that
//! note when a client lost and regained its connection, and a watcher
//! noting when the members stop serving and when a new leader serves.
//!
//! The guards never panic (they run while a failed test unwinds); a fault
//! they could not undo is left to the next test's [`Ensemble::whole`].

use super::{Ensemble, ENSEMBLE_DEADLINE};
use std::time::Duration;
use tokio::task::JoinHandle;
use tokio::time::Instant;
use zookeeper_client as zkc;

/// Resumes a frozen member when dropped.
pub struct Frozen<'a> {
    ensemble: &'a Ensemble,
    member: usize,
}

impl<'a> Frozen<'a> {
    /// Freezes `member` (SIGSTOP) and returns when the signal was sent.
    pub fn freeze(ensemble: &'a Ensemble, member: usize) -> Frozen<'a> {
        ensemble.pause_member(member);
        Frozen { ensemble, member }
    }
}

impl Drop for Frozen<'_> {
    fn drop(&mut self) {
        let member = (self.member + 1).to_string();
        if let Err(error) = self.ensemble.try_zk_server(&["resume-member", &member]) {
            eprintln!("could not resume member {member}: {error}");
        }
    }
}

/// Restarts a member on its own config when dropped (after it ran with
/// `--proxied-quorum`).
pub struct Proxied<'a> {
    pub ensemble: &'a Ensemble,
    pub member: usize,
}

impl<'a> Proxied<'a> {
    /// Stops `member`; dropping the guard starts it again without proxies.
    pub fn stopped(ensemble: &'a Ensemble, member: usize) -> Proxied<'a> {
        ensemble.stop_member(member);
        Proxied { ensemble, member }
    }
}

impl Drop for Proxied<'_> {
    fn drop(&mut self) {
        let member = (self.member + 1).to_string();
        for command in ["stop-member", "start-member"] {
            if let Err(error) = self.ensemble.try_zk_server(&[command, &member]) {
                eprintln!("could not restore member {member}: {error}");
                return;
            }
        }
    }
}

/// When a client lost its connection and when it had it back.
#[derive(Clone, Copy, Debug)]
pub struct Outage {
    pub lost_at: Instant,
    pub back_at: Instant,
}

/// Notes the client's next loss of connection and its next reconnection;
/// the task ends with `None` if the session ends instead.
pub fn outage_clock(client: &zkc::Client) -> JoinHandle<Option<Outage>> {
    let mut states = client.state_watcher();
    tokio::spawn(async move {
        let lost_at = loop {
            match states.changed().await {
                zkc::SessionState::Disconnected => break Instant::now(),
                state if state.is_terminated() => return None,
                _ => {}
            }
        };
        loop {
            match states.changed().await {
                zkc::SessionState::SyncConnected => {
                    return Some(Outage {
                        lost_at,
                        back_at: Instant::now(),
                    })
                }
                state if state.is_terminated() => return None,
                _ => {}
            }
        }
    })
}

/// What a watcher of some members saw after a fault: when each stopped
/// serving clients, and which one first served as leader and when.
#[derive(Clone, Debug, Default)]
pub struct Election {
    pub stopped_serving_at: Vec<Option<Instant>>,
    pub leader: Option<(usize, Instant)>,
}

/// Polls the members' modes (`srvr`) every 20 ms from a blocking thread
/// until one of them leads, at most [`ENSEMBLE_DEADLINE`]. Only members
/// that answer may be watched (a frozen one would stall every poll).
pub fn watch_election(addrs: Vec<String>) -> JoinHandle<Election> {
    tokio::task::spawn_blocking(move || {
        let deadline = std::time::Instant::now() + ENSEMBLE_DEADLINE;
        let mut seen = Election {
            stopped_serving_at: vec![None; addrs.len()],
            leader: None,
        };
        while std::time::Instant::now() < deadline {
            for (k, addr) in addrs.iter().enumerate() {
                let mode = zk_live::admin::server_mode(addr).ok().flatten();
                let now = Instant::now();
                match mode.as_deref() {
                    None if seen.stopped_serving_at[k].is_none() => {
                        seen.stopped_serving_at[k] = Some(now)
                    }
                    Some("leader") => {
                        seen.leader = Some((k, now));
                        return seen;
                    }
                    _ => {}
                }
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        seen
    })
}

/// Milliseconds from `from` to `to`, for the timing reports.
pub fn ms(from: Instant, to: Instant) -> u128 {
    to.saturating_duration_since(from).as_millis()
}
