//! Calls: input is validated before the guest runs, and a guest's own
//! errors and crashes reach the caller with their kind and message. (The
//! limits a call runs under are the `sandbox` module's.)

use quiver::{ErrorKind, GuestErrorKind};
use quiver_tests::misbehave::{self, call_error};

#[tokio::test]
async fn unknown_names_are_errors_that_list_the_known_ones() {
    let t = misbehave::host("");
    let error = t.host.call("nope", "echo", "{}").await.unwrap_err();
    assert_eq!(error.kind(), ErrorKind::UnknownPlugin);
    assert!(error.to_string().contains("misbehave"), "{error}");
    let error = call_error(&t.host, "nope", "{}").await;
    assert_eq!(error.kind(), ErrorKind::UnknownAction);
    assert!(error.to_string().contains("echo"), "{error}");
    // An unknown action is refused from the stub alone: nothing compiled.
    let t = misbehave::host("");
    let _ = t.host.call("misbehave", "nope", "{}").await;
    assert_eq!(t.host.load_stats().compiled(), 0);
}

#[tokio::test]
async fn input_must_be_a_json_object_matching_the_schema() {
    let t = misbehave::host("");
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

/// The `misbehave` fixture's own typed error reaches the caller whole.
#[tokio::test]
pub(crate) async fn misbehave() {
    let t = misbehave::host("");
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
    let t = misbehave::host("");
    let error = call_error(&t.host, "panic", r#"{"text": "the sky fell"}"#).await;
    assert_eq!(error.kind(), ErrorKind::Trap, "{error}");
    assert!(error.to_string().contains("the sky fell"), "{error}");
}
