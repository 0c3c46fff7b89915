//! Loading: what is not a valid plugin is rejected with a clear error, and
//! the host keeps serving the plugins that are.

use quiver::ErrorKind;
use quiver_tests::{TestHost, fixtures};

/// A good call still succeeds on `host` after a failure.
async fn still_serves(host: &quiver::Host) {
    let out = host.call("misbehave", "echo", r#"{"text": "still here"}"#).await.unwrap();
    assert_eq!(out, "still here");
}

fn rejection_kind(t: &TestHost, file: &str) -> ErrorKind {
    let catalog = t.host.catalog();
    let rejection = catalog
        .rejected()
        .iter()
        .find(|r| r.origin.ends_with(file))
        .unwrap_or_else(|| panic!("{file} was not rejected; rejected: {:?}", catalog.rejected()));
    rejection.error.kind()
}

/// Files that are not plugins (among them the `no-stub` fixture, a valid
/// component without a stub) are rejected at scan, each with its reason.
#[tokio::test]
pub(crate) async fn no_stub() {
    let t = TestHost::builder()
        .fixture("misbehave")
        .fixture("no-stub")
        .file("notes.wasm", b"this is not wasm".to_vec())
        .file("core.wasm", b"\0asm\x01\x00\x00\x00".to_vec())
        .file("empty.wasm", Vec::new())
        .file("README.md", b"ignored: not a .wasm file".to_vec())
        .build();
    assert_eq!(rejection_kind(&t, "notes.wasm"), ErrorKind::NotWasm);
    assert_eq!(rejection_kind(&t, "core.wasm"), ErrorKind::CoreModule);
    assert_eq!(rejection_kind(&t, "empty.wasm"), ErrorKind::NotWasm);
    assert_eq!(rejection_kind(&t, "no-stub.wasm"), ErrorKind::MissingStub);
    let why =
        t.host.catalog().rejected().iter().find(|r| r.origin.ends_with("no-stub.wasm")).unwrap().error.to_string();
    assert!(why.contains("write it with `quiver package ") && !why.contains('\n'), "{why}");
    assert_eq!(t.host.catalog().rejected().len(), 4);
    assert_eq!(t.host.catalog().names(), ["misbehave"]);
    still_serves(&t.host).await;
}

/// Entries named `*.wasm` that are not regular files (a directory, a FIFO,
/// a link to itself) are reported, not skipped in silence, and reading
/// them never blocks (a FIFO would, read as a file); `check` refuses a
/// FIFO at once.
#[cfg(unix)]
#[tokio::test]
async fn entries_that_are_not_files_are_reported() {
    let t = TestHost::builder().fixture("misbehave").build();
    let folder = t.plugins.path();
    std::fs::create_dir(folder.join("folder.wasm")).unwrap();
    let fifo = folder.join("pipe.wasm");
    assert!(std::process::Command::new("mkfifo").arg(&fifo).status().unwrap().success(), "mkfifo");
    std::os::unix::fs::symlink(folder.join("loop.wasm"), folder.join("loop.wasm")).unwrap();
    let catalog = tokio::time::timeout(std::time::Duration::from_secs(30), t.host.reload()).await.unwrap().unwrap();
    for file in ["folder.wasm", "pipe.wasm", "loop.wasm"] {
        let rejection = catalog.rejected().iter().find(|r| r.origin.ends_with(file));
        let rejection = rejection.unwrap_or_else(|| panic!("{file} is not reported: {:?}", catalog.rejected()));
        assert_eq!(rejection.error.kind(), ErrorKind::Io, "{file}: {}", rejection.error);
    }
    assert_eq!(catalog.names(), ["misbehave"]);
    let error =
        tokio::time::timeout(std::time::Duration::from_secs(30), t.host.check(&fifo)).await.unwrap().unwrap_err();
    assert!(error.to_string().contains("not a regular file"), "{error}");
    still_serves(&t.host).await;
}

/// The operator's `max_plugin_mb` bounds what a scan and `check` read: a
/// larger file is reported with the limit and the setting that raises it.
#[tokio::test]
async fn a_plugin_over_the_configured_size_is_refused() {
    let big = vec![0u8; (1 << 20) + 1];
    let t = TestHost::builder().config("max_plugin_mb = 1").fixture("misbehave").file("big.wasm", big).build();
    let catalog = t.host.catalog();
    let rejection = catalog.rejected().iter().find(|r| r.origin.ends_with("big.wasm")).expect("big.wasm reported");
    assert_eq!(rejection.error.kind(), ErrorKind::Io);
    let reason = rejection.error.to_string();
    assert!(reason.contains("over the limit of 1048576") && reason.contains("max_plugin_mb"), "{reason}");
    let error = t.host.check(&t.plugins.path().join("big.wasm")).await.unwrap_err();
    assert!(error.to_string().contains("max_plugin_mb"), "{error}");
    still_serves(&t.host).await;
}

/// Calling a plugin whose file was rejected says so, and why, instead of
/// "no plugin named".
#[tokio::test]
async fn calling_a_rejected_plugin_says_why() {
    let t = TestHost::builder().fixture("misbehave").file("broken.wasm", b"not wasm".to_vec()).build();
    let error = t.host.call("broken", "run", "{}").await.unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Rejected, "{error}");
    let text = error.to_string();
    assert!(text.starts_with("plugin `broken` is not served: ") && text.contains("broken.wasm was rejected"), "{text}");
    assert_eq!(t.host.call("nothing", "run", "{}").await.unwrap_err().kind(), ErrorKind::UnknownPlugin);
}

#[tokio::test]
async fn a_truncated_component_is_rejected() {
    let mut bytes = std::fs::read(fixtures::MISBEHAVE).unwrap();
    bytes.truncate(bytes.len() / 2);
    let t = TestHost::builder().file("half.wasm", bytes).fixture("misbehave").build();
    assert_eq!(rejection_kind(&t, "half.wasm"), ErrorKind::NotWasm);
    still_serves(&t.host).await;
}

/// The `wrong-world` fixture exports no plugin interface: rejected on first
/// use, and the failure is remembered.
#[tokio::test]
pub(crate) async fn wrong_world() {
    let t = TestHost::builder().fixture("wrong-world").fixture("misbehave").build();
    let error = t.host.call("wrong-world", "run", "{}").await.unwrap_err();
    assert_eq!(error.kind(), ErrorKind::WrongWorld, "{error}");
    assert!(error.to_string().contains("does not export `quiver:plugin/plugin"), "{error}");
    // The failure is remembered for this version: no second compile.
    let compiled = t.host.load_stats().compiled();
    assert_eq!(t.host.call("wrong-world", "run", "{}").await.unwrap_err().kind(), ErrorKind::WrongWorld);
    assert_eq!(t.host.load_stats().compiled(), compiled);
    still_serves(&t.host).await;
}

/// The `liar` fixture's stub disagrees with its `describe()`: listed from
/// its stub, refused on first use.
#[tokio::test]
pub(crate) async fn liar() {
    let t = TestHost::builder().fixture("liar").fixture("misbehave").build();
    // The stub is well-formed, so the scan lists the plugin...
    assert!(t.host.catalog().get("liar").is_some());
    // ...but its first use compares it with describe() and refuses it.
    let error = t.host.call("liar", "add", "{}").await.unwrap_err();
    assert_eq!(error.kind(), ErrorKind::StubMismatch, "{error}");
    let message = error.to_string();
    assert!(message.contains("\"add\"") && message.contains("\"sum\""), "{message}");
    still_serves(&t.host).await;
}

#[tokio::test]
async fn two_plugins_with_one_name_keep_the_first() {
    let bytes = std::fs::read(fixtures::MISBEHAVE).unwrap();
    let t = TestHost::builder().file("a.wasm", bytes.clone()).file("b.wasm", bytes).build();
    assert_eq!(rejection_kind(&t, "b.wasm"), ErrorKind::DuplicateName);
    let catalog = t.host.catalog();
    let kept = catalog.get("misbehave").unwrap();
    assert!(kept.origin().to_string().ends_with("a.wasm"));
    still_serves(&t.host).await;
}

#[tokio::test]
async fn listing_and_prompting_compile_nothing() {
    let t = TestHost::builder().bundled().fixture("misbehave").fixture("connector").fixture("database").build();
    let catalog = t.host.catalog();
    assert!(catalog.len() >= 4, "{:?}", catalog.names());
    let prompt = t.host.session(None).unwrap().system_prompt();
    for plugin in catalog.plugins() {
        assert!(prompt.contains(&format!("- {}", plugin.name())), "{} missing from:\n{prompt}", plugin.name());
        assert!(!plugin.is_loaded());
    }
    assert_eq!(t.host.load_stats().compiled(), 0);
    assert_eq!(t.host.load_stats().cache_hits(), 0);
    // Loading one plugin compiles exactly that one.
    t.host.describe("misbehave").await.unwrap();
    assert_eq!(t.host.load_stats().compiled(), 1);
    assert_eq!(catalog.plugins().filter(|p| p.is_loaded()).count(), 1);
}

#[tokio::test]
async fn check_validates_a_file_fully() {
    let t = TestHost::builder().build();
    let checked = t.host.check(fixtures::MISBEHAVE.as_ref()).await.unwrap();
    assert_eq!(checked.manifest.name, "misbehave");
    assert!(checked.skipped.is_empty() && checked.requests.is_none(), "{checked:?}");
    let kinds: Vec<ErrorKind> = futures_kinds(&t.host, &["liar", "no-stub", "wrong-world", "sneaky"]).await;
    assert_eq!(kinds, [ErrorKind::StubMismatch, ErrorKind::MissingStub, ErrorKind::WrongWorld, ErrorKind::WrongWorld]);
    let error = t.host.check(fixtures::LIAR.as_ref()).await.unwrap_err();
    assert!(error.remedy().is_some());
}

async fn futures_kinds(host: &quiver::Host, names: &[&str]) -> Vec<ErrorKind> {
    let mut kinds = Vec::new();
    for name in names {
        kinds.push(host.check(fixtures::path(name).as_ref()).await.unwrap_err().kind());
    }
    kinds
}

/// A component without a stub (raw wit-bindgen, as any toolchain builds
/// one) packaged by `Host::package` is listed from its stub, its schemas
/// are served from its manifest section without compiling it, and it is
/// called like an SDK plugin. An SDK plugin keeps its own stub and gains
/// the manifest section; a section that lies is refused at first use.
#[tokio::test]
async fn a_packaged_component_is_served_like_an_sdk_plugin() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("no-stub.wasm");
    std::fs::copy(quiver_tests::fixtures::NO_STUB, &file).unwrap();
    let t = TestHost::builder().build();
    let packaged = t.host.package(&file).await.unwrap();
    assert!(packaged.changed);
    assert_eq!((packaged.manifest.name.as_str(), packaged.manifest.actions.len()), ("no-stub", 1));

    let served = TestHost::builder().file("no-stub.wasm", packaged.bytes.clone()).build();
    assert_eq!(served.host.catalog().names(), ["no-stub"]);
    let definition = served.host.session(None).unwrap().definition("no-stub__echo").await.unwrap();
    assert_eq!(definition.input_schema, serde_json::json!({"type": "object"}));
    assert!(!served.host.catalog().get("no-stub").unwrap().is_loaded(), "schemas served without compiling");
    assert_eq!(served.host.load_stats().compiled(), 0);
    let value = served.host.call("no-stub", "echo", r#"{"a": 1}"#).await.unwrap();
    assert_eq!(value, serde_json::json!({"a": 1}));
    assert_eq!(served.host.load_stats().compiled(), 1);

    // Packaging compiled it once: the packaged file is in the cache as well.
    let cached = TestHost::builder().file("no-stub.wasm", packaged.bytes.clone()).cache_dir(t.cache.path()).build();
    cached.host.call("no-stub", "echo", "{}").await.unwrap();
    assert_eq!((cached.host.load_stats().compiled(), cached.host.load_stats().cache_hits()), (0, 1));

    // Packaging again changes nothing.
    std::fs::write(&file, &packaged.bytes).unwrap();
    assert!(!t.host.package(&file).await.unwrap().changed);

    // An SDK plugin: its stub stays in its core module, the manifest is added.
    let sdk = t.host.package(std::path::Path::new(quiver_tests::fixtures::VERSIONED)).await;
    let sdk = sdk.unwrap_or_else(|e| panic!("{e}"));
    assert!(sdk.changed);
    let original = std::fs::read(quiver_tests::fixtures::VERSIONED).unwrap();
    let stub =
        |bytes: &[u8]| quiver::load::stub::read_sections(bytes, "v.wasm").map(|(s, m)| (s, m.is_some())).unwrap();
    assert_eq!(stub(&sdk.bytes), (stub(&original).0, true));

    // A manifest section that says other than describe() (here: another
    // input schema) is served until the first call, which refuses it.
    let mut lying: serde_json::Value = serde_json::from_slice(&packaged.manifest.to_section()).unwrap();
    lying["actions"][0]["input_schema"] = serde_json::json!({"type": "object", "required": ["x"]});
    let lying = quiver::load::package::with_sections(&packaged.bytes, None, lying.to_string().as_bytes()).unwrap();
    let served = TestHost::builder().file("no-stub.wasm", lying).build();
    let definition = served.host.session(None).unwrap().definition("no-stub__echo").await.unwrap();
    assert_eq!(definition.input_schema["required"], serde_json::json!(["x"]));
    let error = served.host.call("no-stub", "echo", r#"{"x": 1}"#).await.unwrap_err();
    assert_eq!(error.kind(), ErrorKind::StubMismatch, "{error}");
    assert!(error.to_string().contains("package it again"), "{error}");

    let wrong = t.host.package(std::path::Path::new(quiver_tests::fixtures::WRONG_WORLD)).await.unwrap_err();
    assert_eq!(wrong.kind(), ErrorKind::WrongWorld, "{wrong}");
}

/// One rule for a misconfigured resource: it fails alone and the rest
/// serve. A database whose SQLite file is missing (its whole path in the
/// reason), a connector whose credential is not set and one whose OpenAPI
/// document cannot be read are each refused with why; Tier 1 names each
/// as failing, `/v1/status` lists them, and a call of one says why it
/// cannot run, while a good database and the plugins serve.
#[tokio::test]
async fn a_misconfigured_resource_fails_alone() {
    let dir = tempfile::tempdir().unwrap();
    let good = dir.path().join("good.db");
    rusqlite::Connection::open(&good)
        .unwrap()
        .execute_batch("CREATE TABLE notes (id INTEGER PRIMARY KEY, text TEXT);")
        .unwrap();
    let config = format!(
        r#"
[databases.shop]
url = "sqlite:{missing}"

[databases.notes]
url = "sqlite:{good}"

[connectors.books]
plugin = "fixture-connector"
base_url = "http://127.0.0.1:9"
auth = {{ kind = "bearer", token_env = "QUIVER_TEST_SURELY_UNSET_TOKEN" }}

[connectors.pets]
openapi = "{missing_doc}"
base_url = "http://127.0.0.1:9"
"#,
        missing = dir.path().join("data/shop.db").display(),
        good = good.display(),
        missing_doc = dir.path().join("pets.yaml").display(),
    );
    let t = TestHost::builder().bundled().fixture("connector").config(&config).build();
    let catalog = t.host.catalog();
    let failing: Vec<(&str, String)> =
        catalog.failing("databases").chain(catalog.failing("connectors")).map(|(n, e)| (n, e.to_string())).collect();
    let names: Vec<&str> = failing.iter().map(|(n, _)| *n).collect();
    assert_eq!(names, ["shop", "books", "pets"], "{failing:?}");
    let shop = &failing[0].1;
    assert!(
        shop.contains(&format!("{}", dir.path().join("data/shop.db").display())) && shop.contains("does not exist"),
        "{shop}"
    );
    assert!(failing[1].1.contains("QUIVER_TEST_SURELY_UNSET_TOKEN"), "{}", failing[1].1);
    assert!(failing[2].1.contains("pets.yaml"), "{}", failing[2].1);

    let mut session = t.host.session(None).unwrap();
    let tier1 = session.system_prompt();
    for name in ["shop", "books", "pets"] {
        assert!(tier1.contains(&format!("- {name}: failing, not available now (")), "{name}: {tier1}");
    }
    assert!(tier1.contains("- notes: ") && tier1.contains("Tables (1): notes"), "{tier1}");
    let status = serde_json::to_value(t.host.status()).unwrap().to_string();
    assert!(status.contains("[databases.shop]") && status.contains("[connectors.pets]"), "{status}");

    let refused = session.call("database", serde_json::json!({"subcommand": "list_tables", "database": "shop"})).await;
    assert_eq!(refused.error.as_ref().map(|e| e.kind()), Some(ErrorKind::Rejected), "{}", refused.text);
    assert!(refused.text.contains("does not exist"), "{}", refused.text);
    let served = session
        .call(
            "database",
            serde_json::json!({"subcommand": "query", "database": "notes", "sql": "SELECT count(*) FROM notes"}),
        )
        .await;
    assert!(!served.is_error, "{}", served.text);
    let calc = t.host.call("calc", "evaluate", r#"{"expression": "1 + 1"}"#).await.unwrap();
    assert_eq!(calc["value"], 2);
}
