//! A counterexample as a replayable schedule: the exact step order, one
//! entry per model action, written as TOML.
//!
//! The simulator's scenario files (`sim/src/scenario`) describe seeded,
//! timed runs and have no step-by-step form, so a schedule is its own small
//! format, one `[[step]]` per action. Operation names follow the stepper
//! (`zk_sim::stepper::Stepper`) and the simulator's fault names:
//!
//! | op | meaning | stepper |
//! |---|---|---|
//! | `call` | the application calls `call` | `call` |
//! | `send` | the server applies the next request | `send` |
//! | `deliver` | the client handles its inbox head | `deliver` |
//! | `fire_timer` | the earliest timer fires | `fire_next_timer` |
//! | `reconnect` | reconnect into the session (or learn it expired) | `reconnect` |
//! | `learn_expiry` | the client learns its session expired, opens `session` | `expire` client side + `new_session` |
//! | `disconnect` | the connection drops | `disconnect` |
//! | `lose_reply` | the next request is applied, its reply lost | `apply_then_disconnect` |
//! | `lose_request` | the next request is lost before the server | (none yet) |
//! | `expire` | the server expires the session; the client does not know | `expire_on_server` |
//! | `deliver_event_early` | the event at inbox `index` overtakes replies | (none yet) |
//! | `spurious_watch` | the `watch`-th armed watch fires for nothing | (none yet) |
//!
//! Session ids are `256 * (generation + 1) + client + 1`; getChildren
//! results are sorted unless a step says `order` (the n-th permutation).

use crate::action::Action;
use serde::{Deserialize, Serialize};

/// A schedule file.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Schedule {
    pub recipe: String,
    pub variant: String,
    pub clients: usize,
    /// The fault budget the model ran with (`KIND=BUDGET,...`).
    pub faults: String,
    /// The property the schedule violates (or exemplifies).
    pub property: String,
    /// Whether the schedule shows a violation or an example.
    pub expect: String,
    #[serde(rename = "step")]
    pub steps: Vec<ScheduleStep>,
}

/// One step of a schedule.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScheduleStep {
    pub client: usize,
    pub op: String,
    /// For `call`: the call, as the recipe's call type prints it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call: Option<String>,
    /// For `send`: the getChildren order (0 or absent: sorted).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub order: Option<u16>,
    /// For `deliver_event_early`: the inbox index of the event.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub index: Option<u8>,
    /// For `spurious_watch`: which armed watch (data, exist, then child).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub watch: Option<u8>,
    /// For `learn_expiry` (and a `reconnect` that finds the session
    /// expired): the new session's id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<i64>,
}

impl ScheduleStep {
    /// The step for `action`; `call` and `session` filled in by the caller.
    pub fn of(action: Action) -> ScheduleStep {
        let mut step = ScheduleStep {
            client: action.client(),
            op: action.op_name().to_string(),
            ..Default::default()
        };
        match action {
            Action::Send { order, .. } if order > 0 => step.order = Some(order),
            Action::Reorder { index, .. } => step.index = Some(index),
            Action::Spurious { watch, .. } => step.watch = Some(watch),
            _ => {}
        }
        step
    }
}

impl Schedule {
    pub fn to_toml(&self) -> String {
        toml::to_string(self).expect("a schedule always serializes")
    }

    pub fn from_toml(text: &str) -> Result<Schedule, toml::de::Error> {
        toml::from_str(text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_through_toml() {
        let schedule = Schedule {
            recipe: "lock".into(),
            variant: "original".into(),
            clients: 2,
            faults: "none".into(),
            property: "mutual_exclusion".into(),
            expect: "violation".into(),
            steps: vec![
                ScheduleStep {
                    call: Some("Lock".into()),
                    ..ScheduleStep::of(Action::Call(0))
                },
                ScheduleStep::of(Action::Send {
                    client: 1,
                    order: 2,
                }),
                ScheduleStep::of(Action::LoseRequest {
                    client: 1,
                    applied: true,
                }),
            ],
        };
        let text = schedule.to_toml();
        assert!(text.contains("[[step]]"), "{text}");
        assert!(text.contains("op = \"lose_reply\""), "{text}");
        assert_eq!(Schedule::from_toml(&text).unwrap(), schedule);
    }
}
