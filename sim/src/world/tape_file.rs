//! A seeded run as a file: the scenario it ran (as written), its variant,
//! its seed and every word its streams drew ([`super::draws`]).
//! `zkcheck replay SCENARIO --seed N --write-tape FILE` writes one;
//! `zkcheck replay FILE` runs it again with the full trace. Changing a word
//! gives another run of the same world (a word is always a legal draw).
//! Checked on reading: errors name the file, the line and the key (exit 2).
//!
//! ```toml
//! # zkcheck: every draw of one seeded run, stream by stream
//! variant = "fixed"
//! seed = 7                      # madsim's task order, select! branches, HashMap keys
//! property = "liveness"         # what the run broke (informative)
//! scenario = '''
//! recipe = "lock"
//! ...
//! '''
//!
//! [draws]                       # each stream's words in order, hexadecimal
//! net = '''
//! 9e3779b97f4a7c15 0000000000000001
//! '''
//! ```

use super::draws::{is_stream, DrawTape};
use crate::input::error::ScenarioError;
use crate::input::keyed_file::KeyedFile;
use std::collections::BTreeMap;
use std::path::Path;

/// Most words a tape file may hold (a run of a few seconds draws a few
/// thousand; this keeps a hostile file from filling memory).
pub const MAX_WORDS: usize = 10_000_000;

/// Most clients a `workload_N` stream may name (the scenario then checks
/// its own count).
const MAX_CLIENTS: usize = 1_000;

const KEYS: [&str; 6] = [
    "variant",
    "seed",
    "all_violations",
    "property",
    "scenario",
    "draws",
];

/// A checked tape file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TapeFile {
    pub variant: String,
    /// The run went on after its first violation (`--all-violations`).
    pub all_violations: bool,
    /// What the run broke, if the file says.
    pub property: Option<String>,
    /// The scenario file it ran, as written.
    pub scenario: String,
    pub tape: DrawTape,
}

/// True if `text` is a tape file (its top level has a `draws` table;
/// scenarios, schedules and choice files have no such key).
pub fn is_tape_text(text: &str) -> bool {
    match text.parse::<toml::Table>() {
        Ok(table) => table.contains_key("draws"),
        Err(_) => text.lines().any(|line| line.trim() == "[draws]"),
    }
}

impl TapeFile {
    /// Checks a tape file given as text; `file` names it in errors.
    pub fn parse(file: &Path, source: &str) -> Result<TapeFile, ScenarioError> {
        let keyed = KeyedFile::parse(file, source, &KEYS)?;
        let table = &keyed.table;
        let error = |key: &str, message: String| keyed.error(key, message);
        let seed = match table.get("seed") {
            Some(toml::Value::Integer(seed)) if *seed >= 0 => *seed as u64,
            Some(_) => return Err(error("seed", "must be a number, 0 or more".to_string())),
            None => return Err(error("seed", "missing".to_string())),
        };
        let all_violations = match table.get("all_violations") {
            Some(toml::Value::Boolean(all)) => *all,
            Some(_) => return Err(error("all_violations", "must be true or false".to_string())),
            None => false,
        };
        let Some(toml::Value::Table(draws)) = table.get("draws") else {
            return Err(error("draws", "must be a table of streams".to_string()));
        };
        let mut streams = BTreeMap::new();
        let mut total = 0;
        for (name, words) in draws {
            let key = format!("draws.{name}");
            if !is_stream(name, MAX_CLIENTS) {
                let known: Vec<&str> = super::draws::STREAMS.iter().map(|s| s.0).collect();
                return Err(error(
                    &key,
                    format!(
                        "no such stream (known: {}; workload_N for client N)",
                        known.join(", ")
                    ),
                ));
            }
            let toml::Value::String(words) = words else {
                return Err(error(&key, "must be a string of words".to_string()));
            };
            let words = parse_words(words).map_err(|message| error(&key, message))?;
            total += words.len();
            if total > MAX_WORDS {
                return Err(error(&key, format!("more than {MAX_WORDS} words in all")));
            }
            streams.insert(name.clone(), words);
        }
        Ok(TapeFile {
            variant: keyed.required("variant")?,
            all_violations,
            property: keyed.text("property")?,
            scenario: keyed.required("scenario")?,
            tape: DrawTape { seed, streams },
        })
    }

    /// The file as TOML.
    pub fn to_toml(&self) -> String {
        let quote = |text: &str| toml::Value::String(text.to_string()).to_string();
        let mut out = String::from("# zkcheck: every draw of one seeded run, stream by stream\n");
        out += &format!("variant = {}\n", quote(&self.variant));
        out += &format!(
            "seed = {}  # madsim's task order, select! branches, HashMap keys\n",
            self.tape.seed
        );
        if self.all_violations {
            out += "all_violations = true\n";
        }
        if let Some(property) = &self.property {
            out += &format!("property = {}\n", quote(property));
        }
        out += "# the scenario file it ran, as it was\n";
        out += &format!(
            "scenario = {}\n",
            crate::input::keyed_file::multiline(&self.scenario)
        );
        out += "\n# each stream's words in the order it drew them, hexadecimal\n[draws]\n";
        for (name, words) in &self.tape.streams {
            out += &format!("{name} = '''\n{}'''\n", render_words(words));
        }
        out
    }
}

/// Words as hexadecimal, eight to a line.
fn render_words(words: &[u64]) -> String {
    let mut out = String::new();
    for line in words.chunks(8) {
        let line: Vec<String> = line.iter().map(|word| format!("{word:016x}")).collect();
        out += &line.join(" ");
        out.push('\n');
    }
    out
}

/// Words separated by white space, each 1-16 hexadecimal digits.
fn parse_words(text: &str) -> Result<Vec<u64>, String> {
    text.split_whitespace()
        .map(|word| {
            u64::from_str_radix(word, 16)
                .ok()
                .filter(|_| word.len() <= 16)
                .ok_or_else(|| {
                    format!(
                        "`{}` is not a word: 1-16 hexadecimal digits",
                        crate::input::error::clip(word)
                    )
                })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> TapeFile {
        let mut streams = BTreeMap::new();
        streams.insert(
            "net".to_string(),
            (0..11).map(|i| i * 0x1234_5678_9abc).collect(),
        );
        streams.insert("workload_1".to_string(), vec![u64::MAX, 0]);
        TapeFile {
            variant: "fixed".into(),
            all_violations: true,
            property: Some("liveness".into()),
            scenario: "recipe = \"lock\"\n[workload]\nhold_ms = [1, 20]\n".into(),
            tape: DrawTape { seed: 7, streams },
        }
    }

    #[test]
    fn a_file_reads_back_as_written() {
        let text = sample().to_toml();
        assert!(is_tape_text(&text));
        assert!(!is_tape_text(&sample().scenario));
        let read = TapeFile::parse(Path::new("t.toml"), &text).expect("a valid file");
        assert_eq!(read, sample());
    }

    #[test]
    fn errors_name_the_line_and_the_key() {
        let text = sample().to_toml().replace("net = ", "latency = ");
        let error = TapeFile::parse(Path::new("t.toml"), &text).unwrap_err();
        assert_eq!(error.key, "draws.latency");
        assert!(text
            .lines()
            .nth(error.line - 1)
            .unwrap()
            .starts_with("latency"));
        let text = sample()
            .to_toml()
            .replace("ffffffffffffffff", "fffffffffffffffff");
        let error = TapeFile::parse(Path::new("t.toml"), &text).unwrap_err();
        assert_eq!(error.key, "draws.workload_1");
        let text = sample().to_toml().replace("seed = 7", "seed = -1");
        let error = TapeFile::parse(Path::new("t.toml"), &text).unwrap_err();
        assert_eq!((error.line, error.key.as_str()), (3, "seed"));
        let text = format!("extra = 1\n{}", sample().to_toml());
        let error = TapeFile::parse(Path::new("t.toml"), &text).unwrap_err();
        assert_eq!(error.key, "extra");
    }
}
