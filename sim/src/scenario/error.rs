//! Errors in scenario files name the file, the line and the key.

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
        write!(f, "{}", self.file.display())?;
        if self.line > 0 {
            write!(f, ":{}", self.line)?;
        }
        if !self.key.is_empty() {
            write!(f, ": key `{}`", self.key)?;
        }
        write!(f, ": {}", self.message)
    }
}

impl ScenarioError {
    pub fn unreadable(file: &Path, error: &std::io::Error) -> ScenarioError {
        ScenarioError {
            file: file.to_path_buf(),
            line: 0,
            key: String::new(),
            message: error.to_string(),
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

/// The dotted key defined (or the table opened) on a 1-based line.
fn key_at_line(source: &str, line: usize) -> String {
    let mut table = String::new();
    for (number, text) in source.lines().enumerate() {
        let text = text.trim();
        if let Some(header) = table_header(text) {
            table = header.to_string();
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
/// n-th `[[table]]`. Falls back to the table's header.
fn line_of_key(source: &str, dotted: &str) -> Option<usize> {
    let (table, index, key) = split_key(dotted);
    let mut current = String::new();
    let mut occurrence: i64 = -1;
    let mut header_line = None;
    for (number, text) in source.lines().enumerate() {
        let text = text.trim();
        if let Some(header) = table_header(text) {
            current = header.to_string();
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
    header_line
}

/// `faults.schedule[2].fault` -> ("faults.schedule", Some(2), "fault");
/// `properties.check` -> ("properties", None, "check"); `recipe` -> ("", None, "recipe").
fn split_key(dotted: &str) -> (String, Option<usize>, &str) {
    let (path, key) = dotted.rsplit_once('.').unwrap_or(("", dotted));
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
        assert_eq!(key_at_line(SOURCE, 7), "faults.schedule");
    }
}
