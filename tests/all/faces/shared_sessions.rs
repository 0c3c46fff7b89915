//! 2025-11-25 sessions shared by replicas through a real Redis (issue 36):
//! two HTTP faces of two hosts, as two replicas behind a load balancer
//! would be, with `[sessions] redis` naming one Redis. A session opened on
//! one is served on the other, ended everywhere by a `DELETE` on either,
//! held to its principal on both, and never served unchecked when Redis
//! cannot answer.

use std::sync::Arc;

use axum::body::Body;
use axum::http::{Request, StatusCode, header};
use quiver::auth::{Authenticator, Bind};
use quiver::faces::http::{HttpOptions, router};
use quiver_tests::TestHost;
use quiver_tests::oauth::Issuer;
use quiver_tests::redis::RedisServer;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::rest::{json_of, send};

const RESOURCE: &str = "http://localhost/mcp";
const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;

/// A replica: a host of `config` and its HTTP face.
async fn replica(config: &str) -> (TestHost, axum::Router) {
    capped_replica(config, HttpOptions::default().max_sessions).await
}

/// A replica keeping at most `max_sessions` sessions open.
async fn capped_replica(config: &str, max_sessions: usize) -> (TestHost, axum::Router) {
    let t = TestHost::builder().bundled().config(config).build();
    let bind = Bind { loopback: true, local_resource: Some(RESOURCE.into()) };
    let auth = Authenticator::new(t.host.auth_settings(), None, &bind, &|_| None).await.unwrap();
    let options = HttpOptions { authenticator: Some(Arc::new(auth)), max_sessions, ..Default::default() };
    let app = router(&t.host, &options, CancellationToken::new()).unwrap();
    (t, app)
}

/// A `POST /mcp` of `message`, with `token` if any, on `session` if any.
fn post(message: &str, token: Option<&str>, session: Option<&str>) -> Request<Body> {
    let mut request = Request::post("/mcp")
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream");
    if let Some(token) = token {
        request = request.header("authorization", format!("Bearer {token}"));
    }
    if let Some(id) = session {
        request = request.header("mcp-session-id", id).header("mcp-protocol-version", "2025-11-25");
    }
    request.body(Body::from(message.to_owned())).unwrap()
}

/// Open a session on `app` with `token`: its id.
async fn open(app: &axum::Router, token: Option<&str>) -> String {
    let (status, headers, body) = send(app, post(INITIALIZE, token, None)).await;
    assert_eq!(status, StatusCode::OK, "initialize: {}", String::from_utf8_lossy(&body));
    headers["mcp-session-id"].to_str().unwrap().to_owned()
}

fn calc(id: u32) -> String {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
           "params": {"name": "calc__evaluate", "arguments": {"expression": "6*7"}}})
    .to_string()
}

/// The text of a call's result: the body, or its SSE event's data.
fn result_text(body: &[u8]) -> String {
    let text = String::from_utf8_lossy(body);
    let data = text.lines().filter_map(|l| l.strip_prefix("data: ")).find(|d| d.starts_with('{'));
    let reply: Value = data.map_or_else(|| json_of(body), |d| json_of(d.as_bytes()));
    reply["result"]["content"][0]["text"].as_str().unwrap_or_default().to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_opened_on_one_replica_is_served_and_ended_on_another() {
    let mut redis = RedisServer::start();
    let config = format!("[sessions]\nredis = \"{}\"\n", redis.url);
    let ((_a, a), (_b, b)) = (replica(&config).await, replica(&config).await);

    // Opened on A; the rest of the handshake and its calls land on B.
    let id = open(&a, None).await;
    let initialized = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
    assert_eq!(send(&b, post(initialized, None, Some(&id))).await.0, StatusCode::ACCEPTED);
    let (status, _, body) = send(&b, post(&calc(2), None, Some(&id))).await;
    assert_eq!(status, StatusCode::OK, "{}", String::from_utf8_lossy(&body));
    assert!(result_text(&body).contains("42"), "{}", String::from_utf8_lossy(&body));
    // And back on A.
    let (status, _, body) = send(&a, post(&calc(3), None, Some(&id))).await;
    assert_eq!(status, StatusCode::OK, "{}", String::from_utf8_lossy(&body));

    // Ended on B: gone on A too, though A holds it in memory.
    let delete = Request::delete("/mcp")
        .header("mcp-session-id", &id)
        .header("mcp-protocol-version", "2025-11-25")
        .body(Body::empty())
        .unwrap();
    assert_eq!(send(&b, delete).await.0, StatusCode::OK);
    let (status, _, body) = send(&a, post(&calc(4), None, Some(&id))).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{}", String::from_utf8_lossy(&body));

    // A session id nobody opened is unknown everywhere.
    let (status, _, _) = send(&b, post(&calc(5), None, Some("not-a-session"))).await;
    assert_eq!(status, StatusCode::NOT_FOUND);

    // Redis gone: a request on a session is answered "retry", not served
    // unchecked, on the replica that opened it and on the other.
    let id = open(&a, None).await;
    redis.stop();
    for app in [&a, &b] {
        let (status, headers, body) = send(app, post(&calc(6), None, Some(&id))).await;
        assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{}", String::from_utf8_lossy(&body));
        assert!(headers.contains_key(header::RETRY_AFTER));
    }
    // Stateless requests (MCP 2026-07-28, REST) need no session store.
    let (status, _, _) = super::rest::get(&a, "/v1/tools", &[]).await;
    assert_eq!(status, StatusCode::OK);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_is_its_openers_on_every_replica() {
    let mut redis = RedisServer::start();
    let issuer = Issuer::start();
    let config = format!(
        "[sessions]\nredis = \"{}\"\n[auth]\nmode = \"oauth\"\nissuer = \"{}\"\nresource = \"{RESOURCE}\"\n\
         scopes_supported = [\"quiver:calc:read\"]\n",
        redis.url, issuer.url
    );
    let ((_a, a), (_b, b)) = (replica(&config).await, replica(&config).await);
    let bob = issuer.token(RESOURCE, "bob", "quiver:calc:read", json!({}));
    let alice = issuer.token(RESOURCE, "alice", "quiver:calc:read", json!({}));

    let id = open(&a, Some(&bob)).await;
    // On B, where it was never open: alice is refused, bob is served.
    let (status, _, body) = send(&b, post(&calc(2), Some(&alice), Some(&id))).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{}", String::from_utf8_lossy(&body));
    assert!(String::from_utf8_lossy(&body).contains("another principal"));
    let (status, _, body) = send(&b, post(&calc(3), Some(&bob), Some(&id))).await;
    assert_eq!(status, StatusCode::OK, "{}", String::from_utf8_lossy(&body));
    assert!(result_text(&body).contains("42"), "{}", String::from_utf8_lossy(&body));
    // Once served on B, still refused to alice there.
    let (status, _, _) = send(&b, post(&calc(4), Some(&alice), Some(&id))).await;
    assert_eq!(status, StatusCode::FORBIDDEN);

    // Redis gone: bob is answered "retry" on both replicas, though both
    // know whose the session is (whether it is still open is Redis's).
    redis.stop();
    for app in [&a, &b] {
        let (status, headers, body) = send(app, post(&calc(5), Some(&bob), Some(&id))).await;
        assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{}", String::from_utf8_lossy(&body));
        assert_eq!(headers[header::RETRY_AFTER], "1");
    }
}

/// What Redis fails to do in the middle of a request is a "retry", or
/// nothing at all, never a 500 or a session lost: the ACL of Redis's
/// default user takes commands away to fail exactly one step.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_store_failing_between_the_steps_of_a_request_loses_nothing() {
    let redis = RedisServer::start();
    let config = format!("[sessions]\nredis = \"{}\"\n", redis.url);
    let ((_a, a), (_b, b)) = (replica(&config).await, replica(&config).await);

    // A session rmcp opened but could not store would be unknown to the
    // other replicas: its `initialize` is a retry (and it is closed here).
    assert_eq!(redis.command(&["ACL", "SETUSER", "default", "-set"]), "OK");
    let (status, headers, body) = send(&a, post(INITIALIZE, None, None)).await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{}", String::from_utf8_lossy(&body));
    assert!(headers.contains_key(header::RETRY_AFTER));
    assert_eq!(redis.command(&["ACL", "SETUSER", "default", "+set"]), "OK");

    // A session restored on another replica is restored from what the
    // request's one check read: no second read that could fail after it.
    let id = open(&a, None).await;
    assert_eq!(redis.command(&["ACL", "SETUSER", "default", "-get"]), "OK");
    let (status, _, body) = send(&b, post(&calc(2), None, Some(&id))).await;
    assert_eq!(status, StatusCode::OK, "{}", String::from_utf8_lossy(&body));
    assert!(result_text(&body).contains("42"), "{}", String::from_utf8_lossy(&body));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_that_would_be_restored_past_the_cap_is_answered_retry() {
    let redis = RedisServer::start();
    let config = format!("[sessions]\nredis = \"{}\"\n", redis.url);
    let ((_a, a), (_c, c)) = (replica(&config).await, capped_replica(&config, 1).await);
    let own = open(&c, None).await;
    let id = open(&a, None).await;
    // C's one slot is taken: A's session cannot be restored there now.
    let (status, headers, body) = send(&c, post(&calc(2), None, Some(&id))).await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{}", String::from_utf8_lossy(&body));
    assert!(headers.contains_key(header::RETRY_AFTER));
    assert!(String::from_utf8_lossy(&body).contains("MCP sessions are open"), "{}", String::from_utf8_lossy(&body));
    // C's own session is served; A's is, on A.
    for (app, session) in [(&c, &own), (&a, &id)] {
        let (status, _, body) = send(app, post(&calc(3), None, Some(session))).await;
        assert!(result_text(&body).contains("42"), "{status}: {}", String::from_utf8_lossy(&body));
    }
}

#[test]
fn a_password_in_the_redis_url_is_refused_for_its_variable() {
    let settings = |redis: &str, env: Option<&str>| quiver::config::SessionsSettings {
        redis: Some(redis.to_owned()),
        password_env: env.map(str::to_owned),
        idle_seconds: None,
    };
    let made = |s: quiver::config::SessionsSettings| {
        quiver::faces::shared::SharedSessions::new(&s, &|v| (v == "REDIS_PASSWORD").then(|| "s3cret".to_owned()))
    };
    let error = made(settings("redis://:s3cret@127.0.0.1:6379", None)).err().unwrap().to_string();
    assert!(error.contains("password_env") && !error.contains("s3cret"), "{error}");
    assert!(made(settings("redis://127.0.0.1:6379", Some("REDIS_PASSWORD"))).unwrap().is_some());
    let error = made(settings("redis://127.0.0.1:6379", Some("UNSET"))).err().unwrap().to_string();
    assert!(error.contains("UNSET"), "{error}");
    assert!(made(settings("unix:///tmp/redis.sock", None)).is_err());
}
