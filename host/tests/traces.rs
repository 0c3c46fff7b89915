//! OpenTelemetry traces from `quiver serve`, as a real OTLP receiver reads
//! them (the OpenTelemetry project's protobuf classes, in
//! `tests/servers/otlp_receiver.py`): SERVER spans by the MCP semantic
//! conventions under the context the client sent, the work underneath as
//! child spans, and the trace carried on across each hop: to an upstream
//! MCP server on the official Python SDK (which answers the `_meta` it got)
//! and to a connector's API (json-server, whose log shows the headers); a
//! SQL statement on SQLite is a CLIENT span of the same trace.

mod common;

use std::time::Duration;

use quiver_tests::otlp::{Receiver, named};
use quiver_tests::servers::JsonServer;
use serde_json::{Value, json};

/// The client's trace and span.
const TRACE: &str = "0af7651916cd43dd8448eb211c80319c";
const CLIENT_SPAN: &str = "b7ad6b7169203331";

/// The statement the database call sends.
const SQL: &str = "SELECT name FROM artist ORDER BY artist_id LIMIT 2";

/// How long the exporter may take to send what the process did (it
/// flushes when the process ends).
const EXPORTED: Duration = Duration::from_secs(30);

fn traceparent() -> String {
    format!("00-{TRACE}-{CLIENT_SPAN}-01")
}

fn call(id: u64, tool: &str, arguments: Value, meta: Value) -> String {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
           "params": {"name": tool, "arguments": arguments, "_meta": meta}})
    .to_string()
}

fn execute(connector: &str, path: &str) -> Value {
    json!({"subcommand": "execute", "connector": connector, "action": "read", "parameters": {"path": path}})
}

fn attribute<'a>(span: &'a Value, key: &str) -> &'a Value {
    &span["attributes"][key]
}

/// The JSON API of the connector hops, with the bearer token `t0ken`.
fn books() -> JsonServer {
    JsonServer::start(&json!({"books": [{"id": 7, "title": "Piranesi"}]}), "t0ken")
}

/// A config file in `dir` for every hop: the upstream server on the
/// official Python SDK that answers the `_meta` it got (`recorder`), the
/// connector fixture twice on `api` (`books`; `shelf`, which may send
/// baggage), and the SQLite database `music`.
fn hops(
    cli: &common::Cli,
    dir: &std::path::Path,
    api: &JsonServer,
    music: &quiver_tests::databases::TestDatabase,
) -> std::path::PathBuf {
    std::fs::copy(quiver_tests::fixtures::CONNECTOR, cli.plugins.path().join("fixture-connector.wasm")).unwrap();
    std::fs::write(dir.join("token"), "t0ken").unwrap();
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let config = format!(
        "[mcp_servers.recorder]\ncommand = \"{python}\"\nargs = [\"{script}\"]\n\n\
         [connectors.books]\nplugin = \"fixture-connector\"\nbase_url = \"{url}\"\n\
         auth = {{ kind = \"bearer\", token_file = \"token\" }}\n\n\
         [connectors.shelf]\nplugin = \"fixture-connector\"\nbase_url = \"{url}\"\nbaggage = true\n\
         auth = {{ kind = \"bearer\", token_file = \"token\" }}\n",
        python = root.join("target/venv/bin/python").display(),
        script = root.join("tests/servers/meta_recorder.py").display(),
        url = api.url,
    );
    let config = config + &music.section("music", "");
    let config_file = dir.join("quiver.toml");
    std::fs::write(&config_file, config).unwrap();
    config_file
}

/// Over stdio (exported as http/protobuf): each `tools/call` is a SERVER
/// span of the client's trace, its parent the client's span; a tool error
/// is `error.type = tool_error`; compile, instantiate and the guest call
/// are its children; the upstream call is a CLIENT span whose context the
/// upstream server receives in `_meta`; the connector's request is a
/// CLIENT span whose `traceparent` the API receives (its baggage only
/// where the operator allows it).
#[test]
fn stdio_calls_are_server_spans_of_the_callers_trace_across_every_hop() {
    let receiver = Receiver::start();
    let (api, cli, dir) = (books(), common::Cli::new(), tempfile::tempdir().unwrap());
    let music = quiver_tests::databases::TestDatabase::sqlite();
    let config_file = hops(&cli, dir.path(), &api, &music);

    // Bundled: the generic database adapter serves `music`.
    let mut served = cli.serve_stdio(
        &["--config", config_file.to_str().unwrap()],
        &[],
        &[("OTEL_EXPORTER_OTLP_ENDPOINT", &receiver.endpoint), ("OTEL_SERVICE_NAME", "quiver-under-test")],
    );
    let meta = json!({"traceparent": traceparent(), "tracestate": "vendor=x", "baggage": "user=alice"});
    served.send(common::HANDSHAKE);
    served.send([
        call(2, "misbehave__echo", json!({"text": "hi"}), meta.clone()).as_str(),
        call(3, "misbehave__missing", json!({"text": "x"}), meta.clone()).as_str(),
        call(
            4,
            "mcp",
            json!({"subcommand": "call", "server": "recorder", "tool": "seen_meta", "parameters": {}}),
            meta.clone(),
        )
        .as_str(),
        call(5, "connector", execute("books", "/books/7"), meta.clone()).as_str(),
        call(6, "connector", execute("shelf", "/books?id=7"), meta.clone()).as_str(),
        call(7, "database", json!({"subcommand": "query", "database": "music", "sql": SQL}), meta.clone()).as_str(),
    ]);
    let answers = served.answers(7);
    let answer = |id: u64| answers.iter().find(|a| a["id"] == id).unwrap()["result"].clone();
    assert_eq!(answer(2)["isError"], false, "{answers:#?}");
    assert_eq!(answer(3)["isError"], true, "{answers:#?}");
    assert_eq!(answer(5)["isError"], false, "{answers:#?}");
    assert_eq!(answer(7)["isError"], false, "{answers:#?}");
    let text = answer(4)["content"][0]["text"].as_str().map(str::to_owned);
    let seen_meta: Value = serde_json::from_str(&text.unwrap_or_else(|| panic!("{answers:#?}"))).unwrap();
    let (success, log) = served.finish();
    assert!(success, "{log}");

    let spans = receiver.wait_for(EXPORTED, |spans| {
        ["call shelf.read", "tools/call seen_meta", "call misbehave.echo", "GET", "SELECT"]
            .iter()
            .all(|name| spans.iter().any(|s| s["name"] == *name))
            && spans.iter().filter(|s| s["name"] == "GET").count() == 2
    });
    assert!(spans.iter().all(|s| s["content_type"] == "application/x-protobuf" && s["service"] == "quiver-under-test"));
    assert!(spans.iter().all(|s| s["scope"] == "quiver"));

    // The call: a SERVER span of the client's trace, under its span.
    let echo = named(&spans, "tools/call misbehave__echo");
    assert_eq!((echo["kind"].as_str(), echo["trace_id"].as_str()), (Some("SPAN_KIND_SERVER"), Some(TRACE)));
    assert_eq!(echo["parent_span_id"], CLIENT_SPAN);
    for (key, value) in [
        ("mcp.method.name", json!("tools/call")),
        ("gen_ai.tool.name", json!("misbehave__echo")),
        ("gen_ai.operation.name", json!("execute_tool")),
        ("jsonrpc.request.id", json!("2")),
        ("mcp.protocol.version", json!("2025-11-25")),
        ("network.transport", json!("pipe")),
    ] {
        assert_eq!(attribute(echo, key), &value, "{key}: {echo:#}");
    }
    assert!(attribute(echo, "mcp.session.id").is_null() && attribute(echo, "error.type").is_null(), "{echo:#}");
    // Arguments and results only when the operator opts in.
    assert!(attribute(echo, "gen_ai.tool.call.arguments").is_null(), "{echo:#}");
    assert!(!echo.to_string().contains("\"hi\""), "{echo:#}");
    assert_eq!(echo["status"], "STATUS_CODE_UNSET");
    // Its work underneath.
    let guest = named(&spans, "call misbehave.echo");
    assert_eq!(guest["parent_span_id"], echo["span_id"], "{guest:#}");
    let instantiate = named(&spans, "instantiate misbehave");
    assert_eq!(instantiate["trace_id"], TRACE);
    let compile = named(&spans, "compile misbehave");
    assert_eq!(attribute(compile, "quiver.cache.hit"), &json!(false), "a fresh cache: {compile:#}");

    // A tool error.
    let missing = named(&spans, "tools/call misbehave__missing");
    assert_eq!(
        (attribute(missing, "error.type"), &missing["status"]),
        (&json!("tool_error"), &json!("STATUS_CODE_ERROR"))
    );

    // The upstream hop: a CLIENT span under the call's, whose context the
    // upstream server received in `_meta`, with the baggage (the
    // operator's own server).
    let server = named(&spans, "tools/call mcp");
    assert_eq!(attribute(server, "gen_ai.tool.name"), &json!("mcp"));
    let client = named(&spans, "tools/call seen_meta");
    assert_eq!(client["kind"], "SPAN_KIND_CLIENT");
    assert_eq!(client["parent_span_id"], server["span_id"]);
    assert_eq!(attribute(client, "server.address"), &json!("recorder"));
    let sent = format!("00-{TRACE}-{}-01", client["span_id"].as_str().unwrap());
    assert_eq!(seen_meta["traceparent"], sent, "the upstream server's _meta: {seen_meta:#}");
    assert_eq!(seen_meta["baggage"], "user=alice", "{seen_meta:#}");

    // The connector hop: the API saw the egress span's context, never the
    // caller's baggage unless the connector allows it.
    let books = named(&spans, "call books.read");
    let request = spans.iter().find(|s| s["name"] == "GET" && s["parent_span_id"] == books["span_id"]);
    let request = request.unwrap_or_else(|| panic!("no request span under {books:#}"));
    assert_eq!(request["kind"], "SPAN_KIND_CLIENT");
    assert_eq!(attribute(request, "http.response.status_code"), &json!(200));
    assert_eq!(attribute(request, "server.address"), &json!("127.0.0.1"));
    let seen = api.seen("GET /books?id=7");
    let get = |path: &str| seen.iter().find(|r| r["seen"] == path).unwrap_or_else(|| panic!("{path}: {seen:#?}"));
    assert_eq!(get("GET /books/7")["traceparent"], format!("00-{TRACE}-{}-01", request["span_id"].as_str().unwrap()));
    assert_eq!(get("GET /books/7")["tracestate"], "vendor=x");
    assert!(get("GET /books/7")["baggage"].is_null(), "baggage went to a third party: {seen:#?}");
    assert_eq!(get("GET /books?id=7")["baggage"], "user=alice", "the operator allowed it for `shelf`");

    // A SQL statement: a CLIENT span under the adapter's guest call, under
    // the `database` call; the operation, never the statement's text.
    let select = named(&spans, "SELECT");
    assert_eq!((select["kind"].as_str(), select["trace_id"].as_str()), (Some("SPAN_KIND_CLIENT"), Some(TRACE)));
    for (key, value) in [
        ("db.system.name", json!("sqlite")),
        ("db.namespace", json!("music")),
        ("db.operation.name", json!("SELECT")),
        ("db.response.returned_rows", json!(2)),
    ] {
        assert_eq!(attribute(select, key), &value, "{key}: {select:#}");
    }
    assert!(!select.to_string().contains("artist"), "the statement's text is not on the span: {select:#}");
    let guest = spans.iter().find(|s| s["span_id"] == select["parent_span_id"]).expect("the SQL span's parent");
    let database = spans.iter().find(|s| s["span_id"] == guest["parent_span_id"]).expect("the guest call's parent");
    assert_eq!(database["name"], "tools/call database", "{guest:#}");

    // The per-call log line carries the trace.
    let line = log.lines().find(|l| l.contains("quiver::calls") && l.contains("misbehave__echo")).expect("a call line");
    assert!(line.contains(&format!("trace_id={TRACE}")), "{line}");
}

/// Without an exporter Quiver records no span of its own, and passes the
/// caller's context on as it got it (W3C Trace Context's rule for a hop
/// that does not trace): the upstream server's `_meta` and the
/// connector's API get the client's own `traceparent`, the API its
/// baggage only where the operator allows it.
#[test]
fn without_an_exporter_the_callers_context_is_passed_on_unchanged() {
    let (api, cli, dir) = (books(), common::Cli::new(), tempfile::tempdir().unwrap());
    let music = quiver_tests::databases::TestDatabase::sqlite();
    let config_file = hops(&cli, dir.path(), &api, &music);
    let mut served = cli.serve_stdio(&["--config", config_file.to_str().unwrap()], &[], &[]);
    let meta = json!({"traceparent": traceparent(), "tracestate": "vendor=x", "baggage": "user=alice"});
    let seen_meta = json!({"subcommand": "call", "server": "recorder", "tool": "seen_meta", "parameters": {}});
    served.send(common::HANDSHAKE);
    served.send([
        call(2, "mcp", seen_meta, meta.clone()).as_str(),
        call(3, "connector", execute("books", "/books/7"), meta.clone()).as_str(),
        call(4, "connector", execute("shelf", "/books?id=7"), meta).as_str(),
    ]);
    let answers = served.answers(4);
    let answer = |id: u64| answers.iter().find(|a| a["id"] == id).unwrap()["result"].clone();
    assert_eq!((answer(3)["isError"].clone(), answer(4)["isError"].clone()), (json!(false), json!(false)));
    let text = answer(2)["content"][0]["text"].as_str().map(str::to_owned);
    let seen_meta: Value = serde_json::from_str(&text.unwrap_or_else(|| panic!("{answers:#?}"))).unwrap();
    let (success, log) = served.finish();
    assert!(success, "{log}");

    assert_eq!(seen_meta["traceparent"], traceparent(), "the upstream server's _meta: {seen_meta:#}");
    assert_eq!((&seen_meta["tracestate"], &seen_meta["baggage"]), (&json!("vendor=x"), &json!("user=alice")));
    let seen = api.seen("GET /books?id=7");
    let get = |path: &str| seen.iter().find(|r| r["seen"] == path).unwrap_or_else(|| panic!("{path}: {seen:#?}"));
    assert_eq!(
        (&get("GET /books/7")["traceparent"], &get("GET /books/7")["tracestate"]),
        (&json!(traceparent()), &json!("vendor=x"))
    );
    assert!(get("GET /books/7")["baggage"].is_null(), "baggage went to a third party: {seen:#?}");
    assert_eq!(get("GET /books?id=7")["baggage"], "user=alice", "the operator allowed it for `shelf`");
}

/// A plain-HTTP client (reqwest is built without a TLS provider of its own).
fn client() -> reqwest::Client {
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::new()
}

/// POST `body` to the MCP endpoint with `headers`: the response's headers
/// and its one JSON-RPC message (from a JSON body or the event stream).
async fn post(url: &str, headers: &[(&str, &str)], body: Value) -> (reqwest::header::HeaderMap, Value) {
    let mut request = client()
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(body.to_string());
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let response = request.send().await.unwrap();
    let headers = response.headers().clone();
    let text = response.text().await.unwrap();
    let message =
        text.lines().filter_map(|l| l.strip_prefix("data:")).map(str::trim).rfind(|d| !d.is_empty()).unwrap_or(&text);
    (headers, serde_json::from_str(message).unwrap_or(Value::Null))
}

/// Over streamable HTTP (exported as http/json): a 2025-11-25 session's
/// `initialize` and call are SERVER spans with the session id and
/// transport `tcp`, the call's parent the `_meta` context and the HTTP
/// headers' context a link; a 2026-07-28 request (no session) takes its
/// parent from the headers; a REST call is an HTTP SERVER span under its
/// headers' context. The operator opted in to arguments on spans
/// (`[audit] params = "traced"`): calls carry their arguments and
/// results, SQL spans their statement.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_requests_of_both_revisions_and_rest_are_server_spans() {
    let receiver = Receiver::start();
    let cli = common::Cli::new();
    let dir = tempfile::tempdir().unwrap();
    let music = quiver_tests::databases::TestDatabase::sqlite();
    let config_file = dir.path().join("quiver.toml");
    std::fs::write(&config_file, format!("[audit]\nparams = \"traced\"\n{}", music.section("music", ""))).unwrap();
    let served = cli.serve(
        &["--config", config_file.to_str().unwrap()],
        &["--http", "127.0.0.1:0"],
        &[("OTEL_EXPORTER_OTLP_ENDPOINT", &receiver.endpoint), ("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json")],
    );
    let line = served.log_line("quiver: MCP at http://");
    let mcp = line.trim_start_matches("quiver: MCP at ").split(',').next().unwrap().to_owned();
    let rest = mcp.trim_end_matches("/mcp").to_owned();
    const HEADER_TRACE: &str = "11111111111111111111111111111111";
    let header_parent = format!("00-{HEADER_TRACE}-2222222222222222-01");

    // 2025-11-25: a session.
    let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}});
    let (headers, _) = post(&mcp, &[], initialize).await;
    let session = headers["mcp-session-id"].to_str().unwrap().to_owned();
    let session_headers = [("mcp-session-id", session.as_str()), ("mcp-protocol-version", "2025-11-25")];
    post(&mcp, &session_headers, json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).await;
    let mut with_trace = session_headers.to_vec();
    with_trace.push(("traceparent", &header_parent));
    let meta = json!({"traceparent": traceparent()});
    let (_, answer) =
        post(&mcp, &with_trace, serde_json::from_str(&call(2, "misbehave__echo", json!({"text": "a"}), meta)).unwrap())
            .await;
    assert_eq!(answer["result"]["isError"], false, "{answer}");
    let query = json!({"subcommand": "query", "database": "music", "sql": SQL});
    let (_, answer) =
        post(&mcp, &session_headers, serde_json::from_str(&call(4, "database", query, json!({}))).unwrap()).await;
    assert_eq!(answer["result"]["isError"], false, "{answer}");

    // 2026-07-28: no session; the context in the headers only.
    let meta = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                      "io.modelcontextprotocol/clientCapabilities": {},
                      "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "0"}});
    let stateless = [
        ("mcp-protocol-version", "2026-07-28"),
        ("mcp-method", "tools/call"),
        ("mcp-name", "misbehave__missing"),
        ("traceparent", header_parent.as_str()),
    ];
    let (_, answer) = post(
        &mcp,
        &stateless,
        serde_json::from_str(&call(3, "misbehave__missing", json!({"text": "b"}), meta)).unwrap(),
    )
    .await;
    assert_eq!(answer["result"]["isError"], true, "{answer}");

    // REST.
    let response = client()
        .post(format!("{rest}/v1/tools/misbehave__echo/call"))
        .header("traceparent", &header_parent)
        .body(r#"{"text": "c"}"#)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);

    let (success, log) = served.terminate();
    assert!(success, "{log}");
    let spans = tokio::task::spawn_blocking(move || {
        receiver.wait_for(EXPORTED, |spans| {
            ["tools/call misbehave__echo", "tools/call misbehave__missing", "POST /v1/tools/{name}/call", "SELECT"]
                .iter()
                .all(|name| spans.iter().any(|s| s["name"] == *name))
        })
    })
    .await
    .unwrap();
    assert!(spans.iter().all(|s| s["content_type"] == "application/json"), "http/json was asked for");

    let session_call = named(&spans, "tools/call misbehave__echo");
    assert_eq!(
        (session_call["trace_id"].as_str(), session_call["parent_span_id"].as_str()),
        (Some(TRACE), Some(CLIENT_SPAN))
    );
    assert_eq!(session_call["links"], json!([{"trace_id": HEADER_TRACE, "span_id": "2222222222222222"}]));
    assert_eq!(attribute(session_call, "mcp.session.id"), &json!(session));
    assert_eq!(attribute(session_call, "network.transport"), &json!("tcp"));
    assert_eq!(attribute(session_call, "mcp.protocol.version"), &json!("2025-11-25"));
    // Opted in: the arguments and the result are on the span.
    assert_eq!(attribute(session_call, "gen_ai.tool.call.arguments"), &json!(r#"{"text":"a"}"#), "{session_call:#}");
    assert_eq!(attribute(session_call, "gen_ai.tool.call.result"), &json!("a"), "{session_call:#}");
    let initialize = named(&spans, "initialize");
    assert_eq!(
        (initialize["kind"].as_str(), attribute(initialize, "mcp.method.name")),
        (Some("SPAN_KIND_SERVER"), &json!("initialize"))
    );
    // The session is made by the answer to `initialize`: its request has none yet.
    assert!(attribute(initialize, "mcp.session.id").is_null(), "{initialize:#}");
    let select = named(&spans, "SELECT");
    assert_eq!(attribute(select, "db.query.text"), &json!(SQL), "{select:#}");

    let stateless_call = named(&spans, "tools/call misbehave__missing");
    assert_eq!(stateless_call["trace_id"], HEADER_TRACE);
    assert_eq!(stateless_call["parent_span_id"], "2222222222222222");
    assert_eq!(attribute(stateless_call, "mcp.protocol.version"), &json!("2026-07-28"));
    assert!(attribute(stateless_call, "mcp.session.id").is_null(), "{stateless_call:#}");
    assert_eq!(attribute(stateless_call, "error.type"), &json!("tool_error"));

    let rest_call = named(&spans, "POST /v1/tools/{name}/call");
    assert_eq!(
        (rest_call["kind"].as_str(), rest_call["trace_id"].as_str()),
        (Some("SPAN_KIND_SERVER"), Some(HEADER_TRACE))
    );
    assert_eq!(attribute(rest_call, "http.response.status_code"), &json!(200));
    assert_eq!(attribute(rest_call, "gen_ai.tool.name"), &json!("misbehave__echo"));
    assert_eq!(attribute(rest_call, "gen_ai.tool.call.arguments"), &json!(r#"{"text":"c"}"#), "{rest_call:#}");
    let guest =
        spans.iter().find(|s| s["name"] == "call misbehave.echo" && s["parent_span_id"] == rest_call["span_id"]);
    assert!(guest.is_some(), "the REST call's guest call is its child: {spans:#?}");
}
