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
