//! Ensemble faults as choices of an explored world: what may strike a
//! server as a workload starts a drawn duration (the moments a client's
//! own strikes come at), and the shape each kind takes.
//!
//! A kind's shape is the longest the scenario schedules of that kind (its
//! largest delay, window or downtime), or, when it schedules none, a
//! default sized by the scenario's own timing ([`ServerFaultShapes::of`]).
//! The summary of `check` prints the shapes, so a verdict names them.

use super::fault_allowance::FaultAllowance;
use crate::faults::Fault;
use crate::world::WorldConfig;

/// What strikes the ensemble at a strike point.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ServerFaultChoice {
    None,
    /// A follower applies each commit later for a while.
    LagSpike(usize),
    /// A server crashes and restarts later.
    Crash(usize),
    /// A server is cut off from the others for a while.
    Partition(usize),
    /// The leader is lost; another is elected.
    LeaderChange,
    /// A server freezes (SIGSTOP, a GC pause): it answers and closes
    /// nothing for a while.
    Freeze(usize),
}

impl ServerFaultChoice {
    /// What may strike while `left` lasts, on `servers` servers of which
    /// `leader` leads, in the order a tape numbers them: none; a lag spike
    /// on each follower; a crash of each server; a partition of each
    /// server; the leader lost; a freeze of each server.
    pub fn offered(left: &FaultAllowance, servers: usize, leader: usize) -> Vec<ServerFaultChoice> {
        let mut offered = vec![ServerFaultChoice::None];
        if servers < 2 {
            return offered;
        }
        if left.lag_spike > 0 {
            let followers = (0..servers).filter(|&s| s != leader);
            offered.extend(followers.map(ServerFaultChoice::LagSpike));
        }
        if left.server_crash > 0 {
            offered.extend((0..servers).map(ServerFaultChoice::Crash));
        }
        if left.server_partition > 0 {
            offered.extend((0..servers).map(ServerFaultChoice::Partition));
        }
        if left.leader_change > 0 {
            offered.push(ServerFaultChoice::LeaderChange);
        }
        if left.server_freeze > 0 {
            offered.extend((0..servers).map(ServerFaultChoice::Freeze));
        }
        offered
    }

    /// Takes this fault out of what is `left`.
    pub fn spend(self, left: &mut FaultAllowance) {
        match self {
            ServerFaultChoice::None => {}
            ServerFaultChoice::LagSpike(_) => left.lag_spike -= 1,
            ServerFaultChoice::Crash(_) => left.server_crash -= 1,
            ServerFaultChoice::Partition(_) => left.server_partition -= 1,
            ServerFaultChoice::LeaderChange => left.leader_change -= 1,
            ServerFaultChoice::Freeze(_) => left.server_freeze -= 1,
        }
    }
}

/// The shape each ensemble fault kind takes when a tape strikes it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ServerFaultShapes {
    /// A lag spike: each commit applied this much later...
    pub lag_spike_delay_ms: u64,
    /// ... for this long.
    pub lag_spike_window_ms: u64,
    /// A crashed server restarts this much later.
    pub crash_down_ms: u64,
    /// A partition heals this much later.
    pub partition_down_ms: u64,
    /// A new leader is elected this long after the followers noticed.
    pub leader_change_window_ms: u64,
    /// A frozen server thaws this much later.
    pub freeze_down_ms: u64,
    /// True for each kind the scenario schedules (its shape is then the
    /// scenario's): lag spike, crash, partition, leader change, freeze.
    pub scheduled: [bool; 5],
}

impl ServerFaultShapes {
    /// The shapes in `config`'s world: the longest of each kind its
    /// schedule has; else a lag spike of half of tickTime × syncLimit (a
    /// follower stays in the quorum) for a session timeout, a crash and
    /// a partition of twice the session timeout (the sessions on the
    /// server move or expire), a new leader two ticks after the loss is
    /// noticed, a freeze of twice the session timeout (its clients leave
    /// at their read timeout, a frozen leader is replaced).
    pub fn of(config: &WorldConfig) -> ServerFaultShapes {
        let session_ms = config.session_timeout_ms;
        let mut shapes = ServerFaultShapes {
            lag_spike_delay_ms: config.tick_time_ms * config.sync_limit / 2,
            lag_spike_window_ms: session_ms,
            crash_down_ms: 2 * session_ms,
            partition_down_ms: 2 * session_ms,
            leader_change_window_ms: 2 * config.tick_time_ms,
            freeze_down_ms: 2 * session_ms,
            scheduled: [false; 5],
        };
        // A kind's first scheduled value replaces the default; later ones
        // only lengthen it.
        let longest = |slot: &mut u64, seen: &mut bool, value: u64| {
            *slot = match *seen {
                true => (*slot).max(value),
                false => value,
            };
            *seen = true;
        };
        let (mut spike_delay, mut spike_window) = (false, false);
        let mut seen = [false; 5];
        for entry in &config.faults.schedule {
            match entry.fault {
                Fault::LagSpike {
                    delay_ms,
                    window_ms,
                    ..
                } => {
                    longest(&mut shapes.lag_spike_delay_ms, &mut spike_delay, delay_ms);
                    longest(
                        &mut shapes.lag_spike_window_ms,
                        &mut spike_window,
                        window_ms,
                    );
                    seen[0] = true;
                }
                Fault::ServerCrash { down_ms, .. } => {
                    longest(&mut shapes.crash_down_ms, &mut seen[1], down_ms)
                }
                Fault::Partition { down_ms, .. } => {
                    longest(&mut shapes.partition_down_ms, &mut seen[2], down_ms)
                }
                Fault::LeaderChange { window_ms } => {
                    longest(&mut shapes.leader_change_window_ms, &mut seen[3], window_ms)
                }
                Fault::Freeze { down_ms, .. } => {
                    longest(&mut shapes.freeze_down_ms, &mut seen[4], down_ms)
                }
                _ => {}
            }
        }
        shapes.scheduled = seen;
        shapes
    }

    /// The fault a choice strikes with (None for none).
    pub fn fault(&self, choice: ServerFaultChoice) -> Option<Fault> {
        Some(match choice {
            ServerFaultChoice::None => return None,
            ServerFaultChoice::LagSpike(server) => Fault::LagSpike {
                server,
                delay_ms: self.lag_spike_delay_ms,
                window_ms: self.lag_spike_window_ms,
            },
            ServerFaultChoice::Crash(server) => Fault::ServerCrash {
                server,
                down_ms: self.crash_down_ms,
            },
            ServerFaultChoice::Partition(server) => Fault::Partition {
                server,
                down_ms: self.partition_down_ms,
                detect_ms: None,
            },
            ServerFaultChoice::LeaderChange => Fault::LeaderChange {
                window_ms: self.leader_change_window_ms,
            },
            ServerFaultChoice::Freeze(server) => Fault::Freeze {
                server,
                down_ms: self.freeze_down_ms,
            },
        })
    }

    /// The shapes as the summary of `check` names them, for the kinds
    /// `budget` allows.
    pub fn describe(&self, budget: &FaultAllowance) -> Vec<String> {
        let whose = |scheduled: bool| match scheduled {
            true => "the longest the scenario schedules",
            false => "the scenario schedules none",
        };
        let mut out = Vec::new();
        if budget.lag_spike > 0 {
            out.push(format!(
                "a follower's lag spike of {} ms for {} ms ({})",
                self.lag_spike_delay_ms,
                self.lag_spike_window_ms,
                whose(self.scheduled[0])
            ));
        }
        if budget.server_crash > 0 {
            out.push(format!(
                "a server's crash, down {} ms ({})",
                self.crash_down_ms,
                whose(self.scheduled[1])
            ));
        }
        if budget.server_partition > 0 {
            out.push(format!(
                "a server's partition from the others for {} ms ({})",
                self.partition_down_ms,
                whose(self.scheduled[2])
            ));
        }
        if budget.leader_change > 0 {
            out.push(format!(
                "the leader lost, a new one {} ms after it is noticed ({})",
                self.leader_change_window_ms,
                whose(self.scheduled[3])
            ));
        }
        if budget.server_freeze > 0 {
            out.push(format!(
                "a server frozen (SIGSTOP, a GC pause) for {} ms ({})",
                self.freeze_down_ms,
                whose(self.scheduled[4])
            ));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::faults::{ScheduledFault, Trigger};

    #[test]
    fn followers_only_take_lag_spikes_and_the_budget_limits_the_kinds() {
        let budget = FaultAllowance {
            lag_spike: 1,
            leader_change: 1,
            ..FaultAllowance::default()
        };
        let offered = ServerFaultChoice::offered(&budget, 3, 1);
        assert_eq!(
            offered,
            vec![
                ServerFaultChoice::None,
                ServerFaultChoice::LagSpike(0),
                ServerFaultChoice::LagSpike(2),
                ServerFaultChoice::LeaderChange,
            ]
        );
        assert_eq!(
            ServerFaultChoice::offered(&budget, 1, 0),
            vec![ServerFaultChoice::None],
            "one server has no ensemble fault"
        );
        let mut left = budget;
        ServerFaultChoice::LagSpike(2).spend(&mut left);
        assert_eq!(ServerFaultChoice::offered(&left, 3, 0).len(), 2);
        let freeze = FaultAllowance {
            server_freeze: 1,
            ..FaultAllowance::default()
        };
        assert!(freeze.has_server_faults());
        let offered = ServerFaultChoice::offered(&freeze, 3, 0);
        assert_eq!(
            offered[1..],
            [0, 1, 2].map(ServerFaultChoice::Freeze),
            "any server, the leader too"
        );
        let mut left = freeze;
        ServerFaultChoice::Freeze(0).spend(&mut left);
        assert!(!left.has_server_faults());
    }

    #[test]
    fn a_shape_is_the_longest_the_scenario_schedules_else_the_timings() {
        let mut config = WorldConfig::default();
        let defaults = ServerFaultShapes::of(&config);
        assert_eq!(defaults.lag_spike_delay_ms, 200 * 10 / 2);
        assert_eq!(defaults.crash_down_ms, 8_000);
        assert_eq!(defaults.scheduled, [false; 5]);
        assert_eq!(defaults.freeze_down_ms, 8_000);
        let spike = |delay_ms, window_ms| ScheduledFault {
            trigger: Trigger::AtMs(300.0),
            client: 0,
            fault: Fault::LagSpike {
                server: 1,
                delay_ms,
                window_ms,
            },
        };
        config.faults.schedule = vec![spike(300, 2_000), spike(1_000, 500), spike(50, 5_000)];
        let shapes = ServerFaultShapes::of(&config);
        assert_eq!(
            (shapes.lag_spike_delay_ms, shapes.lag_spike_window_ms),
            (1_000, 5_000)
        );
        assert_eq!(shapes.scheduled, [true, false, false, false, false]);
        assert_eq!(
            shapes.fault(ServerFaultChoice::LagSpike(2)),
            Some(Fault::LagSpike {
                server: 2,
                delay_ms: 1_000,
                window_ms: 5_000
            })
        );
        assert_eq!(shapes.fault(ServerFaultChoice::None), None);
    }
}
