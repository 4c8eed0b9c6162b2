//! The flat form of a scheduled fault in scenario files and JSON.

use super::{Fault, ScheduledFault, Trigger};
use serde::{Deserialize, Serialize};

/// One `[[faults.schedule]]` entry: exactly one of `at_ms` / `request`, the
/// client (or, for the faults that strike a server of an ensemble, the
/// `server`), the fault's name and its parameters.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FaultEntry {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at_ms: Option<f64>,
    /// The client's n-th request received by the server (from 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request: Option<u64>,
    #[serde(default)]
    pub client: usize,
    /// The server an ensemble fault strikes (`lag_spike`, `server_crash`,
    /// `partition`; `leader_change` strikes whoever leads).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<usize>,
    pub fault: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub down_ms: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pause_ms: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delay_ms: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window_ms: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detect_ms: Option<u64>,
}

/// The fault names a schedule accepts.
pub const FAULT_NAMES: [&str; 14] = [
    "disconnect",
    "silent",
    "lose_reply",
    "lose_request",
    "expire",
    "pause",
    "spurious_watch",
    "delay_watches",
    "reap",
    "lag_spike",
    "server_crash",
    "partition",
    "server_freeze",
    "leader_change",
];

/// The faults that strike a server of an ensemble (refused with one server).
pub const ENSEMBLE_FAULT_NAMES: [&str; 5] = [
    "lag_spike",
    "server_crash",
    "partition",
    "server_freeze",
    "leader_change",
];

/// The faults that take a `server` (and require it).
const SERVER_FAULT_NAMES: [&str; 4] = ["lag_spike", "server_crash", "partition", "server_freeze"];

/// Why an entry is not a fault: the entry's key at fault and what is wrong.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("`{key}`: {message}")]
pub struct EntryError {
    pub key: &'static str,
    pub message: String,
}

fn entry_error(key: &'static str, message: impl Into<String>) -> EntryError {
    EntryError {
        key,
        message: message.into(),
    }
}

/// The parameters each fault takes (all others must be absent).
fn parameters(fault: &str) -> &'static [&'static str] {
    match fault {
        "disconnect" | "silent" | "lose_reply" | "lose_request" => &["down_ms"],
        "pause" => &["pause_ms"],
        "delay_watches" | "lag_spike" => &["delay_ms", "window_ms"],
        "server_crash" | "server_freeze" => &["down_ms"],
        "partition" => &["down_ms", "detect_ms"],
        "leader_change" => &["window_ms"],
        _ => &[],
    }
}

impl TryFrom<FaultEntry> for ScheduledFault {
    type Error = EntryError;

    fn try_from(entry: FaultEntry) -> Result<ScheduledFault, EntryError> {
        let name = entry.fault.as_str();
        if !FAULT_NAMES.contains(&name) {
            return Err(entry_error(
                "fault",
                format!(
                    "unknown fault `{}` (expected one of: {})",
                    crate::input::error::clip(name),
                    FAULT_NAMES.join(", ")
                ),
            ));
        }
        for (key, value) in [
            ("down_ms", entry.down_ms),
            ("pause_ms", entry.pause_ms),
            ("delay_ms", entry.delay_ms),
            ("window_ms", entry.window_ms),
            ("detect_ms", entry.detect_ms),
        ] {
            if value.is_some() && !parameters(name).contains(&key) {
                return Err(entry_error(
                    key,
                    format!("fault `{name}` does not take `{key}`"),
                ));
            }
        }
        let required = |value: Option<u64>, key: &'static str| {
            value.ok_or_else(|| entry_error(key, format!("fault `{name}` needs `{key}`")))
        };
        let takes_server = SERVER_FAULT_NAMES.contains(&name);
        let server = match entry.server {
            Some(_) if !takes_server => {
                return Err(entry_error(
                    "server",
                    format!(
                        "fault `{name}` does not take `server` (only {} strike a server)",
                        SERVER_FAULT_NAMES.join(", ")
                    ),
                ))
            }
            Some(server) => server,
            None if takes_server => {
                return Err(entry_error(
                    "server",
                    format!("fault `{name}` needs `server` (the index of the server it strikes)"),
                ))
            }
            None => 0,
        };
        if ENSEMBLE_FAULT_NAMES.contains(&name) && entry.client != 0 {
            return Err(entry_error(
                "client",
                format!("fault `{name}` strikes a server, not a client: leave `client` out"),
            ));
        }
        if name == "lag_spike" && server == 0 {
            return Err(entry_error(
                "server",
                "server 0 leads: a leader applies each commit as it commits it, so a lag spike \
                 there means nothing; pick a follower (1 and up)",
            ));
        }
        let fault = match name {
            "disconnect" => Fault::Disconnect {
                down_ms: entry.down_ms.unwrap_or(0),
            },
            "silent" => Fault::Silent {
                down_ms: required(entry.down_ms, "down_ms")?,
            },
            "lose_reply" => Fault::LoseReply {
                down_ms: entry.down_ms.unwrap_or(0),
            },
            "lose_request" => Fault::LoseRequest {
                down_ms: entry.down_ms.unwrap_or(0),
            },
            "expire" => Fault::Expire,
            "pause" => Fault::Pause {
                pause_ms: required(entry.pause_ms, "pause_ms")?,
            },
            "spurious_watch" => Fault::SpuriousWatch,
            "delay_watches" => Fault::DelayWatches {
                delay_ms: required(entry.delay_ms, "delay_ms")?,
                window_ms: required(entry.window_ms, "window_ms")?,
            },
            "lag_spike" => Fault::LagSpike {
                server,
                delay_ms: required(entry.delay_ms, "delay_ms")?,
                window_ms: required(entry.window_ms, "window_ms")?,
            },
            "server_crash" => Fault::ServerCrash {
                server,
                down_ms: required(entry.down_ms, "down_ms")?,
            },
            "partition" => Fault::Partition {
                server,
                down_ms: required(entry.down_ms, "down_ms")?,
                detect_ms: entry.detect_ms,
            },
            "server_freeze" => Fault::Freeze {
                server,
                down_ms: required(entry.down_ms, "down_ms")?,
            },
            "leader_change" => Fault::LeaderChange {
                window_ms: required(entry.window_ms, "window_ms")?,
            },
            _ => Fault::Reap,
        };
        let trigger = match (entry.at_ms, entry.request) {
            (Some(at_ms), None) if at_ms.is_finite() && at_ms >= 0.0 => Trigger::AtMs(at_ms),
            (Some(_), None) => {
                return Err(entry_error("at_ms", "must be a finite, non-negative time"))
            }
            (None, Some(n)) if n >= 1 && fault.is_per_request() => Trigger::Request(n),
            (None, Some(0)) => return Err(entry_error("request", "counts from 1")),
            (None, Some(_)) => {
                return Err(entry_error(
                    "request",
                    format!(
                        "only lose_reply and lose_request can strike a `request`, not `{name}`"
                    ),
                ))
            }
            (Some(_), Some(_)) => {
                return Err(entry_error(
                    "request",
                    "a scheduled fault has exactly one of `at_ms` and `request`",
                ))
            }
            (None, None) => {
                return Err(entry_error(
                    "at_ms",
                    "a scheduled fault needs `at_ms` or `request`",
                ))
            }
        };
        Ok(ScheduledFault {
            trigger,
            client: entry.client,
            fault,
        })
    }
}

impl From<ScheduledFault> for FaultEntry {
    fn from(scheduled: ScheduledFault) -> FaultEntry {
        let (at_ms, request) = match scheduled.trigger {
            Trigger::AtMs(ms) => (Some(ms), None),
            Trigger::Request(n) => (None, Some(n)),
        };
        let mut entry = FaultEntry {
            at_ms,
            request,
            client: scheduled.client,
            ..FaultEntry::default()
        };
        entry.fault = match scheduled.fault {
            Fault::Disconnect { down_ms } => {
                entry.down_ms = Some(down_ms);
                "disconnect"
            }
            Fault::Silent { down_ms } => {
                entry.down_ms = Some(down_ms);
                "silent"
            }
            Fault::LoseReply { down_ms } => {
                entry.down_ms = Some(down_ms);
                "lose_reply"
            }
            Fault::LoseRequest { down_ms } => {
                entry.down_ms = Some(down_ms);
                "lose_request"
            }
            Fault::Expire => "expire",
            Fault::Pause { pause_ms } => {
                entry.pause_ms = Some(pause_ms);
                "pause"
            }
            Fault::SpuriousWatch => "spurious_watch",
            Fault::DelayWatches {
                delay_ms,
                window_ms,
            } => {
                entry.delay_ms = Some(delay_ms);
                entry.window_ms = Some(window_ms);
                "delay_watches"
            }
            Fault::Reap => "reap",
            Fault::LagSpike {
                server,
                delay_ms,
                window_ms,
            } => {
                entry.server = Some(server);
                entry.delay_ms = Some(delay_ms);
                entry.window_ms = Some(window_ms);
                "lag_spike"
            }
            Fault::ServerCrash { server, down_ms } => {
                entry.server = Some(server);
                entry.down_ms = Some(down_ms);
                "server_crash"
            }
            Fault::Partition {
                server,
                down_ms,
                detect_ms,
            } => {
                entry.server = Some(server);
                entry.down_ms = Some(down_ms);
                entry.detect_ms = detect_ms;
                "partition"
            }
            Fault::Freeze { server, down_ms } => {
                entry.server = Some(server);
                entry.down_ms = Some(down_ms);
                "server_freeze"
            }
            Fault::LeaderChange { window_ms } => {
                entry.window_ms = Some(window_ms);
                "leader_change"
            }
        }
        .to_string();
        entry
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_round_trip() {
        let faults = [
            ScheduledFault {
                trigger: Trigger::AtMs(12.5),
                client: 1,
                fault: Fault::Pause { pause_ms: 9000 },
            },
            ScheduledFault {
                trigger: Trigger::Request(4),
                client: 0,
                fault: Fault::LoseReply { down_ms: 3 },
            },
            ScheduledFault {
                trigger: Trigger::AtMs(7.0),
                client: 1,
                fault: Fault::Silent { down_ms: 3_000 },
            },
            ScheduledFault {
                trigger: Trigger::AtMs(1.0),
                client: 2,
                fault: Fault::DelayWatches {
                    delay_ms: 5,
                    window_ms: 50,
                },
            },
        ];
        for fault in faults {
            let entry = FaultEntry::from(fault.clone());
            assert_eq!(ScheduledFault::try_from(entry), Ok(fault));
        }
    }

    #[test]
    fn bad_entries_say_why() {
        let entry = FaultEntry {
            at_ms: Some(1.0),
            fault: "pause".into(),
            ..FaultEntry::default()
        };
        assert_eq!(ScheduledFault::try_from(entry).unwrap_err().key, "pause_ms");
        let entry = FaultEntry {
            at_ms: Some(1.0),
            fault: "silent".into(),
            ..FaultEntry::default()
        };
        assert_eq!(ScheduledFault::try_from(entry).unwrap_err().key, "down_ms");
        let entry = FaultEntry {
            request: Some(2),
            fault: "expire".into(),
            ..FaultEntry::default()
        };
        assert_eq!(ScheduledFault::try_from(entry).unwrap_err().key, "request");
        let entry = FaultEntry {
            at_ms: Some(1.0),
            fault: "meteor".into(),
            ..FaultEntry::default()
        };
        assert!(ScheduledFault::try_from(entry)
            .unwrap_err()
            .message
            .contains("unknown fault"));
        let entry = FaultEntry {
            at_ms: Some(1.0),
            fault: "disconnect".into(),
            pause_ms: Some(5),
            ..FaultEntry::default()
        };
        assert_eq!(ScheduledFault::try_from(entry).unwrap_err().key, "pause_ms");
    }

    fn at(fault: &str) -> FaultEntry {
        FaultEntry {
            at_ms: Some(100.0),
            fault: fault.into(),
            ..FaultEntry::default()
        }
    }

    #[test]
    fn ensemble_entries_round_trip() {
        let faults = [
            Fault::LagSpike {
                server: 2,
                delay_ms: 50,
                window_ms: 1_000,
            },
            Fault::ServerCrash {
                server: 0,
                down_ms: 2_000,
            },
            Fault::Partition {
                server: 1,
                down_ms: 3_000,
                detect_ms: None,
            },
            Fault::Partition {
                server: 1,
                down_ms: 3_000,
                detect_ms: Some(40),
            },
            Fault::LeaderChange { window_ms: 300 },
        ];
        for fault in faults {
            assert!(fault.is_ensemble() && !fault.is_per_request());
            let scheduled = ScheduledFault {
                trigger: Trigger::AtMs(100.0),
                client: 0,
                fault,
            };
            let entry = FaultEntry::from(scheduled.clone());
            assert_eq!(ScheduledFault::try_from(entry.clone()), Ok(scheduled));
            let text = toml::to_string(&entry).unwrap();
            assert_eq!(
                toml::from_str::<FaultEntry>(&text).unwrap(),
                entry,
                "{text}"
            );
        }
    }

    #[test]
    fn ensemble_entries_are_parsed_from_toml() {
        let entry: FaultEntry = toml::from_str(
            "at_ms = 500\nfault = \"partition\"\nserver = 2\ndown_ms = 4000\ndetect_ms = 100\n",
        )
        .unwrap();
        assert_eq!(
            ScheduledFault::try_from(entry).unwrap().fault,
            Fault::Partition {
                server: 2,
                down_ms: 4_000,
                detect_ms: Some(100)
            }
        );
        let entry: FaultEntry =
            toml::from_str("at_ms = 5\nfault = \"leader_change\"\nwindow_ms = 300\n").unwrap();
        assert_eq!(
            ScheduledFault::try_from(entry).unwrap().fault,
            Fault::LeaderChange { window_ms: 300 }
        );
    }

    #[test]
    fn bad_ensemble_entries_name_their_key() {
        let refused = |entry: FaultEntry| ScheduledFault::try_from(entry).unwrap_err();
        // The faults that strike a server need it ...
        let error = refused(FaultEntry {
            down_ms: Some(5),
            ..at("server_crash")
        });
        assert_eq!(error.key, "server");
        assert!(error.message.contains("needs `server`"), "{error}");
        // ... the others do not take it.
        for fault in ["disconnect", "leader_change", "expire"] {
            let error = refused(FaultEntry {
                server: Some(1),
                window_ms: Some(5),
                ..at(fault)
            });
            assert!(
                error.key == "server" || error.key == "window_ms",
                "{fault}: {error}"
            );
        }
        let error = refused(FaultEntry {
            server: Some(1),
            window_ms: Some(5),
            ..at("leader_change")
        });
        assert_eq!(error.key, "server");
        // Their parameters are required, and only theirs are taken.
        let error = refused(FaultEntry {
            server: Some(1),
            window_ms: Some(5),
            ..at("lag_spike")
        });
        assert_eq!(error.key, "delay_ms");
        let error = refused(FaultEntry {
            server: Some(1),
            ..at("partition")
        });
        assert_eq!(error.key, "down_ms");
        let error = refused(FaultEntry {
            server: Some(1),
            down_ms: Some(5),
            detect_ms: Some(5),
            ..at("server_crash")
        });
        assert_eq!(error.key, "detect_ms");
        let error = refused(at("leader_change"));
        assert_eq!(error.key, "window_ms");
        // A lag spike on the leader means nothing.
        let error = refused(FaultEntry {
            server: Some(0),
            delay_ms: Some(5),
            window_ms: Some(5),
            ..at("lag_spike")
        });
        assert_eq!(error.key, "server");
        assert!(error.message.contains("leads"), "{error}");
        // A server fault names no client, and strikes no request.
        let error = refused(FaultEntry {
            client: 2,
            server: Some(1),
            down_ms: Some(5),
            ..at("server_crash")
        });
        assert_eq!(error.key, "client");
        let error = refused(FaultEntry {
            at_ms: None,
            request: Some(3),
            server: Some(1),
            down_ms: Some(5),
            ..at("server_crash")
        });
        assert_eq!(error.key, "request");
    }
}
