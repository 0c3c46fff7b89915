//! The documentation's examples are real. The README is the front page: its
//! quickstart's `quiver.toml` parses and serves its API and database, and
//! its `mcpServers` files are read as the host reads them. The book under
//! `docs/src/` holds the rest: its configurations parse, its plugin is the
//! bundled calc plugin and builds outside the workspace, its demo database
//! answers what it shows, and the fault table, in
//! `docs/src/operators/faults.md`, names only tests that exist. Every
//! relative link of the README and the book points at a file that exists
//! (and at a heading of it, when it names one), and every chapter is listed
//! in `docs/src/SUMMARY.md`.

use std::path::{Path, PathBuf};

/// The repository's root.
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_owned()
}

fn readme() -> String {
    std::fs::read_to_string(root().join("README.md")).unwrap()
}

/// A chapter of the book: `docs/src/<path>`.
fn book(path: &str) -> String {
    let file = root().join("docs/src").join(path);
    std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()))
}

/// The first fenced block of `language` after `heading`.
fn block_after(text: &str, heading: &str, language: &str) -> String {
    let rest = &text[text.find(heading).unwrap_or_else(|| panic!("no {heading}"))..];
    let start = rest.find(&format!("```{language}\n")).unwrap() + language.len() + 4;
    rest[start..start + rest[start..].find("```").unwrap()].to_owned()
}

/// The text from the heading `heading` (`## Title`) to the next heading of
/// its level or above, or to the end.
fn section<'a>(text: &'a str, heading: &str) -> &'a str {
    let start = text.find(heading).unwrap_or_else(|| panic!("no {heading}"));
    let level = heading.chars().take_while(|c| *c == '#').count();
    let rest = &text[start + heading.len()..];
    let mut fenced = false;
    let mut offset = 0;
    for line in rest.split_inclusive('\n') {
        fenced ^= line.starts_with("```");
        let hashes = line.chars().take_while(|c| *c == '#').count();
        if !fenced && (1..=level).contains(&hashes) && line[hashes..].starts_with(' ') {
            return &text[start..start + heading.len() + offset];
        }
        offset += line.len();
    }
    &text[start..]
}

#[test]
fn the_configuration_example_is_valid() {
    let toml = block_after(&book("operators/configuration.md"), "# Configuration", "toml");
    let config = quiver::Config::parse(&toml, Path::new("/srv/quiver")).unwrap();
    assert_eq!(config.plugins_dir.as_deref(), Some(Path::new("/srv/quiver/plugins")));
    assert!(config.agents.contains_key("coder"));
    config.settings_for("weather").unwrap();
}

/// The registries chapter's configuration parses; its pinned entry needs
/// nothing more, its tag is pinned only through the lock file, and its
/// password comes from the variable it names.
#[test]
fn the_registries_example_is_valid() {
    let toml = block_after(&book("operators/registries.md"), "# Plugins from OCI registries", "toml");
    let config = quiver::Config::parse(&toml, Path::new("/srv/quiver")).unwrap();
    let [pinned, tag] = config.oci.as_slice() else { panic!("two entries: {:?}", config.oci) };
    let none = quiver::load::oci::OciLock::default();
    // The chapter's key is a path beside its configuration: read when the entry resolves.
    assert_eq!(tag.key.as_deref(), Some(Path::new("/srv/quiver/keys/acme.pub")));
    assert!(pinned.resolve(&none).is_ok());
    assert!(tag.is_tag() && tag.resolve(&none).unwrap_err().to_string().contains("quiver oci resolve"));
    assert_eq!(tag.password_env.as_deref(), Some("REGISTRY_PASSWORD"));
    assert_eq!(config.oci_lock_path(), Path::new("/srv/quiver/quiver.lock"));
}

/// The production chapter's shared-session table parses, and makes a
/// store (nothing is connected until a session is used).
#[test]
fn the_shared_sessions_example_is_valid() {
    let toml = block_after(&book("operators/production.md"), "## Sessions shared by replicas", "toml");
    let config = quiver::Config::parse(&toml, Path::new("/srv/quiver")).unwrap();
    assert_eq!(config.sessions.password_env.as_deref(), Some("REDIS_PASSWORD"));
    let env = |var: &str| (var == "REDIS_PASSWORD").then(|| "from-a-secret".to_owned());
    assert!(quiver::faces::shared::SharedSessions::new(&config.sessions, &env).unwrap().is_some());
}

#[test]
fn the_book_plugin_is_the_calc_plugin() {
    let shown = block_after(&book("plugin-authors/writing-a-plugin.md"), "A complete plugin", "rust");
    let source = std::fs::read_to_string(root().join("plugins/calc/src/lib.rs")).unwrap();
    assert!(source.contains(shown.trim()), "the book's plugin and plugins/calc/src/lib.rs differ");
}

/// Build the plugin whose `Cargo.toml` and `src/lib.rs` are `manifest` and
/// `source` in a temporary folder outside this workspace, as an author
/// would, with the SDK patched in by path (it is not on crates.io yet), and
/// return the component's bytes.
fn build_outside_the_workspace(manifest: &str, source: &str, wasm_name: &str) -> Vec<u8> {
    let root = root();
    let project = tempfile::tempdir().unwrap();
    std::fs::write(project.path().join("Cargo.toml"), manifest).unwrap();
    std::fs::create_dir(project.path().join("src")).unwrap();
    std::fs::write(project.path().join("src/lib.rs"), source).unwrap();
    // Its own target folder (the outer build holds the workspace's lock),
    // kept between runs so only the first build compiles the dependencies.
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
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

/// The book's plugin builds from a folder of its own exactly as printed
/// (both blocks), loads, and answers; so does the SDK README's.
#[tokio::test]
async fn the_book_plugins_build_outside_the_workspace() {
    let chapter = book("plugin-authors/writing-a-plugin.md");
    let manifest = block_after(&chapter, "A complete plugin", "toml");
    let source = block_after(&chapter, "A complete plugin", "rust");
    let calc = build_outside_the_workspace(&manifest, &source, "calc.wasm");

    let sdk_readme = std::fs::read_to_string(root().join("sdk/README.md")).unwrap();
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
fn the_book_connector_configuration_is_valid() {
    let toml = block_after(&book("operators/connectors.md"), "# Connectors", "toml");
    let config = quiver::Config::parse(&toml, Path::new("/srv/quiver")).unwrap();
    assert_eq!(config.connectors["books"].base_url, "https://books.example.com/api");
    if std::env::var_os("BOOKS_TOKEN").is_none() {
        let error = config.connector_sources().unwrap_err().to_string();
        assert!(error.contains("[connectors.books]") && error.contains("BOOKS_TOKEN"), "{error}");
    }
}

/// The OpenAPI example reads the real Petstore document it names: its
/// selection holds, and without `PETSTORE_TOKEN` the error names it.
#[test]
fn the_book_openapi_connector_reads_its_document() {
    let toml = block_after(&book("operators/connectors.md"), "## OpenAPI connectors", "toml");
    let documents = quiver_tests::servers::Prism::example("3.0/json");
    let config = quiver::Config::parse(&toml, &documents).unwrap();
    assert_eq!(config.connectors["pets"].openapi.as_deref(), Some(Path::new("petstore.json")));
    if std::env::var_os("PETSTORE_TOKEN").is_none() {
        let error = config.connector_sources().unwrap_err().to_string();
        assert!(error.contains("[connectors.pets]") && error.contains("PETSTORE_TOKEN"), "{error}");
    }
}

#[test]
fn the_book_database_configuration_is_valid() {
    let toml = block_after(&book("operators/databases.md"), "**A worked configuration**", "toml");
    let config = quiver::Config::parse(&toml, Path::new("/srv/quiver")).unwrap();
    assert_eq!(config.databases.keys().collect::<Vec<_>>(), ["shop", "stock"]);
    for (name, raw) in &config.databases {
        // The password variable is not set here: resolve everything else.
        let raw = quiver::sandbox::sql::RawDatabase { password_env: None, ..raw.clone() };
        let settings = quiver::sandbox::sql::DatabaseSettings::resolve(name, &raw, Path::new("/srv/quiver"));
        settings.unwrap_or_else(|e| panic!("[databases.{name}]: {e}"));
    }
    assert_eq!(config.databases["shop"].password_env.as_deref(), Some("SHOP_DB_PASSWORD"));
}

/// The demo's commands and outputs, run on the demo database.
#[tokio::test]
async fn the_book_demo_queries_answer_as_shown() {
    let block = block_after(&book("operators/databases.md"), "**The demo.**", "text");
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
fn the_book_mcp_servers_file_is_valid() {
    let json = block_after(&book("operators/upstream-mcp.md"), "# Upstream MCP servers", "json");
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

/// Every test the book's "Bad input and faults" table
/// (`docs/src/operators/faults.md`) names exists, so the table cannot
/// drift from what is tested.
#[test]
fn the_fault_table_names_real_tests() {
    let chapter = book("operators/faults.md");
    let table = section(&chapter, "# Bad input and faults");
    let mut sources = String::new();
    for dir in ["tests/all", "host/tests", "host/src"] {
        let mut stack = vec![root().join(dir)];
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
    for row in table.lines().filter(|l| l.starts_with("| ") && !l.starts_with("| case") && !l.starts_with("|---")) {
        let tests = row.trim_end_matches('|').rsplit('|').next().unwrap();
        for test in tests.split(',').map(|t| t.trim().trim_matches('`')) {
            assert!(sources.contains(&format!("fn {test}(")), "the fault table names `{test}`, which is not a test");
            named += 1;
        }
    }
    assert!(named >= 19, "only {named} tests named");
}

/// The README stays a front page: the two set-up commands, the quickstart,
/// a map of the book; the rest is in the book.
#[test]
fn the_readme_is_a_front_page() {
    let readme = readme();
    let lines = readme.lines().count();
    assert!(lines <= 250, "the README has {lines} lines: move the detail into a chapter of docs/src");
    let set_up = block_after(&readme, "## Set up", "sh");
    assert!(set_up.contains("rustup target add wasm32-wasip2 && cargo run -p quiver -- prompt"), "{set_up}");
    assert!(set_up.contains("bash .ci/run"), "{set_up}");
}

/// The quickstart's `quiver.toml`, in a folder set up as the quickstart
/// says (its OpenAPI document copied from this repository, its SQLite file
/// made by its own statement), parses; without `BOOKS_TOKEN` the error
/// names it, and with the token given the host serves the API and the
/// database and answers the query the quickstart runs.
#[tokio::test]
async fn the_readme_quickstart_configuration_serves_its_api_and_database() {
    let readme = readme();
    let quickstart = section(&readme, "## A five-minute quickstart");
    // The files of this repository it names exist.
    let mut named = 0;
    for word in quickstart.split(|c: char| c.is_whitespace() || "`'\"(),".contains(c)) {
        if ["tests/", "examples/", "plugins/", "docs/", "sdk/", "host/"].iter().any(|dir| word.starts_with(dir)) {
            let path = root().join(word.trim_end_matches(['.', ':', ';']));
            assert!(path.exists(), "the quickstart names {}, which does not exist", path.display());
            named += 1;
        }
    }
    assert!(named >= 1, "the quickstart copies a document of this repository");

    let dir = tempfile::tempdir().unwrap();
    let setup = block_after(quickstart, "## A five-minute quickstart", "sh");
    assert!(setup.contains("cp tests/data/openapi/books.yaml ~/quiver-demo/"), "{setup}");
    std::fs::copy(root().join("tests/data/openapi/books.yaml"), dir.path().join("books.yaml")).unwrap();
    let schema = setup.split_once("executescript(\"").unwrap().1.split_once("\")").unwrap().0;
    rusqlite::Connection::open(dir.path().join("notes.db")).unwrap().execute_batch(schema).unwrap();

    let toml = block_after(quickstart, "## A five-minute quickstart", "toml");
    let config = quiver::Config::parse(&toml, dir.path()).unwrap();
    assert_eq!(config.connectors["books"].openapi.as_deref(), Some(Path::new("books.yaml")));
    assert_eq!(config.databases.keys().collect::<Vec<_>>(), ["notes"]);
    config.database_settings().unwrap();
    if std::env::var_os("BOOKS_TOKEN").is_none() {
        // Without the variable, the error names the section and the variable.
        let error = config.connector_sources().unwrap_err().to_string();
        assert!(error.contains("[connectors.books]") && error.contains("BOOKS_TOKEN"), "{error}");
    }

    // A test cannot set the variable: the same token, from a file.
    std::fs::write(dir.path().join("token"), "demo-token").unwrap();
    let with_file = toml.replace(r#"token_env = "BOOKS_TOKEN""#, r#"token_file = "token""#);
    assert_ne!(with_file, toml, "the quickstart's connector takes its token from BOOKS_TOKEN");
    let config = quiver::Config::parse(&with_file, dir.path()).unwrap();
    let cache = tempfile::tempdir().unwrap();
    let host =
        quiver::Host::builder().config(config).cache_dir(Some(cache.path().to_owned())).bundled().build().unwrap();
    let prompt = host.session(None).unwrap().system_prompt();
    assert!(prompt.contains("- books: Books:") && prompt.contains("list_books"), "{prompt}");
    assert!(prompt.contains("- notes: The team's notes") && prompt.contains("Tables (1): note"), "{prompt}");
    let shown = block_after(quickstart, "See what a model is shown first", "sh");
    let query = shown.lines().find_map(|l| l.split_once("call notes query '")).unwrap().1.trim_end_matches('\'');
    let value = host.call("notes", "query", query).await.unwrap();
    assert_eq!(value, serde_json::json!({"columns": ["notes"], "rows": [[0]], "truncated": false}));
}

/// The quickstart's `mcpServers` file is read as `--mcp-config` reads it
/// (its `cwd` against its own folder), and the desktop clients' entry is
/// one too: `quiver` serving the quickstart's files on stdio, given in
/// `env` the token the quickstart's configuration names.
#[test]
fn the_readme_quickstart_mcp_files_are_read() {
    let readme = readme();
    let quickstart = section(&readme, "## A five-minute quickstart");
    let dir = tempfile::tempdir().unwrap();
    let servers = dir.path().join("servers.json");
    std::fs::write(&servers, block_after(quickstart, "## A five-minute quickstart", "json")).unwrap();
    let mut config = quiver::Config::default();
    config.add_mcp_config(&servers).unwrap();
    assert_eq!(config.mcp_servers.keys().collect::<Vec<_>>(), ["files", "time"]);
    let cwd = config.mcp_servers["files"].cwd.clone().unwrap();
    assert!(cwd.starts_with(dir.path()), "{}", cwd.display());
    assert_eq!(config.server_specs().unwrap().len(), 2);

    let toml = block_after(quickstart, "## A five-minute quickstart", "toml");
    let token = toml.split_once("token_env = \"").unwrap().1.split_once('"').unwrap().0;
    let client = dir.path().join("claude_desktop_config.json");
    std::fs::write(&client, block_after(quickstart, "**Claude Desktop and Cursor.**", "json")).unwrap();
    let mut clients = quiver::Config::default();
    clients.add_mcp_config(&client).unwrap();
    let entry = &clients.mcp_servers["quiver"];
    assert!(entry.command.as_deref().is_some_and(|c| c.ends_with("/quiver")), "{entry:?}");
    assert!(entry.env.contains_key(token), "the desktop entry passes {token} in `env`: {entry:?}");
    let args = entry.args.join(" ");
    assert!(args.starts_with("--config /") && args.contains("quiver-demo/quiver.toml"), "{args}");
    assert!(args.contains("--mcp-config /") && args.contains("quiver-demo/servers.json"), "{args}");
    assert!(args.ends_with("serve --stdio"), "{args}");
    let python = block_after(quickstart, "**The Python MCP SDK**", "python");
    assert!(python.contains(&format!("env={{\"{token}\"")) && python.contains(r#""serve", "--stdio"]"#), "{python}");
}

/// Every Markdown file of the README and the book, with its path.
fn documents() -> Vec<(PathBuf, String)> {
    let mut files = vec![root().join("README.md")];
    let mut stack = vec![root().join("docs/src")];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "md") {
                files.push(path);
            }
        }
    }
    files.sort();
    files.into_iter().map(|path| (path.clone(), std::fs::read_to_string(&path).unwrap())).collect()
}

/// The text outside fenced blocks and code spans.
fn prose(text: &str) -> String {
    let mut out = String::new();
    let mut fenced = false;
    for line in text.split_inclusive('\n') {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
        } else if !fenced {
            out.push_str(line);
        }
    }
    let mut code = false;
    out.chars()
        .filter(|c| {
            code ^= *c == '`';
            !code && *c != '`'
        })
        .collect()
}

/// The targets of the inline links `[text](target)` of `text`.
fn links(text: &str) -> Vec<String> {
    let prose = prose(text);
    let mut found = Vec::new();
    let mut rest = prose.as_str();
    while let Some(at) = rest.find("](") {
        rest = &rest[at + 2..];
        if let Some(end) = rest.find(')') {
            found.push(rest[..end].split_whitespace().next().unwrap_or("").to_owned());
        }
    }
    found
}

/// The ids mdBook gives the headings of `text` (and GitHub, for these).
fn heading_ids(text: &str) -> Vec<String> {
    let mut ids: Vec<String> = Vec::new();
    let mut fenced = false;
    for line in text.lines() {
        fenced ^= line.starts_with("```");
        let hashes = line.chars().take_while(|c| *c == '#').count();
        if fenced || hashes == 0 || !line[hashes..].starts_with(' ') {
            continue;
        }
        let id: String = line[hashes..]
            .trim()
            .chars()
            .filter_map(|c| match c {
                c if c.is_alphanumeric() || c == '_' || c == '-' => Some(c.to_ascii_lowercase()),
                c if c.is_whitespace() => Some('-'),
                _ => None,
            })
            .collect();
        let repeats = ids.iter().filter(|i| **i == id || i.starts_with(&format!("{id}-"))).count();
        ids.push(if repeats == 0 { id } else { format!("{id}-{repeats}") });
    }
    ids
}

/// Every relative link of the README and the book points at a file or
/// folder that exists, and a `#fragment` at a heading of its document.
#[test]
fn every_relative_link_resolves() {
    let mut checked = 0;
    for (path, text) in documents() {
        let shown = path.strip_prefix(root()).unwrap().display().to_string();
        for link in links(&text) {
            if link.contains("://") || link.starts_with("mailto:") {
                continue;
            }
            let (file, fragment) = link.split_once('#').map_or((link.as_str(), None), |(f, a)| (f, Some(a)));
            let target = if file.is_empty() { path.clone() } else { path.parent().unwrap().join(file) };
            assert!(target.exists(), "{shown} links to `{link}`: {} does not exist", target.display());
            if let Some(fragment) = fragment.filter(|_| target.extension().is_some_and(|e| e == "md")) {
                let ids = heading_ids(&std::fs::read_to_string(&target).unwrap());
                assert!(ids.iter().any(|id| id == fragment), "{shown} links to `{link}`: no such heading in {ids:?}");
            }
            checked += 1;
        }
    }
    assert!(checked >= 40, "only {checked} links checked");
}

/// Every chapter file of `docs/src` is in `SUMMARY.md` (mdBook renders
/// only what is listed there).
#[test]
fn every_chapter_is_in_the_summary() {
    let summary = book("SUMMARY.md");
    let listed = links(&summary);
    let src = root().join("docs/src");
    for (path, _) in documents().iter().filter(|(path, _)| path.starts_with(&src)) {
        let chapter = path.strip_prefix(&src).unwrap().to_str().unwrap().replace('\\', "/");
        if chapter != "SUMMARY.md" {
            assert!(listed.contains(&chapter), "docs/src/{chapter} is not listed in docs/src/SUMMARY.md");
        }
    }
}

/// The READMEs `quiver new` writes name Quiver's documentation by its
/// path in this repository: each such path exists.
#[test]
fn the_generated_readmes_name_documents_that_exist() {
    let mut named = 0;
    for language in ["rust", "python", "js"] {
        let template = root().join("host/src/bin/quiver/templates").join(language).join("README.md.in");
        let text = std::fs::read_to_string(&template).unwrap();
        for path in text.split('`').skip(1).step_by(2).filter(|s| s.starts_with("docs/") || s.starts_with("sdk/")) {
            assert!(root().join(path).exists(), "{} names `{path}`, which does not exist", template.display());
            named += 1;
        }
    }
    assert!(named >= 3, "each generated README points at the plugin authors' chapter");
}
