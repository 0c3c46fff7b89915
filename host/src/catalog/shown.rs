//! Text from files and servers as Quiver echoes it (status, logs, errors,
//! the CLI): cut to a small length and passed through the one sanitiser
//! ([`crate::contract::sanitize`]), so that what a hostile file says about
//! itself can neither flood an answer nor forge a log line nor drive a
//! terminal.

use crate::contract::{Shape, sanitize, sanitize_cut};

/// Longest text of one status entry or log field about a file: what a
/// hostile file says about itself is never echoed whole.
const SHOWN_BYTES: usize = 512;

/// `text` on one line, cut to [`SHOWN_BYTES`] at a character boundary, with a note.
pub(crate) fn shown(text: &str) -> String {
    shown_bytes(text, SHOWN_BYTES)
}

/// `text` on one line, cut to `max` bytes at a character boundary, with a note.
pub(crate) fn shown_bytes(text: &str, max: usize) -> String {
    sanitize_cut(text, Shape::Line, max)
}

/// `text` on one line, its unsafe characters written as escapes (`\n`,
/// `\u{1b}`): a file name or a message can then neither forge a log line
/// nor drive a terminal.
pub fn printable(text: &str) -> String {
    sanitize(text, Shape::Line).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_are_escaped_and_long_text_cut() {
        assert_eq!(printable("evil\nWARN forged \u{1b}[2J"), "evil\\nWARN forged \\u{1b}[2J");
        assert_eq!(printable("plain é"), "plain é");
        let long = format!("{}\n", "x".repeat(600));
        let cut = shown(&long);
        assert!(cut.starts_with("xxx") && cut.ends_with("(90 more bytes)") && !cut.contains('\n'), "{cut}");
    }
}
