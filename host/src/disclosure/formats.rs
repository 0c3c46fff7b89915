//! Tool definitions, and their shapes in the MCP, OpenAI and Anthropic APIs.

use std::borrow::Cow;

use serde::Serialize;
use serde_json::Value;

use super::strict;
use crate::catalog::{Category, ToolRecord};
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
    /// JSON Schema of its result, when that is an object of a fixed shape.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<Value>,
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
    #[serde(skip_serializing_if = "Option::is_none")]
    output_schema: Option<&'a Value>,
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
    parameters: Cow<'a, Value>,
    /// Present in the strict variant: whether these parameters are strict.
    #[serde(skip_serializing_if = "Option::is_none")]
    strict: Option<bool>,
}

/// OpenAI Responses API function tool (flat, with `strict`).
#[derive(Debug, Serialize)]
pub struct OpenAiResponsesTool<'a> {
    r#type: &'static str,
    name: &'a str,
    description: &'a str,
    parameters: Cow<'a, Value>,
    /// Whether the parameters are in strict mode's subset (see [`strict`]).
    strict: bool,
}

/// Which OpenAI schema a definition is exported with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpenAiSchema {
    /// The tool's own schema (without non-standard `format`s); `strict: false`.
    Exact,
    /// Rewritten for strict mode where its meaning can be kept
    /// ([`strict::strict_schema`]); the exact one with `strict: false` where not.
    Strict,
}

/// The `format` values JSON Schema defines; others (`double`, `int32`,
/// `uint`, which schemars writes for Rust numbers) mean nothing to a
/// provider and some refuse them.
const STANDARD_FORMATS: &[&str] = &[
    "date-time",
    "date",
    "time",
    "duration",
    "email",
    "idn-email",
    "hostname",
    "idn-hostname",
    "ipv4",
    "ipv6",
    "uri",
    "uri-reference",
    "iri",
    "iri-reference",
    "uuid",
    "uri-template",
    "json-pointer",
    "relative-json-pointer",
    "regex",
];

/// `schema` without `format` values outside JSON Schema's own (borrowed
/// when it has none).
pub fn portable(schema: &Value) -> Cow<'_, Value> {
    fn nonstandard(value: &Value) -> bool {
        match value {
            Value::Object(map) => map.iter().any(|(key, v)| {
                (key == "format" && v.as_str().is_some_and(|f| !STANDARD_FORMATS.contains(&f))) || nonstandard(v)
            }),
            Value::Array(items) => items.iter().any(nonstandard),
            _ => false,
        }
    }
    fn strip(value: &mut Value) {
        match value {
            Value::Object(map) => {
                if map.get("format").and_then(Value::as_str).is_some_and(|f| !STANDARD_FORMATS.contains(&f)) {
                    map.remove("format");
                }
                map.values_mut().for_each(strip);
            }
            Value::Array(items) => items.iter_mut().for_each(strip),
            _ => {}
        }
    }
    if !nonstandard(schema) {
        return Cow::Borrowed(schema);
    }
    let mut owned = schema.clone();
    strip(&mut owned);
    Cow::Owned(owned)
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
    /// The definition of `record`, if its input schema is known.
    pub fn of(record: &ToolRecord) -> Option<ToolDef> {
        Some(ToolDef {
            name: record.name.clone(),
            description: record.description.clone(),
            input_schema: record.input_schema.clone()?,
            output_schema: record.output_schema.clone(),
            category: record.category,
            access: Some(record.access),
            meta: false,
        })
    }

    /// As an MCP `Tool`.
    pub fn to_mcp(&self) -> McpTool<'_> {
        let access = self.access.unwrap_or(Access::Read);
        McpTool {
            name: &self.name,
            description: &self.description,
            input_schema: &self.input_schema,
            output_schema: self.output_schema.as_ref(),
            annotations: McpAnnotations {
                read_only_hint: access == Access::Read,
                destructive_hint: access == Access::Admin,
                idempotent_hint: access == Access::Read,
                open_world_hint: matches!(self.category, Category::Connector | Category::Mcp),
            },
        }
    }

    /// As an OpenAI Chat Completions function tool.
    pub fn to_openai(&self, schema: OpenAiSchema) -> OpenAiTool<'_> {
        let (parameters, strict) = self.openai_parameters(schema);
        OpenAiTool {
            r#type: "function",
            function: OpenAiFunction {
                name: &self.name,
                description: &self.description,
                parameters,
                strict: (schema == OpenAiSchema::Strict).then_some(strict),
            },
        }
    }

    /// As an OpenAI Responses API function tool.
    pub fn to_openai_responses(&self, schema: OpenAiSchema) -> OpenAiResponsesTool<'_> {
        let (parameters, strict) = self.openai_parameters(schema);
        OpenAiResponsesTool { r#type: "function", name: &self.name, description: &self.description, parameters, strict }
    }

    /// The parameters to export, and whether they are strict.
    fn openai_parameters(&self, schema: OpenAiSchema) -> (Cow<'_, Value>, bool) {
        if schema == OpenAiSchema::Strict {
            match strict::strict_schema(&self.input_schema) {
                Ok(rewritten) => return (Cow::Owned(rewritten), true),
                Err(reason) => tracing::debug!(tool = %self.name, %reason, "exported without strict mode"),
            }
        }
        (portable(&self.input_schema), false)
    }

    /// The compact JSON a model is sent of it (name, description, input
    /// schema): what token accounting counts.
    pub fn sent(&self) -> String {
        serde_json::to_string(&self.to_anthropic(false)).expect("a definition serializes")
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nonstandard_formats_are_left_out_for_providers() {
        let schema = serde_json::json!({"type": "object", "properties": {
            "ratio": {"type": "number", "format": "double"},
            "when": {"type": "string", "format": "date-time"},
            "items": {"type": "array", "items": {"type": "integer", "format": "uint32"}}
        }});
        let portable = portable(&schema);
        assert!(matches!(portable, Cow::Owned(_)));
        assert!(portable["properties"]["ratio"].get("format").is_none());
        assert!(portable["properties"]["items"]["items"].get("format").is_none());
        assert_eq!(portable["properties"]["when"]["format"], "date-time");
        let plain = serde_json::json!({"type": "object"});
        assert!(matches!(super::portable(&plain), Cow::Borrowed(_)));
    }

    #[test]
    fn formats_follow_each_api() {
        let def = ToolDef {
            name: "calc__evaluate".into(),
            description: "Evaluate.".into(),
            input_schema: serde_json::json!({"type": "object"}),
            output_schema: None,
            category: Category::Builtin,
            access: Some(Access::Read),
            meta: false,
        };
        let mcp = serde_json::to_value(def.to_mcp()).unwrap();
        assert_eq!(mcp["inputSchema"]["type"], "object");
        assert_eq!(mcp["annotations"]["readOnlyHint"], true);
        let openai = serde_json::to_value(def.to_openai(OpenAiSchema::Exact)).unwrap();
        assert_eq!(openai["type"], "function");
        assert_eq!(openai["function"]["parameters"]["type"], "object");
        assert!(openai["function"].get("strict").is_none());
        let responses = serde_json::to_value(def.to_openai_responses(OpenAiSchema::Exact)).unwrap();
        assert_eq!((&responses["type"], &responses["name"]), (&"function".into(), &"calc__evaluate".into()));
        assert_eq!((&responses["parameters"]["type"], &responses["strict"]), (&"object".into(), &false.into()));
        let strict = serde_json::to_value(def.to_openai_responses(OpenAiSchema::Strict)).unwrap();
        assert_eq!(strict["strict"], true);
        assert_eq!(strict["parameters"]["additionalProperties"], false);
        let strict = serde_json::to_value(def.to_openai(OpenAiSchema::Strict)).unwrap();
        assert_eq!(strict["function"]["strict"], true);
        let anthropic = serde_json::to_value(def.to_anthropic(true)).unwrap();
        assert_eq!(anthropic["input_schema"]["type"], "object");
        assert_eq!(anthropic["defer_loading"], true);
        assert!(serde_json::to_value(def.to_anthropic(false)).unwrap().get("defer_loading").is_none());
    }
}
