//! A small TOML file of known top-level keys (a tape file, a choice file):
//! its table read once, unknown keys refused, and errors that name the
//! file, the line and the key, as a scenario's do.

use super::error::ScenarioError;
use std::path::Path;

/// A parsed file whose top-level keys are all known.
pub struct KeyedFile<'a> {
    file: &'a Path,
    source: &'a str,
    pub table: toml::Table,
}

impl<'a> KeyedFile<'a> {
    /// Parses `source` (named `file` in errors); a key not in `keys` is
    /// refused, listing them.
    pub fn parse(file: &'a Path, source: &'a str, keys: &[&str]) -> Result<Self, ScenarioError> {
        let table: toml::Table =
            toml::from_str(source).map_err(|e| ScenarioError::from_toml(file, source, &e))?;
        let keyed = KeyedFile {
            file,
            source,
            table,
        };
        if let Some(key) = keyed.table.keys().find(|key| !keys.contains(&key.as_str())) {
            let known = keys.join(", ");
            return Err(keyed.error(key, format!("unknown key (known: {known})")));
        }
        Ok(keyed)
    }

    /// An error at `key`'s line.
    pub fn error(&self, key: &str, message: String) -> ScenarioError {
        ScenarioError::at_key(self.file, self.source, key, message)
    }

    /// The string at `key`, if there is one.
    pub fn text(&self, key: &str) -> Result<Option<String>, ScenarioError> {
        match self.table.get(key) {
            Some(toml::Value::String(value)) => Ok(Some(value.clone())),
            Some(_) => Err(self.error(key, "must be a string".to_string())),
            None => Ok(None),
        }
    }

    /// The string at `key`, which must be there.
    pub fn required(&self, key: &str) -> Result<String, ScenarioError> {
        self.text(key)?
            .ok_or_else(|| self.error(key, "missing".to_string()))
    }
}

/// `text` as a TOML string: a multi-line literal when it can be one (it
/// reads as the file it was), else a quoted string.
pub fn multiline(text: &str) -> String {
    let control = |c: char| c.is_control() && c != '\n' && c != '\t';
    let literal = !text.contains("'''") && !text.ends_with('\'') && !text.chars().any(control);
    match literal {
        true => format!("'''\n{text}'''"),
        false => toml::Value::String(text.to_string()).to_string(),
    }
}
