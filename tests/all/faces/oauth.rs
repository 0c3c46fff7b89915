//! The HTTP face as an OAuth 2.1 resource server, against a real
//! authorization server (oauth2-mock-server on loopback): its metadata,
//! its challenges, tokens checked by signature, algorithm, issuer,
//! audience and lifetime, a rotated key picked up without a restart, and
//! calls held to the token's scopes (403 for a tool called by name, an
//! `isError` result for a meta-tool's target).

use std::sync::Arc;

use axum::body::Body;
use axum::http::{Request, StatusCode, header};
use quiver::auth::{Authenticator, Bind};
use quiver::faces::http::{HttpOptions, router};
use quiver_tests::TestHost;
use quiver_tests::mcp_servers::{node_section, time_section};
use quiver_tests::oauth::Issuer;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::rest::{get, json_of, send};

const RESOURCE: &str = "http://localhost/mcp";

struct Served {
    t: TestHost,
    app: axum::Router,
    audit: tempfile::TempDir,
}

async fn serve(issuer: &Issuer) -> Served {
    let memory = tempfile::tempdir().unwrap().keep();
    let memory_file = format!("MEMORY_FILE_PATH = {:?}", memory.join("graph.jsonl").display().to_string());
    let audit = tempfile::tempdir().unwrap();
    let config = format!(
        "[auth]\nmode = \"oauth\"\nissuer = \"{}\"\nresource = \"{RESOURCE}\"\njwks_refresh_seconds = 0\n\
         scopes_supported = [\"quiver:calc:read\", \"quiver:memory:read\", \"quiver:memory:write\", \"quiver:clock:read\"]\n\
         [auth.subjects]\nalice = \"reader\"\ncarol = \"scoped\"\n\
         [agents.reader]\naccess = {{ \"*\" = \"read\" }}\n\
         [agents.scoped]\nhide_unauthorized = true\n\
         [agents.nodb]\ncategories = [\"builtin\", \"mcp\"]\n\
         [audit]\npath = {:?}\n\
         [databases.vault]\nurl = \"sqlite:{}\"\n",
        issuer.url,
        audit.path().join("audit.jsonl").display().to_string(),
        memory.join("missing/vault.db").display(),
    );
    let t = TestHost::builder()
        .bundled()
        .config(&node_section("memory", "memory", &[], &format!("env = {{ {memory_file} }}")))
        .config(&time_section("clock"))
        .config(&config)
        .build();
    // The memory server's tools become known (as an operator's `discover` makes them).
    let mut operator = t.host.open_session(None).unwrap();
    let found = operator.call("mcp", json!({"subcommand": "discover", "server": "memory"})).await;
    assert!(!found.is_error, "{}", found.text);
    let bind = Bind { loopback: true, local_resource: Some(RESOURCE.into()) };
    let auth = Authenticator::new(t.host.auth_settings(), None, &bind, &|_| None).await.unwrap();
    let options = HttpOptions { authenticator: Some(Arc::new(auth)), ..Default::default() };
    let app = router(&t.host, &options, CancellationToken::new()).unwrap();
    Served { t, app, audit }
}

/// A `POST /mcp` of `message` with `token`, on session `session`.
fn post(token: &str, message: String, session: Option<&str>) -> Request<Body> {
    let mut request = Request::post("/mcp")
        .header("host", "localhost")
        .header("authorization", format!("Bearer {token}"))
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream");
    if let Some(id) = session {
        request = request.header("mcp-session-id", id).header("mcp-protocol-version", "2025-11-25");
    }
    request.body(Body::from(message)).unwrap()
}

/// A session opened with `token`: its id.
async fn open(app: &axum::Router, token: &str) -> String {
    let initialize = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;
    let (status, headers, body) = send(app, post(token, initialize.into(), None)).await;
    assert_eq!(status, StatusCode::OK, "initialize: {}", String::from_utf8_lossy(&body));
    let id = headers["mcp-session-id"].to_str().unwrap().to_owned();
    let initialized = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
    assert_eq!(send(app, post(token, initialized.into(), Some(&id))).await.0, StatusCode::ACCEPTED);
    id
}

/// One request in a new session opened with `token`.
async fn mcp(app: &axum::Router, token: &str, message: Value) -> (StatusCode, axum::http::HeaderMap, Vec<u8>) {
    let id = open(app, token).await;
    send(app, post(token, message.to_string(), Some(&id))).await
}

/// The JSON-RPC message of an answer: the body, or its SSE event's data.
fn message_of(body: &[u8]) -> Value {
    let text = String::from_utf8_lossy(body);
    match text.lines().filter_map(|l| l.strip_prefix("data: ")).find(|d| d.starts_with('{')) {
        Some(data) => json_of(data.as_bytes()),
        None => json_of(body),
    }
}

fn call(name: &str, arguments: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": {"name": name, "arguments": arguments}})
}

fn challenge(headers: &axum::http::HeaderMap) -> String {
    headers.get(header::WWW_AUTHENTICATE).map(|v| v.to_str().unwrap().to_owned()).unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tokens_are_checked_and_calls_held_to_their_scopes() {
    let issuer = Issuer::start();
    let Served { t, app, audit } = serve(&issuer).await;

    // The metadata is public and readable from any origin.
    let (status, headers, body) =
        get(&app, "/.well-known/oauth-protected-resource/mcp", &[("origin", "https://client.example")]).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(headers[header::ACCESS_CONTROL_ALLOW_ORIGIN], "*");
    let metadata = json_of(&body);
    assert_eq!(metadata["resource"], RESOURCE);
    assert_eq!(metadata["authorization_servers"], json!([issuer.url]));
    assert_eq!(metadata["scopes_supported"][2], "quiver:memory:write");

    // No token: 401, pointing at the metadata.
    let (status, headers, _) = get(&app, "/v1/tools", &[]).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    let told = challenge(&headers);
    assert!(
        told.starts_with(r#"Bearer resource_metadata="http://localhost/.well-known/oauth-protected-resource/mcp""#),
        "{told}"
    );
    assert!(
        told.contains(r#"scope="quiver:calc:read quiver:memory:read quiver:memory:write quiver:clock:read""#),
        "{told}"
    );
    assert!(!told.contains("error="), "no token is not an invalid one: {told}");

    // A token for this server with `read` calls a read tool, by MCP and by REST.
    let reader = issuer.token(RESOURCE, "bob", "quiver:calc:read quiver:memory:read", json!({}));
    let (status, _, body) = mcp(&app, &reader, call("calc__evaluate", json!({"expression": "6 * 7"}))).await;
    assert_eq!(status, StatusCode::OK, "{}", String::from_utf8_lossy(&body));
    let reply = message_of(&body);
    assert_eq!(reply["result"]["isError"], json!(false), "{reply}");
    assert!(reply["result"]["content"][0]["text"].as_str().unwrap().contains("42"), "{reply}");
    let auth = format!("Bearer {reader}");
    let rest = Request::post("/v1/tools/calc__evaluate/call")
        .header("authorization", &auth)
        .header("content-type", "application/json")
        .body(Body::from(r#"{"expression": "1 + 1"}"#))
        .unwrap();
    let (status, _, body) = send(&app, rest).await;
    assert_eq!(status, StatusCode::OK, "{}", String::from_utf8_lossy(&body));

    // A write tool by name: 403 with every scope needed in one challenge,
    // and a JSON-RPC error.
    let create = call("memory__create_entities", json!({"entities": []}));
    let (status, headers, body) = mcp(&app, &reader, create.clone()).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{}", String::from_utf8_lossy(&body));
    let told = challenge(&headers);
    assert!(told.contains(r#"error="insufficient_scope""#), "{told}");
    assert!(told.contains(r#"scope="quiver:calc:read quiver:memory:read quiver:memory:write""#), "{told}");
    let reply = message_of(&body);
    assert_eq!(reply["id"], 9);
    assert!(reply["error"]["message"].as_str().unwrap().contains("quiver:memory:write"), "{reply}");

    // The same tool as a meta-tool's target: a result the model reads.
    let through = call("call_tool", json!({"name": "memory__create_entities", "arguments": {"entities": []}}));
    let (status, _, body) = mcp(&app, &reader, through).await;
    assert_eq!(status, StatusCode::OK);
    let reply = message_of(&body);
    assert_eq!(reply["result"]["isError"], json!(true), "{reply}");
    assert!(reply["result"]["content"][0]["text"].as_str().unwrap().contains("quiver:memory:write"), "{reply}");

    // A resource no scope names is out of reach, even for reading.
    let memory_only = issuer.token(RESOURCE, "bob", "quiver:memory:read", json!({}));
    let (status, _, _) = mcp(&app, &memory_only, call("calc__evaluate", json!({"expression": "1"}))).await;
    assert_eq!(status, StatusCode::FORBIDDEN);

    // `write` granted, the call goes through (`scp` as an array, as some providers send).
    let writer = issuer.token(RESOURCE, "bob", "", json!({"scp": ["quiver:memory:write"]}));
    let (status, _, body) = mcp(&app, &writer, create.clone()).await;
    assert_eq!(status, StatusCode::OK, "{}", String::from_utf8_lossy(&body));
    let reply = message_of(&body);
    assert!(reply["result"].is_object() && reply["result"]["isError"] != json!(true), "{reply}");

    // The principal maps to its profile: alice is a reader, whatever her scopes.
    let alice = issuer.token(RESOURCE, "alice", "quiver:memory:write", json!({}));
    let (status, _, body) = mcp(&app, &alice, create).await;
    assert_eq!(status, StatusCode::OK);
    let reply = message_of(&body);
    assert_eq!(reply["result"]["isError"], json!(true), "{reply}");
    assert!(reply["result"]["content"][0]["text"].as_str().unwrap().contains("agent `reader`"), "{reply}");

    // A profile that hides what the token does not name: carol's Tier 1 and
    // tools/list show calc alone; bob (the face's profile) sees everything.
    let carol = issuer.token(RESOURCE, "carol", "quiver:calc:read", json!({}));
    // Tier 1 is the instructions and the meta-tools' descriptions (which list the resources).
    let shown = |token: String| {
        let app = app.clone();
        async move {
            let list = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"});
            let (_, _, body) = mcp(&app, &token, list).await;
            let tools = message_of(&body)["result"]["tools"].as_array().unwrap().clone();
            let names: Vec<String> = tools.iter().map(|t| t["name"].as_str().unwrap().to_owned()).collect();
            (serde_json::to_string(&tools).unwrap(), names)
        }
    };
    let (listed, names) = shown(carol.clone()).await;
    assert!(!listed.contains("memory") && !listed.contains("codec"), "{listed}");
    assert!(!listed.contains("vault"), "a failing resource it may not see is not named: {listed}");
    assert!(names.iter().all(|n| !n.contains("__") || n.starts_with("calc__")), "{names:?}");
    assert!(listed.contains("calc"), "{listed}");
    let (listed, _) = shown(reader.clone()).await;
    assert!(listed.contains("memory") && listed.contains("codec"), "{listed}");
    assert!(listed.contains("vault: failing"), "{listed}");
    // Nor does asking the meta-tool by name, for a token that may use one
    // server (clock) but not another (memory): a hidden server is unknown,
    // and the names a wrong one could have been leave it out.
    let clocked = issuer.token(RESOURCE, "carol", "quiver:calc:read quiver:clock:read", json!({}));
    // A profile without databases, asking another meta-tool for one by
    // name, learns nothing of it (not even that it failed, nor its path).
    let mut nodb = t.host.session(Some("nodb")).unwrap();
    let told = nodb.call("mcp", json!({"subcommand": "discover", "server": "vault"})).await;
    assert!(told.is_error && !told.text.contains("vault.db") && !told.text.contains("databases"), "{}", told.text);
    let ask = call("database", json!({"subcommand": "list_tables", "database": "vault"}));
    let (_, _, body) = mcp(&app, &clocked, ask).await;
    let told = message_of(&body).to_string();
    assert!(!told.contains("missing/vault.db"), "a hidden resource's rejection is not told: {told}");
    for server in ["memory", "nope"] {
        let ask = call("mcp", json!({"subcommand": "discover", "server": server}));
        let (_, _, body) = mcp(&app, &clocked, ask).await;
        let reply = message_of(&body);
        let text = reply["result"]["content"][0]["text"].as_str().unwrap_or_default().to_owned();
        assert_eq!(reply["result"]["isError"], json!(true), "{reply}");
        assert!(text.contains("clock"), "the servers it may use are named: {text}");
        assert!(!text.contains("create_entities") && !text.contains("`memory`,"), "{server}: {text}");
        assert!(server == "memory" || !text.contains("memory"), "{server}: {text}");
    }
    // A session is its opener's: another principal's token on it is refused.
    let bobs = open(&app, &reader).await;
    let ping = r#"{"jsonrpc":"2.0","id":3,"method":"ping"}"#;
    let (status, _, body) = send(&app, post(&alice, ping.into(), Some(&bobs))).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{}", String::from_utf8_lossy(&body));
    assert!(String::from_utf8_lossy(&body).contains("another principal"));
    let (status, _, _) = send(&app, post(&memory_only, ping.into(), Some(&bobs))).await;
    assert_eq!(status, StatusCode::OK, "the same principal with another token of its own");

    // Every bad token is a 401 `invalid_token`, counted by its reason.
    // One character of the signature changed (not the last: its spare bits may not count).
    let tampered = {
        let mut token = reader.clone().into_bytes();
        let at = token.len() - 10;
        token[at] = if token[at] == b'A' { b'B' } else { b'A' };
        String::from_utf8(token).unwrap()
    };
    let bad = [
        ("audience", issuer.token("https://other.example/mcp", "bob", "quiver:calc:read", json!({}))),
        ("expired", issuer.token(RESOURCE, "bob", "quiver:calc:read", json!({"expiresIn": -3600}))),
        ("unknown_key", issuer.forged("stranger", RESOURCE, "bob", "quiver:calc:read")),
        ("algorithm", issuer.forged("none", RESOURCE, "bob", "quiver:calc:read")),
        ("algorithm", issuer.forged("hs256", RESOURCE, "bob", "quiver:calc:read")),
        ("signature", tampered),
        ("opaque", "not-a-jwt".to_owned()),
    ];
    for (reason, token) in &bad {
        let (status, headers, body) = get(&app, "/v1/tools", &[("authorization", &format!("Bearer {token}"))]).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED, "{reason}");
        let told = challenge(&headers);
        assert!(told.contains(r#"error="invalid_token""#), "{reason}: {told}");
        assert!(!told.contains(token.as_str()) && !String::from_utf8_lossy(&body).contains(token.as_str()));
    }
    let metrics = t.host.metrics().encode();
    for (reason, count) in [
        ("audience", 1),
        ("expired", 1),
        ("unknown_key", 1),
        ("algorithm", 2),
        ("signature", 1),
        ("insufficient_scope", 2),
    ] {
        let line = format!("quiver_auth_refusals_total{{reason=\"{reason}\"}} {count}");
        assert!(metrics.lines().any(|l| l == line), "no `{line}` in\n{metrics}");
    }

    // A key rotated at the issuer is picked up without a restart.
    let kid = issuer.rotate();
    assert_ne!(kid, issuer.kid);
    let rotated = issuer.token(RESOURCE, "bob", "quiver:calc:read", json!({"kid": kid}));
    let (status, _, _) = get(&app, "/v1/tools", &[("authorization", &format!("Bearer {rotated}"))]).await;
    assert_eq!(status, StatusCode::OK);

    // Metrics need the scope that names them.
    let (status, headers, _) = get(&app, "/metrics", &[("authorization", &auth)]).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    assert!(challenge(&headers).contains("quiver:metrics:read"));
    let scraper = issuer.token(RESOURCE, "prometheus", "quiver:metrics:read", json!({}));
    let (status, _, _) = get(&app, "/metrics", &[("authorization", &format!("Bearer {scraper}"))]).await;
    assert_eq!(status, StatusCode::OK);

    // No token reached the audit log.
    let log = std::fs::read_to_string(audit.path().join("audit.jsonl")).unwrap();
    assert!(log.contains("calc__evaluate"), "{log}");
    // Each call is recorded under the token's subject (and profile), never the token.
    let records: Vec<Value> = log.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let calc = records.iter().find(|r| r["tool"] == "calc__evaluate").unwrap();
    assert_eq!(calc["principal"], "bob", "{calc}");
    let alices = records.iter().find(|r| r["principal"] == "alice").expect("alice's refused call is audited");
    assert_eq!((&alices["agent"], &alices["outcome"]), (&json!("reader"), &json!("denied")), "{alices}");
    for token in [&reader, &writer, &alice, &memory_only] {
        assert!(!log.contains(token.as_str()));
    }
}

/// An opaque token is introspected (RFC 7662) when Quiver has client
/// credentials for it, and held to the rules a JWT is: active, for this
/// server, from this issuer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn opaque_tokens_are_introspected() {
    let issuer = Issuer::start();
    let config = format!(
        "[auth]\nmode = \"oauth\"\nissuer = \"{}\"\nresource = \"{RESOURCE}\"\n\
         introspection_client_id = \"quiver\"\nintrospection_secret_env = \"INTROSPECTION_SECRET\"\n",
        issuer.url
    );
    let t = TestHost::builder().bundled().config(&config).build();
    let bind = Bind { loopback: true, local_resource: Some(RESOURCE.into()) };
    let env = |var: &str| (var == "INTROSPECTION_SECRET").then(|| "s3cret".to_owned());
    let auth = Authenticator::new(t.host.auth_settings(), None, &bind, &env).await.unwrap();
    let options = HttpOptions { authenticator: Some(Arc::new(auth)), ..Default::default() };
    let app = router(&t.host, &options, CancellationToken::new()).unwrap();
    let call = |token: &'static str| {
        Request::post("/v1/tools/calc__evaluate/call")
            .header("authorization", format!("Bearer {token}"))
            .header("content-type", "application/json")
            .body(Body::from(r#"{"expression": "2 + 2"}"#))
            .unwrap()
    };
    let active =
        json!({"active": true, "sub": "dave", "aud": RESOURCE, "iss": issuer.url, "scope": "quiver:calc:read"});
    issuer.introspection(active.clone());
    let (status, _, body) = send(&app, call("opaque-1")).await;
    assert_eq!(status, StatusCode::OK, "{}", String::from_utf8_lossy(&body));
    assert!(String::from_utf8_lossy(&body).contains('4'));
    issuer.introspection(json!({"active": false}));
    let (status, headers, _) = send(&app, call("opaque-2")).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert!(challenge(&headers).contains("not active"), "{}", challenge(&headers));
    // The answer for opaque-1 is kept (`introspection_cache_seconds`,
    // default 60): the issuer is not asked again within it.
    assert_eq!(send(&app, call("opaque-1")).await.0, StatusCode::OK, "a kept answer");
    let mut elsewhere = active.clone();
    elsewhere["aud"] = json!("https://other.example/mcp");
    issuer.introspection(elsewhere);
    let (status, headers, _) = send(&app, call("opaque-3")).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert!(challenge(&headers).contains("not for this server"), "{}", challenge(&headers));
    let mut narrow = active;
    narrow["scope"] = json!("quiver:text:read");
    issuer.introspection(narrow);
    let (status, _, body) = send(&app, call("opaque-4")).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{}", String::from_utf8_lossy(&body));

    // With `introspection_cache_seconds = 0` every request asks the issuer.
    let t = TestHost::builder().bundled().config(&format!("{config}introspection_cache_seconds = 0\n")).build();
    let auth = Authenticator::new(t.host.auth_settings(), None, &bind, &env).await.unwrap();
    let options = HttpOptions { authenticator: Some(Arc::new(auth)), ..Default::default() };
    let app = router(&t.host, &options, CancellationToken::new()).unwrap();
    issuer.introspection(
        json!({"active": true, "sub": "dave", "aud": RESOURCE, "iss": issuer.url, "scope": "quiver:calc:read"}),
    );
    assert_eq!(send(&app, call("opaque-5")).await.0, StatusCode::OK);
    issuer.introspection(json!({"active": false}));
    assert_eq!(send(&app, call("opaque-5")).await.0, StatusCode::UNAUTHORIZED, "asked again: revoked");
}

/// What the log gets, kept for a test to read.
#[derive(Clone, Default)]
struct Logged(Arc<std::sync::Mutex<Vec<u8>>>);

impl std::io::Write for Logged {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// A token's subject is the issuer's text, not Quiver's: a refusal that
/// logs it cannot forge a line or colour the terminal.
#[tokio::test]
async fn what_a_token_says_cannot_forge_a_log_line() {
    let issuer = Issuer::start();
    let Served { app, .. } = serve(&issuer).await;
    let logged = Logged::default();
    let writer = logged.clone();
    let subscriber = tracing_subscriber::fmt().with_writer(move || writer.clone()).with_ansi(false).finish();
    let _log = tracing::subscriber::set_default(subscriber);
    let subject = "mallory\nWARN quiver: forged line \u{1b}[31mred";
    let token = issuer.token(RESOURCE, subject, "quiver:memory:read", json!({}));
    let (status, _, _) = mcp(&app, &token, call("calc__evaluate", json!({"expression": "1"}))).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let log = String::from_utf8(logged.0.lock().unwrap().clone()).unwrap();
    assert!(log.contains("refused a call above the token's scopes") && log.contains("mallory"), "{log}");
    assert!(!log.lines().any(|line| line.starts_with("WARN quiver: forged")), "a forged line: {log}");
    assert!(!log.contains('\u{1b}'), "an escape sequence reached the log: {log}");
    assert!(!log.contains(&token), "the token reached the log");
}
