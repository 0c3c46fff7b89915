//! Connectors for real: instances of the connector fixture (a small REST
//! client) against json-server with a bearer-token middleware, and against
//! a deliberately hostile upstream. Credentials are the host's: the guest
//! never sees them, cannot set them, and they never leave the connector's
//! own origin. Traffic goes to loopback only; private and metadata
//! destinations are checked at the guard (its unit tests), never sent.

use serde_json::{Value, json};

use quiver::{Error, ErrorKind, GuestErrorKind};
use quiver_tests::TestHost;
use quiver_tests::servers::{Hostile, JsonServer, TokenEndpoint};

const TOKEN: &str = "s3cret-books-token";

/// A file holding `secret`, in `dir`; its absolute path.
pub(crate) fn secret_file(dir: &tempfile::TempDir, name: &str, secret: &str) -> String {
    let path = dir.path().join(name);
    std::fs::write(&path, format!("{secret}\n")).unwrap();
    path.display().to_string()
}

pub(crate) fn library() -> Value {
    json!({ "books": [
        { "id": 1, "title": "The Dispossessed", "author": "Ursula K. Le Guin" },
        { "id": 7, "title": "Piranesi", "author": "Susanna Clarke" }
    ] })
}

pub(crate) async fn call(t: &TestHost, instance: &str, action: &str, input: Value) -> quiver::Result<Value> {
    t.host.call_json(instance, action, &input).await
}

pub(crate) fn guest_error(error: &Error) -> (GuestErrorKind, &str) {
    match error {
        Error::Guest { kind, message, .. } => (*kind, message.as_str()),
        other => panic!("not the connector's typed error: {other}"),
    }
}

/// Full CRUD on json-server through connector instances: the host adds the
/// bearer token (the guest has none), a wrong token gets the server's 401,
/// each instance's `access` caps what any agent may do, and an agent's own
/// grant caps it further.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn instances_reach_a_real_api_with_host_held_credentials() {
    let server = JsonServer::start(&library(), TOKEN);
    let secrets = tempfile::tempdir().unwrap();
    let good = secret_file(&secrets, "token", TOKEN);
    let bad = secret_file(&secrets, "wrong", "not-the-token");
    let config = format!(
        r#"
[connectors.books]
plugin = "fixture-connector"
base_url = "{url}"
auth = {{ kind = "bearer", token_file = "{good}" }}
access = "write"

[connectors.intruder]
plugin = "fixture-connector"
base_url = "{url}"
auth = {{ kind = "bearer", token_file = "{bad}" }}

[connectors.shelf]
plugin = "fixture-connector"
base_url = "{url}"
auth = {{ kind = "bearer", token_file = "{good}" }}
access = "admin"

[agents.reader]
access = {{ shelf = "read" }}
"#,
        url = server.url
    );
    let t = TestHost::builder().fixture("connector").config(&config).build();
    let session = t.host.session(None).unwrap();
    let prompt = session.system_prompt();
    assert!(prompt.contains("- books:") && prompt.contains("- shelf:"), "{prompt}");
    assert_eq!(t.host.load_stats().compiled(), 0, "Tier 1 compiles nothing");

    let read = call(&t, "books", "read", json!({ "path": "/books/7" })).await.unwrap();
    assert_eq!(read["status"], 200, "{read}");
    assert_eq!(serde_json::from_str::<Value>(read["body"].as_str().unwrap()).unwrap()["title"], "Piranesi");
    let created =
        call(&t, "books", "create", json!({ "path": "/books", "body": { "title": "Kindred" } })).await.unwrap();
    assert_eq!(created["status"], 201, "{created}");
    let id = serde_json::from_str::<Value>(created["body"].as_str().unwrap()).unwrap()["id"].clone();
    let updated = call(
        &t,
        "books",
        "update",
        json!({ "path": format!("/books/{id}"), "body": { "author": "Octavia E. Butler" } }),
    )
    .await
    .unwrap();
    assert_eq!(updated["status"], 200, "{updated}");

    // `books` allows at most `write`: DELETE (admin) is refused before
    // anything runs, for every caller.
    let error = call(&t, "books", "remove", json!({ "path": "/books/1" })).await.unwrap_err();
    assert_eq!(error.kind(), ErrorKind::AboveCeiling, "{error}");
    assert!(error.to_string().contains("needs `admin`") && error.to_string().contains("at most `write`"), "{error}");
    // `shelf` allows `admin`, but agent `reader` is granted `read` there.
    let mut reader = t.host.session(Some("reader")).unwrap();
    let execute = json!({ "subcommand": "execute", "connector": "shelf", "action": "remove", "parameters": { "path": "/books/1" } });
    let outcome = reader.call("connector", execute).await;
    assert!(outcome.is_error && outcome.text.contains("agent `reader`"), "{}", outcome.text);
    // `discover` marks what this caller may not run.
    let discovered = reader.call("connector", json!({ "subcommand": "discover", "connector": "shelf" })).await;
    let actions = discovered.value().cloned().unwrap()["actions"].clone();
    let callable =
        |name: &str| actions.as_array().unwrap().iter().find(|a| a["name"] == name).unwrap()["callable"].clone();
    assert_eq!((callable("read"), callable("create"), callable("remove")), (json!(true), json!(false), json!(false)));
    let removed = call(&t, "shelf", "remove", json!({ "path": "/books/1" })).await.unwrap();
    assert_eq!(removed["status"], 200, "{removed}");
    let gone = call(&t, "books", "read", json!({ "path": "/books/1" })).await.unwrap();
    assert_eq!(gone["status"], 404, "{gone}");

    // The server's own check: the wrong token is a 401.
    let denied = call(&t, "intruder", "read", json!({ "path": "/books" })).await.unwrap();
    assert_eq!(denied["status"], 401, "{denied}");

    // The guest cannot set the credential itself, nor read it.
    let error = call(
        &t,
        "intruder",
        "fetch",
        json!({ "url": format!("{}/books", server.url), "headers": [["Authorization", format!("Bearer {TOKEN}")]] }),
    )
    .await
    .unwrap_err();
    let (kind, message) = guest_error(&error);
    assert_eq!(kind, GuestErrorKind::Denied, "{message}");
    assert!(message.contains("sets credential and routing headers itself"), "{message}");
    for header in ["cookie", "proxy-authorization", "host"] {
        let input = json!({ "url": format!("{}/books", server.url), "headers": [[header, "x"]] });
        let error = call(&t, "books", "fetch", input).await.unwrap_err();
        assert_eq!(guest_error(&error).0, GuestErrorKind::Denied, "{header}: {error}");
    }
    assert!(call(&t, "books", "read", json!({ "path": "/books/7" })).await.is_ok(), "the host still serves");
}

/// OAuth2 client credentials: the host gets the token from the token
/// endpoint (its own traffic), reuses it until shortly before it expires,
/// then asks again; json-server accepts it. Wrong client credentials are a
/// typed `unavailable` that names the endpoint's answer and no secret.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oauth2_tokens_are_fetched_cached_and_refreshed_by_the_host() {
    let server = JsonServer::start(&library(), TOKEN);
    let endpoint = TokenEndpoint::start("quiver-client", "client-s3cret", TOKEN);
    let secrets = tempfile::tempdir().unwrap();
    let good = secret_file(&secrets, "client", "client-s3cret");
    let bad = secret_file(&secrets, "wrong", "not-the-secret");
    let section = |name: &str, query: &str, secret: &str| {
        format!(
            "[connectors.{name}]\nplugin = \"fixture-connector\"\nbase_url = \"{}\"\nauth = {{ kind = \"oauth2\", \
             token_url = \"{}{query}\", client_id = \"quiver-client\", client_secret_file = \"{secret}\", scope = \"books:read\" }}\n",
            server.url, endpoint.url
        )
    };
    let config = section("books", "", &good) + &section("brief", "?expires_in=0", &good) + &section("rogue", "", &bad);
    let t = TestHost::builder().fixture("connector").config(&config).build();
    assert_eq!(endpoint.issued(), 0, "tokens are asked for on first use, not at start-up");

    for _ in 0..3 {
        let read = call(&t, "books", "read", json!({ "path": "/books/7" })).await.unwrap();
        assert_eq!(read["status"], 200, "{read}");
    }
    assert_eq!(endpoint.issued(), 1, "a valid token is reused");
    // A token that lives no time (`expires_in: 0`) is used once: replaced
    // on every use.
    for _ in 0..2 {
        assert_eq!(call(&t, "brief", "read", json!({ "path": "/books/7" })).await.unwrap()["status"], 200);
    }
    assert_eq!(endpoint.issued(), 3);

    let error = call(&t, "rogue", "read", json!({ "path": "/books/7" })).await.unwrap_err();
    let (kind, message) = guest_error(&error);
    assert_eq!(kind, GuestErrorKind::Unavailable, "{message}");
    assert!(message.contains("refused the client credentials (status 401)"), "{message}");
    assert!(!message.contains("not-the-secret") && !message.contains(TOKEN), "{message}");
}

/// An answer larger than the instance's budget reaches the model cut to
/// size, with a note on what was left out; the same request with a
/// narrower query fits whole.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn large_answers_are_cut_to_the_budget_with_a_note() {
    let books: Vec<Value> =
        (1..=500).map(|i| json!({ "id": i, "title": format!("Volume {i}"), "shelf": i % 7 })).collect();
    let server = JsonServer::start(&json!({ "books": books }), TOKEN);
    let secrets = tempfile::tempdir().unwrap();
    let token = secret_file(&secrets, "token", TOKEN);
    let config = format!(
        "[connectors.books]\nplugin = \"fixture-connector\"\nbase_url = \"{}\"\nmax_answer_kb = 2\n\
         auth = {{ kind = \"bearer\", token_file = \"{token}\" }}",
        server.url
    );
    let t = TestHost::builder().fixture("connector").config(&config).build();
    let all = call(&t, "books", "read", json!({ "path": "/books" })).await.unwrap();
    assert!(all.to_string().len() <= 2048, "{} bytes", all.to_string().len());
    let body = all["body"].as_str().unwrap();
    assert!(
        body.starts_with("[\n  {\n    \"id\": 1,") && body.contains("more characters cut to fit the answer budget"),
        "{body}"
    );
    assert_eq!(all["status"], 200);
    let page = call(&t, "books", "read", json!({ "path": "/books?_limit=3" })).await.unwrap();
    let page: Value = serde_json::from_str(page["body"].as_str().unwrap()).unwrap();
    assert_eq!(page.as_array().unwrap().len(), 3);
}

/// Where the operator keeps a connector's instances per caller, a store
/// that sent a request is still never kept: the request, or its response
/// body, may still be running on a task of its own after the call ends.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_store_that_sent_a_request_is_never_kept() {
    let server = JsonServer::start(&json!({ "books": [{ "id": 1, "title": "One" }] }), TOKEN);
    let secrets = tempfile::tempdir().unwrap();
    let token = secret_file(&secrets, "token", TOKEN);
    let config = format!(
        "[plugins.fixture-connector]\ninstances = \"per-caller\"\n\
         [connectors.books]\nplugin = \"fixture-connector\"\nbase_url = \"{}\"\n\
         auth = {{ kind = \"bearer\", token_file = \"{token}\" }}",
        server.url
    );
    let t = TestHost::builder().fixture("connector").config(&config).build();
    for _ in 0..2 {
        let answer = call(&t, "books", "read", json!({ "path": "/books/1" })).await.unwrap();
        assert_eq!(answer["status"], 200);
    }
    let stats = t.host.load_stats();
    assert_eq!((stats.instantiated(), stats.reused()), (2, 0));
}

/// An audit file that cannot be written never fails a call: the record
/// is still kept in memory (`Host::audit`, `GET /v1/audit`), with the
/// credential redacted wherever it appears in the parameters.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unwritable_audit_file_fails_no_call() {
    let upstream = Hostile::start();
    let secrets = tempfile::tempdir().unwrap();
    let token = secret_file(&secrets, "token", TOKEN);
    // The audit "file" is a folder: every append fails.
    let config = format!(
        "[audit]\npath = \"{}\"\n[connectors.echo]\nplugin = \"fixture-connector\"\nbase_url = \"{}\"\n\
         auth = {{ kind = \"bearer\", token_file = \"{token}\" }}",
        secrets.path().display(),
        upstream.url
    );
    let t = TestHost::builder().fixture("connector").config(&config).build();
    for _ in 0..2 {
        let answer = call(&t, "echo", "read", json!({ "path": format!("/echo?leak={TOKEN}") })).await.unwrap();
        assert_eq!(answer["status"], 200, "{answer}");
    }
    let hops = call(&t, "echo", "read", json!({ "path": format!("/redirect?to={}/echo", upstream.url) })).await;
    assert_eq!(hops.unwrap()["status"], 200);
    let records = t.host.audit(10, Some("echo"));
    assert_eq!(records.len(), 3);
    // Every response's status, redirect hops included.
    let statuses: Vec<Vec<u16>> = records.iter().map(|r| r.http_statuses.clone()).collect();
    assert!(statuses.contains(&vec![302, 200]) && statuses.contains(&vec![200]), "{statuses:?}");
    let record = serde_json::to_string(&records[0]).unwrap();
    assert!(!record.contains(TOKEN) && record.contains("\"outcome\":\"ok\""), "{record}");
}

/// A missing credential refuses its connector alone, naming it and the
/// variable, and no secret value ever shows in the reason.
#[test]
fn a_missing_secret_names_its_connector_and_variable() {
    let config = r#"
[connectors.books]
plugin = "fixture-connector"
base_url = "http://127.0.0.1:9"
auth = { kind = "bearer", token_env = "QUIVER_TEST_SURELY_UNSET_BOOKS_TOKEN" }
"#;
    let error = TestHost::builder().fixture("connector").config(config).refused("[connectors.books]");
    assert!(error.contains("[connectors.books]") && error.contains("QUIVER_TEST_SURELY_UNSET_BOOKS_TOKEN"), "{error}");

    let config = r#"
[connectors.books]
plugin = "no-such-plugin"
base_url = "http://127.0.0.1:9"
"#;
    let t = TestHost::builder().fixture("connector").config(config).build();
    let catalog = t.host.catalog();
    let error = catalog.rejected().iter().map(|r| format!("{}: {}", r.origin, r.error)).collect::<Vec<_>>().join("\n");
    assert!(error.contains("no-such-plugin") && error.contains("not a connector plugin"), "{error}");
}

/// The hostile upstream: redirects elsewhere get no credential, redirects
/// outside the allow-list (any spelling of a loopback neighbour) are
/// refused, slow and silent answers time out, an endless body stops at the
/// cap; every one is a typed error and the host keeps serving.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_upstreams_get_typed_refusals() {
    let home = Hostile::start();
    let elsewhere = Hostile::start();
    let secrets = tempfile::tempdir().unwrap();
    let token = secret_file(&secrets, "token", TOKEN);
    let config = format!(
        r#"
[connectors.hop]
plugin = "fixture-connector"
base_url = "{home}"
allow_http = ["{elsewhere}"]
auth = {{ kind = "bearer", token_file = "{token}" }}
response_timeout_ms = 700
max_response_kb = 64

[connectors.by_name]
plugin = "fixture-connector"
base_url = "http://localhost:{port}"

[connectors.internal]
plugin = "fixture-connector"
base_url = "http://localhost:{port}"
private_hosts = ["localhost"]
"#,
        port = home.port,
        home = home.url,
        elsewhere = elsewhere.url
    );
    let t = TestHost::builder().fixture("connector").config(&config).build();
    let fetch = |url: String| {
        let t = &t;
        async move { call(t, "hop", "fetch", json!({ "url": url })).await }
    };
    let headers = |answer: &Value| -> Value {
        serde_json::from_str::<Value>(answer["body"].as_str().unwrap()).unwrap()["headers"].clone()
    };

    // On its own origin the request carries the credential (the echo of
    // it reaches the guest redacted)...
    let own = fetch(format!("{}/echo", home.url)).await.unwrap();
    assert_eq!(headers(&own)["authorization"], "Bearer [redacted]");
    // ...and a redirect to another allowed origin does not.
    let hopped = fetch(format!("{}/redirect?to={}/echo", home.url, elsewhere.url)).await.unwrap();
    assert_eq!(hopped["status"], 200, "{hopped}");
    assert_eq!(headers(&hopped).get("authorization"), None, "the credential followed a redirect: {hopped}");
    assert_eq!(headers(&hopped)["host"], format!("127.0.0.1:{}", elsewhere.port));

    // Redirects (and direct requests) outside the allow-list, however the
    // address is spelled, are refused before any connection.
    let port = home.port;
    for target in [
        format!("http://127.0.0.2:{port}/echo"),
        format!("http://2130706433:{port}/echo"),
        format!("http://0x7f000001:{port}/echo"),
        format!("http://[::ffff:127.0.0.1]:{port}/echo"),
        format!("http://127.0.0.1.:{port}/echo"),
        format!("http://localhost:{port}/echo"),
    ] {
        let error = fetch(format!("{}/redirect?to={target}", home.url)).await.unwrap_err();
        let (kind, message) = guest_error(&error);
        assert_eq!(kind, GuestErrorKind::Denied, "{target}: {message}");
        assert!(message.contains("allow-list"), "{target}: {message}");
        assert_eq!(guest_error(&fetch(target.clone()).await.unwrap_err()).0, GuestErrorKind::Denied, "{target}");
    }

    // A name that always means this machine (which the guard would refuse
    // when it resolves to loopback) is refused when the configuration is
    // read, with the fix, and fails alone; marked internal, it is reached.
    let catalog = t.host.catalog();
    let by_name = catalog.rejected().iter().find(|r| r.origin == "[connectors.by_name]").expect("by_name is refused");
    let reason = by_name.error.to_string();
    assert!(reason.contains("127.0.0.1") && reason.contains("private_hosts = [\"localhost\"]"), "{reason}");
    let error = call(&t, "by_name", "read", json!({ "path": "/echo" })).await.unwrap_err();
    assert_eq!(error.kind(), quiver::ErrorKind::Rejected, "{error}");
    let internal = call(&t, "internal", "read", json!({ "path": "/echo" })).await.unwrap();
    assert_eq!(headers(&internal)["host"], format!("localhost:{port}"));

    // Slow loris, silence, endless body.
    for path in ["/slow", "/silent"] {
        let started = std::time::Instant::now();
        let error = fetch(format!("{}{path}", home.url)).await.unwrap_err();
        let (kind, message) = guest_error(&error);
        assert_eq!(kind, GuestErrorKind::Unavailable, "{path}: {message}");
        assert!(message.contains("did not answer in time"), "{path}: {message}");
        assert!(started.elapsed() < std::time::Duration::from_secs(10), "{path} was not cut short");
    }
    let error = fetch(format!("{}/endless", home.url)).await.unwrap_err();
    let (kind, message) = guest_error(&error);
    assert_eq!(kind, GuestErrorKind::Failed, "{message}");
    assert!(message.contains("larger than this connector may read"), "{message}");

    assert_eq!(fetch(format!("{}/echo", home.url)).await.unwrap()["status"], 200, "the host still serves");
}
