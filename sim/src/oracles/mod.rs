//! Oracles: the properties of DESIGN.md checked from outside the recipes.
//!
//! The world reports what it sees ([`Seen`]: application calls, outcomes,
//! watch notifications, reads, writes to the fenced resource) with the
//! simulated time and the client; each enabled property keeps just enough
//! history to explain a violation, and reports the first one it finds with
//! its time and the events that broke it. Properties that can only be
//! judged at the end (no leaked nodes, exactly-once delivery) run in
//! [`Oracles::finish`]; liveness is judged by the world (it knows when the
//! heal phase ends) and reported through [`Oracles::report`]. The herd
//! check also measures every run, checked or not ([`HerdFigures`]). Node
//! churn is judged at the end from the session layer's counts of creates
//! ([`Oracles::judge_churn`]). A recipe's own invariants
//! ([`Observation::Violated`]) are always judged: each is a violation of
//! [`Property::Invariant`] named by the user ([`Violation::invariant`]).
//!
//! Oracles see every recipe alike: outcomes through [`zk_recipes::Observe`],
//! application calls through [`ObserveCall`] (implemented for the recipes'
//! call types in [`observe_impls`]).

mod barrier;
mod calls;
mod churn;
mod exclusion;
mod fifo;
mod herd;
mod leaks;
pub mod observe_impls;
mod property;
mod queue;

pub use calls::{CallObservation, ObserveCall};
pub use churn::NODE_CHURN_MARGIN;
pub use herd::HerdFigures;
pub use leaks::{leaked_nodes, leaked_nodes_with_owners};
pub use property::{Property, PropertyError};
pub use queue::is_queue_order;

use barrier::BarrierCheck;
use churn::ChurnCheck;
use exclusion::{ExclusionCheck, FencedCheck};
use fifo::FifoCheck;
use herd::HerdCheck;
use queue::QueueCheck;
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;
use std::fmt;
use zk_recipes::zk::{Path, SessionId};
use zk_recipes::{check_property_name, HoldId, Observation};

use crate::finding::Diagnosis;
use crate::server::ZkServer;

pub use crate::units::{fmt_time, ClientIndex, SimNanos};

/// One thing the world saw a client do or receive.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Seen {
    /// The application called the recipe.
    Call(CallObservation),
    /// The recipe answered the application.
    Outcome(Observation),
    /// A node-event watch notification reached the recipe.
    WatchFired,
    /// The client sent a read (exists, getData, getChildren).
    Read,
    /// The client wrote to the fenced resource with `token`.
    ResourceWrite { token: i64, accepted: bool },
    /// The server ended the client's session (expiry): whatever the client
    /// believes, its ephemeral nodes are gone.
    SessionEnded,
}

/// What a property needs to know about the world while it checks.
pub struct View<'a> {
    pub server: &'a ZkServer,
    /// The current session id of every client (None before it connects).
    pub sessions: &'a [Option<SessionId>],
}

/// A broken property: when, what, and the events that broke it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Violation {
    pub property: Property,
    /// Simulated time of the event that broke it, in ns.
    pub at_ns: SimNanos,
    pub message: String,
    /// The events involved, one line each, oldest first.
    pub events: Vec<String>,
    /// Why it happened (attached by the driver that found it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub diagnosis: Option<Diagnosis>,
    /// The user's name of a recipe's own invariant (`property` is then
    /// [`Property::Invariant`]): what the violation is printed and bucketed
    /// under.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub invariant: Option<String>,
}

impl Violation {
    /// `property/mechanism`, the bucket a sweep counts this violation in
    /// (a recipe's own invariant: its name, `name/reported`).
    pub fn signature(&self) -> String {
        crate::finding::signature(self.property_name(), self.diagnosis.as_ref())
    }

    /// The name the violation is printed under: the property's, or the
    /// user's name of a recipe's own invariant.
    pub fn property_name(&self) -> &str {
        self.invariant
            .as_deref()
            .unwrap_or_else(|| self.property.name())
    }

    /// A recipe's own invariant `name` broken, as `client` reported it at
    /// `at` (`detail`: the recipe's words). A name [`check_property_name`]
    /// refuses is reported as [`Property::Invariant`] itself, saying why.
    pub fn invariant(at: SimNanos, client: ClientIndex, name: &str, detail: &str) -> Violation {
        let (invariant, message) = match check_property_name(name) {
            Ok(()) => (Some(name.to_string()), detail.to_string()),
            Err(refused) => (None, format!("{refused} (the recipe reported: {detail})")),
        };
        Violation {
            property: Property::Invariant,
            at_ns: at,
            events: vec![format!(
                "c{client}: reported `{}` broken: {}",
                name.escape_debug(),
                detail.escape_debug()
            )],
            message,
            diagnosis: None,
            invariant,
        }
    }
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "property {} violated at {}: {}",
            self.property_name(),
            fmt_time(self.at_ns),
            self.message
        )?;
        for event in &self.events {
            writeln!(f, "    {event}")?;
        }
        if let Some(diagnosis) = &self.diagnosis {
            writeln!(f, "  signature: {}", self.signature())?;
            for line in diagnosis.to_string().lines() {
                writeln!(f, "  {line}")?;
            }
        }
        Ok(())
    }
}

/// Liveness at the deadline: workloads still not done `heal_ms` after the
/// faults healed, one line each from [`stuck_line`] (none: no violation).
pub fn liveness_violation(at_ns: SimNanos, heal_ms: u64, stuck: Vec<String>) -> Option<Violation> {
    (!stuck.is_empty()).then(|| Violation {
        property: Property::Liveness,
        at_ns,
        message: format!(
            "{} workload(s) not done {heal_ms} ms after the faults healed",
            stuck.len()
        ),
        events: stuck,
        diagnosis: None,
        invariant: None,
    })
}

/// A stuck client's line: its last application call (as `{:?}`) and when.
pub fn stuck_line(client: ClientIndex, last_call: Option<(SimNanos, String)>) -> String {
    match last_call {
        Some((at, call)) => format!(
            "c{client}: still waiting, last call {call} at {}",
            fmt_time(at)
        ),
        None => format!("c{client}: never got to call"),
    }
}

/// Settings of the properties that take parameters.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct OracleConfig {
    pub properties: BTreeSet<Property>,
    /// Leases a semaphore grants at once (for mutual exclusion of `Leases`).
    pub max_leases: u32,
    /// Watch notifications allowed per release (the herd bound).
    pub herd_bound: u32,
    /// The directory whose sequential children FIFO fairness orders.
    pub fifo_dir: Option<Path>,
    /// Members a barrier waits for.
    pub barrier_size: usize,
}

impl Default for OracleConfig {
    fn default() -> Self {
        OracleConfig {
            properties: BTreeSet::new(),
            max_leases: 1,
            herd_bound: 1,
            fifo_dir: None,
            barrier_size: 0,
        }
    }
}

/// Every enabled property of one run.
pub struct Oracles {
    config: OracleConfig,
    /// Which checks are on, by [`Property::ALL`] index (read per event).
    on: [bool; Property::ALL.len()],
    exclusion: ExclusionCheck,
    fenced: FencedCheck,
    fifo: FifoCheck,
    herd: HerdCheck,
    queue: QueueCheck,
    barrier: BarrierCheck,
    churn: ChurnCheck,
    violations: Vec<Violation>,
}

impl Oracles {
    pub fn new(config: OracleConfig, clients: usize) -> Oracles {
        let exclusion_name = if config.properties.contains(&Property::OneLeader) {
            Property::OneLeader
        } else {
            Property::MutualExclusion
        };
        let on = Property::ALL.map(|p| config.properties.contains(&p));
        Oracles {
            on,
            exclusion: ExclusionCheck::new(exclusion_name, clients, config.max_leases),
            fenced: FencedCheck::default(),
            fifo: FifoCheck::new(config.fifo_dir.clone()),
            herd: if on[Property::Herd as usize] {
                HerdCheck::judging(config.herd_bound)
            } else {
                HerdCheck::measuring()
            },
            queue: QueueCheck::new(clients, &config.properties),
            barrier: BarrierCheck::new(clients, config.barrier_size),
            churn: ChurnCheck::new(clients),
            config,
            violations: Vec::new(),
        }
    }

    pub fn config(&self) -> &OracleConfig {
        &self.config
    }

    fn enabled(&self, property: Property) -> bool {
        self.on[property as usize]
    }

    /// Feeds one event to every enabled property.
    pub fn seen(&mut self, at: SimNanos, client: ClientIndex, seen: &Seen, view: &View) {
        self.seen_in_hold(at, client, HoldId::FIRST, seen, view);
    }

    /// Feeds one event about one of the client's holds.
    pub fn seen_in_hold(
        &mut self,
        at: SimNanos,
        client: ClientIndex,
        hold: HoldId,
        seen: &Seen,
        view: &View,
    ) {
        let mut found = Vec::new();
        if self.enabled(Property::MutualExclusion) || self.enabled(Property::OneLeader) {
            found.extend(self.exclusion.seen(at, (client, hold), seen));
        }
        if self.enabled(Property::FencedMutualExclusion) {
            found.extend(self.fenced.seen(at, client, seen, view));
        }
        if self.enabled(Property::Fifo) {
            found.extend(self.fifo.seen(at, client, seen, view));
        }
        // Always fed: it measures every run, and judges only when `herd`
        // is checked (a measuring check never reports).
        found.extend(self.herd.seen(at, client, seen));
        // A queue's `fifo` is the queue check's; a lock's, the fifo check's
        // (each hears only its own kind's outcomes).
        if self.enabled(Property::ExactlyOnce) || self.enabled(Property::Fifo) {
            found.extend(self.queue.seen(at, client, seen));
        }
        if self.enabled(Property::Barrier) {
            found.extend(self.barrier.seen(at, client, seen));
        }
        if self.enabled(Property::NodeChurn) {
            self.churn.seen(client, seen);
        }
        // Always judged: the recipe says its own invariant broke.
        if let Seen::Outcome(Observation::Violated { property, detail }) = seen {
            found.push(Violation::invariant(at, client, property, detail));
        }
        for violation in found {
            self.report(violation);
        }
    }

    /// Records a violation found elsewhere (liveness, a panic); only the
    /// first violation of each property (each invariant name) is kept.
    pub fn report(&mut self, violation: Violation) {
        if !self
            .violations
            .iter()
            .any(|v| v.property == violation.property && v.invariant == violation.invariant)
        {
            self.violations.push(violation);
        }
    }

    /// End-of-run checks: leaked nodes (against the paths that existed
    /// before the workload started) and items never delivered.
    pub fn finish(&mut self, at: SimNanos, server: &ZkServer, initial_paths: &BTreeSet<Path>) {
        self.finish_naming_owners(at, server, initial_paths, &|_| None);
    }

    /// As [`Oracles::finish`], a leaked ephemeral's line saying what
    /// `owner_of` knows of its session (a live run: whose current session).
    pub fn finish_naming_owners(
        &mut self,
        at: SimNanos,
        server: &ZkServer,
        initial_paths: &BTreeSet<Path>,
        owner_of: &dyn Fn(zk_recipes::zk::SessionId) -> Option<String>,
    ) {
        if self.enabled(Property::NoLeaks) {
            let leaked = leaked_nodes_with_owners(server, initial_paths, owner_of);
            if !leaked.is_empty() {
                self.report(Violation {
                    property: Property::NoLeaks,
                    at_ns: at,
                    message: format!("{} node(s) left behind after the workload", leaked.len()),
                    events: leaked,
                    diagnosis: None,
                    invariant: None,
                });
            }
        }
        if self.enabled(Property::ExactlyOnce) {
            if let Some(violation) = self.queue.finish(at) {
                self.report(violation);
            }
        }
        if self.enabled(Property::Herd) {
            if let Some(violation) = self.herd.close(at) {
                self.report(violation);
            }
        }
    }

    /// End-of-run node churn: `tallies` are the creates each client's
    /// session layer counted (by client index).
    pub fn judge_churn(&mut self, at: SimNanos, tallies: &[crate::client::CreateTally]) {
        if self.enabled(Property::NodeChurn) {
            if let Some(violation) = self.churn.judge(at, tallies) {
                self.report(violation);
            }
        }
    }

    pub fn has_violation(&self) -> bool {
        !self.violations.is_empty()
    }

    pub fn violations(&self) -> &[Violation] {
        &self.violations
    }

    /// True if a violation still waits for its diagnosis.
    pub fn has_undiagnosed(&self) -> bool {
        self.violations.iter().any(|v| v.diagnosis.is_none())
    }

    /// The violations found so far, for the driver to attach diagnoses.
    pub fn violations_mut(&mut self) -> &mut [Violation] {
        &mut self.violations
    }

    /// The herd measurements: (max notifications, max reads) in one release window.
    pub fn herd_maxima(&self) -> (u32, u32) {
        self.herd.maxima()
    }

    /// The herd totals of the run so far (measured whether or not `herd`
    /// is checked).
    pub fn herd_figures(&self) -> HerdFigures {
        self.herd.figures()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report(oracles: &mut Oracles, property: &str) {
        let server = ZkServer::new(crate::server::ServerConfig::default());
        let view = View {
            server: &server,
            sessions: &[None],
        };
        let seen = Seen::Outcome(Observation::Violated {
            property: property.to_string(),
            detail: "the detail".to_string(),
        });
        oracles.seen(5, 0, &seen, &view);
    }

    #[test]
    fn a_recipe_s_own_invariant_is_judged_under_its_name_whatever_is_checked() {
        let mut oracles = Oracles::new(OracleConfig::default(), 1);
        report(&mut oracles, "token_unique");
        report(&mut oracles, "token_unique");
        report(&mut oracles, "node_kept");
        let names: Vec<&str> = oracles
            .violations()
            .iter()
            .map(|v| v.property_name())
            .collect();
        assert_eq!(names, ["token_unique", "node_kept"]);
        let first = &oracles.violations()[0];
        assert_eq!(first.property, Property::Invariant);
        assert_eq!(first.message, "the detail");
        assert_eq!(first.signature(), "token_unique/undiagnosed");
    }

    #[test]
    fn an_invariant_under_a_built_in_name_is_refused_saying_why() {
        let mut oracles = Oracles::new(OracleConfig::default(), 1);
        report(&mut oracles, "one_leader");
        let violation = &oracles.violations()[0];
        assert_eq!(violation.invariant, None);
        assert_eq!(violation.property_name(), "invariant");
        assert!(
            violation
                .message
                .contains("`one_leader` is a built-in property's name"),
            "{violation}"
        );
    }
}
