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

use rmcp::ErrorData;
use rmcp::handler::server::ServerHandler;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig, SubscriptionFilter, Tool,
};
use rmcp::service::{NotificationContext, RequestContext, RoleServer, SubscriptionContext};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use crate::disclosure::formats::ToolDef;
use crate::{ErrorKind, Host, Result};

/// The name of the generic call tool.
pub const CALL_TOOL: &str = "call_tool";

/// Arguments of `call_tool`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct CallToolArgs {
    /// The tool's exact name, as `request_tools` or `search_tools` returned it.
    name: String,
    /// Its arguments, as its input schema describes them.
    #[serde(default)]
    arguments: serde_json::Map<String, Value>,
}

/// Quiver as an MCP server. Cheap to clone: one per HTTP session is fine.
#[derive(Clone)]
pub struct McpServer {
    host: Host,
    agent: Option<String>,
}

impl McpServer {
    /// Serve `host` with the disclosure policy of `agent` (checked now).
    pub fn new(host: Host, agent: Option<String>) -> Result<McpServer> {
        host.policy(agent.as_deref())?;
        Ok(McpServer { host, agent })
    }

    /// The `tools/list` result: stable for a catalog version.
    pub async fn tools(&self) -> Result<Vec<Tool>> {
        let mut session = self.host.open_session(self.agent.as_deref())?;
        let mut defs = session.listed_tools().await.tools;
        defs.push(call_tool_def());
        Ok(defs.iter().map(to_rmcp).collect())
    }

    /// The Tier-1 text.
    fn instructions(&self) -> String {
        match self.host.session(self.agent.as_deref()) {
            Ok(session) => session.system_prompt(),
            Err(error) => format!("Quiver could not render its catalog: {error}"),
        }
    }

    /// Run one `tools/call`.
    pub async fn call(&self, name: &str, arguments: Value) -> std::result::Result<CallToolResult, ErrorData> {
        let (name, arguments) = if name == CALL_TOOL {
            match serde_json::from_value::<CallToolArgs>(arguments) {
                Ok(args) => (args.name, Value::Object(args.arguments)),
                Err(e) => {
                    return Ok(CallToolResult::error(vec![ContentBlock::text(format!(
                        "call_tool needs {{\"name\": \"<tool name>\", \"arguments\": {{...}}}}: {e}"
                    ))]));
                }
            }
        } else {
            (name.to_owned(), arguments)
        };
        let mut session = self
            .host
            .open_session(self.agent.as_deref())
            .map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
        let outcome = session.call(&name, arguments).await;
        if outcome.error.as_ref().is_some_and(|e| e.kind() == ErrorKind::UnknownTool) {
            // Not a tool of this server: a protocol error (-32602), as the spec asks.
            return Err(ErrorData::invalid_params(outcome.text, None));
        }
        Ok(if outcome.is_error {
            CallToolResult::error(vec![ContentBlock::text(outcome.text)])
        } else {
            let mut result = CallToolResult::success(vec![ContentBlock::text(outcome.text)]);
            if let Some(value @ Value::Object(_)) = outcome.value {
                result.structured_content = Some(value);
            }
            result
        })
    }
}

fn call_tool_def() -> ToolDef {
    let schema = crate::disclosure::meta_tools::args_schema::<CallToolArgs>(&[]);
    ToolDef {
        name: CALL_TOOL.into(),
        description: "Call any tool by its exact name with its arguments: use it for tools that request_tools or \
                      search_tools returned, which are not in the tool list."
            .into(),
        input_schema: schema,
        category: crate::catalog::Category::Builtin,
        access: Some(crate::contract::Access::Admin),
        meta: true,
    }
}

/// One definition as an rmcp `Tool` (through its MCP JSON form).
fn to_rmcp(def: &ToolDef) -> Tool {
    let json = serde_json::to_value(def.to_mcp()).expect("tool definitions serialize");
    serde_json::from_value(json).expect("our MCP tool JSON is a valid MCP Tool")
}

impl ServerHandler for McpServer {
    fn get_info(&self) -> ServerConfig {
        let capabilities = ServerCapabilities::builder().enable_tools().enable_tool_list_changed().build();
        ServerConfig::new(capabilities)
            .with_server_info(Implementation::new("quiver", env!("CARGO_PKG_VERSION")))
            .with_instructions(self.instructions())
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> std::result::Result<ListToolsResult, ErrorData> {
        let tools = self.tools().await.map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
        Ok(ListToolsResult::with_all_items(tools))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> std::result::Result<CallToolResponse, ErrorData> {
        let arguments = request.arguments.map(Value::Object).unwrap_or(Value::Null);
        Ok(self.call(&request.name, arguments).await?.into())
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        // A 2025-11-25 session: tell it when the tool list changes, until
        // it goes away (the first failed send).
        let mut versions = self.host.subscribe();
        let peer = context.peer;
        tokio::spawn(async move {
            while versions.changed().await.is_ok() {
                if peer.notify_tool_list_changed().await.is_err() {
                    break;
                }
            }
        });
    }

    fn accepted_subscription_filter(&self, requested: &SubscriptionFilter) -> Option<SubscriptionFilter> {
        Some(requested.supported_by(&self.get_info().capabilities))
    }

    async fn listen(&self, context: SubscriptionContext) -> std::result::Result<(), ErrorData> {
        let mut versions = self.host.subscribe();
        loop {
            tokio::select! {
                _ = context.cancelled() => return Ok(()),
                changed = versions.changed() => {
                    if changed.is_err() || context.sink().notify_tool_list_changed().await.is_err() {
                        return Ok(());
                    }
                }
            }
        }
    }
}
