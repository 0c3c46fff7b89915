//! The unified tool record: one shape for every kind of resource.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::catalog::mcp::{McpServer, McpTool};
use crate::contract::{Access, Kind};
use crate::disclosure::formats::{model_schema, one_line};
use crate::load::Plugin;

/// Which meta-tool discloses a resource, and which per-agent filter applies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, schemars::JsonSchema)]
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

impl Category {
    /// Every category.
    pub fn all() -> std::collections::BTreeSet<Category> {
        [Category::Builtin, Category::Connector, Category::Database, Category::Mcp, Category::Skill].into()
    }

    /// Lower-case name.
    pub fn as_str(self) -> &'static str {
        match self {
            Category::Builtin => "builtin",
            Category::Connector => "connector",
            Category::Database => "database",
            Category::Mcp => "mcp",
            Category::Skill => "skill",
        }
    }
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

/// Longest summary of a record.
pub const SUMMARY_CHARS: usize = 120;

/// One callable tool, as every face and meta-tool sees it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolRecord {
    /// Name shown to models (`origin__action`, made valid and unique).
    pub name: String,
    /// The plugin or MCP server it belongs to.
    pub origin: String,
    /// The action (or server tool) within it.
    pub action: String,
    /// One line, at most 120 characters.
    pub summary: String,
    /// The full description when known (else the summary).
    pub description: String,
    /// Its category.
    pub category: Category,
    /// What calling it may change.
    pub access: Access,
    /// Full input schema, once known (Tier 2).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub input_schema: Option<Value>,
}

impl ToolRecord {
    /// The records of every action of `plugin`; `name` gives each its
    /// model-facing name.
    pub fn of_plugin(plugin: &Plugin, name: impl Fn(&str) -> String) -> Vec<ToolRecord> {
        let stub = plugin.stub();
        let manifest = plugin.manifest();
        stub.actions
            .iter()
            .map(|a| {
                let spec = manifest.and_then(|m| m.action(&a.name));
                ToolRecord {
                    name: name(&a.name),
                    origin: stub.name.clone(),
                    action: a.name.clone(),
                    summary: a.summary.clone(),
                    description: spec.map(|s| s.description.clone()).unwrap_or_else(|| a.summary.clone()),
                    category: stub.kind.into(),
                    access: a.access,
                    input_schema: spec.map(|s| model_schema(s.input_schema.clone())),
                }
            })
            .collect()
    }

    /// The record of one tool of an MCP server.
    pub fn of_mcp(server: &McpServer, tool: &McpTool, name: String) -> ToolRecord {
        let hint = |key: &str| tool.annotations.as_ref().and_then(|a| a.get(key)).and_then(Value::as_bool);
        // MCP's defaults: not read-only, destructive.
        let access = if hint("readOnlyHint") == Some(true) {
            Access::Read
        } else if hint("destructiveHint") == Some(false) {
            Access::Write
        } else {
            Access::Admin
        };
        ToolRecord {
            name,
            origin: server.name.clone(),
            action: tool.name.clone(),
            summary: one_line(&tool.description, SUMMARY_CHARS),
            description: tool.description.clone(),
            category: crate::catalog::Category::Mcp,
            access,
            input_schema: Some(model_schema(tool.input_schema.clone())),
        }
    }

    /// The names of the top-level properties of its input schema, if known.
    pub fn parameter_names(&self) -> Vec<&str> {
        self.input_schema
            .as_ref()
            .and_then(|s| s.get("properties"))
            .and_then(Value::as_object)
            .map(|p| p.keys().map(String::as_str).collect())
            .unwrap_or_default()
    }
}
