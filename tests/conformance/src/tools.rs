//! The suite's `test_*` tools.

use std::sync::Arc;

use rmcp::ErrorData;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ElicitRequestParams, JsonObject,
    ProgressNotificationParam, ResourceContents, Tool,
};
#[allow(deprecated)] // logging and sampling: deprecated by SEP-2577, still part of 2025-11-25
use rmcp::model::{CreateMessageRequestParams, LoggingLevel};
use rmcp::service::{RequestContext, RoleServer};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::fixtures::{Fixtures, PNG, WAV, from_json};

/// No arguments.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct NoArgs {}

/// `test_sampling`'s argument.
#[derive(Deserialize, JsonSchema)]
struct SamplingArgs {
    /// The prompt to send to the LLM.
    prompt: String,
}

/// `test_elicitation`'s argument.
#[derive(Deserialize, JsonSchema)]
struct ElicitationArgs {
    /// The message to show the user.
    message: String,
}

/// `json_schema_2020_12_tool`'s input schema: the suite's own fixture
/// (`$defs` with `$anchor`, `allOf`/`anyOf`, `if`/`then`/`else`), which must
/// reach the client unchanged; it is data under test, not a schema of ours.
fn json_schema_2020_12() -> Arc<JsonObject> {
    Arc::new(from_json(serde_json::from_str(include_str!("json-schema-2020-12.json")).expect("fixture is JSON")))
}

/// `test_header_param`'s argument, mirrored in an HTTP header (SEP-2243).
#[derive(Deserialize, JsonSchema)]
struct RegionArgs {
    /// A region name; clients also send it as the `Mcp-Param-Region` header.
    #[schemars(extend("x-mcp-header" = "Region"))]
    region: String,
}

fn schema<T: JsonSchema>() -> Arc<JsonObject> {
    match serde_json::to_value(schemars::schema_for!(T)) {
        Ok(Value::Object(object)) => Arc::new(object),
        _ => unreachable!("a schema is an object"),
    }
}

/// Every fixture tool; `test_dynamic_tool` while `dynamic` is on.
pub fn all(dynamic: bool) -> Vec<Tool> {
    let none = schema::<NoArgs>;
    vec![
        Tool::new("test_simple_text", "Tests simple text content response", none()),
        Tool::new("test_image_content", "Tests image content response", none()),
        Tool::new("test_audio_content", "Tests audio content response", none()),
        Tool::new("test_embedded_resource", "Tests embedded resource content response", none()),
        Tool::new("test_multiple_content_types", "Tests a response with text, image and resource content", none()),
        Tool::new("test_tool_with_logging", "Tests a tool that emits log messages while it runs", none()),
        Tool::new("test_tool_with_progress", "Tests a tool that reports progress", none()),
        Tool::new("test_error_handling", "Tests error response handling", none()),
        Tool::new("test_sampling", "Tests server-initiated sampling", schema::<SamplingArgs>()),
        Tool::new("test_elicitation", "Tests server-initiated elicitation", schema::<ElicitationArgs>()),
        Tool::new("test_elicitation_sep1034_defaults", "Tests elicitation with default values (SEP-1034)", none()),
        Tool::new("test_elicitation_sep1330_enums", "Tests elicitation enum schemas (SEP-1330)", none()),
        Tool::new(
            "json_schema_2020_12_tool",
            "Tool with JSON Schema 2020-12 features (SEP-1613)",
            json_schema_2020_12(),
        ),
        Tool::new(
            "test_header_param",
            "Echoes a parameter clients mirror in a header (SEP-2243)",
            schema::<RegionArgs>(),
        ),
        Tool::new("test_logging_tool", "Logs at the level the request asked for, and only then", none()),
        Tool::new("test_trigger_tool_change", "Adds or removes test_dynamic_tool", none()),
        Tool::new("test_trigger_prompt_change", "Adds or removes test_dynamic_prompt", none()),
    ]
    .into_iter()
    .chain(crate::mrtr::tools(none))
    .chain(dynamic.then(|| Tool::new("test_dynamic_tool", "Comes and goes with test_trigger_tool_change", none())))
    .collect()
}

fn text(text: impl Into<String>) -> CallToolResponse {
    CallToolResult::success(vec![ContentBlock::text(text)]).into()
}

/// Run fixture tool `request.name`.
#[allow(deprecated)]
pub async fn call(
    fixtures: &Fixtures,
    request: CallToolRequestParams,
    context: RequestContext<RoleServer>,
) -> Result<CallToolResponse, ErrorData> {
    let args = Value::Object(request.arguments.clone().unwrap_or_default());
    let content = |blocks: Vec<ContentBlock>| Ok(CallToolResult::success(blocks).into());
    match request.name.as_ref() {
        "test_simple_text" => Ok(text("This is a simple text response for testing.")),
        "test_image_content" => content(vec![ContentBlock::image(PNG, "image/png")]),
        "test_audio_content" => content(vec![ContentBlock::audio(WAV, "audio/wav")]),
        "test_embedded_resource" => content(vec![ContentBlock::resource(
            ResourceContents::text("This is an embedded resource content.", "test://embedded-resource")
                .with_mime_type("text/plain"),
        )]),
        "test_multiple_content_types" => content(vec![
            ContentBlock::text("Multiple content types test:"),
            ContentBlock::image(PNG, "image/png"),
            ContentBlock::resource(
                ResourceContents::text(
                    json!({ "test": "data", "value": 123 }).to_string(),
                    "test://mixed-content-resource",
                )
                .with_mime_type("application/json"),
            ),
        ]),
        "test_tool_with_logging" => {
            for message in ["Tool execution started", "Tool processing data", "Tool execution completed"] {
                fixtures.log(&context, LoggingLevel::Info, message).await;
            }
            Ok(text("Tool with logging executed successfully"))
        }
        "test_tool_with_progress" => {
            let token = context.meta.get_progress_token();
            if let Some(token) = &token {
                for step in [0.0, 50.0, 100.0] {
                    let progress: ProgressNotificationParam = from_json(json!({
                        "progressToken": token, "progress": step, "total": 100.0,
                        "message": format!("Completed step {step} of 100"),
                    }));
                    let _ = context.peer.notify_progress(progress).await;
                }
            }
            Ok(text(token.map(|t| serde_json::to_string(&t).unwrap_or_default()).unwrap_or_else(|| "0".into())))
        }
        "test_error_handling" => {
            Ok(CallToolResult::error(vec![ContentBlock::text("This tool intentionally returns an error for testing")])
                .into())
        }
        "test_sampling" => {
            let args: SamplingArgs = parse(args)?;
            let params: CreateMessageRequestParams = from_json(json!({
                "messages": [{ "role": "user", "content": { "type": "text", "text": args.prompt } }],
                "maxTokens": 100,
            }));
            Ok(match context.peer.create_message(params).await {
                Ok(result) => {
                    let reply = serde_json::to_value(&result.message.content).unwrap_or_default();
                    let reply = reply
                        .get("text")
                        .or_else(|| reply.get(0).and_then(|c| c.get("text")))
                        .and_then(Value::as_str)
                        .unwrap_or("No response")
                        .to_owned();
                    text(format!("LLM response: {reply}"))
                }
                Err(e) => text(format!("Sampling not supported or error: {e}")),
            })
        }
        "test_elicitation" => {
            let args: ElicitationArgs = parse(args)?;
            let schema = json!({
                "type": "object",
                "properties": { "response": { "type": "string", "description": "User's response" } },
                "required": ["response"],
            });
            elicit(&context, &args.message, schema, "User response").await
        }
        "test_elicitation_sep1034_defaults" => {
            let schema = json!({
                "type": "object",
                "properties": {
                    "name": { "type": "string", "description": "User name", "default": "John Doe" },
                    "age": { "type": "integer", "description": "User age", "default": 30 },
                    "score": { "type": "number", "description": "User score", "default": 95.5 },
                    "status": { "type": "string", "description": "User status",
                                "enum": ["active", "inactive", "pending"], "default": "active" },
                    "verified": { "type": "boolean", "description": "Verification status", "default": true },
                },
                "required": [],
            });
            elicit(&context, "Please review and update the form fields with defaults", schema, "Elicitation completed")
                .await
        }
        "test_elicitation_sep1330_enums" => {
            let schema = json!({
                "type": "object",
                "properties": {
                    "untitledSingle": { "type": "string", "description": "Select one option",
                                        "enum": ["option1", "option2", "option3"] },
                    "titledSingle": { "type": "string", "description": "Select one option with titles",
                                      "oneOf": [{ "const": "value1", "title": "First Option" },
                                                { "const": "value2", "title": "Second Option" },
                                                { "const": "value3", "title": "Third Option" }] },
                    "legacyEnum": { "type": "string", "description": "Select one option (legacy)",
                                    "enum": ["opt1", "opt2", "opt3"],
                                    "enumNames": ["Option One", "Option Two", "Option Three"] },
                    "untitledMulti": { "type": "array", "description": "Select multiple options",
                                       "minItems": 1, "maxItems": 3,
                                       "items": { "type": "string", "enum": ["option1", "option2", "option3"] } },
                    "titledMulti": { "type": "array", "description": "Select multiple options with titles",
                                     "minItems": 1, "maxItems": 3,
                                     "items": { "anyOf": [{ "const": "value1", "title": "First Choice" },
                                                          { "const": "value2", "title": "Second Choice" },
                                                          { "const": "value3", "title": "Third Choice" }] } },
                },
                "required": [],
            });
            elicit(&context, "Please select options from the enum fields", schema, "Elicitation completed").await
        }
        "json_schema_2020_12_tool" => Ok(text(format!("JSON Schema 2020-12 tool called with: {args}"))),
        "test_logging_tool" => {
            fixtures.log(&context, LoggingLevel::Debug, "debug detail").await;
            fixtures.log(&context, LoggingLevel::Info, "working").await;
            fixtures.log(&context, LoggingLevel::Warning, "a warning").await;
            Ok(text("Logged what the request's level allows"))
        }
        "test_trigger_tool_change" => Ok(text(fixtures.toggle_tool().await)),
        "test_trigger_prompt_change" => Ok(text(fixtures.toggle_prompt().await)),
        "test_header_param" => Ok(text(format!("Region: {}", parse::<RegionArgs>(args)?.region))),
        "test_dynamic_tool" => Ok(text("The dynamic tool answered")),
        name if crate::mrtr::is_tool(name) => crate::mrtr::call(&request, &context),
        other => Err(ErrorData::invalid_params(format!("no fixture tool {other}"), None)),
    }
}

fn parse<T: serde::de::DeserializeOwned>(args: Value) -> Result<T, ErrorData> {
    serde_json::from_value(args).map_err(|e| ErrorData::invalid_params(e.to_string(), None))
}

async fn elicit(
    context: &RequestContext<RoleServer>,
    message: &str,
    schema: Value,
    label: &str,
) -> Result<CallToolResponse, ErrorData> {
    let params: ElicitRequestParams =
        from_json(json!({ "mode": "form", "message": message, "requestedSchema": schema }));
    Ok(match context.peer.create_elicitation(params).await {
        Ok(result) => text(format!(
            "{label}: action={}, content={}",
            serde_json::to_value(&result.action).unwrap_or_default().as_str().unwrap_or("unknown"),
            result.content.unwrap_or_else(|| json!({}))
        )),
        Err(e) => text(format!("Elicitation not supported or error: {e}")),
    })
}
