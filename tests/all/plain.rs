//! Components that know nothing about Quiver (issue 35): plain interfaces
//! of typed functions, built in this repository with three toolchains and
//! no Quiver SDK — Rust with plain wit-bindgen (the `plain-rust` fixture),
//! JavaScript with componentize-js, Python with componentize-py — dropped
//! into the plugins folder with their `.wit` beside them, listed without
//! compiling, described from their types, called with schema-checked JSON.

use quiver::{ErrorKind, GuestErrorKind};
use quiver_tests::{TestHost, fixtures, guests};
use serde_json::json;

fn guest_error(error: &quiver::Error) -> Option<(GuestErrorKind, &str)> {
    match error {
        quiver::Error::Guest { kind, message, .. } => Some((*kind, message.as_str())),
        _ => None,
    }
}

/// A host serving `bytes` as `NAME.wasm` with the package's `.wit` beside.
fn host_with(name: &str, bytes: Vec<u8>) -> TestHost {
    let wit = std::fs::read(guests::plain_wit()).unwrap();
    TestHost::builder()
        .file(&format!("{name}.wasm"), bytes)
        .file(&format!("{name}.wit"), wit)
        .cache_dir(guests::shared_cache())
        .build()
}

/// What the three components share: `text` and `probe`, listed from the
/// types with nothing compiled, then called; a file the sandbox has no
/// folder for, or a variable it has no environment for, is the guest's
/// own clean answer.
async fn serves_text_and_probe(t: &TestHost, name: &str) {
    let catalog = t.host.catalog();
    let plugin = catalog.get(name).unwrap_or_else(|| panic!("{name}: {:?}", catalog.rejected()));
    let actions: Vec<&str> = plugin.stub().action_names().collect();
    for action in ["text_count", "text_recase", "text_repeat", "probe_read_file", "probe_env_var"] {
        assert!(actions.contains(&action), "{name}: {actions:?}");
    }
    let session = t.host.session(None).unwrap();
    let count = session.definition(&format!("{name}__text_count")).await.unwrap();
    assert_eq!(count.description, "Count the words, lines and characters of a text.");
    assert_eq!(
        count.input_schema,
        json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"],
               "additionalProperties": false})
    );
    let stats = t.host.load_stats();
    assert_eq!(stats.compiled() + stats.cache_hits(), 0, "{name}: listed and described with nothing compiled");

    let counts = t.host.call(name, "text_count", r#"{"text": "two words\nand more"}"#).await.unwrap();
    assert_eq!(counts, json!({"words": 4, "lines": 2, "chars": 18}), "{name}");
    let upper = t.host.call(name, "text_recase", r#"{"text": "Straße", "to": "upper"}"#).await.unwrap();
    assert_eq!(upper, json!("STRASSE"), "{name}");
    let joined = t.host.call(name, "text_repeat", r#"{"text": "ab", "times": 3, "separator": "-"}"#).await.unwrap();
    assert_eq!(joined, json!("ab-ab-ab"), "{name}");
    let spaced = t.host.call(name, "text_repeat", r#"{"text": "ab", "times": 2}"#).await.unwrap();
    assert_eq!(spaced, json!("ab ab"), "{name}: an option left out is none");

    // The function's own error is a typed error with its text.
    let long = format!(r#"{{"text": "{}", "times": 200}}"#, "x".repeat(100));
    let error = t.host.call(name, "text_repeat", &long).await.unwrap_err();
    let (kind, message) = guest_error(&error).unwrap_or_else(|| panic!("{name}: {error}"));
    assert_eq!(kind, GuestErrorKind::Failed, "{name}");
    assert!(message.contains("more than 10000"), "{name}: {message}");
    // Input outside the types never reaches the component.
    let error = t.host.call(name, "text_repeat", r#"{"text": "a", "times": 256}"#).await.unwrap_err();
    assert_eq!(error.kind(), ErrorKind::InputSchema, "{name}: {error}");
    let error = t.host.call(name, "text_recase", r#"{"text": "a", "to": "title"}"#).await.unwrap_err();
    assert_eq!(error.kind(), ErrorKind::InputSchema, "{name}: {error}");

    // No folder granted: the file cannot be read, and the component says so.
    let error = t.host.call(name, "probe_read_file", r#"{"path": "/etc/hostname"}"#).await.unwrap_err();
    assert_eq!(guest_error(&error).map(|(k, _)| k), Some(GuestErrorKind::Failed), "{name}: {error}");
    // No environment granted.
    let home = t.host.call(name, "probe_env_var", r#"{"name": "HOME"}"#).await.unwrap();
    assert_eq!(home, json!(null), "{name}");
    // Each call runs in a fresh instance.
    for _ in 0..2 {
        assert_eq!(t.host.call(name, "probe_calls", "{}").await.unwrap(), json!(1), "{name}");
    }
}

/// `bytes` packaged as `NAME.wasm` with the package's `.wit` beside it
/// (what `quiver package` does): its stub and manifest written from its
/// types, its docs included.
async fn packaged(name: &str, bytes: Vec<u8>) -> Vec<u8> {
    let t = host_with(name, bytes);
    let packaged = t.host.package(&t.plugins.path().join(format!("{name}.wasm"))).await.unwrap();
    assert!(packaged.plain && packaged.changed, "{name}");
    let stub = quiver::load::stub::read(&packaged.bytes, name).unwrap();
    assert!(stub.plain, "{name}: the stub says it is served as it is");
    packaged.bytes
}

/// A packaged component served without its `.wit`: listed from its stub
/// and described from its manifest section (the docs packaging wrote,
/// which the names alone would not give), then called as before.
async fn serves_packaged(name: &str, bytes: Vec<u8>) {
    let packed = packaged(name, bytes).await;
    let t = TestHost::builder().file(&format!("{name}.wasm"), packed).cache_dir(guests::shared_cache()).build();
    serves_text_and_probe(&t, name).await;
}

/// `instances = "per-caller"`: a caller's calls run in one instance (what
/// the component keeps in memory is seen by that caller's later calls),
/// another caller's in another; the function's own error ends a call
/// cleanly and keeps the instance.
async fn keeps_an_instance_per_caller(name: &str, bytes: Vec<u8>) {
    let wit = std::fs::read(guests::plain_wit()).unwrap();
    let t = TestHost::builder()
        .file(&format!("{name}.wasm"), bytes)
        .file(&format!("{name}.wit"), wit)
        .cache_dir(guests::shared_cache())
        .config(&format!("[plugins.{name}]\ninstances = \"per-caller\""))
        .build();
    let calls = |caller: quiver::invoke::Caller| {
        let host = &t.host;
        async move { host.call_as(&caller, name, "probe_calls", json!({})).await.unwrap().result.unwrap().into_json() }
    };
    let operator = quiver::invoke::Caller::operator;
    let agent = || quiver::invoke::Caller { agent: Some("a".into()), ..quiver::invoke::Caller::operator() };
    assert_eq!([calls(operator()).await, calls(operator()).await], [json!(1), json!(2)], "{name}");
    assert_eq!(calls(agent()).await, json!(1), "{name}: another caller, another instance");
    let long = format!(r#"{{"text": "{}", "times": 200}}"#, "x".repeat(100));
    let error = t.host.call(name, "text_repeat", &long).await.unwrap_err();
    assert!(guest_error(&error).is_some(), "{name}: {error}");
    assert_eq!([calls(operator()).await, calls(agent()).await], [json!(3), json!(2)], "{name}");
    let stats = t.host.load_stats();
    assert_eq!((stats.instantiated(), stats.reused()), (2, 4), "{name}");
}

/// The grants a plain component can be given: a folder it reads (never
/// writes, never leaves) and its `config` values as its environment.
async fn reads_what_it_is_granted(name: &str, bytes: Vec<u8>) {
    let data = tempfile::tempdir().unwrap();
    std::fs::write(data.path().join("note.txt"), "granted text").unwrap();
    let config = format!(
        "[plugins.{name}]\nfolders = {{ \"/data\" = {:?} }}\nconfig = {{ GREETING = \"hi\" }}",
        data.path().display().to_string()
    );
    // Listed storage, network, environment, whatever the file's order.
    let policy = "permissions:\n  network:\n    allow:\n      - host: api.github.com\n  storage:\n    allow:\n\
                  \x20     - uri: fs:///data/**\n        access: [read]\n      - uri: fs:///etc\n  environment:\n\
                  \x20   allow:\n      - key: GREETING\n      - key: HOME\n";
    let t = TestHost::builder()
        .file(&format!("{name}.wasm"), bytes)
        .file(&format!("{name}.policy.yaml"), policy.as_bytes().to_vec())
        .cache_dir(guests::shared_cache())
        .config(&config)
        .build();
    let read = |path: &str| {
        let input = json!({"path": path}).to_string();
        let host = &t.host;
        async move { host.call(name, "probe_read_file", &input).await }
    };
    assert_eq!(read("/data/note.txt").await.unwrap(), json!("granted text"), "{name}");
    for outside in ["/data/../etc/hostname", "/etc/hostname"] {
        let error = read(outside).await.unwrap_err();
        assert_eq!(guest_error(&error).map(|(k, _)| k), Some(GuestErrorKind::Failed), "{name} {outside}: {error}");
    }
    let env = |var: &str| {
        let input = json!({"name": var}).to_string();
        let host = &t.host;
        async move { host.call(name, "probe_env_var", &input).await }
    };
    assert_eq!(env("GREETING").await.unwrap(), json!("hi"), "{name}");
    assert_eq!(env("HOME").await.unwrap(), json!(null), "{name}");

    // Its policy file asks for the folder, a variable and a host: the
    // status shows what the configuration grants of each, and nothing
    // more is granted for the asking (the host is not reached: the
    // component does not import wasi:http).
    let status = t.host.status();
    let plugin = status.plugins.iter().find(|p| p.name == name).unwrap();
    let requests = plugin.requests.as_ref().unwrap_or_else(|| panic!("{name}: no requests in the status"));
    let shown: Vec<(String, &str, Vec<String>)> =
        requests.asks.iter().map(|a| (a.kind.to_string(), a.what.as_str(), a.granted.clone())).collect();
    assert_eq!(
        shown,
        [
            ("storage".to_owned(), "/data", vec!["/data".to_owned()]),
            ("storage".to_owned(), "/etc", vec![]),
            ("network".to_owned(), "api.github.com", vec![]),
            ("environment".to_owned(), "GREETING", vec!["GREETING".to_owned()]),
            ("environment".to_owned(), "HOME", vec![]),
        ],
        "{name}"
    );
    let error = read("/etc/hostname").await.unwrap_err();
    assert_eq!(guest_error(&error).map(|(k, _)| k), Some(GuestErrorKind::Failed), "{name}: asked is not granted");
    assert_eq!(env("HOME").await.unwrap(), json!(null), "{name}: asked is not granted");

    // Touched with its settings unchanged: the version served, not a new
    // one (its `config` is served as its environment, which the rescan
    // compares as served).
    let (version, plugin) = (t.host.catalog().version(), t.host.catalog().get(name).cloned().unwrap());
    let later = std::time::SystemTime::now() + std::time::Duration::from_secs(60);
    let path = t.plugins.path().join(format!("{name}.wasm"));
    std::fs::File::options().write(true).open(&path).unwrap().set_modified(later).unwrap();
    t.host.reload().await.unwrap();
    assert_eq!(t.host.catalog().version(), version, "{name}: a touched plain component is a new version");
    assert!(std::sync::Arc::ptr_eq(t.host.catalog().get(name).unwrap(), &plugin), "{name}");
}

/// The Rust component (plain wit-bindgen): every type of the mapping
/// through a real call, and a function exported at the top level.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
pub(crate) async fn plain_rust() {
    let t = host_with("plain-rust", std::fs::read(fixtures::PLAIN_RUST).unwrap());
    serves_text_and_probe(&t, "plain-rust").await;
    let call = |action: &'static str, input: serde_json::Value| {
        let host = &t.host;
        async move { host.call("plain-rust", action, &input.to_string()).await }
    };
    assert_eq!(call("hello", json!({"name": "Ada"})).await.unwrap(), json!("Hello, Ada!"));
    let area = call("shapes_area", json!({"shape": {"tag": "rect", "value": [2, 3.5]}})).await.unwrap();
    assert_eq!(area, json!(7.0));
    assert_eq!(call("shapes_area", json!({"shape": {"tag": "point"}})).await.unwrap(), json!(0.0));
    let error = call("shapes_area", json!({"shape": {"tag": "circle", "value": -1}})).await.unwrap_err();
    assert_eq!(guest_error(&error), Some((GuestErrorKind::Failed, "negative")), "an enum error is its case name");
    let error = call("shapes_area", json!({"shape": {"tag": "circle", "value": 1e200}})).await.unwrap_err();
    assert_eq!(guest_error(&error), Some((GuestErrorKind::Failed, "too-large")));
    let names = call("shapes_style_names", json!({"style": ["underline", "bold"]})).await.unwrap();
    assert_eq!(names, json!(["bold", "underline"]));
    assert_eq!(call("shapes_checksum", json!({"data": [255, 255, 2]})).await.unwrap(), json!(512));
    let widened = call(
        "shapes_widen",
        json!({"small": -128, "big": 9007199254740993i64, "huge": 18446744073709551615u64, "ratio": 1.25, "letter": "q"}),
    )
    .await
    .unwrap();
    assert_eq!(widened, json!([9007199254740865i64, "18446744073709551615", 2.5, "Q"]), "64-bit values stay exact");
    for (given, got) in
        [(json!(null), json!(null)), (json!({"some": null}), json!(null)), (json!({"some": 7}), json!(7))]
    {
        assert_eq!(call("shapes_flatten", json!({"value": given})).await.unwrap(), got);
    }
    let error = call("shapes_widen", json!({"small": -129, "big": 0, "huge": 0, "ratio": 0, "letter": "q"})).await;
    assert_eq!(error.unwrap_err().kind(), ErrorKind::InputSchema);
    // Compiled once, for the first call; the rest only instantiate.
    assert_eq!(t.host.load_stats().compiled() + t.host.load_stats().cache_hits(), 1);

    reads_what_it_is_granted("granted", std::fs::read(fixtures::PLAIN_RUST).unwrap()).await;
    serves_packaged("packed", std::fs::read(fixtures::PLAIN_RUST).unwrap()).await;
    a_packaged_manifest_must_say_what_the_types_say().await;
    keeps_an_instance_per_caller("kept", std::fs::read(fixtures::PLAIN_RUST).unwrap()).await;

    // A changed `.wit` beside the same component is read again on the
    // next scan: its docs are the descriptions.
    let t = host_with("docs", std::fs::read(fixtures::PLAIN_RUST).unwrap());
    let wit = std::fs::read_to_string(guests::plain_wit()).unwrap();
    let reworded = wit.replace("Count the words, lines and characters of a text.", "Count what a text holds.");
    std::fs::write(t.plugins.path().join("docs.wit"), reworded).unwrap();
    t.host.reload().await.unwrap();
    let count = t.host.session(None).unwrap().definition("docs__text_count").await.unwrap();
    assert_eq!(count.description, "Count what a text holds.");

    // A policy file that is there but is not read is shown as such.
    let odd = TestHost::builder()
        .file("odd.wasm", std::fs::read(fixtures::PLAIN_RUST).unwrap())
        .file("odd.policy.yaml", vec![0xff, 0xfe])
        .build();
    let status = odd.host.status();
    let requests = status.plugins.iter().find(|p| p.name == "odd").and_then(|p| p.requests.clone());
    assert_eq!(requests.and_then(|r| r.problem).as_deref(), Some("it is not UTF-8 text"));

    // Without its `.wit`, the names describe it.
    let bare = TestHost::builder().file("bare.wasm", std::fs::read(fixtures::PLAIN_RUST).unwrap()).build();
    let session = bare.host.session(None).unwrap();
    let count = session.definition("bare__text_count").await.unwrap();
    assert_eq!(
        count.description,
        "`text.count`, a function of a WebAssembly component.\n\n`text.count(text: string) -> record`"
    );
}

/// A packaged component's manifest section is served before anything is
/// compiled; at the first call it is checked against the types: other
/// words are served (the docs of a `.wit` no longer beside it), other
/// schemas are refused with the fix.
async fn a_packaged_manifest_must_say_what_the_types_say() {
    let packed = packaged("edited", std::fs::read(fixtures::PLAIN_RUST).unwrap()).await;
    let (_, section) = quiver::load::stub::read_sections(&packed, "edited.wasm").unwrap();
    let manifest: serde_json::Value = serde_json::from_slice(section.unwrap()).unwrap();
    let edited = |edit: fn(&mut serde_json::Value)| {
        let mut manifest = manifest.clone();
        let actions = manifest["actions"].as_array_mut().unwrap();
        edit(actions.iter_mut().find(|a| a["name"] == "text_repeat").unwrap());
        let section = serde_json::to_vec(&manifest).unwrap();
        let bytes = quiver::load::package::with_sections(&packed, None, &section).unwrap();
        TestHost::builder().file("edited.wasm", bytes).cache_dir(guests::shared_cache()).build()
    };
    let t = edited(|action| {
        let description = action["description"].as_str().unwrap().to_owned();
        action["description"] = json!(format!("{description}\n\nReworded after packaging."));
    });
    let definition = t.host.session(None).unwrap().definition("edited__text_repeat").await.unwrap();
    assert!(definition.description.ends_with("Reworded after packaging."), "{}", definition.description);
    let joined = t.host.call("edited", "text_repeat", r#"{"text": "ab", "times": 2, "separator": "-"}"#).await;
    assert_eq!(joined.unwrap(), json!("ab-ab"), "other words are served");

    let t = edited(|action| action["input_schema"]["properties"]["times"]["maximum"] = json!(1000));
    let definition = t.host.session(None).unwrap().definition("edited__text_repeat").await.unwrap();
    assert_eq!(definition.input_schema["properties"]["times"]["maximum"], json!(1000), "served before compiling");
    let error = t.host.call("edited", "text_repeat", r#"{"text": "ab", "times": 2}"#).await.unwrap_err();
    assert_eq!(error.kind(), ErrorKind::StubMismatch, "{error}");
    assert!(error.to_string().contains("package it again"), "{error}");

    // A component with Quiver's contract whose stub says it is plain.
    let mut stub = quiver::load::stub::read(&packed, "edited.wasm").unwrap();
    stub.name = "contract".into();
    let contract = std::fs::read(fixtures::NO_STUB).unwrap();
    let bytes = quiver::load::package::with_sections(&contract, Some(&stub), section.unwrap()).unwrap();
    let t = TestHost::builder().file("contract.wasm", bytes).cache_dir(guests::shared_cache()).build();
    let error = t.host.call("contract", "text_count", r#"{"text": "a"}"#).await.unwrap_err();
    assert_eq!(error.kind(), ErrorKind::StubMismatch, "{error}");
    assert!(error.to_string().contains("exports Quiver's contract"), "{error}");
}

/// The JavaScript component (componentize-js, no imports at all).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_javascript_component_is_served_as_it_is() {
    let t = host_with("plain-js", std::fs::read(guests::plain_js()).unwrap());
    serves_text_and_probe(&t, "plain-js").await;
    serves_packaged("packed-js", std::fs::read(guests::plain_js()).unwrap()).await;
    keeps_an_instance_per_caller("kept-js", std::fs::read(guests::plain_js()).unwrap()).await;
}

/// The Python component (componentize-py): its build-time `init` hook is
/// not an action.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_python_component_is_served_as_it_is() {
    let t = host_with("plain-py", std::fs::read(guests::plain_python()).unwrap());
    serves_text_and_probe(&t, "plain-py").await;
    let actions: Vec<String> =
        t.host.catalog().get("plain-py").unwrap().stub().action_names().map(str::to_owned).collect();
    assert!(!actions.iter().any(|a| a.contains("init")), "{actions:?}");
    reads_what_it_is_granted("granted-py", std::fs::read(guests::plain_python()).unwrap()).await;
    serves_packaged("packed-py", std::fs::read(guests::plain_python()).unwrap()).await;
    keeps_an_instance_per_caller("kept-py", std::fs::read(guests::plain_python()).unwrap()).await;
}
