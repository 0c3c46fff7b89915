//! What both HTTP faces refuse or limit: foreign origins and missing tokens,
//! half-sent requests, bad JSON-RPC messages (and stdio's), the session cap,
//! the first listing under a watcher. The probes and the drain are in
//! [`drain`](super::drain).

use axum::body::Body;
use axum::http::{Request, StatusCode, header};
use quiver::faces::http::{HttpOptions, router};
use quiver::faces::mcp::McpServer;
use quiver_tests::TestHost;
use quiver_tests::builds::renamed;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::drain::served;
use super::rest::{get, json_of, send};

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
    let (addr, shutdown, server) = served(&t, options).await;
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
