//! Text from outside, made safe to show: the one sanitiser.
//!
//! Plugin stubs, upstream servers' names, descriptions, versions and
//! errors, API answers, guest logs and errors, OpenAPI documents: none of
//! it is written by the operator, and all of it ends up in front of a
//! model (Tier 1, meta-tool descriptions and results), a terminal (the
//! CLI) or a log. Every such text passes [`sanitize`] on its way there, so
//! that it can neither add lines to a system prompt, forge a log line,
//! drive a terminal (escape sequences, a carriage return that overwrites
//! a line) nor hide what it says (bidirectional overrides).
//!
//! Nothing is dropped silently: an unsafe character is written as its
//! escape (`\u{1b}`, `\r`), so a reader still sees that it was there.

use std::borrow::Cow;

/// Longest name from outside (an upstream tool's, a server's version...)
/// that is accepted at all; longer ones are refused and reported, never cut
/// into a name that could collide with another.
pub const MAX_OUTSIDE_NAME: usize = 128;

/// What shape the text must keep where it goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// One line (names, one-line descriptions, log fields, a status line):
    /// line breaks and tabs are escaped too.
    Line,
    /// Lines (a description, an error or answer shown whole): `\n` and
    /// `\t` pass; every other unsafe character is escaped.
    Lines,
}

/// Whether `c` is unsafe to show as it is, in `shape`: a control character
/// (C0, DEL, C1), a Unicode line or paragraph separator, or a character a
/// reader cannot see but a model's tokenizer reads: every format character
/// (General Category Cf: bidirectional controls, zero-width characters,
/// the soft hyphen, the tag characters of "ASCII smuggling"), variation
/// selectors (which can carry arbitrary bytes) and the Hangul fillers.
pub fn unsafe_char(c: char, shape: Shape) -> bool {
    match c {
        '\n' | '\t' => shape == Shape::Line,
        c if c.is_control() => true,
        '\u{2028}' | '\u{2029}' => true,
        // General Category Cf (Unicode 16).
        '\u{00ad}'
        | '\u{0600}'..='\u{0605}'
        | '\u{061c}'
        | '\u{06dd}'
        | '\u{070f}'
        | '\u{0890}'..='\u{0891}'
        | '\u{08e2}'
        | '\u{180e}'
        | '\u{200b}'..='\u{200f}'
        | '\u{202a}'..='\u{202e}'
        | '\u{2060}'..='\u{2064}'
        | '\u{2066}'..='\u{206f}'
        | '\u{feff}'
        | '\u{fff9}'..='\u{fffb}'
        | '\u{110bd}'
        | '\u{110cd}'
        | '\u{13430}'..='\u{1343f}'
        | '\u{1bca0}'..='\u{1bca3}'
        | '\u{1d173}'..='\u{1d17a}'
        | '\u{e0001}'
        | '\u{e0020}'..='\u{e007f}' => true,
        // Variation selectors, and the Hangul fillers (blank letters).
        '\u{fe00}'..='\u{fe0f}' | '\u{e0100}'..='\u{e01ef}' => true,
        '\u{115f}' | '\u{1160}' | '\u{3164}' | '\u{ffa0}' => true,
        _ => false,
    }
}

/// `text` with every character unsafe in `shape` written as its escape
/// (`\n`, `\r`, `\u{1b}`, `\u{202e}`); borrowed when nothing needed it.
pub fn sanitize(text: &str, shape: Shape) -> Cow<'_, str> {
    if !text.chars().any(|c| unsafe_char(c, shape)) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if unsafe_char(c, shape) {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// [`sanitize`]d `text` cut to at most `max` bytes at a character boundary,
/// saying how many bytes were left out.
pub fn sanitize_cut(text: &str, shape: Shape, max: usize) -> String {
    let clean = sanitize(text, shape);
    if clean.len() <= max {
        return clean.into_owned();
    }
    let mut end = max;
    while !clean.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}… ({} more bytes)", &clean[..end], clean.len() - end)
}

/// Why `name`, a name from outside (an upstream tool's), cannot be used: it
/// is empty, longer than [`MAX_OUTSIDE_NAME`] characters, or holds a
/// character unsafe on one line or any whitespace (`get weather` and
/// `get\u{a0}weather` would read alike). Such a name is refused and
/// reported, not cleaned: two hostile names must never clean into one, nor
/// two different names look like one.
pub fn outside_name_problem(name: &str) -> Option<String> {
    let chars = name.chars().count();
    if chars == 0 {
        Some("the name is empty".into())
    } else if chars > MAX_OUTSIDE_NAME {
        Some(format!(
            "the name is {chars} characters, over {MAX_OUTSIDE_NAME}: `{}`",
            sanitize_cut(name, Shape::Line, 64)
        ))
    } else {
        name.chars().find(|c| unsafe_char(*c, Shape::Line) || c.is_whitespace()).map(|c| {
            format!(
                "the name `{}` holds the invisible or control character U+{:04X}",
                sanitize_cut(name, Shape::Line, 200),
                c as u32
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unsafe_characters_are_escaped_not_dropped() {
        assert_eq!(sanitize("evil\nWARN forged \u{1b}[2J", Shape::Line), "evil\\nWARN forged \\u{1b}[2J");
        assert_eq!(sanitize("a\r\nb\tc\u{7}", Shape::Lines), "a\\r\nb\tc\\u{7}");
        assert_eq!(sanitize("abc\u{202e}gpj.exe", Shape::Lines), "abc\\u{202e}gpj.exe");
        assert_eq!(sanitize("line\u{2028}sep\u{85}nel\u{0}", Shape::Lines), "line\\u{2028}sep\\u{85}nel\\u{0}");
        assert!(matches!(sanitize("plain é 漢字 🙂", Shape::Line), Cow::Borrowed(_)));
        // Invisible text a model would read: tag characters, zero-width, variation selectors.
        assert_eq!(sanitize("ok\u{e0041}\u{e0042}", Shape::Lines), "ok\\u{e0041}\\u{e0042}");
        assert_eq!(sanitize("a\u{200b}b\u{ad}c\u{fe0f}", Shape::Line), "a\\u{200b}b\\u{ad}c\\u{fe0f}");
    }

    #[test]
    fn cut_text_says_what_was_left_out() {
        let cut = sanitize_cut(&format!("{}\n", "é".repeat(300)), Shape::Line, 101);
        assert!(cut.starts_with("éé") && cut.ends_with("(502 more bytes)") && !cut.contains('\n'), "{cut}");
        assert_eq!(sanitize_cut("short", Shape::Line, 10), "short");
    }

    #[test]
    fn outside_names_with_control_characters_or_too_long_are_refused() {
        assert!(outside_name_problem("get_weather").is_none());
        assert!(outside_name_problem("files/read.v2").is_none());
        assert!(outside_name_problem("").is_some());
        assert!(outside_name_problem(&"x".repeat(129)).unwrap().contains("129 characters"));
        assert!(outside_name_problem(&"x".repeat(128)).is_none());
        let problem = outside_name_problem("tool\n- forged: line").unwrap();
        assert!(problem.contains("U+000A") && !problem.contains('\n'), "{problem}");
        assert!(outside_name_problem("a\u{1b}[2J").unwrap().contains("U+001B"));
        for invisible in ["get\u{200b}_weather", "get\u{a0}weather", "get weather", "get\u{e0041}x", "a\u{fe0f}"] {
            assert!(outside_name_problem(invisible).is_some(), "{invisible:?}");
        }
    }
}
