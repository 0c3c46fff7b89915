//! Plugins in other languages, built from source by their documented
//! commands once per test run (not per test): the Python example with
//! componentize-py (installed by `.ci/run` into `target/venv`), the
//! JavaScript one with esbuild and componentize-js (`.ci/run` runs
//! `npm install --prefix examples/js-url`).

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_owned()
}

/// Where built guests go (kept between runs: the build overwrites).
fn out_dir() -> PathBuf {
    let dir = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .map(|t| if t.is_absolute() { t } else { root().join(t) })
        .unwrap_or_else(|| root().join("target"))
        .join("guests");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Build `examples/python-stats` from `source` (its folder, or a changed
/// copy) into `out` with its build script; a missing componentize-py fails
/// the test, naming the command that installs it.
pub fn build_python(source: &Path, out: &Path) {
    let script = root().join("examples/python-stats/build.sh");
    let output = std::process::Command::new("bash").arg(&script).arg(out).arg(source).output().expect("run bash");
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr);
        let hint = if stderr.contains("componentize-py") && stderr.contains("No such file") {
            "\ncomponentize-py is missing: run `bash .ci/run`, which installs it into target/venv"
        } else {
            ""
        };
        panic!("building the Python example failed:\n{stderr}{hint}");
    }
}

/// The Python example plugin (`stats` 0.1.0), built once per test run,
/// not yet packaged (no stub).
pub fn python_stats() -> &'static Path {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT.get_or_init(|| {
        let out = out_dir().join("stats.wasm");
        build_python(&root().join("examples/python-stats"), &out);
        out
    })
}

/// The JavaScript example plugin (`url` 0.1.0), built once per test run,
/// not yet packaged (no stub).
pub fn js_url() -> &'static Path {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT.get_or_init(|| {
        let out = out_dir().join("url.wasm");
        let script = root().join("examples/js-url/build.sh");
        let output = std::process::Command::new("bash").arg(&script).arg(&out).output().expect("run bash");
        if !output.status.success() {
            let stderr = String::from_utf8_lossy(&output.stderr);
            panic!(
                "building the JavaScript example failed:\n{stderr}\n(its tools come from `npm install --prefix \
                 examples/js-url`, which `bash .ci/run` runs)"
            );
        }
        out
    })
}

/// `tests/components/wit/plain.wit`: the plain interfaces (package
/// `acme:plain`) the three components below export, with their doc comments.
pub fn plain_wit() -> PathBuf {
    root().join("tests/components/wit/plain.wit")
}

/// Run `build.sh OUT.wasm` of `tests/components/NAME` into the guests out
/// dir as `NAME.wasm`; on failure, panic with its stderr and `install`.
fn build_plain(name: &str, install: &str) -> PathBuf {
    let out = out_dir().join(format!("{name}.wasm"));
    let script = root().join("tests/components").join(name).join("build.sh");
    let output = std::process::Command::new("bash").arg(&script).arg(&out).output().expect("run bash");
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr);
        panic!("building the {name} component failed:\n{stderr}\n({install})");
    }
    out
}

/// A JavaScript component that knows nothing about Quiver (world
/// `acme:plain/scripted` of [`plain_wit`]), built once per test run.
pub fn plain_js() -> &'static Path {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT.get_or_init(|| {
        build_plain("plain-js", "its tools come from `npm install --prefix examples/js-url`, which `bash .ci/run` runs")
    })
}

/// A Python component that knows nothing about Quiver (world
/// `acme:plain/scripted` of [`plain_wit`]), built once per test run.
pub fn plain_python() -> &'static Path {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT.get_or_init(|| {
        build_plain(
            "plain-py",
            "it needs componentize-py 0.25.1: run `bash .ci/run`, which installs it into target/venv \
             (COMPONENTIZE_PY overrides)",
        )
    })
}

/// A compile cache shared by the tests of one run, so the 18 MB Python
/// component is compiled once, not once per test host.
pub fn shared_cache() -> &'static Path {
    static CACHE: OnceLock<tempfile::TempDir> = OnceLock::new();
    CACHE.get_or_init(|| tempfile::tempdir().unwrap()).path()
}
