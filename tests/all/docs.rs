//! The README's examples are real: its configurations parse, its plugin is
//! the bundled calc plugin, its demo database answers what it shows.

fn readme() -> String {
    std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../README.md")).unwrap()
}

/// The first fenced block of `language` after `heading`.
fn block_after(text: &str, heading: &str, language: &str) -> String {
    let rest = &text[text.find(heading).unwrap_or_else(|| panic!("no {heading}"))..];
    let start = rest.find(&format!("```{language}\n")).unwrap() + language.len() + 4;
    rest[start..start + rest[start..].find("```").unwrap()].to_owned()
}

#[test]
fn the_readme_configuration_example_is_valid() {
    let toml = block_after(&readme(), "### Configuration", "toml");
    let config = quiver::Config::parse(&toml, std::path::Path::new("/srv/quiver")).unwrap();
    assert_eq!(config.plugins_dir.as_deref(), Some(std::path::Path::new("/srv/quiver/plugins")));
    assert!(config.agents.contains_key("coder"));
    config.settings_for("weather").unwrap();
}

#[test]
fn the_readme_plugin_is_the_calc_plugin() {
    let shown = block_after(&readme(), "A complete plugin", "rust");
    let source = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../plugins/calc/src/lib.rs")).unwrap();
    assert!(source.contains(shown.trim()), "README and plugins/calc/src/lib.rs differ");
}

/// Build the plugin whose `Cargo.toml` and `src/lib.rs` are `manifest` and
/// `source` in a temporary folder outside this workspace, as an author
/// would, with the SDK patched in by path (it is not on crates.io yet), and
/// return the component's bytes.
fn build_outside_the_workspace(manifest: &str, source: &str, wasm_name: &str) -> Vec<u8> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_owned();
    let project = tempfile::tempdir().unwrap();
    std::fs::write(project.path().join("Cargo.toml"), manifest).unwrap();
    std::fs::create_dir(project.path().join("src")).unwrap();
    std::fs::write(project.path().join("src/lib.rs"), source).unwrap();
    // Its own target folder (the outer build holds the workspace's lock),
    // kept between runs so only the first build compiles the dependencies.
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(std::path::PathBuf::from)
        .map(|t| if t.is_absolute() { t } else { root.join(t) })
        .unwrap_or_else(|| root.join("target"))
        .join("readme-plugins");
    let sdk = root.join("sdk");
    let mut cargo = std::process::Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    cargo
        .current_dir(project.path())
        .args(["build", "--quiet", "--release", "--target", "wasm32-wasip2", "--target-dir"])
        .arg(&target)
        .arg("--config")
        .arg(format!("patch.crates-io.quiver-sdk.path={:?}", sdk.display().to_string()));
    for var in ["CARGO_ENCODED_RUSTFLAGS", "RUSTFLAGS", "RUSTC_WORKSPACE_WRAPPER", "RUSTC_WRAPPER", "CARGO_TARGET_DIR"]
    {
        cargo.env_remove(var);
    }
    let output = cargo.output().expect("run cargo");
    assert!(output.status.success(), "the example does not build:\n{}", String::from_utf8_lossy(&output.stderr));
    std::fs::read(target.join("wasm32-wasip2/release").join(wasm_name)).unwrap()
}

/// The README's plugin builds from a folder of its own exactly as printed
/// (both blocks), loads, and answers; so does the SDK README's.
#[tokio::test]
async fn the_readme_plugins_build_outside_the_workspace() {
    let readme = readme();
    let manifest = block_after(&readme, "A complete plugin", "toml");
    let source = block_after(&readme, "A complete plugin", "rust");
    let calc = build_outside_the_workspace(&manifest, &source, "calc.wasm");

    let sdk_readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../sdk/README.md")).unwrap();
    let manifest = block_after(&sdk_readme, "A plugin's `Cargo.toml`", "toml");
    let source = block_after(&sdk_readme, "its `src/lib.rs`", "rust");
    let temperature = build_outside_the_workspace(&manifest, &source, "temperature.wasm");

    let t = quiver_tests::TestHost::builder().file("calc.wasm", calc).file("temperature.wasm", temperature).build();
    let value = t.host.call("calc", "evaluate", r#"{"expression":"6 * (3 + 4)"}"#).await.unwrap();
    assert_eq!(value, serde_json::json!({"value": 42}));
    let value = t.host.call("temperature", "celsius", r#"{"degrees":212}"#).await.unwrap();
    assert_eq!(value, serde_json::json!({"degrees": 100.0}));
    let error = t.host.call("temperature", "celsius", r#"{"degrees":-500}"#).await.unwrap_err().to_string();
    assert!(error.contains("below absolute zero"), "{error}");
}

/// The connectors example parses, and without `BOOKS_TOKEN` in the
/// environment its error names the section and the variable.
#[test]
fn the_readme_connector_configuration_is_valid() {
    let toml = block_after(&readme(), "## Connectors", "toml");
    let config = quiver::Config::parse(&toml, std::path::Path::new("/srv/quiver")).unwrap();
    assert_eq!(config.connectors["books"].base_url, "https://books.example.com/api");
    if std::env::var_os("BOOKS_TOKEN").is_none() {
        let error = config.connector_sources().unwrap_err().to_string();
        assert!(error.contains("[connectors.books]") && error.contains("BOOKS_TOKEN"), "{error}");
    }
}

/// The OpenAPI example reads the real Petstore document it names: its
/// selection holds, and without `PETSTORE_TOKEN` the error names it.
#[test]
fn the_readme_openapi_connector_reads_its_document() {
    let toml = block_after(&readme(), "### OpenAPI connectors", "toml");
    let documents = quiver_tests::servers::Prism::example("3.0/json");
    let config = quiver::Config::parse(&toml, &documents).unwrap();
    assert_eq!(config.connectors["pets"].openapi.as_deref(), Some(std::path::Path::new("petstore.json")));
    if std::env::var_os("PETSTORE_TOKEN").is_none() {
        let error = config.connector_sources().unwrap_err().to_string();
        assert!(error.contains("[connectors.pets]") && error.contains("PETSTORE_TOKEN"), "{error}");
    }
}

#[test]
fn the_readme_database_configuration_is_valid() {
    let toml = block_after(&readme(), "**A worked configuration**", "toml");
    let config = quiver::Config::parse(&toml, std::path::Path::new("/srv/quiver")).unwrap();
    assert_eq!(config.databases.keys().collect::<Vec<_>>(), ["shop", "stock"]);
    for (name, raw) in &config.databases {
        // The password variable is not set here: resolve everything else.
        let raw = quiver::sandbox::sql::RawDatabase { password_env: None, ..raw.clone() };
        let settings = quiver::sandbox::sql::DatabaseSettings::resolve(name, &raw, std::path::Path::new("/srv/quiver"));
        settings.unwrap_or_else(|e| panic!("[databases.{name}]: {e}"));
    }
    assert_eq!(config.databases["shop"].password_env.as_deref(), Some("SHOP_DB_PASSWORD"));
}

/// The demo's commands and outputs, run on the demo database.
#[tokio::test]
async fn the_readme_demo_queries_answer_as_shown() {
    let block = block_after(&readme(), "**The demo.**", "text");
    let lines: Vec<&str> = block.lines().collect();
    let t = quiver_tests::TestHost::builder().demo().build();
    for pair in lines.chunks(2) {
        let input = pair[0].split_once("query '").unwrap().1.trim_end_matches('\'');
        let shown = pair[1];
        match t.host.call("chinook", "query", input).await {
            Ok(value) => assert_eq!(value, serde_json::from_str::<serde_json::Value>(shown).unwrap()),
            Err(error) => assert_eq!(format!("error: {error}"), shown),
        }
    }
}

/// The upstream MCP example is an `mcpServers` file Quiver reads; without
/// `LEDGER_TOKEN` the error names the server, the header and the variable.
#[test]
fn the_readme_mcp_servers_file_is_valid() {
    let json = block_after(&readme(), "## Upstream MCP servers", "json");
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("servers.json");
    std::fs::write(&file, json).unwrap();
    let mut config = quiver::Config::default();
    config.add_mcp_config(&file).unwrap();
    assert_eq!(config.mcp_servers.keys().collect::<Vec<_>>(), ["files", "ledger", "memory", "time"]);
    assert_eq!(config.mcp_servers["ledger"].timeout, Some(20.0));
    if std::env::var_os("LEDGER_TOKEN").is_none() {
        let error = config.server_specs().unwrap_err().to_string();
        assert!(error.contains("[mcp_servers.ledger]") && error.contains("LEDGER_TOKEN"), "{error}");
    }
}

/// Every test the README's "Bad input and faults" table names exists, so
/// the table cannot drift from what is tested.
#[test]
fn the_readme_fault_table_names_real_tests() {
    let readme = readme();
    let start = readme.find("## Bad input and faults").expect("the section");
    let section = &readme[start..start + readme[start..].find("\n## ").unwrap_or(readme.len() - start)];
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut sources = String::new();
    for dir in ["tests/all", "host/tests", "host/src"] {
        let mut stack = vec![root.join(dir)];
        while let Some(dir) = stack.pop() {
            for entry in std::fs::read_dir(&dir).unwrap().flatten() {
                let path = entry.path();
                if path.is_dir() {
                    stack.push(path);
                } else if path.extension().is_some_and(|e| e == "rs") {
                    sources.push_str(&std::fs::read_to_string(&path).unwrap());
                }
            }
        }
    }
    let mut named = 0;
    for row in section.lines().filter(|l| l.starts_with("| ") && !l.starts_with("| case") && !l.starts_with("|---")) {
        let tests = row.trim_end_matches('|').rsplit('|').next().unwrap();
        for test in tests.split(',').map(|t| t.trim().trim_matches('`')) {
            assert!(sources.contains(&format!("fn {test}(")), "the README names `{test}`, which is not a test");
            named += 1;
        }
    }
    assert!(named >= 19, "only {named} tests named");
}
