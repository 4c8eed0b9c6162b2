//! Coverage as a report shows it (`zk_reports::schema::Coverage`): a
//! sweep's or a campaign's tally, its curves and the comparison with a
//! model, for `sweep --report` and `fuzz --report`.

use super::against_model::Comparison;
use super::common::quote;
use zk_reports::schema::{Coverage, CoverageCurve, ModelCoverage};
use zk_sim::guided::tally::{CoverageTally, CurveBlock, ABSTRACTION};

/// A curve as a report draws it.
pub fn curve(label: String, block: u64, blocks: &[CurveBlock]) -> CoverageCurve {
    let new_states: Vec<u64> = blocks.iter().map(|b| b.new_states).collect();
    CoverageCurve {
        label,
        block,
        states: new_states.iter().sum(),
        new_states,
    }
}

/// The report's coverage: `tally`'s counts, the `curves` shown, and the
/// comparison with a model if one was made (`program` starts its replay
/// commands).
pub fn coverage(
    tally: &CoverageTally,
    curves: Vec<CoverageCurve>,
    against: Option<&Comparison>,
    program: &str,
) -> Coverage {
    Coverage {
        abstraction: ABSTRACTION.to_string(),
        states: tally.states.len() as u64,
        transitions: tally.transitions.len() as u64,
        features: tally.features.len() as u64,
        curves,
        against_model: against.map(|comparison| model_coverage(comparison, program)),
    }
}

fn model_coverage(comparison: &Comparison, program: &str) -> ModelCoverage {
    let replay = |path: &String| format!("{program} replay {}", quote(path));
    ModelCoverage {
        model: comparison.model.clone(),
        model_states: comparison.model_states,
        reachable: comparison.reachable,
        covered: comparison.covered,
        beyond_model: comparison.beyond_model,
        beyond_model_first: comparison.beyond_model_first.clone(),
        never_reached: comparison.never_reached,
        shortest_never_reached: comparison
            .shortest_never_reached
            .iter()
            .map(|never| {
                let command = never.schedule.as_ref().map(replay);
                (never.state.clone(), never.steps, command)
            })
            .collect(),
    }
}
