//! Progressive disclosure through the session API: each kind walked from
//! stub to discover to execute, every mode, selection, and the errors a
//! model can cause.

use serde_json::{Value, json};

use quiver::{ErrorKind, Session};
use quiver_tests::{TestHost, data, http_server};

/// Everything at once: bundled tools, a connector, a database, skills, an MCP list.
fn full_host(config: &str) -> TestHost {
    TestHost::every_kind(config)
}

async fn ok(session: &mut Session, name: &str, args: Value) -> Value {
    let outcome = session.call(name, args.clone()).await;
    assert!(!outcome.is_error, "{name}({args}) failed: {}", outcome.text);
    outcome.value().cloned().unwrap()
}

async fn err(session: &mut Session, name: &str, args: Value) -> quiver::Error {
    let outcome = session.call(name, args.clone()).await;
    assert!(outcome.is_error, "{name}({args}) should fail, got {}", outcome.text);
    assert!(!outcome.text.is_empty());
    outcome.error.unwrap()
}

fn valid_name(name: &str) -> bool {
    (1..=64).contains(&name.len()) && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn progressive_mode_offers_one_meta_tool_per_kind() {
    let t = full_host("");
    let mut session = t.host.session(None).unwrap();
    let turn = session.tools_for_turn("what is 6 times 7?").await;
    let names = turn.names();
    for meta in ["read_skill", "connector", "database", "mcp", "request_tools", "search_tools"] {
        assert!(names.contains(&meta), "{meta} missing from {names:?}");
    }
    assert!(names.iter().all(|n| valid_name(n)), "{names:?}");
    // 19 built-in tools > threshold 12: at most 6 resident, chosen for the query.
    let resident: Vec<&&str> = names.iter().filter(|n| n.contains("__")).collect();
    assert!(!resident.is_empty() && resident.len() <= 6, "{resident:?}");
    assert!(resident.iter().any(|n| **n == "calc__evaluate"), "{resident:?}");

    // Each meta-tool's name parameter is an enum of the valid names.
    let connector = turn.tools.iter().find(|t| t.name == "connector").unwrap();
    assert_eq!(connector.input_schema["properties"]["connector"]["enum"], json!(["fixture-connector"]));
    assert!(connector.description.contains("- fixture-connector: "), "{}", connector.description);
    let mcp = turn.tools.iter().find(|t| t.name == "mcp").unwrap();
    assert!(mcp.description.contains("- weather (3 tools: get_forecast, get_alerts, subscribe_alerts)"));

    // The Tier-1 text is deterministic, does not change with the turn, and names every kind.
    let prompt = session.system_prompt();
    assert_eq!(prompt, t.host.session(None).unwrap().system_prompt());
    session.tools_for_turn("make a slug").await;
    assert_eq!(prompt, session.system_prompt());
    for needle in [
        "## Skills (read_skill)",
        "- pdf-tools: ",
        "## Connectors",
        "## Databases",
        "## MCP servers",
        "- weather (3 tools: ",
    ] {
        assert!(prompt.contains(needle), "{needle} missing from:\n{prompt}");
    }
    // The broken MCP list is reported, not served.
    assert!(t.host.catalog().rejected().iter().any(|r| r.error.kind() == ErrorKind::InvalidMcpList));

    // The three provider formats.
    assert_eq!(turn.openai()[0]["type"], "function");
    assert!(turn.anthropic()[0].get("input_schema").is_some());
    assert!(turn.mcp()[0].get("inputSchema").is_some());
}

/// An MCP server named like a plugin would put two tools under one name
/// (`calc__evaluate`): the server is refused and reported, and the plugin
/// keeps its names.
#[tokio::test]
async fn an_mcp_server_named_like_a_plugin_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let tool =
        json!([{ "name": "evaluate", "description": "Not the calculator.", "inputSchema": { "type": "object" } }]);
    std::fs::write(dir.path().join("calc.json"), tool.to_string()).unwrap();
    let t = TestHost::builder().bundled().mcp(dir.path().to_owned()).build();
    let catalog = t.host.catalog();
    let evaluate: Vec<_> = catalog.tools().iter().filter(|e| e.name.contains("evaluate")).collect();
    assert_eq!(evaluate.len(), 1, "{evaluate:?}");
    assert_eq!((evaluate[0].name.as_str(), evaluate[0].origin.as_str()), ("calc__evaluate", "calc"));
    assert!(catalog.mcp_server("calc").is_none());
    let rejection = catalog.rejected().iter().find(|r| r.origin.ends_with("calc.json")).expect("reported");
    assert_eq!(rejection.error.kind(), ErrorKind::DuplicateName, "{}", rejection.error);
}

/// Two tools of a server whose names clean to one model-facing name
/// (`create.customer`, `create_customer`): the one that needed no cleaning
/// keeps it, whatever the order; the other is left out and reported, not
/// served under a hashed name, and the plugins' names are untouched.
#[tokio::test]
async fn tools_whose_names_clean_to_one_are_reported() {
    let dir = tempfile::tempdir().unwrap();
    let tool = |name: &str| json!({ "name": name, "description": name, "inputSchema": { "type": "object" } });
    let tools = json!([tool("create.customer"), tool("create_customer"), tool("list")]);
    std::fs::write(dir.path().join("shop.json"), tools.to_string()).unwrap();
    let t = TestHost::builder().bundled().mcp(dir.path().to_owned()).build();
    let catalog = t.host.catalog();
    let served: Vec<_> = catalog.tools_of("shop").iter().map(|e| (e.name.as_str(), e.action.as_str())).collect();
    assert_eq!(served, [("shop__create_customer", "create_customer"), ("shop__list", "list")]);
    assert_eq!(catalog.model_name("calc", "evaluate"), Some("calc__evaluate"));
    let rejection =
        catalog.rejected().iter().find(|r| r.origin.ends_with("shop.json: create.customer")).expect("reported");
    assert_eq!(rejection.error.kind(), ErrorKind::DuplicateName, "{}", rejection.error);
    let reason = rejection.error.to_string();
    assert!(reason.contains("`shop__create_customer` is already used by MCP server `shop`'s tool `create_customer`"));
}

#[tokio::test]
async fn skills_walk_from_stub_to_files() {
    let t = full_host("");
    let mut s = t.host.session(None).unwrap();
    let read = ok(&mut s, "read_skill", json!({ "name": "pdf-tools" })).await;
    assert!(read["instructions"].as_str().unwrap().starts_with("# Working with PDFs"));
    assert_eq!(read["files"], json!(["reference/tables.md", "scripts/extract.py"]));
    let file = ok(&mut s, "read_skill", json!({ "name": "pdf-tools", "file": "reference/tables.md" })).await;
    assert_eq!(file["content"], "Tables are detected by aligned columns.\n");

    let escape = err(&mut s, "read_skill", json!({ "name": "pdf-tools", "file": "../release-notes/SKILL.md" })).await;
    assert_eq!(escape.kind(), ErrorKind::InvalidArguments);
    assert!(escape.to_string().contains("outside"), "{escape}");
    let unknown = err(&mut s, "read_skill", json!({ "name": "nope" })).await;
    assert!(unknown.to_string().contains("pdf-tools, release-notes"), "{unknown}");
}

#[tokio::test]
async fn malformed_skills_are_rejected_with_the_reason() {
    let t = TestHost::builder().skills(data("broken-skills")).build();
    let rejected = t.host.catalog().rejected().to_vec();
    assert_eq!(rejected.len(), 1);
    assert_eq!(rejected[0].error.kind(), ErrorKind::InvalidSkill);
    assert!(rejected[0].error.to_string().contains("Bad_Name"), "{}", rejected[0].error);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connectors_walk_from_stub_to_execute() {
    let server = http_server();
    let t = full_host(&format!("[plugins.fixture-connector]\nallow_http = [\"{server}\"]"));
    let mut s = t.host.session(None).unwrap();
    let discovered =
        ok(&mut s, "connector", json!({ "subcommand": "discover", "connector": "fixture-connector" })).await;
    assert_eq!(discovered["actions"][0]["name"], "fetch");
    assert_eq!(discovered["actions"][0]["input_schema"]["required"], json!(["url"]));
    let out = ok(
        &mut s,
        "connector",
        json!({ "subcommand": "execute", "connector": "fixture-connector", "action": "fetch",
                "parameters": { "url": format!("{server}/x") } }),
    )
    .await;
    assert_eq!(out["status"], 200);

    let missing = err(&mut s, "connector", json!({ "subcommand": "execute", "connector": "fixture-connector" })).await;
    assert!(missing.to_string().contains("`execute` needs `action`"), "{missing}");
    let wrong = err(&mut s, "connector", json!({ "subcommand": "delete", "connector": "fixture-connector" })).await;
    assert_eq!(wrong.kind(), ErrorKind::InvalidArguments);
    let nope = err(&mut s, "connector", json!({ "subcommand": "discover", "connector": "nope" })).await;
    assert!(nope.to_string().contains("fixture-connector"), "{nope}");
    // Not unlocked: the flattened name is not callable in progressive mode.
    let direct = err(&mut s, "fixture-connector__fetch", json!({ "url": server })).await;
    assert_eq!(direct.kind(), ErrorKind::UnknownTool);
}

#[tokio::test]
async fn databases_walk_from_stub_to_query() {
    let t = full_host("");
    let mut s = t.host.session(None).unwrap();
    assert!(s.system_prompt().contains("- shop: A shop database with customers and orders. Tables: see list_tables"));
    let tables = ok(&mut s, "database", json!({ "subcommand": "list_tables", "database": "shop" })).await;
    assert_eq!(tables.as_array().unwrap().len(), 2);
    // Once listed, the tables are part of the stub.
    assert!(s.system_prompt().contains("Tables (2): customers, orders"), "{}", s.system_prompt());
    let one = ok(&mut s, "database", json!({ "subcommand": "discover", "database": "shop", "table": "orders" })).await;
    assert_eq!(one["columns"][1]["name"], "customer_id");
    let all = ok(&mut s, "database", json!({ "subcommand": "discover", "database": "shop" })).await;
    assert_eq!(all.as_array().unwrap().len(), 2);
    let missing = err(&mut s, "database", json!({ "subcommand": "query", "database": "shop" })).await;
    assert!(missing.to_string().contains("`query` needs `sql`"), "{missing}");
    // No sql backend yet: the adapter's typed error reaches the model.
    let query = err(&mut s, "database", json!({ "subcommand": "query", "database": "shop", "sql": "select 1" })).await;
    assert!(matches!(query, quiver::Error::Guest { kind: quiver::GuestErrorKind::Unavailable, .. }), "{query}");
}

#[tokio::test]
async fn mcp_servers_are_discoverable_but_read_only() {
    let t = full_host("");
    let mut s = t.host.session(None).unwrap();
    let tools = ok(&mut s, "mcp", json!({ "subcommand": "discover", "server": "weather" })).await;
    assert_eq!(tools.as_array().unwrap().len(), 3);
    assert!(tools[1].get("_meta").is_none() && tools[1].get("icons").is_none());
    let one = ok(&mut s, "mcp", json!({ "subcommand": "discover", "server": "weather", "tool": "get_alerts" })).await;
    assert_eq!(one[0]["input_schema"]["required"], json!(["region"]));
    let call = err(&mut s, "mcp", json!({ "subcommand": "call", "server": "weather", "tool": "get_alerts" })).await;
    assert_eq!(call.kind(), ErrorKind::NotCallable);
    let missing = err(&mut s, "mcp", json!({ "subcommand": "call", "server": "weather" })).await;
    assert!(missing.to_string().contains("`call` needs `tool`"), "{missing}");
}

#[tokio::test]
async fn request_tools_unlocks_tools_and_the_session_resumes() {
    let t = full_host("");
    let mut s = t.host.session(None).unwrap();
    s.tools_for_turn("make a slug of this title").await;
    assert!(!s.state().resident.contains("codec__uuid"), "{:?}", s.state().resident);
    let before = err(&mut s, "codec__uuid", json!({})).await;
    assert_eq!(before.kind(), ErrorKind::UnknownTool);
    assert!(before.to_string().contains("request_tools"), "{before}");

    let defs = ok(&mut s, "request_tools", json!({ "tool_names": ["codec__uuid", "text__slugify"] })).await;
    assert_eq!(defs[0]["name"], "codec__uuid");
    assert!(defs[0]["inputSchema"]["properties"].get("version").is_some());
    let slug = ok(&mut s, "text__slugify", json!({ "text": "Hello World" })).await;
    assert_eq!(slug["text"], "hello-world");
    // The unlocked tools are offered in the following turns.
    assert!(s.tools_for_turn("anything").await.names().contains(&"codec__uuid"));

    let saved = serde_json::to_string(s.state()).unwrap();
    let mut resumed = t.host.resume(serde_json::from_str(&saved).unwrap()).unwrap();
    ok(&mut resumed, "codec__uuid", json!({})).await;

    let unknown = err(&mut s, "request_tools", json!({ "tool_names": ["no_such_tool"] })).await;
    assert!(unknown.to_string().contains("no_such_tool"), "{unknown}");
    let empty = err(&mut s, "request_tools", json!({ "tool_names": [] })).await;
    assert_eq!(empty.kind(), ErrorKind::InvalidArguments);
}

#[tokio::test]
async fn search_tools_answers_at_three_levels_and_unlocks_results() {
    let t = full_host("");
    let mut s = t.host.session(None).unwrap();
    let names = ok(&mut s, "search_tools", json!({ "query": "generate a uuid", "detail": "names", "limit": 3 })).await;
    assert_eq!(names[0]["name"], "codec__uuid");
    assert!(names[0].get("summary").is_none());
    let summary = ok(&mut s, "search_tools", json!({ "query": "weather forecast for a city" })).await;
    assert_eq!(summary[0]["name"], "weather__get_forecast");
    assert_eq!(summary[0]["kind"], "mcp");
    assert!(summary[0]["summary"].as_str().unwrap().starts_with("Weather forecast"));
    let full = ok(&mut s, "search_tools", json!({ "query": "slug for a URL", "detail": "full", "limit": 1 })).await;
    assert_eq!(full[0]["name"], "text__slugify");
    assert!(full[0]["definition"]["inputSchema"]["properties"].get("text").is_some());
    // What search returned can be called directly now.
    ok(&mut s, "text__slugify", json!({ "text": "A b" })).await;
    let skills = ok(&mut s, "search_tools", json!({ "query": "extract tables from a pdf", "limit": 1 })).await;
    assert_eq!(skills[0]["kind"], "skill");

    let bad = err(&mut s, "search_tools", json!({ "query": "x", "limit": 50 })).await;
    assert_eq!(bad.kind(), ErrorKind::InvalidArguments);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn legacy_and_inline_modes_flatten_everything() {
    let t = full_host(
        "[agents.flat]\nconnector_tool_mode = \"legacy\"\ndatabase_tool_mode = \"legacy\"\nmcp_tool_mode = \"legacy\"\nskill_tool_mode = \"inline\"",
    );
    let mut s = t.host.session(Some("flat")).unwrap();
    let turn = s.tools_for_turn("hello").await;
    let names = turn.names();
    for gone in ["connector", "database", "mcp", "read_skill"] {
        assert!(!names.contains(&gone), "{gone} should not be offered: {names:?}");
    }
    for flat in [
        "fixture-connector__fetch",
        "shop__list_tables",
        "shop__describe_table",
        "shop__query",
        "weather__get_forecast",
    ] {
        assert!(names.contains(&flat), "{flat} missing: {names:?}");
    }
    let tables = ok(&mut s, "shop__list_tables", json!({})).await;
    assert_eq!(tables.as_array().unwrap().len(), 2);
    let mcp = err(&mut s, "weather__get_alerts", json!({ "region": "FR" })).await;
    assert_eq!(mcp.kind(), ErrorKind::NotCallable);
    let prompt = s.system_prompt();
    assert!(prompt.contains("## Skill: pdf-tools") && prompt.contains("Never guess content"), "{prompt}");
    assert!(!prompt.contains("(read_skill)"));
}

#[tokio::test]
async fn a_profile_can_restrict_categories() {
    let t = full_host("[agents.calc-only]\ncategories = [\"builtin\"]\nselection_threshold = 100");
    let mut s = t.host.session(Some("calc-only")).unwrap();
    let turn = s.tools_for_turn("weather").await;
    let names = turn.names();
    assert!(names.iter().all(|n| !["connector", "database", "mcp", "read_skill"].contains(n)), "{names:?}");
    assert!(names.contains(&"calc__evaluate"));
    let error = err(&mut s, "connector", json!({ "subcommand": "discover", "connector": "fixture-connector" })).await;
    assert_eq!(error.kind(), ErrorKind::UnknownTool);
    let hits = ok(&mut s, "search_tools", json!({ "query": "weather forecast" })).await;
    assert!(hits.as_array().unwrap().iter().all(|h| h["kind"] == "builtin"), "{hits}");
}

/// `plugin_categories` narrows the plugins an agent sees to those that
/// declare one of them, on every path: the turn, the listing, search,
/// `request_tools`, direct calls and the connector/database meta-tools;
/// skills and MCP servers declare none and stay.
#[tokio::test]
async fn a_profile_can_restrict_plugins_by_their_declared_categories() {
    let t = full_host("[agents.clock]\nplugin_categories = [\"math\", \"time\"]\nselection_threshold = 100");
    let mut s = t.host.session(Some("clock")).unwrap();
    let turn = s.tools_for_turn("anything").await;
    let names = turn.names();
    let plugin_tools: Vec<&str> = names.iter().copied().filter(|n| n.contains("__")).collect();
    assert!(plugin_tools.contains(&"calc__evaluate") && plugin_tools.contains(&"datetime__now"), "{names:?}");
    assert!(plugin_tools.iter().all(|n| n.starts_with("calc__") || n.starts_with("datetime__")), "{names:?}");
    assert!(!names.contains(&"connector") && !names.contains(&"database"), "no plugin of theirs matches: {names:?}");
    assert!(names.contains(&"mcp") && names.contains(&"read_skill"), "{names:?}");
    let listed: Vec<String> = s.listing().tools().map(|e| e.name.clone()).collect();
    assert!(listed.iter().all(|n| !n.starts_with("text__") && !n.starts_with("fixture-connector__")), "{listed:?}");

    assert_eq!(err(&mut s, "text__slugify", json!({ "text": "A b" })).await.kind(), ErrorKind::UnknownTool);
    let error = err(&mut s, "request_tools", json!({ "tool_names": ["text__slugify"] })).await;
    assert_eq!(error.kind(), ErrorKind::InvalidArguments);
    let error = err(&mut s, "connector", json!({ "subcommand": "discover", "connector": "fixture-connector" })).await;
    assert_eq!(error.kind(), ErrorKind::UnknownTool);
    let hits = ok(&mut s, "search_tools", json!({ "query": "slugify text change case" })).await;
    assert!(hits.as_array().unwrap().iter().all(|h| !h["name"].as_str().unwrap().starts_with("text__")), "{hits}");
    let value = ok(&mut s, "calc__evaluate", json!({ "expression": "6 * 7" })).await;
    assert_eq!(value["value"], 42);
}

#[tokio::test]
async fn selection_picks_relevant_tools_and_keeps_pinned_ones() {
    // No prompt budget: every kind at once passes the default one, and
    // this test reads the registry's lines (the budget is `scale`'s).
    let t = full_host("[disclosure]\nselection_max = 3\npinned = [\"json__query\"]\nprompt_tokens = 0");
    let mut s = t.host.session(None).unwrap();
    let turn = s.tools_for_turn("convert 2024-06-01T12:00Z to Tokyo time zone").await;
    let resident: Vec<&str> = turn.names().into_iter().filter(|n| n.contains("__")).collect();
    assert!(resident.contains(&"datetime__convert"), "{resident:?}");
    assert!(resident.contains(&"json__query"), "pinned: {resident:?}");
    assert!(resident.len() <= 4, "{resident:?}");
    let request = turn.tools.iter().find(|t| t.name == "request_tools").unwrap();
    assert!(!request.description.contains("- datetime__convert:"), "resident tools are not in the registry");
    assert!(request.description.contains("- calc__evaluate: "));
    // Under the threshold, every built-in tool is resident and request_tools disappears.
    let small = TestHost::builder().bundled().config("[disclosure]\nselection_threshold = 50").build();
    let turn = small.host.session(None).unwrap().tools_for_turn("x").await;
    assert!(!turn.names().contains(&"request_tools"));
    assert_eq!(turn.names().iter().filter(|n| n.contains("__")).count(), 19);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_llm_selector_is_used_and_a_failing_one_falls_back() {
    let good = quiver_tests::chat_server(200, "Sure: [\"codec__hash\", \"not_a_tool\"]");
    let t = TestHost::builder()
        .bundled()
        .config(&format!("[selector]\nkind = \"llm\"\nurl = \"{good}\"\nmodel = \"m\""))
        .build();
    let turn = t.host.session(None).unwrap().tools_for_turn("sha256 of abc").await;
    let resident: Vec<&str> = turn.names().into_iter().filter(|n| n.contains("__")).collect();
    assert_eq!(resident, ["codec__hash"]);

    for (status, content) in [(500, "oops"), (200, "I cannot decide")] {
        let url = quiver_tests::chat_server(status, content);
        let t = TestHost::builder()
            .bundled()
            .config(&format!("[selector]\nkind = \"llm\"\nurl = \"{url}\"\nmodel = \"m\""))
            .build();
        let turn = t.host.session(None).unwrap().tools_for_turn("sha256 of abc").await;
        assert_eq!(turn.names().iter().filter(|n| n.contains("__")).count(), 19, "falls back to every tool");
    }
}

#[tokio::test]
async fn unknown_names_and_bad_arguments_are_model_readable_errors() {
    let t = full_host("");
    let mut s = t.host.session(None).unwrap();
    let unknown = err(&mut s, "delete_everything", json!({})).await;
    assert_eq!(unknown.kind(), ErrorKind::UnknownTool);
    assert!(
        unknown.to_string().contains("read_skill, connector, database, mcp, request_tools, search_tools"),
        "{unknown}"
    );
    let no_subcommand = err(&mut s, "database", json!({ "database": "shop" })).await;
    assert!(no_subcommand.to_string().contains("subcommand"), "{no_subcommand}");
    let extra = err(&mut s, "mcp", json!({ "subcommand": "discover", "server": "weather", "x": 1 })).await;
    assert_eq!(extra.kind(), ErrorKind::InvalidArguments);
    let not_object = err(&mut s, "read_skill", json!([1, 2])).await;
    assert_eq!(not_object.kind(), ErrorKind::InvalidArguments);
}

/// The text a model reads for `name(args)`, which must fail.
async fn failure_text(session: &mut Session, name: &str, args: Value) -> String {
    let outcome = session.call(name, args.clone()).await;
    assert!(outcome.is_error, "{name}({args}) should fail, got {}", outcome.text);
    outcome.text
}

/// What a model reads when it gets a call wrong, as golden strings: the
/// tool by its model-facing name, the mistake in plain words (a wrong enum
/// value lists the allowed ones), and what the model can do next (the
/// schema, quoted or the exact call that returns it); never a shell
/// command or a setting only the operator can change.
#[tokio::test]
async fn failures_read_as_the_model_needs_them() {
    let t = TestHost::builder().bundled().build();
    let mut s = t.host.session(None).unwrap();
    ok(&mut s, "request_tools", json!({ "tool_names": ["codec__hash", "calc__evaluate"] })).await;

    let text = failure_text(&mut s, "codec__hash", json!({ "data": "abc", "algorithm": "sha3" })).await;
    assert_eq!(
        text,
        "The arguments of `codec__hash` do not fit its input schema: at /algorithm: \"sha3\" is not one of the \
         allowed values: \"sha256\", \"sha512\", \"sha1\", \"md5\", \"blake3\". Get its input schema with \
         request_tools {\"tool_names\": [\"codec__hash\"]} and call it again."
    );

    let schema = serde_json::to_string(&s.definition("calc__evaluate").await.unwrap().input_schema).unwrap();
    let text = failure_text(&mut s, "calc__evaluate", json!({ "expression": 7 })).await;
    assert_eq!(
        text,
        format!(
            "The arguments of `calc__evaluate` do not fit its input schema: at /expression: 7 is not of type \
             \"string\". Its input schema: {schema}"
        )
    );

    let text = failure_text(&mut s, "calc__evaluate", json!({ "expression": "1 +" })).await;
    assert!(text.starts_with("`calc__evaluate` failed (invalid input): "), "{text}");
    assert!(text.ends_with(". Correct the arguments and call it again."), "{text}");
    assert!(!text.contains("quiver ") && !text.contains("calc.evaluate"), "{text}");
}
