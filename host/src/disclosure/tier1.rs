//! The Tier-1 text: what exists, one short block per kind.
//!
//! The same stub lines appear in the descriptions of the meta-tools, so a
//! client that drops the system prompt (or one that drops tool
//! descriptions) still sees them. Deterministic: sorted by name, actions in
//! the author's order, so the text is byte-identical across runs and
//! provider prompt caches hit.

use std::fmt::Write;

use crate::disclosure::meta_tools::{self, View};
use crate::disclosure::policy::Policy;

/// Render the Tier-1 text for `view` under `policy`.
pub(crate) fn render(view: &View<'_>, policy: &Policy) -> String {
    let offered = |name: &str| meta_tools::find(name).is_some_and(|m| m.definition(view).is_some());
    let mut out = String::from(
        "Tools are disclosed on demand. Each section below lists what exists; call the tool named in its \
         heading to get full definitions or results.\n",
    );
    let mut section = |title: &str, lines: Vec<String>| {
        if !lines.is_empty() {
            let _ = write!(out, "\n## {title}\n{}\n", lines.join("\n"));
        }
    };
    if offered("read_skill") {
        section("Skills (read_skill)", meta_tools::skill_lines(view));
    }
    if offered("connector") {
        section("Connectors (connector)", meta_tools::connector_lines(view));
    }
    if offered("database") {
        section("Databases (database)", meta_tools::database_lines(view));
    }
    if offered("mcp") {
        section("MCP servers (mcp)", meta_tools::mcp_lines(view));
    }
    if offered("request_tools") {
        section("More built-in tools (request_tools)", meta_tools::builtin_lines(view));
    }
    if crate::session::inline_skills(policy) {
        for skill in view.catalog.skills() {
            let body = skill.body().unwrap_or_else(|e| format!("(cannot read: {e})"));
            let _ = write!(out, "\n## Skill: {}\n{}\n\n{}\n", skill.name, skill.description, body);
        }
    }
    if offered("search_tools") {
        out.push_str("\nsearch_tools finds any tool or skill by what it does.\n");
    }
    out
}
