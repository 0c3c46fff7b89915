//! One line of Tier 1: a resource (or a tool) a meta-tool discloses, as
//! data. The text is written from it in one place ([`Line`]'s `Display`);
//! token accounting charges each line to the resource it names.

use std::fmt;

/// One Tier-1 line: `- {name}{rest}`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Line {
    /// The resource it is charged to: a plugin instance, a database, an
    /// MCP server, the plugin of a built-in tool, or a skill.
    pub origin: String,
    /// The name it shows first (the resource's, or a tool's).
    pub name: String,
    /// What follows the name: its purpose, and what it holds.
    pub rest: String,
    /// The group it joins when its section is folded to fit the prompt
    /// budget: the family of its name, unless its meta-tool says otherwise.
    pub group: String,
}

impl Line {
    /// A line for `origin` that shows `name` followed by `rest`.
    pub(crate) fn new(origin: impl Into<String>, name: impl Into<String>, rest: String) -> Line {
        let name = name.into();
        Line { origin: origin.into(), group: family(&name), name, rest }
    }

    /// The same line, in `group` when folded.
    pub(crate) fn in_group(self, group: impl Into<String>) -> Line {
        Line { group: group.into(), ..self }
    }

    /// A line showing `name` then `: {detail}`.
    pub(crate) fn described(origin: impl Into<String>, name: impl Into<String>, detail: &str) -> Line {
        Line::new(origin, name, format!(": {detail}"))
    }
}

impl fmt::Display for Line {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "- {}{}", self.name, self.rest)
    }
}

/// The family a name belongs to, for grouping: its first word that says
/// something (not `mcp`, `server`, `archived`, a version number), as
/// `github` for `github-mcp-server` and `server-github-archived`.
pub(crate) fn family(name: &str) -> String {
    const GENERIC: &[&str] = &["mcp", "server", "servers", "archived", "official", "api"];
    let words = name.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty());
    let telling = |w: &&str| !GENERIC.contains(&w.to_lowercase().as_str()) && !w.chars().all(|c| c.is_ascii_digit());
    let mut words = words.peekable();
    let first = words.peek().map(|w| w.to_lowercase());
    words.find(telling).map(str::to_lowercase).or(first).unwrap_or_else(|| name.to_lowercase())
}

/// Up to `max` names joined with `, `, then `…` and the total if there are more.
pub(crate) fn first_names<'a>(names: impl ExactSizeIterator<Item = &'a str>, max: usize) -> String {
    let total = names.len();
    let shown: Vec<&str> = names.take(max).collect();
    if total > max { format!("{}, … ({total})", shown.join(", ")) } else { shown.join(", ") }
}

/// `lines`, one per line of text.
pub(crate) fn joined(lines: &[Line]) -> String {
    lines.iter().map(Line::to_string).collect::<Vec<_>>().join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn families_skip_the_words_every_server_name_has() {
        assert_eq!(family("github-mcp-server"), "github");
        assert_eq!(family("server-github-archived"), "github");
        assert_eq!(family("mcp-server-time"), "time");
        assert_eq!(family("stripe-mcp-0.2.5"), "stripe");
        assert_eq!(family("mcp"), "mcp");
        assert_eq!(family("42-tools"), "tools");
    }

    #[test]
    fn a_line_is_its_name_then_the_rest() {
        let lines = [Line::described("db", "db", "Music store."), Line::new("srv", "srv", " (2 tools: a, b)".into())];
        assert_eq!(joined(&lines), "- db: Music store.\n- srv (2 tools: a, b)");
    }
}
