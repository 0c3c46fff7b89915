//! One shape for every kind of resource, at two levels: [`ToolEntry`]
//! (what a stub or a saved list says: name, one line, access; computed once
//! per catalog snapshot) and [`ToolRecord`] (with the full description and
//! the input schema, once known).

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::mcp::{UpstreamServer, UpstreamTool};
use crate::contract::{Access, Kind, MAX_SUMMARY_CHARS, one_line};
use crate::load::{Manifest, Plugin};

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

/// Longest summary of a record (the contract's limit for stubs).
pub const SUMMARY_CHARS: usize = MAX_SUMMARY_CHARS;

/// A tool as a stub or a saved list describes it: enough to list, rank
/// and route it, not to call it (discovery levels 1 and 2).
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct ToolEntry {
    /// Name shown to models (`origin__action`, made valid and unique).
    pub name: String,
    /// The plugin or MCP server it belongs to.
    pub origin: String,
    /// The action (or server tool) within it.
    #[serde(skip)]
    pub action: String,
    /// Its category.
    pub category: Category,
    /// One line, at most 120 characters.
    pub summary: String,
    /// What calling it may change.
    #[serde(skip)]
    pub access: Access,
}

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
    /// Schema of its structured result, when it is a JSON object of a fixed
    /// shape (what MCP's `outputSchema` may hold).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<Value>,
}

impl ToolEntry {
    /// The entries of every action of `plugin`; `name` gives each its
    /// model-facing name.
    pub(crate) fn of_plugin(plugin: &Plugin, mut name: impl FnMut(&str) -> String) -> Vec<ToolEntry> {
        let stub = plugin.stub();
        let entry = |a: &crate::load::StubAction, name: String| ToolEntry {
            name,
            origin: plugin.name().to_owned(),
            action: a.name.clone(),
            category: stub.kind.into(),
            summary: a.summary.clone(),
            access: a.access,
        };
        stub.actions.iter().map(|a| entry(a, name(&a.name))).collect()
    }

    /// The entry of one tool of an MCP server.
    pub(crate) fn of_upstream(server: &UpstreamServer, tool: &UpstreamTool, name: String) -> ToolEntry {
        ToolEntry {
            name,
            origin: server.name.clone(),
            action: tool.name.clone(),
            category: Category::Mcp,
            summary: one_line(&tool.description, SUMMARY_CHARS),
            access: tool.access(),
        }
    }
}

impl ToolEntry {
    /// The entry a full record was made from.
    pub fn of_record(record: &ToolRecord) -> ToolEntry {
        ToolEntry {
            name: record.name.clone(),
            origin: record.origin.clone(),
            action: record.action.clone(),
            category: record.category,
            summary: record.summary.clone(),
            access: record.access,
        }
    }
}

impl ToolRecord {
    /// The full record of `entry`, an action of the plugin whose checked
    /// manifest is `manifest`.
    pub fn of_action(entry: &ToolEntry, manifest: &Manifest) -> Option<ToolRecord> {
        let spec = manifest.action(&entry.action)?;
        Some(ToolRecord {
            name: entry.name.clone(),
            origin: entry.origin.clone(),
            action: entry.action.clone(),
            summary: entry.summary.clone(),
            description: spec.description.clone(),
            category: entry.category,
            access: spec.access,
            input_schema: Some(model_schema(spec.input_schema.value().into_owned())),
            output_schema: spec.output_schema.as_ref().and_then(|o| output_schema(o.value().into_owned())),
        })
    }

    /// The full record of `entry`, a tool of `server`.
    pub fn of_upstream(entry: &ToolEntry, tool: &UpstreamTool) -> ToolRecord {
        ToolRecord {
            name: entry.name.clone(),
            origin: entry.origin.clone(),
            action: entry.action.clone(),
            summary: entry.summary.clone(),
            description: tool.description.clone(),
            category: Category::Mcp,
            access: entry.access,
            input_schema: Some(model_schema(tool.input_schema.clone())),
            output_schema: tool.output_schema.clone().and_then(output_schema),
        }
    }

    /// The record of `entry` as far as its stub knows it: no schema, the
    /// summary as the description.
    pub fn of_entry(entry: &ToolEntry) -> ToolRecord {
        ToolRecord {
            name: entry.name.clone(),
            origin: entry.origin.clone(),
            action: entry.action.clone(),
            summary: entry.summary.clone(),
            description: entry.summary.clone(),
            category: entry.category,
            access: entry.access,
            input_schema: None,
            output_schema: None,
        }
    }

    /// Its listing entry.
    pub fn entry(&self) -> ToolEntry {
        ToolEntry {
            name: self.name.clone(),
            origin: self.origin.clone(),
            action: self.action.clone(),
            category: self.category,
            summary: self.summary.clone(),
            access: self.access,
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

/// `schema` as an output schema for models and MCP clients: only an object
/// schema (a result that is an object, sent as `structuredContent`).
fn output_schema(schema: Value) -> Option<Value> {
    (schema.get("type").and_then(Value::as_str) == Some("object")).then(|| model_schema(schema))
}

/// A tool's input schema as models see it: the `$schema` and `title`
/// keywords (noise to a model, and tokens) removed at the root.
pub fn model_schema(mut schema: Value) -> Value {
    if let Some(root) = schema.as_object_mut() {
        root.remove("$schema");
        root.remove("title");
    }
    schema
}
