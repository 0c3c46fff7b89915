//! The MCP face: an rmcp `ServerHandler` over the host, for stdio and
//! streamable HTTP, speaking 2025-11-25 (sessions) and 2026-07-28
//! (stateless) alike.
//!
//! * `tools/list` is the same for everyone and only changes with the
//!   catalog: the meta-tools of the configured modes, the resident built-in
//!   tools, the flattened tools of legacy modes, and `call_tool`.
//! * `tools/call` accepts those and also any tool of the catalog the
//!   policy allows, by its model-facing name: `request_tools` and
//!   `search_tools` return full schemas, and the model calls what they
//!   returned directly or through `call_tool` (for clients that only call
//!   listed tools).
//! * The Tier-1 text is the server's `instructions`; a catalog change (hot
//!   reload) sends `notifications/tools/list_changed` to sessions and to
//!   `subscriptions/listen` subscribers.
//!
//! The seam an embedder controls is `E`, any rmcp [`ServerHandler`]: its
//! tools are listed after Quiver's and its calls go to it, and everything
//! Quiver does not serve itself (resources, prompts, completion, logging
//! level, resource subscriptions) is its own. [`NoExtras`] serves nothing.
//! The conformance fixture server (`tests/conformance`) is one such `E`.

use std::sync::{Arc, Mutex};

use rmcp::ErrorData;
use rmcp::handler::server::ServerHandler;
#[allow(deprecated)] // logging/setLevel: deprecated by SEP-2577, still part of 2025-11-25
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, CancelledNotificationParam, CompleteRequestMethod,
    CompleteRequestParams, CompleteResult, ConstString, CustomNotification, CustomRequest, CustomResult,
    GetPromptRequestMethod, GetPromptRequestParams, GetPromptResponse, Implementation, InitializeRequestParams,
    InitializeResult, ListPromptsRequestMethod, ListPromptsResult, ListResourceTemplatesRequestMethod,
    ListResourceTemplatesResult, ListResourcesRequestMethod, ListResourcesResult, ListToolsResult,
    PaginatedRequestParams, ProgressNotificationParam, ReadResourceRequestMethod, ReadResourceRequestParams,
    ReadResourceResponse, ServerCapabilities, ServerConfig, SetLevelRequestMethod, SetLevelRequestParams,
    SubscribeRequestMethod, SubscribeRequestParams, SubscriptionFilter, Tool, ToolsCapability,
    UnsubscribeRequestMethod, UnsubscribeRequestParams,
};
use rmcp::service::{NotificationContext, RequestContext, RoleServer, SubscriptionContext};
use serde_json::Value;

use crate::error::Result;
use crate::faces::principals::ByPrincipal;
use crate::host::Host;
use crate::invoke::progress::{self, Progress};
use crate::telemetry::spans;

mod render;

use self::render::{render, to_rmcp};

/// The name of the generic call tool (listed last in `tools/list`).
pub use crate::disclosure::CALL_TOOL;

/// The extras of a plain Quiver server: none (rmcp's defaults: no tools,
/// resources or prompts, `method not found` where that is the answer).
#[derive(Debug, Default, Clone, Copy)]
pub struct NoExtras;

impl ServerHandler for NoExtras {}

/// Quiver as an MCP server, with an embedder's extras `E` beside it. Cheap
/// to clone: one per HTTP session is fine. A clone is a new connection's
/// server: what a session starts (its list-change forwarder) belongs to
/// the clone that served it, and ends when that clone is dropped (rmcp
/// drops it when the session ends).
pub struct McpServer<E = NoExtras> {
    host: Host,
    /// An open session with the agent's policy, resolved once: each request
    /// works on a clone of it (or, with an access token, of its principal's).
    sessions: Arc<ByPrincipal>,
    extras: Arc<E>,
    /// The Tier-1 text: rmcp asks for the server info on every stateless
    /// request.
    instructions: Arc<PerVersion<String>>,
    /// Quiver's part of `tools/list`.
    tools: Arc<PerVersion<Arc<Vec<Tool>>>>,
    /// Tasks of this connection, stopped when it is dropped.
    tasks: ConnectionTasks,
}

/// What lives as long as one connection's server: its tasks, and the
/// catalog version a subscription was accepted at (rmcp acknowledges a
/// `subscriptions/listen` before it calls `listen`: a change in between
/// must still be told).
#[derive(Default)]
struct ConnectionTasks {
    tasks: Mutex<Vec<tokio::task::AbortHandle>>,
    accepted_at: Mutex<Option<u64>>,
}

impl ConnectionTasks {
    fn add(&self, task: tokio::task::AbortHandle) {
        let mut tasks = self.tasks.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        tasks.retain(|t| !t.is_finished());
        tasks.push(task);
    }

    fn accepted_at(&self) -> std::sync::MutexGuard<'_, Option<u64>> {
        self.accepted_at.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl Drop for ConnectionTasks {
    fn drop(&mut self) {
        let tasks = self.tasks.get_mut().unwrap_or_else(std::sync::PoisonError::into_inner);
        tasks.iter().for_each(tokio::task::AbortHandle::abort);
    }
}

/// A value kept for the latest catalog version it was made for.
struct PerVersion<T>(Mutex<Option<(u64, T)>>);

impl<T: Clone> PerVersion<T> {
    fn new() -> Self {
        PerVersion(Mutex::new(None))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Option<(u64, T)>> {
        // A panic elsewhere leaves the kept value usable.
        self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The value kept for `version`, if any.
    fn get(&self, version: u64) -> Option<T> {
        self.lock().as_ref().filter(|(v, _)| *v == version).map(|(_, value)| value.clone())
    }

    /// Keep `value` for `version`, and return it.
    fn keep(&self, version: u64, value: T) -> T {
        *self.lock() = Some((version, value.clone()));
        value
    }
}

impl<E> Clone for McpServer<E> {
    fn clone(&self) -> Self {
        McpServer {
            host: self.host.clone(),
            sessions: self.sessions.clone(),
            extras: self.extras.clone(),
            instructions: self.instructions.clone(),
            tools: self.tools.clone(),
            tasks: ConnectionTasks::default(),
        }
    }
}

impl McpServer {
    /// Serve `host` with the disclosure policy of `agent` (checked now).
    pub fn new(host: Host, agent: Option<String>) -> Result<McpServer> {
        McpServer::with_extras(host, agent, NoExtras)
    }
}

impl<E: ServerHandler> McpServer<E> {
    /// Serve `host` and, beside it, whatever `extras` serves.
    pub fn with_extras(host: Host, agent: Option<String>, extras: E) -> Result<McpServer<E>> {
        let session = host.open_session(agent.as_deref())?;
        Ok(McpServer {
            sessions: Arc::new(ByPrincipal::new(host.clone(), session)),
            host,
            extras: Arc::new(extras),
            instructions: Arc::new(PerVersion::new()),
            tools: Arc::new(PerVersion::new()),
            tasks: ConnectionTasks::default(),
        })
    }

    /// Quiver's part of `tools/list`: stable for a catalog version, so it
    /// is assembled once per version.
    pub async fn tools(&self) -> Arc<Vec<Tool>> {
        let version = self.sessions.default_session().version();
        if let Some(tools) = self.tools.get(version) {
            return tools;
        }
        let mut session = self.sessions.default_session().clone();
        let defs = session.listed_tools().await.tools;
        self.tools.keep(version, Arc::new(defs.iter().filter_map(to_rmcp).collect()))
    }

    /// The Tier-1 text, rendered once per catalog version.
    fn instructions(&self) -> String {
        let version = self.sessions.default_session().version();
        match self.instructions.get(version) {
            Some(text) => text,
            None => self.instructions.keep(version, self.sessions.default_session().instructions()),
        }
    }

    /// Run one `tools/call` of a Quiver tool.
    pub async fn call(&self, name: &str, arguments: Value) -> std::result::Result<CallToolResult, ErrorData> {
        let mut session = self.sessions.default_session().clone();
        render(session.call_reporting(name, arguments, None).await)
    }

    /// `Ok` when the extras declare the capability `declared` looks for,
    /// else JSON-RPC "method not found" for `M`.
    fn offers<M: ConstString>(
        &self,
        declared: impl FnOnce(&ServerCapabilities) -> bool,
        _method: M,
    ) -> std::result::Result<(), ErrorData> {
        if declared(&self.extras.get_info().capabilities) { Ok(()) } else { Err(ErrorData::method_not_found::<M>()) }
    }
}

/// Why `params` do not fit a `tools/call`, if they do not: rmcp reads
/// such a request as a custom one, which would be "method not found". (Only
/// `tools/call`: other standard methods reach `on_custom_request` when a
/// revision removed them, and that is "method not found" indeed.)
fn call_params_fault(method: &str, params: Option<&Value>) -> Option<String> {
    if method != "tools/call" {
        return None;
    }
    let params = params.cloned().unwrap_or(Value::Null);
    serde_json::from_value::<CallToolRequestParams>(params)
        .err()
        .map(|e| format!("invalid params for tools/call: {e} (`arguments` is an object of the tool's parameters)"))
}

/// The SERVER span of a request `method` (of `tool`) this face received:
/// its parent the context in `_meta`, else in the HTTP headers (stdio has
/// none); `mcp.session.id` is the HTTP session's, when there is one.
fn server_span(context: &RequestContext<RoleServer>, method: &str, tool: Option<&str>) -> tracing::Span {
    if !spans::enabled() {
        return tracing::Span::none();
    }
    let parts = context.extensions.get::<http::request::Parts>();
    let id = serde_json::to_string(&context.id).ok();
    let protocol = context.protocol_version().map(|v| v.to_string());
    let session = parts.and_then(|p| p.headers.get("mcp-session-id")).and_then(|v| v.to_str().ok());
    let transport = if parts.is_some() { spans::Transport::Tcp } else { spans::Transport::Pipe };
    let request = spans::Request { method, tool, id: id.as_deref(), protocol: protocol.as_deref(), session, transport };
    let meta = crate::telemetry::context::from_meta(&context.meta);
    spans::server(request, meta, parts.and_then(|p| crate::telemetry::context::from_headers(&p.headers)))
}

impl<E: ServerHandler> McpServer<E> {
    /// Close `span` and count an answered `method` (no tool) that failed
    /// with `error`, if it did.
    fn answered(&self, span: &tracing::Span, method: &str, error: Option<&ErrorData>, started: std::time::Instant) {
        let error_type = error.map(|e| e.code.0.to_string());
        spans::ended(span, error_type.as_deref(), error.map(|e| e.code.0));
        self.host.metrics().operation(method, None, error_type.as_deref(), started.elapsed().as_secs_f64());
    }
}

/// Who the request is from (the HTTP guard's principal), if it says.
fn principal(context: &RequestContext<RoleServer>) -> Option<&crate::faces::guard::Principal> {
    context.extensions.get::<http::request::Parts>()?.extensions.get()
}

/// The context a request carried, in its `_meta` or else (HTTP) its
/// headers: passed on unchanged when no span of Quiver's records it.
fn carried(context: &RequestContext<RoleServer>) -> Option<opentelemetry::Context> {
    use crate::telemetry::context::{from_headers, from_meta, has_span};
    let headers = || context.extensions.get::<http::request::Parts>().and_then(|p| from_headers(&p.headers));
    from_meta(&context.meta).filter(has_span).or_else(headers)
}

/// Tell `notify` of every change of the tool list after catalog version
/// `since` (a new version; a snapshot that changed only the status is
/// not one) until it fails (the client left).
fn forward_catalog_changes<F, Fut>(host: &Host, since: u64, notify: F) -> tokio::task::JoinHandle<()>
where
    F: Fn() -> Fut + Send + 'static,
    Fut: Future<Output = bool> + Send,
{
    let mut snapshots = host.subscribe();
    let mut seen = since;
    tokio::spawn(async move {
        loop {
            let version = snapshots.borrow_and_update().version();
            if version != seen {
                seen = version;
                if !notify().await {
                    break;
                }
            }
            if snapshots.changed().await.is_err() {
                break;
            }
        }
    })
}

#[allow(deprecated)] // resources/subscribe and unsubscribe: still part of 2025-11-25
impl<E: ServerHandler> ServerHandler for McpServer<E> {
    fn get_info(&self) -> ServerConfig {
        let extras = self.extras.get_info();
        let mut capabilities = extras.capabilities;
        capabilities.tools.get_or_insert_with(ToolsCapability::default).list_changed = Some(true);
        let instructions = match extras.instructions {
            Some(theirs) => format!("{}\n\n{theirs}", self.instructions().trim_end()),
            None => self.instructions(),
        };
        ServerConfig::new(capabilities)
            .with_server_info(Implementation::new("quiver", env!("CARGO_PKG_VERSION")))
            .with_instructions(instructions)
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> std::result::Result<ListToolsResult, ErrorData> {
        let started = std::time::Instant::now();
        let span = server_span(&context, "tools/list", None);
        let own = self.sessions.listing(principal(&context));
        let mut tools: Vec<Tool> = match own.map_err(|e| ErrorData::internal_error(e.to_string(), None))? {
            Some(mut own) => own.listed_tools().await.tools.iter().filter_map(to_rmcp).collect(),
            None => self.tools().await.as_ref().clone(),
        };
        let theirs = tracing::Instrument::instrument(self.extras.list_tools(request, context), span.clone()).await;
        self.answered(&span, "tools/list", theirs.as_ref().err(), started);
        tools.extend(theirs?.tools);
        Ok(ListToolsResult::with_all_items(tools))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.extras.get_tool(name)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> std::result::Result<CallToolResponse, ErrorData> {
        if self.extras.get_tool(&request.name).is_some() {
            return self.extras.call_tool(request, context).await;
        }
        let arguments = request.arguments.map(Value::Object).unwrap_or(Value::Null);
        // Progress the call reports (an upstream server's) goes to the
        // client, in order, when it sent a progress token.
        let sink = context.meta.get_progress_token().map(|token| {
            let (sink, mut reports) = tokio::sync::mpsc::unbounded_channel::<Progress>();
            let peer = context.peer.clone();
            tokio::spawn(async move {
                while let Some(p) = reports.recv().await {
                    let mut params = ProgressNotificationParam::new(token.clone(), p.progress);
                    (params.total, params.message) = (p.total, p.message);
                    if peer.notify_progress(params).await.is_err() {
                        break;
                    }
                }
            });
            Arc::new(move |p| drop(sink.send(p))) as progress::Sink
        });
        // The request's SERVER span: what the call logs and exports
        // belongs to it, under the context the client sent.
        let span = server_span(&context, "tools/call", Some(&request.name));
        let started = std::time::Instant::now();
        // An access token's principal calls in its own profile, held to its scopes.
        let of = self.sessions.of(principal(&context));
        let mut session = of.map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
        let call = async { render(session.call_reporting(&request.name, arguments, sink).await) };
        let call = tracing::Instrument::instrument(call, span.clone());
        let call = crate::telemetry::context::carrying(carried(&context), call);
        // A cancelled request stops the call (an upstream server is told).
        let result = tokio::select! {
            result = call => result,
            () = context.ct.cancelled() => Err(ErrorData::internal_error("the request was cancelled", None)),
        };
        let error_type = match &result {
            Err(error) => Some(error.code.0.to_string()),
            Ok(answer) if answer.is_error == Some(true) => Some("tool_error".to_owned()),
            Ok(_) => None,
        };
        spans::ended(&span, error_type.as_deref(), result.as_ref().err().map(|e| e.code.0));
        let seconds = started.elapsed().as_secs_f64();
        // Only a tool this server has is a label (-32602 is an unknown one
        // here): made-up names would take every label slot.
        let unknown = result.as_ref().is_err_and(|e| e.code == rmcp::model::ErrorCode::INVALID_PARAMS);
        let tool = if unknown { crate::telemetry::labels::UNKNOWN } else { &request.name };
        self.host.metrics().operation("tools/call", Some(tool), error_type.as_deref(), seconds);
        Ok(result?.into())
    }

    async fn initialize(
        &self,
        request: InitializeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> std::result::Result<InitializeResult, ErrorData> {
        let started = std::time::Instant::now();
        let span = server_span(&context, "initialize", None);
        context.peer.set_peer_info(request.clone());
        let mut result = self.negotiate_initialize(&request);
        // A token shown less than the face's profile reads its own Tier 1.
        match (&mut result, self.sessions.listing(principal(&context))) {
            (Ok(answer), Ok(Some(own))) => answer.instructions = Some(own.instructions()),
            (Ok(_), Err(error)) => result = Err(ErrorData::internal_error(error.to_string(), None)),
            _ => {}
        }
        self.answered(&span, "initialize", result.as_ref().err(), started);
        result
    }

    async fn ping(&self, context: RequestContext<RoleServer>) -> std::result::Result<(), ErrorData> {
        let started = std::time::Instant::now();
        let span = server_span(&context, "ping", None);
        let result = self.extras.ping(context).await;
        self.answered(&span, "ping", result.as_ref().err(), started);
        result
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        // A 2025-11-25 session: tell it when the tool list changes, until
        // it ends (this server is dropped) or a send fails.
        let peer = context.peer.clone();
        let since = self.host.catalog().version();
        let forwarder = forward_catalog_changes(&self.host, since, move || {
            let peer = peer.clone();
            async move { peer.notify_tool_list_changed().await.is_ok() }
        });
        self.tasks.add(forwarder.abort_handle());
        self.extras.on_initialized(context).await
    }

    fn accepted_subscription_filter(&self, requested: &SubscriptionFilter) -> Option<SubscriptionFilter> {
        let mut accepted = self.extras.accepted_subscription_filter(requested).unwrap_or_default();
        accepted.tools_list_changed = requested.tools_list_changed;
        *self.tasks.accepted_at() = Some(self.host.catalog().version());
        Some(accepted)
    }

    async fn listen(&self, context: SubscriptionContext) -> std::result::Result<(), ErrorData> {
        let since = self.tasks.accepted_at().take().unwrap_or_else(|| self.host.catalog().version());
        let forwarder = context.accepted().tools_list_changed.unwrap_or(false).then(|| {
            let sink = context.sink().clone();
            forward_catalog_changes(&self.host, since, move || {
                let sink = sink.clone();
                async move { sink.notify_tool_list_changed().await.is_ok() }
            })
        });
        // The extras run the subscription (rmcp's default waits for its end).
        let result = self.extras.listen(context).await;
        if let Some(forwarder) = forwarder {
            forwarder.abort();
        }
        result
    }

    // Everything else is the extras', when they declare the capability;
    // otherwise the method is not found (a client must not be told of an
    // empty prompt list the server never offered).

    async fn complete(
        &self,
        request: CompleteRequestParams,
        context: RequestContext<RoleServer>,
    ) -> std::result::Result<CompleteResult, ErrorData> {
        self.offers(|c| c.completions.is_some(), CompleteRequestMethod)?;
        self.extras.complete(request, context).await
    }

    async fn set_level(
        &self,
        request: SetLevelRequestParams,
        context: RequestContext<RoleServer>,
    ) -> std::result::Result<(), ErrorData> {
        self.offers(|c| c.logging.is_some(), SetLevelRequestMethod)?;
        self.extras.set_level(request, context).await
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        context: RequestContext<RoleServer>,
    ) -> std::result::Result<GetPromptResponse, ErrorData> {
        self.offers(|c| c.prompts.is_some(), GetPromptRequestMethod)?;
        self.extras.get_prompt(request, context).await
    }

    async fn list_prompts(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> std::result::Result<ListPromptsResult, ErrorData> {
        self.offers(|c| c.prompts.is_some(), ListPromptsRequestMethod)?;
        self.extras.list_prompts(request, context).await
    }

    async fn list_resources(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> std::result::Result<ListResourcesResult, ErrorData> {
        self.offers(|c| c.resources.is_some(), ListResourcesRequestMethod)?;
        self.extras.list_resources(request, context).await
    }

    async fn list_resource_templates(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> std::result::Result<ListResourceTemplatesResult, ErrorData> {
        self.offers(|c| c.resources.is_some(), ListResourceTemplatesRequestMethod)?;
        self.extras.list_resource_templates(request, context).await
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> std::result::Result<ReadResourceResponse, ErrorData> {
        self.offers(|c| c.resources.is_some(), ReadResourceRequestMethod)?;
        self.extras.read_resource(request, context).await
    }

    async fn subscribe(
        &self,
        request: SubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> std::result::Result<(), ErrorData> {
        self.offers(|c| c.resources.is_some(), SubscribeRequestMethod)?;
        self.extras.subscribe(request, context).await
    }

    async fn unsubscribe(
        &self,
        request: UnsubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> std::result::Result<(), ErrorData> {
        self.offers(|c| c.resources.is_some(), UnsubscribeRequestMethod)?;
        self.extras.unsubscribe(request, context).await
    }

    async fn on_custom_request(
        &self,
        request: CustomRequest,
        context: RequestContext<RoleServer>,
    ) -> std::result::Result<CustomResult, ErrorData> {
        if let Some(fault) = call_params_fault(&request.method, request.params.as_ref()) {
            return Err(ErrorData::invalid_params(fault, None));
        }
        self.extras.on_custom_request(request, context).await
    }

    async fn on_cancelled(&self, notification: CancelledNotificationParam, context: NotificationContext<RoleServer>) {
        self.extras.on_cancelled(notification, context).await
    }

    async fn on_progress(&self, notification: ProgressNotificationParam, context: NotificationContext<RoleServer>) {
        self.extras.on_progress(notification, context).await
    }

    async fn on_roots_list_changed(&self, context: NotificationContext<RoleServer>) {
        self.extras.on_roots_list_changed(context).await
    }

    async fn on_custom_notification(&self, notification: CustomNotification, context: NotificationContext<RoleServer>) {
        self.extras.on_custom_notification(notification, context).await
    }
}
