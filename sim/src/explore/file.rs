//! A counterexample of an explored world as a file: the recipe, variant,
//! client count, cycles, fault budget and duration points that make the
//! world (with the scenario file's text, when `check` explored a
//! scenario's own world), and the choice string that picks one run of it.
//! `zkcheck check` writes
//! it; `zkcheck replay FILE` runs it with the full trace. Checked on
//! reading: errors name the file, the line and the key (exit 2).
//!
//! ```toml
//! # zkcheck check: a counterexample of an explored world, as its choices
//! recipe = "latch"
//! variant = "buggy"
//! clients = 2
//! cycles = 1
//! faults = "connection-loss=1"
//! duration_points = 2             # the points of a duration's range (default 2)
//! property = "liveness"            # what it breaks (informative)
//! choices = "0.1.0.2"              # one number per choice point; absent ones are 0
//! runtime_seed = 3                 # the madsim seed it ran under (absent: 0)
//! # optional: the scenario file whose world was explored, as it was
//! scenario = '''
//! recipe = "latch"
//! ...
//! '''
//! ```

use super::tape::{DurationPoints, FaultAllowance};
use crate::input::error::ScenarioError;
use crate::input::keyed_file::KeyedFile;
use std::path::Path;

/// Most clients and cycles a choice file may name (the explorer's own
/// limits are lower; these only keep a hostile file from building a
/// huge world).
pub const MAX_CLIENTS: usize = 16;
pub const MAX_CYCLES: u32 = 100;
/// Most choices a choice string may hold.
pub const MAX_CHOICES: usize = 100_000;

/// The keys a choice file takes.
const KEYS: [&str; 10] = [
    "recipe",
    "variant",
    "clients",
    "cycles",
    "faults",
    "duration_points",
    "property",
    "choices",
    "runtime_seed",
    "scenario",
];

/// A checked choice file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChoiceFile {
    pub recipe: String,
    pub variant: String,
    pub clients: usize,
    pub cycles: u32,
    pub faults: FaultAllowance,
    pub durations: DurationPoints,
    /// The property the run breaks, if the file says.
    pub property: Option<String>,
    pub choices: Vec<u32>,
    /// The runtime seed the run ran under (the madsim seed: the runtime's
    /// task order, an unbiased `select!`, what the tape does not choose).
    pub runtime_seed: u64,
    /// The scenario file whose world was explored (its text); None: the
    /// recipe's defaults.
    pub scenario: Option<String>,
}

/// True if `text` is a choice file (its top level has `choices`; neither
/// scenarios nor schedules have that key).
pub fn is_choice_text(text: &str) -> bool {
    match text.parse::<toml::Table>() {
        Ok(table) => table.contains_key("choices"),
        Err(_) => text
            .lines()
            .take_while(|line| !line.trim_start().starts_with('['))
            .any(|line| line.split('=').next().map(str::trim) == Some("choices")),
    }
}

/// A choice string: the choices joined by dots (`0.1.0.2`); empty: every
/// choice the default.
pub fn choice_string(choices: &[u32]) -> String {
    let numbers: Vec<String> = choices.iter().map(u32::to_string).collect();
    numbers.join(".")
}

/// Reads a choice string back.
pub fn parse_choice_string(text: &str) -> Result<Vec<u32>, String> {
    let text = text.trim();
    if text.is_empty() {
        return Ok(Vec::new());
    }
    let choices: Vec<u32> = text
        .split('.')
        .map(|number| number.trim().parse::<u32>())
        .collect::<Result<_, _>>()
        .map_err(|_| {
            format!(
                "`{}` is not a choice string: numbers joined by dots, e.g. 0.1.0.2",
                crate::input::error::clip(text)
            )
        })?;
    if choices.len() > MAX_CHOICES {
        return Err(format!("{} choices; at most {MAX_CHOICES}", choices.len()));
    }
    Ok(choices)
}

impl FaultAllowance {
    /// `none`, or budgets by kind: `connection-loss=1,expiry=1,pause=1`
    /// (the kinds an exploration injects).
    pub fn parse(text: &str) -> Result<FaultAllowance, String> {
        let mut allowance = FaultAllowance::default();
        if text.trim() == "none" {
            return Ok(allowance);
        }
        for part in text.split(',') {
            let Some((kind, budget)) = part.split_once('=') else {
                return Err(format!(
                    "`{}`: give KIND=BUDGET, e.g. connection-loss=1",
                    crate::input::error::clip(part.trim())
                ));
            };
            let budget: u32 = budget
                .trim()
                .parse()
                .ok()
                .filter(|n| *n <= 8)
                .ok_or_else(|| format!("`{}`: a budget is a number in 0..=8", part.trim()))?;
            match kind.trim() {
                "connection-loss" => allowance.connection_loss = budget,
                "expiry" => allowance.expiry = budget,
                "pause" => allowance.pause = budget,
                "lag-spike" => allowance.lag_spike = budget,
                "server-crash" => allowance.server_crash = budget,
                "server-partition" => allowance.server_partition = budget,
                "leader-change" => allowance.leader_change = budget,
                "server-freeze" => allowance.server_freeze = budget,
                other => {
                    return Err(format!(
                        "`{}`: an explored world injects connection-loss, expiry, pause, and on an ensemble lag-spike, server-crash, server-partition, leader-change and server-freeze only",
                        crate::input::error::clip(other)
                    ))
                }
            }
        }
        Ok(allowance)
    }
}

impl std::fmt::Display for FaultAllowance {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut parts = Vec::new();
        if self.connection_loss > 0 {
            parts.push(format!("connection-loss={}", self.connection_loss));
        }
        if self.expiry > 0 {
            parts.push(format!("expiry={}", self.expiry));
        }
        let kinds = [
            ("pause", self.pause),
            ("lag-spike", self.lag_spike),
            ("server-crash", self.server_crash),
            ("server-partition", self.server_partition),
            ("leader-change", self.leader_change),
            ("server-freeze", self.server_freeze),
        ];
        for (kind, budget) in kinds {
            if budget > 0 {
                parts.push(format!("{kind}={budget}"));
            }
        }
        match parts.is_empty() {
            true => write!(f, "none"),
            false => write!(f, "{}", parts.join(",")),
        }
    }
}

impl ChoiceFile {
    /// Checks a choice file given as text; `file` names it in errors.
    pub fn parse(file: &Path, source: &str) -> Result<ChoiceFile, ScenarioError> {
        let keyed = KeyedFile::parse(file, source, &KEYS)?;
        let table = &keyed.table;
        let error = |key: &str, message: String| keyed.error(key, message);
        let number = |key: &str, range: std::ops::RangeInclusive<i64>| match table.get(key) {
            Some(toml::Value::Integer(n)) if range.contains(n) => Ok(*n),
            Some(_) => Err(error(
                key,
                format!("must be a number in {}..={}", range.start(), range.end()),
            )),
            None => Err(error(key, "missing".to_string())),
        };
        let durations = match table.get("duration_points") {
            None => DurationPoints::default(),
            Some(_) => DurationPoints(
                number("duration_points", 1..=i64::from(DurationPoints::MAX))? as u32,
            ),
        };
        let faults = FaultAllowance::parse(&keyed.text("faults")?.unwrap_or_else(|| "none".into()))
            .map_err(|message| error("faults", message))?;
        let choices = parse_choice_string(&keyed.required("choices")?)
            .map_err(|message| error("choices", message))?;
        Ok(ChoiceFile {
            recipe: keyed.required("recipe")?,
            variant: keyed.required("variant")?,
            clients: number("clients", 1..=MAX_CLIENTS as i64)? as usize,
            cycles: number("cycles", 1..=i64::from(MAX_CYCLES))? as u32,
            faults,
            durations,
            property: keyed.text("property")?,
            choices,
            runtime_seed: match table.get("runtime_seed") {
                None => 0,
                Some(_) => number("runtime_seed", 0..=i64::MAX)? as u64,
            },
            scenario: keyed.text("scenario")?,
        })
    }

    /// The file as TOML.
    pub fn to_toml(&self) -> String {
        let quote = |text: &str| toml::Value::String(text.to_string()).to_string();
        let mut out = String::from(
            "# zkcheck check: a counterexample of an explored world, as its choices\n",
        );
        out += &format!("recipe = {}\n", quote(&self.recipe));
        out += &format!("variant = {}\n", quote(&self.variant));
        out += &format!("clients = {}\n", self.clients);
        out += &format!("cycles = {}\n", self.cycles);
        out += &format!("faults = {}\n", quote(&self.faults.to_string()));
        out += &format!("duration_points = {}\n", self.durations.0);
        if let Some(property) = &self.property {
            out += &format!("property = {}\n", quote(property));
        }
        out += &format!("choices = {}\n", quote(&choice_string(&self.choices)));
        if self.runtime_seed != 0 {
            out += &format!("runtime_seed = {}\n", self.runtime_seed);
        }
        if let Some(scenario) = &self.scenario {
            out += "# the scenario file whose world was explored, as it was\n";
            out += &format!(
                "scenario = {}\n",
                crate::input::keyed_file::multiline(scenario)
            );
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> ChoiceFile {
        ChoiceFile {
            recipe: "latch".into(),
            variant: "buggy".into(),
            clients: 2,
            cycles: 1,
            faults: FaultAllowance {
                connection_loss: 1,
                expiry: 0,
                pause: 1,
                ..FaultAllowance::default()
            },
            durations: DurationPoints(3),
            property: Some("liveness".into()),
            choices: vec![0, 1, 0, 2],
            runtime_seed: 0,
            scenario: None,
        }
    }

    #[test]
    fn a_scenario_reads_back_as_written() {
        let scenario = "recipe = \"latch\"\n[workload]\nhold_ms = [1, 20]\n";
        let file = ChoiceFile {
            scenario: Some(scenario.into()),
            ..sample()
        };
        let text = file.to_toml();
        assert!(text.contains("'''\nrecipe = \"latch\""), "readable: {text}");
        let read = ChoiceFile::parse(Path::new("c.toml"), &text).expect("a valid file");
        assert_eq!(read, file);
        let odd = ChoiceFile {
            scenario: Some("a = '''x'''\n".into()),
            ..sample()
        };
        let read = ChoiceFile::parse(Path::new("c.toml"), &odd.to_toml()).expect("valid");
        assert_eq!(read, odd);
    }

    #[test]
    fn a_file_reads_back_as_written() {
        let text = sample().to_toml();
        assert!(is_choice_text(&text));
        let read = ChoiceFile::parse(Path::new("c.toml"), &text).expect("a valid file");
        assert_eq!(read, sample());
    }

    #[test]
    fn a_runtime_seed_reads_back_and_seed_0_is_not_written() {
        assert!(!sample().to_toml().contains("runtime_seed"));
        let file = ChoiceFile {
            runtime_seed: 5,
            ..sample()
        };
        let text = file.to_toml();
        assert!(text.contains("runtime_seed = 5\n"), "{text}");
        let read = ChoiceFile::parse(Path::new("c.toml"), &text).expect("a valid file");
        assert_eq!(read, file);
        let text = text.replace("runtime_seed = 5", "runtime_seed = -1");
        let error = ChoiceFile::parse(Path::new("c.toml"), &text).unwrap_err();
        assert_eq!(error.key, "runtime_seed");
    }

    #[test]
    fn errors_name_the_line_and_the_key() {
        let text = sample().to_toml().replace("clients = 2", "clients = 0");
        let error = ChoiceFile::parse(Path::new("c.toml"), &text).unwrap_err();
        assert_eq!((error.line, error.key.as_str()), (4, "clients"));
        let text = sample().to_toml().replace("0.1.0.2", "0.x");
        let error = ChoiceFile::parse(Path::new("c.toml"), &text).unwrap_err();
        assert_eq!(error.key, "choices");
        let text = sample().to_toml() + "seed = 3\n";
        let error = ChoiceFile::parse(Path::new("c.toml"), &text).unwrap_err();
        assert_eq!((error.line, error.key.as_str()), (10, "seed"));
        let text = sample()
            .to_toml()
            .replace("duration_points = 3", "duration_points = 9");
        let error = ChoiceFile::parse(Path::new("c.toml"), &text).unwrap_err();
        assert_eq!((error.line, error.key.as_str()), (7, "duration_points"));
        let text = sample().to_toml().replace("connection-loss=1", "reorder=1");
        let error = ChoiceFile::parse(Path::new("c.toml"), &text).unwrap_err();
        assert_eq!(error.key, "faults");
    }

    #[test]
    fn choice_strings_round_trip() {
        assert_eq!(parse_choice_string("").unwrap(), Vec::<u32>::new());
        assert_eq!(parse_choice_string("3.0.12").unwrap(), vec![3, 0, 12]);
        assert_eq!(choice_string(&[3, 0, 12]), "3.0.12");
        assert!(parse_choice_string("1..2").is_err());
    }
}
