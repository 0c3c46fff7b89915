//! One operation of a document → one action: its input schema (path,
//! query and header parameters, and the request body), its output schema
//! (the 2xx JSON response), its access level and its [`OperationPlan`].

use std::collections::BTreeSet;

use oas3::spec::{ObjectOrReference, Operation as Op, Parameter, ParameterIn, ParameterStyle};
use serde_json::{Map, Value, json};

use super::refs::{Found, Refs};
use super::schema::{Definitions, Schema};
use crate::contract::{Access, MAX_SUMMARY_CHARS, Shape, one_line, sanitize};
use crate::error::Result;
use quiver_contract::openapi::{BodyPlan, OperationPlan, ParamIn, ParamPlan, ParamStyle};

/// One operation, as an action.
#[derive(Debug, Clone, PartialEq)]
pub struct Operation {
    /// The action name (see [`super::names`]).
    pub name: String,
    /// The document's `operationId`, if any.
    pub operation_id: Option<String>,
    /// Its tags.
    pub tags: Vec<String>,
    /// The full description: summary, description, method and path.
    pub description: String,
    /// The input schema (an object schema).
    pub input_schema: Schema,
    /// The 2xx JSON response's schema, when the document gives one.
    pub output_schema: Option<Schema>,
    /// Its level, from the method.
    pub access: Access,
    /// How the connector sends it.
    pub plan: OperationPlan,
}

/// What one operation needs from the document.
pub(super) struct Source<'a> {
    pub refs: Refs<'a>,
    pub definitions: &'a std::sync::Arc<Definitions>,
    pub path: &'a str,
    pub method: &'a http::Method,
    pub op: &'a Op,
    /// The path item's own parameters (an operation's win by name and place).
    pub shared: &'a [ObjectOrReference<Parameter>],
}

/// Headers the connector sets itself (content negotiation, the body's
/// type), which OpenAPI says a parameter may not describe.
const CONNECTOR_HEADERS: [&str; 2] = ["accept", "content-type"];

/// Whether a header parameter named `name` is left out: the connector sets
/// it, or no guest may set it (the host sets or refuses it; the egress
/// code's one list), so every use would be refused.
fn host_owned(name: &str) -> bool {
    CONNECTOR_HEADERS.iter().any(|h| name.eq_ignore_ascii_case(h)) || crate::sandbox::http::forbidden_to_guests(name)
}

impl<'a> Source<'a> {
    /// The action, named `name`; what could not be expressed is logged. A
    /// `$ref` cycle is an error.
    pub(super) fn operation(&self, name: String) -> Result<Operation> {
        let mut properties = Map::new();
        let mut required = Vec::new();
        let mut refs = BTreeSet::new();
        let mut params = Vec::new();
        for param in self.parameters()? {
            let location = match param.location {
                ParameterIn::Path => ParamIn::Path,
                ParameterIn::Query => ParamIn::Query,
                ParameterIn::Header if !host_owned(&param.name) => ParamIn::Header,
                ParameterIn::Header => {
                    let parameter = sanitize(&param.name, Shape::Line);
                    tracing::debug!(operation = %name, %parameter, "header parameter left out: the host sets or refuses it");
                    continue;
                }
                ParameterIn::Cookie => {
                    let parameter = sanitize(&param.name, Shape::Line);
                    tracing::debug!(operation = %name, %parameter, "cookie parameters are not sent");
                    continue;
                }
            };
            // The model sees a safe property name; the plan keeps the name
            // sent on the wire.
            let arg = free_name(&properties, &sanitize(&param.name, Shape::Line), location_word(location));
            let schema = param.schema.as_ref().or_else(|| media_schema(param.content.as_ref()));
            let schema = property(schema, param.description.as_deref(), &mut refs);
            if location == ParamIn::Path || param.required == Some(true) {
                required.push(Value::String(arg.clone()));
            }
            properties.insert(arg.clone(), schema);
            params.push(ParamPlan {
                arg,
                name: param.name.clone(),
                location,
                style: style(param.style, location),
                explode: param.explode.unwrap_or(matches!(param.style, None | Some(ParameterStyle::Form))),
            });
        }
        let body = self.request_body()?.map(|(body, content_type)| {
            let arg = free_name(&properties, "body", "request");
            let schema = body.content.get(&content_type).and_then(|m| m.schema.as_ref());
            let schema = property(schema, body.description.as_deref(), &mut refs);
            if body.required == Some(true) {
                required.push(Value::String(arg.clone()));
            }
            properties.insert(arg.clone(), schema);
            BodyPlan { arg, content_type }
        });
        let mut input = json!({ "type": "object", "properties": properties, "additionalProperties": false });
        if !required.is_empty() {
            input["required"] = Value::Array(required);
        }
        Ok(Operation {
            name,
            operation_id: self.op.operation_id.clone(),
            tags: self.op.tags.clone(),
            description: self.description(),
            input_schema: self.definitions.with(input, refs),
            output_schema: self.output_schema()?,
            access: access_of(self.method),
            plan: OperationPlan { method: self.method.as_str().to_owned(), path: self.path.to_owned(), params, body },
        })
    }

    /// The operation's parameters, then the path item's it does not
    /// override; references followed (one that leads nowhere is skipped).
    fn parameters(&self) -> Result<Vec<&'a Parameter>> {
        let mut own = self.followed(&self.op.parameters)?;
        for param in self.followed(self.shared)? {
            if !own.iter().any(|p| p.name == param.name && p.location == param.location) {
                own.push(param);
            }
        }
        Ok(own)
    }

    fn followed(&self, list: &'a [ObjectOrReference<Parameter>]) -> Result<Vec<&'a Parameter>> {
        let mut found = Vec::with_capacity(list.len());
        for item in list {
            match self.refs.follow(item)? {
                Found::Object(param) => found.push(param),
                Found::Missing(target) => self.skipped("parameter", &target),
            }
        }
        Ok(found)
    }

    /// The request body (references followed) and its media type, JSON
    /// preferred.
    fn request_body(&self) -> Result<Option<(&'a oas3::spec::RequestBody, String)>> {
        let Some(item) = &self.op.request_body else { return Ok(None) };
        let body = match self.refs.follow(item)? {
            Found::Object(body) => body,
            Found::Missing(target) => {
                self.skipped("request body", &target);
                return Ok(None);
            }
        };
        Ok(preferred_media(body.content.keys()).map(|content_type| (body, content_type)))
    }

    /// The schema of the first 2xx response with a JSON body.
    fn output_schema(&self) -> Result<Option<Schema>> {
        for (status, item) in self.op.responses.iter().flatten() {
            if !status.starts_with('2') {
                continue;
            }
            let response = match self.refs.follow(item)? {
                Found::Object(response) => response,
                Found::Missing(target) => {
                    self.skipped("response", &target);
                    continue;
                }
            };
            let schema = response.content.iter().find(|(media, _)| is_json(media)).and_then(|(_, m)| m.schema.as_ref());
            return Ok(schema.map(|schema| self.definitions.schema(schema)));
        }
        Ok(None)
    }

    /// Log a reference that leads nowhere in this document.
    fn skipped(&self, what: &str, target: &str) {
        tracing::warn!(
            document = %self.refs.origin,
            path = %sanitize(self.path, Shape::Line),
            target = %sanitize(target, Shape::Line),
            "{what} skipped: its `$ref` leads to nothing in this document"
        );
    }

    /// A first paragraph of one short line (the summary, else the
    /// description's first line, else the route), then the summary and
    /// description whole where that line cut them, then the route.
    ///
    /// Every piece is the document's text through the one sanitiser (lines
    /// kept, every other control character escaped).
    fn description(&self) -> String {
        let text = |text: &Option<String>| {
            text.as_deref().map(str::trim).filter(|s| !s.is_empty()).map(|s| sanitize(s, Shape::Lines).into_owned())
        };
        let (summary, long) = (text(&self.op.summary), text(&self.op.description));
        let route = format!("`{} {}`", self.method, sanitize(self.path, Shape::Line));
        let first = one_line(&squeezed(summary.as_ref().or(long.as_ref()).unwrap_or(&route)), MAX_SUMMARY_CHARS);
        let mut parts = vec![first.clone()];
        parts.extend([&summary, &long].into_iter().flatten().filter(|t| **t != first).cloned());
        if self.op.deprecated == Some(true) {
            parts.push("Deprecated.".into());
        }
        if summary.is_some() || long.is_some() {
            parts.push(route);
        }
        parts.join("\n\n")
    }
}

/// An input property: `schema` converted (its component references added
/// to `refs`; none: anything), with `description` (sanitised) unless it has
/// its own.
fn property(schema: Option<&oas3::spec::Schema>, description: Option<&str>, refs: &mut BTreeSet<String>) -> Value {
    let mut value = match schema {
        Some(schema) => {
            let (value, found) = super::schema::convert(schema);
            refs.extend(found);
            value
        }
        None => json!({}),
    };
    if let (Some(text), Value::Object(object)) = (description, &mut value) {
        object.entry("description").or_insert_with(|| Value::String(sanitize(text, Shape::Lines).into_owned()));
    }
    value
}

/// GET, HEAD and OPTIONS read; DELETE is `admin`; the rest write.
pub fn access_of(method: &http::Method) -> Access {
    match *method {
        http::Method::GET | http::Method::HEAD | http::Method::OPTIONS | http::Method::TRACE => Access::Read,
        http::Method::DELETE => Access::Admin,
        _ => Access::Write,
    }
}

/// `wanted`, or `PREFIX_wanted` when an earlier property took it.
fn free_name(taken: &Map<String, Value>, wanted: &str, prefix: &str) -> String {
    let mut name = wanted.to_owned();
    let mut n = 1;
    while taken.contains_key(&name) {
        name = if n == 1 { format!("{prefix}_{wanted}") } else { format!("{prefix}_{wanted}_{n}") };
        n += 1;
    }
    name
}

fn location_word(location: ParamIn) -> &'static str {
    match location {
        ParamIn::Path => "path",
        ParamIn::Query => "query",
        ParamIn::Header => "header",
    }
}

fn style(style: Option<ParameterStyle>, location: ParamIn) -> ParamStyle {
    match style {
        Some(ParameterStyle::Form) => ParamStyle::Form,
        Some(ParameterStyle::Simple) => ParamStyle::Simple,
        Some(ParameterStyle::SpaceDelimited) => ParamStyle::SpaceDelimited,
        Some(ParameterStyle::PipeDelimited) => ParamStyle::PipeDelimited,
        Some(ParameterStyle::DeepObject) => ParamStyle::DeepObject,
        Some(ParameterStyle::Label) => ParamStyle::Label,
        Some(ParameterStyle::Matrix) => ParamStyle::Matrix,
        None if location == ParamIn::Query => ParamStyle::Form,
        None => ParamStyle::Simple,
    }
}

fn is_json(media: &str) -> bool {
    let media = media.split(';').next().unwrap_or("").trim().to_ascii_lowercase();
    media == "application/json" || media.ends_with("+json") || media == "*/*"
}

/// JSON if offered, else a form, else the first listed.
fn preferred_media<'a>(types: impl Iterator<Item = &'a String>) -> Option<String> {
    let all: Vec<&String> = types.collect();
    all.iter()
        .find(|t| is_json(t) && t.as_str() != "*/*")
        .or_else(|| all.iter().find(|t| t.starts_with("application/x-www-form-urlencoded")))
        .or_else(|| all.first())
        .map(|t| (*t).clone())
}

fn media_schema(content: Option<&oas3::Map<String, oas3::spec::MediaType>>) -> Option<&oas3::spec::Schema> {
    content?.values().next()?.schema.as_ref()
}

/// `text`'s lines with runs of spaces and tabs made one space.
pub(super) fn squeezed(text: &str) -> String {
    text.lines().map(|line| line.split_whitespace().collect::<Vec<_>>().join(" ")).collect::<Vec<_>>().join("\n")
}
