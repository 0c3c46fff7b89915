//! The suite's fixtures as one rmcp `ServerHandler`: Quiver serves it as
//! the extras of its MCP face.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CompleteRequestParams, CompleteResult, GetPromptRequestParams,
    GetPromptResponse, ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult, ListToolsResult,
    PaginatedRequestParams, ReadResourceRequestParams, ReadResourceResponse, ServerCapabilities, ServerConfig,
    SubscribeRequestParams, SubscriptionFilter, Tool, UnsubscribeRequestParams,
};
#[allow(deprecated)] // logging: deprecated by SEP-2577, still part of 2025-11-25
use rmcp::model::{LoggingLevel, LoggingMessageNotificationParam, SetLevelRequestParams};
use rmcp::service::{RequestContext, RoleServer, SubscriptionContext, SubscriptionSink};
use rmcp::{ErrorData, ServerHandler};
use serde::de::DeserializeOwned;
use serde_json::Value;

/// A 1×1 red PNG.
pub const PNG: &str =
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8/5+hHgAHggJ/PchI7wAAAABJRU5ErkJggg==";
/// A WAV file holding no samples.
pub const WAV: &str = "UklGRiQAAABXQVZFZm10IBAAAAABAAEARKwAAIhYAQACABAAZGF0YQAAAAA=";

/// The fixtures, with the little state they keep.
#[derive(Default)]
pub struct Fixtures {
    /// The level `logging/setLevel` chose (2025-11-25 sessions).
    #[allow(deprecated)]
    level: Mutex<Option<LoggingLevel>>,
    /// The resources `resources/subscribe` asked for.
    subscriptions: Mutex<Vec<String>>,
    /// Whether `test_dynamic_tool` / `test_dynamic_prompt` are listed.
    dynamic_tool: AtomicBool,
    dynamic_prompt: AtomicBool,
    /// Open `subscriptions/listen` streams (2026-07-28).
    listeners: Mutex<Vec<SubscriptionSink>>,
}

/// A fixture payload written as the suite states it, as its rmcp type.
pub fn from_json<T: DeserializeOwned>(value: Value) -> T {
    serde_json::from_value(value).expect("fixture JSON matches its MCP type")
}

#[allow(deprecated)]
fn rank(level: LoggingLevel) -> u8 {
    level as u8
}

impl Fixtures {
    /// Send a log message unless it is below the level the client chose:
    /// per request in 2026-07-28 (no `logLevel`, no logs), per session
    /// before (everything until `logging/setLevel`).
    #[allow(deprecated)]
    pub async fn log(&self, context: &RequestContext<RoleServer>, level: LoggingLevel, data: &str) {
        let floor = match context.meta.log_level() {
            Some(floor) => floor,
            None if context.meta.protocol_version().is_some() => return,
            None => self.level.lock().expect("level lock").unwrap_or(LoggingLevel::Debug),
        };
        if rank(level) < rank(floor) {
            return;
        }
        let message: LoggingMessageNotificationParam =
            from_json(serde_json::json!({ "level": level, "logger": "quiver-conformance", "data": data }));
        let _ = context.peer.notify_logging_message(message).await;
    }

    /// Add or remove `test_dynamic_tool` and tell the listeners.
    pub async fn toggle_tool(&self) -> String {
        let listed = !self.dynamic_tool.fetch_xor(true, Ordering::SeqCst);
        for sink in self.listeners() {
            let _ = sink.notify_tool_list_changed().await;
        }
        format!("test_dynamic_tool is {}", if listed { "listed" } else { "gone" })
    }

    /// Add or remove `test_dynamic_prompt` and tell the listeners.
    pub async fn toggle_prompt(&self) -> String {
        let listed = !self.dynamic_prompt.fetch_xor(true, Ordering::SeqCst);
        for sink in self.listeners() {
            let _ = sink.notify_prompt_list_changed().await;
        }
        format!("test_dynamic_prompt is {}", if listed { "listed" } else { "gone" })
    }

    fn listeners(&self) -> Vec<SubscriptionSink> {
        self.listeners.lock().expect("listeners lock").clone()
    }
}

#[allow(deprecated)]
impl ServerHandler for Fixtures {
    fn get_info(&self) -> ServerConfig {
        let capabilities = ServerCapabilities::builder()
            .enable_tools()
            .enable_tool_list_changed()
            .enable_prompts()
            .enable_prompts_list_changed()
            .enable_resources()
            .enable_resources_subscribe()
            .enable_logging()
            .enable_completions()
            .build();
        ServerConfig::new(capabilities)
            .with_instructions("The MCP conformance suite's fixtures are served beside Quiver's tools.")
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(crate::tools::all(self.dynamic_tool.load(Ordering::SeqCst))))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        crate::tools::all(self.dynamic_tool.load(Ordering::SeqCst)).into_iter().find(|tool| tool.name == name)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        crate::tools::call(self, request, context).await
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        Ok(crate::resources::list())
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        Ok(crate::resources::templates())
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        crate::resources::read(&request.uri).map(Into::into)
    }

    async fn subscribe(
        &self,
        request: SubscribeRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let mut subscriptions = self.subscriptions.lock().expect("subscriptions lock");
        if !subscriptions.contains(&request.uri) {
            subscriptions.push(request.uri);
        }
        Ok(())
    }

    async fn unsubscribe(
        &self,
        request: UnsubscribeRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.subscriptions.lock().expect("subscriptions lock").retain(|uri| *uri != request.uri);
        Ok(())
    }

    fn accepted_subscription_filter(&self, requested: &SubscriptionFilter) -> Option<SubscriptionFilter> {
        Some(requested.supported_by(&self.get_info().capabilities))
    }

    async fn listen(&self, context: SubscriptionContext) -> Result<(), ErrorData> {
        let id = context.sink().id().clone();
        self.listeners.lock().expect("listeners lock").push(context.sink().clone());
        context.cancelled().await;
        self.listeners.lock().expect("listeners lock").retain(|sink| *sink.id() != id);
        Ok(())
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        Ok(crate::prompts::list(self.dynamic_prompt.load(Ordering::SeqCst)))
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        crate::prompts::get(&request)
    }

    async fn complete(
        &self,
        _request: CompleteRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, ErrorData> {
        Ok(from_json(
            serde_json::json!({ "resultType": "complete", "completion": { "values": [], "total": 0, "hasMore": false } }),
        ))
    }

    async fn set_level(
        &self,
        request: SetLevelRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        *self.level.lock().expect("level lock") = Some(request.level);
        Ok(())
    }
}
