//! The `quiver` binary: exit codes, stdout purity, error messages.

use std::process::{Command, Output};

use quiver_tests::fixtures;

struct Cli {
    cache: tempfile::TempDir,
    plugins: tempfile::TempDir,
}

impl Cli {
    fn new() -> Cli {
        let plugins = tempfile::tempdir().unwrap();
        std::fs::copy(fixtures::MISBEHAVE, plugins.path().join("misbehave.wasm")).unwrap();
        Cli { cache: tempfile::tempdir().unwrap(), plugins }
    }

    fn run(&self, args: &[&str]) -> Output {
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

fn stdout(output: &Output) -> String {
    String::from_utf8(output.stdout.clone()).unwrap()
}

fn stderr(output: &Output) -> String {
    String::from_utf8(output.stderr.clone()).unwrap()
}

#[test]
fn list_and_prompt_show_bundled_and_folder_plugins_without_compiling() {
    let cli = Cli::new();
    let out = cli.run(&["list"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("calc "), "{}", stdout(&out));
    assert!(stdout(&out).contains("misbehave "), "{}", stdout(&out));
    assert!(stderr(&out).contains("compiled=0"), "{}", stderr(&out));

    let out = cli.run(&["prompt"]);
    assert!(out.status.success());
    assert!(stdout(&out).contains("calc__evaluate: "), "{}", stdout(&out));
    assert!(stderr(&out).contains("catalog ready"));
    assert!(!stderr(&out).contains("plugin compiled"), "{}", stderr(&out));
}

#[test]
fn call_prints_the_output_as_json() {
    let cli = Cli::new();
    let out = cli.run(&["call", "calc", "evaluate", r#"{"expression": "6 * 7"}"#]);
    assert!(out.status.success(), "{}", stderr(&out));
    let value: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(value["value"], 42);
}

#[test]
fn guest_output_never_reaches_stdout() {
    let cli = Cli::new();
    let out = cli.run(&["call", "misbehave", "spam", r#"{"n": 5000}"#]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out), "5000\n");
    assert!(stderr(&out).contains("xxxxxxxxxx"), "guest lines go to the log on stderr");
}

#[test]
fn errors_go_to_stderr_with_a_fix_and_exit_1() {
    let cli = Cli::new();
    let out = cli.run(&["call", "nope", "x"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stdout(&out).is_empty());
    assert!(stderr(&out).contains("error: no plugin named `nope`"), "{}", stderr(&out));
    assert!(stderr(&out).contains("fix: run `quiver list`"), "{}", stderr(&out));
}

#[test]
fn check_explains_a_rejection_in_one_line() {
    let cli = Cli::new();
    let text = cli.plugins.path().join("notes.txt");
    std::fs::write(&text, "hello").unwrap();
    let out = cli.run(&["check", text.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    let report = stdout(&out);
    assert!(report.starts_with("rejected: "), "{report}");
    assert!(report.contains("not a WebAssembly file"), "{report}");
    assert!(report.contains("\nfix: "), "{report}");

    let out = cli.run(&["check", fixtures::LIAR]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stdout(&out).contains("stub disagrees with describe()"), "{}", stdout(&out));

    let out = cli.run(&["check", fixtures::MISBEHAVE]);
    assert!(out.status.success(), "{}", stdout(&out));
    assert!(stdout(&out).starts_with("ok: misbehave 0.1.0 (tool)"), "{}", stdout(&out));
}
