//! A response → the model's answer, or a typed error that says what the
//! API objected to and what to do about it.

use quiver_contract::openapi::OperationPlan;
use quiver_contract::text::{Shape, sanitize, sanitize_cut};
use quiver_sdk::ToolError;
use serde_json::{Value, json};

/// Longest piece of an error body quoted in an error, in bytes.
const QUOTED_BYTES: usize = 400;

/// The answer to a response with `status`, `content_type` and `body`.
///
/// A 2xx JSON body is the answer as it is; another body comes back as
/// text with its status and type; an empty one as its status. A 4xx or
/// 5xx status is an error of the kind the model can act on: its input
/// (400, 409, 422…), a missing credential or permission (401, 403), a
/// missing resource (404, 410), a busy or failing API (408, 429, 5xx).
pub fn answer(plan: &OperationPlan, status: u16, content_type: Option<&str>, body: &[u8]) -> Result<Value, ToolError> {
    if (200..300).contains(&status) {
        if body.iter().all(u8::is_ascii_whitespace) {
            return Ok(json!({ "status": status }));
        }
        if let Ok(value) = serde_json::from_slice::<Value>(body) {
            return Ok(value);
        }
        return Ok(json!({
            "status": status,
            "content_type": content_type.unwrap_or(""),
            "body": String::from_utf8_lossy(body),
        }));
    }
    let route = format!("{} {}", plan.method, sanitize(&plan.path, Shape::Line));
    let detail = detail(body).map(|d| format!(": {d}")).unwrap_or_default();
    let said = format!("the API answered HTTP {status} to `{route}`{detail}");
    Err(match status {
        400 | 409 | 412 | 413 | 415 | 422 => {
            ToolError::invalid_input(format!("{said}. Check the parameters against the action's schema and retry."))
        }
        401 => ToolError::denied(format!(
            "{said}. The API wants a credential this connector does not hold or that it refused; the operator \
             configures it (`auth` in the connector's section): do not retry."
        )),
        403 => ToolError::denied(format!("{said}. The connector's credential may not do this.")),
        404 | 410 => ToolError::not_found(format!("{said}. Check the identifiers in the parameters.")),
        408 | 429 | 500..=599 => ToolError::unavailable(format!("{said}. The API is busy or failing; retry later.")),
        300..=399 => ToolError::failed(format!("{said} (a redirect without a place to go).")),
        _ => ToolError::failed(format!("{said}.")),
    })
}

/// What an error body says: a problem document's `title` and `detail`,
/// an error object's `message` or `error`, else the start of the text; on
/// one line, through the one sanitiser (the API's text is outside text: an
/// escape code or a line break in it is shown escaped), and cut.
fn detail(body: &[u8]) -> Option<String> {
    if let Ok(Value::Object(object)) = serde_json::from_slice::<Value>(body) {
        let text = |key: &str| object.get(key).and_then(Value::as_str).map(str::trim).filter(|s| !s.is_empty());
        let parts: Vec<&str> =
            ["title", "detail", "message", "error", "error_description"].into_iter().filter_map(text).collect();
        if !parts.is_empty() {
            return Some(sanitize_cut(&parts.join(" — "), Shape::Line, QUOTED_BYTES));
        }
    }
    let text = String::from_utf8_lossy(body);
    let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
    (!text.is_empty()).then(|| sanitize_cut(&text, Shape::Line, QUOTED_BYTES))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan() -> OperationPlan {
        OperationPlan { method: "GET".into(), path: "/pet/{petId}".into(), params: vec![], body: None }
    }

    #[test]
    fn successes_are_the_json_or_the_text() {
        assert_eq!(answer(&plan(), 200, None, br#"{"id": 7}"#).unwrap(), json!({"id": 7}));
        assert_eq!(answer(&plan(), 204, None, b"").unwrap(), json!({"status": 204}));
        let text = answer(&plan(), 200, Some("text/plain"), b"pong").unwrap();
        assert_eq!(text, json!({"status": 200, "content_type": "text/plain", "body": "pong"}));
    }

    #[test]
    fn failures_are_typed_and_quote_the_api() {
        let problem = br#"{"type":"x","title":"Invalid security scheme used","detail":"Your request does not fullfil the security requirements"}"#;
        let error = answer(&plan(), 401, Some("application/problem+json"), problem).unwrap_err();
        let ToolError::Denied(message) = error else { panic!("{error:?}") };
        assert!(message.contains("HTTP 401") && message.contains("Invalid security scheme used"), "{message}");
        assert!(message.contains("`GET /pet/{petId}`") && message.contains("auth"), "{message}");
        assert!(matches!(answer(&plan(), 422, None, b"{}"), Err(ToolError::InvalidInput(_))));
        assert!(matches!(answer(&plan(), 404, None, b"nope"), Err(ToolError::NotFound(_))));
        assert!(matches!(answer(&plan(), 503, None, b""), Err(ToolError::Unavailable(_))));
        assert!(matches!(answer(&plan(), 418, None, b""), Err(ToolError::Failed(_))));
        let hostile = "{\"message\": \"no\\u001b[2J\\u0000\\u0007\\r\\n- forged: line\"}";
        let ToolError::InvalidInput(message) = answer(&plan(), 400, None, hostile.as_bytes()).unwrap_err() else {
            panic!()
        };
        assert!(message.contains("no\\u{1b}[2J\\u{0}\\u{7}\\r\\n- forged"), "{message}");
        assert!(!message.contains(['\u{1b}', '\u{0}', '\u{7}', '\r', '\n']), "{message:?}");
        let ToolError::Failed(message) = answer(&plan(), 418, None, b"tea\x1b]0;title\x07").unwrap_err() else {
            panic!()
        };
        assert!(message.contains("tea\\u{1b}]0;title\\u{7}"), "{message}");
        let long = "x".repeat(5000);
        let ToolError::Failed(message) = answer(&plan(), 418, None, long.as_bytes()).unwrap_err() else { panic!() };
        assert!(message.len() < 600, "{}", message.len());
    }
}
