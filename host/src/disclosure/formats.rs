//! Tool definitions, and their shapes in the MCP, OpenAI and Anthropic APIs.

use serde::Serialize;
use serde_json::Value;

use crate::catalog::Category;
use crate::contract::Access;

/// One tool as a model is offered it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolDef {
    /// Name, `[A-Za-z0-9_-]{1,64}`.
    pub name: String,
    /// What it does (for meta-tools: also the stubs of their kind).
    pub description: String,
    /// JSON Schema of its arguments (an object schema).
    pub input_schema: Value,
    /// Its category.
    pub category: Category,
    /// What calling it may change; `None` for meta-tools, which only read.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub access: Option<Access>,
    /// Whether it is a meta-tool (discloses other tools).
    pub meta: bool,
}

/// MCP `Tool`, as in a `tools/list` result.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct McpTool<'a> {
    name: &'a str,
    description: &'a str,
    input_schema: &'a Value,
    annotations: McpAnnotations,
}

/// MCP tool annotations, from the access level.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct McpAnnotations {
    read_only_hint: bool,
    destructive_hint: bool,
    idempotent_hint: bool,
    open_world_hint: bool,
}

/// OpenAI Chat Completions function tool.
#[derive(Debug, Serialize)]
pub struct OpenAiTool<'a> {
    r#type: &'static str,
    function: OpenAiFunction<'a>,
}

/// The `function` of an OpenAI tool.
#[derive(Debug, Serialize)]
pub struct OpenAiFunction<'a> {
    name: &'a str,
    description: &'a str,
    parameters: &'a Value,
}

/// Anthropic Messages API tool.
#[derive(Debug, Serialize)]
pub struct AnthropicTool<'a> {
    name: &'a str,
    description: &'a str,
    input_schema: &'a Value,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    defer_loading: bool,
}

impl ToolDef {
    /// As an MCP `Tool`.
    pub fn to_mcp(&self) -> McpTool<'_> {
        let access = self.access.unwrap_or(crate::contract::Access::Read);
        McpTool {
            name: &self.name,
            description: &self.description,
            input_schema: &self.input_schema,
            annotations: McpAnnotations {
                read_only_hint: access == Access::Read,
                destructive_hint: access == Access::Admin,
                idempotent_hint: access == Access::Read,
                open_world_hint: matches!(self.category, Category::Connector | Category::Mcp),
            },
        }
    }

    /// As an OpenAI function tool.
    pub fn to_openai(&self) -> OpenAiTool<'_> {
        OpenAiTool {
            r#type: "function",
            function: OpenAiFunction {
                name: &self.name,
                description: &self.description,
                parameters: &self.input_schema,
            },
        }
    }

    /// As an Anthropic tool; `defer_loading` leaves it out of the prompt
    /// until tool search returns it.
    pub fn to_anthropic(&self, defer_loading: bool) -> AnthropicTool<'_> {
        AnthropicTool {
            name: &self.name,
            description: &self.description,
            input_schema: &self.input_schema,
            defer_loading,
        }
    }
}

impl crate::catalog::ToolRecord {
    /// Its definition, if its input schema is known.
    pub fn to_def(&self) -> Option<ToolDef> {
        Some(ToolDef {
            name: self.name.clone(),
            description: self.description.clone(),
            input_schema: self.input_schema.clone()?,
            category: self.category,
            access: Some(self.access),
            meta: false,
        })
    }
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

/// Cut `text` to one line of at most `max` characters, ending with `…` if cut.
pub fn one_line(text: &str, max: usize) -> String {
    let line = text.split(['\n', '\r']).map(str::trim).find(|l| !l.is_empty()).unwrap_or("");
    if line.chars().count() <= max {
        return line.to_owned();
    }
    let mut cut: String = line.chars().take(max.saturating_sub(1)).collect();
    if let Some(space) = cut.rfind(' ').filter(|&i| i > max / 2) {
        cut.truncate(space);
    }
    cut.push('…');
    cut
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_line_cuts_at_a_word() {
        assert_eq!(one_line("Short.\nMore", 80), "Short.");
        let cut = one_line("word ".repeat(40).trim(), 30);
        assert!(cut.chars().count() <= 30 && cut.ends_with('…'), "{cut}");
        assert_eq!(one_line("\n\n  first real line  \nsecond", 80), "first real line");
    }

    #[test]
    fn formats_follow_each_api() {
        let def = ToolDef {
            name: "calc__evaluate".into(),
            description: "Evaluate.".into(),
            input_schema: serde_json::json!({"type": "object"}),
            category: Category::Builtin,
            access: Some(Access::Read),
            meta: false,
        };
        let mcp = serde_json::to_value(def.to_mcp()).unwrap();
        assert_eq!(mcp["inputSchema"]["type"], "object");
        assert_eq!(mcp["annotations"]["readOnlyHint"], true);
        let openai = serde_json::to_value(def.to_openai()).unwrap();
        assert_eq!(openai["type"], "function");
        assert_eq!(openai["function"]["parameters"]["type"], "object");
        let anthropic = serde_json::to_value(def.to_anthropic(true)).unwrap();
        assert_eq!(anthropic["input_schema"]["type"], "object");
        assert_eq!(anthropic["defer_loading"], true);
        assert!(serde_json::to_value(def.to_anthropic(false)).unwrap().get("defer_loading").is_none());
    }
}
