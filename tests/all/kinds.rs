//! The connector and database-adapter worlds, end to end.

use quiver::GuestErrorKind;
use quiver_tests::{TestHost, http_server};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connector_reaches_only_allowed_hosts() {
    let allowed = http_server();
    let other = http_server();
    let t = TestHost::builder()
        .fixture("connector")
        .config(&format!("[plugins.fixture-connector]\nallow_http = [\"{allowed}\"]"))
        .build();
    let out = t
        .host
        .call_json("fixture-connector", "fetch", &serde_json::json!({ "url": format!("{allowed}/hello?x=1") }))
        .await
        .unwrap();
    assert_eq!(out["status"], 200);
    assert_eq!(out["body"], "you sent: GET /hello?x=1 HTTP/1.1");

    for url in [format!("{other}/secret"), "https://example.com/".to_owned()] {
        let error =
            t.host.call_json("fixture-connector", "fetch", &serde_json::json!({ "url": url })).await.unwrap_err();
        assert!(matches!(error, quiver::Error::Guest { kind: GuestErrorKind::Denied, .. }), "{error}");
    }
}

#[tokio::test]
async fn a_connector_with_no_allow_list_reaches_nothing() {
    let server = http_server();
    let t = TestHost::builder().fixture("connector").build();
    let error =
        t.host.call_json("fixture-connector", "fetch", &serde_json::json!({ "url": server })).await.unwrap_err();
    assert!(matches!(error, quiver::Error::Guest { kind: GuestErrorKind::Denied, .. }), "{error}");
}

#[tokio::test]
async fn a_database_adapter_describes_its_tables() {
    let t = TestHost::builder().fixture("database").build();
    let manifest = t.host.describe("shop").await.unwrap();
    let actions: Vec<&str> = manifest.actions.iter().map(|a| a.name.as_str()).collect();
    assert_eq!(actions, ["list_tables", "describe_table", "query"]);

    let tables = t.host.call("shop", "list_tables", "{}").await.unwrap();
    assert_eq!(tables[0]["name"], "customers");
    assert_eq!(tables[1]["column_count"], 3);
    let schema = t.host.call("shop", "describe_table", r#"{"table": "orders"}"#).await.unwrap();
    assert_eq!(schema["columns"][2]["name"], "total");
    let error = t.host.call("shop", "describe_table", r#"{"table": "nope"}"#).await.unwrap_err();
    assert!(matches!(error, quiver::Error::Guest { kind: GuestErrorKind::NotFound, .. }), "{error}");
    // The host's sql capability has no backend yet: a typed error, not a trap.
    let error = t.host.call("shop", "query", r#"{"sql": "select * from orders"}"#).await.unwrap_err();
    assert!(matches!(error, quiver::Error::Guest { kind: GuestErrorKind::Unavailable, .. }), "{error}");
}
