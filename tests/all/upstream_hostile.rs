//! Upstream MCP servers that attack the host on purpose (`unruly_mcp.py`):
//! a tool list that never ends, tool names and descriptions that try to
//! write into the system prompt, answers of megabytes. Each is contained:
//! a typed error at a named limit, a tool refused and reported, an answer
//! cut to its budget. (Faults of servers that are merely broken are in
//! `upstream.rs`.)

use axum::body::Body;
use axum::http::{Request, StatusCode};
use http_body_util::BodyExt;
use quiver::UpstreamFault;
use quiver::faces::http::{HttpOptions, router};
use quiver::upstream::MAX_LIST_PAGES;
use quiver_tests::TestHost;
use quiver_tests::builds::wait_for;
use quiver_tests::mcp_servers::{self, fault, unruly_section};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;
use tower::ServiceExt as _;

fn host(sections: &[String]) -> TestHost {
    TestHost::builder().config(&sections.join("\n")).build()
}

fn starts(t: &TestHost, server: &str) -> u64 {
    mcp_servers::starts(&t.host, server)
}

/// `[mcp_servers.NAME]` in `mode`, logging what it is asked to `log`.
fn logged(name: &str, mode: &str, log: &tempfile::NamedTempFile, extra: &str) -> String {
    let env = format!("env = {{ UNRULY_LOG = {:?} }}", log.path().display().to_string());
    unruly_section(name, mode, &format!("{env}\n{extra}"))
}

/// How many `tools/list` pages the server behind `log` was asked for.
fn pages_asked(log: &tempfile::NamedTempFile) -> u64 {
    std::fs::read_to_string(log.path()).unwrap_or_default().lines().filter(|l| l.starts_with("list ")).count() as u64
}

#[tokio::test]
async fn a_tool_list_that_never_ends_stops_at_its_page_and_byte_caps() {
    let log = || tempfile::NamedTempFile::new().unwrap();
    let (pages, big, same) = (log(), log(), log());
    // The timeouts are long: the caps, not the clock, must end each list.
    let t = host(&[
        logged("pages", "paginate", &pages, "timeout = 120"),
        logged("big", "paginate-big", &big, "timeout = 120"),
        logged("same", "same-cursor", &same, "timeout = 120"),
    ]);
    let empty = json!({});
    let call = |server: &'static str| t.host.call_json(server, "anything", &empty);

    let (kind, message) = fault(call("pages").await);
    assert_eq!(kind, UpstreamFault::Protocol, "{message}");
    assert!(message.contains(&format!("over {MAX_LIST_PAGES} pages")), "the limit is named: {message}");
    let asked = pages_asked(&pages);
    assert!(asked <= MAX_LIST_PAGES as u64 * starts(&t, "pages"), "{asked} pages asked for");

    let (kind, message) = fault(call("big").await);
    assert_eq!(kind, UpstreamFault::Protocol, "{message}");
    assert!(message.contains("over the limit of 4194304"), "the byte cap counts every page: {message}");
    // 1 MiB a page: the running total passes 4 MiB on the fifth page.
    let asked = pages_asked(&big);
    assert!(asked <= 5 * starts(&t, "big"), "{asked} pages of 1 MiB asked for");

    let (kind, message) = fault(call("same").await);
    assert_eq!(kind, UpstreamFault::Protocol, "{message}");
    assert!(message.contains("the-only-cursor") && message.contains("again"), "{message}");
    let asked = pages_asked(&same);
    assert!(asked <= 2 * starts(&t, "same"), "a repeated cursor is not followed: {asked} pages");
}

/// Whether `c` may not appear raw in text shown to a model (`\n` and `\t`
/// may, where lines are allowed).
fn unsafe_in(c: char, lines: bool) -> bool {
    match c {
        '\n' | '\t' => !lines,
        '\u{061c}' | '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' => true,
        '\u{2028}' | '\u{2029}' => true,
        c => c.is_control(),
    }
}

/// `text`, a text shown to a model as lines, carries no raw control
/// character and no line the hostile server forged.
fn assert_clean(what: &str, text: &str) {
    assert!(!text.chars().any(|c| unsafe_in(c, true)), "{what} has a raw control character: {text:?}");
    for line in text.lines() {
        let line = line.trim_start();
        assert!(!line.starts_with("## System") && !line.starts_with("- forged"), "{what} has a forged line: {text}");
    }
}

/// Every key in `value` is clean on one line, and every string too (as
/// lines, if `lines`).
fn assert_clean_json(what: &str, value: &Value, lines: bool) {
    match value {
        Value::String(text) => assert!(!text.chars().any(|c| unsafe_in(c, lines)), "{what}: {text:?}"),
        Value::Array(items) => items.iter().for_each(|v| assert_clean_json(what, v, lines)),
        Value::Object(map) => map.iter().for_each(|(k, v)| {
            assert!(!k.chars().any(|c| unsafe_in(c, false)), "{what}: key {k:?}");
            assert_clean_json(what, v, lines);
        }),
        _ => {}
    }
}

#[tokio::test]
async fn hostile_tool_names_and_descriptions_never_reach_a_model_raw() {
    let t = host(&[unruly_section("hostile", "hostile", "")]);
    let mut session = t.host.session(None).unwrap();
    let found = session.call("mcp", json!({"subcommand": "discover", "server": "hostile"})).await;
    assert!(!found.is_error, "{}", found.text);
    wait_for(&t.host, |c| c.mcp_server("hostile").is_some_and(|s| !s.tools.is_empty())).await;

    // The two names that cannot be shown are left out; `.` and `/` are
    // cleaned as always (the model-facing name), kept on the server's side.
    let discovered = found.value().cloned().expect("the tools");
    let names: Vec<&str> = discovered.as_array().unwrap().iter().filter_map(|t| t["name"].as_str()).collect();
    assert_eq!(names, ["files/read.v2", "ok"], "{discovered}");
    assert_clean_json("discover", &discovered, true);
    assert!(found.text.contains(r"\u{1b}[31m"), "escaped, not dropped: {}", found.text);
    let catalog = t.host.catalog();
    assert_eq!(catalog.model_name("hostile", "files/read.v2"), Some("hostile__files_read_v2"));

    let prompt = session.system_prompt();
    assert_clean("Tier 1", &prompt);
    assert!(prompt.contains("(2 tools: files/read.v2, ok)"), "{prompt}");
    let listed = session.listed_tools().await;
    let mcp = listed.tools.iter().find(|d| d.name == "mcp").expect("the mcp meta-tool");
    assert_clean("the mcp tool's description", &mcp.description);
    assert_clean("the instructions", &session.instructions());

    // Its JSON-RPC error and its title and descriptions, escaped.
    let refused = session.call("mcp", json!({"subcommand": "call", "server": "hostile", "tool": "ok"})).await;
    assert!(refused.is_error, "{}", refused.text);
    assert!(!refused.text.chars().any(|c| unsafe_in(c, false)), "the error text: {:?}", refused.text);
    let result = serde_json::to_value(refused.upstream().unwrap()).unwrap();
    assert_clean_json("the upstream result", &result, false);
    let tool = catalog.mcp_server("hostile").unwrap().tool("files/read.v2").unwrap().clone();
    // Its own description keeps its lines (the model reads it as the
    // tool's description, never inside Tier 1), escaped.
    assert!(!tool.description.chars().any(|c| unsafe_in(c, true)), "{:?}", tool.description);
    assert!(!tool.title.as_deref().unwrap_or("").chars().any(|c| unsafe_in(c, false)), "{:?}", tool.title);
    assert_clean_json("its schema", &tool.input_schema, true);

    // Each refused name is reported, escaped, where an operator looks.
    let status = serde_json::to_value(t.host.status()).unwrap();
    assert_clean_json("/v1/status", &status, false);
    let reasons: Vec<String> = status["rejected"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["origin"].as_str().unwrap().contains("[mcp_servers.hostile]"))
        .map(|r| r["reason"].as_str().unwrap().to_owned())
        .collect();
    assert!(reasons.iter().any(|r| r.contains("U+001B") && r.contains("left out")), "{reasons:?}");
    assert!(reasons.iter().any(|r| r.contains("500 characters")), "{reasons:?}");
}

#[tokio::test]
async fn a_huge_upstream_answer_is_cut_to_its_budget_and_rest_sends_it_once() {
    let t = host(&[unruly_section("big", "big-answer", "max_answer_kb = 32")]);
    let answer = t.host.call_json("big", "flood", &json!({})).await.unwrap();
    let size = answer.to_string().len();
    assert!(size <= 32 << 10, "the answer is {size} bytes");
    // Still a valid result: every block is an MCP content block.
    serde_json::from_value::<rmcp::model::CallToolResult>(answer.clone()).expect("a CallToolResult");
    let content = answer["content"].as_array().unwrap();
    let texts: Vec<&str> = content.iter().filter_map(|b| b["text"].as_str()).collect();
    assert!(
        texts.iter().any(|t| t.starts_with("the flood begins yyy") && t.contains("more characters cut")),
        "{texts:?}"
    );
    assert!(texts.iter().any(|t| t.contains("image/png") && t.contains("left out")), "{texts:?}");
    let images: Vec<&Value> = content.iter().filter(|b| b["type"] == "image").collect();
    assert_eq!(images.len(), 1, "the 2 MB image is left out, the tiny one kept whole");
    assert_eq!(images[0]["data"], "dGlueSBpbWFnZQ==");
    let items = answer["structuredContent"]["items"].as_array().unwrap();
    assert!(items.last().unwrap().as_str().unwrap().contains("more items left out"), "{:?}", items.last());

    // REST: the text once, beside what it cannot carry.
    wait_for(&t.host, |c| c.tool("big__flood").is_some()).await;
    let app = router(&t.host, &HttpOptions::default(), CancellationToken::new()).unwrap();
    let request =
        Request::post("/v1/tools/big__flood/call").header("host", "localhost").body(Body::from("{}")).unwrap();
    let response = app.oneshot(request).await.unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let body = response.into_body().collect().await.unwrap().to_bytes();
    let text = String::from_utf8_lossy(&body);
    assert_eq!(text.matches("the flood begins").count(), 1, "{} bytes", body.len());
    assert_eq!(text.matches("more items left out").count(), 1, "structuredContent once");
    let answer: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(answer["upstream"]["content"].as_array().map(Vec::len), Some(1), "the image: {answer}");
    assert!(body.len() <= 2 * (32 << 10), "{} bytes", body.len());
}
