//! The spans of a request as the MCP semantic conventions name them: one
//! SERVER span per request a face receives, its parent the context the
//! client sent (`params._meta`, else the HTTP headers; the headers' context
//! is a link when both exist), and how it ended.
//!
//! The work underneath opens its own spans where it happens (compile,
//! instantiate, the guest call, each egress request, each SQL statement,
//! each upstream call), all of target [`TARGET`], so that the exporter's
//! layer takes them and the log's filter leaves them out unless `-v`.

use opentelemetry::Context;
use opentelemetry::trace::TraceContextExt as _;
use tracing::field::Empty;
use tracing_opentelemetry::OpenTelemetrySpanExt as _;

pub use super::traces::TARGET;

/// How the request arrived (`network.transport`).
#[derive(Debug, Clone, Copy)]
pub enum Transport {
    /// stdio.
    Pipe,
    /// Streamable HTTP, or REST.
    Tcp,
}

impl Transport {
    fn as_str(self) -> &'static str {
        match self {
            Transport::Pipe => "pipe",
            Transport::Tcp => "tcp",
        }
    }
}

/// What a face knows of one MCP request when it starts.
#[derive(Debug, Clone, Copy)]
pub struct Request<'a> {
    /// `mcp.method.name`: `tools/call`, `tools/list`…
    pub method: &'a str,
    /// The tool called (`gen_ai.tool.name`), for `tools/call`.
    pub tool: Option<&'a str>,
    /// `jsonrpc.request.id`, as JSON text.
    pub id: Option<&'a str>,
    /// `mcp.protocol.version`.
    pub protocol: Option<&'a str>,
    /// `mcp.session.id` (2025-11-25 over HTTP only).
    pub session: Option<&'a str>,
    /// `network.transport`.
    pub transport: Transport,
}

/// Whether spans are recorded at all (an exporter, or `-v` logging them):
/// when not, a face need not gather what a span would carry.
pub fn enabled() -> bool {
    tracing::enabled!(target: TARGET, tracing::Level::INFO)
}

/// The SERVER span of `request`, a child of the context it carried in
/// `_meta` (`meta`), or else in its HTTP headers (`headers`), linked to
/// the headers' when both exist. A disabled span (no exporter, no `-v`)
/// costs a callsite check: nothing here is read or made.
pub fn server(request: Request<'_>, meta: Option<Context>, headers: Option<Context>) -> tracing::Span {
    let span = tracing::info_span!(
        target: TARGET,
        "mcp.server",
        otel.name = %match request.tool {
            Some(tool) => format!("{} {tool}", request.method),
            None => request.method.to_owned(),
        },
        otel.kind = "server",
        otel.status_code = Empty,
        mcp.method.name = request.method,
        gen_ai.tool.name = request.tool,
        gen_ai.operation.name = request.tool.map(|_| "execute_tool"),
        jsonrpc.request.id = request.id,
        mcp.protocol.version = request.protocol,
        mcp.session.id = request.session,
        network.transport = request.transport.as_str(),
        error.type = Empty,
        rpc.response.status_code = Empty,
        gen_ai.tool.call.arguments = Empty,
        gen_ai.tool.call.result = Empty,
    );
    if span.is_disabled() {
        return span;
    }
    let meta = meta.filter(super::context::has_span);
    let headers = headers.filter(super::context::has_span);
    match (meta, headers) {
        (Some(parent), linked) => {
            let _ = span.set_parent(parent);
            if let Some(linked) = linked {
                span.add_link(linked.span().span_context().clone());
            }
        }
        (None, Some(parent)) => {
            let _ = span.set_parent(parent);
        }
        (None, None) => {}
    }
    span
}

/// Record how `span` (a [`server`] span) ended: `error_type` is the
/// JSON-RPC code, or `tool_error` for a result with `isError`.
pub fn ended(span: &tracing::Span, error_type: Option<&str>, jsonrpc_code: Option<i32>) {
    if let Some(error_type) = error_type {
        span.record("error.type", error_type);
        span.record("otel.status_code", "error");
    }
    if let Some(code) = jsonrpc_code {
        span.record("rpc.response.status_code", code.to_string());
    }
}

/// The trace id of the current span, when it has one (an exporter runs,
/// or a client sent a context): for the per-call log line. Read only when
/// the line is written.
pub struct TraceId;

impl std::fmt::Display for TraceId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let current = tracing::Span::current();
        if current.is_disabled() {
            return f.write_str("-");
        }
        let cx = current.context();
        let span = cx.span();
        let context = span.span_context();
        if context.is_valid() { write!(f, "{}", context.trace_id()) } else { f.write_str("-") }
    }
}

/// The SERVER span of a REST request (`route` as the router names it,
/// e.g. `/v1/tools/{name}/call`), by the HTTP conventions, a child of the
/// context its headers carry; `tool` is the tool it calls.
pub fn rest(method: &str, route: &str, tool: Option<&str>, headers: &http::HeaderMap) -> tracing::Span {
    let span = tracing::info_span!(
        target: TARGET,
        "http.server",
        otel.name = %format!("{method} {route}"),
        otel.kind = "server",
        otel.status_code = Empty,
        http.request.method = method,
        http.route = route,
        gen_ai.tool.name = tool,
        gen_ai.operation.name = tool.map(|_| "execute_tool"),
        network.transport = Transport::Tcp.as_str(),
        http.response.status_code = Empty,
        error.type = Empty,
        gen_ai.tool.call.arguments = Empty,
        gen_ai.tool.call.result = Empty,
    );
    if !span.is_disabled()
        && let Some(parent) = super::context::from_headers(headers).filter(super::context::has_span)
    {
        let _ = span.set_parent(parent);
    }
    span
}

/// Record the status a [`rest`] span's request was answered with, and
/// `tool_error` when the tool failed.
pub fn rest_ended(span: &tracing::Span, status: u16, tool_error: bool) {
    span.record("http.response.status_code", i64::from(status));
    if status >= 500 {
        span.record("error.type", status.to_string());
        span.record("otel.status_code", "error");
    } else if tool_error {
        span.record("error.type", "tool_error");
        span.record("otel.status_code", "error");
    }
}

/// The CLIENT span of a `tools/call` sent to upstream MCP server `server`.
pub fn upstream(server: &str, tool: &str) -> tracing::Span {
    tracing::info_span!(
        target: TARGET,
        "mcp.client",
        otel.name = %format!("tools/call {tool}"),
        otel.kind = "client",
        otel.status_code = Empty,
        mcp.method.name = "tools/call",
        gen_ai.tool.name = tool,
        gen_ai.operation.name = "execute_tool",
        server.address = server,
        error.type = Empty,
    )
}

/// Record how an [`upstream`] call ended: a timeout, a failed request (its
/// JSON-RPC code when the server answered with an error), or a result
/// with `isError`.
pub fn upstream_ended<E: std::fmt::Debug>(
    span: &tracing::Span,
    answer: &Result<Result<rmcp::model::ServerResult, rmcp::service::ServiceError>, E>,
) {
    use rmcp::model::ServerResult;
    use rmcp::service::ServiceError;
    let error_type = match answer {
        Err(_) => Some("timeout".to_owned()),
        Ok(Err(ServiceError::McpError(error))) => Some(error.code.0.to_string()),
        Ok(Err(_)) => Some("transport".to_owned()),
        Ok(Ok(ServerResult::CallToolResult(result))) if result.is_error == Some(true) => Some("tool_error".to_owned()),
        Ok(Ok(_)) => None,
    };
    if let Some(error_type) = error_type {
        span.record("error.type", error_type);
        span.record("otel.status_code", "error");
    }
}

/// The CLIENT span of one request a connector sends (`method` to `host`;
/// never its path's values, query or credentials).
pub fn egress(method: &str, host: &str) -> tracing::Span {
    tracing::info_span!(
        target: TARGET,
        "http.client",
        otel.name = method,
        otel.kind = "client",
        otel.status_code = Empty,
        http.request.method = method,
        server.address = host,
        http.response.status_code = Empty,
        error.type = Empty,
    )
}

/// Record how an [`egress`] request ended: its status, or why it got none.
pub fn egress_ended(span: &tracing::Span, ended: Result<u16, &'static str>) {
    let error_type = match ended {
        Ok(status) => {
            span.record("http.response.status_code", i64::from(status));
            (status >= 400).then(|| status.to_string())
        }
        Err(why) => Some(why.to_owned()),
    };
    if let Some(error_type) = error_type {
        span.record("error.type", error_type);
        span.record("otel.status_code", "error");
    }
}

/// The CLIENT span of one SQL statement to database `name` of `system`
/// (`sqlite`, `postgresql`).
pub fn sql(system: &str, name: &str) -> tracing::Span {
    tracing::info_span!(
        target: TARGET,
        "db.client",
        otel.name = Empty,
        otel.kind = "client",
        otel.status_code = Empty,
        db.system.name = system,
        db.namespace = name,
        db.operation.name = Empty,
        db.response.returned_rows = Empty,
        db.query.text = Empty,
        error.type = Empty,
    )
}

/// Longest argument, result or statement text put on a span (only when
/// the operator opted in, `[audit] params = "traced"`): the caller cuts
/// longer ones.
pub const MAX_TEXT: usize = 4096;

/// Put a tool call's `arguments` and, when it succeeded, its `result` on
/// `span`, the request's SERVER span (MCP or REST). Both come redacted,
/// sanitised and cut from the caller, which put them here only because
/// the operator opted in.
pub fn call_io(span: &tracing::Span, arguments: &str, result: Option<&str>) {
    span.record("gen_ai.tool.call.arguments", arguments);
    if let Some(result) = result {
        span.record("gen_ai.tool.call.result", result);
    }
}

/// Put a statement's `text` on an [`sql`] span (redacted, sanitised and
/// cut by the caller, and only when the operator opted in).
pub fn sql_text(span: &tracing::Span, text: &str) {
    span.record("db.query.text", text);
}

/// Record what an [`sql`] span learnt: the operation (the first word of
/// a `statement` the policy accepted), the rows it returned or changed,
/// or why it failed.
pub fn sql_ended(span: &tracing::Span, statement: Option<&str>, ended: Result<Option<u64>, &'static str>) {
    if span.is_disabled() {
        return;
    }
    if let Some(statement) = statement {
        let word = statement.split_whitespace().next().unwrap_or_default();
        let operation = if !word.is_empty() && word.len() <= 16 && word.bytes().all(|b| b.is_ascii_alphabetic()) {
            word.to_ascii_uppercase()
        } else {
            "SQL".to_owned()
        };
        span.record("otel.name", operation.as_str());
        span.record("db.operation.name", operation.as_str());
    }
    match ended {
        Ok(Some(rows)) => {
            span.record("db.response.returned_rows", i64::try_from(rows).unwrap_or(i64::MAX));
        }
        Ok(None) => {}
        Err(why) => {
            span.record("error.type", why);
            span.record("otel.status_code", "error");
        }
    }
}

/// The span of one guest call (`action` of `plugin`), in its instance.
pub fn guest(plugin: &str, action: &str) -> tracing::Span {
    tracing::info_span!(
        target: TARGET,
        "wasm.call",
        otel.name = %format!("call {plugin}.{action}"),
        otel.status_code = Empty,
        quiver.plugin = plugin,
        quiver.action = action,
        error.type = Empty,
    )
}

/// The span of instantiating `plugin` for one call.
pub fn instantiate(plugin: &str) -> tracing::Span {
    tracing::info_span!(target: TARGET, "wasm.instantiate", otel.name = %format!("instantiate {plugin}"), quiver.plugin = plugin)
}

/// The span of compiling `plugin` (or loading its compiled form from the
/// cache: `quiver.cache.hit`).
pub fn compile(plugin: &str) -> tracing::Span {
    tracing::info_span!(
        target: TARGET,
        "wasm.compile",
        otel.name = %format!("compile {plugin}"),
        quiver.plugin = plugin,
        quiver.cache.hit = Empty,
    )
}

/// Mark `span` failed, `error_type` saying how.
pub fn failed(span: &tracing::Span, error_type: &str) {
    span.record("error.type", error_type);
    span.record("otel.status_code", "error");
}
