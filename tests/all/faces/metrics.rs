//! `GET /metrics` as a real Prometheus reads it: it scrapes the host every
//! second while an MCP client calls tools, and PromQL through its HTTP API
//! gives back the call count and a latency quantile. Also what guards the
//! route: the HTTP face's token, and loopback for the stdio side server.

use std::time::Duration;

use axum::http::{StatusCode, header};
use quiver::faces::http::{HttpOptions, router, serve_metrics};
use quiver_tests::TestHost;
use quiver_tests::prometheus::{Prometheus, get as http_get};
use rmcp::model::CallToolRequestParams;
use serde_json::json;
use tokio_util::sync::CancellationToken;

use super::mcp::connect;
use super::rest::get;

/// How long Prometheus may take to scrape what was done (it scrapes every
/// second).
const SCRAPED: Duration = Duration::from_secs(60);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prometheus_reads_calls_and_latency_from_the_metrics_route() {
    let t = TestHost::builder().bundled().config("[metrics]\ntier1_tokens = true").build();
    let stop = CancellationToken::new();
    let (bound, at) = tokio::sync::oneshot::channel();
    let host = t.host.clone();
    let served = tokio::spawn({
        let stop = stop.clone();
        let bound = move |addr| {
            let _ = bound.send(addr);
        };
        async move { serve_metrics(&host, "127.0.0.1:0".parse().unwrap(), None, stop, bound).await }
    });
    let addr = at.await.expect("the metrics server listens");
    let prometheus = tokio::task::spawn_blocking(move || Prometheus::scraping(addr)).await.unwrap();

    let (client, _) = connect(&t.host).await;
    client.list_all_tools().await.unwrap();
    for i in 0..20 {
        let arguments = json!({"expression": format!("{i} * 3")}).as_object().cloned().unwrap();
        let result = client.call_tool(CallToolRequestParams::new("calc__evaluate").with_arguments(arguments)).await;
        assert_eq!(result.unwrap().is_error, Some(false));
    }
    let wrong = json!({"expression": "1 +"}).as_object().cloned().unwrap();
    let failed = client.call_tool(CallToolRequestParams::new("calc__evaluate").with_arguments(wrong)).await.unwrap();
    assert_eq!(failed.is_error, Some(true));
    // Names that are no tool never become labels (a client could take
    // every label slot with them).
    for i in 0..3 {
        let made_up = client.call_tool(CallToolRequestParams::new(format!("made_up_{i}"))).await;
        assert!(made_up.is_err());
    }
    client.cancel().await.unwrap();

    let text = tokio::task::spawn_blocking(move || http_get(addr, "/metrics")).await.unwrap();
    assert!(text.contains("quiver_tier1_tokens "), "{text}");
    assert!(!text.contains("made_up"), "{text}");
    let unknown = r#"mcp_server_operation_duration_seconds_count{mcp_method_name="tools/call",gen_ai_tool_name="_unknown",error_type="-32602"} 3"#;
    assert!(text.lines().any(|l| l == unknown), "{text}");
    let answers = tokio::task::spawn_blocking(move || {
        let ok = r#"sum(mcp_server_operation_duration_seconds_count{mcp_method_name="tools/call",gen_ai_tool_name="calc__evaluate",error_type=""})"#;
        let count = prometheus.wait_for(ok, SCRAPED, |n| n == 20.0);
        let failed = r#"sum(mcp_server_operation_duration_seconds_count{gen_ai_tool_name="calc__evaluate",error_type="tool_error"})"#;
        let errors = prometheus.wait_for(failed, SCRAPED, |n| n == 1.0);
        let listed = r#"sum(mcp_server_operation_duration_seconds_count{mcp_method_name="tools/list"})"#;
        let lists = prometheus.wait_for(listed, SCRAPED, |n| n >= 1.0);
        let calls = prometheus.wait_for(r#"sum(quiver_calls_total{resource="calc"})"#, SCRAPED, |n| n == 21.0);
        let median = prometheus.value(
            r#"histogram_quantile(0.5, sum by (le) (mcp_server_operation_duration_seconds_bucket{gen_ai_tool_name="calc__evaluate"}))"#,
        );
        (count, errors, lists, calls, median)
    })
    .await
    .unwrap();
    let (count, errors, lists, calls, median) = answers;
    assert_eq!(count, Ok(20.0), "the calls as Prometheus counted them");
    assert_eq!(errors, Ok(1.0), "the tool error");
    assert!(lists.is_ok(), "tools/list: {lists:?}");
    assert_eq!(calls, Ok(21.0), "calls by resource, whatever the outcome");
    let median = median.expect("a median");
    assert!(median > 0.0 && median < 10.0, "median {median} s");
    stop.cancel();
    served.await.unwrap().unwrap();
}

#[tokio::test]
async fn metrics_are_guarded_as_the_face_is() {
    let t = TestHost::builder().bundled().build();
    let options = HttpOptions { token: Some("s3cret".into()), ..Default::default() };
    let guarded = router(&t.host, &options, CancellationToken::new()).unwrap();
    let (status, _, _) = get(&guarded, "/metrics", &[]).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    let (status, headers, body) = get(&guarded, "/metrics", &[("authorization", "Bearer s3cret")]).await;
    assert_eq!(status, StatusCode::OK);
    let kind = headers.get(header::CONTENT_TYPE).unwrap().to_str().unwrap();
    assert!(kind.starts_with("application/openmetrics-text"), "{kind}");
    let text = String::from_utf8_lossy(&body);
    assert!(text.ends_with("# EOF\n"));
    // Counting Tier-1 tokens loads a tokenizer table: only when asked for.
    assert!(!text.contains("quiver_tier1_tokens"), "{text}");

    // Beside stdio: off loopback only with a token (refused before binding).
    let open = serve_metrics(&t.host, "0.0.0.0:0".parse().unwrap(), None, CancellationToken::new(), |_| {});
    let refused = open.await.unwrap_err().to_string();
    assert!(refused.contains("needs a bearer token"), "{refused}");
}

/// What the sandbox, the router and the faces count, as a scrape shows
/// it: the instances made, a connector's requests sent and refused, a
/// database's statements and refusals, guest calls ended by a timeout and
/// by the memory cap, `initialize` and `ping`, REST latency by route, and
/// the prompt footprint beside the full cost of what is known unloaded.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_calls_did_through_each_capability_is_counted() {
    let allowed = quiver_tests::http_server();
    let other = quiver_tests::http_server();
    let config = format!(
        "[metrics]\ntier1_tokens = true\n[plugins.fixture-connector]\nallow_http = [\"{allowed}\"]\n\
         [plugins.misbehave]\ntimeout_ms = 300\nmemory_mb = 16"
    );
    let t = TestHost::builder().bundled().demo().fixture("connector").fixture("misbehave").config(&config).build();
    let host = &t.host;
    let before = host.metrics().encode();
    let footprint = |text: &str, name: &str| -> f64 {
        let line = text.lines().find(|l| l.starts_with(&format!("{name} "))).unwrap_or_else(|| panic!("{text}"));
        line.rsplit(' ').next().unwrap().parse().unwrap()
    };
    // Bundled plugins carry their manifests: their full cost is known
    // unloaded, and Tier 1 is a fraction of it.
    let (tier1, full) = (footprint(&before, "quiver_tier1_tokens"), footprint(&before, "quiver_full_tokens"));
    assert!(tier1 > 0.0 && full > 2.0 * tier1, "Tier 1 {tier1}, full {full}");
    assert_eq!(host.load_stats().compiled(), 0, "a scrape compiles nothing");

    let fetch = |url: String| async move { host.call_json("fixture-connector", "fetch", &json!({ "url": url })).await };
    fetch(format!("{allowed}/a")).await.unwrap();
    fetch(format!("{other}/b")).await.unwrap_err();
    host.call("chinook", "query", r#"{"sql": "SELECT count(*) FROM artist"}"#).await.unwrap();
    host.call("chinook", "query", r#"{"sql": "DELETE FROM artist"}"#).await.unwrap_err();
    host.call("misbehave", "spin", "{}").await.unwrap_err();
    host.call("misbehave", "alloc", r#"{"n": 64}"#).await.unwrap_err();

    let (client, _) = connect(host).await;
    let ping = rmcp::model::ClientRequest::PingRequest(Default::default());
    client.send_request(ping).await.unwrap();
    client.cancel().await.unwrap();
    let app = router(host, &HttpOptions::default(), CancellationToken::new()).unwrap();
    assert_eq!(get(&app, "/v1/tools", &[]).await.0, StatusCode::OK);

    let text = host.metrics().encode();
    let has = |line: &str| assert!(text.lines().any(|l| l == line), "no `{line}` in\n{text}");
    has(r#"quiver_egress_requests_total{resource="fixture-connector"} 1"#);
    has(r#"quiver_egress_refusals_total{resource="fixture-connector"} 1"#);
    has(r#"quiver_sql_statements_total{resource="chinook"} 2"#);
    has(r#"quiver_sql_refusals_total{resource="chinook"} 1"#);
    has(r#"quiver_guest_traps_total{resource="misbehave",kind="timeout"} 1"#);
    has(r#"quiver_guest_traps_total{resource="misbehave",kind="memory"} 1"#);
    has("quiver_instantiations_total 6");
    has(
        r#"mcp_server_operation_duration_seconds_count{mcp_method_name="initialize",gen_ai_tool_name="",error_type=""} 1"#,
    );
    has(r#"mcp_server_operation_duration_seconds_count{mcp_method_name="ping",gen_ai_tool_name="",error_type=""} 1"#);
    has(
        r#"http_server_request_duration_seconds_count{http_request_method="GET",http_route="/v1/tools",http_response_status_code="200"} 1"#,
    );
    // The plugins loaded by the calls made more schemas known.
    assert!(footprint(&text, "quiver_full_tokens") >= full, "{text}");
}
