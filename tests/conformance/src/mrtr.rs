//! The 2026-07-28 multi-round-trip fixtures: tools (and one prompt) that
//! answer `InputRequiredResult` until the client sends the input they asked
//! for, with integrity-protected `requestState` where a flow has rounds.

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::sync::{Arc, LazyLock};

use rmcp::ErrorData;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ClientCapabilities, ContentBlock, GetPromptResponse,
    InputRequiredResult, InputResponses, JsonObject, RequestStateCodec, SealOptions, Tool,
};
use rmcp::service::{RequestContext, RoleServer};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::fixtures::from_json;

/// Seals `requestState` with a key made fresh for this process.
static CODEC: LazyLock<RequestStateCodec> = LazyLock::new(|| {
    let key: Vec<u8> = (0..4).flat_map(|_| RandomState::new().build_hasher().finish().to_le_bytes()).collect();
    RequestStateCodec::try_new(key).expect("a 32-byte key")
});

/// What a sealed `requestState` carries.
#[derive(Serialize, Deserialize)]
struct State {
    round: u32,
}

const NAMES: &[(&str, &str)] = &[
    ("test_input_required_result_elicitation", "Asks the client for a name, then greets it"),
    ("test_input_required_result_sampling", "Asks the client's model a question, then answers with its reply"),
    ("test_input_required_result_list_roots", "Asks for the client's roots, then lists them"),
    ("test_input_required_result_request_state", "Asks for a confirmation and round-trips a sealed requestState"),
    ("test_input_required_result_multiple_inputs", "Asks for an elicitation, a sampling and the roots at once"),
    ("test_input_required_result_multi_round", "Asks two questions in two rounds"),
    ("test_input_required_result_tampered_state", "Rejects a requestState that fails its integrity check"),
    ("test_input_required_result_capabilities", "Asks only for what the client declared it can answer"),
    ("test_streaming_elicitation", "Asks for input through an InputRequiredResult, never a request"),
    ("test_missing_capability", "Needs the client's sampling capability"),
];

/// The MRTR fixture tools.
pub fn tools(schema: fn() -> Arc<JsonObject>) -> Vec<Tool> {
    NAMES.iter().map(|(name, description)| Tool::new(*name, *description, schema())).collect()
}

/// Whether `name` is an MRTR fixture tool.
pub fn is_tool(name: &str) -> bool {
    NAMES.iter().any(|(n, _)| *n == name)
}

fn elicit(message: &str, field: &str, kind: &str) -> Value {
    json!({ "method": "elicitation/create", "params": {
        "message": message,
        "requestedSchema": { "type": "object", "properties": { field: { "type": kind } }, "required": [field] },
    }})
}

fn sample(text: &str, max_tokens: u32) -> Value {
    json!({ "method": "sampling/createMessage", "params": {
        "messages": [{ "role": "user", "content": { "type": "text", "text": text } }],
        "maxTokens": max_tokens,
    }})
}

fn roots() -> Value {
    json!({ "method": "roots/list", "params": {} })
}

/// An `InputRequiredResult` asking for `requests`, with `state` sealed to `tool`.
fn ask(tool: &str, requests: &[(&str, Value)], state: Option<State>) -> InputRequiredResult {
    let requests: serde_json::Map<String, Value> =
        requests.iter().map(|(key, request)| ((*key).to_owned(), request.clone())).collect();
    let state = state.map(|state| {
        CODEC.seal_json_with(&state, &SealOptions::new().associated_data(tool.as_bytes())).expect("state serializes")
    });
    from_json(json!({ "resultType": "input_required", "inputRequests": requests, "requestState": state }))
}

fn done(text: impl Into<String>) -> CallToolResponse {
    CallToolResult::success(vec![ContentBlock::text(text)]).into()
}

/// The round a retry is in: 1 without state, else what its sealed state says.
fn round(tool: &str, state: Option<&str>) -> Result<u32, ErrorData> {
    match state {
        None => Ok(1),
        Some(sealed) => CODEC
            .open_json_with::<State>(sealed, tool.as_bytes())
            .map(|state| state.round)
            .map_err(|e| ErrorData::invalid_params(format!("requestState failed its integrity check: {e}"), None)),
    }
}

/// The client's answer to input request `key`, checked for its shape.
fn answer<'a>(responses: &'a InputResponses, key: &str, method: &str) -> Result<Option<&'a Value>, ErrorData> {
    let Some(response) = responses.get(key) else { return Ok(None) };
    let well_formed = match method {
        "elicitation/create" => response.get("action").and_then(Value::as_str).is_some(),
        "sampling/createMessage" => response.get("content").is_some_and(|c| c.is_object() || c.is_array()),
        _ => response.get("roots").is_some_and(Value::is_array),
    };
    if well_formed {
        Ok(Some(response))
    } else {
        Err(ErrorData::invalid_params(format!("inputResponses.{key} is not a valid {method} result"), None))
    }
}

fn elicited(response: &Value, field: &str) -> String {
    match response.get("content").and_then(|c| c.get(field)) {
        Some(Value::String(s)) => s.clone(),
        Some(other) => other.to_string(),
        None => "(declined)".into(),
    }
}

fn sampled(response: &Value) -> String {
    let content = response.get("content");
    let first = content.and_then(|c| if c.is_array() { c.get(0) } else { Some(c) });
    first.and_then(|c| c.get("text")).and_then(Value::as_str).unwrap_or("(no text)").to_owned()
}

/// Run MRTR fixture tool `request.name`.
pub fn call(
    request: &CallToolRequestParams,
    context: &RequestContext<RoleServer>,
) -> Result<CallToolResponse, ErrorData> {
    let tool = request.name.as_ref();
    let responses = request.input_responses.clone().unwrap_or_default();
    let state = request.request_state.as_deref();
    let caps = context.client_capabilities().unwrap_or_default();
    let name_question = || elicit("What is your name?", "name", "string");
    Ok(match tool {
        "test_input_required_result_elicitation" | "test_streaming_elicitation" => {
            match answer(&responses, "user_name", "elicitation/create")? {
                None => ask(tool, &[("user_name", name_question())], None).into(),
                Some(response) => done(format!("Hello, {}!", elicited(response, "name"))),
            }
        }
        "test_input_required_result_sampling" => {
            match answer(&responses, "capital_question", "sampling/createMessage")? {
                None => ask(tool, &[("capital_question", sample("What is the capital of France?", 100))], None).into(),
                Some(response) => done(format!("The model answered: {}", sampled(response))),
            }
        }
        "test_input_required_result_list_roots" => match answer(&responses, "client_roots", "roots/list")? {
            None => ask(tool, &[("client_roots", roots())], None).into(),
            Some(response) => {
                let uris: Vec<&str> = response["roots"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|root| root.get("uri").and_then(Value::as_str))
                    .collect();
                done(format!("Roots: {}", uris.join(", ")))
            }
        },
        "test_input_required_result_request_state" | "test_input_required_result_tampered_state" => {
            let confirm = elicit("Please confirm", "ok", "boolean");
            match (round(tool, state)?, answer(&responses, "confirm", "elicitation/create")?) {
                (2, Some(response)) => done(format!("state-ok: confirmed={}", elicited(response, "ok"))),
                _ => ask(tool, &[("confirm", confirm)], Some(State { round: 2 })).into(),
            }
        }
        "test_input_required_result_multiple_inputs" => {
            let asked = [
                ("user_name", name_question()),
                ("greeting", sample("Generate a greeting", 50)),
                ("client_roots", roots()),
            ];
            let name = answer(&responses, "user_name", "elicitation/create")?;
            let greeting = answer(&responses, "greeting", "sampling/createMessage")?;
            let roots = answer(&responses, "client_roots", "roots/list")?;
            match (round(tool, state)?, name, greeting, roots) {
                (2, Some(name), Some(greeting), Some(_)) => {
                    done(format!("{} {}", sampled(greeting), elicited(name, "name")))
                }
                _ => ask(tool, &asked, Some(State { round: 2 })).into(),
            }
        }
        "test_input_required_result_multi_round" => match round(tool, state)? {
            2 => match answer(&responses, "step1", "elicitation/create")? {
                Some(_) => ask(tool, &[("step2", step2())], Some(State { round: 3 })).into(),
                None => ask(tool, &[("step1", step1())], Some(State { round: 2 })).into(),
            },
            3 => match answer(&responses, "step2", "elicitation/create")? {
                Some(response) => done(format!("Favourite colour: {}", elicited(response, "color"))),
                None => ask(tool, &[("step2", step2())], Some(State { round: 3 })).into(),
            },
            _ => ask(tool, &[("step1", step1())], Some(State { round: 2 })).into(),
        },
        "test_input_required_result_capabilities" => {
            let mut asked = Vec::new();
            if caps.sampling.is_some() {
                asked.push(("greeting", sample("Generate a greeting", 50)));
            }
            if caps.elicitation.is_some() {
                asked.push(("user_name", name_question()));
            }
            if caps.roots.is_some() {
                asked.push(("client_roots", roots()));
            }
            if asked.is_empty() || asked.iter().all(|(key, _)| responses.contains_key(*key)) {
                done("Nothing more to ask for what this client can answer")
            } else {
                ask(tool, &asked, None).into()
            }
        }
        "test_missing_capability" => {
            if caps.sampling.is_none() {
                let required: ClientCapabilities = from_json(json!({ "sampling": {} }));
                return Err(ErrorData::missing_required_client_capability(required));
            }
            match answer(&responses, "question", "sampling/createMessage")? {
                None => ask(tool, &[("question", sample("Say hello", 20))], None).into(),
                Some(response) => done(sampled(response)),
            }
        }
        other => return Err(ErrorData::invalid_params(format!("no fixture tool {other}"), None)),
    })
}

fn step1() -> Value {
    elicit("Step 1: What is your name?", "name", "string")
}

fn step2() -> Value {
    elicit("Step 2: What is your favorite color?", "color", "string")
}

/// The MRTR fixture prompt, `test_input_required_result_prompt`.
pub fn prompt(responses: &InputResponses) -> Result<GetPromptResponse, ErrorData> {
    let question = elicit("What context should the prompt use?", "context", "string");
    Ok(match answer(responses, "user_context", "elicitation/create")? {
        None => ask("test_input_required_result_prompt", &[("user_context", question)], None).into(),
        Some(response) => {
            let text = format!("Answer within this context: {}", elicited(response, "context"));
            let result: rmcp::model::GetPromptResult = from_json(json!({ "resultType": "complete", "messages": [
                { "role": "user", "content": { "type": "text", "text": text } }
            ]}));
            result.into()
        }
    })
}
