//! One HTTP server for every face: MCP (streamable HTTP) at `/mcp`, the
//! REST API under `/v1`, the operators' dashboard under `/ui`, and
//! Prometheus metrics at `/metrics`.
//!
//! Safe defaults: loopback bind; `Host` and `Origin` checked against
//! loopback names (DNS-rebinding protection) unless the operator lists
//! others; a `Host` required on every route; a bearer token required for a
//! non-loopback bind; a request body limit; a capped number of connections,
//! none held without a request in flight past its timeout
//! ([`connections`](super::connections)); graceful shutdown (running calls
//! finish).

use std::net::SocketAddr;
use std::sync::Arc;

use axum::extract::{DefaultBodyLimit, Request};
use axum::http::{StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use tokio_util::sync::CancellationToken;

use rmcp::handler::server::ServerHandler;

use super::dashboard::signin::SignIns;
use super::envelope::ErrorReply;
use super::guard::Guard;
use super::mcp::{McpServer, NoExtras};
use super::sessions::{CappedSessions, SessionsError};
use crate::auth::Authenticator;
use crate::error::{Error, Result};
use crate::host::Host;

/// How to serve over HTTP.
#[derive(Debug, Clone)]
pub struct HttpOptions {
    /// Where to listen (default `127.0.0.1:8080`).
    pub addr: SocketAddr,
    /// The bearer token every request must carry (token mode); off
    /// loopback, it or an [`authenticator`](Self::authenticator) is required.
    pub token: Option<String>,
    /// How requests prove who they are from, when the `[auth]` table
    /// says (OAuth); `None`: token mode with `token`, or nobody asked.
    pub authenticator: Option<Arc<Authenticator>>,
    /// Browser origins allowed besides loopback ones, e.g. `https://app.example.com`.
    pub allowed_origins: Vec<String>,
    /// `Host` names allowed besides loopback ones and the bound address
    /// (on a loopback bind; off loopback the token is the guard).
    pub allowed_hosts: Vec<String>,
    /// The largest request body, in bytes.
    pub max_body_bytes: usize,
    /// The agent profile whose disclosure policy applies.
    pub agent: Option<String>,
    /// Longest a connection may go from accept to a complete request head,
    /// whatever it sends, before it is closed.
    pub header_timeout: std::time::Duration,
    /// Longest a connection may stay open with no request in flight after
    /// a response (a kept-alive connection waiting for, or slowly sending,
    /// its next request). A response in flight is never cut.
    pub idle_timeout: std::time::Duration,
    /// Connections served at once; more wait in the listen backlog.
    pub max_connections: usize,
    /// MCP sessions (2025-11-25) open at once; past it `initialize` is
    /// answered 503 until one ends (`DELETE /mcp`, or idle for 5 minutes).
    pub max_sessions: usize,
    /// Longest the requests in flight may take to finish once the server
    /// drains (its `shutdown` token is cancelled: it stops accepting at
    /// once and `/readyz` says so); past it their connections are cut.
    pub drain: std::time::Duration,
}

impl Default for HttpOptions {
    fn default() -> Self {
        HttpOptions {
            addr: SocketAddr::from(([127, 0, 0, 1], 8080)),
            token: None,
            authenticator: None,
            allowed_origins: Vec::new(),
            allowed_hosts: Vec::new(),
            max_body_bytes: 4 * 1024 * 1024,
            agent: None,
            header_timeout: std::time::Duration::from_secs(10),
            idle_timeout: std::time::Duration::from_secs(60),
            max_connections: 1024,
            max_sessions: 1024,
            drain: DEFAULT_DRAIN,
        }
    }
}

/// How long requests in flight may take to finish when the server drains,
/// unless `--drain-seconds` says otherwise: Kubernetes waits 30 s before
/// it kills a pod, so this leaves time for the upstream servers to stop.
pub const DEFAULT_DRAIN: std::time::Duration = std::time::Duration::from_secs(10);

/// The routes of both faces, with the checks of `options` (for tests and
/// embedders that run their own server).
pub fn router(host: &Host, options: &HttpOptions, shutdown: CancellationToken) -> Result<axum::Router> {
    router_with(host, options, shutdown, NoExtras)
}

/// [`router`] with an embedder's MCP `extras` served beside Quiver's tools
/// (see [`McpServer`]).
pub fn router_with<E: ServerHandler>(
    host: &Host,
    options: &HttpOptions,
    shutdown: CancellationToken,
    extras: E,
) -> Result<axum::Router> {
    let loopback = options.addr.ip().is_loopback();
    let auth = options.authenticator.clone().unwrap_or_else(|| Arc::new(Authenticator::token(options.token.clone())));
    if !loopback && !auth.required() {
        return Err(Error::config(
            format!("--http {}", options.addr),
            "serving off loopback needs a bearer token (pass --token or set QUIVER_TOKEN) or [auth] mode = \"oauth\"",
        ));
    }
    let mcp = McpServer::with_extras(host.clone(), options.agent.clone(), extras)?;
    let mut origins: Vec<String> =
        ["http://localhost:*", "http://127.0.0.1:*", "http://[::1]:*"].map(String::from).into();
    origins.extend(options.allowed_origins.iter().cloned());
    // Against DNS rebinding: the names a loopback server may be reached
    // by, for /mcp (rmcp checks) and the REST routes (the guard checks).
    let mut hosts: Vec<String> = ["localhost", "127.0.0.1", "::1"].map(String::from).into();
    hosts.push(options.addr.ip().to_string());
    hosts.extend(options.allowed_hosts.iter().cloned());
    let mut config = StreamableHttpServerConfig::default()
        .with_allowed_hosts(hosts.clone())
        .with_allowed_origins(origins.clone())
        .with_max_request_body_bytes(options.max_body_bytes)
        // A plain answer is one JSON body; SSE only when notifications
        // (progress, logs) precede it.
        .with_json_response(true)
        // rmcp ends every session and every response stream, running calls'
        // included, when this token is cancelled: so at the drain's end,
        // not its start. The event streams of sessions end at its start
        // ([`CappedSessions`]), as they would never end by themselves.
        .with_cancellation_token(drain_end(&shutdown, options.drain));
    if !loopback {
        // Reached by a public name: the token is the guard, not the Host header.
        config = config.disable_allowed_hosts();
    }
    // 2025-11-25 sessions shared by the replicas, when `[sessions] redis` says where.
    let env = |var: &str| std::env::var(var).ok();
    let redis = super::shared::Redis::new(host.sessions_settings(), &env)?.map(Arc::new);
    let shared = redis.clone().map(|redis| Arc::new(super::shared::SharedSessions::on(redis)));
    if let Some(shared) = &shared {
        config.session_store = Some(shared.clone());
    }
    let sessions = Arc::new(CappedSessions::new(options.max_sessions, shared, shutdown.clone()));
    let service = StreamableHttpService::new(move || Ok(mcp.clone()), sessions.clone(), config);
    let hosts = if loopback { hosts } else { Vec::new() };
    let sign_ins = Arc::new(
        match auth.as_ref() {
            Authenticator::None => SignIns::new(None, !loopback),
            Authenticator::Token(token) => SignIns::new(Some(token.clone()), !loopback),
            // A browser signs in through the authorization server, not with a
            // token typed in; behind TLS (an https resource) its cookies are `Secure`.
            Authenticator::Oauth(oauth) => SignIns::closed(!loopback || oauth.resource.starts_with("https://")),
        }
        .shared(redis),
    );
    let metrics = host.metrics().clone();
    let guard = Arc::new(Guard { auth: auth.clone(), origins, hosts, sign_ins: Some(sign_ins.clone()), metrics });
    let max_body = options.max_body_bytes;
    let scope_check = ScopeCheck { host: host.clone(), auth: auth.clone() };
    let router = super::rest::router(host, options.agent.as_deref())?
        .merge(super::metrics::router(host))
        .merge(super::health::router(shutdown.clone()))
        .merge(super::oauth::router(&auth))
        .merge(super::dashboard::router(host, options.agent.as_deref(), sign_ins, auth.clone(), shutdown.clone())?)
        .nest_service("/mcp", service)
        .layer(middleware::from_fn(move |request: Request, next: Next| {
            check_envelope(request, next, max_body, sessions.clone(), scope_check.clone())
        }))
        .layer(DefaultBodyLimit::max(options.max_body_bytes))
        .layer(middleware::from_fn(move |request: Request, next: Next| {
            let guard = guard.clone();
            async move { guard.check(request, next).await }
        }));
    Ok(router)
}

/// A token cancelled `drain` after `shutdown` is (at once outside a runtime).
fn drain_end(shutdown: &CancellationToken, drain: std::time::Duration) -> CancellationToken {
    let Ok(runtime) = tokio::runtime::Handle::try_current() else { return shutdown.clone() };
    let (ended, shutdown) = (CancellationToken::new(), shutdown.clone());
    let end = ended.clone();
    runtime.spawn(async move {
        shutdown.cancelled().await;
        tokio::time::sleep(drain).await;
        end.cancel();
    });
    ended
}

/// Serve only `GET /metrics` on `addr` (beside the stdio face) until
/// `shutdown` is cancelled: off loopback only with a bearer `token`, and
/// with the HTTP face's `Host` check on a loopback bind.
pub async fn serve_metrics(
    host: &Host,
    addr: SocketAddr,
    token: Option<String>,
    shutdown: CancellationToken,
    bound: impl FnOnce(SocketAddr),
) -> Result<()> {
    let loopback = addr.ip().is_loopback();
    if !loopback && token.is_none() {
        return Err(Error::config(
            format!("--metrics {addr}"),
            "serving metrics off loopback needs a bearer token: pass --token or set QUIVER_TOKEN",
        ));
    }
    let hosts = if loopback {
        ["localhost", "127.0.0.1", "::1"].into_iter().map(String::from).chain([addr.ip().to_string()]).collect()
    } else {
        Vec::new()
    };
    let auth = Arc::new(Authenticator::token(token));
    let guard = Arc::new(Guard { auth, origins: Vec::new(), hosts, sign_ins: None, metrics: host.metrics().clone() });
    let router = super::metrics::router(host).layer(middleware::from_fn(move |request: Request, next: Next| {
        let guard = guard.clone();
        async move { guard.check(request, next).await }
    }));
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|e| Error::Io { path: addr.to_string(), message: format!("cannot listen: {e}") })?;
    let addr = listener.local_addr().map_err(|e| Error::internal("metrics server", e))?;
    tracing::info!(%addr, "serving metrics at /metrics");
    bound(addr);
    let defaults = HttpOptions::default();
    let limits = super::connections::Limits {
        header_timeout: defaults.header_timeout,
        idle_timeout: defaults.idle_timeout,
        max_connections: 64,
        drain: defaults.drain,
    };
    super::connections::accept(listener, router, limits, shutdown).await;
    Ok(())
}

/// Serve both faces on `options.addr` until `shutdown` is cancelled; then
/// drain: stop accepting (new connections are refused), end server-sent
/// event streams, and let running requests finish within
/// [`drain`](HttpOptions::drain), after which the rest are cut. `bound` is
/// told the address actually bound (useful with port 0).
pub async fn serve(
    host: &Host,
    options: &HttpOptions,
    shutdown: CancellationToken,
    bound: impl FnOnce(SocketAddr),
) -> Result<()> {
    serve_with(host, options, shutdown, bound, NoExtras).await
}

/// [`serve`] with an embedder's MCP `extras` (see [`router_with`]).
pub async fn serve_with<E: ServerHandler>(
    host: &Host,
    options: &HttpOptions,
    shutdown: CancellationToken,
    bound: impl FnOnce(SocketAddr),
    extras: E,
) -> Result<()> {
    let router = router_with(host, options, shutdown.clone(), extras)?;
    let listener = tokio::net::TcpListener::bind(options.addr)
        .await
        .map_err(|e| Error::Io { path: options.addr.to_string(), message: format!("cannot listen: {e}") })?;
    let addr = listener.local_addr().map_err(|e| Error::internal("HTTP server", e))?;
    tracing::info!(%addr, "serving MCP at /mcp and REST at /v1");
    bound(addr);
    let limits = super::connections::Limits {
        header_timeout: options.header_timeout,
        idle_timeout: options.idle_timeout,
        max_connections: options.max_connections,
        drain: options.drain,
    };
    super::connections::accept(listener, router, limits, shutdown).await;
    Ok(())
}

/// The scope check of a `tools/call` that names its tool: a tool of the
/// catalog the token's scopes do not cover is refused here, with HTTP 403
/// and the step-up challenge (a meta-tool's target is checked in the
/// session, and refused as a result the model reads).
#[derive(Clone)]
struct ScopeCheck {
    host: Host,
    auth: Arc<Authenticator>,
}

impl ScopeCheck {
    fn refuse(&self, parts: &http::request::Parts, message: &super::envelope::Message) -> Option<Response> {
        let oauth = self.auth.oauth()?;
        let name = message.tool.as_deref()?;
        let principal = parts.extensions.get::<super::guard::Principal>()?.oauth()?;
        let catalog = self.host.catalog();
        let tool = catalog.tool(name)?;
        if principal.grants.allows(&tool.name, &tool.origin, tool.access) {
            return None;
        }
        self.host.metrics().auth_refused("insufficient_scope");
        let needed = crate::auth::scopes::Grants::needed(&tool.origin, tool.access);
        let (tool, subject) = (crate::catalog::shown::shown(name), crate::catalog::shown::shown(&principal.subject));
        tracing::info!(%tool, scope = %needed, %subject, "refused a call above the token's scopes");
        Some(super::oauth::insufficient_scope(oauth, &principal.grants, &needed, message.id.as_deref()))
    }
}

/// A JSON `POST` to `/mcp` that rmcp cannot read is answered here as
/// JSON-RPC asks (`-32700` parse error, `-32600` invalid request, with HTTP
/// 400; see [`envelope`](super::envelope)); rmcp would answer 415 with
/// plain text, which a client cannot tell from a wrong content type. So is an `initialize`
/// when every session slot is taken (HTTP 503, `Retry-After`). The rest
/// goes on to rmcp. A session's `DELETE` is answered 200, not rmcp's 202:
/// the spec leaves the code open, and the official Python SDK takes
/// anything but 200 and 204 for a failure.
async fn check_envelope(
    request: Request,
    next: Next,
    max_body: usize,
    sessions: Arc<CappedSessions>,
    scopes: ScopeCheck,
) -> Response {
    // A session opened with an access token is its principal's alone.
    let owner = request.extensions().get::<super::guard::Principal>().and_then(|p| p.oauth()).map(|p| p.key());
    let session = request.headers().get("mcp-session-id").and_then(|v| v.to_str().ok());
    if request.uri().path().starts_with("/mcp")
        && let Some(id) = session
    {
        match sessions.check(id).await {
            Ok(Some(bound)) if Some(&bound) != owner.as_ref() => {
                scopes.host.metrics().auth_refused("session_owner");
                let text = "this MCP session was opened by another principal: open your own (initialize)";
                return (StatusCode::FORBIDDEN, axum::Json(ErrorReply::new(None, -32003, text))).into_response();
            }
            Ok(_) => {}
            Err(SessionsError::Shared(reason)) => return unshared(&reason),
            Err(error @ SessionsError::Full(_)) => return full(None, &error),
            Err(error) => return (StatusCode::INTERNAL_SERVER_ERROR, error.to_string()).into_response(),
        }
    }
    if request.method() == axum::http::Method::DELETE && request.uri().path().starts_with("/mcp") {
        let mut response = next.run(request).await;
        if response.status() == StatusCode::ACCEPTED {
            *response.status_mut() = StatusCode::OK;
        }
        return response;
    }
    let is_json = request
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.split(';').next().is_some_and(|t| t.trim().eq_ignore_ascii_case("application/json")));
    if request.method() != axum::http::Method::POST || !request.uri().path().starts_with("/mcp") || !is_json {
        return next.run(request).await;
    }
    let (parts, body) = request.into_parts();
    let bytes = match axum::body::to_bytes(body, max_body).await {
        Ok(bytes) => bytes,
        Err(_) => return (StatusCode::PAYLOAD_TOO_LARGE, format!("the body is over {max_body} bytes")).into_response(),
    };
    let message = match super::envelope::check(&bytes) {
        Ok(message) => message,
        Err(refused) => {
            let reply = ErrorReply::new(refused.id.as_deref(), refused.code, &refused.message);
            return (StatusCode::BAD_REQUEST, axum::Json(reply)).into_response();
        }
    };
    if let Some(refused) = scopes.refuse(&parts, &message) {
        return refused;
    }
    if message.initialize && sessions.full() {
        return full(message.id.as_deref(), &SessionsError::Full(sessions.max()));
    }
    let response = next.run(Request::from_parts(parts, axum::body::Body::from(bytes))).await;
    if message.initialize
        && let Some(id) = response.headers().get("mcp-session-id").and_then(|v| v.to_str().ok())
        && let Err(reason) = sessions.opened(id, owner).await
    {
        return unshared(&reason);
    }
    response
}

/// The answer when every session slot is taken: retry (a slot is given
/// back when a session ends).
fn full(id: Option<&serde_json::value::RawValue>, error: &SessionsError) -> Response {
    let text = error.to_string();
    let reply = axum::Json(ErrorReply::new(id, -32000, &text));
    (StatusCode::SERVICE_UNAVAILABLE, [(header::RETRY_AFTER, "5")], reply).into_response()
}

/// The answer when the shared session store cannot say who owns a
/// session, or keep who does: retry (on this or another replica).
fn unshared(reason: &str) -> Response {
    tracing::warn!(target: "quiver::faces", %reason, "the shared session store cannot answer");
    let text = "the session store cannot answer now: retry";
    let reply = axum::Json(ErrorReply::new(None, -32000, text));
    (StatusCode::SERVICE_UNAVAILABLE, [(header::RETRY_AFTER, "1")], reply).into_response()
}
