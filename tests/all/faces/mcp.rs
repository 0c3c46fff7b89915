//! The MCP face through a real rmcp client over an in-memory duplex (no
//! sockets, no sleeps): discovery and calls through the meta-tools, an
//! embedder's extras, list-change notifications.

use std::sync::Arc;

use quiver::faces::mcp::McpServer;
use quiver_tests::TestHost;
use quiver_tests::builds::{publish, versioned};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ErrorCode, GetPromptRequestParams,
    GetPromptResponse, GetPromptResult, ListPromptsResult, ListToolsResult, PaginatedRequestParams, Prompt,
    PromptMessage, ProtocolVersion, Role, ServerCapabilities, ServerConfig, ServerNotification, SubscriptionFilter,
    Tool,
};
use rmcp::service::{NotificationContext, RequestContext, RoleClient, RoleServer, RunningService};
use rmcp::{ClientHandler, ClientLifecycleMode, ClientServiceExt, ErrorData, ServerHandler, ServiceExt};
use serde_json::{Value, json};

/// A client that counts `tools/list_changed` notifications.
#[derive(Clone, Default)]
pub(crate) struct Client {
    changed: Arc<tokio::sync::Notify>,
}

impl ClientHandler for Client {
    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.changed.notify_one();
    }
}

pub(crate) async fn connect(host: &quiver::Host) -> (RunningService<RoleClient, Client>, Client) {
    connect_to(McpServer::new(host.clone(), None).unwrap()).await
}

pub(crate) async fn connect_to<E: ServerHandler>(server: McpServer<E>) -> (RunningService<RoleClient, Client>, Client) {
    let (client_io, server_io) = tokio::io::duplex(1 << 20);
    tokio::spawn(async move {
        let running = server.serve(server_io).await.expect("the server starts");
        let _ = running.waiting().await;
    });
    let client = Client::default();
    let running = client.clone().serve(client_io).await.expect("the client connects");
    (running, client)
}

fn args(value: Value) -> rmcp::model::JsonObject {
    value.as_object().cloned().expect("an object")
}

fn text(result: &CallToolResult) -> String {
    result.content.iter().filter_map(|c| c.as_text().map(|t| t.text.clone())).collect::<Vec<_>>().join("\n")
}

#[tokio::test]
async fn an_mcp_client_discovers_and_calls_through_the_meta_tools() {
    let t = TestHost::builder().bundled().skills(quiver_tests::data("skills")).build();
    let (client, _) = connect(&t.host).await;

    let info = client.peer_info().expect("server info");
    // Tier 1 is sent once: the lists in the meta-tools' descriptions, the
    // instructions pointing at them.
    let instructions = info.instructions.clone().unwrap_or_default();
    assert!(instructions.contains("`request_tools`") && !instructions.contains("calc__evaluate"), "{instructions}");

    let tools = client.list_all_tools().await.unwrap();
    let request_tools = tools.iter().find(|t| t.name == "request_tools").expect("request_tools");
    assert!(request_tools.description.as_deref().unwrap_or_default().contains("- calc__evaluate: Calculate"));
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    for expected in ["read_skill", "request_tools", "search_tools", "call_tool"] {
        assert!(names.contains(&expected), "{expected} missing from {names:?}");
    }
    assert!(!names.contains(&"calc__evaluate"), "19 built-in tools are over the threshold: {names:?}");
    assert!(
        names.iter().all(|n| n.len() <= 64 && n.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-'))
    );
    assert_eq!(client.list_all_tools().await.unwrap(), tools, "tools/list is stable");

    // Discover: the full schema comes back as a result...
    let found = client
        .call_tool(
            CallToolRequestParams::new("request_tools").with_arguments(args(json!({"tool_names": ["calc__evaluate"]}))),
        )
        .await
        .unwrap();
    assert_eq!(found.is_error, Some(false));
    assert!(text(&found).contains("expression"), "{}", text(&found));
    // ...and the tool is callable by name although it is not listed,
    let direct = client
        .call_tool(CallToolRequestParams::new("calc__evaluate").with_arguments(args(json!({"expression": "6 * 7"}))))
        .await
        .unwrap();
    assert_eq!(direct.is_error, Some(false));
    assert_eq!(direct.structured_content, Some(json!({"value": 42})));
    // or through call_tool.
    let generic = client
        .call_tool(
            CallToolRequestParams::new("call_tool")
                .with_arguments(args(json!({"name": "calc__evaluate", "arguments": {"expression": "2 + 2"}}))),
        )
        .await
        .unwrap();
    assert_eq!(generic.structured_content, Some(json!({"value": 4})));

    // A failing call is a result the model reads; an unknown tool is a protocol error.
    let bad = client
        .call_tool(CallToolRequestParams::new("calc__evaluate").with_arguments(args(json!({"expression": 7}))))
        .await
        .unwrap();
    assert_eq!(bad.is_error, Some(true));
    assert!(text(&bad).contains("expression"), "{}", text(&bad));
    let unknown = client.call_tool(CallToolRequestParams::new("no_such_tool")).await.unwrap_err();
    assert!(unknown.to_string().contains("-32602") || unknown.to_string().contains("no_such_tool"), "{unknown}");

    client.cancel().await.unwrap();
}

/// An embedder's own MCP offering: one tool and one prompt.
struct Extras;

impl Extras {
    fn tool() -> Tool {
        let schema = json!({"type": "object", "properties": {}, "additionalProperties": false});
        Tool::new("weather", "Today's weather", Arc::new(args(schema)))
    }
}

impl ServerHandler for Extras {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().enable_prompts().build())
            .with_instructions("Ask for the weather.")
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(vec![Extras::tool()]))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        (name == "weather").then(Extras::tool)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        assert_eq!(request.name, "weather", "only the extras' own tools reach them");
        Ok(CallToolResult::success(vec![ContentBlock::text("sunny")]).into())
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        Ok(ListPromptsResult::with_all_items(vec![Prompt::new("greeting", Some("Say hello"), None)]))
    }

    async fn get_prompt(
        &self,
        _request: GetPromptRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        Ok(GetPromptResult::new(vec![PromptMessage::new_text(Role::User, "Hello!")]).into())
    }
}

#[tokio::test]
async fn an_embedders_extras_are_served_beside_quivers_tools() {
    let t = TestHost::builder().bundled().build();
    let (client, _) = connect_to(McpServer::with_extras(t.host.clone(), None, Extras).unwrap()).await;

    let info = client.peer_info().expect("server info");
    assert!(info.capabilities.prompts.is_some(), "the extras' capabilities are declared");
    let instructions = info.instructions.clone().unwrap_or_default();
    assert!(
        instructions.contains("`request_tools`") && instructions.ends_with("Ask for the weather."),
        "{instructions}"
    );

    let tools = client.list_all_tools().await.unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    assert!(names.contains(&"request_tools") && names.contains(&"call_tool"), "{names:?}");
    assert_eq!(names.last(), Some(&"weather"), "the extras' tools come after Quiver's: {names:?}");

    let weather = client.call_tool(CallToolRequestParams::new("weather")).await.unwrap();
    assert_eq!(text(&weather), "sunny");
    let quiver = client
        .call_tool(CallToolRequestParams::new("calc__evaluate").with_arguments(args(json!({"expression": "6 * 7"}))))
        .await
        .unwrap();
    assert_eq!(quiver.structured_content, Some(json!({"value": 42})), "Quiver's tools still answer");

    let prompts = client.list_all_prompts().await.unwrap();
    assert_eq!(prompts.iter().map(|p| p.name.as_str()).collect::<Vec<_>>(), ["greeting"]);
    client.cancel().await.unwrap();

    // Without extras there are no prompts: the method is not found (an
    // empty list would claim a capability the server never declared).
    let (plain, _) = connect(&t.host).await;
    assert!(plain.peer_info().expect("server info").capabilities.prompts.is_none());
    let error = plain.list_all_prompts().await.unwrap_err();
    assert!(matches!(&error, rmcp::ServiceError::McpError(e) if e.code == ErrorCode::METHOD_NOT_FOUND), "{error:?}");
    plain.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_catalog_change_notifies_mcp_sessions() {
    let t = TestHost::builder().build();
    let (client, handler) = connect(&t.host).await;
    let before = client.list_all_tools().await.unwrap();
    publish(t.plugins.path(), "versioned.wasm", &versioned(1));
    let notified = handler.changed.notified();
    t.host.reload().await.unwrap();
    tokio::time::timeout(std::time::Duration::from_secs(60), notified).await.expect("tools/list_changed");
    let after = client.list_all_tools().await.unwrap();
    assert_ne!(before, after, "the new plugin shows in the tool list");
    assert!(after.iter().any(|t| t.name == "versioned__build"), "{after:?}");
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_catalog_change_notifies_2026_subscribers() {
    // The stateless revision: no session, a `subscriptions/listen` stream.
    let t = TestHost::builder().build();
    let (client_io, server_io) = tokio::io::duplex(1 << 20);
    let server = McpServer::new(t.host.clone(), None).unwrap();
    tokio::spawn(async move {
        let running = server.serve(server_io).await.expect("the server starts");
        let _ = running.waiting().await;
    });
    let discover = ClientLifecycleMode::Discover { preferred_versions: vec![ProtocolVersion::V_2026_07_28] };
    let client = ().serve_with_lifecycle(client_io, discover).await.expect("the client discovers");
    let mut subscription =
        client.listen(SubscriptionFilter::builder().tools_list_changed().build()).await.expect("listening");
    assert_eq!(subscription.acknowledged().tools_list_changed, Some(true));

    publish(t.plugins.path(), "versioned.wasm", &versioned(1));
    t.host.reload().await.unwrap();
    let notification = tokio::time::timeout(std::time::Duration::from_secs(60), subscription.next())
        .await
        .expect("a notification in time")
        .expect("the stream is open")
        .expect("a notification");
    assert!(matches!(notification, ServerNotification::ToolListChangedNotification(_)), "{notification:?}");
    let tools = client.list_all_tools().await.unwrap();
    assert!(tools.iter().any(|t| t.name == "versioned__build"), "{tools:?}");
    client.cancel().await.unwrap();
}
