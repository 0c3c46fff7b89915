//! What the CLI writes to the terminal. Text from outside (a guest's
//! errors and output, an upstream server's, what a plugin file says about
//! itself) passes the one sanitiser on its way, so that it can neither
//! drive the terminal (clear it, set its title) nor pass for a line of
//! Quiver's own.

use quiver::contract::{Shape, sanitize, unsafe_char};

/// `text` for the terminal, shown whole: every unsafe character escaped
/// (its lines and tabs kept), each line after the first indented, so that
/// none of them can pass for one of Quiver's own (`error:`, `fix:`).
pub(crate) fn shown(text: &str) -> String {
    sanitize(text, Shape::Lines).replace('\n', "\n  ")
}

/// `value` as pretty JSON on stdout. serde_json escapes the C0 controls
/// only: every other character unsafe on a terminal (DEL, C1 controls,
/// bidirectional overrides, line separators) is written as its JSON
/// escape (`\u202e`), which keeps the JSON the same value.
pub(crate) fn print_json(value: &impl serde::Serialize) {
    println!("{}", json_text(value));
}

fn json_text(value: &impl serde::Serialize) -> String {
    let text = serde_json::to_string_pretty(value).expect("JSON values serialize");
    // Outside strings JSON is ASCII: what is left to escape is in one.
    let unsafe_in_string = |c: char| c != '\n' && unsafe_char(c, Shape::Lines);
    if !text.contains(unsafe_in_string) {
        return text;
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if unsafe_in_string(c) {
            // JSON escapes UTF-16 code units: a character past the Basic
            // Multilingual Plane (a tag character) is a surrogate pair.
            let mut units = [0u16; 2];
            for unit in c.encode_utf16(&mut units) {
                out.push_str(&format!("\\u{unit:04x}"));
            }
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_output_escapes_what_serde_json_leaves_raw() {
        let value = serde_json::json!({ "text": "a\u{1b}[2J\u{9b}31m\u{202e}\u{7f}\u{2028}é\n\u{e0041}\u{200b}" });
        let text = json_text(&value);
        assert!(!text.contains(|c: char| c != '\n' && unsafe_char(c, Shape::Lines)), "{text}");
        assert_eq!(serde_json::from_str::<serde_json::Value>(&text).unwrap(), value, "the same value");
    }

    #[test]
    fn shown_text_cannot_pass_for_a_line_of_quivers_own() {
        assert_eq!(shown("bad\r\u{1b}[2J\nfix: run this"), "bad\\r\\u{1b}[2J\n  fix: run this");
    }
}
