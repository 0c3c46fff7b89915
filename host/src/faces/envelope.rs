//! The check both MCP transports make before rmcp sees a message: the
//! message is read exactly as rmcp reads it (into rmcp's own
//! `ClientJsonRpcMessage`, by the same serde_json), so nothing that passes
//! here can fail there. What fails is answered as JSON-RPC asks: `-32700`
//! for text that is not JSON, `-32600` for JSON that is not a message MCP
//! can read (a batch, a wrong `jsonrpc`, an `id` that is not an integer or a
//! string, nesting past serde_json's limit, a number out of its range),
//! always with an `id`, `null` when none can be read. rmcp would answer
//! such a body with HTTP 415 and plain text, and such a stdio line with an
//! error that has no `id` at all (or not at all, for text that is not JSON).
//!
//! A pure function of the bytes, so that it can be fuzzed on its own.

use rmcp::model::{ClientJsonRpcMessage, JsonRpcMessage, RequestId};
use serde_json::value::RawValue;

use crate::contract::{Shape, sanitize_cut};

/// Longest reason a refusal quotes (serde_json's text can hold a piece of
/// the message).
const MAX_REASON_BYTES: usize = 512;

/// A message rmcp can read, and what the transports need to know of it.
#[derive(Debug, Clone)]
pub struct Message {
    /// Its `method` is `initialize` (the HTTP face caps sessions there).
    pub initialize: bool,
    /// The tool a `tools/call` names (the HTTP face checks its scope).
    pub tool: Option<String>,
    /// The request's `id`, as sent; `None` for a notification or response.
    pub id: Option<Box<RawValue>>,
}

/// A message refused before rmcp, with the JSON-RPC error that answers it.
#[derive(Debug, Clone)]
pub struct Refusal {
    /// The request's `id` when it can be read, else `None` (sent as `null`).
    pub id: Option<Box<RawValue>>,
    /// `-32700` (not JSON) or `-32600` (not a message MCP can read).
    pub code: i32,
    /// What is wrong, on one line.
    pub message: String,
    /// It reads as a notification (`jsonrpc` "2.0", a string `method`, no
    /// `id`): JSON-RPC gives a notification no reply, so stdio only logs
    /// it (HTTP still answers the POST with 400).
    pub notification: bool,
}

/// A JSON-RPC error reply written by Quiver itself (rmcp writes the
/// rest): `id` is `null` when the message had none that could be read.
#[derive(serde::Serialize)]
pub struct ErrorReply<'a> {
    jsonrpc: &'static str,
    id: Option<&'a serde_json::value::RawValue>,
    error: Fault<'a>,
}

#[derive(serde::Serialize)]
struct Fault<'a> {
    code: i32,
    message: &'a str,
}

impl<'a> ErrorReply<'a> {
    /// The error `code` with `message`, answering the request `id`.
    pub fn new(id: Option<&'a serde_json::value::RawValue>, code: i32, message: &'a str) -> Self {
        ErrorReply { jsonrpc: "2.0", id, error: Fault { code, message } }
    }
}

/// The parts of a message that say what it is, borrowed and unchecked:
/// what a refusal can tell about a message rmcp cannot read.
#[derive(serde::Deserialize)]
struct Envelope<'a> {
    #[serde(borrow)]
    jsonrpc: Option<&'a RawValue>,
    #[serde(borrow)]
    id: Option<&'a RawValue>,
    #[serde(borrow)]
    method: Option<&'a RawValue>,
    #[serde(borrow)]
    result: Option<&'a RawValue>,
    #[serde(borrow)]
    error: Option<&'a RawValue>,
}

/// Read `message` (one HTTP body, or one stdio line without its line
/// break or byte-order mark) as rmcp will, or say how to answer it.
pub fn check(message: &[u8]) -> Result<Message, Refusal> {
    let refuse = |code: i32, why: String| Refusal { id: None, code, message: why, notification: false };
    let raw = serde_json::from_slice::<&RawValue>(message)
        .map_err(|e| refuse(-32700, format!("Parse error: the message is not JSON: {}", reason(&e))))?;
    let envelope = serde_json::from_str::<Envelope<'_>>(raw.get()).ok();
    match serde_json::from_str::<ClientJsonRpcMessage>(raw.get()) {
        Ok(JsonRpcMessage::Request(request)) => {
            let id = envelope.and_then(|e| e.id).map(RawValue::to_owned);
            let tool = match &request.request {
                rmcp::model::ClientRequest::CallToolRequest(call) => Some(call.params.name.to_string()),
                _ => None,
            };
            Ok(Message { initialize: request.request.method() == "initialize", id, tool })
        }
        Ok(_) => Ok(Message { initialize: false, id: None, tool: None }),
        Err(error) => Err(match envelope {
            None => refuse(
                -32600,
                "Invalid Request: a message is one JSON-RPC 2.0 object (batches are not part of MCP)".into(),
            ),
            Some(envelope) => envelope.refusal(&error),
        }),
    }
}

impl Envelope<'_> {
    /// Why rmcp cannot read this object (it failed with `error`).
    fn refusal(&self, error: &serde_json::Error) -> Refusal {
        let is = |value: Option<&RawValue>, text: &str| value.is_some_and(|v| v.get() == text);
        let method_is_text = self.method.is_some_and(|m| serde_json::from_str::<String>(m.get()).is_ok());
        let id = self.id.filter(|id| serde_json::from_str::<RequestId>(id.get()).is_ok());
        let why = if !is(self.jsonrpc, "\"2.0\"") {
            "`jsonrpc` must be \"2.0\"".to_owned()
        } else if self.method.is_none() && self.result.is_none() && self.error.is_none() {
            "a message has a `method` (request, notification), or a `result` or `error` (response)".to_owned()
        } else if self.method.is_some() && !method_is_text {
            "`method` must be a string".to_owned()
        } else if self.id.is_some() && id.is_none() {
            "`id` must be an integer or a string".to_owned()
        } else {
            format!("MCP cannot read this message: {}", reason(error))
        };
        Refusal {
            // Only a request's id is echoed: a response's is the peer's own.
            id: id.filter(|_| self.method.is_some()).map(RawValue::to_owned),
            code: -32600,
            message: format!("Invalid Request: {why}"),
            notification: self.id.is_none() && method_is_text && is(self.jsonrpc, "\"2.0\""),
        }
    }
}

/// serde_json's error text, on one line and short.
fn reason(error: &serde_json::Error) -> String {
    sanitize_cut(&error.to_string(), Shape::Line, MAX_REASON_BYTES)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(body: &[u8]) -> (i32, Option<String>, bool) {
        let refusal = check(body).expect_err(&String::from_utf8_lossy(body));
        (refusal.code, refusal.id.map(|id| id.get().to_owned()), refusal.notification)
    }

    #[test]
    fn messages_rmcp_reads_pass() {
        let request = check(br#"{"jsonrpc":"2.0","id":"a","method":"ping"}"#).unwrap();
        assert_eq!((request.initialize, request.id.unwrap().get(), request.tool), (false, "\"a\"", None));
        let init = br#"{"jsonrpc":"2.0","id":7,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;
        assert!(check(init).unwrap().initialize);
        assert!(check(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#).unwrap().id.is_none());
        assert!(check(br#"{"jsonrpc":"2.0","id":1,"result":{}}"#).is_ok());
        assert!(
            check(br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":5}}"#).is_ok()
        );
        let call = br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"calc__evaluate"}}"#;
        assert_eq!(check(call).unwrap().tool.as_deref(), Some("calc__evaluate"));
    }

    #[test]
    fn envelopes_that_are_not_json_rpc_are_named() {
        assert_eq!(refused(b"{bad"), (-32700, None, false));
        assert_eq!(refused(b""), (-32700, None, false));
        assert_eq!(refused(b"[1,2,3]"), (-32600, None, false));
        assert_eq!(refused(br#"[{"jsonrpc":"2.0","method":"ping","id":1}]"#), (-32600, None, false));
        assert_eq!(refused(br#"{"hello":1}"#), (-32600, None, false));
        assert_eq!(refused(br#"{"jsonrpc":"1.0","method":"ping","id":1}"#), (-32600, Some("1".into()), false));
        assert_eq!(refused(br#"{"jsonrpc":"2.0","method":1,"id":1}"#), (-32600, Some("1".into()), false));
    }

    /// What rmcp itself cannot read is refused here, never passed on:
    /// nesting past serde_json's limit, an id out of range or not an
    /// integer or a string; a readable id is echoed.
    #[test]
    fn what_rmcp_cannot_read_is_refused_here() {
        let deep = format!(
            r#"{{"jsonrpc":"2.0","id":3,"method":"ping","params":{{"a":{}1{}}}}}"#,
            "[".repeat(200),
            "]".repeat(200)
        );
        assert_eq!(refused(deep.as_bytes()), (-32600, Some("3".into()), false));
        assert_eq!(refused(br#"{"jsonrpc":"2.0","id":1e999999,"method":"ping"}"#), (-32600, None, false));
        assert_eq!(refused(br#"{"jsonrpc":"2.0","id":1.5,"method":"ping"}"#), (-32600, None, false));
        assert_eq!(refused(br#"{"jsonrpc":"2.0","id":{},"method":"ping"}"#), (-32600, None, false));
        let message = check(br#"{"jsonrpc":"2.0","id":1e999999,"method":"ping"}"#).unwrap_err().message;
        assert!(message.contains("`id`"), "{message}");
    }

    /// A notification rmcp cannot read gets no reply on stdio.
    #[test]
    fn a_broken_notification_is_marked_as_one() {
        let deep = format!(
            r#"{{"jsonrpc":"2.0","method":"notifications/progress","params":{}{}}}"#,
            "[".repeat(200),
            "]".repeat(200)
        );
        assert_eq!(refused(deep.as_bytes()), (-32600, None, true));
    }
}
