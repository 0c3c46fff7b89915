//! Golden files of what a model is shown, per face and mode: the Tier-1
//! text, the MCP face's `tools/list` and the REST face's summaries, for a
//! host with every kind (bundled tools, a connector, a database, skills,
//! an MCP list), once with every kind progressive and once with every kind
//! flat (`legacy`, skills `inline`). The call path is being reshaped; these
//! must stay byte-identical through it.
//!
//! `QUIVER_BLESS=1 cargo test -p quiver-tests golden` rewrites the files
//! (`tests/golden/`); review the diff before committing it.

use std::path::PathBuf;

use quiver::faces::http::{HttpOptions, router};
use quiver::faces::mcp::McpServer;
use quiver_tests::TestHost;
use tokio_util::sync::CancellationToken;

use crate::faces::mcp::connect_to;
use crate::faces::rest::{get, json_of};

/// The agent profiles compared: the defaults, and every kind flat.
const CONFIG: &str = r#"
[agents.flat]
skill_tool_mode = "inline"
connector_tool_mode = "legacy"
database_tool_mode = "legacy"
mcp_tool_mode = "legacy"
"#;

fn host() -> TestHost {
    TestHost::every_kind(CONFIG)
}

/// Compare `actual` with the golden file `name`, or write it when blessing.
fn golden(name: &str, actual: &str) -> Option<String> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("golden").join(name);
    if std::env::var_os("QUIVER_BLESS").is_some() {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, actual).unwrap();
        return None;
    }
    let expected = std::fs::read_to_string(&path).unwrap_or_default();
    if expected == actual {
        return None;
    }
    let line = expected.lines().zip(actual.lines()).position(|(a, b)| a != b).unwrap_or(expected.lines().count());
    Some(format!(
        "{name} differs from tests/golden/{name} at line {}:\n  golden: {:?}\n  now:    {:?}",
        line + 1,
        expected.lines().nth(line).unwrap_or("(end)"),
        actual.lines().nth(line).unwrap_or("(end)")
    ))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_a_model_is_shown_stays_byte_identical() {
    let t = host();
    let mut differences = Vec::new();
    for (mode, agent) in [("progressive", None), ("flat", Some("flat"))] {
        let session = t.host.session(agent).unwrap();
        differences.extend(golden(&format!("{mode}/tier1.txt"), &session.system_prompt()));

        let server = McpServer::new(t.host.clone(), agent.map(str::to_owned)).unwrap();
        let (client, _) = connect_to(server).await;
        let tools = client.list_all_tools().await.unwrap();
        let tools = serde_json::to_string_pretty(&tools).unwrap() + "\n";
        differences.extend(golden(&format!("{mode}/mcp-tools-list.json"), &tools));
        client.cancel().await.unwrap();

        let options = HttpOptions { agent: agent.map(str::to_owned), ..HttpOptions::default() };
        let app = router(&t.host, &options, CancellationToken::new()).unwrap();
        let (status, _, body) = get(&app, "/v1/tools/summary", &[]).await;
        assert!(status.is_success(), "/v1/tools/summary: {status}");
        let body = serde_json::to_string_pretty(&json_of(&body)).unwrap() + "\n";
        differences.extend(golden(&format!("{mode}/rest-tools-summary.json"), &body));
        let (status, _, body) = get(&app, "/v1/prompt", &[]).await;
        assert!(status.is_success(), "/v1/prompt: {status}");
        differences.extend(golden(&format!("{mode}/rest-prompt.txt"), &String::from_utf8(body).unwrap()));
    }
    assert!(differences.is_empty(), "{}", differences.join("\n\n"));
}
