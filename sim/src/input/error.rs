//! Errors in scenario files name the file, the line and the key.

use crate::echo::escape_controls;
use std::fmt;
use std::path::{Path, PathBuf};

/// A scenario file that cannot be used.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub struct ScenarioError {
    pub file: PathBuf,
    /// 1-based; 0 when the problem has no line (the file is unreadable).
    pub line: usize,
    /// The dotted key (`faults.rates.loss_after_apply`), empty if none.
    pub key: String,
    pub message: String,
}

impl fmt::Display for ScenarioError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The file name, the key and the message echo the user's text:
        // control characters show escaped, never act on the terminal.
        let file = self.file.display().to_string();
        write!(f, "{}", escape_controls(&file))?;
        if self.line > 0 {
            write!(f, ":{}", self.line)?;
        }
        if !self.key.is_empty() {
            write!(f, ": key `{}`", escape_controls(&clip(&self.key)))?;
        }
        write!(f, ": {}", escape_controls(&clip_quoted(&self.message)))
    }
}

impl ScenarioError {
    /// The file could not be read as text (see [`super`]).
    pub fn unreadable(error: &super::InputError) -> ScenarioError {
        let file = error.file().display().to_string();
        let message = error.to_string();
        // The input error names the file (and line) itself; keep the rest.
        let message = message
            .strip_prefix(&file)
            .map(|rest| rest.trim_start_matches(|c: char| c == ':' || c.is_ascii_digit()))
            .map_or(message.clone(), |rest| rest.trim().to_string());
        ScenarioError {
            file: error.file().to_path_buf(),
            line: error.line(),
            key: String::new(),
            message,
        }
    }

    /// A TOML syntax or type error: toml gives a byte span; the key is read
    /// off the source line (`key = value`) and its table header.
    pub fn from_toml(file: &Path, source: &str, error: &toml::de::Error) -> ScenarioError {
        let offset = error.span().map_or(0, |span| span.start);
        let line = source[..offset.min(source.len())].matches('\n').count() + 1;
        let key = key_at_line(source, line);
        let message = error.message().trim().to_string();
        ScenarioError {
            file: file.to_path_buf(),
            line,
            key,
            message,
        }
    }

    /// A value that parsed but makes no sense; `key` is dotted, with an
    /// optional `[n]` for the n-th entry of an array of tables
    /// (`faults.schedule[2].fault`).
    pub fn at_key(
        file: &Path,
        source: &str,
        key: &str,
        message: impl Into<String>,
    ) -> ScenarioError {
        ScenarioError {
            file: file.to_path_buf(),
            line: line_of_key(source, key).unwrap_or(0),
            key: key.to_string(),
            message: message.into(),
        }
    }
}

/// Longest user text echoed in a message, in characters.
const ECHO_CHARS: usize = 60;

/// `text`, cut to `ECHO_CHARS` characters with an ellipsis: a message
/// never echoes a megabyte key back.
pub fn clip(text: &str) -> String {
    match text.char_indices().nth(ECHO_CHARS) {
        Some((end, _)) => format!("{}…", &text[..end]),
        None => text.to_string(),
    }
}

/// Longest message shown, in characters.
const MESSAGE_CHARS: usize = 400;

/// A message with every quoted part (`this` or "this") clipped, without
/// line breaks, and at most `MESSAGE_CHARS` long: toml's messages and
/// path errors quote the user's keys and values.
pub fn clip_quoted(message: &str) -> String {
    let mut text = message.replace('\n', " ");
    for quote in ['`', '"'] {
        let parts: Vec<String> = text
            .split(quote)
            .enumerate()
            .map(|(i, part)| {
                if i % 2 == 1 {
                    clip(part)
                } else {
                    part.to_string()
                }
            })
            .collect();
        text = parts.join(&quote.to_string());
    }
    match text.char_indices().nth(MESSAGE_CHARS) {
        Some((end, _)) => format!("{}…", &text[..end]),
        None => text,
    }
}

/// The dotted key defined (or the table opened) on a 1-based line; inside
/// the n-th `[[array.of.tables]]`, the table is named `array.of.tables[n]`.
fn key_at_line(source: &str, line: usize) -> String {
    let mut table = String::new();
    let mut occurrences: std::collections::BTreeMap<String, usize> = Default::default();
    for (number, text) in source.lines().enumerate() {
        let text = text.trim();
        if let Some(header) = table_header(text) {
            table = header.to_string();
            if text.starts_with("[[") {
                let seen = occurrences.entry(table.clone()).or_default();
                table = format!("{table}[{seen}]");
                *seen += 1;
            }
            if number + 1 == line {
                return table;
            }
            continue;
        }
        if number + 1 == line {
            let key = text.split('=').next().unwrap_or("").trim();
            return match (table.is_empty(), key.is_empty() || key.starts_with('#')) {
                (_, true) => table,
                (true, false) => key.to_string(),
                (false, false) => format!("{table}.{key}"),
            };
        }
    }
    table
}

/// `[a.b]` or `[[a.b]]` -> `a.b`.
fn table_header(line: &str) -> Option<&str> {
    let inner = line.strip_prefix('[')?;
    let inner = inner.strip_prefix('[').unwrap_or(inner);
    let end = inner.find(']')?;
    Some(inner[..end].trim())
}

/// The 1-based line defining a dotted key; for `table[n].key`, inside the
/// n-th `[[table]]`. Falls back to the line of the key's table (a header,
/// or an inline table `latency = { ... }` under its parent).
fn line_of_key(source: &str, dotted: &str) -> Option<usize> {
    if dotted.is_empty() {
        return None;
    }
    let (table, index, key) = split_key(dotted);
    let mut current = String::new();
    let mut occurrence: i64 = -1;
    let mut header_line = None;
    for (number, text) in source.lines().enumerate() {
        let text = text.trim();
        if let Some(header) = table_header(text) {
            current = header.to_string();
            if current == dotted && index.is_none() {
                return Some(number + 1);
            }
            if current == table {
                occurrence += 1;
                if index.is_none_or(|i| i as i64 == occurrence) {
                    header_line = header_line.or(Some(number + 1));
                }
            }
            continue;
        }
        let in_place = current == table && index.is_none_or(|i| i as i64 == occurrence);
        let defined = text.split('=').next().map(str::trim) == Some(key) && text.contains('=');
        if in_place && defined {
            return Some(number + 1);
        }
    }
    header_line.or_else(|| {
        let parent = dotted.rsplit_once('.')?.0;
        if parent.ends_with(']') {
            return None;
        }
        line_of_key(source, parent)
    })
}

/// `faults.schedule[2].fault` -> ("faults.schedule", Some(2), "fault");
/// `properties.check` -> ("properties", None, "check"); `recipe` -> ("", None, "recipe").
/// `step[2]` -> ("step", Some(2), ""): the n-th table itself (its header).
fn split_key(dotted: &str) -> (String, Option<usize>, &str) {
    let (path, key) = match dotted.rsplit_once('.') {
        Some(split) => split,
        None if dotted.ends_with(']') => (dotted, ""),
        None => ("", dotted),
    };
    match path.split_once('[') {
        Some((table, rest)) => (
            table.to_string(),
            rest.trim_end_matches(']').parse().ok(),
            key,
        ),
        None => (path.to_string(), None, key),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SOURCE: &str = "recipe = \"lock\"\nclients = 3\n\n[faults.rates]\nloss_after_apply = 0.1\n\n[[faults.schedule]]\nat_ms = 1\nfault = \"pause\"\n\n[[faults.schedule]]\nat_ms = 2\nfault = \"meteor\"\n";

    #[test]
    fn finds_keys_in_tables_and_arrays_of_tables() {
        assert_eq!(line_of_key(SOURCE, "clients"), Some(2));
        assert_eq!(
            line_of_key(SOURCE, "faults.rates.loss_after_apply"),
            Some(5)
        );
        assert_eq!(line_of_key(SOURCE, "faults.schedule[1].fault"), Some(13));
        assert_eq!(line_of_key(SOURCE, "faults.schedule[0].fault"), Some(9));
    }

    #[test]
    fn names_the_key_of_a_line() {
        assert_eq!(key_at_line(SOURCE, 5), "faults.rates.loss_after_apply");
        assert_eq!(key_at_line(SOURCE, 1), "recipe");
        assert_eq!(key_at_line(SOURCE, 7), "faults.schedule[0]");
        assert_eq!(key_at_line(SOURCE, 13), "faults.schedule[1].fault");
        assert_eq!(clip(&"k".repeat(1_000_000)).chars().count(), 61);
    }
}
