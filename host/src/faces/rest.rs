//! The REST face: the catalog at three levels (names → summaries → full
//! schema), calls, the Tier-1 text, provider exports and an OpenAPI
//! document, with `ETag`s from the catalog version.
//!
//! ```text
//! GET  /v1/tools               level 1: names
//! GET  /v1/tools/summary       level 2: name, category, origin, one line
//! GET  /v1/tools/{name}        level 3: the full MCP definition (loads its plugin)
//! POST /v1/tools/{name}/call   call it with a JSON object
//! GET  /v1/prompt              the Tier-1 text
//! GET  /v1/status              plugins, rejected files, stale plugins
//! GET  /v1/export/openai       every tool as OpenAI function tools (loads every plugin)
//! GET  /v1/export/anthropic    every tool with `defer_loading`, plus a tool-search tool
//! GET  /v1/openapi.json        this API
//! ```

use std::sync::{Arc, Mutex};

use axum::Json;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use bytes::Bytes;
use schemars::JsonSchema;
use serde::Serialize;
use serde_json::Value;

use crate::catalog::{Category, Listing};
use crate::{Error, ErrorKind, Host};

struct Rest {
    host: Host,
    agent: Option<String>,
    listings: Mutex<Option<Listings>>,
}

/// Levels 1 and 2 as JSON, serialized once per catalog snapshot and policy:
/// a snapshot never changes, so neither do they (4,000 tools are ~0.5 MB of
/// JSON, too much to rebuild per request).
struct Listings {
    key: ListingsKey,
    names: Bytes,
    summaries: Bytes,
}

/// The catalog version and the categories the policy allows.
type ListingsKey = (u64, Vec<Category>);

/// The REST routes (under `/v1`) for `host`, with `agent`'s policy.
pub fn router(host: Host, agent: Option<String>) -> axum::Router {
    let state = Arc::new(Rest { host, agent, listings: Mutex::new(None) });
    axum::Router::new()
        .route("/v1/tools", get(names))
        .route("/v1/tools/summary", get(summaries))
        .route("/v1/tools/{name}", get(full))
        .route("/v1/tools/{name}/call", post(call))
        .route("/v1/prompt", get(prompt))
        .route("/v1/status", get(status))
        .route("/v1/export/openai", get(export_openai))
        .route("/v1/export/anthropic", get(export_anthropic))
        .route("/v1/openapi.json", get(openapi))
        .with_state(state)
}

/// Level 1.
#[derive(Serialize, JsonSchema)]
struct Names {
    /// The catalog version these names belong to.
    version: u64,
    /// Every tool's model-facing name.
    tools: Vec<String>,
}

/// Level 2.
#[derive(Serialize, JsonSchema)]
struct Summaries {
    /// The catalog version.
    version: u64,
    /// Every tool in one line.
    tools: Vec<Listing>,
}

/// The answer of a call.
#[derive(Serialize, JsonSchema)]
struct CallAnswer {
    /// Whether the call failed (the text says why, for a model to read).
    is_error: bool,
    /// The result or the error, as a model would see it.
    text: String,
    /// The result as JSON, when the call succeeded.
    #[serde(skip_serializing_if = "Option::is_none")]
    value: Option<Value>,
    /// The error's kind, when it failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    error_kind: Option<String>,
}

/// An error of the API itself.
#[derive(Serialize, JsonSchema)]
struct ApiError {
    /// What went wrong.
    error: String,
    /// How to fix it, when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    fix: Option<String>,
}

/// What the host serves and what it refused.
#[derive(Serialize, JsonSchema)]
struct Status {
    /// The catalog version.
    version: u64,
    /// Plugins served: name and origin.
    plugins: Vec<(String, String)>,
    /// Files not served: origin and why.
    rejected: Vec<(String, String)>,
    /// Plugins served by their last good version: name and why the newer file failed.
    stale: Vec<(String, String)>,
}

fn error_response(error: &Error) -> Response {
    let status = match error.kind() {
        ErrorKind::UnknownTool | ErrorKind::UnknownPlugin | ErrorKind::UnknownAction => StatusCode::NOT_FOUND,
        ErrorKind::InputNotJson | ErrorKind::InputSchema | ErrorKind::InvalidArguments => StatusCode::BAD_REQUEST,
        _ => StatusCode::INTERNAL_SERVER_ERROR,
    };
    let body = ApiError { error: error.to_string(), fix: error.remedy().map(str::to_owned) };
    (status, Json(body)).into_response()
}

/// A cacheable answer: its `ETag` is the catalog version (and the agent),
/// so it changes exactly when the catalog does.
fn cached(rest: &Rest, version: u64, headers: &HeaderMap, body: impl IntoResponse) -> Response {
    let tag = format!("\"v{version}-{}\"", rest.agent.as_deref().unwrap_or("default"));
    let matches = headers.get(header::IF_NONE_MATCH).and_then(|v| v.to_str().ok()).is_some_and(|v| {
        v.split(',').any(|t| {
            let t = t.trim();
            t == "*" || t.trim_start_matches("W/") == tag
        })
    });
    let etag = HeaderValue::from_str(&tag).expect("an ASCII tag");
    if matches {
        return (StatusCode::NOT_MODIFIED, [(header::ETAG, etag)]).into_response();
    }
    let mut response = body.into_response();
    response.headers_mut().insert(header::ETAG, etag);
    response
}

impl Rest {
    fn policy_allows(&self, category: Category) -> Result<bool, Error> {
        Ok(self.host.policy(self.agent.as_deref())?.allows(category))
    }
}

impl Rest {
    /// Levels 1 and 2 of the current catalog, as JSON (`names`, `summaries`).
    fn listings(&self) -> Result<(u64, Bytes, Bytes), Error> {
        let catalog = self.host.catalog();
        let policy = self.host.policy(self.agent.as_deref())?;
        let key = (catalog.version(), Category::all().into_iter().filter(|c| policy.allows(*c)).collect());
        let mut listings = self.listings.lock().expect("listings lock");
        if let Some(l) = listings.as_ref().filter(|l| l.key == key) {
            return Ok((catalog.version(), l.names.clone(), l.summaries.clone()));
        }
        let allowed: Vec<&Listing> = catalog.listing().iter().filter(|l| policy.allows(l.category)).collect();
        let version = catalog.version();
        let names = Names { version, tools: allowed.iter().map(|l| l.name.clone()).collect() };
        let summaries = Summaries { version, tools: allowed.into_iter().cloned().collect() };
        let fresh = Listings {
            key,
            names: serde_json::to_vec(&names).expect("names serialize").into(),
            summaries: serde_json::to_vec(&summaries).expect("summaries serialize").into(),
        };
        let answer = (version, fresh.names.clone(), fresh.summaries.clone());
        *listings = Some(fresh);
        Ok(answer)
    }
}

async fn names(State(rest): State<Arc<Rest>>, headers: HeaderMap) -> Response {
    match rest.listings() {
        Ok((version, names, _)) => {
            cached(&rest, version, &headers, ([(header::CONTENT_TYPE, "application/json")], names))
        }
        Err(e) => error_response(&e),
    }
}

async fn summaries(State(rest): State<Arc<Rest>>, headers: HeaderMap) -> Response {
    match rest.listings() {
        Ok((version, _, summaries)) => {
            cached(&rest, version, &headers, ([(header::CONTENT_TYPE, "application/json")], summaries))
        }
        Err(e) => error_response(&e),
    }
}

async fn full(State(rest): State<Arc<Rest>>, Path(name): Path<String>, headers: HeaderMap) -> Response {
    let catalog = rest.host.catalog();
    let Some(record) = catalog.tool(&name).filter(|r| rest.policy_allows(r.category).unwrap_or(false)) else {
        return error_response(&Error::UnknownTool { name, hint: "list the tools at /v1/tools".into() });
    };
    if record.input_schema.is_none()
        && let Err(e) = rest.host.describe(&record.origin).await
    {
        return error_response(&e);
    }
    let Some(def) = rest.host.catalog().tool(&name).and_then(|r| r.to_def()) else {
        return error_response(&Error::Internal(format!("no schema for `{name}` after loading it")));
    };
    cached(&rest, catalog.version(), &headers, Json(def.to_mcp()))
}

async fn call(State(rest): State<Arc<Rest>>, Path(name): Path<String>, body: axum::body::Bytes) -> Response {
    let arguments: Value = if body.is_empty() {
        Value::Object(Default::default())
    } else {
        match serde_json::from_slice(&body) {
            Ok(value) => value,
            Err(e) => {
                let error = Error::InvalidArguments { tool: name, reason: format!("the body is not JSON: {e}") };
                return error_response(&error);
            }
        }
    };
    let mut session = match rest.host.open_session(rest.agent.as_deref()) {
        Ok(session) => session,
        Err(e) => return error_response(&e),
    };
    let outcome = session.call(&name, arguments).await;
    if let Some(error) = outcome.error.as_ref().filter(|e| e.kind() == ErrorKind::UnknownTool) {
        return error_response(error);
    }
    let answer = CallAnswer {
        is_error: outcome.is_error,
        text: outcome.text,
        value: outcome.value,
        error_kind: outcome.error.map(|e| format!("{:?}", e.kind())),
    };
    Json(answer).into_response()
}

async fn prompt(State(rest): State<Arc<Rest>>, headers: HeaderMap) -> Response {
    let catalog = rest.host.catalog();
    match rest.host.session(rest.agent.as_deref()) {
        Ok(session) => cached(
            &rest,
            catalog.version(),
            &headers,
            ([(header::CONTENT_TYPE, "text/plain; charset=utf-8")], session.system_prompt()),
        ),
        Err(e) => error_response(&e),
    }
}

async fn status(State(rest): State<Arc<Rest>>, headers: HeaderMap) -> Response {
    let catalog = rest.host.catalog();
    let body = Status {
        version: catalog.version(),
        plugins: catalog.plugins().map(|p| (p.name().to_owned(), p.origin().to_string())).collect(),
        rejected: catalog.rejected().iter().map(|r| (r.origin.clone(), r.error.to_string())).collect(),
        stale: catalog.stale().map(|(name, s)| (name.to_owned(), format!("{}: {}", s.origin, s.error))).collect(),
    };
    cached(&rest, catalog.version(), &headers, Json(body))
}

/// Every callable tool with its schema (loading every plugin), in the order
/// of the catalog.
async fn all_definitions(rest: &Rest) -> Result<Vec<crate::disclosure::formats::ToolDef>, Error> {
    let policy = rest.host.policy(rest.agent.as_deref())?;
    rest.host.preload(|_, _| {}).await;
    let catalog = rest.host.catalog();
    Ok(catalog
        .tools()
        .into_iter()
        .filter(|r| policy.allows(r.category) && r.category != Category::Mcp)
        .filter_map(|r| r.to_def())
        .collect())
}

async fn export_openai(State(rest): State<Arc<Rest>>, headers: HeaderMap) -> Response {
    let version = rest.host.catalog().version();
    match all_definitions(&rest).await {
        Ok(defs) => {
            let tools: Vec<_> = defs.iter().map(|d| d.to_openai()).collect();
            cached(&rest, version, &headers, Json(tools))
        }
        Err(e) => error_response(&e),
    }
}

async fn export_anthropic(State(rest): State<Arc<Rest>>, headers: HeaderMap) -> Response {
    let version = rest.host.catalog().version();
    let pinned = match rest.host.policy(rest.agent.as_deref()) {
        Ok(policy) => policy.pinned,
        Err(e) => return error_response(&e),
    };
    match all_definitions(&rest).await {
        Ok(defs) => {
            // Anthropic's server-side tool search finds the deferred tools;
            // the pinned ones stay in the prompt.
            let mut tools =
                vec![serde_json::json!({"type": "tool_search_tool_bm25_20251119", "name": "tool_search_tool_bm25"})];
            for def in &defs {
                let tool = def.to_anthropic(!pinned.contains(&def.name));
                tools.push(serde_json::to_value(tool).expect("tools serialize"));
            }
            cached(&rest, version, &headers, Json(tools))
        }
        Err(e) => error_response(&e),
    }
}

async fn openapi(State(rest): State<Arc<Rest>>, headers: HeaderMap) -> Response {
    let version = rest.host.catalog().version();
    cached(&rest, version, &headers, Json(openapi_document()))
}

/// The OpenAPI 3.1 document of these routes; the bodies' schemas are
/// derived from the response types above, so they cannot drift.
fn openapi_document() -> Value {
    fn schema<T: JsonSchema>() -> Value {
        let mut schema = serde_json::to_value(schemars::schema_for!(T)).expect("schemas serialize");
        if let Some(root) = schema.as_object_mut() {
            root.remove("$schema");
        }
        schema
    }
    let json = |name: &str| serde_json::json!({"content": {"application/json": {"schema": {"$ref": format!("#/components/schemas/{name}")}}}});
    let ok = |description: &str, name: &str| {
        let mut response = json(name);
        response["description"] = description.into();
        response
    };
    let error = ok("unknown tool, bad input or failure", "ApiError");
    let name_param =
        serde_json::json!([{"name": "name", "in": "path", "required": true, "schema": {"type": "string"}}]);
    serde_json::json!({
        "openapi": "3.1.0",
        "info": {"title": "Quiver", "version": env!("CARGO_PKG_VERSION"),
                 "description": "Tools at three levels of detail; responses carry ETags from the catalog version."},
        "paths": {
            "/v1/tools": {"get": {"summary": "Level 1: every tool's name", "responses": {"200": ok("names", "Names")}}},
            "/v1/tools/summary": {"get": {"summary": "Level 2: every tool in one line", "responses": {"200": ok("summaries", "Summaries")}}},
            "/v1/tools/{name}": {"get": {"summary": "Level 3: one tool's full MCP definition", "parameters": name_param,
                "responses": {"200": {"description": "an MCP tool definition", "content": {"application/json": {}}}, "404": error}}},
            "/v1/tools/{name}/call": {"post": {"summary": "Call a tool", "parameters": name_param,
                "requestBody": {"content": {"application/json": {"schema": {"type": "object"}}}},
                "responses": {"200": ok("the result, or a failure for the model to read", "CallAnswer"), "404": error, "400": error}}},
            "/v1/prompt": {"get": {"summary": "The Tier-1 text", "responses": {"200": {"description": "text", "content": {"text/plain": {}}}}}},
            "/v1/status": {"get": {"summary": "Plugins, rejected files, stale plugins", "responses": {"200": ok("status", "Status")}}},
            "/v1/export/openai": {"get": {"summary": "Every tool as OpenAI function tools", "responses": {"200": {"description": "tools", "content": {"application/json": {}}}}}},
            "/v1/export/anthropic": {"get": {"summary": "Every tool for Anthropic tool search (defer_loading)", "responses": {"200": {"description": "tools", "content": {"application/json": {}}}}}},
            "/v1/openapi.json": {"get": {"summary": "This document", "responses": {"200": {"description": "OpenAPI 3.1", "content": {"application/json": {}}}}}}
        },
        "components": {"schemas": {
            "Names": schema::<Names>(),
            "Summaries": schema::<Summaries>(),
            "CallAnswer": schema::<CallAnswer>(),
            "ApiError": schema::<ApiError>(),
            "Status": schema::<Status>(),
        }}
    })
}
