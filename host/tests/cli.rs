//! The `quiver` binary: exit codes, stdout purity, error messages.

mod common;

use std::process::Command;

use common::{Cli, stderr, stdout};
use quiver_tests::fixtures;

#[test]
fn list_and_prompt_show_bundled_and_folder_plugins_without_compiling() {
    let cli = Cli::new();
    let out = cli.run(&["list"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("calc "), "{}", stdout(&out));
    assert!(stdout(&out).contains("misbehave "), "{}", stdout(&out));
    assert!(stderr(&out).contains("compiled=0"), "{}", stderr(&out));

    let out = cli.run(&["prompt"]);
    assert!(out.status.success());
    assert!(stdout(&out).contains("calc__evaluate: "), "{}", stdout(&out));
    assert!(stderr(&out).contains("catalog ready"));
    assert!(!stderr(&out).contains("plugin compiled"), "{}", stderr(&out));
}

/// The prompt budget counts tokens without tiktoken's table (180 ms and 50
/// MB to build): it is never loaded to print Tier 1, within the budget or
/// folded to fit it.
#[test]
fn the_prompt_budget_loads_no_tokenizer() {
    const LOADED: &str = "loading the o200k_base tokenizer table";
    let cli = Cli::new();
    let out = cli.run_logged(&["prompt"], "quiver=debug");
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!stderr(&out).contains(LOADED), "{}", stderr(&out));
    assert!(stdout(&out).contains("calc__evaluate: "), "nothing folded: {}", stdout(&out));

    let config = cli.cache.path().join("small.toml");
    std::fs::write(&config, "[disclosure]\nprompt_tokens = 900\n").unwrap();
    let out = cli.run_logged(&["--config", config.to_str().unwrap(), "prompt"], "quiver=debug");
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!stdout(&out).contains("calc__evaluate: "), "folded: {}", stdout(&out));
    assert!(stdout(&out).contains("folded to fit the prompt"), "{}", stdout(&out));
    assert!(!stderr(&out).contains(LOADED), "folding needs no count: {}", stderr(&out));
    // The signal is real: counting tokens does load it.
    let out = cli.run_logged(&["tokens"], "quiver=debug");
    assert!(stderr(&out).contains(LOADED), "{}", stderr(&out));
}

/// `quiver search --json` says which ranking answered: the hybrid one with
/// the bundled model by default, BM25 when a config asks for it.
#[test]
fn search_json_says_which_ranker_answered() {
    let cli = Cli::new();
    let out = cli.run(&["search", "--json", "how many days until christmas"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let value: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(value["ranker"], "hybrid", "{value}");
    assert_eq!(value["model"], "wordllama-l2-supercat-256-i8");
    assert!(value["hits"].as_array().is_some_and(|hits| !hits.is_empty()), "{value}");

    let config = cli.cache.path().join("quiver.toml");
    std::fs::write(&config, "[search]\nranker = \"bm25\"\n").unwrap();
    let out = cli.run(&["--config", config.to_str().unwrap(), "search", "--json", "evaluate an expression"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let value: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(value["ranker"], "bm25", "{value}");
    assert!(value["model"].is_null());

    // A model that cannot be read is one log line, and BM25 answers.
    std::fs::write(&config, "[search]\nmodel = \"no-such-model\"\n").unwrap();
    let out = cli.run(&["--config", config.to_str().unwrap(), "search", "--json", "evaluate an expression"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(serde_json::from_str::<serde_json::Value>(&stdout(&out)).unwrap()["ranker"], "bm25");
    assert_eq!(stderr(&out).matches("search ranks with BM25 alone").count(), 1, "{}", stderr(&out));
}

#[test]
fn call_prints_the_output_as_json() {
    let cli = Cli::new();
    let out = cli.run(&["call", "calc", "evaluate", r#"{"expression": "6 * 7"}"#]);
    assert!(out.status.success(), "{}", stderr(&out));
    let value: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(value["value"], 42);
    // The name models see works too.
    let out = cli.run(&["call", "calc__evaluate", r#"{"expression": "6 * 7"}"#]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(serde_json::from_str::<serde_json::Value>(&stdout(&out)).unwrap()["value"], 42);
    // The input from a file, or from standard input.
    let file = cli.cache.path().join("input.json");
    std::fs::write(&file, r#"{"expression": "6 * 8"}"#).unwrap();
    let out = cli.run(&["call", "calc__evaluate", &format!("@{}", file.display())]);
    assert_eq!(serde_json::from_str::<serde_json::Value>(&stdout(&out)).unwrap()["value"], 48, "{}", stderr(&out));
    let mut child = Command::new(env!("CARGO_BIN_EXE_quiver"))
        .arg("--cache-dir")
        .arg(cli.cache.path())
        .args(["call", "calc", "evaluate", "-"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::io::Write::write_all(&mut child.stdin.take().unwrap(), br#"{"expression": "6 * 9"}"#).unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(serde_json::from_str::<serde_json::Value>(&stdout(&out)).unwrap()["value"], 54);
}

/// `quiver new` names the fix for a name with `_`, and its help lists its
/// own options, not the host's.
#[test]
fn new_suggests_a_name_and_shows_its_own_help() {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_quiver"))
        .args(["new", "rust", "my_tool", "--dir"])
        .arg(dir.path().join("p"))
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(stderr(&out).contains("try `my-tool`"), "{}", stderr(&out));
    let help = Command::new(env!("CARGO_BIN_EXE_quiver")).args(["new", "--help"]).output().unwrap();
    let help = stdout(&help);
    assert!(help.contains("--dir") && help.contains("--sdk"), "{help}");
    assert!(!help.contains("--plugins") && !help.contains("--mcp-config"), "{help}");
}

#[test]
fn guest_output_never_reaches_stdout() {
    let cli = Cli::new();
    let out = cli.run(&["call", "misbehave", "spam", r#"{"n": 5000}"#]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out), "5000\n");
    assert!(stderr(&out).contains("xxxxxxxxxx"), "guest lines go to the log on stderr");
}

#[test]
fn errors_go_to_stderr_with_a_fix_and_exit_1() {
    let cli = Cli::new();
    let out = cli.run(&["call", "nope", "x"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stdout(&out).is_empty());
    assert!(stderr(&out).contains("error: no plugin named `nope`"), "{}", stderr(&out));
    assert!(stderr(&out).contains("fix: run `quiver list`"), "{}", stderr(&out));
}

#[test]
fn check_explains_a_rejection_in_one_line() {
    let cli = Cli::new();
    let text = cli.plugins.path().join("notes.txt");
    std::fs::write(&text, "hello").unwrap();
    let out = cli.run(&["check", text.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    let report = stdout(&out);
    assert!(report.starts_with("rejected: "), "{report}");
    assert!(report.contains("not a WebAssembly file"), "{report}");
    assert!(report.contains("\nfix: "), "{report}");

    let out = cli.run(&["check", fixtures::LIAR]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stdout(&out).contains("stub disagrees with describe()"), "{}", stdout(&out));

    let out = cli.run(&["check", fixtures::MISBEHAVE]);
    assert!(out.status.success(), "{}", stdout(&out));
    assert!(stdout(&out).starts_with("ok: misbehave 0.1.0 (tool)"), "{}", stdout(&out));
}

/// `check` explains a component built for no host: compiled, linked, its
/// actions named from its exports.
#[test]
fn check_explains_a_plain_component() {
    let cli = Cli::new();
    let file = cli.plugins.path().join("plain-rust.wasm");
    std::fs::copy(fixtures::PLAIN_RUST, &file).unwrap();
    let out = cli.run(&["check", file.to_str().unwrap()]);
    assert!(out.status.success(), "{}{}", stdout(&out), stderr(&out));
    assert!(
        stdout(&out).starts_with("ok: plain-rust 0.1.0 (tool), 12 actions: hello, text_count, text_recase"),
        "{}",
        stdout(&out)
    );
    assert!(!stdout(&out).contains("requests"), "no policy file, no requests: {}", stdout(&out));

    // A policy file beside it is a request, shown next to what the
    // configuration grants, with the setting that would grant the rest.
    let policy = "permissions:\n  storage:\n    allow:\n      - uri: \"fs:///data/**\"\n        access: [read, write]\n\
                  \x20 environment:\n    allow:\n      - key: GREETING\n      - key: API_KEY\n  network:\n    deny: []\n";
    std::fs::write(file.with_extension("policy.yaml"), policy).unwrap();
    let data = tempfile::tempdir().unwrap();
    let config = cli.plugins.path().join("quiver.toml");
    let granted = format!(
        "[plugins.plain-rust]\nfolders = {{ \"/data\" = {:?} }}\nconfig = {{ GREETING = \"hi\" }}\n",
        data.path()
    );
    std::fs::write(&config, granted).unwrap();
    let out = cli.run(&["--config", config.to_str().unwrap(), "check", file.to_str().unwrap()]);
    assert!(out.status.success(), "{}{}", stdout(&out), stderr(&out));
    let report = stdout(&out);
    let lines: Vec<&str> = report.lines().skip(1).collect();
    assert_eq!(
        lines,
        [
            "requests (plain-rust.policy.yaml: a request, never a grant; only the configuration grants):",
            "  storage /data (read and write; folders are only ever read): granted for reading only: /data",
            "  environment GREETING: granted: GREETING",
            "  environment API_KEY: not granted (fix: [plugins.plain-rust] config = { API_KEY = \"…\" })",
            "  not read: permissions.network.deny",
        ],
        "{report}"
    );
}

/// `package` writes the stub and manifest of a component with no Quiver
/// contract from its types (it once failed with a fix for Quiver's own
/// SDK, then wrote nothing); `check` then passes on the packaged file, and
/// a second `package` changes nothing.
#[test]
fn package_writes_a_plain_components_stub_from_its_types() {
    let cli = Cli::new();
    let file = cli.plugins.path().join("plain-rust.wasm");
    std::fs::copy(fixtures::PLAIN_RUST, &file).unwrap();
    let file = file.to_str().unwrap();
    let out = cli.run(&["package", file]);
    assert!(out.status.success(), "{}{}", stdout(&out), stderr(&out));
    let what = "plain-rust 0.1.0 (tool), 12 actions, from its types (a component with no Quiver contract)";
    assert_eq!(stdout(&out), format!("packaged: {what} -> {file}\n"));
    let packaged = std::fs::read(file).unwrap();
    let stub = quiver::load::stub::read(&packaged, file).unwrap();
    assert!(stub.plain && stub.action("text_count").is_some(), "{stub:?}");
    let out = cli.run(&["check", file]);
    assert!(stdout(&out).starts_with("ok: plain-rust 0.1.0 (tool), 12 actions: "), "{}", stdout(&out));
    let out = cli.run(&["package", file]);
    assert_eq!(stdout(&out), format!("ok: {what}: already packaged\n"));
    assert_eq!(std::fs::read(file).unwrap(), packaged);
}

/// `check` names `quiver package` for a component without a stub, and
/// `package` writes the stub (in place), after which `check` passes and a
/// second `package` changes nothing.
#[test]
fn package_writes_the_stub_a_component_lacks() {
    let cli = Cli::new();
    let file = cli.plugins.path().join("no-stub.wasm");
    std::fs::copy(fixtures::NO_STUB, &file).unwrap();
    let file = file.to_str().unwrap();
    let out = cli.run(&["check", file]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stdout(&out).contains(&format!("write it with `quiver package {file}`")), "{}", stdout(&out));

    let out = cli.run(&["package", file]);
    assert!(out.status.success(), "{}{}", stdout(&out), stderr(&out));
    assert_eq!(stdout(&out), format!("packaged: no-stub 0.1.0 (tool), 1 action -> {file}\n"));
    let out = cli.run(&["check", file]);
    assert!(stdout(&out).starts_with("ok: no-stub 0.1.0 (tool), 1 action: echo"), "{}", stdout(&out));
    let out = cli.run(&["package", file]);
    assert_eq!(stdout(&out), "ok: no-stub 0.1.0 (tool), 1 action: already packaged\n");

    let out = cli.run(&["package", fixtures::LIAR, "-o", cli.plugins.path().join("liar.wasm").to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stdout(&out).contains("stub disagrees with describe()"), "{}", stdout(&out));
    assert!(!cli.plugins.path().join("liar.wasm").exists());
}

/// `quiver new rust|python|js NAME` writes projects that build with the one
/// command they print and pass `quiver check` as generated.
#[test]
fn new_projects_build_and_pass_check() {
    let cli = Cli::new();
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_owned();
    let projects = tempfile::tempdir().unwrap();
    let quiver = std::path::Path::new(env!("CARGO_BIN_EXE_quiver"));

    let rust = projects.path().join("rs");
    let out = cli.run(&["new", "rust", "word-tools", "--dir", rust.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("cargo build --release --target wasm32-wasip2 && quiver check"), "{}", stdout(&out));
    // The target folder the README test uses: the SDK's dependencies are built once.
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(std::path::PathBuf::from)
        .map(|t| if t.is_absolute() { t } else { root.join(t) })
        .unwrap_or_else(|| root.join("target"))
        .join("readme-plugins");
    let built = common::build_project(&rust, &target);
    assert!(built.status.success(), "{}", stderr(&built));
    let wasm = target.join("wasm32-wasip2/release/word_tools.wasm");
    let out = cli.run(&["check", wasm.to_str().unwrap()]);
    assert!(stdout(&out).starts_with("ok: word-tools 0.1.0 (tool), 1 action: count_words"), "{}", stdout(&out));

    // A connector and a database adapter, in Rust: each builds and passes
    // `quiver check` as written, as its kind.
    for (kind, expected) in [
        ("connector", "ok: api-reach 0.1.0 (connector), 1 action: get"),
        ("database", "ok: api-reach 0.1.0 (database), 3 actions: list_tables, describe_table, query"),
    ] {
        let project = projects.path().join(kind);
        let out = cli.run(&["new", "rust", "api-reach", "--kind", kind, "--dir", project.to_str().unwrap()]);
        assert!(out.status.success(), "{}", stderr(&out));
        let built = common::build_project(&project, &target);
        assert!(built.status.success(), "{kind}: {}", stderr(&built));
        let out = cli.run(&["check", target.join("wasm32-wasip2/release/api_reach.wasm").to_str().unwrap()]);
        assert!(stdout(&out).starts_with(expected), "{kind}: {}", stdout(&out));
    }
    let out = cli.run(&[
        "new",
        "python",
        "api-reach",
        "--kind",
        "database",
        "--dir",
        projects.path().join("x").to_str().unwrap(),
    ]);
    assert!(!out.status.success() && stderr(&out).contains("in Rust"), "{}", stderr(&out));

    let python = projects.path().join("py");
    let out = cli.run(&["new", "python", "word-tools", "--dir", python.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    let path = format!(
        "{}:{}:{}",
        root.join("target/venv/bin").display(),
        quiver.parent().unwrap().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let built = Command::new("sh")
        .arg(python.join("build.sh"))
        .env("PATH", path)
        .env("QUIVER_CACHE_DIR", cli.cache.path())
        .output()
        .unwrap();
    assert!(built.status.success(), "{}{} (componentize-py comes from `bash .ci/run`)", stdout(&built), stderr(&built));
    let out = cli.run(&["check", python.join("word-tools.wasm").to_str().unwrap()]);
    assert!(stdout(&out).starts_with("ok: word-tools 0.1.0 (tool), 1 action: count_words"), "{}", stdout(&out));

    let js = projects.path().join("js");
    let out = cli.run(&["new", "js", "word-tools", "--dir", js.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    let path = format!("{}:{}", quiver.parent().unwrap().display(), std::env::var("PATH").unwrap_or_default());
    let built = Command::new("sh")
        .arg(js.join("build.sh"))
        .env("PATH", path)
        .env("QUIVER_CACHE_DIR", cli.cache.path())
        .output()
        .unwrap();
    assert!(built.status.success(), "{}{}", stdout(&built), stderr(&built));
    let out = cli.run(&["check", js.join("word-tools.wasm").to_str().unwrap()]);
    assert!(stdout(&out).starts_with("ok: word-tools 0.1.0 (tool), 1 action: count_words"), "{}", stdout(&out));

    let out = cli.run(&["new", "python", "word-tools", "--dir", python.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1), "an existing folder is not overwritten");
    let out = cli.run(&["new", "rust", "Bad Name"]);
    assert_eq!(out.status.code(), Some(1));
}

#[test]
fn serve_stdio_writes_nothing_but_protocol_to_stdout() {
    use std::io::Write;
    let cli = Cli::new();
    let mut child = Command::new(env!("CARGO_BIN_EXE_quiver"))
        .args(["--no-bundled", "--cache-dir"])
        .arg(cli.cache.path())
        .arg("--plugins")
        .arg(cli.plugins.path())
        .args(["serve", "--stdio", "--no-watch"])
        .env("RUST_LOG", "info")
        // Every misbehave action listed directly (it has more than the default 12).
        .env("REACT_TOOL_SELECTION_THRESHOLD", "50")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        // Not piped: nobody would drain it, and a full pipe blocks the server.
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("start quiver serve");
    let requests = [
        r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"test","version":"0"}}}"#,
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
        r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#,
        r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"misbehave__spam","arguments":{"n":500}}}"#,
    ];
    let mut stdin = child.stdin.take().unwrap();
    for request in requests {
        writeln!(stdin, "{request}").unwrap();
    }
    // Wait for the three answers, then close stdin: the server exits.
    let stdout = child.stdout.take().unwrap();
    let mut lines = std::io::BufRead::lines(std::io::BufReader::new(stdout));
    let mut answers = Vec::new();
    while answers.len() < 3 {
        let line = lines.next().expect("an answer").unwrap();
        let message: serde_json::Value =
            serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON-RPC on stdout ({e}): {line}"));
        assert_eq!(message["jsonrpc"], "2.0", "{line}");
        if message.get("id").is_some() {
            answers.push(message);
        }
    }
    drop(stdin);
    for line in lines {
        let line = line.unwrap();
        assert!(serde_json::from_str::<serde_json::Value>(&line).is_ok(), "not JSON-RPC on stdout: {line}");
    }
    let status = child.wait().unwrap();
    assert!(status.success());
    // Requests run concurrently: answers come in any order.
    answers.sort_by_key(|a| a["id"].as_u64());
    assert_eq!(answers.iter().map(|a| a["id"].as_u64().unwrap()).collect::<Vec<_>>(), [1, 2, 3], "{answers:?}");
    assert_eq!(answers[0]["result"]["serverInfo"]["name"], "quiver");
    let tools = answers[1]["result"]["tools"].as_array().unwrap();
    assert!(tools.iter().any(|t| t["name"] == "misbehave__spam"), "{tools:?}");
    assert_eq!(answers[2]["result"]["isError"], false, "{}", answers[2]);
    assert_eq!(answers[2]["result"]["structuredContent"], serde_json::Value::Null, "spam returns a number");
}

/// The processes whose parent is `pid`.
fn children_of(pid: u32) -> Vec<u32> {
    let mut children = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(child) = entry.file_name().to_string_lossy().parse::<u32>() else { continue };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{child}/stat")) else { continue };
        // pid (comm) state ppid ...: the fields after the last `)`.
        let fields: Vec<&str> = stat.rsplit(')').next().unwrap_or("").split_whitespace().collect();
        if fields.get(1).and_then(|p| p.parse::<u32>().ok()) == Some(pid) && fields.first() != Some(&"Z") {
            children.push(child);
        }
    }
    children
}

/// `quiver serve --stdio` fronting an upstream stdio server: the server is
/// started by the first call, and stopped when Quiver gets SIGTERM.
#[test]
fn upstream_servers_stop_with_quiver_on_sigterm() {
    use std::io::{BufRead, Write};
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("quiver.toml");
    std::fs::write(&config, quiver_tests::mcp_servers::unruly_section("unruly", "normal", "")).unwrap();
    let cli = Cli::new();
    let mut child = Command::new(env!("CARGO_BIN_EXE_quiver"))
        .args(["--no-bundled", "--cache-dir"])
        .arg(cli.cache.path())
        .arg("--config")
        .arg(&config)
        .args(["serve", "--stdio", "--no-watch"])
        .env_remove("RUST_LOG")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        // A few lines at the default level: the pipe does not fill.
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("start quiver serve");
    let mut stdin = child.stdin.take().unwrap();
    for request in common::HANDSHAKE.into_iter().chain([
        r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"mcp","arguments":{"subcommand":"call","server":"unruly","tool":"slow","parameters":{"seconds":0}}}}"#,
    ]) {
        writeln!(stdin, "{request}").unwrap();
    }
    let mut lines = std::io::BufReader::new(child.stdout.take().unwrap()).lines();
    loop {
        let line = lines.next().expect("an answer").unwrap();
        if line.contains(r#""id":2"#) {
            assert!(line.contains(r#""text":"done""#), "{line}");
            break;
        }
    }
    let upstream = children_of(child.id());
    assert_eq!(upstream.len(), 1, "one upstream process: {upstream:?}");
    Command::new("kill").args(["-TERM", &child.id().to_string()]).status().unwrap();
    let output = child.wait_with_output().unwrap();
    assert!(output.status.success(), "a clean exit on SIGTERM");
    assert!(!quiver_tests::mcp_servers::alive(upstream[0]), "the upstream server outlived Quiver");
    drop(stdin);
    // The server's life is in the log at the default level, as plugins' is.
    let log = String::from_utf8(output.stderr).unwrap();
    for event in ["listed the MCP server's tools", "shutting down on a signal", "stopped the MCP server"] {
        assert!(log.contains(event), "no `{event}` in the log: {log}");
    }
}

/// Finding A1: with `--agent`, `call` goes through that agent's session,
/// as every face does: the profile's access ceiling refuses a write
/// before anything runs (the typed error a face gives), and a plugin the
/// profile does not show is not there; without `--agent` the operator
/// calls as before. An unknown profile is an error for every command.
#[test]
fn call_with_an_agent_goes_through_its_session() {
    use quiver_tests::servers::JsonServer;
    let server = JsonServer::start(&serde_json::json!({ "books": [{ "id": 1, "title": "Piranesi" }] }), "s3cret");
    let cli = Cli::new();
    std::fs::copy(fixtures::CONNECTOR, cli.plugins.path().join("connector.wasm")).unwrap();
    let token = cli.cache.path().join("token");
    std::fs::write(&token, "s3cret\n").unwrap();
    let config = cli.cache.path().join("quiver.toml");
    std::fs::write(
        &config,
        format!(
            "[connectors.books]\nplugin = \"fixture-connector\"\nbase_url = \"{}\"\naccess = \"write\"\n\
             auth = {{ kind = \"bearer\", token_file = \"{}\" }}\n\n\
             [agents.reader]\naccess = {{ books = \"read\" }}\n\n[agents.mathy]\nplugin_categories = [\"math\"]\n",
            server.url,
            token.display()
        ),
    )
    .unwrap();
    let config = config.to_str().unwrap();
    let create = r#"{"path": "/books", "body": {"title": "Kindred"}}"#;
    let titles = |agent: &[&str]| {
        let out =
            cli.run(&[&["--config", config], agent, &["call", "books", "read", r#"{"path": "/books"}"#]].concat());
        assert!(out.status.success(), "{}", stderr(&out));
        let answer: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
        let books: serde_json::Value = serde_json::from_str(answer["body"].as_str().unwrap()).unwrap();
        books.as_array().unwrap().iter().map(|b| b["title"].as_str().unwrap().to_owned()).collect::<Vec<_>>()
    };

    let out = cli.run(&["--config", config, "--agent", "reader", "call", "books", "create", create]);
    assert_eq!(out.status.code(), Some(1), "the reader's write ran: {}", stdout(&out));
    assert!(stderr(&out).contains("agent `reader`") && stderr(&out).contains("`write`"), "{}", stderr(&out));
    // The name models see goes the same way.
    let out = cli.run(&["--config", config, "--agent", "reader", "call", "books__create", create]);
    assert_eq!(out.status.code(), Some(1), "the reader's write ran: {}", stdout(&out));
    assert_eq!(titles(&["--agent", "reader"]), ["Piranesi"], "nothing was written, and reading is allowed");

    let out = cli.run(&["--config", config, "--agent", "mathy", "call", "misbehave", "echo", r#"{"text": "hi"}"#]);
    assert_eq!(out.status.code(), Some(1), "a plugin the profile hides was called: {}", stdout(&out));
    let out =
        cli.run(&["--config", config, "--agent", "mathy", "call", "calc", "evaluate", r#"{"expression": "6 * 7"}"#]);
    assert!(out.status.success(), "{}", stderr(&out));
    // Nor is its manifest shown to that agent.
    let out = cli.run(&["--config", config, "--agent", "mathy", "describe", "misbehave"]);
    assert_eq!(out.status.code(), Some(1), "a plugin the profile hides was described: {}", stdout(&out));
    assert!(stderr(&out).contains("no plugin named `misbehave`"), "{}", stderr(&out));

    let out = cli.run(&["--config", config, "call", "books", "create", create]);
    assert!(out.status.success(), "the operator's write: {}", stderr(&out));
    assert_eq!(titles(&[]), ["Piranesi", "Kindred"]);

    for command in [&["call", "calc", "evaluate", r#"{"expression": "1"}"#][..], &["list"], &["describe", "calc"]] {
        let out = cli.run(&[&["--config", config, "--agent", "nobody"], command].concat());
        assert_eq!(out.status.code(), Some(1), "{command:?} with an unknown profile: {}", stdout(&out));
        assert!(stderr(&out).contains("no agent profile `nobody`"), "{command:?}: {}", stderr(&out));
    }
}

/// Finding L3: what a guest wrote reaches the terminal escaped (its error,
/// its panic message, its log lines, its output): no escape sequence,
/// bell, carriage return, bidirectional override or C1 control is written
/// raw, and a log line cannot be split in two.
#[test]
fn guest_text_reaches_the_terminal_escaped() {
    let cli = Cli::new();
    let hostile = "\u{1b}[2J\u{1b}]0;pwned\u{7}\rforged\nWARN quiver: forged line\u{202e}\u{9b}31m";
    for action in ["missing", "panic", "log", "echo"] {
        let input = serde_json::json!({ "text": hostile }).to_string();
        let out = cli.run(&["call", "misbehave", action, &input]);
        for (stream, text) in [("stdout", stdout(&out)), ("stderr", stderr(&out))] {
            let raw: Vec<char> = text
                .chars()
                .filter(|&c| c != '\n' && quiver_contract::text::unsafe_char(c, quiver_contract::text::Shape::Lines))
                .collect();
            assert!(raw.is_empty(), "{action}: {stream} holds {raw:?}: {text}");
            assert!(
                !text.lines().any(|l| l.starts_with("WARN quiver: forged")),
                "{action}: {stream} forged a line: {text}"
            );
        }
    }
}

/// A serve option for the other transport is a usage error, not ignored
/// (clap counts `--stdio`'s default as given, so its `requires` let both
/// through).
#[test]
fn serve_refuses_an_option_of_the_other_transport() {
    let cli = Cli::new();
    let out = cli.run(&["serve", "--stdio", "--drain-seconds", "3"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("--drain-seconds applies to --http"), "{}", stderr(&out));
    let out = cli.run(&["serve", "--http", "127.0.0.1:0", "--metrics", "127.0.0.1:0"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("--metrics serves beside --stdio"), "{}", stderr(&out));
}
