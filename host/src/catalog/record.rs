//! The unified tool record: one shape for every kind of resource.

use serde::Serialize;
use serde_json::Value;

use crate::contract::{Access, Kind};
use crate::load::Plugin;

/// Which meta-tool discloses a resource, and which per-agent filter applies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Category {
    /// A built-in tool plugin.
    Builtin,
    /// An API connector.
    Connector,
    /// A database adapter.
    Database,
    /// A tool of an MCP server.
    Mcp,
    /// An Agent Skill.
    Skill,
}

impl From<Kind> for Category {
    fn from(kind: Kind) -> Self {
        match kind {
            Kind::Tool => Category::Builtin,
            Kind::Connector => Category::Connector,
            Kind::Database => Category::Database,
        }
    }
}

/// One callable tool, as every face and meta-tool sees it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolRecord {
    /// Name shown to models: `plugin__action`.
    pub name: String,
    /// The plugin (or server, or skill) it belongs to.
    pub origin: String,
    /// The action within it.
    pub action: String,
    /// One line on what it does.
    pub summary: String,
    /// Its category.
    pub category: Category,
    /// What calling it may change.
    pub access: Access,
    /// Full input schema, once known (Tier 2).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub input_schema: Option<Value>,
}

impl ToolRecord {
    /// The records of every action of `plugin`.
    pub fn of_plugin(plugin: &Plugin) -> Vec<ToolRecord> {
        let stub = plugin.stub();
        let manifest = plugin.manifest();
        stub.actions
            .iter()
            .map(|a| ToolRecord {
                name: format!("{}__{}", stub.name, a.name),
                origin: stub.name.clone(),
                action: a.name.clone(),
                summary: a.summary.clone(),
                category: stub.kind.into(),
                access: a.access,
                input_schema: manifest.and_then(|m| m.action(&a.name)).map(|s| s.input_schema.clone()),
            })
            .collect()
    }
}
