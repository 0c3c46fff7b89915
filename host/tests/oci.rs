//! `quiver push`, `quiver oci resolve` and `quiver oci pull` against
//! Debian's real `docker-registry` asking for credentials: published,
//! pinned, pulled and compiled ahead, then served with the registry gone;
//! the password reaches the registry and nothing else.

use std::path::Path;
use std::process::{Command, Output};

use quiver_tests::builds;
use quiver_tests::registry::OciRegistry;

const PASSWORD: &str = "s3cret-registry-pass";

fn quiver(folder: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_quiver"))
        .current_dir(folder)
        .args(args)
        .env_remove("QUIVER_CONFIG")
        .env_remove("QUIVER_CACHE_DIR")
        .env("REGISTRY_PASSWORD", PASSWORD)
        .env("RUST_LOG", "info")
        .output()
        .expect("run quiver")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Nothing it printed holds the password; its stdout.
fn clean(out: &Output) -> String {
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(!stdout.contains(PASSWORD) && !stderr.contains(PASSWORD), "the password was shown: {stdout}{stderr}");
    stdout
}

#[test]
fn push_resolve_pull_then_serve_with_the_registry_gone() {
    let mut registry = OciRegistry::with_user("ci", PASSWORD);
    let folder = tempfile::tempdir().unwrap();
    let dir = folder.path();
    std::fs::write(dir.join("versioned.wasm"), builds::versioned(1)).unwrap();
    let tag = format!("{}:1.0", registry.repo("tools/versioned"));

    // Without credentials the registry says no, and the error says so.
    let out = quiver(dir, &["push", "versioned.wasm", &tag, "--insecure"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert!(text(&out.stderr).to_lowercase().contains("authoriz"), "{}", text(&out.stderr));

    let out = quiver(
        dir,
        &["push", "versioned.wasm", &tag, "--insecure", "--username", "ci", "--password-env", "REGISTRY_PASSWORD"],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let digest = clean(&out).trim().to_owned();
    assert!(digest.starts_with("sha256:") && digest.len() == 71, "one digest on stdout: {digest:?}");

    std::fs::write(
        dir.join("quiver.toml"),
        format!(
            "bundled = false\ncache_dir = \"cache\"\n\n[[oci]]\nref = \"{tag}\"\ninsecure = true\nusername = \"ci\"\n\
             password_env = \"REGISTRY_PASSWORD\"\n"
        ),
    )
    .unwrap();
    let config = ["--config", "quiver.toml"];
    let run = |args: &[&str]| quiver(dir, &[&config[..], args].concat());

    // A tag is not served until it is resolved into the lock file.
    let out = run(&["oci", "pull"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(clean(&out).contains("quiver oci resolve"));

    let out = run(&["oci", "resolve"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(clean(&out).trim(), format!("{tag} {digest}"));
    let lock = std::fs::read_to_string(dir.join("quiver.lock")).unwrap();
    assert!(lock.contains(&format!("\"{tag}\" = \"{digest}\"")), "{lock}");

    // Pulled and compiled ahead (an init container's job).
    let out = run(&["oci", "pull"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let states: serde_json::Value = serde_json::from_str(&clean(&out)).unwrap();
    assert_eq!(states[0]["state"], "stored", "{states}");
    assert_eq!(states[0]["digest"], digest.as_str());
    assert!(text(&out.stderr).contains("plugin compiled"), "{}", text(&out.stderr));

    // The registry goes away; the store serves, from the compile cache.
    registry.stop();
    let out = run(&["call", "versioned", "build", "{}"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(clean(&out).contains("gen-0001"));
    assert!(!text(&out.stderr).contains("pulled"), "nothing pulled: {}", text(&out.stderr));
    assert!(text(&out.stderr).contains("source=CacheHit"), "compiled ahead: {}", text(&out.stderr));
    let out = run(&["list"]);
    assert!(clean(&out).contains("versioned"), "{}", text(&out.stdout));

    // Collecting the store keeps what is configured; with the lock gone,
    // what the tag pins is unknown, and nothing is collected.
    let out = run(&["oci", "gc"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let kept: serde_json::Value = serde_json::from_str(&clean(&out)).unwrap();
    assert_eq!((kept["files"].as_u64(), kept["artifacts"].as_array().map(Vec::len)), (Some(0), Some(0)), "{kept}");
    std::fs::rename(dir.join("quiver.lock"), dir.join("quiver.lock.kept")).unwrap();
    let out = run(&["oci", "gc"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stdout));
    clean(&out);
    assert!(text(&out.stderr).contains("fix it first"), "{}", text(&out.stderr));
    // Once the entry leaves the configuration, its artifact goes.
    std::fs::write(dir.join("quiver.toml"), "bundled = false\ncache_dir = \"cache\"\n").unwrap();
    let out = run(&["oci", "gc"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let gone: serde_json::Value = serde_json::from_str(&clean(&out)).unwrap();
    assert_eq!(gone["artifacts"], serde_json::json!([digest]), "{gone}");
    assert!(!dir.join("cache/oci/manifests").read_dir().unwrap().any(|_| true), "{gone}");
    assert!(!dir.join("cache/oci/sha256").read_dir().unwrap().any(|_| true), "{gone}");
}
