//! What an explored world enumerated, bounded and fixed, as `check` on
//! an async recipe or a scenario file prints it: one line per dimension
//! of the world, so a verdict says exactly what it covers. A dimension the
//! scenario draws and the explorer does not vary is named with what the
//! scenario would have drawn.

use super::explored::{Explored, MAX_SCENARIO_CLIENTS};
use zk_sim::explore::run::LATENCY_US;
use zk_sim::explore::{FaultAllowance, ServerFaultShapes};
use zk_sim::faults::MsRange;
use zk_sim::scenario::WorkloadKind;

/// How the explorer treated one dimension of the world.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum How {
    /// Every alternative tried (within the search's bounds).
    Enumerated,
    /// Tried at the values named.
    Bounded,
    /// One value, not varied.
    Fixed,
    /// Left out of the world.
    NotExplored,
    /// Drawn at random (PCT or uniform sampling): no coverage claimed.
    Sampled,
}

impl How {
    fn label(self) -> &'static str {
        match self {
            How::Enumerated => "enumerated",
            How::Bounded => "bounded",
            How::Fixed => "fixed",
            How::NotExplored => "not explored",
            How::Sampled => "sampled",
        }
    }
}

/// One dimension: how it was explored, and what that was.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Dimension {
    pub how: How,
    pub text: String,
}

/// How the world was explored, a dimension a line: `order` says how the
/// server's order was (a delay bound, or PCT's priorities); `sampled`:
/// PCT drew the choices a search enumerates or bounds (faults at requests
/// and between them alike).
pub fn dimensions(explored: &Explored, order: &str, sampled: bool) -> Vec<Dimension> {
    let (searched, pointed) = match sampled {
        true => (How::Sampled, How::Sampled),
        false => (How::Enumerated, How::Bounded),
    };
    let mut out = Vec::new();
    let mut push = |how, text: String| out.push(Dimension { how, text });
    let world = &explored.world;
    let given = explored.given.as_ref().map(|given| &given.scenario.raw);
    let had = |ours: u64, theirs: Option<u64>, flag: &str| match theirs {
        Some(theirs) if theirs != ours => format!(" ({flag}; the scenario has {theirs})"),
        _ => String::new(),
    };
    let kind = explored.scenario.variant().workload;
    let clients_bound = match explored.clients_given {
        true => "--clients".to_string(),
        false => format!("at most {MAX_SCENARIO_CLIENTS} unless --clients says"),
    };
    let mut size = format!(
        "clients: {}{}",
        world.clients,
        had(
            world.clients as u64,
            given.map(|raw| raw.clients as u64),
            &clients_bound
        )
    );
    if kind == WorkloadKind::Hold {
        let theirs = given.map(|raw| u64::from(raw.workload.cycles));
        size += &format!(
            "; cycles: {}{}",
            world.cycles,
            had(u64::from(world.cycles), theirs, "--cycles")
        );
    }
    push(How::Bounded, size);
    push(
        searched,
        format!("the server's order of the requests waiting for it: {order}"),
    );
    let faults = explored.bounds.faults;
    let text = explored.given.as_ref().map(|given| given.text.as_str());
    let at_request = scenario_draws(text, Drawn::AtRequest);
    push(
        searched,
        match faults == Default::default() {
            true => format!("faults: none (--faults none{at_request})"),
            false => format!(
                "faults: {faults} (at most, in all){}{at_request}",
                where_faults_strike(explored, &faults)
            ),
        },
    );
    durations(explored, kind, pointed, &mut push);
    let latency = &explored
        .given
        .as_ref()
        .map(|g| &g.scenario.raw.timing.latency);
    let drawn = match latency {
        Some(latency) => format!(
            " (the scenario draws {}-{} µs{})",
            latency.min_us,
            latency.max_us,
            match latency.spike_probability > 0.0 {
                true => ", with spikes",
                false => "",
            }
        ),
        None => String::new(),
    };
    push(
        How::Fixed,
        format!(
            "latency: {} ms each way{drawn}; the server's order above stands in for its variation",
            LATENCY_US / 1000
        ),
    );
    servers(explored, pointed, &mut push);
    // A policy of the clients, not a drawn fault: the world keeps it.
    let client_expiry = explored.scenario.faults.rates.client_expiry;
    if client_expiry {
        push(
            How::Fixed,
            "client-side expiry: on, as the scenario says (a client disconnected for its session timeout gives its session up: the partitions, silences and pauses above outlast it)".to_string(),
        );
    }
    let scenario_faults = scenario_draws(text, Drawn::BetweenRequests);
    let mut other_kinds = match client_expiry {
        true => "watch faults".to_string(),
        false => "client-side expiries, watch faults".to_string(),
    };
    if explored.scenario.world_config().servers > 1 {
        let left_out: Vec<&str> = [
            ("lag-spike", faults.lag_spike),
            ("server-crash", faults.server_crash),
            ("server-partition", faults.server_partition),
            ("leader-change", faults.leader_change),
            ("server-freeze", faults.server_freeze),
        ]
        .iter()
        .filter(|(_, budget)| *budget == 0)
        .map(|(kind, _)| *kind)
        .collect();
        if !left_out.is_empty() {
            other_kinds += &format!(
                ", ensemble faults not in --faults ({})",
                left_out.join(", ")
            );
        }
    }
    push(
        How::NotExplored,
        format!("faults at other times (a client waiting on a watch draws nothing and is struck only at its requests) and of other kinds ({other_kinds}){scenario_faults}"),
    );
    let seeds = explored.bounds.runtime_seeds;
    let seeded = "the runtime's choice among a client's ready tasks, the branch a `select!` without `biased;` tries first, getChildren order, session ids, reconnect and new-session delays";
    push(
        match seeds.is_one() {
            true => How::Fixed,
            false => How::Sampled,
        },
        match (seeds.is_one(), sampled) {
            (true, _) => format!("{seeded}: as runtime seed {seeds} draws them (--runtime-seeds LO..HI: a search under each of several)"),
            (false, false) => format!("{seeded}: as each of runtime seeds {seeds} draws them, a whole search under each (a sample of the runtime's choices, not an enumeration)"),
            (false, true) => format!("{seeded}: as runtime seeds {seeds} draw them, the runs going round the seeds"),
        },
    );
    out
}

/// Where and how the faults of `budget` strike: at every request, as a
/// workload starts each drawn duration (the ensemble's in the shapes the
/// scenario gives them).
fn where_faults_strike(explored: &Explored, budget: &FaultAllowance) -> String {
    let mut at_request = Vec::new();
    let mut between = Vec::new();
    if budget.connection_loss > 0 {
        at_request.push("lost before or after it applies");
        between.extend([
            "a connection blip",
            "a connection down for half the session timeout",
            "a partition or a silent connection of twice the session timeout",
        ]);
    }
    if budget.expiry > 0 {
        at_request.push("the session expiring instead");
        between.push("the session expiring");
    }
    if budget.pause > 0 {
        between.push("a pause of twice the session timeout");
    }
    let shapes = ServerFaultShapes::of(&explored.scenario.world_config()).describe(budget);
    let mut between: Vec<String> = between.into_iter().map(str::to_string).collect();
    between.extend(shapes);
    let mut out = String::new();
    if !at_request.is_empty() {
        out += &format!(", at every request ({})", at_request.join("; "));
    }
    if !between.is_empty() {
        let and = if at_request.is_empty() { "" } else { " and" };
        out += &format!(
            "{and} as a workload starts each drawn duration ({})",
            between.join("; ")
        );
    }
    out
}

/// The servers, and on an ensemble how the explorer took what the
/// scenario draws there: each attempt's server, each follower's lag, each
/// election's length, the scheduled ensemble faults, a moved session's
/// revalidation.
fn servers(explored: &Explored, pointed: How, push: &mut impl FnMut(How, String)) {
    let config = explored.scenario.world_config();
    if config.servers == 1 {
        push(How::Fixed, "servers: 1".to_string());
        return;
    }
    let choice = match pointed {
        How::Sampled => How::Sampled,
        _ => How::Enumerated,
    };
    push(
        choice,
        format!(
            "servers: {}; each client's host list, one of its {} orders (every server first, round the ring either way), chosen at its first attempt; its attempts go round it, as the Java client's and the crate's do (the scenario draws each attempt's server)",
            config.servers,
            2 * config.servers
        ),
    );
    let lag = config.apply_lag_ms;
    let (how, listed) = range_points(explored, lag, pointed);
    push(
        how,
        format!(
            "apply lag [{}, {}]: each follower's one of {listed} ms for the whole run (the scenario draws each commit's)",
            lag.min, lag.max
        ),
    );
    let election = config.election_ms;
    let (how, listed) = range_points(explored, election, pointed);
    push(
        how,
        format!(
            "election [{}, {}]: each election one of {listed} ms (the scenario draws each from the range)",
            election.min, election.max
        ),
    );
    let scheduled = config.faults.schedule.len();
    if scheduled > 0 {
        push(
            How::Fixed,
            format!("{scheduled} scheduled ensemble fault(s), at the scenario's times"),
        );
    }
    push(
        How::Fixed,
        match config.revalidate_moves {
            true => "a moved session is answered after the leader revalidates it (as 3.8)",
            false => "a moved session is answered at once (revalidate_moves = false, beyond 3.8)",
        }
        .to_string(),
    );
}

/// The points the tape takes in `range` (listed), and how: fixed when
/// there is one, else `pointed`.
fn range_points(explored: &Explored, range: MsRange, pointed: How) -> (How, String) {
    let values = explored
        .world
        .durations
        .values(range.min, range.max.max(range.min));
    let listed: Vec<String> = values.iter().map(u64::to_string).collect();
    let how = match values.len() {
        1 => How::Fixed,
        _ => pointed,
    };
    (how, listed.join(", "))
}

/// `; the scenario draws ...` naming the faults of `which` a scenario's
/// `text` draws; empty without a scenario or such faults.
fn scenario_draws(text: Option<&str>, which: Drawn) -> String {
    text.map(|text| drawn_faults(text, which))
        .filter(|faults| !faults.is_empty())
        .map(|faults| format!("; the scenario draws {faults}"))
        .unwrap_or_default()
}

/// The durations the workload draws, and how the tape took them (`how`
/// when it had more than one point to take).
fn durations(
    explored: &Explored,
    kind: WorkloadKind,
    how: How,
    push: &mut impl FnMut(How, String),
) {
    let spec = &explored.scenario.raw.workload;
    let ranges: Vec<(&str, MsRange)> = match kind {
        WorkloadKind::Hold => vec![("hold_ms", spec.hold_ms), ("think_ms", spec.think_ms)],
        WorkloadKind::Queue => vec![("think_ms", spec.think_ms)],
        WorkloadKind::Barrier => vec![
            ("arrive_ms", spec.arrive_ms),
            ("work_ms", spec.work_ms),
            ("think_ms", spec.think_ms),
        ],
    };
    let points = explored.world.durations;
    for (name, range) in ranges {
        let values = points.values(range.min, range.max.max(range.min));
        let listed: Vec<String> = values.iter().map(u64::to_string).collect();
        match values.len() {
            1 if range.max <= range.min => push(How::Fixed, format!("{name}: {} ms", range.min)),
            1 => push(
                How::Fixed,
                format!(
                    "{name}: {} ms, the minimum of [{}, {}] (--duration-points 1)",
                    range.min, range.min, range.max
                ),
            ),
            _ => push(
                how,
                format!(
                    "{name} [{}, {}]: each draw one of {} ms (--duration-points {})",
                    range.min,
                    range.max,
                    listed.join(", "),
                    points.0
                ),
            ),
        }
    }
    if explored.scenario.variant().is_async() {
        push(
            how,
            format!(
                "durations the recipe draws itself (ctx.draw_ms): {} point(s) of each range (--duration-points {})",
                points.0, points.0
            ),
        );
    }
}

/// Which of a scenario's drawn faults.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Drawn {
    /// Those that strike a request (`loss_before_apply`, `loss_after_apply`).
    AtRequest,
    /// The others.
    BetweenRequests,
}

/// The faults of `which` a scenario file draws, as written (its
/// `[faults.rates]` keys with a rate above 0; between requests also its
/// scheduled faults and swarm mode); empty if none.
fn drawn_faults(text: &str, which: Drawn) -> String {
    let Ok(table) = text.parse::<toml::Table>() else {
        return String::new();
    };
    let Some(faults) = table.get("faults").and_then(toml::Value::as_table) else {
        return String::new();
    };
    let mut parts = Vec::new();
    if let Some(rates) = faults.get("rates").and_then(toml::Value::as_table) {
        for (key, value) in rates {
            let positive = match value {
                toml::Value::Float(rate) => *rate > 0.0,
                toml::Value::Integer(rate) => *rate > 0,
                _ => false,
            };
            let at_request = key.starts_with("loss_");
            if positive && !key.ends_with("_ms") && at_request == (which == Drawn::AtRequest) {
                parts.push(format!("{key} = {value}"));
            }
        }
    }
    if which == Drawn::AtRequest {
        return parts.join(", ");
    }
    if let Some(schedule) = faults.get("schedule").and_then(toml::Value::as_array) {
        // The ensemble's scheduled faults stay in the explored world.
        let ensemble = zk_sim::faults::entry::ENSEMBLE_FAULT_NAMES;
        let of_clients = schedule
            .iter()
            .filter(|entry| {
                let fault = entry.get("fault").and_then(toml::Value::as_str);
                !fault.is_some_and(|fault| ensemble.contains(&fault))
            })
            .count();
        if of_clients > 0 {
            parts.push(format!("{of_clients} scheduled client fault(s)"));
        }
    }
    if faults.get("swarm").and_then(toml::Value::as_bool) == Some(true) {
        parts.push("swarm mode".to_string());
    }
    parts.join(", ")
}

/// The dimensions as the summary prints them.
pub fn render(dimensions: &[Dimension]) -> String {
    let mut out = String::from("explored world:\n");
    for dimension in dimensions {
        out += &format!("  {:<13}{}\n", dimension.how.label(), dimension.text);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_scenarios_drawn_faults_are_named_as_written() {
        let text = "recipe = \"lock\"\n[faults]\nswarm = true\n[faults.rates]\nloss_before_apply = 0.02\nexpiries_per_s = 0.0\ndisconnects_per_s = 0.5\npause_ms = [1, 2]\n[[faults.schedule]]\nat_ms = 5\n";
        assert_eq!(
            drawn_faults(text, Drawn::BetweenRequests),
            "disconnects_per_s = 0.5, 1 scheduled client fault(s), swarm mode"
        );
        assert_eq!(
            drawn_faults(text, Drawn::AtRequest),
            "loss_before_apply = 0.02"
        );
        assert_eq!(
            drawn_faults("recipe = \"lock\"\n", Drawn::BetweenRequests),
            ""
        );
    }
}
