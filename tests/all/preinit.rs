//! Pre-initialisation: a plugin's `#[init]` function (its `wizer-initialize`
//! export) runs once, in the sandbox with no grants, before the plugin is
//! compiled or when it is packaged; every instance starts from the state it
//! left, and a failure is reported with its message.

use quiver::ErrorKind;
use quiver_tests::{TestHost, fixtures};
use serde_json::{Value, json};

const GREETING: &str = "[plugins.initialized]\nconfig = { greeting = \"hello\" }";

async fn state(t: &TestHost) -> Value {
    t.host.call_json("initialized", "state", &json!({})).await.unwrap_or_else(|e| panic!("{e}"))
}

fn expected_state() -> Value {
    json!({
        "initialized": true,
        // The init function ran with no grants: configuration is not there.
        "greeting_at_init": null,
        "greeting_now": "hello",
        "sum": (0..10_000u64).map(|i| i * i).sum::<u64>(),
        // Each call is a fresh instance of the snapshot.
        "calls": 1,
    })
}

/// Initialised once before the first compile; each call's fresh instance
/// starts from that state; a second host reads the initialised component
/// from the compile cache and initialises nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
pub(crate) async fn initialized() {
    let t = TestHost::builder().fixture("initialized").config(GREETING).build();
    for _ in 0..3 {
        assert_eq!(state(&t).await, expected_state());
    }
    let stats = t.host.load_stats();
    assert_eq!((stats.initialized(), stats.compiled(), stats.cache_hits()), (1, 1, 0));

    let again = TestHost::builder().fixture("initialized").config(GREETING).cache_dir(t.cache.path()).build();
    assert_eq!(state(&again).await, expected_state());
    let stats = again.host.load_stats();
    assert_eq!((stats.initialized(), stats.compiled(), stats.cache_hits()), (0, 0, 1));
}

/// `quiver package` writes the initialised component: served from a fresh
/// cache it is compiled but never initialised again, and packaging it a
/// second time changes nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn packaging_writes_the_initialised_component() {
    let packager = TestHost::builder().build();
    let packaged = packager.host.package(std::path::Path::new(fixtures::INITIALIZED)).await.unwrap();
    assert!(packaged.changed);
    assert_eq!(packager.host.load_stats().initialized(), 1);

    let t = TestHost::builder().file("initialized.wasm", packaged.bytes.clone()).config(GREETING).build();
    assert_eq!(state(&t).await, expected_state());
    let stats = t.host.load_stats();
    assert_eq!((stats.initialized(), stats.compiled()), (0, 1), "the packaged file is already initialised");

    let file = t.plugins.path().join("initialized.wasm");
    let again = packager.host.package(&file).await.unwrap();
    assert!(!again.changed, "an initialised, packaged component is left as it is");
    assert_eq!(packager.host.load_stats().initialized(), 1);
}

/// An init function that panics: the plugin fails to load with the panic's
/// message (as a load error, never a crash of the host), and the host keeps
/// serving the others.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
pub(crate) async fn init_fails() {
    let t = TestHost::builder().fixture("init-fails").fixture("initialized").build();
    let error = t.host.call_json("init-fails", "never", &json!({})).await.unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Compile, "{error}");
    let text = error.to_string();
    assert!(text.contains("`wizer-initialize`") && text.contains("the lookup table is corrupt"), "{text}");
    let checked = t.host.check(std::path::Path::new(fixtures::INIT_FAILS)).await.unwrap_err();
    assert!(checked.to_string().contains("the lookup table is corrupt"), "{checked}");
    assert_eq!(state(&t).await["initialized"], json!(true));
}
