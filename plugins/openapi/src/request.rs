//! A plan and an input → the request to send: the URL with its path and
//! query parameters written in their OpenAPI style, the header parameters,
//! and the body in its media type.

use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};
use quiver_contract::openapi::{BodyEncoding, OperationPlan, ParamIn, ParamPlan, ParamStyle};
use quiver_sdk::ToolError;
use serde_json::{Map, Value};

/// What RFC 3986 leaves unescaped in a path segment or a query component.
const UNRESERVED: &AsciiSet = &NON_ALPHANUMERIC.remove(b'-').remove(b'_').remove(b'.').remove(b'~');

/// A request, ready to send.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    /// The absolute URL.
    pub url: String,
    /// Headers: content negotiation, the body's type, header parameters.
    pub headers: Vec<(String, String)>,
    /// The encoded body, if any.
    pub body: Option<Vec<u8>>,
}

impl Request {
    /// Build the request of `plan` below `base` with `input`.
    pub fn build(plan: &OperationPlan, base: &str, input: &Value) -> Result<Request, ToolError> {
        let empty = Map::new();
        let args = input.as_object().unwrap_or(&empty);
        let mut path = plan.path.clone();
        let mut query: Vec<String> = Vec::new();
        let mut headers = vec![("accept".to_owned(), "application/json, */*;q=0.8".to_owned())];
        for param in &plan.params {
            let value = match args.get(&param.arg) {
                None | Some(Value::Null) if param.location == ParamIn::Path => {
                    return Err(ToolError::invalid_input(format!("`{}` is required (a path parameter)", param.arg)));
                }
                None | Some(Value::Null) => continue,
                Some(value) => value,
            };
            match param.location {
                ParamIn::Path => {
                    let placeholder = format!("{{{}}}", param.name);
                    let filled = path.replace(&placeholder, &path_value(param, value));
                    if moving_segments(&filled) > moving_segments(&path) {
                        return Err(ToolError::invalid_input(format!(
                            "`{}` may not make a path segment `.`, `..` or empty: it would send the request to \
                             another path. Give the identifier itself.",
                            param.arg
                        )));
                    }
                    path = filled;
                }
                ParamIn::Query => query.extend(query_pairs(param, value)),
                ParamIn::Header => headers.push((param.name.to_ascii_lowercase(), joined(value, ",", param.explode))),
            }
        }
        let mut url = format!("{}{path}", base.trim_end_matches('/'));
        if !query.is_empty() {
            url.push(if url.contains('?') { '&' } else { '?' });
            url.push_str(&query.join("&"));
        }
        let body = match &plan.body {
            Some(plan) => match args.get(&plan.arg) {
                Some(value) => {
                    headers.push(("content-type".into(), plan.content_type.clone()));
                    Some(encode_body(plan.encoding(), value))
                }
                None => None,
            },
            None => None,
        };
        Ok(Request { url, headers, body })
    }
}

/// How many segments of `path` are `.`, `..` or empty: the ones a server
/// (or a proxy) reads as a move to another path (`/user/..` is `/`,
/// `/user/` lists users). Escaping does not help: `%2E%2E` is read as `..`
/// too, so a value that makes one is refused. Counted after the leading
/// `/`; the template's own such segments are the document's.
fn moving_segments(path: &str) -> usize {
    let path = path.split(['?', '#']).next().unwrap_or(path);
    path.split('/').skip(1).filter(|segment| matches!(*segment, "" | "." | "..")).count()
}

/// A scalar as text: strings as they are, other JSON as JSON.
fn scalar(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

fn encode(text: &str) -> String {
    utf8_percent_encode(text, UNRESERVED).to_string()
}

/// Arrays and objects joined by `separator` (objects as `k,v` pairs, or
/// `k=v` when exploded), each item escaped; unescaped for headers.
fn joined(value: &Value, separator: &str, explode: bool) -> String {
    match value {
        Value::Array(items) => items.iter().map(scalar).collect::<Vec<_>>().join(separator),
        Value::Object(fields) if explode => {
            fields.iter().map(|(k, v)| format!("{k}={}", scalar(v))).collect::<Vec<_>>().join(separator)
        }
        Value::Object(fields) => {
            fields.iter().flat_map(|(k, v)| [k.clone(), scalar(v)]).collect::<Vec<_>>().join(separator)
        }
        other => scalar(other),
    }
}

/// A path parameter in its style: `simple` (`a,b`), `label` (`.a.b`),
/// `matrix` (`;id=a;id=b`), each value escaped.
fn path_value(param: &ParamPlan, value: &Value) -> String {
    let escaped = escape_items(value);
    match param.style {
        ParamStyle::Label => {
            let separator = if param.explode { "." } else { "," };
            format!(".{}", joined(&escaped, separator, param.explode))
        }
        ParamStyle::Matrix => match &escaped {
            Value::Array(items) if param.explode => {
                items.iter().map(|v| format!(";{}={}", param.name, scalar(v))).collect()
            }
            Value::Object(fields) if param.explode => {
                fields.iter().map(|(k, v)| format!(";{k}={}", scalar(v))).collect()
            }
            other => format!(";{}={}", param.name, joined(other, ",", false)),
        },
        _ => joined(&escaped, ",", param.explode),
    }
}

/// `value` with every string item escaped (keys of objects too).
fn escape_items(value: &Value) -> Value {
    match value {
        Value::Array(items) => Value::Array(items.iter().map(|v| Value::String(encode(&scalar(v)))).collect()),
        Value::Object(fields) => {
            Value::Object(fields.iter().map(|(k, v)| (encode(k), Value::String(encode(&scalar(v))))).collect())
        }
        other => Value::String(encode(&scalar(other))),
    }
}

/// The `k=v` pairs of a query parameter in its style.
fn query_pairs(param: &ParamPlan, value: &Value) -> Vec<String> {
    let name = encode(&param.name);
    let escaped = escape_items(value);
    match (&escaped, param.style) {
        (Value::Object(fields), ParamStyle::DeepObject) => {
            fields.iter().map(|(k, v)| format!("{name}%5B{k}%5D={}", scalar(v))).collect()
        }
        (Value::Array(items), ParamStyle::Form) if param.explode => {
            items.iter().map(|v| format!("{name}={}", scalar(v))).collect()
        }
        (Value::Object(fields), ParamStyle::Form) if param.explode => {
            fields.iter().map(|(k, v)| format!("{k}={}", scalar(v))).collect()
        }
        (Value::Array(_), ParamStyle::SpaceDelimited) => vec![format!("{name}={}", joined(&escaped, "%20", false))],
        (Value::Array(_), ParamStyle::PipeDelimited) => vec![format!("{name}={}", joined(&escaped, "%7C", false))],
        (other, _) => vec![format!("{name}={}", joined(other, ",", false))],
    }
}

fn encode_body(encoding: BodyEncoding, value: &Value) -> Vec<u8> {
    match (encoding, value) {
        (BodyEncoding::Form, Value::Object(fields)) => fields
            .iter()
            .map(|(k, v)| format!("{}={}", encode(k), encode(&scalar(v))))
            .collect::<Vec<_>>()
            .join("&")
            .into_bytes(),
        (BodyEncoding::Text, Value::String(text)) => text.clone().into_bytes(),
        (_, other) => other.to_string().into_bytes(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use quiver_contract::openapi::BodyPlan;
    use serde_json::json;

    fn param(name: &str, location: ParamIn, style: ParamStyle, explode: bool) -> ParamPlan {
        ParamPlan { arg: name.into(), name: name.into(), location, style, explode }
    }

    fn plan(params: Vec<ParamPlan>, body: Option<&str>) -> OperationPlan {
        OperationPlan {
            method: "POST".into(),
            path: "/pets/{id}/toys".into(),
            params,
            body: body.map(|t| BodyPlan { arg: "body".into(), content_type: t.into() }),
        }
    }

    #[test]
    fn parameters_are_written_in_their_styles_and_escaped() {
        let plan = plan(
            vec![
                param("id", ParamIn::Path, ParamStyle::Simple, false),
                param("tags", ParamIn::Query, ParamStyle::Form, true),
                param("ids", ParamIn::Query, ParamStyle::Form, false),
                param("filter", ParamIn::Query, ParamStyle::DeepObject, true),
                param("q", ParamIn::Query, ParamStyle::Form, true),
                param("X-Trace", ParamIn::Header, ParamStyle::Simple, false),
                param("absent", ParamIn::Query, ParamStyle::Form, true),
            ],
            None,
        );
        let input = json!({"id": "a/b c", "tags": ["x", "y&z"], "ids": [1, 2], "filter": {"kind": "cat"},
                           "q": "caf\u{e9}", "X-Trace": "t1"});
        let request = Request::build(&plan, "http://127.0.0.1:4010/v2/", &input).unwrap();
        assert_eq!(
            request.url,
            "http://127.0.0.1:4010/v2/pets/a%2Fb%20c/toys?tags=x&tags=y%26z&ids=1,2&filter%5Bkind%5D=cat&q=caf%C3%A9"
        );
        assert!(request.headers.contains(&("x-trace".into(), "t1".into())));
        assert_eq!(request.body, None);
    }

    #[test]
    fn path_styles_label_and_matrix() {
        let label = param("id", ParamIn::Path, ParamStyle::Label, false);
        assert_eq!(path_value(&label, &json!(["a", "b"])), ".a,b");
        let matrix = param("id", ParamIn::Path, ParamStyle::Matrix, true);
        assert_eq!(path_value(&matrix, &json!([1, 2])), ";id=1;id=2");
    }

    #[test]
    fn bodies_take_their_media_type() {
        let json_plan = plan(vec![param("id", ParamIn::Path, ParamStyle::Simple, false)], Some("application/json"));
        let request = Request::build(&json_plan, "http://h", &json!({"id": 7, "body": {"name": "Rex"}})).unwrap();
        assert_eq!(request.body.as_deref(), Some(&b"{\"name\":\"Rex\"}"[..]));
        assert!(request.headers.contains(&("content-type".into(), "application/json".into())));
        let form = plan(
            vec![param("id", ParamIn::Path, ParamStyle::Simple, false)],
            Some("application/x-www-form-urlencoded"),
        );
        let request = Request::build(&form, "http://h", &json!({"id": 7, "body": {"name": "R x", "n": 2}})).unwrap();
        assert_eq!(request.body.as_deref(), Some(&b"name=R%20x&n=2"[..]));
    }

    #[test]
    fn a_path_parameter_cannot_make_a_dot_or_empty_segment() {
        let plan = OperationPlan {
            method: "GET".into(),
            path: "/files/{dir}{name}/raw".into(),
            params: vec![
                param("dir", ParamIn::Path, ParamStyle::Simple, false),
                param("name", ParamIn::Path, ParamStyle::Simple, false),
            ],
            body: None,
        };
        for (dir, name) in [("..", ""), (".", ""), ("", ""), (".", ".")] {
            let refused = Request::build(&plan, "http://h", &json!({"dir": dir, "name": name}));
            assert!(matches!(refused, Err(ToolError::InvalidInput(_))), "{dir:?} {name:?}: {refused:?}");
        }
        for (dir, name, url) in [
            ("a", "..", "http://h/files/a../raw"),
            ("..", ".b", "http://h/files/...b/raw"),
            ("a/..", "", "http://h/files/a%2F../raw"),
        ] {
            let request = Request::build(&plan, "http://h", &json!({"dir": dir, "name": name})).unwrap();
            assert_eq!(request.url, url);
        }
    }

    #[test]
    fn a_missing_path_parameter_is_the_callers_mistake() {
        let plan = plan(vec![param("id", ParamIn::Path, ParamStyle::Simple, false)], None);
        assert!(matches!(Request::build(&plan, "http://h", &json!({})), Err(ToolError::InvalidInput(_))));
    }
}
