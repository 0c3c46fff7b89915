//! The faces: MCP through a real rmcp client over an in-memory duplex (no
//! sockets, no sleeps), and the REST API through the router itself.

use std::sync::Arc;

use axum::body::Body;
use axum::http::{Request, StatusCode, header};
use http_body_util::BodyExt;
use quiver::faces::http::{HttpOptions, router};
use quiver::faces::mcp::McpServer;
use quiver_tests::TestHost;
use quiver_tests::builds::{publish, renamed, versioned};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ErrorCode, GetPromptRequestParams,
    GetPromptResponse, GetPromptResult, ListPromptsResult, ListToolsResult, PaginatedRequestParams, Prompt,
    PromptMessage, ProtocolVersion, Role, ServerCapabilities, ServerConfig, ServerNotification, SubscriptionFilter,
    Tool,
};
use rmcp::service::{NotificationContext, RequestContext, RoleClient, RoleServer, RunningService};
use rmcp::{ClientHandler, ClientLifecycleMode, ClientServiceExt, ErrorData, ServerHandler, ServiceExt};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;
use tower::ServiceExt as _;

/// A client that counts `tools/list_changed` notifications.
#[derive(Clone, Default)]
struct Client {
    changed: Arc<tokio::sync::Notify>,
}

impl ClientHandler for Client {
    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.changed.notify_one();
    }
}

async fn connect(host: &quiver::Host) -> (RunningService<RoleClient, Client>, Client) {
    connect_to(McpServer::new(host.clone(), None).unwrap()).await
}

async fn connect_to<E: ServerHandler>(server: McpServer<E>) -> (RunningService<RoleClient, Client>, Client) {
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

async fn get(app: &axum::Router, path: &str, headers: &[(&str, &str)]) -> (StatusCode, axum::http::HeaderMap, Vec<u8>) {
    let mut request = Request::builder().uri(path);
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    send(app, request.body(Body::empty()).unwrap()).await
}

/// Send `request` as an HTTP/1.1 client would: with a `Host` (localhost)
/// unless it names one.
async fn send(app: &axum::Router, mut request: Request<Body>) -> (StatusCode, axum::http::HeaderMap, Vec<u8>) {
    if !request.headers().contains_key(header::HOST) {
        request.headers_mut().insert(header::HOST, "localhost".parse().unwrap());
    }
    let response = app.clone().oneshot(request).await.unwrap();
    let (parts, body) = response.into_parts();
    (parts.status, parts.headers, body.collect().await.unwrap().to_bytes().to_vec())
}

fn json_of(body: &[u8]) -> Value {
    serde_json::from_slice(body).unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(body)))
}

#[tokio::test]
async fn the_rest_api_answers_at_three_levels_with_etags() {
    let t = TestHost::builder().bundled().file("versioned.wasm", versioned(1)).build();
    let app = router(&t.host, &HttpOptions::default(), CancellationToken::new()).unwrap();

    let (status, headers, body) = get(&app, "/v1/tools", &[]).await;
    assert_eq!(status, StatusCode::OK);
    let names = json_of(&body);
    assert!(names["tools"].as_array().unwrap().iter().any(|n| n == "calc__evaluate"), "{names}");
    let etag = headers[header::ETAG].to_str().unwrap().to_owned();
    let (status, _, _) = get(&app, "/v1/tools", &[("if-none-match", &etag)]).await;
    assert_eq!(status, StatusCode::NOT_MODIFIED);

    let (_, _, body) = get(&app, "/v1/tools/summary", &[]).await;
    let summary = json_of(&body);
    let calc = summary["tools"].as_array().unwrap().iter().find(|t| t["name"] == "calc__evaluate").unwrap().clone();
    assert_eq!(calc["category"], "builtin");
    assert!(!calc["summary"].as_str().unwrap().is_empty());

    // Pages chain through next_cursor and add up to the whole listing.
    let all: Vec<Value> = names["tools"].as_array().unwrap().clone();
    assert!(names.get("next_cursor").is_none(), "level 1 fits in one page: {names}");
    let (mut paged, mut cursor) = (Vec::new(), None::<String>);
    loop {
        let path = match &cursor {
            Some(c) => format!("/v1/tools/summary?limit=7&cursor={c}"),
            None => "/v1/tools/summary?limit=7".to_owned(),
        };
        let (status, _, body) = get(&app, &path, &[]).await;
        assert_eq!(status, StatusCode::OK);
        let page = json_of(&body);
        let tools = page["tools"].as_array().unwrap();
        assert!(tools.len() <= 7 && !tools.is_empty(), "{page}");
        paged.extend(tools.iter().map(|t| t["name"].clone()));
        match page.get("next_cursor").and_then(Value::as_str) {
            Some(next) => cursor = Some(next.to_owned()),
            None => break,
        }
    }
    assert_eq!(paged, all, "the pages of level 2 list what level 1 lists, in order");
    for bad in ["/v1/tools?limit=0", "/v1/tools/summary?limit=5001", "/v1/tools?cursor=nope"] {
        let (status, _, body) = get(&app, bad, &[]).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{bad}");
        assert!(json_of(&body)["error"].is_string());
    }

    let (status, _, body) = get(&app, "/v1/tools/calc__evaluate", &[]).await;
    assert_eq!(status, StatusCode::OK);
    let full = json_of(&body);
    assert_eq!(full["inputSchema"]["properties"]["expression"]["type"], "string", "{full}");
    assert_eq!(full["annotations"]["readOnlyHint"], true);
    let (status, _, _) = get(&app, "/v1/tools/nope__nothing", &[]).await;
    assert_eq!(status, StatusCode::NOT_FOUND);

    let call = Request::post("/v1/tools/calc__evaluate/call")
        .header("content-type", "application/json")
        .body(Body::from(r#"{"expression": "6 * 7"}"#))
        .unwrap();
    let (status, _, body) = send(&app, call).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(json_of(&body)["value"], json!({"value": 42}));
    let bad = Request::post("/v1/tools/calc__evaluate/call").body(Body::from(r#"{"expression": 1}"#)).unwrap();
    let (status, _, body) = send(&app, bad).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "the caller's mistake is a 4xx, with the body kept");
    assert_eq!(json_of(&body)["is_error"], true);

    let (_, headers, body) = get(&app, "/v1/prompt", &[]).await;
    assert!(headers[header::CONTENT_TYPE].to_str().unwrap().starts_with("text/plain"));
    assert!(String::from_utf8(body).unwrap().contains("calc__evaluate"));

    let (_, _, body) = get(&app, "/v1/export/openai", &[]).await;
    let openai = json_of(&body);
    assert!(
        openai.as_array().unwrap().iter().all(|t| t["type"] == "function" && t["function"]["parameters"].is_object())
    );
    let (_, _, body) = get(&app, "/v1/export/anthropic", &[]).await;
    let anthropic = json_of(&body);
    assert_eq!(anthropic[0]["name"], "tool_search_tool_bm25");
    assert!(
        anthropic.as_array().unwrap()[1..].iter().all(|t| t["defer_loading"] == true && t["input_schema"].is_object())
    );
    assert_eq!(openai.as_array().unwrap().len() + 1, anthropic.as_array().unwrap().len());

    let (_, _, body) = get(&app, "/v1/openapi.json", &[]).await;
    let openapi = json_of(&body);
    assert_eq!(openapi["openapi"], "3.1.0");
    assert!(openapi["components"]["schemas"]["Summaries"]["properties"]["tools"].is_object());

    // A reload that changes the catalog changes the ETag.
    std::fs::write(t.plugins.path().join("versioned.wasm"), versioned(2)).unwrap();
    t.host.reload().await.unwrap();
    let (status, headers, _) = get(&app, "/v1/tools", &[("if-none-match", &etag)]).await;
    assert_eq!(status, StatusCode::OK);
    assert_ne!(headers[header::ETAG].to_str().unwrap(), etag);
}

/// Every object of a strict schema is closed and lists every property as
/// required (what OpenAI's strict mode demands).
fn strictly_closed(schema: &serde_json::Value) -> bool {
    match schema {
        serde_json::Value::Object(map) => {
            let object = map.get("properties").and_then(|p| p.as_object());
            let closed = object.is_none_or(|properties| {
                let required: Vec<&str> =
                    map["required"].as_array().unwrap().iter().map(|k| k.as_str().unwrap()).collect();
                map["additionalProperties"] == false && properties.keys().all(|k| required.contains(&k.as_str()))
            });
            closed && !map.contains_key("oneOf") && map.values().all(strictly_closed)
        }
        serde_json::Value::Array(items) => items.iter().all(strictly_closed),
        _ => true,
    }
}

/// `?strict=true` rewrites the bundled tools' schemas for OpenAI's strict
/// mode, and the calls such a model makes (every optional argument present,
/// as `null`) are accepted and mean what they mean without the nulls.
#[tokio::test]
async fn the_openai_strict_export_is_strict_and_its_calls_are_accepted() {
    let t = TestHost::builder().bundled().build();
    let app = router(&t.host, &HttpOptions::default(), CancellationToken::new()).unwrap();
    let (_, exact_headers, body) = get(&app, "/v1/export/openai-responses", &[]).await;
    assert!(json_of(&body).as_array().unwrap().iter().all(|t| t["strict"] == false));
    let (status, strict_headers, body) = get(&app, "/v1/export/openai-responses?strict=true", &[]).await;
    assert_eq!(status, StatusCode::OK);
    assert_ne!(exact_headers[header::ETAG], strict_headers[header::ETAG], "each variant has its own ETag");
    let tools = json_of(&body);
    let tools = tools.as_array().unwrap();
    let (strict, loose): (Vec<_>, Vec<_>) = tools.iter().partition(|t| t["strict"] == true);
    for tool in &strict {
        assert!(strictly_closed(&tool["parameters"]), "{tool}");
    }
    // Only tools that take arbitrary JSON (a jq input, template data) or
    // open maps stay loose.
    let loose: Vec<&str> = loose.iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(loose, ["json__query", "template__render"], "{} strict", strict.len());
    let hash = strict.iter().find(|t| t["name"] == "codec__hash").expect("codec__hash is strict");
    assert_eq!(
        hash["parameters"]["properties"]["key_encoding"]["anyOf"].as_array().unwrap().last().unwrap()["type"],
        "null"
    );
    let (_, _, body) = get(&app, "/v1/export/openai?strict=true", &[]).await;
    assert!(json_of(&body).as_array().unwrap().iter().any(|t| t["function"]["strict"] == true));

    let call = |body: &'static str| {
        Request::post("/v1/tools/codec__hash/call")
            .header("content-type", "application/json")
            .body(Body::from(body))
            .unwrap()
    };
    let (status, _, plain) = send(&app, call(r#"{"data": "x", "algorithm": "sha256"}"#)).await;
    assert_eq!(status, StatusCode::OK);
    let strict_call =
        r#"{"data": "x", "algorithm": "sha256", "input_encoding": null, "hmac_key": null, "key_encoding": null}"#;
    let (status, _, nulls) = send(&app, call(strict_call)).await;
    assert_eq!(status, StatusCode::OK, "{}", String::from_utf8_lossy(&nulls));
    assert_eq!(json_of(&plain)["value"], json_of(&nulls)["value"]);
    // A required argument given as null is still the caller's mistake.
    let (status, _, _) = send(&app, call(r#"{"data": null, "algorithm": "sha256"}"#)).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
}

/// With `[audit] path` set, every call is a line in the file and in
/// `GET /v1/audit` (newest last, filtered by resource).
#[tokio::test]
async fn the_rest_api_serves_the_audit_log() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("audit.jsonl");
    let t = TestHost::builder().bundled().config(&format!("[audit]\npath = \"{}\"", log.display())).build();
    let app = router(&t.host, &HttpOptions::default(), CancellationToken::new()).unwrap();
    for body in [r#"{"expression": "6 * 7"}"#, r#"{"expression": "1 +"}"#] {
        let call = Request::post("/v1/tools/calc__evaluate/call")
            .header("content-type", "application/json")
            .body(Body::from(body))
            .unwrap();
        send(&app, call).await;
    }
    let hashed = Request::post("/v1/tools/codec__hash/call")
        .header("content-type", "application/json")
        .body(Body::from(r#"{"data": "x", "algorithm": "sha256", "hmac_key": "webhook-signing-key"}"#))
        .unwrap();
    assert_eq!(send(&app, hashed).await.0, StatusCode::OK);

    let (status, _, body) = get(&app, "/v1/audit?resource=calc&limit=10", &[]).await;
    assert_eq!(status, StatusCode::OK);
    let records = json_of(&body);
    let records = records.as_array().unwrap();
    assert_eq!(records.len(), 2, "{records:?}");
    assert_eq!((&records[0]["action"], &records[0]["outcome"]), (&json!("evaluate"), &json!("ok")));
    assert_eq!(records[1]["outcome"], "invalid_input");
    assert_eq!(records[0]["params"], json!({ "expression": "6 * 7" }));
    let (_, _, body) = get(&app, "/v1/audit?limit=1", &[]).await;
    let hashed = json_of(&body);
    assert_eq!((&hashed[0]["resource"], &hashed[0]["params"]["hmac_key"]), (&json!("codec"), &json!("[redacted]")));
    assert!(!std::fs::read_to_string(&log).unwrap().contains("webhook-signing-key"));
    assert_eq!(std::fs::read_to_string(&log).unwrap().lines().count(), 3);
    let (_, _, body) = get(&app, "/v1/openapi.json", &[]).await;
    assert!(json_of(&body)["paths"]["/v1/audit"]["get"].is_object());
}

#[tokio::test]
async fn http_refuses_foreign_origins_and_missing_tokens() {
    let t = TestHost::builder().bundled().build();
    let open = router(&t.host, &HttpOptions::default(), CancellationToken::new()).unwrap();
    let (status, _, _) = get(&open, "/v1/tools", &[("origin", "http://localhost:5173")]).await;
    assert_eq!(status, StatusCode::OK);
    let (status, _, _) = get(&open, "/v1/tools", &[("origin", "https://evil.example")]).await;
    assert_eq!(status, StatusCode::FORBIDDEN);

    let options = HttpOptions { token: Some("s3cret".into()), ..Default::default() };
    let guarded = router(&t.host, &options, CancellationToken::new()).unwrap();
    let (status, _, _) = get(&guarded, "/v1/tools", &[]).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    let (status, _, _) = get(&guarded, "/v1/tools", &[("authorization", "Bearer wrong")]).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    let (status, _, _) = get(&guarded, "/v1/tools", &[("authorization", "Bearer s3cret")]).await;
    assert_eq!(status, StatusCode::OK);

    // The scheme is case-insensitive (RFC 9110).
    let (status, _, _) = get(&guarded, "/v1/tools", &[("authorization", "bearer s3cret")]).await;
    assert_eq!(status, StatusCode::OK);

    // DNS rebinding: a foreign `Host` is refused on REST as on /mcp; the
    // loopback names, the bound address and `--allow-host` names pass.
    let (status, _, _) = get(&open, "/v1/tools", &[("host", "evil.example")]).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let (status, _, _) = get(&open, "/v1/status", &[("host", "evil.example:8080")]).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let (status, _, _) = get(&open, "/v1/tools", &[("host", "localhost:8080")]).await;
    assert_eq!(status, StatusCode::OK);
    let second = HttpOptions {
        addr: "127.0.0.2:8080".parse().unwrap(),
        allowed_hosts: vec!["quiver.internal".into()],
        ..Default::default()
    };
    let second = router(&t.host, &second, CancellationToken::new()).unwrap();
    let (status, _, _) = get(&second, "/v1/tools", &[("host", "127.0.0.2:8080")]).await;
    assert_eq!(status, StatusCode::OK);
    let (status, _, _) = get(&second, "/v1/tools", &[("host", "quiver.internal")]).await;
    assert_eq!(status, StatusCode::OK);
    let initialize = Request::post("/mcp")
        .header("host", "127.0.0.2:8080")
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(Body::from(
            r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#,
        ))
        .unwrap();
    let (status, _, body) = send(&second, initialize).await;
    assert_eq!(status, StatusCode::OK, "/mcp on the bound address: {}", String::from_utf8_lossy(&body));

    let public = HttpOptions { addr: "0.0.0.0:0".parse().unwrap(), ..Default::default() };
    let error = router(&t.host, &public, CancellationToken::new()).unwrap_err();
    assert_eq!(error.kind(), quiver::ErrorKind::Config, "{error}");
}

/// With hot reload on, the first `tools/list` holds every tool: the
/// watcher's first rescan reads the plugins' bytes into the plugins already
/// served (so it publishes nothing), and a listing takes each definition
/// from the snapshot it started with.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_first_tools_list_under_a_watcher_is_complete() {
    let cache = tempfile::tempdir().unwrap();
    for round in 0..10 {
        let mut builder = TestHost::builder().cache_dir(cache.path()).config("[disclosure]\nselection_threshold = 100");
        for i in 0..10 {
            builder = builder.file(&format!("p{i}.wasm"), renamed(&format!("plugin-0{i}")));
        }
        let t = builder.build();
        let server = McpServer::new(t.host.clone(), None).unwrap();
        let _watcher = t.host.watch().unwrap();
        let tools = server.tools().await;
        let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
        for i in 0..10 {
            let name = format!("plugin-0{i}__build");
            assert!(names.contains(&name.as_str()), "round {round}: {name} missing from {names:?}");
        }
        // The watcher's first rescan (this one waits for it) changed nothing.
        let catalog = t.host.reload().await.unwrap();
        assert_eq!((catalog.version(), catalog.revision()), (1, 1), "round {round}");
    }
}

/// Hardening row 7: a client that never finishes its headers is cut off
/// (it cannot hold a connection slot), and the server goes on serving;
/// connections past the cap wait instead of failing.
#[tokio::test]
async fn half_sent_requests_are_cut_off_and_the_server_keeps_serving() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let t = TestHost::builder().build();
    let options = HttpOptions {
        addr: "127.0.0.1:0".parse().unwrap(),
        header_timeout: std::time::Duration::from_millis(300),
        max_connections: 2,
        ..Default::default()
    };
    let shutdown = CancellationToken::new();
    let (bound_tx, bound_rx) = tokio::sync::oneshot::channel();
    let (host, stop) = (t.host.clone(), shutdown.clone());
    let server = tokio::spawn(async move {
        quiver::faces::http::serve(&host, &options, stop, |addr| {
            let _ = bound_tx.send(addr);
        })
        .await
    });
    let addr = bound_rx.await.unwrap();
    // Two slow clients take both slots, then stall mid-header.
    let mut slow = Vec::new();
    for _ in 0..2 {
        let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
        stream.write_all(b"GET /v1/status HTTP/1.1\r\nHost: 127.0.0.1\r\n").await.unwrap();
        slow.push(stream);
    }
    // A third, complete request waits for a slot, and is answered once the
    // stalled ones are cut off.
    let mut third = tokio::net::TcpStream::connect(addr).await.unwrap();
    third.write_all(b"GET /v1/status HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n").await.unwrap();
    let mut answer = String::new();
    tokio::time::timeout(std::time::Duration::from_secs(30), third.read_to_string(&mut answer)).await.unwrap().unwrap();
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    for mut stream in slow {
        let mut rest = Vec::new();
        let read = tokio::time::timeout(std::time::Duration::from_secs(30), stream.read_to_end(&mut rest)).await;
        assert!(read.is_ok(), "a stalled client was never cut off");
        assert!(!String::from_utf8_lossy(&rest).contains("200 OK"), "a half-sent request was answered");
    }
    shutdown.cancel();
    server.await.unwrap().unwrap();
}

/// JSON-RPC's own codes for bad messages, over HTTP and stdio: a body or
/// line that is not JSON is a parse error (-32700, id null), JSON that is
/// not a JSON-RPC message an invalid request (-32600), and a `tools/call`
/// whose `arguments` is not an object invalid params (-32602, not "method
/// not found"). On stdio every bad line gets its reply, and the session
/// goes on.
#[tokio::test]
async fn bad_messages_get_json_rpc_errors() {
    let t = TestHost::builder().bundled().build();
    let app = router(&t.host, &HttpOptions::default(), CancellationToken::new()).unwrap();
    let post = |body: &'static str| {
        Request::post("/mcp")
            .header("host", "localhost")
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(Body::from(body))
            .unwrap()
    };
    for (body, code) in [("{bad", -32700), ("", -32700), (r#"{"hello":1}"#, -32600), ("[1]", -32600)] {
        let (status, _, reply) = send(&app, post(body)).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
        let reply = json_of(&reply);
        assert_eq!((&reply["id"], &reply["error"]["code"]), (&Value::Null, &json!(code)), "{body}: {reply}");
    }
    let (status, _, _) = send(&app, post(r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#)).await;
    assert_eq!(status, StatusCode::OK);

    let (mut client, server) = tokio::io::duplex(1 << 16);
    let (server_in, server_out) = tokio::io::split(server);
    let host = t.host.clone();
    let served =
        tokio::spawn(async move { quiver::faces::stdio::serve_lines(&host, None, server_in, server_out).await });
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt};
    let lines = [
        "{bad",
        "",
        r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#,
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
        r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"calc__evaluate","arguments":5}}"#,
        "not json either",
        r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"calc__evaluate","arguments":{"expression":"1+1"}}}"#,
    ];
    for line in lines {
        client.write_all(format!("{line}\n").as_bytes()).await.unwrap();
    }
    let (reader, mut writer) = tokio::io::split(client);
    let mut replies = tokio::io::BufReader::new(reader).lines();
    let mut by_id = std::collections::BTreeMap::new();
    let mut parse_errors = 0;
    while by_id.len() < 3 || parse_errors < 2 {
        let line = replies.next_line().await.unwrap().expect("a reply per message");
        let reply: Value = serde_json::from_str(&line).unwrap();
        match reply["id"].as_i64() {
            Some(id) => drop(by_id.insert(id, reply)),
            None => {
                assert_eq!(reply["error"]["code"], -32700, "{reply}");
                parse_errors += 1;
            }
        }
    }
    assert_eq!(by_id[&2]["error"]["code"], -32602, "{}", by_id[&2]);
    assert_eq!(by_id[&3]["result"]["structuredContent"]["value"], 2, "{}", by_id[&3]);
    writer.shutdown().await.unwrap();
    served.await.unwrap().unwrap();
}

/// MCP sessions over HTTP are capped: past `max_sessions` an `initialize`
/// gets HTTP 503 with `Retry-After` and a JSON-RPC error, and the open
/// sessions keep working. A session's list-change forwarder ends with the
/// session (`DELETE /mcp`), and so does its slot.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_are_capped_and_end_with_their_forwarders() {
    let t = TestHost::builder().bundled().build();
    let options = HttpOptions { max_sessions: 2, ..Default::default() };
    let app = router(&t.host, &options, CancellationToken::new()).unwrap();
    let post = |body: &str, session: Option<&str>| {
        let mut request = Request::post("/mcp")
            .header("host", "localhost")
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream");
        if let Some(id) = session {
            request = request.header("mcp-session-id", id).header("mcp-protocol-version", "2025-11-25");
        }
        request.body(Body::from(body.to_owned())).unwrap()
    };
    let initialize = r#"{"jsonrpc":"2.0","id":7,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;
    let open = |app: axum::Router| async move {
        let (status, headers, body) = send(&app, post(initialize, None)).await;
        assert_eq!(status, StatusCode::OK, "{}", String::from_utf8_lossy(&body));
        let id = headers["mcp-session-id"].to_str().unwrap().to_owned();
        let (status, _, _) =
            send(&app, post(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#, Some(&id))).await;
        assert_eq!(status, StatusCode::ACCEPTED);
        id
    };
    let base = t.host.subscribers();
    let first = open(app.clone()).await;
    let second = open(app.clone()).await;
    wait_for("both forwarders", || t.host.subscribers() == base + 2).await;

    let (status, headers, body) = send(&app, post(initialize, None)).await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(headers[header::RETRY_AFTER], "5");
    let reply = json_of(&body);
    assert_eq!((&reply["id"], &reply["error"]["code"]), (&json!(7), &json!(-32000)), "{reply}");
    assert!(reply["error"]["message"].as_str().unwrap().contains("2 MCP sessions are open"), "{reply}");
    let ping = r#"{"jsonrpc":"2.0","id":8,"method":"ping"}"#;
    let (status, _, body) = send(&app, post(ping, Some(&second))).await;
    assert_eq!(status, StatusCode::OK, "an open session still works: {}", String::from_utf8_lossy(&body));

    let delete = Request::delete("/mcp")
        .header("host", "localhost")
        .header("mcp-session-id", &first)
        .header("mcp-protocol-version", "2025-11-25")
        .body(Body::empty())
        .unwrap();
    let (status, _, _) = send(&app, delete).await;
    assert_eq!(status, StatusCode::OK, "what clients expect (the Python SDK calls 202 a failure)");
    wait_for("the ended session's forwarder to stop", || t.host.subscribers() == base + 1).await;
    let (status, _, body) = send(&app, post(initialize, None)).await;
    assert_eq!(status, StatusCode::OK, "the freed slot is used: {}", String::from_utf8_lossy(&body));
}

/// Wait (up to 20 s) until `done`; the work happens in tasks of the server.
async fn wait_for(what: &str, done: impl Fn() -> bool) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while !done() {
        assert!(std::time::Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
}
