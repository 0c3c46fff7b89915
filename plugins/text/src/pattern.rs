//! Regular-expression search and replace, with the `regex` crate.

use std::collections::BTreeMap;

use quiver_sdk::prelude::*;
use regex::{Regex, RegexBuilder};

/// Longest regular expression, in bytes, and the compiled-size limit.
const MAX_PATTERN: usize = 10_000;
const REGEX_SIZE_LIMIT: usize = 10 << 20;

/// Input of `regex_find`.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RegexFind {
    /// Regular expression in Rust `regex` syntax (like PCRE without look-around or
    /// backreferences), e.g. `(?P<year>\d{4})-(\d{2})`. Inline flags such as `(?s)` work.
    pub pattern: String,
    /// The text to search.
    pub text: String,
    /// Match letters regardless of case.
    #[serde(default)]
    pub case_insensitive: bool,
    /// Make `^` and `$` match at the start and end of every line.
    #[serde(default)]
    pub multi_line: bool,
    /// Include the capture groups of each match.
    #[serde(default = "default_captures")]
    pub captures: bool,
    /// Most matches to return, at most 10000.
    #[serde(default = "default_max_matches")]
    #[schemars(range(min = 1, max = 10000))]
    pub max_matches: u32,
}

/// One match of a regular expression.
#[derive(Serialize, JsonSchema)]
pub struct Match {
    /// The matched text.
    pub text: String,
    /// Offset of the match in characters (Unicode scalar values) from the start of the text.
    pub start: usize,
    /// Offset just past the match, in characters.
    pub end: usize,
    /// Line of the start of the match, from 1.
    pub line: usize,
    /// Capture groups 1, 2, ... in order; `null` for a group that did not take part.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub groups: Option<Vec<Option<String>>>,
    /// Named capture groups by name; `null` for a group that did not take part.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub named: Option<BTreeMap<String, Option<String>>>,
}

/// The matches of a regular expression.
#[derive(Serialize, JsonSchema)]
pub struct Found {
    /// Number of matches returned.
    pub count: usize,
    /// True when the text has more matches than `max_matches`.
    pub truncated: bool,
    /// The matches, in order.
    pub matches: Vec<Match>,
}

/// Input of `regex_replace`.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RegexReplace {
    /// Regular expression in Rust `regex` syntax, e.g. `(\w+)@(\w+)\.com`.
    pub pattern: String,
    /// The text to change.
    pub text: String,
    /// Replacement. `$1` or `${1}` inserts group 1, `${name}` a named group, `$0` the whole
    /// match, `$$` a literal `$`. Write `${1}x`, not `$1x`, when letters or digits follow.
    pub replacement: String,
    /// Replace only the first N matches. Default: all.
    #[schemars(range(min = 1))]
    pub limit: Option<u32>,
    /// Insert `replacement` as is, without expanding `$` references.
    #[serde(default)]
    pub literal: bool,
    /// Match letters regardless of case.
    #[serde(default)]
    pub case_insensitive: bool,
    /// Make `^` and `$` match at the start and end of every line.
    #[serde(default)]
    pub multi_line: bool,
}

/// The text after replacement.
#[derive(Serialize, JsonSchema)]
pub struct Replaced {
    /// The new text.
    pub text: String,
    /// How many matches were replaced.
    pub replacements: usize,
}

fn default_captures() -> bool {
    true
}

fn default_max_matches() -> u32 {
    100
}

/// Compile `pattern` with the given flags; an error names what is wrong.
pub fn compile(pattern: &str, case_insensitive: bool, multi_line: bool) -> Result<Regex, ToolError> {
    if pattern.len() > MAX_PATTERN {
        return Err(ToolError::invalid_input(format!(
            "the pattern is {} bytes; the limit is {MAX_PATTERN}",
            pattern.len()
        )));
    }
    RegexBuilder::new(pattern)
        .case_insensitive(case_insensitive)
        .multi_line(multi_line)
        .size_limit(REGEX_SIZE_LIMIT)
        .build()
        .map_err(|e| ToolError::invalid_input(format!("invalid regular expression: {e}")))
}

/// The first `max` matches of `re` in `text`, with character offsets and line numbers.
pub fn find_matches(re: &Regex, text: &str, captures: bool, max: usize) -> Found {
    let names: Vec<(usize, String)> =
        re.capture_names().enumerate().filter_map(|(i, n)| n.map(|n| (i, n.to_owned()))).collect();
    let group_text = |c: &regex::Captures, i: usize| c.get(i).map(|m| m.as_str().to_owned());

    let mut matches = Vec::new();
    let mut truncated = false;
    // Running position, so offsets cost one pass over the text in all.
    let (mut byte, mut chars, mut line) = (0usize, 0usize, 1usize);
    let mut advance = |to: usize| {
        let skipped = &text[byte..to];
        chars += skipped.chars().count();
        line += skipped.bytes().filter(|&b| b == b'\n').count();
        byte = to;
        (chars, line)
    };
    for caps in re.captures_iter(text) {
        if matches.len() == max {
            truncated = true;
            break;
        }
        let m = caps.get(0).expect("group 0 always matches");
        let (start, at_line) = advance(m.start());
        let (end, _) = advance(m.end());
        let (groups, named) = if captures && caps.len() > 1 {
            let groups = (1..caps.len()).map(|i| group_text(&caps, i)).collect();
            let named =
                (!names.is_empty()).then(|| names.iter().map(|(i, n)| (n.clone(), group_text(&caps, *i))).collect());
            (Some(groups), named)
        } else {
            (None, None)
        };
        matches.push(Match { text: m.as_str().to_owned(), start, end, line: at_line, groups, named });
    }
    Found { count: matches.len(), truncated, matches }
}

/// Replace the first `limit` matches (all when `None`); returns the text and the count.
pub fn replace(re: &Regex, text: &str, replacement: &str, limit: Option<usize>, literal: bool) -> (String, usize) {
    let found = re.find_iter(text).count();
    let n = limit.unwrap_or(0);
    let out =
        if literal { re.replacen(text, n, regex::NoExpand(replacement)) } else { re.replacen(text, n, replacement) };
    (out.into_owned(), limit.map_or(found, |l| found.min(l)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_have_char_offsets_and_lines() {
        let re = compile(r"(?P<w>w\w+)", false, false).unwrap();
        let found = find_matches(&re, "héllo\nwörld wide", true, 1);
        assert!(found.truncated);
        let m = &found.matches[0];
        assert_eq!((m.text.as_str(), m.start, m.end, m.line), ("wörld", 6, 11, 2));
        assert_eq!(m.named.as_ref().unwrap()["w"].as_deref(), Some("wörld"));
    }

    #[test]
    fn replace_first_n() {
        let re = compile(r"(\d+)", false, false).unwrap();
        assert_eq!(replace(&re, "1 2 3", "<$1>", Some(2), false), ("<1> <2> 3".into(), 2));
        assert_eq!(replace(&re, "1 2", "$1", None, true), ("$1 $1".into(), 2));
    }
}
