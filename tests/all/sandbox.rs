//! The sandbox, capability by capability: what a guest may reach (WASI
//! baseline, `log`, `config`, `wasi:http`, `sql`), the limits every call
//! runs under, and the linking rules of each kind's world.

use quiver::{ErrorKind, GuestErrorKind};
use quiver_tests::misbehave::{self, call_error, still_serves};
use quiver_tests::{TestHost, http_server};

// The WASI baseline: nothing granted.

#[tokio::test]
async fn the_guest_has_no_filesystem_and_no_environment() {
    let t = misbehave::host("");
    let error = call_error(&t.host, "write_file", r#"{"text": "x"}"#).await;
    assert!(matches!(error, quiver::Error::Guest { kind: GuestErrorKind::Denied, .. }), "{error}");
    assert!(!std::path::Path::new("/tmp/quiver-escape").exists());
    let home = t.host.call("misbehave", "env", r#"{"text": "HOME"}"#).await.unwrap();
    assert!(home.is_null(), "{home}");
}

// `log`, stdout and stderr: one budget, never the host's stdout.

#[tokio::test]
async fn megabytes_of_guest_output_are_contained() {
    let t = misbehave::host("");
    // 40,000 lines of 100 bytes: 4 MB on stdout and stderr, over the log budget.
    let out = t.host.call("misbehave", "spam", r#"{"n": 40000}"#).await.unwrap();
    assert_eq!(out, 40000);
    still_serves(&t.host).await;
}

// `config`: exactly the operator's values.

#[tokio::test]
async fn configuration_reaches_the_plugin() {
    let t = misbehave::host("[plugins.misbehave]\nconfig = { region = \"eu\", units = \"metric\" }");
    let out = t.host.call("misbehave", "config", "{}").await.unwrap();
    assert_eq!(out, serde_json::json!([["region", "eu"], ["units", "metric"]]));
    let out = t.host.call("misbehave", "log", r#"{"text": "hello log"}"#).await.unwrap();
    assert_eq!(out, "hello log");
}

// `wasi:http`: connectors only, and only to the allow-list.

/// The `connector` fixture reaches an allowed loopback server, and nothing else.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
pub(crate) async fn connector() {
    let allowed = http_server();
    let other = http_server();
    let t = TestHost::builder()
        .fixture("connector")
        .config(&format!("[plugins.fixture-connector]\nallow_http = [\"{allowed}\"]"))
        .build();
    let out = t
        .host
        .call_json("fixture-connector", "fetch", &serde_json::json!({ "url": format!("{allowed}/hello?x=1") }))
        .await
        .unwrap();
    assert_eq!(out["status"], 200);
    assert_eq!(out["body"], "you sent: GET /hello?x=1 HTTP/1.1");

    for url in [format!("{other}/secret"), "https://example.com/".to_owned()] {
        let error =
            t.host.call_json("fixture-connector", "fetch", &serde_json::json!({ "url": url })).await.unwrap_err();
        assert!(matches!(error, quiver::Error::Guest { kind: GuestErrorKind::Denied, .. }), "{error}");
    }
}

#[tokio::test]
async fn a_connector_with_no_allow_list_reaches_nothing() {
    let server = http_server();
    let t = TestHost::builder().fixture("connector").build();
    let error =
        t.host.call_json("fixture-connector", "fetch", &serde_json::json!({ "url": server })).await.unwrap_err();
    assert!(matches!(error, quiver::Error::Guest { kind: GuestErrorKind::Denied, .. }), "{error}");
}

/// The `sneaky` fixture is a tool that imports `wasi:http`: its world does
/// not allow it, so it is refused at load, before anything runs.
#[tokio::test]
pub(crate) async fn sneaky() {
    let t = TestHost::builder().fixture("sneaky").fixture("misbehave").build();
    let error = t.host.describe("sneaky").await.unwrap_err();
    assert_eq!(error.kind(), ErrorKind::WrongWorld, "{error}");
    assert!(error.to_string().contains("wasi:http"), "{error}");
    assert!(error.to_string().contains("only connectors"), "{error}");
    still_serves(&t.host).await;
}

// `sql`: database adapters only; no backend yet, so a typed `unavailable`.

/// The `database` fixture walks its tables, and its statements reach the
/// host's `sql` capability, which answers with a typed error, not a trap.
#[tokio::test]
pub(crate) async fn database() {
    let t = TestHost::builder().fixture("database").build();
    let manifest = t.host.describe("shop").await.unwrap();
    let actions: Vec<&str> = manifest.actions.iter().map(|a| a.name.as_str()).collect();
    assert_eq!(actions, ["list_tables", "describe_table", "query"]);

    let tables = t.host.call("shop", "list_tables", "{}").await.unwrap();
    assert_eq!(tables[0]["name"], "customers");
    assert_eq!(tables[1]["column_count"], 3);
    let schema = t.host.call("shop", "describe_table", r#"{"table": "orders"}"#).await.unwrap();
    assert_eq!(schema["columns"][2]["name"], "total");
    let error = t.host.call("shop", "describe_table", r#"{"table": "nope"}"#).await.unwrap_err();
    assert!(matches!(error, quiver::Error::Guest { kind: GuestErrorKind::NotFound, .. }), "{error}");
    let error = t.host.call("shop", "query", r#"{"sql": "select * from orders"}"#).await.unwrap_err();
    assert!(matches!(error, quiver::Error::Guest { kind: GuestErrorKind::Unavailable, .. }), "{error}");
}

// Limits: deadline, memory, output; a failure ends only its own call.

/// Each call gets a fresh instance whose memory is back to the component's
/// image, whatever the previous call on the same pool slot wrote (slots are
/// reset in place, not unmapped).
#[tokio::test]
async fn no_state_survives_a_call() {
    let t = misbehave::host("");
    for i in 0..50 {
        let text = format!("secret {i}");
        let out = t.host.call_json("misbehave", "remember", &serde_json::json!({ "text": text })).await.unwrap();
        assert_eq!(out, serde_json::json!([1, ""]), "call {i} saw another call's memory");
        // A call that grows memory in between.
        assert_eq!(t.host.call("misbehave", "alloc", r#"{"n": 2}"#).await.unwrap(), 2);
    }
}

/// `instances = "per-caller"` (the operator's opt-in): a caller's calls
/// share an instance, and what one leaves in memory the next sees; another
/// agent or another access level is another caller; a call that panicked,
/// ran out of time or hit its memory cap leaves no instance behind.
#[tokio::test]
async fn a_callers_calls_share_an_instance_only_when_the_operator_says_so() {
    use quiver::invoke::Caller;
    use serde_json::json;
    let t = misbehave::host("[plugins.misbehave]\ninstances = \"per-caller\"\ntimeout_ms = 1000\nmemory_mb = 8");
    let remember = |caller: Caller, text: &str| {
        let (host, input) = (&t.host, json!({ "text": text }));
        async move { host.call_as(&caller, "misbehave", "remember", input).await.unwrap().result.unwrap().into_json() }
    };
    let agent = |name: &str| Caller { agent: Some(name.into()), ..Caller::operator() };
    let reader = Caller {
        access: std::sync::Arc::new([("misbehave".to_owned(), quiver::contract::Access::Read)].into()),
        ..Caller::operator()
    };
    assert_eq!(remember(Caller::operator(), "mine").await, json!([1, ""]));
    assert_eq!(remember(Caller::operator(), "again").await, json!([2, "mine"]), "its last call's memory");
    assert_eq!(remember(agent("b"), "theirs").await, json!([1, ""]), "another agent never sees it");
    assert_eq!(remember(reader.clone(), "read").await, json!([1, ""]), "nor another access level");
    assert_eq!(remember(agent("b"), "more").await, json!([2, "theirs"]));
    // Each call has a deadline of its own: a call later than the first
    // call's whole time limit, which runs across several of the engine's
    // ticks (each checks the deadline), still ends well.
    tokio::time::sleep(std::time::Duration::from_millis(1100)).await;
    let spam = t.host.call_as(&agent("b"), "misbehave", "spam", json!({ "n": 20000 })).await.unwrap();
    assert_eq!(spam.result.unwrap().into_json(), json!(20000));
    assert_eq!(remember(agent("b"), "later").await, json!([3, "more"]));

    for (action, input) in [("panic", r#"{"text": "boom"}"#), ("spin", "{}"), ("alloc", r#"{"n": 64}"#)] {
        remember(Caller::operator(), "before").await;
        t.host.call("misbehave", action, input).await.unwrap_err();
        assert_eq!(remember(Caller::operator(), "after").await, json!([1, ""]), "{action} left its instance");
    }
    // Three instances for the three callers, one more after each failure;
    // every other call ran in a kept one.
    let stats = t.host.load_stats();
    assert_eq!((stats.instantiated(), stats.reused()), (6, 10));
}

#[tokio::test]
async fn an_infinite_loop_hits_the_deadline() {
    let t = misbehave::host("[plugins.misbehave]\ntimeout_ms = 300");
    let error = call_error(&t.host, "spin", "{}").await;
    assert_eq!(error.kind(), ErrorKind::Timeout, "{error}");
    assert!(error.to_string().contains("300 ms"), "{error}");
}

#[tokio::test]
async fn a_memory_bomb_hits_the_limit() {
    let t = misbehave::host("[plugins.misbehave]\nmemory_mb = 16");
    let error = call_error(&t.host, "alloc", r#"{"n": 64}"#).await;
    assert_eq!(error.kind(), ErrorKind::MemoryLimit, "{error}");
    // Under the limit, the same action works.
    assert_eq!(t.host.call("misbehave", "alloc", r#"{"n": 4}"#).await.unwrap(), 4);
}

#[tokio::test]
async fn an_output_over_the_cap_is_refused() {
    let t = misbehave::host("[plugins.misbehave]\nmax_output_kb = 64");
    let error = call_error(&t.host, "big_output", r#"{"n": 100000}"#).await;
    assert_eq!(error.kind(), ErrorKind::OutputTooLarge, "{error}");
    let out = t.host.call("misbehave", "big_output", r#"{"n": 1000}"#).await.unwrap();
    assert_eq!(out.as_str().unwrap().len(), 1000);
}

/// Instance slots are waited for within the call's own time limit, in a
/// queue of bounded length: past either, a call is refused as busy
/// instead of waiting behind every slow call before it. One slot, held by
/// a spinning call (3 s); `calc` calls (300 ms limit) are tried until one
/// finds the slot taken.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_house_refuses_calls_as_busy() {
    for (queue, expected) in [(0, "already waiting"), (4, "stayed busy")] {
        let config = format!(
            "[engine]\nmax_concurrency = 1\nmax_queue = {queue}\n[plugins.misbehave]\ntimeout_ms = 3000\n\
             [plugins.calc]\ntimeout_ms = 300"
        );
        let t = TestHost::builder().bundled().fixture("misbehave").config(&config).build();
        let evaluate = || t.host.call("calc", "evaluate", r#"{"expression": "1 + 1"}"#);
        evaluate().await.unwrap();
        t.host.call("misbehave", "echo", r#"{"text": "compiled"}"#).await.unwrap();
        let spinner = {
            let host = t.host.clone();
            // Without a queue, the spinner itself may find the slot taken.
            tokio::spawn(async move {
                loop {
                    match host.call("misbehave", "spin", "{}").await {
                        Err(error) if error.kind() == ErrorKind::Busy => tokio::task::yield_now().await,
                        outcome => return outcome,
                    }
                }
            })
        };
        let refused = loop {
            match evaluate().await {
                Ok(_) => tokio::task::yield_now().await,
                Err(error) => break error,
            }
        };
        assert_eq!(refused.kind(), ErrorKind::Busy, "queue {queue}: {refused}");
        assert!(refused.to_string().contains(expected), "queue {queue}: {refused}");
        assert!(refused.remedy().unwrap().contains("max_concurrency"), "{refused}");
        assert_eq!(spinner.await.unwrap().unwrap_err().kind(), ErrorKind::Timeout);
        evaluate().await.unwrap();
    }
}

/// Error and crash texts are capped too: a guest cannot hand a model (or
/// the log) megabytes through an error.
#[tokio::test]
async fn long_error_and_panic_texts_are_cut() {
    let t = misbehave::host("");
    let long = "x".repeat(300_000);
    for action in ["missing", "panic"] {
        let error = call_error(&t.host, action, &serde_json::json!({ "text": long }).to_string()).await;
        let text = error.to_string();
        assert!(text.len() < 6_000 && text.contains("more bytes"), "{action}: {} bytes", text.len());
    }
}

/// A guest's error and panic texts pass the one sanitiser on their way to
/// a host error: control characters (escape sequences, a carriage return,
/// a bell), bidirectional overrides and C1 controls are escaped; line
/// breaks and tabs stay.
#[tokio::test]
async fn guest_error_and_panic_texts_are_escaped() {
    let t = misbehave::host("");
    let hostile = "first\n\tsecond\r\u{1b}[2J\u{1b}]0;pwned\u{7}\u{202e}\u{9b}";
    for action in ["missing", "panic"] {
        let error = call_error(&t.host, action, &serde_json::json!({ "text": hostile }).to_string()).await;
        let message = match &error {
            quiver::Error::Guest { message, .. } | quiver::Error::Trap { message, .. } => message.clone(),
            other => panic!("{action}: not the guest's error: {other}"),
        };
        let raw: Vec<char> =
            message.chars().filter(|&c| quiver::contract::unsafe_char(c, quiver::contract::Shape::Lines)).collect();
        assert!(raw.is_empty(), "{action}: {raw:?} raw in {message:?}");
        assert!(message.contains("first\n\tsecond\\r\\u{1b}[2J"), "{action}: {message:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crash_in_one_call_does_not_affect_concurrent_calls() {
    let t = misbehave::host("[plugins.misbehave]\ntimeout_ms = 2000");
    let host = t.host.clone();
    let mut tasks = Vec::new();
    for i in 0..40 {
        let host = host.clone();
        tasks.push(tokio::spawn(async move {
            match i % 4 {
                0 => host.call("misbehave", "panic", r#"{"text": "boom"}"#).await.unwrap_err().kind(),
                1 => host.call("misbehave", "alloc", r#"{"n": 100}"#).await.unwrap_err().kind(),
                _ => {
                    let text = format!("call {i}");
                    let out = host.call_json("misbehave", "echo", &serde_json::json!({ "text": text })).await;
                    assert_eq!(out.unwrap(), text.as_str());
                    ErrorKind::Internal
                }
            }
        }));
    }
    let mut kinds = Vec::new();
    for task in tasks {
        kinds.push(task.await.unwrap());
    }
    assert_eq!(kinds.iter().filter(|k| **k == ErrorKind::Trap).count(), 10);
    assert_eq!(kinds.iter().filter(|k| **k == ErrorKind::MemoryLimit).count(), 10);
    assert_eq!(kinds.iter().filter(|k| **k == ErrorKind::Internal).count(), 20);
}
