//! Connector egress under attack, against real servers on loopback: a
//! document's token URL outside the allow-list, token answers with odd
//! lifetimes, a guest that spells the credential's query parameter another
//! way, headers outside the allow-list, and an API that echoes the host's
//! credentials back.

use std::sync::{Arc, Mutex};

use serde_json::{Value, json};

use quiver::GuestErrorKind;
use quiver_tests::TestHost;
use quiver_tests::servers::{Hostile, JsonServer, TokenEndpoint};

use crate::connectors::{call, guest_error, library, secret_file};

const TOKEN: &str = "s3cret-books-token";

/// A listener on `address` (a loopback address) that records the first
/// bytes of every connection and answers 401: a token endpoint nobody
/// allowed. It stops with the test's runtime.
async fn recording_listener(address: &str) -> (u16, Arc<Mutex<Vec<String>>>) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind((address, 0)).await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let record = Arc::clone(&seen);
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            let mut buffer = vec![0; 4096];
            let read = stream.read(&mut buffer).await.unwrap_or(0);
            record.lock().unwrap().push(String::from_utf8_lossy(&buffer[..read]).into_owned());
            let answer = b"HTTP/1.1 401 Unauthorized\r\ncontent-length: 0\r\nconnection: close\r\n\r\n";
            let _ = stream.write_all(answer).await;
        }
    });
    (port, seen)
}

/// An OpenAPI document with one operation, `echo` (`GET /echo`), behind an
/// OAuth2 client-credentials scheme whose token URL is `token_url`.
fn echo_document(dir: &tempfile::TempDir, name: &str, token_url: &str) -> String {
    let path = dir.path().join(name);
    let document = format!(
        "openapi: 3.0.3\ninfo: {{ title: Echo, version: '1' }}\npaths:\n  /echo:\n    get:\n      operationId: echo\n      \
         security: [{{ client: [] }}]\n      responses: {{ '200': {{ description: ok }} }}\ncomponents:\n  \
         securitySchemes:\n    client:\n      type: oauth2\n      flows:\n        clientCredentials:\n          \
         tokenUrl: {token_url}\n          scopes: {{}}\n"
    );
    std::fs::write(&path, document).unwrap();
    path.display().to_string()
}

/// A document's `tokenUrl` is outside text: the host asks it for a token
/// only when the allow-list lets it (or the operator wrote `token_url`
/// itself), with the same address checks as every connector request. One
/// on 127.0.0.2, not allowed, gets no connection (so no client secret),
/// and the call is a typed error naming the rule and the fix; the same
/// document with its token URL allowed gets its token.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_document_token_url_outside_the_allow_list_gets_no_secret() {
    let api = Hostile::start();
    let (port, seen) = recording_listener("127.0.0.2").await;
    let endpoint = TokenEndpoint::start("quiver", "client-s3cret", TOKEN);
    let dir = tempfile::tempdir().unwrap();
    let client = secret_file(&dir, "client", "client-s3cret");
    let outside = echo_document(&dir, "outside.yaml", &format!("http://127.0.0.2:{port}/token"));
    let allowed = echo_document(&dir, "allowed.yaml", &endpoint.url);
    let token_origin = endpoint.url.trim_end_matches("/token");
    let section = |name: &str, document: &str, more: &str| {
        format!(
            "[connectors.{name}]\nopenapi = \"{document}\"\nbase_url = \"{}\"\n{more}\nauth = {{ kind = \"oauth2\", \
             client_id = \"quiver\", client_secret_file = \"{client}\" }}\n",
            api.url
        )
    };
    let config =
        section("outside", &outside, "") + &section("allowed", &allowed, &format!("allow_http = [\"{token_origin}\"]"));
    let t = TestHost::builder().config(&config).build();

    let (kind, message) = guest_error_of(call(&t, "outside", "echo", json!({})).await);
    let received = seen.lock().unwrap().clone();
    assert!(received.is_empty(), "the token URL outside the allow-list was sent: {received:?}");
    assert_eq!(kind, GuestErrorKind::Unavailable, "{message}");
    assert!(
        message.contains(&format!("http://127.0.0.2:{port}/token"))
            && message.contains("not in this connector's allow-list")
            && message.contains("allow_http")
            && message.contains("token_url"),
        "{message}"
    );
    assert!(!message.contains("client-s3cret"), "{message}");

    let answer = call(&t, "allowed", "echo", json!({})).await.unwrap();
    assert!(answer["headers"]["authorization"].as_str().is_some_and(|a| a.starts_with("Bearer ")), "{answer}");
    assert_eq!(endpoint.issued(), 1);
    assert!(seen.lock().unwrap().is_empty());
}

fn guest_error_of(result: quiver::Result<Value>) -> (GuestErrorKind, String) {
    match result {
        Err(error) => {
            let (kind, message) = guest_error(&error);
            (kind, message.to_owned())
        }
        Ok(answer) => panic!("the call succeeded: {answer}"),
    }
}

/// A token endpoint's `expires_in` is outside text: huge (u64::MAX, 2^64,
/// 1e300), negative, zero, fractional, a string, null or missing, the
/// host never panics, clamps what it cannot use, and every call of every
/// connector gets its token, its answer and its audit line.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn odd_token_lifetimes_never_panic() {
    let server = JsonServer::start(&library(), TOKEN);
    let endpoint = TokenEndpoint::start("quiver", "client-s3cret", TOKEN);
    let dir = tempfile::tempdir().unwrap();
    let client = secret_file(&dir, "client", "client-s3cret");
    let lifetimes = [
        "18446744073709551615",
        "18446744073709551616",
        "1e300",
        "-1",
        "-18446744073709551616",
        "0",
        "0.5",
        "%2236000%22",
        "%22soon%22",
        "true",
        "null",
        "none",
    ];
    let mut config = format!("[audit]\npath = \"{}\"\n", dir.path().join("audit.jsonl").display());
    for (i, lifetime) in lifetimes.iter().enumerate() {
        config += &format!(
            "[connectors.c{i}]\nplugin = \"fixture-connector\"\nbase_url = \"{}\"\nauth = {{ kind = \"oauth2\", \
             token_url = \"{}?expires_in={lifetime}\", client_id = \"quiver\", client_secret_file = \"{client}\" }}\n",
            server.url, endpoint.url
        );
    }
    let t = TestHost::builder().fixture("connector").config(&config).build();
    for (i, lifetime) in lifetimes.iter().enumerate() {
        for _ in 0..2 {
            let answer = call(&t, &format!("c{i}"), "read", json!({ "path": "/books/7" })).await;
            assert_eq!(answer.as_ref().map(|a| a["status"].clone()).ok(), Some(json!(200)), "{lifetime}: {answer:?}");
        }
        let records = t.host.audit(10, Some(&format!("c{i}")));
        assert_eq!(records.iter().filter(|r| r.outcome == "ok").count(), 2, "{lifetime}: {records:?}");
    }
}

/// A guest may put any query parameter on a request except the one that
/// carries the connector's credential, in any spelling the API may read
/// as that one: `;` as a separator, `api_key[]`, case and `-`/`.`
/// variants, percent-encoded (once or twice). Refused as `denied`, saying
/// that the host sets that parameter itself (not "not in the allow-list");
/// the same goes for a header spelt like the key's (`x_api_key`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_guest_set_credential_parameter_is_refused_in_every_spelling() {
    let api = Hostile::start();
    let dir = tempfile::tempdir().unwrap();
    let key = secret_file(&dir, "key", TOKEN);
    let config = format!(
        "[connectors.by_query]\nplugin = \"fixture-connector\"\nbase_url = \"{url}\"\n\
         auth = {{ kind = \"api_key\", query = \"api_key\", key_file = \"{key}\" }}\n\
         [connectors.by_header]\nplugin = \"fixture-connector\"\nbase_url = \"{url}\"\nallow_headers = [\"x-api-keys\"]\n\
         auth = {{ kind = \"api_key\", header = \"X-API-Key\", key_file = \"{key}\" }}\n",
        url = api.url
    );
    let t = TestHost::builder().fixture("connector").config(&config).build();
    let fetch = |instance: &'static str, query: &str, headers: Value| {
        let input = json!({ "url": format!("{}/echo?{query}", api.url), "headers": headers });
        let t = &t;
        async move { call(t, instance, "fetch", input).await }
    };
    for query in [
        "api_key=mine",
        "a=1;api_key=mine",
        "api_key[]=mine",
        "api_key[0]=mine",
        "API_KEY=mine",
        "Api-Key=mine",
        "api.key=mine",
        "apikey=mine",
        "api%5Fkey=mine",
        "api%255Fkey=mine",
        "api_key%00=mine",
        "api%20key=mine",
        "api+key=mine",
    ] {
        let (kind, message) = guest_error_of(fetch("by_query", query, json!([])).await);
        assert_eq!(kind, GuestErrorKind::Denied, "{query}: {message}");
        assert!(
            message.contains("`api_key`") && message.contains("the host adds") && !message.contains("allow-list"),
            "{query}: {message}"
        );
    }
    // Other parameters pass, also ones that merely contain the name.
    for query in ["q=api_key", "api_keys=2&page=1", "my_api_key_id=3", "a=1;b=2"] {
        let answer = fetch("by_query", query, json!([])).await.unwrap();
        assert_eq!(answer["status"], 200, "{query}: {answer}");
    }
    for header in ["x_api_key", "X_API_KEY", "x.api.key"] {
        let (kind, message) = guest_error_of(fetch("by_header", "", json!([[header, "mine"]])).await);
        assert_eq!(kind, GuestErrorKind::Denied, "{header}: {message}");
    }
    // A header that merely looks like the key's passes where the API
    // declares it (`allow_headers`).
    assert_eq!(fetch("by_header", "", json!([["x-api-keys", "2"]])).await.unwrap()["status"], 200);
}

/// The headers a guest may set are an allow-list: the standard content
/// headers, and what its API declares (`allow_headers`, an OpenAPI
/// document's header parameters). Anything else, and the trace context the
/// host sets itself, is `denied`, naming the header; the API never sees it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_guest_sets_only_standard_and_declared_headers() {
    let api = Hostile::start();
    let dir = tempfile::tempdir().unwrap();
    let document = dir.path().join("echo.yaml");
    std::fs::write(
        &document,
        "openapi: 3.0.3\ninfo: { title: Echo, version: '1' }\npaths:\n  /echo:\n    get:\n      operationId: echo\n      \
         parameters: [{ name: X-Client, in: header, schema: { type: string } }]\n      \
         responses: { '200': { description: ok } }\n",
    )
    .unwrap();
    let config = format!(
        "[connectors.plain]\nplugin = \"fixture-connector\"\nbase_url = \"{url}\"\n\
         [connectors.declared]\nplugin = \"fixture-connector\"\nbase_url = \"{url}\"\nallow_headers = [\"X-Client\"]\n\
         [connectors.documented]\nopenapi = \"{document}\"\nbase_url = \"{url}\"\n",
        url = api.url,
        document = document.display()
    );
    let t = TestHost::builder().fixture("connector").config(&config).build();
    let fetch = |instance: &'static str, headers: Value| {
        let input = json!({ "url": format!("{}/echo", api.url), "headers": headers });
        let t = &t;
        async move { call(t, instance, "fetch", input).await }
    };
    let received =
        |answer: Value| serde_json::from_str::<Value>(answer["body"].as_str().unwrap()).unwrap()["headers"].clone();

    let standard =
        json!([["Content-Type", "application/json"], ["If-None-Match", "\"v1\""], ["Accept-Language", "fr"]]);
    let seen = received(fetch("plain", standard).await.unwrap());
    assert_eq!(
        (seen["content-type"].as_str(), seen["if-none-match"].as_str()),
        (Some("application/json"), Some("\"v1\""))
    );
    for header in ["X-Client", "X-Forwarded-For", "Forwarded"] {
        let (kind, message) = guest_error_of(fetch("plain", json!([[header, "1"]])).await);
        assert_eq!(kind, GuestErrorKind::Denied, "{header}: {message}");
        assert!(message.contains(&format!("`{}`", header.to_ascii_lowercase())), "{header}: {message}");
        assert!(message.contains("allow_headers"), "{message}");
    }
    for header in ["traceparent", "tracestate", "baggage"] {
        let (kind, message) = guest_error_of(fetch("plain", json!([[header, "1"]])).await);
        assert_eq!(kind, GuestErrorKind::Denied, "{header}: {message}");
        assert!(message.contains(&format!("`{header}`")) && message.contains("trace context"), "{message}");
    }
    let seen = received(fetch("declared", json!([["X-Client", "quiver-test"]])).await.unwrap());
    assert_eq!(seen["x-client"], "quiver-test", "{seen}");
    let (kind, _) = guest_error_of(fetch("declared", json!([["traceparent", "00-x"]])).await);
    assert_eq!(kind, GuestErrorKind::Denied, "no operator can hand a guest the trace headers");
    // An OpenAPI document's header parameter is declared by the document.
    let answer = call(&t, "documented", "echo", json!({"X-Client": "from-the-model"})).await.unwrap();
    assert_eq!(answer["headers"]["x-client"], "from-the-model", "{answer}");
}

/// An API that echoes what it received (headers in its body and in its own
/// response headers, the URL with the query key) hands back the host's
/// credentials: the host redacts every form it sent (the token, the key as
/// sent in the URL, `base64(user:password)`, the OAuth2 access token)
/// before the guest sees the response, also when the body arrives in
/// 3-byte chunks that split every value.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn echoed_credentials_are_redacted_before_the_guest_sees_them() {
    let api = Hostile::start();
    let endpoint = TokenEndpoint::start("quiver", "client-s3cret", "issued-0auth-token");
    let dir = tempfile::tempdir().unwrap();
    let token = secret_file(&dir, "token", TOKEN);
    let key = secret_file(&dir, "key", "k3y&with=odd chars");
    let password = secret_file(&dir, "password", "open-sesame");
    let client = secret_file(&dir, "client", "client-s3cret");
    let section = |name: &str, auth: String| {
        format!(
            "[connectors.{name}]\nplugin = \"fixture-connector\"\nbase_url = \"{}\"\nauth = {{ {auth} }}\n",
            api.url
        )
    };
    let config = [
        section("bearer", format!("kind = \"bearer\", token_file = \"{token}\"")),
        section("query", format!("kind = \"api_key\", query = \"api_key\", key_file = \"{key}\"")),
        section("basic", format!("kind = \"basic\", username = \"ann\", password_file = \"{password}\"")),
        section(
            "oauth",
            format!(
                "kind = \"oauth2\", token_url = \"{}\", client_id = \"quiver\", client_secret_file = \"{client}\"",
                endpoint.url
            ),
        ),
    ]
    .join("");
    let t = TestHost::builder().fixture("connector").config(&config).build();
    // base64("ann:open-sesame"), as HTTP basic sends it.
    let basic = "YW5uOm9wZW4tc2VzYW1l";
    for (instance, secrets) in [
        ("bearer", vec![TOKEN.to_owned()]),
        ("query", vec!["k3y".to_owned(), "k3y%26with%3Dodd%20chars".to_owned(), "odd chars".to_owned()]),
        ("basic", vec![basic.to_owned(), "open-sesame".to_owned()]),
        ("oauth", vec!["issued-0auth-token".to_owned(), "client-s3cret".to_owned()]),
    ] {
        for chunk in [0, 3] {
            let answer = call(&t, instance, "read", json!({ "path": format!("/echo?chunk={chunk}") })).await.unwrap();
            assert_eq!(answer["status"], 200, "{instance}: {answer}");
            let shown = answer.to_string();
            for secret in &secrets {
                assert!(!shown.contains(secret.as_str()), "{instance} (chunk {chunk}) shows `{secret}`: {shown}");
            }
            assert!(shown.contains("[redacted]"), "{instance}: {shown}");
            let body: Value = serde_json::from_str(answer["body"].as_str().unwrap()).unwrap();
            if instance != "query" {
                let scheme = if instance == "basic" { "Basic" } else { "Bearer" };
                assert_eq!(body["headers"]["authorization"], format!("{scheme} [redacted]"), "{instance}: {body}");
            }
        }
    }
}
