//! Plugins in Python and JavaScript: the examples (`examples/python-stats`,
//! `examples/js-url`), built from source by their build scripts, packaged
//! by `Host::package` (what `quiver package` runs), then served like any
//! plugin.

use quiver::ErrorKind;
use quiver::GuestErrorKind;
use quiver_tests::TestHost;
use quiver_tests::builds::{publish, wait_for};
use quiver_tests::guests;
use serde_json::json;

/// The example built and packaged: (bytes, number of actions).
async fn packaged_stats() -> Vec<u8> {
    let packager = TestHost::builder().cache_dir(guests::shared_cache()).build();
    let packaged = packager.host.package(guests::python_stats()).await.unwrap_or_else(|e| panic!("{e}"));
    assert!(packaged.changed, "componentize-py writes no stub: packaging adds it");
    packaged.bytes
}

fn guest_kind(error: &quiver::Error) -> Option<GuestErrorKind> {
    match error {
        quiver::Error::Guest { kind, .. } => Some(*kind),
        _ => None,
    }
}

/// Listed and described from its sections without compiling; called;
/// its input checked against the schema its type hints gave; its typed
/// errors, its exceptions (with their message) and a timeout reported.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_python_plugin_is_described_called_and_contained() {
    let bytes = packaged_stats().await;
    let t = TestHost::builder()
        .file("stats.wasm", bytes.clone())
        .cache_dir(guests::shared_cache())
        .config("[plugins.stats]\ntimeout_ms = 1500")
        .build();
    let stub = t.host.catalog().get("stats").unwrap().stub().clone();
    let actions: Vec<&str> = stub.action_names().collect();
    assert_eq!(actions, ["summarize", "quantiles", "regression", "factorize"]);
    let session = t.host.session(None).unwrap();
    let quantiles = session.definition("stats__quantiles").await.unwrap();
    assert_eq!(
        quantiles.input_schema,
        json!({
            "type": "object",
            "properties": {
                "numbers": {"type": "array", "items": {"type": "number"}, "description": "The values, at least two."},
                "n": {"type": "integer", "default": 4,
                      "description": "How many groups: 4 for quartiles, 10 for deciles, 100 for percentiles."},
                "method": {"enum": ["exclusive", "inclusive"], "default": "exclusive",
                           "description": "`exclusive` for a sample of a larger population, `inclusive` for the whole population."}
            },
            "additionalProperties": false,
            "required": ["numbers"]
        })
    );
    assert_eq!(t.host.load_stats().compiled() + t.host.load_stats().cache_hits(), 0, "nothing compiled yet");

    let summary = t.host.call("stats", "summarize", r#"{"numbers": [1, 2, 2, 3, 10]}"#).await.unwrap();
    assert_eq!((&summary["count"], &summary["median"], &summary["mode"]), (&json!(5), &json!(2), &json!(2)));
    let fit = t.host.call("stats", "regression", r#"{"x": [1, 2, 3], "y": [2, 4, 6]}"#).await.unwrap();
    assert_eq!((&fit["slope"], &fit["intercept"]), (&json!(2.0), &json!(0.0)));

    let error = t.host.call("stats", "quantiles", r#"{"numbers": "1 2 3"}"#).await.unwrap_err();
    assert_eq!(error.kind(), ErrorKind::InputSchema, "{error}");
    let error = t.host.call("stats", "summarize", r#"{"numbers": []}"#).await.unwrap_err();
    assert_eq!(guest_kind(&error), Some(GuestErrorKind::InvalidInput), "{error}");
    assert!(error.to_string().contains("give at least one number"), "{error}");
    let error = t.host.call("stats", "quantiles", r#"{"numbers": [1, 2, 3], "n": 0}"#).await.unwrap_err();
    assert_eq!(guest_kind(&error), Some(GuestErrorKind::Failed), "{error}");
    assert!(error.to_string().contains("StatisticsError: n must be at least 1"), "{error}");
    // 2^61 - 1 is prime: trial division in Python runs far past the limit.
    let error = t.host.call("stats", "factorize", r#"{"n": 2305843009213693951}"#).await.unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Timeout, "{error}");
    // The plugin serves on after its timeout.
    let factors = t.host.call("stats", "factorize", r#"{"n": 360}"#).await.unwrap();
    assert_eq!(factors, json!({"factors": [2, 2, 2, 3, 3, 5]}));

    // Another host with the same cache loads the compiled component.
    let again = TestHost::builder().file("stats.wasm", bytes).cache_dir(guests::shared_cache()).build();
    again.host.call("stats", "factorize", r#"{"n": 12}"#).await.unwrap();
    assert_eq!((again.host.load_stats().compiled(), again.host.load_stats().cache_hits()), (0, 1));
}

/// A changed Python plugin dropped into a watched folder replaces the one
/// being served.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_changed_python_plugin_is_hot_reloaded() {
    let t = TestHost::builder().cache_dir(guests::shared_cache()).build();
    let _watcher = t.host.watch().unwrap();
    publish(t.plugins.path(), "stats.wasm", &packaged_stats().await);
    wait_for(&t.host, |c| c.get("stats").is_some_and(|p| p.stub().version == "0.1.0")).await;
    t.host.call("stats", "factorize", r#"{"n": 12}"#).await.unwrap();

    // Version 0.2.0: the same source with another version and a new action.
    let source = tempfile::tempdir().unwrap();
    let app = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../examples/python-stats/app.py")).unwrap();
    let changed = app.replace("\"0.1.0\"", "\"0.2.0\"").replace(
        "Plugin = tools.export()",
        "@tools.action\ndef count(numbers: list[float]) -> dict:\n    \"\"\"Count numbers.\"\"\"\n    return {\"count\": len(numbers)}\n\n\nPlugin = tools.export()",
    );
    std::fs::write(source.path().join("app.py"), changed).unwrap();
    let built = source.path().join("stats.wasm");
    guests::build_python(source.path(), &built);
    let packaged = t.host.package(&built).await.unwrap_or_else(|e| panic!("{e}"));
    publish(t.plugins.path(), "stats.wasm", &packaged.bytes);
    wait_for(&t.host, |c| c.get("stats").is_some_and(|p| p.stub().version == "0.2.0")).await;
    assert_eq!(t.host.call("stats", "count", r#"{"numbers": [1, 2, 3]}"#).await.unwrap(), json!({"count": 3}));
}

/// The JavaScript example: schemas from its zod schemas, calls, the host's
/// schema check, a typed error, an exception's message, the compile cache,
/// and a call stopped at its time limit (48 s of work without one).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_javascript_plugin_is_described_called_and_contained() {
    let packager = TestHost::builder().cache_dir(guests::shared_cache()).build();
    let packaged = packager.host.package(guests::js_url()).await.unwrap_or_else(|e| panic!("{e}"));
    assert!(packaged.changed);
    let t = TestHost::builder().file("url.wasm", packaged.bytes.clone()).cache_dir(guests::shared_cache()).build();
    let actions: Vec<String> = t.host.catalog().get("url").unwrap().stub().action_names().map(str::to_owned).collect();
    assert_eq!(actions, ["parse", "build", "resolve", "decode"]);
    let build = t.host.session(None).unwrap().definition("url__build").await.unwrap();
    assert_eq!(build.input_schema["required"], json!(["base"]));
    assert_eq!(build.input_schema["additionalProperties"], json!(false));
    assert_eq!(build.input_schema["properties"]["query"]["default"], json!({}));

    let parts = t.host.call("url", "parse", r#"{"url": "https://example.com:8080/a/b?x=1&x=2#top"}"#).await.unwrap();
    assert_eq!((&parts["port"], &parts["query"]["x"]), (&json!(8080), &json!(["1", "2"])));
    let built = t.host.call("url", "build", r#"{"base": "https://h/s", "query": {"q": "a b&c", "n": 5}}"#).await;
    assert_eq!(built.unwrap(), json!({"url": "https://h/s?q=a+b%26c&n=5"}));
    let resolved = t.host.call("url", "resolve", r#"{"reference": "../c?d", "base": "https://h/a/b/"}"#).await;
    assert_eq!(resolved.unwrap(), json!({"url": "https://h/a/c?d"}));

    let error = t.host.call("url", "parse", r#"{"url": 7}"#).await.unwrap_err();
    assert_eq!(error.kind(), ErrorKind::InputSchema, "{error}");
    let error = t.host.call("url", "parse", r#"{"url": "not a url"}"#).await.unwrap_err();
    assert_eq!(guest_kind(&error), Some(GuestErrorKind::InvalidInput), "{error}");
    let error = t.host.call("url", "decode", r#"{"text": "%E0%A4%A"}"#).await.unwrap_err();
    assert_eq!(guest_kind(&error), Some(GuestErrorKind::Failed), "{error}");
    assert!(error.to_string().contains("URIError: "), "{error}");
    assert_eq!(t.host.call("url", "decode", r#"{"text": "caf%C3%A9"}"#).await.unwrap(), json!({"text": "café"}));
    // Packaging compiled it: the packaged file came from the cache.
    assert_eq!((t.host.load_stats().compiled(), t.host.load_stats().cache_hits()), (0, 1));

    // A call past its time limit is stopped inside the JavaScript engine (the
    // epoch deadline), and the plugin serves on: 40,000 parameters appended
    // one at a time re-serialise the growing query on every append.
    let limited = TestHost::builder()
        .file("url.wasm", packaged.bytes)
        .cache_dir(guests::shared_cache())
        .config("[plugins.url]\ntimeout_ms = 300")
        .build();
    let query: serde_json::Map<String, serde_json::Value> = (0..40_000).map(|i| (format!("k{i}"), json!(i))).collect();
    let started = std::time::Instant::now();
    let error =
        limited.host.call_json("url", "build", &json!({"base": "https://h/", "query": query})).await.unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Timeout, "{error}");
    assert!(started.elapsed() < std::time::Duration::from_secs(5), "stopped late: {:?}", started.elapsed());
    let parts = limited.host.call("url", "parse", r#"{"url": "https://example.com/"}"#).await.unwrap();
    assert_eq!(parts["host"], json!("example.com"));
}
