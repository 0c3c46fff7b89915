//! The routes of the REST face and their handlers, in one table.

use std::sync::Arc;

use axum::Json;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use rmcp::model::{CallToolResult, ContentBlock};
use schemars::JsonSchema;
use serde::Serialize;
use serde_json::Value;

use super::errors::{self, bad_request, error_response};
use super::openapi::{self, Answer, Params, Route, schema};
use super::pages::{self, Level, Page, Pages};

use crate::audit::AuditRecord;
use crate::catalog::Status;
use crate::disclosure::formats::OpenAiSchema;
use crate::error::{Error, ErrorKind, Result};
use crate::faces::guard::Principal;
use crate::faces::principals::ByPrincipal;
use crate::host::Host;
use crate::session::Session;
use crate::telemetry::spans;

pub(super) struct Rest {
    host: Host,
    /// An open session with the face's policy: each request clones it (an
    /// access token's call, its principal's).
    session: Session,
    principals: ByPrincipal,
    /// An ETag suffix naming the agent whose policy applies.
    agent: String,
    pages: Pages,
    /// The OpenAPI document, made once from [`ROUTES`].
    openapi: Value,
}

/// Every route of the REST API.
pub(super) const ROUTES: &[Route<Arc<Rest>>] = &[
    Route {
        method: Method::GET,
        path: "/",
        summary: "Where each face is: the REST API, its OpenAPI document, MCP",
        params: Params::None,
        answer: Answer::Schema("Index", schema::<Index>),
        failures: &[],
        handler: || get(index),
    },
    Route {
        method: Method::GET,
        path: "/v1/",
        summary: "The same index, under the API's prefix",
        params: Params::None,
        answer: Answer::Schema("Index", schema::<Index>),
        failures: &[],
        handler: || get(index),
    },
    Route {
        method: Method::GET,
        path: "/v1/tools",
        summary: "Level 1: every tool's name, a page at a time",
        params: Params::Query(schema::<Page>),
        answer: Answer::Schema("Names", schema::<pages::Names>),
        failures: &[StatusCode::BAD_REQUEST],
        handler: || get(names),
    },
    Route {
        method: Method::GET,
        path: "/v1/tools/summary",
        summary: "Level 2: every tool in one line, a page at a time",
        params: Params::Query(schema::<Page>),
        answer: Answer::Schema("Summaries", schema::<pages::Summaries>),
        failures: &[StatusCode::BAD_REQUEST],
        handler: || get(summaries),
    },
    Route {
        method: Method::GET,
        path: "/v1/tools/{name}",
        summary: "Level 3: one tool's full MCP definition",
        params: Params::Name,
        answer: Answer::Media("an MCP tool definition", "application/json"),
        failures: &[StatusCode::NOT_FOUND],
        handler: || get(full),
    },
    Route {
        method: Method::POST,
        path: "/v1/tools/{name}/call",
        summary: "Call a tool with a JSON object",
        params: Params::Name,
        answer: Answer::Schema("CallAnswer", schema::<CallAnswer>),
        failures: &[StatusCode::BAD_REQUEST, StatusCode::NOT_FOUND],
        handler: || post(call),
    },
    Route {
        method: Method::GET,
        path: "/v1/prompt",
        summary: "The Tier-1 text",
        params: Params::None,
        answer: Answer::Media("the Tier-1 text", "text/plain"),
        failures: &[],
        handler: || get(prompt),
    },
    Route {
        method: Method::GET,
        path: "/v1/status",
        summary: "Plugins (kind, version, state), rejected files, MCP servers",
        params: Params::None,
        answer: Answer::Schema("Status", schema::<StatusAnswer>),
        failures: &[],
        handler: || get(status),
    },
    Route {
        method: Method::GET,
        path: "/v1/audit",
        summary: "The latest audited calls, newest last (the last 1,000 are kept in memory)",
        params: Params::Query(schema::<AuditQuery>),
        answer: Answer::Schema("AuditRecords", schema::<Vec<AuditRecord>>),
        failures: &[],
        handler: || get(audit),
    },
    Route {
        method: Method::GET,
        path: "/v1/export/openai",
        summary: "Every tool as OpenAI function tools",
        params: Params::Query(schema::<OpenAiExport>),
        answer: Answer::Media("tools", "application/json"),
        failures: &[],
        handler: || get(export_openai),
    },
    Route {
        method: Method::GET,
        path: "/v1/export/openai-responses",
        summary: "Every tool as OpenAI Responses API function tools",
        params: Params::Query(schema::<OpenAiExport>),
        answer: Answer::Media("tools", "application/json"),
        failures: &[],
        handler: || get(export_openai_responses),
    },
    Route {
        method: Method::GET,
        path: "/v1/export/anthropic",
        summary: "Every tool for Anthropic tool search (defer_loading)",
        params: Params::None,
        answer: Answer::Media("tools", "application/json"),
        failures: &[],
        handler: || get(export_anthropic),
    },
    Route {
        method: Method::GET,
        path: "/v1/openapi.json",
        summary: "This document",
        params: Params::None,
        answer: Answer::Media("OpenAPI 3.1", "application/json"),
        failures: &[],
        handler: || get(openapi_json),
    },
];

/// The REST routes (under `/v1`) for `host`, with `agent`'s policy
/// (resolved now).
pub fn router(host: &Host, agent: Option<&str>) -> Result<axum::Router> {
    let session = host.open_session(agent)?;
    let state = Arc::new(Rest {
        host: host.clone(),
        principals: ByPrincipal::new(host.clone(), session.clone()),
        session,
        agent: agent.unwrap_or("default").to_owned(),
        pages: Pages::default(),
        openapi: openapi::document(ROUTES),
    });
    let router = ROUTES.iter().fold(axum::Router::new(), |router, route| {
        let (host, pattern) = (host.clone(), route.path);
        let timed = axum::middleware::from_fn(move |request: axum::extract::Request, next: axum::middleware::Next| {
            let host = host.clone();
            async move { timed(&host, pattern, request, next).await }
        });
        router.route(route.path, (route.handler)().route_layer(timed))
    });
    Ok(router.with_state(state))
}

/// Answer `request` and record how long it took under its route's
/// `pattern` (never its path, which holds tool names).
async fn timed(host: &Host, pattern: &str, request: axum::extract::Request, next: axum::middleware::Next) -> Response {
    let started = std::time::Instant::now();
    let method = request.method().clone();
    let response = next.run(request).await;
    let seconds = started.elapsed().as_secs_f64();
    host.metrics().http_request(method.as_str(), pattern, response.status().as_u16(), seconds);
    response
}

/// The answer of a call.
#[derive(Serialize, JsonSchema)]
struct CallAnswer {
    /// Whether the call failed (the text says why, for a model to read).
    is_error: bool,
    /// The result or the error, as a model would see it (for an upstream
    /// server's result: its text blocks).
    text: String,
    /// The result as JSON, when the call succeeded.
    #[serde(skip_serializing_if = "Option::is_none")]
    value: Option<Value>,
    /// The error's kind, when it failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    error_kind: Option<String>,
    /// What of an upstream MCP server's `CallToolResult` `text`, `value`
    /// and `is_error` do not carry: its other content blocks (images,
    /// audio, resource links, embedded resources) and its `_meta`; absent
    /// when there are none.
    #[serde(skip_serializing_if = "Option::is_none")]
    upstream: Option<Value>,
}

type Who = Option<axum::Extension<Principal>>;

/// What `who` is shown, and the ETag suffix that names it: the face's own
/// session, or an OAuth principal's when its view differs (another
/// profile, or one hiding what its scopes do not name).
fn view(rest: &Rest, who: &Who) -> Result<(Session, String)> {
    Ok(match rest.principals.listing(who.as_deref())? {
        None => (rest.session.clone(), rest.agent.clone()),
        Some(session) => {
            use std::hash::{Hash, Hasher};
            let mut hasher = std::hash::DefaultHasher::new();
            session.policy().caller.scopes().map(|g| g.sent().to_vec()).hash(&mut hasher);
            let agent = session.policy().agent.as_deref().unwrap_or("default");
            let tag = format!("{agent}-{:016x}", hasher.finish());
            (session, tag)
        }
    })
}

/// [`view`], or the error answered when the principal's profile cannot be opened.
macro_rules! view_or_answer {
    ($rest:expr, $who:expr) => {
        match view($rest, $who) {
            Ok(view) => view,
            Err(error) => return error_response(&error),
        }
    };
}

/// A cacheable answer: its `ETag` is the catalog version and `suffix` (the
/// view: agent, and scopes when they decide what is shown), so it changes
/// exactly when what is shown does.
fn cached(suffix: &str, version: impl std::fmt::Display, headers: &HeaderMap, body: impl IntoResponse) -> Response {
    let tag = format!("\"v{version}-{suffix}\"");
    let matches = headers.get(header::IF_NONE_MATCH).and_then(|v| v.to_str().ok()).is_some_and(|v| {
        v.split(',').any(|t| {
            let t = t.trim();
            t == "*" || t.trim_start_matches("W/") == tag
        })
    });
    let Ok(etag) = HeaderValue::from_str(&tag) else { return body.into_response() };
    if matches {
        return (StatusCode::NOT_MODIFIED, [(header::ETAG, etag)]).into_response();
    }
    let mut response = body.into_response();
    response.headers_mut().insert(header::ETAG, etag);
    response
}

fn listing(rest: &Rest, who: &Who, level: Level, page: &Page, headers: &HeaderMap) -> Response {
    let (session, tag) = view_or_answer!(rest, who);
    match rest.pages.page(&session.listing(), level, page) {
        Ok((version, json)) => cached(&tag, version, headers, ([(header::CONTENT_TYPE, "application/json")], json)),
        Err(error) => bad_request(error, "start without a cursor and follow next_cursor"),
    }
}

async fn names(State(rest): State<Arc<Rest>>, Query(page): Query<Page>, who: Who, headers: HeaderMap) -> Response {
    listing(&rest, &who, Level::Names, &page, &headers)
}

async fn summaries(State(rest): State<Arc<Rest>>, Query(page): Query<Page>, who: Who, headers: HeaderMap) -> Response {
    listing(&rest, &who, Level::Summaries, &page, &headers)
}

async fn full(State(rest): State<Arc<Rest>>, Path(name): Path<String>, who: Who, headers: HeaderMap) -> Response {
    let (session, tag) = view_or_answer!(&rest, &who);
    let version = session.version();
    match session.definition(&name).await {
        Ok(def) => cached(&tag, version, &headers, Json(def.to_mcp())),
        Err(Error::UnknownTool { name, .. }) => {
            error_response(&Error::UnknownTool { name, hint: "list the tools at /v1/tools".into() })
        }
        Err(error) => error_response(&error),
    }
}

async fn call(
    State(rest): State<Arc<Rest>>,
    Path(name): Path<String>,
    principal: Who,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> Response {
    match rest.principals.of(principal.as_deref()) {
        Ok(session) => answer_call(session, "/v1/tools/{name}/call", name, &headers, &body).await,
        Err(error) => error_response(&error),
    }
}

/// Call `name` on `session` with the JSON object `body`, under a SERVER
/// span for `route`, and answer as `POST /v1/tools/{name}/call` does (the
/// dashboard's call page shares it, with a session of the profile chosen).
pub(crate) async fn answer_call(
    mut session: Session,
    route: &'static str,
    name: String,
    headers: &HeaderMap,
    body: &[u8],
) -> Response {
    let arguments: Value = if body.is_empty() {
        Value::Object(Default::default())
    } else {
        match serde_json::from_slice(body) {
            Ok(value) => value,
            Err(e) => {
                let error = Error::InvalidArguments { tool: name, reason: format!("the body is not JSON: {e}") };
                return error_response(&error);
            }
        }
    };
    let span = spans::rest("POST", route, Some(&name), headers);
    let carried = crate::telemetry::context::from_headers(headers);
    let call = tracing::Instrument::instrument(session.call(&name, arguments), span.clone());
    let mut outcome = crate::telemetry::context::carrying(carried, call).await;
    if let Some(error) = outcome.error.as_ref().filter(|e| e.kind() == ErrorKind::UnknownTool) {
        spans::rest_ended(&span, StatusCode::NOT_FOUND.as_u16(), false);
        return error_response(error);
    }
    // The body is the same either way; the status says whose fault a failure was.
    let status = outcome.error.as_ref().map_or(StatusCode::OK, errors::status_of);
    spans::rest_ended(&span, status.as_u16(), outcome.is_error);
    let (text, upstream) = match outcome.upstream() {
        Some(result) => beside_text(result),
        None => (std::mem::take(&mut outcome.text), None),
    };
    let answer = CallAnswer {
        is_error: outcome.is_error,
        text,
        value: outcome.value().cloned(),
        error_kind: outcome.error.map(|e| format!("{:?}", e.kind())),
        upstream,
    };
    (status, Json(answer)).into_response()
}

/// An upstream server's `result` split so that the body carries each part
/// once: its text blocks joined (the `text`), and what that and `value`
/// (its `structuredContent`) and `is_error` do not carry, its other
/// content blocks and `_meta` (the `upstream`, absent if nothing is left).
fn beside_text(result: &CallToolResult) -> (String, Option<Value>) {
    let texts: Vec<&str> = result.content.iter().filter_map(|b| b.as_text()).map(|t| t.text.as_str()).collect();
    let others: Vec<&ContentBlock> = result.content.iter().filter(|b| b.as_text().is_none()).collect();
    let mut rest = serde_json::Map::new();
    if !others.is_empty() {
        rest.insert("content".into(), serde_json::to_value(others).unwrap_or_default());
    }
    if let Some(meta) = &result.meta {
        rest.insert("_meta".into(), serde_json::to_value(meta).unwrap_or_default());
    }
    (texts.join("\n"), (!rest.is_empty()).then_some(Value::Object(rest)))
}

async fn prompt(State(rest): State<Arc<Rest>>, who: Who, headers: HeaderMap) -> Response {
    let (session, tag) = view_or_answer!(&rest, &who);
    let version = session.version();
    let text = session.system_prompt();
    cached(&tag, version, &headers, ([(header::CONTENT_TYPE, "text/plain; charset=utf-8")], text))
}

/// `/v1/status`: what the catalog serves and refused, and how the
/// caller's Tier 1 fits its prompt budget.
#[derive(Debug, serde::Serialize, JsonSchema)]
struct StatusAnswer {
    #[serde(flatten)]
    status: Status,
    /// The prompt's budget, what it costs, which sections were folded to
    /// fit, and any overrun.
    prompt: crate::disclosure::budget::Fit,
}

async fn status(State(rest): State<Arc<Rest>>, who: Who, headers: HeaderMap) -> Response {
    let mut status = rest.host.status();
    // What was refused is the operator's; a principal whose profile hides
    // what its scopes do not name sees only those plugins and servers.
    let (session, tag) = view_or_answer!(&rest, &who);
    let token = who.as_deref().and_then(Principal::oauth);
    if token.is_some_and(|t| !t.grants.operator()) {
        status.rejected.clear();
        let policy = session.policy();
        status.plugins.retain(|p| policy.authorized(&p.name));
        status.mcp_servers.retain(|s| policy.authorized(&s.name));
    }
    let status = StatusAnswer { status, prompt: (*session.prompt_fit()).clone() };
    // The status changes without the tool list, and parts of it (a
    // database's privilege check) without a new snapshot: its tag is the
    // revision and a digest of what it says.
    let digest = {
        use std::hash::{Hash, Hasher};
        let mut hasher = std::hash::DefaultHasher::new();
        serde_json::to_vec(&status).unwrap_or_default().hash(&mut hasher);
        hasher.finish()
    };
    let version = format!("{}.{}.{digest:016x}", status.status.version, status.status.revision);
    cached(&tag, version, &headers, Json(status))
}

/// Which audited calls: `GET /v1/audit?limit=50&resource=chinook`.
#[derive(Debug, Default, serde::Deserialize, JsonSchema)]
struct AuditQuery {
    /// At most this many, the latest (default 100, at most 1,000).
    limit: Option<usize>,
    /// Only the calls of this resource (a plugin, database or server).
    resource: Option<String>,
}

async fn audit(State(rest): State<Arc<Rest>>, Query(query): Query<AuditQuery>, who: Who) -> Response {
    let limit = query.limit.unwrap_or(100).min(crate::audit::KEPT);
    // An OAuth principal reads its own calls (every one with `quiver:*:admin`).
    let mut records = rest.host.audit(crate::audit::KEPT, query.resource.as_deref());
    if let Some(principal) = who.as_deref().and_then(Principal::oauth) {
        records.retain(|r| principal.sees(r));
    }
    let records = records.split_off(records.len().saturating_sub(limit));
    Json(records).into_response()
}

/// Which variant of an OpenAI export: `GET /v1/export/openai?strict=true`.
#[derive(Debug, Default, serde::Deserialize, JsonSchema)]
struct OpenAiExport {
    /// Rewrite each tool's parameters for OpenAI's strict mode (closed
    /// objects, every property required, optional ones nullable) and mark
    /// it `strict: true`; a tool whose schema strict mode cannot express
    /// (an open map, any-value fields, tuples) keeps its schema and
    /// `strict: false`. The host reads a `null` optional argument as not
    /// given. Default false: the tools' own schemas.
    #[serde(default)]
    strict: bool,
}

impl OpenAiExport {
    fn schema(&self) -> OpenAiSchema {
        if self.strict { OpenAiSchema::Strict } else { OpenAiSchema::Exact }
    }

    /// The ETag's version: each variant is its own representation.
    fn tag(&self, version: u64) -> String {
        if self.strict { format!("{version}-strict") } else { version.to_string() }
    }
}

async fn export_openai(
    State(rest): State<Arc<Rest>>,
    Query(export): Query<OpenAiExport>,
    who: Who,
    headers: HeaderMap,
) -> Response {
    let (session, tag) = view_or_answer!(&rest, &who);
    let version = session.version();
    let defs = session.definitions().await;
    let tools: Vec<_> = defs.iter().map(|d| d.to_openai(export.schema())).collect();
    cached(&tag, export.tag(version), &headers, Json(tools))
}

async fn export_openai_responses(
    State(rest): State<Arc<Rest>>,
    Query(export): Query<OpenAiExport>,
    who: Who,
    headers: HeaderMap,
) -> Response {
    let (session, tag) = view_or_answer!(&rest, &who);
    let version = session.version();
    let defs = session.definitions().await;
    let tools: Vec<_> = defs.iter().map(|d| d.to_openai_responses(export.schema())).collect();
    cached(&tag, export.tag(version), &headers, Json(tools))
}

async fn export_anthropic(State(rest): State<Arc<Rest>>, who: Who, headers: HeaderMap) -> Response {
    let (session, tag) = view_or_answer!(&rest, &who);
    let version = session.version();
    let pinned = &session.policy().pinned;
    // Anthropic's server-side tool search finds the deferred tools; the
    // pinned ones stay in the prompt.
    let mut tools =
        vec![serde_json::json!({"type": "tool_search_tool_bm25_20251119", "name": "tool_search_tool_bm25"})];
    for def in session.definitions().await {
        if let Ok(tool) = serde_json::to_value(def.to_anthropic(!pinned.contains(&def.name))) {
            tools.push(tool);
        }
    }
    cached(&tag, version, &headers, Json(tools))
}

/// What a person (or a client) finds at `/`: where each face is.
#[derive(Serialize, JsonSchema)]
struct Index {
    /// `quiver`.
    name: &'static str,
    /// The host's version.
    version: &'static str,
    /// The REST API's OpenAPI 3.1 document.
    openapi: &'static str,
    /// The MCP endpoint (streamable HTTP).
    mcp: &'static str,
    /// Every tool's name, then one line each, then one definition.
    tools: &'static str,
    /// The Tier-1 text.
    prompt: &'static str,
    /// What is served and what is refused.
    status: &'static str,
}

async fn index() -> Response {
    Json(Index {
        name: "quiver",
        version: env!("CARGO_PKG_VERSION"),
        openapi: "/v1/openapi.json",
        mcp: "/mcp",
        tools: "/v1/tools",
        prompt: "/v1/prompt",
        status: "/v1/status",
    })
    .into_response()
}

async fn openapi_json(State(rest): State<Arc<Rest>>, headers: HeaderMap) -> Response {
    cached(&rest.agent, concat!("api-", env!("CARGO_PKG_VERSION")), &headers, Json(rest.openapi.clone()))
}
