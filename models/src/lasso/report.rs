//! What a lasso search reports: the lasso found, the verdict, the counts
//! and the summary a user reads, the lasso rendered as numbered steps, and
//! the lasso as a replayable schedule.

use super::units::FairnessUnit;
use super::{Limit, PROGRESS};
use crate::faults::FaultBudget;
use crate::memory::Bytes;
use crate::run::TraceStep;
use crate::schedule::{FoundOn, Schedule};
use crate::state::ClientId;
use std::fmt::Write as _;
use std::time::Duration;

/// A reachable fair cycle in which calls stay pending.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Lasso {
    /// From the initial state to the cycle's first state.
    pub prefix: Vec<TraceStep>,
    /// From that state back to it.
    pub cycle: Vec<TraceStep>,
    /// The clients whose calls stay pending around the cycle.
    pub waiting: Vec<ClientId>,
}

/// What the search says about progress.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LassoVerdict {
    /// A fair livelock was found (a lasso).
    Livelock,
    /// Every state was explored and no fair cycle keeps a call pending.
    NoLivelock,
    /// The search stopped early and found no lasso: no verdict.
    Inconclusive(Limit),
}

/// The result of one lasso search.
#[derive(Clone, Debug, PartialEq)]
pub struct LassoReport {
    /// `recipe/variant`.
    pub model: String,
    pub clients: usize,
    pub cycles: usize,
    pub servers: usize,
    /// With an ensemble: reconnects waited for the leader's revalidation.
    pub revalidate: bool,
    pub faults: FaultBudget,
    /// Distinct states explored.
    pub states: usize,
    pub edges: usize,
    pub elapsed: Duration,
    /// Set when the search stopped before exploring every state.
    pub cut: Option<Limit>,
    /// Components with a cycle in which a call stays pending, fair or not.
    pub waiting_components: usize,
    /// Of those, the ones only an unfair scheduler could keep going: the
    /// units each starves (enabled in all its states, never taken), in the
    /// order the components were found.
    pub unfair: Vec<Vec<FairnessUnit>>,
    /// Completing or fault edges inside a cycle, and faults that did not
    /// spend budget: 0 unless the model breaks the assumptions above.
    pub progress_on_cycles: usize,
    pub lasso: Option<Lasso>,
}

/// How many unfair components a summary describes.
const UNFAIR_SHOWN: usize = 3;

impl LassoReport {
    pub fn verdict(&self) -> LassoVerdict {
        match (&self.lasso, self.cut) {
            (Some(_), _) => LassoVerdict::Livelock,
            (None, None) => LassoVerdict::NoLivelock,
            (None, Some(limit)) => LassoVerdict::Inconclusive(limit),
        }
    }

    /// The summary: counts and the verdict, in a few lines.
    pub fn summary(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "liveness as cycles ({PROGRESS}: a pending call is eventually answered, under weak fairness)"
        );
        let _ = writeln!(
            out,
            "  states: {}, transitions: {}, time: {:.2} s{}",
            self.states,
            self.edges,
            self.elapsed.as_secs_f64(),
            match self.cut {
                Some(Limit::Memory(stop)) => format!(
                    " (not exhaustive: memory budget of {} reached after {} states; {} in use, the last third of the budget kept for a table that doubles)",
                    stop.budget,
                    self.states,
                    Bytes(stop.in_use_bytes)
                ),
                Some(limit) => format!(" (stopped at {limit})"),
                None => " (exhaustive)".to_string(),
            }
        );
        let _ = writeln!(
            out,
            "  cycles keeping a call pending: {} component(s), {} of them unfair",
            self.waiting_components,
            self.unfair.len()
        );
        for starved in self.unfair.iter().take(UNFAIR_SHOWN) {
            let units: Vec<String> = starved.iter().map(ToString::to_string).collect();
            let _ = writeln!(
                out,
                "    unfair: starves {} (enabled in every state of the cycle, never taken)",
                units.join(", ")
            );
        }
        if self.progress_on_cycles > 0 {
            let _ = writeln!(
                out,
                "  WARNING: {} completing or fault edge(s) on a cycle, or faults that spent no budget",
                self.progress_on_cycles
            );
        }
        let _ = writeln!(out, "  {}", self.verdict_line());
        out
    }

    fn verdict_line(&self) -> String {
        match (self.verdict(), &self.lasso) {
            (LassoVerdict::Livelock, Some(lasso)) => format!(
                "livelock (lasso): {} steps to the cycle, {} steps around it; {} wait(s) forever",
                lasso.prefix.len(),
                lasso.cycle.len(),
                clients_text(&lasso.waiting)
            ),
            (LassoVerdict::NoLivelock, _) => "no livelock".to_string(),
            (LassoVerdict::Inconclusive(limit), _) => format!(
                "NO VERDICT: the search stopped at {limit} before exploring every state, with no lasso found"
            ),
            (LassoVerdict::Livelock, None) => unreachable!("a livelock has its lasso"),
        }
    }

    /// The lasso as a schedule: the prefix steps, then the cycle's, with
    /// `cycle_start` the number of prefix steps.
    pub fn schedule(&self) -> Option<Schedule> {
        let lasso = self.lasso.as_ref()?;
        let found_on = FoundOn {
            model: &self.model,
            clients: self.clients,
            cycles: self.cycles,
            servers: self.servers,
            revalidate: self.revalidate,
            faults: &self.faults,
        };
        let steps = lasso.prefix.iter().chain(&lasso.cycle);
        let steps = steps.map(|step| step.schedule.clone()).collect();
        Some(found_on.schedule(PROGRESS, "violation", Some(lasso.prefix.len()), steps))
    }
}

/// `c1` or `c0, c2`.
fn clients_text(clients: &[ClientId]) -> String {
    let names: Vec<String> = clients.iter().map(|c| format!("c{c}")).collect();
    names.join(", ")
}

/// Renders a lasso: the numbered prefix steps, then the cycle's steps
/// numbered on from there (as [`crate::run::render_trace`] renders a path).
pub fn render_lasso(lasso: &Lasso) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "to the cycle ({} steps):", lasso.prefix.len());
    render_steps(&mut out, &lasso.prefix, 1);
    let _ = writeln!(
        out,
        "the cycle ({} steps, repeated forever; back to the state after step {}):",
        lasso.cycle.len(),
        lasso.prefix.len()
    );
    render_steps(&mut out, &lasso.cycle, lasso.prefix.len() + 1);
    out
}

fn render_steps(out: &mut String, steps: &[TraceStep], first: usize) {
    for (number, step) in (first..).zip(steps) {
        let _ = writeln!(out, "  {number:>3}. {}", step.action);
        for line in &step.lines {
            let _ = writeln!(out, "         {line}");
        }
    }
}
