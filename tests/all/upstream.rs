//! Live upstream MCP servers behind the `mcp` meta-tool, against servers
//! nobody here wrote: the MCP project's reference servers (everything,
//! filesystem, memory from npm; time from PyPI), over stdio and streamable
//! HTTP; and `unruly_mcp.py` for the faults a host must contain.
//!
//! Readiness is awaited on the catalog (`wait_for`) or on the call itself;
//! the only timed waits are the servers' configured timeouts.

use serde_json::{Value, json};

use quiver::faces::mcp::McpServer;
use quiver::{ErrorKind, UpstreamFault};
use quiver_tests::TestHost;
use quiver_tests::builds::wait_for;
use quiver_tests::mcp_servers::{self, EverythingHttp, alive, fault, node_section, time_section, unruly_section};

fn host(sections: &[String], cache: Option<&std::path::Path>) -> TestHost {
    let mut builder = TestHost::builder().config(&sections.join("\n"));
    if let Some(cache) = cache {
        builder = builder.cache_dir(cache);
    }
    builder.build()
}

async fn mcp(t: &TestHost, args: Value) -> quiver::CallOutcome {
    let mut session = t.host.session(None).unwrap();
    session.call("mcp", args).await
}

fn starts(t: &TestHost, server: &str) -> u64 {
    mcp_servers::starts(&t.host, server)
}

fn pid(t: &TestHost, server: &str) -> Option<u32> {
    t.host.upstream_status().into_iter().find(|s| s.name == server).and_then(|s| s.pid)
}

fn tier1(t: &TestHost) -> String {
    t.host.session(None).unwrap().system_prompt()
}

#[tokio::test]
async fn tier_one_comes_from_the_cache_and_nothing_is_spawned() {
    let cache = tempfile::tempdir().unwrap();
    let files = tempfile::tempdir().unwrap();
    let sections = [
        node_section("everything", "everything", &["stdio"], ""),
        node_section("files", "filesystem", &[&files.path().display().to_string()], ""),
        node_section("memory", "memory", &[], "description = \"A knowledge graph the agent keeps\""),
        time_section("time"),
    ];
    {
        // First run: no cache, so each server is listed in the background;
        // Tier 1 says so until it is.
        let t = host(&sections, Some(cache.path()));
        wait_for(&t.host, |c| c.mcp_servers().all(|s| !s.tools.is_empty())).await;
        let text = tier1(&t);
        assert!(text.contains("- memory: A knowledge graph the agent keeps (9 tools: create_entities"), "{text}");
        assert!(text.contains("- time (2 tools: get_current_time, convert_time)"), "{text}");
    }
    let t = host(&sections, Some(cache.path()));
    let text = tier1(&t);
    assert!(text.contains("- everything: Everything Server – Server Instructions ("), "{text}");
    assert!(text.contains("- files (14 tools: read_file"), "{text}");
    assert!(!text.contains("not listed yet"), "{text}");
    for status in t.host.upstream_status() {
        assert_eq!((status.starts, status.pid), (0, None), "{} was started for Tier 1", status.name);
    }
    // Discovery, exports and token counts read the cached lists too.
    let found = mcp(&t, json!({"subcommand": "discover", "server": "time"})).await;
    assert!(found.text.contains("convert_time"), "{}", found.text);
    assert!(t.host.open_session(None).unwrap().definitions().await.iter().any(|d| d.name == "memory__read_graph"));
    t.host.token_report(None).await.unwrap();
    assert!(t.host.upstream_status().iter().all(|s| s.starts == 0), "{:?}", t.host.upstream_status());
    let status = serde_json::to_value(t.host.status()).unwrap();
    assert_eq!(status["mcp_servers"][0], json!({"name": "everything", "live": true, "tools": 13, "state": "listed"}));

    // A new entry (another argument) is another cache: listed again.
    let changed = [node_section("files", "filesystem", &[&cache.path().display().to_string()], "")];
    let t = host(&changed, Some(cache.path()));
    assert!(tier1(&t).contains("- files (tools not listed yet)") || starts(&t, "files") == 1);
}

#[tokio::test]
async fn discover_and_call_the_reference_servers_over_stdio() {
    let files = tempfile::tempdir().unwrap();
    let memory = tempfile::tempdir().unwrap();
    let memory_file = format!("MEMORY_FILE_PATH = {:?}", memory.path().join("graph.jsonl").display().to_string());
    let t = host(
        &[
            node_section("everything", "everything", &["stdio"], ""),
            node_section("files", "filesystem", &[&files.path().display().to_string()], ""),
            node_section("memory", "memory", &[], &format!("env = {{ {memory_file} }}")),
            time_section("time"),
        ],
        None,
    );
    // A server never listed: `discover` connects and lists it.
    let found = mcp(&t, json!({"subcommand": "discover", "server": "everything", "tool": "get-sum"})).await;
    assert!(!found.is_error, "{}", found.text);
    let schema = &found.value().unwrap()[0]["input_schema"];
    assert_eq!(schema["properties"]["a"]["type"], "number", "{schema}");

    let unknown = mcp(&t, json!({"subcommand": "call", "server": "everything", "tool": "no-such-tool"})).await;
    assert!(unknown.is_error && unknown.text.contains("get-sum"), "the known tools are listed: {}", unknown.text);

    let sum = mcp(
        &t,
        json!({"subcommand": "call", "server": "everything", "tool": "get-sum", "parameters": {"a": 2, "b": 40}}),
    )
    .await;
    assert!(!sum.is_error && sum.text.contains("42"), "{}", sum.text);

    // A `search_tools` hit is callable by its name, and goes upstream.
    wait_for(&t.host, |c| c.mcp_server("everything").is_some_and(|s| !s.tools.is_empty())).await;
    let mut session = t.host.session(None).unwrap();
    let hits = session.call("search_tools", json!({"query": "sum of two numbers", "limit": 3})).await;
    assert!(hits.text.contains("everything__get-sum"), "{}", hits.text);
    let summed = session.call("everything__get-sum", json!({"a": 1, "b": 2})).await;
    assert!(!summed.is_error && summed.text.contains('3'), "{}", summed.text);

    let written = mcp(
        &t,
        json!({"subcommand": "call", "server": "files", "tool": "write_file",
               "parameters": {"path": files.path().join("note.txt"), "content": "quiver was here"}}),
    )
    .await;
    assert!(!written.is_error, "{}", written.text);
    assert_eq!(std::fs::read_to_string(files.path().join("note.txt")).unwrap(), "quiver was here");

    let entities = json!({"entities": [{"name": "Quiver", "entityType": "project", "observations": ["hosts tools"]}]});
    let created =
        mcp(&t, json!({"subcommand": "call", "server": "memory", "tool": "create_entities", "parameters": entities}))
            .await;
    assert!(!created.is_error, "{}", created.text);
    let graph = mcp(&t, json!({"subcommand": "call", "server": "memory", "tool": "read_graph"})).await;
    assert!(graph.text.contains("hosts tools"), "{}", graph.text);

    let now = mcp(
        &t,
        json!({"subcommand": "call", "server": "time", "tool": "get_current_time", "parameters": {"timezone": "Asia/Tokyo"}}),
    )
    .await;
    assert!(!now.is_error, "{}", now.text);
    assert_eq!(now.value().unwrap()["timezone"], "Asia/Tokyo", "structuredContent passes through");
    let meta = &serde_json::to_value(now.upstream().unwrap()).unwrap()["_meta"];
    assert!(
        meta.get("io.modelcontextprotocol/serverInfo").is_none(),
        "the upstream's protocol _meta stays behind: {meta}"
    );

    // The upstream's own tool error is an `isError` result with its message.
    let outside = mcp(
        &t,
        json!({"subcommand": "call", "server": "files", "tool": "read_text_file", "parameters": {"path": "/etc/hostname"}}),
    )
    .await;
    assert!(outside.is_error && outside.error.is_none(), "{outside:?}");
    assert!(outside.text.contains("Access denied"), "{}", outside.text);
    assert_eq!(outside.upstream().unwrap().is_error, Some(true));
}

#[tokio::test]
async fn images_and_resource_links_pass_through_every_face() {
    let t = host(&[node_section("everything", "everything", &["stdio"], "")], None);
    let outcome = mcp(&t, json!({"subcommand": "call", "server": "everything", "tool": "get-tiny-image"})).await;
    let content = serde_json::to_value(&outcome.upstream().expect("the upstream result").content).unwrap();
    let image = content.as_array().unwrap().iter().find(|b| b["type"] == "image").expect("an image block");
    assert_eq!(image["mimeType"], "image/png");
    assert!(image["data"].as_str().unwrap().len() > 50);

    // Quiver's own MCP face returns the blocks as the upstream sent them.
    let server = McpServer::new(t.host.clone(), None).unwrap();
    let args =
        json!({"subcommand": "call", "server": "everything", "tool": "get-resource-links", "parameters": {"count": 2}});
    let result = server.call("mcp", args).await.unwrap();
    let shown = serde_json::to_value(&result).unwrap();
    let kinds: Vec<&str> = shown["content"].as_array().unwrap().iter().filter_map(|b| b["type"].as_str()).collect();
    assert_eq!(kinds.iter().filter(|k| **k == "resource_link").count(), 2, "{shown}");
}

#[tokio::test]
async fn legacy_mode_and_access_grants() {
    let t = host(
        &[
            "[disclosure]\nmcp_tool_mode = \"legacy\"\n[agents.reader]\naccess = { everything = \"read\" }".to_owned(),
            node_section("everything", "everything", &["stdio"], ""),
        ],
        None,
    );
    wait_for(&t.host, |c| c.mcp_server("everything").is_some_and(|s| !s.tools.is_empty())).await;
    let mut session = t.host.session(None).unwrap();
    let echoed = session.call("everything__echo", json!({"message": "direct"})).await;
    assert_eq!(echoed.text, "Echo: direct", "{echoed:?}");

    // `toggle-simulated-logging` declares no read-only hint: it is `write`,
    // above the reader's grant, refused before the server sees it.
    let mut reader = t.host.session(Some("reader")).unwrap();
    let refused = reader.call("everything__toggle-simulated-logging", json!({})).await;
    assert_eq!(refused.error.map(|e| e.kind()), Some(ErrorKind::Denied), "{}", refused.text);
    let allowed = reader.call("everything__echo", json!({"message": "read"})).await;
    assert!(!allowed.is_error, "{}", allowed.text);
}

#[tokio::test]
async fn streamable_http_servers_are_called_too() {
    let server = EverythingHttp::start();
    let t = host(&[format!("[mcp_servers.remote]\nurl = {:?}\n", server.url)], None);
    let echoed = t.host.call_json("remote", "echo", &json!({"message": "over http"})).await.unwrap();
    assert_eq!(echoed["content"][0]["text"], "Echo: over http");
    assert_eq!(pid(&t, "remote"), None);
}

#[tokio::test]
async fn list_changed_upstream_reaches_the_catalog() {
    let t = host(&[unruly_section("unruly", "normal", "")], None);
    wait_for(&t.host, |c| c.mcp_server("unruly").is_some_and(|s| s.tools.len() == 4)).await;
    let version = t.host.catalog().version();
    t.host.call_json("unruly", "grow", &json!({})).await.unwrap();
    wait_for(&t.host, |c| c.mcp_server("unruly").is_some_and(|s| s.tools.iter().any(|t| t.name == "grown_4"))).await;
    assert!(t.host.catalog().version() > version);
    assert!(tier1(&t).contains("- unruly: Misbehaves on purpose. (5 tools"), "{}", tier1(&t));
}

#[tokio::test]
async fn idle_servers_are_stopped_and_started_again() {
    let t = host(&[unruly_section("unruly", "normal", "idle_timeout = 0.3")], None);
    t.host.call_json("unruly", "slow", &json!({"seconds": 0})).await.unwrap();
    let first = pid(&t, "unruly").expect("running");
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(30);
    while alive(first) || pid(&t, "unruly").is_some() {
        assert!(tokio::time::Instant::now() < deadline, "the idle server was not stopped");
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    t.host.call_json("unruly", "slow", &json!({"seconds": 0})).await.unwrap();
    assert_eq!(starts(&t, "unruly"), 2);
    assert_ne!(pid(&t, "unruly"), Some(first));
}

#[tokio::test]
async fn a_crash_mid_call_is_a_typed_error_and_the_next_call_restarts_it() {
    let log = tempfile::NamedTempFile::new().unwrap();
    let env = format!("env = {{ UNRULY_LOG = {:?} }}", log.path().display().to_string());
    let t = host(&[unruly_section("unruly", "normal", &env), time_section("time")], None);
    let (kind, message) = fault(t.host.call_json("unruly", "crash", &json!({})).await);
    assert_eq!(kind, UpstreamFault::Crashed, "{message}");
    assert!(message.contains("crashing on purpose"), "its last stderr line: {message}");
    let answer = t.host.call_json("unruly", "slow", &json!({"seconds": 0})).await.unwrap();
    assert_eq!(answer["content"][0]["text"], "done");
    assert_eq!(starts(&t, "unruly"), 2);
    // Its era was learnt at the first handshake: the restart asks in it.
    let handshakes: Vec<String> = std::fs::read_to_string(log.path())
        .unwrap()
        .lines()
        .filter(|l| l.starts_with("handshake"))
        .map(str::to_owned)
        .collect();
    assert_eq!(handshakes, ["handshake server/discover", "handshake initialize", "handshake initialize"]);

    // A process killed from outside in the middle of a call of a tool it
    // calls read-only: the call is made again on its restart.
    let everything = host(&[node_section("everything", "everything", &["stdio"], "")], None);
    everything.host.call_json("everything", "echo", &json!({"message": "up"})).await.unwrap();
    let victim = pid(&everything, "everything").unwrap();
    let long = json!({"duration": 2, "steps": 2});
    let call = everything.host.call_json("everything", "trigger-long-running-operation", &long);
    let kill = async {
        tokio::time::sleep(std::time::Duration::from_millis(300)).await;
        std::process::Command::new("kill").args(["-9", &victim.to_string()]).status().unwrap();
    };
    let (result, ()) = tokio::join!(call, kill);
    let text = result.unwrap()["content"][0]["text"].to_string();
    assert!(text.contains("Long running operation completed"), "{text}");
    assert_eq!(starts(&everything, "everything"), 2);
    let echoed = everything.host.call_json("everything", "echo", &json!({"message": "again"})).await.unwrap();
    assert_eq!(echoed["content"][0]["text"], "Echo: again");
}

/// `[mcp_servers.NAME]` running `argv` 11 s after its first start (noted
/// in `marker`), longer than rmcp's era probe waits (10 s); at once after.
fn slow_first_start(name: &str, argv: &[String], marker: &std::path::Path) -> String {
    let quote = |word: &str| format!("'{}'", word.replace('\'', r"'\''"));
    let command: Vec<String> = argv.iter().map(|word| quote(word)).collect();
    let marker = quote(&marker.display().to_string());
    let line = format!("[ -e {marker} ] || {{ touch {marker}; sleep 11; }}; exec {}", command.join(" "));
    format!(
        "[mcp_servers.{name}]\ncommand = \"sh\"\nargs = [\"-c\", {}]\ntimeout = 30\n",
        serde_json::to_string(&line).unwrap()
    )
}

/// Servers that start slower than the era probe waits: the handshake falls
/// back to `initialize`, and the late answer to the probe must not be taken
/// for the answer to it. A legacy server then answers `initialize`; a 2026
/// server refuses it, and is reached again in its era.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn servers_slower_to_start_than_the_era_probe_are_still_reached() {
    let markers = tempfile::tempdir().unwrap();
    let time = [mcp_servers::time_server().display().to_string()];
    let unruly = mcp_servers::unruly_command("normal");
    let t = host(
        &[
            slow_first_start("modern", &time, &markers.path().join("modern")),
            slow_first_start("legacy", &unruly, &markers.path().join("legacy")),
        ],
        None,
    );
    let (utc, quick) = (json!({"timezone": "UTC"}), json!({"seconds": 0}));
    let (now, looked) =
        tokio::join!(t.host.call_json("modern", "get_current_time", &utc), t.host.call_json("legacy", "look", &quick));
    assert_eq!(now.unwrap()["isError"], false);
    assert_eq!(looked.unwrap()["content"][0]["text"], "done");
    // One start each, and no failed handshake on the way.
    let status = t.host.upstream_status();
    let seen: Vec<(&str, u64, u64)> = status.iter().map(|s| (s.name.as_str(), s.starts, s.failures)).collect();
    assert_eq!(seen, [("legacy", 1, 0), ("modern", 1, 0)]);
}

/// Six calls of a read-only tool and one of another in flight when the
/// server is killed. The catalog the calls were made in holds an older
/// list, saying nothing of `look`; the server's list (read when the calls
/// connected it) is what decides.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_only_calls_in_flight_when_the_server_dies_are_answered_by_its_restart() {
    let (cache, log) = (tempfile::tempdir().unwrap(), tempfile::NamedTempFile::new().unwrap());
    let section =
        unruly_section("unruly", "normal", &format!("env = {{ UNRULY_LOG = {:?} }}", log.path().display().to_string()));
    {
        let t = host(std::slice::from_ref(&section), Some(cache.path()));
        wait_for(&t.host, |c| c.mcp_server("unruly").is_some_and(|s| !s.tools.is_empty())).await;
    }
    // The list kept on disk, as an older server version gave it.
    let saved = std::fs::read_dir(cache.path().join("mcp")).unwrap().next().unwrap().unwrap().path();
    let listed = std::fs::read_to_string(&saved).unwrap();
    let older = listed.replace(r#""readOnlyHint":true"#, r#""readOnlyHint":false"#);
    assert_ne!(older, listed);
    std::fs::write(&saved, older).unwrap();
    std::fs::write(log.path(), "").unwrap();

    let t = host(&[section], Some(cache.path()));
    let look = json!({"seconds": 1});
    let mut looks = tokio::task::JoinSet::new();
    for _ in 0..6 {
        let (host, look) = (t.host.clone(), look.clone());
        looks.spawn(async move { host.call_json("unruly", "look", &look).await });
    }
    let slow = t.host.call_json("unruly", "slow", &look);
    let calls = || std::fs::read_to_string(log.path()).unwrap().lines().filter(|l| l.starts_with("call ")).count();
    let kill = async {
        until("the seven calls are running", || calls() == 7).await;
        let victim = pid(&t, "unruly").unwrap();
        std::process::Command::new("kill").args(["-9", &victim.to_string()]).status().unwrap();
        victim
    };
    let (looked, slowed, victim) = tokio::join!(looks.join_all(), slow, kill);
    // Each read-only call is made once more on one new process; the
    // other, which may have changed something, is the typed error.
    for answer in looked {
        let answer = answer.unwrap();
        assert_eq!(answer["content"][0]["text"], "done", "{answer}");
    }
    assert_eq!(fault(slowed).0, UpstreamFault::Crashed);
    assert_eq!(starts(&t, "unruly"), 2, "one restart for all seven calls");
    assert_ne!(pid(&t, "unruly"), Some(victim));
    // One lost connection is one failure: the server is not backed off.
    t.host.call_json("unruly", "slow", &json!({"seconds": 0})).await.unwrap();
}

#[tokio::test]
async fn a_hung_call_times_out_and_other_servers_keep_serving() {
    let t = host(&[unruly_section("unruly", "normal", "timeout = 1"), time_section("time")], None);
    let (kind, message) = fault(t.host.call_json("unruly", "slow", &json!({"seconds": 30})).await);
    assert_eq!(kind, UpstreamFault::Timeout, "{message}");
    let now = t.host.call_json("time", "get_current_time", &json!({"timezone": "UTC"})).await.unwrap();
    assert_eq!(now["isError"], false);
    let outcome =
        mcp(&t, json!({"subcommand": "call", "server": "unruly", "tool": "slow", "parameters": {"seconds": 30}})).await;
    assert!(
        outcome.is_error && outcome.text.contains("timed out") && outcome.text.contains("Retry once"),
        "{}",
        outcome.text
    );
}

#[tokio::test]
async fn servers_that_cannot_speak_mcp_fail_clearly() {
    let t = host(
        &[
            unruly_section("garbage", "garbage", "timeout = 1"),
            unruly_section("silent", "silent", "timeout = 1"),
            unruly_section("exits", "exit", ""),
            unruly_section("huge", "huge", "timeout = 5"),
            "[mcp_servers.absent]\ncommand = \"/nonexistent/quiver-test-mcp-server\"".to_owned(),
            time_section("time"),
        ],
        None,
    );
    let empty = json!({});
    let call = |server: &'static str| t.host.call_json(server, "anything", &empty);
    let (kind, message) = fault(call("garbage").await);
    assert_eq!(kind, UpstreamFault::Handshake, "{message}");
    let (kind, message) = fault(call("silent").await);
    assert_eq!(kind, UpstreamFault::Handshake, "{message}");
    let (kind, message) = fault(call("exits").await);
    assert_eq!(kind, UpstreamFault::Handshake, "{message}");
    assert!(message.contains("cannot open the database"), "its stderr is quoted: {message}");
    let (kind, message) = fault(call("huge").await);
    assert_eq!(kind, UpstreamFault::Protocol, "{message}");
    assert!(message.contains("MiB"), "{message}");
    let (kind, message) = fault(call("absent").await);
    assert_eq!(kind, UpstreamFault::Start, "{message}");
    assert!(message.contains("/nonexistent/quiver-test-mcp-server"), "{message}");

    // The host and the other servers are unaffected.
    let now = t.host.call_json("time", "get_current_time", &json!({"timezone": "UTC"})).await.unwrap();
    assert_eq!(now["isError"], false);

    // A server that keeps failing is marked so (Tier 1, status), and waits.
    for _ in 0..3 {
        let _ = call("absent").await;
    }
    wait_for(&t.host, |c| {
        matches!(c.mcp_server("absent").map(|s| &s.state), Some(quiver::catalog::ServerState::Failing(_)))
    })
    .await;
    assert!(tier1(&t).contains("- absent (tools unknown) (failing now"), "{}", tier1(&t));
    let (kind, message) = fault(call("absent").await);
    assert_eq!(kind, UpstreamFault::Failing, "{message}");
    let status = serde_json::to_value(t.host.status()).unwrap();
    let absent = status["mcp_servers"].as_array().unwrap().iter().find(|s| s["name"] == "absent").unwrap().clone();
    assert_eq!(absent["state"], "failing", "{absent}");
}

#[tokio::test]
async fn child_processes_never_outlive_the_host() {
    let t =
        host(&[node_section("everything", "everything", &["stdio"], ""), unruly_section("unruly", "normal", "")], None);
    t.host.call_json("everything", "echo", &json!({"message": "x"})).await.unwrap();
    t.host.call_json("unruly", "slow", &json!({"seconds": 0})).await.unwrap();
    let pids = [pid(&t, "everything").unwrap(), pid(&t, "unruly").unwrap()];
    assert!(pids.iter().all(|p| alive(*p)));
    t.host.shutdown_upstreams().await;
    assert!(pids.iter().all(|p| !alive(*p)), "stopped on shutdown");

    t.host.call_json("unruly", "slow", &json!({"seconds": 0})).await.unwrap();
    let again = pid(&t, "unruly").unwrap();
    drop(t);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while alive(again) {
        assert!(std::time::Instant::now() < deadline, "the server outlived its host");
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}

/// A client that keeps the progress it is told of.
#[derive(Clone, Default)]
struct Listener {
    progress: std::sync::Arc<std::sync::Mutex<Vec<f64>>>,
}

impl rmcp::ClientHandler for Listener {
    async fn on_progress(
        &self,
        params: rmcp::model::ProgressNotificationParam,
        _: rmcp::service::NotificationContext<rmcp::RoleClient>,
    ) {
        self.progress.lock().unwrap().push(params.progress);
    }
}

/// Wait (up to a minute) until `condition` holds.
async fn until(what: &str, condition: impl Fn() -> bool) {
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(60);
    while !condition() {
        assert!(tokio::time::Instant::now() < deadline, "timed out waiting until {what}");
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn progress_and_cancellation_cross_the_hop() {
    use rmcp::ServiceExt;
    use rmcp::model::{CallToolRequest, CallToolRequestParams, ClientRequest};
    let log = tempfile::NamedTempFile::new().unwrap();
    let env = format!("env = {{ UNRULY_LOG = {:?} }}", log.path().display().to_string());
    let t = host(
        &[node_section("everything", "everything", &["stdio"], ""), unruly_section("unruly", "normal", &env)],
        None,
    );
    let server = McpServer::new(t.host.clone(), None).unwrap();
    let (client_io, server_io) = tokio::io::duplex(1 << 20);
    tokio::spawn(async move {
        let running = server.serve(server_io).await.expect("the server starts");
        let _ = running.waiting().await;
    });
    let listener = Listener::default();
    let client = listener.clone().serve(client_io).await.expect("the client connects");
    let arguments = |value: Value| value.as_object().cloned().unwrap();

    // server-everything reports each step of a long operation: the client
    // hears it through Quiver (rmcp's client sends a progress token).
    let long = json!({"subcommand": "call", "server": "everything", "tool": "trigger-long-running-operation",
                      "parameters": {"duration": 1, "steps": 4}});
    let done = client.call_tool(CallToolRequestParams::new("mcp").with_arguments(arguments(long))).await.unwrap();
    assert_ne!(done.is_error, Some(true), "{done:?}");
    until("four progress reports arrived", || listener.progress.lock().unwrap().len() == 4).await;
    assert_eq!(*listener.progress.lock().unwrap(), [1.0, 2.0, 3.0, 4.0]);

    // A downstream cancellation reaches the upstream server.
    let slow = json!({"subcommand": "call", "server": "unruly", "tool": "slow", "parameters": {"seconds": 60}});
    let request = ClientRequest::CallToolRequest(CallToolRequest::new(
        CallToolRequestParams::new("mcp").with_arguments(arguments(slow)),
    ));
    let handle = client.peer().send_cancellable_request(request, Default::default()).await.unwrap();
    let events = || std::fs::read_to_string(log.path()).unwrap_or_default();
    until("the upstream server has the call", || events().lines().any(|l| l.starts_with("call "))).await;
    handle.cancel(Some("the user changed their mind".into())).await.unwrap();
    until("the upstream server heard of the cancellation", || events().lines().any(|l| l.starts_with("cancelled ")))
        .await;
    let call_id = events().lines().find_map(|l| l.strip_prefix("call ").map(str::to_owned)).unwrap();
    assert!(events().contains(&format!("cancelled {call_id}")), "{}", events());
}

/// Hardening row 2: a saved list with a tool whose `inputSchema` is not an
/// object, in legacy mode: the tool is left out and reported; the server's
/// other tools and every listing keep working.
#[tokio::test]
async fn a_bad_tool_in_a_saved_list_is_left_out_and_reported() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("odd.json"),
        r#"[{"name": "fine", "inputSchema": {"type": "object"}}, {"name": "bad", "inputSchema": 1}]"#,
    )
    .unwrap();
    let t = TestHost::builder().config("[disclosure]\nmcp_tool_mode = \"legacy\"").mcp(dir.path().to_owned()).build();
    let turn = t.host.session(None).unwrap().tools_for_turn("weather").await;
    let names: Vec<String> = turn.tools.iter().map(|d| d.name.clone()).collect();
    assert!(names.contains(&"odd__fine".to_owned()) && !names.iter().any(|n| n.contains("bad")), "{names:?}");
    let server = McpServer::new(t.host.clone(), None).unwrap();
    assert!(server.call("odd__fine", json!({})).await.is_ok(), "a call answers (here: not callable), never a panic");
    let status = t.host.status();
    let why = &status.rejected.iter().find(|r| r.origin.contains("odd.json")).expect("reported").reason;
    assert!(why.contains("`bad`: its inputSchema is not a JSON object"), "{why}");
}

/// A wrong argument to an upstream tool gets Quiver's own words (what is
/// wrong, where, the schema), as a plugin's does, and is never sent: the
/// server is not even started for it.
#[tokio::test]
async fn arguments_are_checked_against_the_servers_schema_before_sending() {
    let cache = tempfile::tempdir().unwrap();
    // List the server's tools once, so a later host knows the schema
    // from its cache without starting the server.
    let first = host(&[time_section("time")], Some(cache.path()));
    let listed = mcp(&first, json!({"subcommand": "discover", "server": "time"})).await;
    assert!(!listed.is_error, "{}", listed.text);
    drop(first);

    let t = host(&[time_section("time")], Some(cache.path()));
    let call =
        json!({"subcommand": "call", "server": "time", "tool": "get_current_time", "parameters": {"timezone": 9}});
    let wrong = mcp(&t, call).await;
    assert_eq!(wrong.error.as_ref().map(|e| e.kind()), Some(ErrorKind::InputSchema), "{}", wrong.text);
    // Named as the model reached it: through `mcp`, on `time`.
    assert!(
        wrong.text.contains("The arguments of `mcp` on `time` do not fit its input schema")
            && wrong.text.contains("at /timezone")
            && wrong.text.contains("`mcp` `discover` on `time`"),
        "{}",
        wrong.text
    );
    assert_eq!(starts(&t, "time"), 0, "a call that cannot fit was sent");
    let right =
        json!({"subcommand": "call", "server": "time", "tool": "get_current_time", "parameters": {"timezone": "UTC"}});
    let answered = mcp(&t, right).await;
    assert!(!answered.is_error, "{}", answered.text);
}
