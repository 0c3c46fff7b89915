//! Upstream MCP servers that attack the host on purpose (`unruly_mcp.py`):
//! a tool list that never ends, tool names and descriptions that try to
//! write into the system prompt, answers of megabytes. Each is contained:
//! a typed error at a named limit, a tool refused and reported, an answer
//! cut to its budget. (Faults of servers that are merely broken are in
//! `upstream.rs`.)

use quiver::upstream::MAX_LIST_PAGES;
use quiver::{Error, UpstreamFault};
use quiver_tests::TestHost;
use quiver_tests::mcp_servers::unruly_section;
use serde_json::{Value, json};

fn host(sections: &[String]) -> TestHost {
    TestHost::builder().config(&sections.join("\n")).build()
}

fn fault(result: quiver::Result<Value>) -> (UpstreamFault, String) {
    match result {
        Err(Error::Upstream { fault, message, .. }) => (fault, message),
        other => panic!("not an upstream fault: {other:?}"),
    }
}

fn starts(t: &TestHost, server: &str) -> u64 {
    t.host.upstream_status().into_iter().find(|s| s.name == server).expect("a configured server").starts
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
