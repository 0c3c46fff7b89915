//! What a snapshot serves and what it refused, for operators.

use schemars::JsonSchema;
use serde::Serialize;

use super::mcp::ServerState;
use super::snapshot::Catalog;

/// What the host serves and what it refused.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Status {
    /// The catalog version (changes with what is served).
    pub version: u64,
    /// Changes with every published snapshot, status included.
    pub revision: u64,
    /// Plugins served: name and origin.
    pub plugins: Vec<(String, String)>,
    /// Files not served: origin and why.
    pub rejected: Vec<(String, String)>,
    /// Plugins served by their last good version: name and why the newer file failed.
    pub stale: Vec<(String, String)>,
    /// Upstream MCP servers: whether their tools are known, whether they are failing.
    pub mcp_servers: Vec<ServerStatus>,
}

/// One upstream MCP server in the status.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ServerStatus {
    /// Its name.
    pub name: String,
    /// Whether it is a live server (else a saved tool list).
    pub live: bool,
    /// Its tools, as last listed.
    pub tools: usize,
    /// Listed, not listed yet, or failing (and why).
    #[serde(flatten)]
    pub state: ServerState,
}

impl Catalog {
    /// Its status: what it serves, what it refused, what went stale.
    pub fn status(&self) -> Status {
        Status {
            version: self.version(),
            revision: self.revision(),
            plugins: self.plugins().map(|p| (p.name().to_owned(), p.origin().to_string())).collect(),
            rejected: self.rejected().iter().map(|r| (shown(&r.origin), shown(&r.error.to_string()))).collect(),
            stale: self
                .stale()
                .map(|(name, s)| (name.to_owned(), shown(&format!("{}: {}", s.origin, s.error))))
                .collect(),
            mcp_servers: self
                .mcp_servers()
                .map(|s| ServerStatus {
                    name: s.name.clone(),
                    live: s.live,
                    tools: s.tools.len(),
                    state: match &s.state {
                        ServerState::Failing(reason) => ServerState::Failing(shown(reason)),
                        other => other.clone(),
                    },
                })
                .collect(),
        }
    }
}

/// Longest text of one status entry or log field about a file: what a
/// hostile file says about itself is never echoed whole.
const SHOWN_BYTES: usize = 512;

/// `text` cut to [`SHOWN_BYTES`] at a character boundary, with a note.
pub(crate) fn shown(text: &str) -> String {
    shown_bytes(text, SHOWN_BYTES)
}

/// `text` cut to `max` bytes at a character boundary, with a note.
pub(crate) fn shown_bytes(text: &str, max: usize) -> String {
    if text.len() <= max {
        return printable(text);
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}… ({} more bytes)", printable(&text[..end]), text.len() - end)
}

/// `text` with its control characters written as escapes (`\n`, `\u{1b}`):
/// a file name or a message can then neither forge a log line nor drive a
/// terminal.
pub fn printable(text: &str) -> String {
    if !text.chars().any(char::is_control) {
        return text.to_owned();
    }
    text.chars().map(|c| if c.is_control() { c.escape_default().to_string() } else { c.to_string() }).collect()
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
        assert!(cut.starts_with("xxx") && cut.ends_with("(89 more bytes)") && !cut.contains('\n'), "{cut}");
    }
}
