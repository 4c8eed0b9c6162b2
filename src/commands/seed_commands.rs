//! The commands that run one seed of a scenario again, quoted so they
//! paste ([`SeedCommands`]): every printed command for a seed is made
//! here (`sim`, `sweep`, `merge`, `bugs`, reports, internal errors).

use super::common::quote;
use zk_sim::scenario::Scenario;

/// The command that replays a seed of a scenario with `program` (a
/// quoted command that runs zkcheck's command line).
pub fn replay_command(program: &str, scenario: &Scenario, seed: u64) -> String {
    SeedCommands::of(program, scenario).replay(seed)
}

/// The commands that run one seed of a scenario again, quoted so they
/// paste: `replay` (the full trace) for a failing seed, `sim` for a seed
/// whose run panicked (it reports the internal error again). Every printed
/// command for a seed is made here.
pub struct SeedCommands {
    program: String,
    /// The scenario file, quoted.
    file: String,
    /// ` --variant V`, or empty when the file's own variant ran.
    variant: String,
    all_violations: bool,
}

impl SeedCommands {
    /// For the scenario `file` run as `variant`; the `--variant` flag is
    /// left out when that is the file's own (`file_variant`, if known).
    pub fn new(
        program: &str,
        file: &str,
        variant: &str,
        file_variant: Option<&str>,
        all_violations: bool,
    ) -> SeedCommands {
        let variant = if file_variant == Some(variant) {
            String::new()
        } else {
            format!(" --variant {}", quote(variant))
        };
        SeedCommands {
            program: program.to_string(),
            file: quote(file),
            variant,
            all_violations,
        }
    }

    /// For a loaded scenario.
    pub fn of(program: &str, scenario: &Scenario) -> SeedCommands {
        SeedCommands::new(
            program,
            &scenario.file.display().to_string(),
            &scenario.raw.variant,
            Some(&scenario.file_variant),
            scenario.all_violations,
        )
    }

    /// `PROGRAM replay FILE [--variant V] --seed N [--all-violations]`.
    pub fn replay(&self, seed: u64) -> String {
        let all = if self.all_violations {
            " --all-violations"
        } else {
            ""
        };
        let (program, file, variant) = (&self.program, &self.file, &self.variant);
        format!("{program} replay {file}{variant} --seed {seed}{all}")
    }

    /// `PROGRAM sim FILE [--variant V] --seed N`: reruns a seed that
    /// panicked.
    pub fn rerun(&self, seed: u64) -> String {
        let (program, file, variant) = (&self.program, &self.file, &self.variant);
        format!("{program} sim {file}{variant} --seed {seed}")
    }
}
