//! What the MCP face sends back: a call's outcome as a `CallToolResult`
//! (or the protocol error it is), and a catalog definition as an rmcp
//! `Tool`.

use rmcp::ErrorData;
use rmcp::model::{CallToolResult, ContentBlock, Tool};

use crate::disclosure::formats::ToolDef;
use crate::error::ErrorKind;
use crate::invoke::Output;
use crate::session::CallOutcome;

/// `outcome` as MCP answers it: a tool this server does not have is a
/// protocol error (-32602, as the spec asks); an upstream server's result
/// passes through intact, as a complete result (rmcp drops the result type
/// again for clients of a revision without it); a plugin's output is a
/// text block (and `structuredContent` when it is an object); any other
/// failure is a result with `isError` and the text a model can act on.
pub(super) fn render(outcome: CallOutcome) -> std::result::Result<CallToolResult, ErrorData> {
    if outcome.error.as_ref().is_some_and(|e| e.kind() == ErrorKind::UnknownTool) {
        return Err(ErrorData::invalid_params(outcome.text, None));
    }
    Ok(match outcome.output {
        Some(Output::Upstream(mut result)) => {
            result.result_type = Some(rmcp::model::ResultType::COMPLETE);
            *result
        }
        Some(Output::Json(value)) => {
            let mut result = CallToolResult::success(vec![ContentBlock::text(outcome.text)]);
            if value.is_object() {
                result.structured_content = Some(value);
            }
            result
        }
        None => CallToolResult::error(vec![ContentBlock::text(outcome.text)]),
    })
}

/// One definition as an rmcp `Tool` (through its MCP JSON form); a
/// definition rmcp cannot represent is left out, and logged.
pub(super) fn to_rmcp(def: &ToolDef) -> Option<Tool> {
    let converted = serde_json::to_value(def.to_mcp()).and_then(serde_json::from_value);
    converted.inspect_err(|error| tracing::warn!(tool = %def.name, %error, "tool left out of tools/list")).ok()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::error::Error;
    use crate::invoke::Output;
    use crate::session::CallOutcome;
    use rmcp::model::{CallToolResult, ContentBlock};

    fn outcome(output: Option<Output>, error: Option<Error>, text: &str) -> CallOutcome {
        CallOutcome { text: text.into(), is_error: error.is_some(), error, output, calls: Vec::new() }
    }

    #[test]
    fn a_plugins_object_is_text_and_structured_content() {
        let result = render(outcome(Some(Output::Json(json!({"value": 4}))), None, r#"{"value":4}"#)).unwrap();
        assert_eq!(result.structured_content, Some(json!({"value": 4})));
        assert_eq!(result.content[0].as_text().unwrap().text, r#"{"value":4}"#);
        assert_eq!(result.is_error, Some(false));
        let result = render(outcome(Some(Output::Json(json!("plain"))), None, "plain")).unwrap();
        assert!(result.structured_content.is_none());
    }

    #[test]
    fn an_upstream_result_passes_through_as_complete() {
        let mut upstream = CallToolResult::error(vec![ContentBlock::image("AAAA", "image/png")]);
        upstream.result_type = None;
        let result = render(outcome(Some(Output::Upstream(Box::new(upstream.clone()))), None, "")).unwrap();
        assert_eq!(result.result_type, Some(rmcp::model::ResultType::COMPLETE));
        assert_eq!((result.content, result.is_error), (upstream.content, Some(true)));
    }

    #[test]
    fn an_unknown_tool_is_a_protocol_error_and_the_rest_are_results() {
        let unknown = Error::UnknownTool { name: "x".into(), hint: "list the tools".into() };
        let error = render(outcome(None, Some(unknown), "no tool `x`")).unwrap_err();
        assert_eq!(error.code, rmcp::model::ErrorCode::INVALID_PARAMS);
        let busy = Error::Busy { plugin: "p".into(), action: "a".into(), reason: "full".into() };
        let result = render(outcome(None, Some(busy), "retry in a moment")).unwrap();
        assert_eq!(
            (result.is_error, result.content[0].as_text().unwrap().text.as_str()),
            (Some(true), "retry in a moment")
        );
    }
}
