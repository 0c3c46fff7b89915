//! What a call gives back: the tool's [`Output`], typed by who produced it,
//! and the [`Facts`] of the call, carried together as one [`Answer`] from
//! the backend to the face that renders it. Nothing on the way parses it
//! again or guesses who answered.

use std::time::{Duration, SystemTime};

use rmcp::model::{CallToolResult, ContentBlock};
use serde_json::Value;

use crate::catalog::ToolEntry;
use crate::contract::Access;
use crate::error::{Error, Result};

/// What a tool produced.
#[derive(Debug, Clone, PartialEq)]
pub enum Output {
    /// A plugin's output (or a meta-tool's): one JSON value.
    Json(Value),
    /// An upstream MCP server's `CallToolResult`, passed on intact (every
    /// content block, `structuredContent`, `isError`; the protocol's own
    /// `_meta` keys dropped).
    Upstream(Box<CallToolResult>),
}

impl Output {
    /// Whether the tool itself reported a failure (an upstream result with
    /// `isError`; a plugin's failure is an [`Error`], never an output).
    pub fn is_error(&self) -> bool {
        match self {
            Output::Json(_) => false,
            Output::Upstream(result) => result.is_error.unwrap_or(false),
        }
    }

    /// The output as a value: a plugin's JSON, or an upstream result's
    /// `structuredContent`.
    pub fn value(&self) -> Option<&Value> {
        match self {
            Output::Json(value) => Some(value),
            Output::Upstream(result) => result.structured_content.as_ref(),
        }
    }

    /// The upstream result, when a server answered.
    pub fn upstream(&self) -> Option<&CallToolResult> {
        match self {
            Output::Json(_) => None,
            Output::Upstream(result) => Some(result),
        }
    }

    /// The text a model reads: a JSON output as JSON (a string as is); an
    /// upstream result's text blocks, one per line (its blocks as JSON
    /// when none of them is text).
    pub fn text(&self) -> String {
        match self {
            Output::Json(Value::String(text)) => text.clone(),
            Output::Json(other) => other.to_string(),
            Output::Upstream(result) => {
                let texts: Vec<&str> = result.content.iter().filter_map(|b| b.as_text()).map(|t| &*t.text).collect();
                if texts.is_empty() && !result.content.is_empty() {
                    serde_json::to_string(&result.content).unwrap_or_default()
                } else {
                    texts.join("\n")
                }
            }
        }
    }

    /// The output as one JSON value, as a non-MCP face prints it whole: a
    /// plugin's value, or an upstream `CallToolResult` in its wire form
    /// (without the result type, which belongs to a protocol revision).
    pub fn to_json(&self) -> Value {
        match self {
            Output::Json(value) => value.clone(),
            Output::Upstream(result) => {
                let mut result = result.as_ref().clone();
                result.result_type = None;
                serde_json::to_value(result).unwrap_or_default()
            }
        }
    }

    /// The output as one JSON value, taken (see [`to_json`](Self::to_json)).
    pub fn into_json(self) -> Value {
        match self {
            Output::Json(value) => value,
            upstream => upstream.to_json(),
        }
    }

    /// The bytes of its JSON, counted without writing it anywhere.
    pub fn size(&self) -> usize {
        match self {
            Output::Json(value) => super::fit::size(value),
            Output::Upstream(result) => super::fit::size(result),
        }
    }

    /// An upstream result's content blocks that are not text.
    pub fn other_blocks(&self) -> impl Iterator<Item = &ContentBlock> {
        self.upstream().into_iter().flat_map(|r| r.content.iter()).filter(|b| b.as_text().is_none())
    }
}

/// What is known of one call once it ended: what observes calls (the
/// audit log, metrics, traces) and what authorises them reads it here.
#[derive(Debug, Clone, PartialEq)]
pub struct Facts {
    /// The tool's model-facing name.
    pub tool: String,
    /// The plugin instance, database or server it belongs to.
    pub resource: String,
    /// The action within it.
    pub action: String,
    /// The access level the action declares.
    pub access: Access,
    /// The agent it was made for (the principal), if any.
    pub agent: Option<String>,
    /// The access token's subject, when the call came with one.
    pub principal: Option<String>,
    /// The OAuth client that token was issued to, if it says.
    pub client_id: Option<String>,
    /// The upstream MCP server that answered, when one did.
    pub server: Option<String>,
    /// When it started.
    pub started: SystemTime,
    /// How long it took.
    pub duration: Duration,
    /// Bytes of its input, as JSON.
    pub bytes_in: usize,
    /// Bytes of its output as passed on, as JSON; 0 on error.
    pub bytes_out: usize,
    /// The statuses of the HTTP responses a connector received, in order
    /// (redirect hops included).
    pub http_statuses: Vec<u16>,
    /// Whether the output was shortened to the resource's answer budget.
    pub cut: bool,
    /// What else the call did through its capabilities (refused requests,
    /// SQL statements).
    pub usage: crate::telemetry::Usage,
}

impl Facts {
    /// The facts of a call of `tool` starting now, with nothing measured yet.
    pub fn starting(tool: &ToolEntry, agent: Option<&str>) -> Facts {
        Facts {
            tool: tool.name.clone(),
            resource: tool.origin.clone(),
            action: tool.action.clone(),
            access: tool.access,
            agent: agent.map(str::to_owned),
            principal: None,
            client_id: None,
            server: None,
            started: SystemTime::now(),
            duration: Duration::ZERO,
            bytes_in: 0,
            bytes_out: 0,
            http_statuses: Vec::new(),
            cut: false,
            usage: crate::telemetry::Usage::default(),
        }
    }
}

/// One call's typed answer: the tool's output or why there is none, and
/// the facts of the call.
#[derive(Debug)]
pub struct Answer {
    /// The output, or the error.
    pub result: Result<Output>,
    /// What happened.
    pub facts: Facts,
}

impl Answer {
    /// The outcome in a word: `ok`, `tool_error` (an upstream result with
    /// `isError`), the kind a plugin gave its error (`denied`,
    /// `invalid_input`, `not_found`, `unavailable`, `failed`), or the
    /// host's error kind (`timeout`, `unknown_action`...), in snake case.
    pub fn outcome(&self) -> String {
        outcome(&self.result)
    }
}

/// The outcome of `result` in a word (see [`Answer::outcome`]).
pub fn outcome(result: &Result<Output>) -> String {
    let name = match result {
        Ok(output) if output.is_error() => return "tool_error".to_owned(),
        Ok(_) => return "ok".to_owned(),
        Err(Error::Guest { kind, .. }) => format!("{kind:?}"),
        Err(error) => format!("{:?}", error.kind()),
    };
    let mut snake = String::with_capacity(name.len() + 4);
    for (i, c) in name.chars().enumerate() {
        if c.is_ascii_uppercase() && i > 0 {
            snake.push('_');
        }
        snake.push(c.to_ascii_lowercase());
    }
    snake
}

#[cfg(test)]
mod tests {
    use rmcp::model::{CallToolResult, ContentBlock};
    use serde_json::json;

    use super::*;

    #[test]
    fn a_json_output_reads_as_its_json_and_a_string_as_itself() {
        assert_eq!(Output::Json(json!({"a": 1})).text(), r#"{"a":1}"#);
        assert_eq!(Output::Json(json!("plain")).text(), "plain");
        assert_eq!(Output::Json(json!(4)).value(), Some(&json!(4)));
    }

    #[test]
    fn an_upstream_result_reads_as_its_text_blocks() {
        let mut result = CallToolResult::success(vec![ContentBlock::text("one"), ContentBlock::text("two")]);
        result.structured_content = Some(json!({"n": 2}));
        let output = Output::Upstream(Box::new(result));
        assert_eq!(output.text(), "one\ntwo");
        assert_eq!(output.value(), Some(&json!({"n": 2})));
        assert!(!output.is_error());
        let image = Output::Upstream(Box::new(CallToolResult::error(vec![ContentBlock::image("AAA", "image/png")])));
        assert!(image.is_error() && image.text().contains("image/png"), "{}", image.text());
        assert_eq!(image.other_blocks().count(), 1);
        assert_eq!(outcome(&Ok(image)), "tool_error");
    }

    #[test]
    fn the_wire_form_of_an_upstream_result_has_no_result_type() {
        let output = Output::Upstream(Box::new(CallToolResult::success(vec![ContentBlock::text("x")])));
        let json = output.to_json();
        assert!(json.get("resultType").is_none(), "{json}");
        assert_eq!(json["content"][0]["text"], "x");
        assert_eq!(output.size(), crate::invoke::fit::size(output.upstream().unwrap()));
    }

    #[test]
    fn outcomes_are_snake_case_kinds() {
        assert_eq!(outcome(&Ok(Output::Json(Value::Null))), "ok");
        let error = Error::UnknownAction { plugin: "p".into(), action: "a".into(), known: vec![] };
        assert_eq!(outcome(&Err(error)), "unknown_action");
    }
}
