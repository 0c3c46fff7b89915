//! What the `quiver` binary's tests share: a plugins folder with the
//! `misbehave` fixture and a compile cache, and a way to run the binary
//! over them.

#![allow(dead_code)]

use std::process::{Command, Output};

use quiver_tests::fixtures;

/// A plugins folder and a compile cache for the binary.
pub(crate) struct Cli {
    pub(crate) cache: tempfile::TempDir,
    pub(crate) plugins: tempfile::TempDir,
}

impl Cli {
    /// A plugins folder with the `misbehave` fixture, and an empty cache.
    pub(crate) fn new() -> Cli {
        let plugins = tempfile::tempdir().unwrap();
        std::fs::copy(fixtures::MISBEHAVE, plugins.path().join("misbehave.wasm")).unwrap();
        Cli { cache: tempfile::tempdir().unwrap(), plugins }
    }

    /// Run the binary over them with `args`, logging at info.
    pub(crate) fn run(&self, args: &[&str]) -> Output {
        Command::new(env!("CARGO_BIN_EXE_quiver"))
            .arg("--cache-dir")
            .arg(self.cache.path())
            .arg("--plugins")
            .arg(self.plugins.path())
            .args(args)
            .env_remove("QUIVER_CONFIG")
            .env("RUST_LOG", "info")
            .output()
            .expect("run quiver")
    }
}

/// What a run wrote on stdout.
pub(crate) fn stdout(output: &Output) -> String {
    String::from_utf8(output.stdout.clone()).unwrap()
}

/// What a run wrote on stderr.
pub(crate) fn stderr(output: &Output) -> String {
    String::from_utf8(output.stderr.clone()).unwrap()
}

/// The first two lines a 2025-11-25 client sends on stdio.
pub(crate) const HANDSHAKE: [&str; 2] = [
    r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"test","version":"0"}}}"#,
    r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
];

/// Build the plugin project in `project` for wasm32-wasip2, in `target`,
/// as its author would (the outer build's settings left out).
pub(crate) fn build_project(project: &std::path::Path, target: &std::path::Path) -> Output {
    let mut cargo = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    cargo.current_dir(project).args(["build", "--quiet", "--release", "--target", "wasm32-wasip2"]);
    for var in ["CARGO_ENCODED_RUSTFLAGS", "RUSTFLAGS", "RUSTC_WORKSPACE_WRAPPER", "RUSTC_WRAPPER"] {
        cargo.env_remove(var);
    }
    cargo.env("CARGO_TARGET_DIR", target).output().expect("run cargo")
}
