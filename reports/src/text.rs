//! Text helpers the renderers share: simulated times in milliseconds,
//! escaping for HTML/SVG and XML, and shortening long lines.

/// Simulated nanoseconds as milliseconds with 3 decimals: `12.345ms`.
pub fn ms(ns: u64) -> String {
    format!("{}.{:03}ms", ns / 1_000_000, (ns / 1_000) % 1_000)
}

/// Simulated nanoseconds as milliseconds without trailing zeros, for axis
/// ticks: `2000ms`, `12.5ms`, `0.25ms`.
pub fn ms_short(ns: u64) -> String {
    let whole = ns / 1_000_000;
    let micros = (ns / 1_000) % 1_000;
    if micros == 0 {
        format!("{whole}ms")
    } else {
        let decimals = format!("{micros:03}");
        format!("{whole}.{}ms", decimals.trim_end_matches('0'))
    }
}

/// Escapes text for HTML and SVG content and attribute values
/// (`& < > " '`).
pub fn escape_html(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + text.len() / 8);
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// Escapes text for XML content and attribute values, and replaces the
/// characters XML 1.0 cannot hold at all (control characters other than
/// tab, newline and carriage return) with U+FFFD, so the document stays
/// well-formed whatever a message contains.
pub fn escape_xml(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + text.len() / 8);
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\t' | '\n' | '\r' => out.push(c),
            c if (c as u32) < 0x20 || c == '\u{FFFE}' || c == '\u{FFFF}' => out.push('\u{FFFD}'),
            c => out.push(c),
        }
    }
    out
}

/// At most `max` characters of `text` (on one line), ending in `…` when
/// shortened.
pub fn shorten(text: &str, max: usize) -> String {
    let one_line: String = text
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    if one_line.chars().count() <= max {
        return one_line;
    }
    let mut out: String = one_line.chars().take(max.saturating_sub(1)).collect();
    out.push('…');
    out
}

/// `c3` for a client, `server` for none.
pub fn lane_name(client: Option<usize>) -> String {
    match client {
        Some(c) => format!("c{c}"),
        None => "server".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times() {
        assert_eq!(ms(12_345_678), "12.345ms");
        assert_eq!(ms(0), "0.000ms");
        assert_eq!(ms(20_000_000_000), "20000.000ms");
        assert_eq!(ms_short(2_000_000_000), "2000ms");
        assert_eq!(ms_short(12_500_000), "12.5ms");
        assert_eq!(ms_short(250_000), "0.25ms");
    }

    #[test]
    fn escaping() {
        assert_eq!(
            escape_html("<a href='x'>&\"</a>"),
            "&lt;a href=&#39;x&#39;&gt;&amp;&quot;&lt;/a&gt;"
        );
        assert_eq!(escape_xml("a\u{1}<b>"), "a\u{FFFD}&lt;b&gt;");
    }

    #[test]
    fn shortening() {
        assert_eq!(shorten("abc", 3), "abc");
        assert_eq!(shorten("abcd", 3), "ab…");
        assert_eq!(shorten("a\nb", 5), "a b");
    }
}
