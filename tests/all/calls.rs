//! Calls: input is validated before the guest runs, and every way a guest
//! can fail ends as a clear error for that call only.

use quiver::{ErrorKind, GuestErrorKind};
use quiver_tests::TestHost;

fn host_with(config: &str) -> TestHost {
    TestHost::builder().fixture("misbehave").config(config).build()
}

async fn still_serves(host: &quiver::Host) {
    let out = host.call("misbehave", "echo", r#"{"text": "ok"}"#).await.unwrap();
    assert_eq!(out, "ok");
}

async fn call_error(host: &quiver::Host, action: &str, input: &str) -> quiver::Error {
    let error = host.call("misbehave", action, input).await.unwrap_err();
    still_serves(host).await;
    error
}

#[tokio::test]
async fn unknown_names_are_errors_that_list_the_known_ones() {
    let t = host_with("");
    let error = t.host.call("nope", "echo", "{}").await.unwrap_err();
    assert_eq!(error.kind(), ErrorKind::UnknownPlugin);
    assert!(error.to_string().contains("misbehave"), "{error}");
    let error = call_error(&t.host, "nope", "{}").await;
    assert_eq!(error.kind(), ErrorKind::UnknownAction);
    assert!(error.to_string().contains("echo"), "{error}");
    // An unknown action is refused from the stub alone: nothing compiled.
    let t = host_with("");
    let _ = t.host.call("misbehave", "nope", "{}").await;
    assert_eq!(t.host.load_stats().compiled(), 0);
}

#[tokio::test]
async fn input_must_be_a_json_object_matching_the_schema() {
    let t = host_with("");
    let kind = |e: quiver::Error| e.kind();
    assert_eq!(kind(call_error(&t.host, "echo", "not json").await), ErrorKind::InputNotJson);
    assert_eq!(kind(call_error(&t.host, "echo", "[1, 2]").await), ErrorKind::InputNotJson);
    assert_eq!(kind(call_error(&t.host, "echo", r#"{"text": 5}"#).await), ErrorKind::InputSchema);
    assert_eq!(kind(call_error(&t.host, "echo", "{}").await), ErrorKind::InputSchema);
    // Integer ranges come from the Rust type and its attributes.
    let error = call_error(&t.host, "bounded", r#"{"n": 11}"#).await;
    assert_eq!(error.kind(), ErrorKind::InputSchema);
    assert!(error.to_string().contains("/n"), "{error}");
    // deny_unknown_fields becomes additionalProperties: false.
    assert_eq!(kind(call_error(&t.host, "bounded", r#"{"n": 1, "x": 1}"#).await), ErrorKind::InputSchema);
    // Option fields are optional.
    assert_eq!(t.host.call("misbehave", "bounded", r#"{"n": 3}"#).await.unwrap(), 3);
    assert_eq!(t.host.call("misbehave", "bounded", r#"{"n": 3, "note": "hi"}"#).await.unwrap(), 3);
}

#[tokio::test]
async fn a_guest_error_keeps_its_kind_and_message() {
    let t = host_with("");
    let error = call_error(&t.host, "missing", r#"{"text": "the key"}"#).await;
    match &error {
        quiver::Error::Guest { kind, message, .. } => {
            assert_eq!(*kind, GuestErrorKind::NotFound);
            assert_eq!(message, "no such thing: the key");
        }
        other => panic!("expected a guest error, got {other}"),
    }
}

#[tokio::test]
async fn a_panic_is_a_trap_with_the_panic_message() {
    let t = host_with("");
    let error = call_error(&t.host, "panic", r#"{"text": "the sky fell"}"#).await;
    assert_eq!(error.kind(), ErrorKind::Trap, "{error}");
    assert!(error.to_string().contains("the sky fell"), "{error}");
}

#[tokio::test]
async fn an_infinite_loop_hits_the_deadline() {
    let t = host_with("[plugins.misbehave]\ntimeout_ms = 300");
    let error = call_error(&t.host, "spin", "{}").await;
    assert_eq!(error.kind(), ErrorKind::Timeout, "{error}");
    assert!(error.to_string().contains("300 ms"), "{error}");
}

#[tokio::test]
async fn a_memory_bomb_hits_the_limit() {
    let t = host_with("[plugins.misbehave]\nmemory_mb = 16");
    let error = call_error(&t.host, "alloc", r#"{"n": 64}"#).await;
    assert_eq!(error.kind(), ErrorKind::MemoryLimit, "{error}");
    // Under the limit, the same action works.
    assert_eq!(t.host.call("misbehave", "alloc", r#"{"n": 4}"#).await.unwrap(), 4);
}

#[tokio::test]
async fn megabytes_of_guest_output_are_contained() {
    let t = host_with("");
    // 40,000 lines of 100 bytes: 4 MB on stdout and stderr, over the log budget.
    let out = t.host.call("misbehave", "spam", r#"{"n": 40000}"#).await.unwrap();
    assert_eq!(out, 40000);
    still_serves(&t.host).await;
}

#[tokio::test]
async fn an_output_over_the_cap_is_refused() {
    let t = host_with("[plugins.misbehave]\nmax_output_kb = 64");
    let error = call_error(&t.host, "big_output", r#"{"n": 100000}"#).await;
    assert_eq!(error.kind(), ErrorKind::OutputTooLarge, "{error}");
    let out = t.host.call("misbehave", "big_output", r#"{"n": 1000}"#).await.unwrap();
    assert_eq!(out.as_str().unwrap().len(), 1000);
}

#[tokio::test]
async fn the_guest_has_no_filesystem_and_no_environment() {
    let t = host_with("");
    let error = call_error(&t.host, "write_file", r#"{"text": "x"}"#).await;
    assert!(matches!(error, quiver::Error::Guest { kind: GuestErrorKind::Denied, .. }), "{error}");
    assert!(!std::path::Path::new("/tmp/quiver-escape").exists());
    let home = t.host.call("misbehave", "env", r#"{"text": "HOME"}"#).await.unwrap();
    assert!(home.is_null(), "{home}");
}

#[tokio::test]
async fn configuration_reaches_the_plugin() {
    let t = host_with("[plugins.misbehave]\nconfig = { region = \"eu\", units = \"metric\" }");
    let out = t.host.call("misbehave", "config", "{}").await.unwrap();
    assert_eq!(out, serde_json::json!([["region", "eu"], ["units", "metric"]]));
    let out = t.host.call("misbehave", "log", r#"{"text": "hello log"}"#).await.unwrap();
    assert_eq!(out, "hello log");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crash_in_one_call_does_not_affect_concurrent_calls() {
    let t = host_with("[plugins.misbehave]\ntimeout_ms = 2000");
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
