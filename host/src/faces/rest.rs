//! The REST face: the catalog at three levels (names → summaries → full
//! schema), calls, the Tier-1 text, provider exports and an OpenAPI
//! document, with `ETag`s from the catalog version.
//!
//! ```text
//! GET  /v1/tools               level 1: names (pages of 5,000)
//! GET  /v1/tools/summary       level 2: name, category, origin, one line (pages of 500)
//! GET  /v1/tools/{name}        level 3: the full MCP definition (loads its plugin)
//! POST /v1/tools/{name}/call   call it with a JSON object
//! GET  /v1/prompt              the Tier-1 text
//! GET  /v1/status              plugins, rejected files, stale plugins
//! GET  /v1/export/openai       every tool as OpenAI function tools (loads every plugin)
//! GET  /v1/export/anthropic    every tool with `defer_loading`, plus a tool-search tool
//! GET  /v1/openapi.json        this API
//! ```

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use axum::Json;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use bytes::Bytes;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::catalog::{Category, Listing};
use crate::{Error, ErrorKind, Host};

struct Rest {
    host: Host,
    agent: Option<String>,
    listings: Mutex<Option<Listings>>,
}

/// Pages of levels 1 and 2 as JSON, serialized once per catalog snapshot
/// and policy: a snapshot never changes, so neither do they.
struct Listings {
    key: ListingsKey,
    /// What the policy allows of the snapshot's listing.
    allowed: Vec<Listing>,
    /// Pages served so far, by level, offset and limit.
    pages: HashMap<(Level, usize, usize), Bytes>,
}

/// The catalog version and the categories the policy allows.
type ListingsKey = (u64, Vec<Category>);

/// Pages kept per snapshot; more distinct pages than this start over.
const PAGES_KEPT: usize = 256;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Level {
    Names,
    Summaries,
}

impl Level {
    /// The page size when the client asks for none: level 1 fits a large
    /// catalog in one answer; level 2 (~200 bytes a tool) pages, so that
    /// one answer stays small enough to be a discovery call.
    fn default_limit(self) -> usize {
        match self {
            Level::Names => MAX_LIMIT,
            Level::Summaries => 500,
        }
    }
}

/// The largest page.
const MAX_LIMIT: usize = 5000;

/// Which page of a listing: `GET /v1/tools?limit=100&cursor=...`.
#[derive(Debug, Default, Deserialize, JsonSchema)]
struct Page {
    /// Where to go on from: the `next_cursor` of the previous page (opaque).
    cursor: Option<String>,
    /// At most this many tools, 1 to 5,000 (default: 5,000 at level 1, 500 at level 2).
    limit: Option<usize>,
}

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
struct Names<'a> {
    /// The catalog version these names belong to.
    version: u64,
    /// The tools' model-facing names, in catalog order.
    tools: Vec<&'a str>,
    /// The cursor of the next page, when there is one.
    #[serde(skip_serializing_if = "Option::is_none")]
    next_cursor: Option<String>,
}

/// Level 2.
#[derive(Serialize, JsonSchema)]
struct Summaries<'a> {
    /// The catalog version.
    version: u64,
    /// The tools in one line each, in catalog order.
    tools: &'a [Listing],
    /// The cursor of the next page, when there is one.
    #[serde(skip_serializing_if = "Option::is_none")]
    next_cursor: Option<String>,
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

    /// One page of level 1 or 2 of the current catalog, as JSON.
    fn page(&self, level: Level, page: &Page) -> std::result::Result<(u64, Bytes), PageError> {
        let limit = page.limit.unwrap_or(level.default_limit());
        if !(1..=MAX_LIMIT).contains(&limit) {
            return Err(PageError::BadRequest(format!("limit must be 1 to {MAX_LIMIT}, not {limit}")));
        }
        let offset = match page.cursor.as_deref().map(str::parse::<usize>) {
            None => 0,
            Some(Ok(offset)) => offset,
            Some(Err(_)) => return Err(PageError::BadRequest("the cursor is not one this server gave".into())),
        };
        let catalog = self.host.catalog();
        let version = catalog.version();
        let policy = self.host.policy(self.agent.as_deref()).map_err(PageError::Host)?;
        let key = (version, Category::all().into_iter().filter(|c| policy.allows(*c)).collect());
        let mut cache = self.listings.lock().expect("listings lock");
        let listings = match cache.take().filter(|l| l.key == key) {
            Some(listings) => cache.insert(listings),
            None => cache.insert(Listings {
                key,
                allowed: catalog.listing().iter().filter(|l| policy.allows(l.category)).cloned().collect(),
                pages: HashMap::new(),
            }),
        };
        if let Some(bytes) = listings.pages.get(&(level, offset, limit)) {
            return Ok((version, bytes.clone()));
        }
        let tools = &listings.allowed[offset.min(listings.allowed.len())..];
        let (tools, rest) = tools.split_at(limit.min(tools.len()));
        let next_cursor = (!rest.is_empty()).then(|| (offset + tools.len()).to_string());
        let json = match level {
            Level::Names => {
                let names = tools.iter().map(|l| l.name.as_str()).collect();
                serde_json::to_vec(&Names { version, tools: names, next_cursor })
            }
            Level::Summaries => serde_json::to_vec(&Summaries { version, tools, next_cursor }),
        };
        let bytes = Bytes::from(json.expect("listings serialize"));
        if listings.pages.len() >= PAGES_KEPT {
            listings.pages.clear();
        }
        listings.pages.insert((level, offset, limit), bytes.clone());
        Ok((version, bytes))
    }
}

/// Why a page cannot be served.
enum PageError {
    /// A limit or cursor the API does not accept.
    BadRequest(String),
    /// The host could not resolve the policy.
    Host(Error),
}

fn listing(rest: &Rest, level: Level, page: &Page, headers: &HeaderMap) -> Response {
    match rest.page(level, page) {
        Ok((version, json)) => cached(rest, version, headers, ([(header::CONTENT_TYPE, "application/json")], json)),
        Err(PageError::Host(e)) => error_response(&e),
        Err(PageError::BadRequest(error)) => {
            let fix = Some("start without a cursor and follow next_cursor".to_owned());
            (StatusCode::BAD_REQUEST, Json(ApiError { error, fix })).into_response()
        }
    }
}

async fn names(State(rest): State<Arc<Rest>>, Query(page): Query<Page>, headers: HeaderMap) -> Response {
    listing(&rest, Level::Names, &page, &headers)
}

async fn summaries(State(rest): State<Arc<Rest>>, Query(page): Query<Page>, headers: HeaderMap) -> Response {
    listing(&rest, Level::Summaries, &page, &headers)
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
    // The query parameters, from `Page`'s own schema.
    let page = schema::<Page>();
    let page_params: Vec<Value> = page["properties"]
        .as_object()
        .into_iter()
        .flatten()
        .map(|(name, schema)| {
            serde_json::json!({"name": name, "in": "query", "required": false, "schema": schema,
                                                  "description": schema["description"]})
        })
        .collect();
    serde_json::json!({
        "openapi": "3.1.0",
        "info": {"title": "Quiver", "version": env!("CARGO_PKG_VERSION"),
                 "description": "Tools at three levels of detail; responses carry ETags from the catalog version."},
        "paths": {
            "/v1/tools": {"get": {"summary": "Level 1: every tool's name, a page at a time", "parameters": page_params,
                "responses": {"200": ok("names", "Names"), "400": error}}},
            "/v1/tools/summary": {"get": {"summary": "Level 2: every tool in one line, a page at a time", "parameters": page_params,
                "responses": {"200": ok("summaries", "Summaries"), "400": error}}},
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
