//! Build workspace crates as `wasm32-wasip2` components from a build script
//! (the "artifacts crate" pattern wasmtime uses for its test programs).
//!
//! A build dependency of `bundle/build.rs` (the bundled plugins) and
//! `tests/build.rs` (the test fixtures). Every caller uses one target
//! directory, so the guest dependencies are compiled once per machine, and
//! the outer build's lock is never contended (it lives in another directory).

use std::path::{Path, PathBuf};
use std::process::Command;

/// The cargo profile guest components are built with (see the workspace
/// `Cargo.toml`): size-optimised, LTO, `panic = "abort"`.
pub const PROFILE: &str = "plugin";

/// A built component.
pub struct Component {
    /// The cargo package name, e.g. `quiver-plugin-calc`.
    pub package: String,
    /// Where the built `.wasm` is.
    pub wasm: PathBuf,
}

/// The `[package]` table of `dir/Cargo.toml`, read as TOML.
fn package(dir: &Path) -> Option<toml::Table> {
    let manifest = std::fs::read_to_string(dir.join("Cargo.toml")).ok()?;
    let mut manifest: toml::Table = manifest.parse().ok()?;
    match manifest.remove("package")? {
        toml::Value::Table(package) => Some(package),
        _ => None,
    }
}

/// The package name declared in `dir/Cargo.toml`.
pub fn package_name(dir: &Path) -> Option<String> {
    package(dir)?.get("name")?.as_str().map(str::to_owned)
}

/// What `dir/Cargo.toml` says under `[package.metadata.quiver]` for `key`
/// (a string), e.g. a plugin's `role` or a fixture's test `suite`.
pub fn quiver_metadata(dir: &Path, key: &str) -> Option<String> {
    package(dir)?.get("metadata")?.get("quiver")?.get(key)?.as_str().map(str::to_owned)
}

/// The crate directories directly under `parent` (those with a `Cargo.toml`),
/// sorted, except `skip`.
pub fn crate_dirs(parent: &Path, skip: &[&str]) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(parent)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", parent.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.join("Cargo.toml").is_file())
        .filter(|p| !skip.iter().any(|s| p.file_name().is_some_and(|n| n == *s)))
        .collect();
    dirs.sort();
    dirs
}

/// Build `packages` of the workspace at `root` for `wasm32-wasip2`.
pub fn build(root: &Path, packages: &[String]) -> Vec<Component> {
    // Rebuild when the WIT, the contract rules, the SDK or the lock file change; callers add
    // their own crate directories.
    for path in ["wit", "contract", "sdk", "Cargo.lock", "Cargo.toml"] {
        println!("cargo:rerun-if-changed={}", root.join(path).display());
    }
    let target_dir = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .map(|t| if t.is_absolute() { t } else { root.join(t) })
        .unwrap_or_else(|| root.join("target"))
        .join("quiver-components");
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    // One `cargo rustc` per crate, as a `cdylib` only: a bundled plugin is
    // also an `rlib` (so the bundle's build script can compute its manifest
    // natively), and mixed crate types would lose the profile's LTO.
    for package in packages {
        let mut cmd = Command::new(&cargo);
        cmd.arg("rustc")
            .arg("--quiet")
            .arg("--manifest-path")
            .arg(root.join("Cargo.toml"))
            .arg("--target")
            .arg("wasm32-wasip2")
            .arg("--profile")
            .arg(PROFILE)
            .arg("--target-dir")
            .arg(&target_dir)
            .arg("-p")
            .arg(package)
            .arg("--lib")
            .arg("--crate-type")
            .arg("cdylib");
        // Settings of the outer build that must not leak into the guest build:
        // host rustflags, clippy's wrapper, an explicit target.
        for var in [
            "CARGO_ENCODED_RUSTFLAGS",
            "RUSTFLAGS",
            "RUSTC_WORKSPACE_WRAPPER",
            "RUSTC_WRAPPER",
            "CARGO_BUILD_TARGET",
            "CARGO_TARGET_DIR",
            "CARGO_PRIMARY_PACKAGE",
        ] {
            cmd.env_remove(var);
        }
        let output = cmd.output().expect("cannot run cargo to build the wasm components");
        if !output.status.success() {
            let stderr = String::from_utf8_lossy(&output.stderr);
            let hint = if stderr.contains("wasm32-wasip2") && stderr.contains("std") {
                "\n\nThe wasm32-wasip2 target is missing: run `rustup target add wasm32-wasip2`."
            } else {
                ""
            };
            panic!("building the wasm component {package} failed:\n{stderr}{hint}");
        }
    }
    packages
        .iter()
        .map(|p| {
            let wasm = target_dir.join("wasm32-wasip2").join(PROFILE).join(format!("{}.wasm", p.replace('-', "_")));
            assert!(wasm.is_file(), "cargo built {p} but {} is missing", wasm.display());
            Component { package: p.clone(), wasm }
        })
        .collect()
}
