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
        self.run_logged(args, "info")
    }

    /// [`run`](Self::run), logging as `filter` (a `RUST_LOG` value) says.
    pub(crate) fn run_logged(&self, args: &[&str], filter: &str) -> Output {
        Command::new(env!("CARGO_BIN_EXE_quiver"))
            .arg("--cache-dir")
            .arg(self.cache.path())
            .arg("--plugins")
            .arg(self.plugins.path())
            .args(args)
            .env_remove("QUIVER_CONFIG")
            .env("RUST_LOG", filter)
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

/// `quiver serve --stdio` running over a [`Cli`]'s folders: lines go to
/// its stdin, answers come from its stdout, and its stderr is collected
/// on a thread (so that it never blocks on a full pipe).
pub(crate) struct Served {
    child: std::process::Child,
    stdin: Option<std::process::ChildStdin>,
    stdout: std::io::Lines<std::io::BufReader<std::process::ChildStdout>>,
    stderr: std::sync::Arc<(std::sync::Mutex<Vec<String>>, std::sync::Condvar)>,
    reader: Option<std::thread::JoinHandle<()>>,
}

impl Cli {
    /// Start `quiver [global…] serve --stdio --no-watch [serve…]` with
    /// `env` (`RUST_LOG` and `QUIVER_CONFIG` removed).
    pub(crate) fn serve_stdio(&self, global: &[&str], serve: &[&str], env: &[(&str, &str)]) -> Served {
        let serve: Vec<&str> = ["--stdio"].into_iter().chain(serve.iter().copied()).collect();
        self.serve(global, &serve, env)
    }

    /// Start `quiver [global…] serve --no-watch [serve…]` with `env`
    /// (`RUST_LOG` and `QUIVER_CONFIG` removed).
    pub(crate) fn serve(&self, global: &[&str], serve: &[&str], env: &[(&str, &str)]) -> Served {
        let mut command = Command::new(env!("CARGO_BIN_EXE_quiver"));
        command
            .args(global)
            .arg("--cache-dir")
            .arg(self.cache.path())
            .arg("--plugins")
            .arg(self.plugins.path())
            .args(["serve", "--no-watch"])
            .args(serve);
        Served::start(command, env)
    }
}

impl Served {
    /// Run the binary with `args` alone and `env` (`RUST_LOG` and
    /// `QUIVER_CONFIG` removed), its output piped.
    pub(crate) fn run<S: AsRef<std::ffi::OsStr>>(args: &[S], env: &[(&str, &str)]) -> Served {
        let mut command = Command::new(env!("CARGO_BIN_EXE_quiver"));
        command.args(args);
        Served::start(command, env)
    }

    fn start(mut command: Command, env: &[(&str, &str)]) -> Served {
        use std::io::BufRead;
        let mut child = command
            .env_remove("QUIVER_CONFIG")
            .env_remove("RUST_LOG")
            .envs(env.iter().copied())
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("start quiver serve");
        let stderr = std::sync::Arc::<(std::sync::Mutex<Vec<String>>, std::sync::Condvar)>::default();
        let keep = stderr.clone();
        let lines = std::io::BufReader::new(child.stderr.take().unwrap()).lines();
        let reader = std::thread::spawn(move || {
            for line in lines.map_while(Result::ok) {
                keep.0.lock().unwrap().push(line);
                keep.1.notify_all();
            }
        });
        let stdin = child.stdin.take();
        let stdout = std::io::BufReader::new(child.stdout.take().unwrap()).lines();
        Served { child, stdin, stdout, stderr, reader: Some(reader) }
    }

    /// Send `lines`, one message each.
    pub(crate) fn send<'a>(&mut self, lines: impl IntoIterator<Item = &'a str>) {
        use std::io::Write;
        let stdin = self.stdin.as_mut().expect("stdin is open");
        for line in lines {
            writeln!(stdin, "{line}").unwrap();
        }
    }

    /// The next `count` answers (messages with an `id`), in the order they
    /// came; notifications are skipped, and a line that is no JSON-RPC
    /// message fails the test.
    pub(crate) fn answers(&mut self, count: usize) -> Vec<serde_json::Value> {
        let mut answers = Vec::new();
        while answers.len() < count {
            let line = self.stdout.next().expect("an answer").unwrap();
            let message: serde_json::Value = serde_json::from_str(&line).unwrap();
            assert_eq!(message["jsonrpc"], "2.0", "stdout carries MCP only: {line}");
            if message.get("id").is_some() {
                answers.push(message);
            }
        }
        answers
    }

    /// The next line it writes on stdout.
    pub(crate) fn stdout_line(&mut self) -> String {
        self.stdout.next().expect("a line on stdout").unwrap()
    }

    /// The first line of its log that starts with `prefix` (waiting for
    /// it until the process ends its log).
    pub(crate) fn log_line(&self, prefix: &str) -> String {
        let mut lines = self.stderr.0.lock().unwrap();
        loop {
            if let Some(line) = lines.iter().find(|l| l.starts_with(prefix)) {
                return line.clone();
            }
            assert!(self.reader.as_ref().is_some_and(|r| !r.is_finished()), "no log line `{prefix}`: {lines:#?}");
            lines = self.stderr.1.wait_timeout(lines, std::time::Duration::from_millis(200)).unwrap().0;
        }
    }

    /// The address `serve --http` says it listens on.
    pub(crate) fn http_addr(&self) -> String {
        let line = self.log_line("quiver: MCP at http://");
        line.trim_start_matches("quiver: MCP at http://").split('/').next().unwrap().to_owned()
    }

    /// Close its stdin (the client leaves) and wait for it to end: whether
    /// it succeeded, and its whole log.
    pub(crate) fn finish(mut self) -> (bool, String) {
        drop(self.stdin.take());
        let status = self.child.wait().unwrap();
        self.log(status)
    }

    /// Stop it as a service manager does (SIGTERM) and wait for it to end:
    /// whether it succeeded, and its whole log.
    pub(crate) fn terminate(mut self) -> (bool, String) {
        self.signal_term();
        let status = self.child.wait().unwrap();
        self.log(status)
    }

    /// Send it SIGTERM, and go on.
    pub(crate) fn signal_term(&self) {
        Command::new("kill").args(["-TERM", &self.child.id().to_string()]).status().unwrap();
    }

    fn log(mut self, status: std::process::ExitStatus) -> (bool, String) {
        self.reader.take().unwrap().join().unwrap();
        let log = self.stderr.0.lock().unwrap().join("\n");
        (status.success(), log)
    }
}
