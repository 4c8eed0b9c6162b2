//! Echoing user text safely on a terminal: a scenario name, a TOML key or
//! value, a file name may hold control characters (an ESC sequence clears
//! the screen or retitles the window). Every message that echoes input
//! passes it through [`escape_controls`] (or [`escape_controls_in_lines`]
//! for a message of several lines), so a control character shows as
//! `\u{1b}` instead of acting.

/// `text` with every control character (C0, DEL, C1), line breaks
/// included, written as a Rust escape: `\u{1b}`, `\u{a}`.
pub fn escape_controls(text: &str) -> String {
    escape(text, false)
}

/// [`escape_controls`], keeping line breaks and tabs: for a message of
/// several lines.
pub fn escape_controls_in_lines(text: &str) -> String {
    escape(text, true)
}

fn escape(text: &str, keep_lines: bool) -> String {
    if !text.chars().any(char::is_control) {
        return text.to_string();
    }
    let mut escaped = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if c.is_control() && !(keep_lines && (c == '\n' || c == '\t')) {
            escaped.push_str(&format!("\\u{{{:x}}}", u32::from(c)));
        } else {
            escaped.push(c);
        }
    }
    escaped
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_are_written_as_escapes() {
        assert_eq!(escape_controls("a\u{1b}[2Jb"), "a\\u{1b}[2Jb");
        assert_eq!(
            escape_controls("x\ny\u{7f}\u{9b}"),
            "x\\u{a}y\\u{7f}\\u{9b}"
        );
        assert_eq!(escape_controls_in_lines("x\n\ty\u{7}"), "x\n\ty\\u{7}");
        assert_eq!(escape_controls("plain ünïcode"), "plain ünïcode");
    }
}
