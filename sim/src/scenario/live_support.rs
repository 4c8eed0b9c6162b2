//! What a real server and real faults can do: a scenario asking for more is
//! refused before anything runs, naming the scenario key. The scenario's
//! side of a live run (`crate::live` runs it), so the live driver needs no
//! scenario.

use super::{Scenario, WorkloadKind};
use crate::faults::{Fault, FaultEntry};
use crate::oracles::Property;

/// The first thing in `scenario` a live run cannot do, as a message naming
/// its key (`faults.rates.spurious_watches_per_s: ...`); `None` if it can
/// run live.
pub fn unsupported(scenario: &Scenario) -> Option<String> {
    let raw = &scenario.raw;
    if scenario.variant().is_async() {
        let unjudged = [
            (
                Property::Fifo,
                "a lock's or an election's fifo needs the tree at the instant of each \
                 acquisition, which an async live run does not read",
            ),
            (
                Property::Herd,
                "herd counts the watch events the client library delivers, which an async live \
                 run does not see",
            ),
        ];
        // A queue's fifo is judged from the application's reports alone.
        let queue = scenario.variant().workload == WorkloadKind::Queue;
        if let Some((property, why)) = unjudged
            .iter()
            .filter(|(property, _)| !(queue && *property == Property::Fifo))
            .find(|(property, _)| scenario.properties.contains(property))
        {
            return Some(format!(
                "`properties.check` includes `{}`: cannot be judged live on an async recipe \
                 ({why}); the simulator judges it",
                property.name()
            ));
        }
    }
    if raw.ensemble > 1 {
        return Some(format!(
            "`ensemble = {}`: a live run drives the one server given with --zk; the simulated \
             ensemble's faults cannot be injected on a real one",
            raw.ensemble
        ));
    }
    if raw.config.sequence_start.is_some() {
        return Some(
            "`config.sequence_start`: a real server's sequence counter cannot be set".to_string(),
        );
    }
    let rates = &scenario.faults.rates;
    let opt_in = [
        (
            "faults.rates.spurious_watches_per_s",
            rates.spurious_watches_per_s,
            "a real server fires no watch that nothing triggered",
        ),
        (
            "faults.rates.watch_delays_per_s",
            rates.watch_delays_per_s,
            "a real server's notifications cannot be held back behind its replies",
        ),
        (
            "faults.rates.reaps_per_s",
            rates.reaps_per_s,
            "a real server's container reaper runs on its own schedule",
        ),
    ];
    if let Some((key, _, why)) = opt_in.iter().find(|(_, rate, _)| *rate > 0.0) {
        return Some(format!("`{key}`: cannot be injected live ({why})"));
    }
    if rates.client_expiry && scenario.variant().is_async() {
        return Some(
            "`faults.rates.client_expiry`: an async recipe's application opens its sessions with \
             the real client library, which the live driver cannot make give up on one; the \
             simulator does (a sans-IO recipe's live run does too)"
                .to_string(),
        );
    }
    for (index, scheduled) in scenario.faults.schedule.iter().enumerate() {
        if !injectable(&scheduled.fault) {
            let name = FaultEntry::from(scheduled.clone()).fault;
            return Some(format!(
                "`faults.schedule[{index}].fault = \"{name}\"`: cannot be injected live (only \
                 disconnect, silent, lose_request, lose_reply, expire and pause can)"
            ));
        }
    }
    None
}

/// The faults the live backend injects for real.
fn injectable(fault: &Fault) -> bool {
    matches!(
        fault,
        Fault::Disconnect { .. }
            | Fault::Silent { .. }
            | Fault::LoseReply { .. }
            | Fault::LoseRequest { .. }
            | Fault::Expire
            | Fault::Pause { .. }
    )
}
