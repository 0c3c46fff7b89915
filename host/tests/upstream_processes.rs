//! A real `quiver serve --stdio` process fronting `unruly_mcp.py`: what an
//! upstream server's processes and streams can do to Quiver's own process
//! (its memory, what outlives it). In-process tests cannot see either.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};

use quiver_tests::mcp_servers::{alive, unruly_section};

/// `quiver serve --stdio` with `config`, its stderr written to `log`.
struct Serve {
    child: Child,
    stdin: ChildStdin,
    answers: std::io::Lines<BufReader<std::process::ChildStdout>>,
    _cache: tempfile::TempDir,
}

impl Serve {
    fn start(config: &std::path::Path, log: &std::path::Path) -> Serve {
        let cache = tempfile::tempdir().unwrap();
        let mut child = Command::new(env!("CARGO_BIN_EXE_quiver"))
            .args(["--no-bundled", "--cache-dir"])
            .arg(cache.path())
            .arg("--config")
            .arg(config)
            .args(["serve", "--stdio", "--no-watch"])
            .env_remove("RUST_LOG")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(log).unwrap())
            .spawn()
            .expect("start quiver serve");
        let mut stdin = child.stdin.take().unwrap();
        let answers = BufReader::new(child.stdout.take().unwrap()).lines();
        for line in [
            r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"test","version":"0"}}}"#,
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
        ] {
            writeln!(stdin, "{line}").unwrap();
        }
        Serve { child, stdin, answers, _cache: cache }
    }

    /// Call tool `tool` of server `server` through `mcp`; its answer line.
    fn call(&mut self, id: u32, server: &str, tool: &str) -> String {
        let arguments = serde_json::json!({"subcommand": "call", "server": server, "tool": tool, "parameters": {}});
        let request = serde_json::json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                                         "params": {"name": "mcp", "arguments": arguments}});
        writeln!(self.stdin, "{request}").unwrap();
        let id = format!(r#""id":{id}"#);
        loop {
            let line = self.answers.next().expect("an answer").unwrap();
            if line.contains(&id) {
                return line;
            }
        }
    }

    /// SIGTERM, and wait for a clean exit.
    fn stop(mut self) {
        Command::new("kill").args(["-TERM", &self.child.id().to_string()]).status().unwrap();
        assert!(self.child.wait().unwrap().success(), "a clean exit on SIGTERM");
    }
}

/// Kills the process it names when dropped (a test that failed leaves nothing behind).
struct Reap(u32);

impl Drop for Reap {
    fn drop(&mut self) {
        if alive(self.0) {
            let _ = Command::new("kill").args(["-KILL", &self.0.to_string()]).status();
        }
    }
}

/// Finding L7: a server's child that calls `setsid` leaves its process
/// group; killing the group alone would leave it running after Quiver.
#[test]
fn a_setsid_grandchild_of_an_upstream_server_dies_with_quiver() {
    let dir = tempfile::tempdir().unwrap();
    let (config, events, log) = (dir.path().join("quiver.toml"), dir.path().join("events"), dir.path().join("log"));
    let env = format!("env = {{ UNRULY_LOG = {:?} }}", events.display().to_string());
    std::fs::write(&config, unruly_section("unruly", "setsid", &env)).unwrap();
    let mut serve = Serve::start(&config, &log);
    let answer = serve.call(2, "unruly", "slow");
    assert!(answer.contains(r#""text":"done""#), "{answer}");
    let events = std::fs::read_to_string(&events).unwrap();
    let grandchild: u32 = events
        .lines()
        .find_map(|l| l.strip_prefix("grandchild ")?.parse().ok())
        .unwrap_or_else(|| panic!("the server logs its grandchild: {events}"));
    let _reap = Reap(grandchild);
    assert!(alive(grandchild), "the grandchild runs");
    serve.stop();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while alive(grandchild) {
        assert!(std::time::Instant::now() < deadline, "the setsid grandchild {grandchild} outlived Quiver");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// Peak resident memory of process `pid`, in bytes (`VmHWM`).
fn peak_memory(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let line = status.lines().find(|l| l.starts_with("VmHWM:")).expect("VmHWM");
    line.split_whitespace().nth(1).unwrap().parse::<u64>().unwrap() * 1024
}

/// Finding M5: 256 MiB of stderr without a newline. Quiver keeps the head
/// of the line and reads the next one, in memory that does not grow with
/// the line. A generous guard, three times what a debug build peaks at
/// (about 60 MiB): the old reader held the whole line and peaked over 1 GiB.
#[test]
fn an_endless_stderr_line_is_read_in_fixed_memory() {
    let dir = tempfile::tempdir().unwrap();
    let (config, log) = (dir.path().join("quiver.toml"), dir.path().join("log"));
    std::fs::write(&config, unruly_section("flood", "stderr-flood", "")).unwrap();
    let mut serve = Serve::start(&config, &log);
    let answer = serve.call(2, "flood", "anything");
    assert!(answer.contains("its last stderr line: after the flood"), "the next line is read: {answer}");
    let peak = peak_memory(serve.child.id());
    serve.stop();
    assert!(peak < 192 << 20, "Quiver's peak memory was {} MiB", peak >> 20);
    let logged = std::fs::read_to_string(&log).unwrap();
    let flood = logged.lines().find(|l| l.contains("stderr: xxxx")).unwrap_or_else(|| panic!("{logged}"));
    assert!(flood.len() < 1024 && flood.contains("bytes dropped"), "the head is kept, the rest said: {flood}");
}
