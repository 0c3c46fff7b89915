//! Naming rules and one-line descriptions. Each `*_problem` function says
//! why a value breaks its rule, in words an author can act on, or `None`.

use crate::limits::{MAX_ACTION_NAME, MAX_CATEGORY, MAX_PLUGIN_NAME, MAX_SUMMARY_CHARS, NAME_SEPARATOR};

/// Why `name` is not a valid plugin name (`[a-z][a-z0-9-]*`, at most
/// [`MAX_PLUGIN_NAME`] characters, no `--`, no trailing `-`).
pub fn plugin_name_problem(name: &str) -> Option<String> {
    let ok = (1..=MAX_PLUGIN_NAME).contains(&name.len())
        && name.starts_with(|c: char| c.is_ascii_lowercase())
        && name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        && !name.ends_with('-')
        && !name.contains("--");
    (!ok).then(|| {
        format!(
            "plugin name `{}` must be 1-{MAX_PLUGIN_NAME} characters of a-z, 0-9 and single `-`, starting with a \
             letter",
            shown(name)
        )
    })
}

/// Why `name` is not a valid action name (`[a-z][a-z0-9_]*`, at most
/// [`MAX_ACTION_NAME`] characters, no `__`).
pub fn action_name_problem(name: &str) -> Option<String> {
    let ok = (1..=MAX_ACTION_NAME).contains(&name.len())
        && name.starts_with(|c: char| c.is_ascii_lowercase())
        && name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
        && !name.contains(NAME_SEPARATOR);
    (!ok).then(|| {
        format!(
            "action name `{}` must be 1-{MAX_ACTION_NAME} characters of a-z, 0-9 and single `_`, starting with a \
             letter",
            shown(name)
        )
    })
}

/// Longest version string.
pub const MAX_VERSION: usize = 64;

/// Why `version` is not a valid plugin version: 1-[`MAX_VERSION`]
/// printable characters without spaces (semantic versions are expected,
/// not required).
pub fn version_problem(version: &str) -> Option<String> {
    let ok =
        (1..=MAX_VERSION).contains(&version.len()) && version.chars().all(|c| !c.is_control() && !c.is_whitespace());
    (!ok).then(|| {
        format!("version `{}` must be 1-{MAX_VERSION} characters without spaces or control characters", shown(version))
    })
}

/// Why `category` is not a valid category tag (1-[`MAX_CATEGORY`]
/// characters of `a-z0-9-`).
pub fn category_problem(category: &str) -> Option<String> {
    let ok = (1..=MAX_CATEGORY).contains(&category.len())
        && category.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
    (!ok).then(|| format!("category `{}` must be 1-{MAX_CATEGORY} characters of a-z, 0-9 and -", shown(category)))
}

/// Why `text` is not a valid one-line description of `what`.
pub fn summary_problem(what: &str, text: &str) -> Option<String> {
    let chars = text.chars().count();
    if text.trim().is_empty() {
        Some(format!("{what} has an empty description"))
    } else if text.contains(['\n', '\r']) {
        Some(format!("{what}: the one-line description contains a line break"))
    } else if let Some(c) = text.chars().find(|c| c.is_control()) {
        Some(format!("{what}: the one-line description contains the control character U+{:04X}", c as u32))
    } else if chars > MAX_SUMMARY_CHARS {
        Some(format!("{what}: the one-line description is {chars} characters, over {MAX_SUMMARY_CHARS}"))
    } else {
        None
    }
}

/// The one-line summary of a description: its first paragraph, on one
/// line. The SDK derives stub summaries from doc comments this way, and the
/// host compares them with `describe()` this way.
pub fn summary_of(description: &str) -> String {
    description.trim().lines().take_while(|l| !l.trim().is_empty()).map(str::trim).collect::<Vec<_>>().join(" ")
}

/// `text` cut to its first non-empty line of at most `max` characters,
/// ending with `…` (at a word boundary where one is near) if it was cut;
/// tabs become spaces, and other characters unsafe on one line (escape
/// sequences) are escaped by
/// the [sanitiser](crate::text::sanitize) first.
pub fn one_line(text: &str, max: usize) -> String {
    let line = text.split(['\n', '\r']).map(str::trim).find(|l| !l.is_empty()).unwrap_or("");
    // A tab in a summary is only spacing.
    let spaced;
    let line = if line.contains('\t') {
        spaced = line.replace('\t', " ");
        spaced.as_str()
    } else {
        line
    };
    let line = crate::text::sanitize(line, crate::text::Shape::Line);
    if line.chars().count() <= max {
        return line.into_owned();
    }
    let mut cut: String = line.chars().take(max.saturating_sub(1)).collect();
    if let Some(space) = cut.rfind(' ').filter(|&i| i > max / 2) {
        cut.truncate(space);
    }
    cut.push('…');
    cut
}

/// A name as an error message shows it: [sanitised](crate::text::sanitize)
/// and cut, so that a hostile value can neither drive the terminal or log
/// that shows the error nor make it as long as itself.
fn shown(name: &str) -> String {
    const SHOWN: usize = 64;
    crate::text::sanitize_cut(name, crate::text::Shape::Line, SHOWN)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_their_rules() {
        assert!(plugin_name_problem("calc").is_none());
        assert!(plugin_name_problem("my-plugin2").is_none());
        for bad in ["", "Calc", "2calc", "a--b", "a-", "a_b", &"a".repeat(31)] {
            assert!(plugin_name_problem(bad).is_some(), "{bad}");
        }
        assert!(action_name_problem("list_tables").is_none());
        for bad in ["", "List", "a__b", "a-b", &"a".repeat(33)] {
            assert!(action_name_problem(bad).is_some(), "{bad}");
        }
        assert!(category_problem("math").is_none());
        assert!(category_problem("Math").is_some());
    }

    #[test]
    fn errors_never_echo_a_long_value_whole() {
        let problem = plugin_name_problem(&"x".repeat(100_000)).unwrap();
        assert!(problem.len() < 300, "{}", problem.len());
    }

    #[test]
    fn errors_never_echo_control_characters() {
        let problem = version_problem("1.0\u{1b}[2J\n- forged: line").unwrap();
        assert!(problem.contains("1.0\\u{1b}[2J\\n- forged") && !problem.contains(['\u{1b}', '\n']), "{problem:?}");
    }

    #[test]
    fn summaries_are_one_short_line() {
        assert!(summary_problem("x", "Evaluate.").is_none());
        assert!(summary_problem("x", " ").is_some());
        assert!(summary_problem("x", "a\nb").is_some());
        assert!(summary_problem("x", &"a".repeat(121)).is_some());
        assert!(summary_problem("x", "\u{1b}[2Jclear").unwrap().contains("U+001B"));
        assert!(version_problem("1.2.0-rc.1").is_none());
        for bad in ["", "1 .0", "1\u{7}", &"9".repeat(65)] {
            assert!(version_problem(bad).is_some(), "{bad:?}");
        }
        assert_eq!(summary_of("First line\ncontinued.\n\nDetails."), "First line continued.");
    }

    #[test]
    fn one_line_cuts_at_a_word() {
        assert_eq!(one_line("Short.\nMore", 80), "Short.");
        let cut = one_line("word ".repeat(40).trim(), 30);
        assert!(cut.chars().count() <= 30 && cut.ends_with('…'), "{cut}");
        assert_eq!(one_line("\n\n  first real line  \nsecond", 80), "first real line");
        assert_eq!(one_line("bell\u{7} and \u{1b}[2Jescape", 80), "bell\\u{7} and \\u{1b}[2Jescape");
    }
}
