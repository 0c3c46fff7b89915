//! The suite's `test_*` prompts.

use rmcp::ErrorData;
use rmcp::model::{GetPromptRequestParams, GetPromptResponse, GetPromptResult, ListPromptsResult};
use serde_json::{Value, json};

use crate::fixtures::{PNG, from_json};

/// `prompts/list`; `test_dynamic_prompt` while `dynamic` is on.
pub fn list(dynamic: bool) -> ListPromptsResult {
    let mut result: ListPromptsResult = from_json(json!({ "resultType": "complete", "prompts": [
        { "name": "test_simple_prompt", "title": "Simple Test Prompt",
          "description": "A simple prompt without arguments" },
        { "name": "test_prompt_with_arguments", "title": "Prompt With Arguments",
          "description": "A prompt with required arguments",
          "arguments": [{ "name": "arg1", "description": "First test argument", "required": true },
                        { "name": "arg2", "description": "Second test argument", "required": true }] },
        { "name": "test_prompt_with_embedded_resource", "title": "Prompt With Embedded Resource",
          "description": "A prompt that includes an embedded resource",
          "arguments": [{ "name": "resourceUri", "description": "URI of the resource to embed", "required": true }] },
        { "name": "test_prompt_with_image", "title": "Prompt With Image",
          "description": "A prompt that includes image content" },
        { "name": "test_input_required_result_prompt",
          "description": "Asks the client for context (InputRequiredResult) before it renders" },
    ]}));
    if dynamic {
        result.prompts.push(from_json(json!({ "name": "test_dynamic_prompt",
            "description": "Comes and goes with test_trigger_prompt_change" })));
    }
    result
}

/// `prompts/get`.
pub fn get(request: &GetPromptRequestParams) -> Result<GetPromptResponse, ErrorData> {
    let arg = |name: &str| -> Result<String, ErrorData> {
        request
            .arguments
            .as_ref()
            .and_then(|args| args.get(name))
            .map(|value| match value {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            })
            .ok_or_else(|| ErrorData::invalid_params(format!("prompt {} needs argument {name}", request.name), None))
    };
    let user = |content: Value| json!({ "role": "user", "content": content });
    let messages = match request.name.as_str() {
        "test_simple_prompt" => vec![user(json!({ "type": "text", "text": "This is a simple prompt for testing." }))],
        "test_prompt_with_arguments" => {
            let (arg1, arg2) = (arg("arg1")?, arg("arg2")?);
            vec![user(
                json!({ "type": "text", "text": format!("Prompt with arguments: arg1='{arg1}', arg2='{arg2}'") }),
            )]
        }
        "test_prompt_with_embedded_resource" => vec![
            user(json!({ "type": "resource", "resource": {
                "uri": arg("resourceUri")?, "mimeType": "text/plain", "text": "Embedded resource content for testing." } })),
            user(json!({ "type": "text", "text": "Please process the embedded resource above." })),
        ],
        "test_prompt_with_image" => vec![
            user(json!({ "type": "image", "data": PNG, "mimeType": "image/png" })),
            user(json!({ "type": "text", "text": "Please analyze the image above." })),
        ],
        "test_dynamic_prompt" => vec![user(json!({ "type": "text", "text": "This prompt comes and goes." }))],
        "test_input_required_result_prompt" => {
            return crate::mrtr::prompt(&request.input_responses.clone().unwrap_or_default());
        }
        other => return Err(ErrorData::invalid_params(format!("no prompt {other}"), None)),
    };
    let result: GetPromptResult = from_json(json!({ "resultType": "complete", "messages": messages }));
    Ok(result.into())
}
