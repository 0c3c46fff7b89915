//! How the bundled OpenAPI connector sends one operation.
//!
//! The host reads an operator's OpenAPI document, turns each operation into
//! an action (name, schemas, access) and into an [`OperationPlan`]: the
//! method, the path template, and where each input property goes on the
//! wire. It hands the plan to the generic connector component in the
//! instance's `config`, under [`plan_key`]`(action)`, so the component
//! never parses the document and needs no code per API.

use serde::{Deserialize, Serialize};

/// The `config` key holding the plan of `action`.
pub fn plan_key(action: &str) -> String {
    format!("openapi.operation.{action}")
}

/// One operation, as the connector sends it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OperationPlan {
    /// The HTTP method, upper case.
    pub method: String,
    /// The path template below the base URL, e.g. `/pet/{petId}`.
    pub path: String,
    /// The parameters, in the document's order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub params: Vec<ParamPlan>,
    /// The request body, if the operation takes one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body: Option<BodyPlan>,
}

/// Where a parameter goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ParamIn {
    /// A `{name}` segment of the path.
    Path,
    /// The query string.
    Query,
    /// A request header.
    Header,
}

/// How a parameter's value is written (OpenAPI's `style`; arrays and
/// objects differ, scalars are written as they are).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ParamStyle {
    /// `k=a&k=b` (exploded) or `k=a,b` (query default).
    Form,
    /// `a,b` (path and header default).
    Simple,
    /// `k=a b`.
    SpaceDelimited,
    /// `k=a|b`.
    PipeDelimited,
    /// `k[p]=v` for an object.
    DeepObject,
    /// `.a.b` or `.a,b` in a path.
    Label,
    /// `;k=a;k=b` or `;k=a,b` in a path.
    Matrix,
}

/// One parameter of an operation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ParamPlan {
    /// The input property that holds its value.
    pub arg: String,
    /// Its name on the wire.
    pub name: String,
    /// Where it goes.
    #[serde(rename = "in")]
    pub location: ParamIn,
    /// How it is written.
    pub style: ParamStyle,
    /// Whether arrays and objects are written one item per pair.
    pub explode: bool,
}

/// How the request body is sent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BodyPlan {
    /// The input property that holds it.
    pub arg: String,
    /// The media type sent: JSON (`application/json`, `…+json`), a form
    /// (`application/x-www-form-urlencoded`) or text sent as it is.
    pub content_type: String,
}

impl BodyPlan {
    /// How a body of this media type is encoded.
    pub fn encoding(&self) -> BodyEncoding {
        let media = self.content_type.split(';').next().unwrap_or("").trim().to_ascii_lowercase();
        if media == "application/json" || media.ends_with("+json") {
            BodyEncoding::Json
        } else if media == "application/x-www-form-urlencoded" {
            BodyEncoding::Form
        } else {
            BodyEncoding::Text
        }
    }
}

/// How a request body is encoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BodyEncoding {
    /// The value as JSON.
    Json,
    /// An object as `k=v&…`.
    Form,
    /// A string, sent as it is.
    Text,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn media_types_pick_an_encoding() {
        let body = |t: &str| BodyPlan { arg: "body".into(), content_type: t.into() }.encoding();
        assert_eq!(body("application/json; charset=utf-8"), BodyEncoding::Json);
        assert_eq!(body("application/merge-patch+json"), BodyEncoding::Json);
        assert_eq!(body("application/x-www-form-urlencoded"), BodyEncoding::Form);
        assert_eq!(body("text/plain"), BodyEncoding::Text);
    }

    #[test]
    fn a_plan_round_trips_through_its_json() {
        let plan = OperationPlan {
            method: "GET".into(),
            path: "/pet/{petId}".into(),
            params: vec![ParamPlan {
                arg: "petId".into(),
                name: "petId".into(),
                location: ParamIn::Path,
                style: ParamStyle::Simple,
                explode: false,
            }],
            body: None,
        };
        let text = serde_json::to_string(&plan).unwrap();
        assert!(text.contains("\"in\":\"path\""), "{text}");
        assert_eq!(serde_json::from_str::<OperationPlan>(&text).unwrap(), plan);
    }
}
