//! Upstream MCP servers for the gateway tests: the reference servers of the
//! MCP project (`@modelcontextprotocol/server-everything`, `-filesystem`,
//! `-memory` from npm, installed by `.ci/run` into `tests/servers`;
//! `mcp-server-time` from PyPI, in the venv `.ci/run` makes) and
//! `tests/servers/unruly_mcp.py`, which misbehaves on purpose.
//!
//! Stdio servers are started by the host under test; this module only says
//! how (`[mcp_servers.NAME]` TOML). [`EverythingHttp`] runs server-everything
//! in its streamable HTTP mode on a free loopback port, ready when it says
//! so on stderr, stopped by PID when dropped. A missing server fails the test.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

fn servers_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("servers")
}

fn must_exist(path: PathBuf) -> PathBuf {
    assert!(path.exists(), "{} is missing: run `bash .ci/run` (it installs the test servers)", path.display());
    path
}

/// The entry script of reference server `name` (`everything`, `filesystem`, `memory`).
pub fn reference(name: &str) -> PathBuf {
    must_exist(servers_dir().join(format!("node_modules/@modelcontextprotocol/server-{name}/dist/index.js")))
}

/// The `mcp-server-time` program of the test venv.
pub fn time_server() -> PathBuf {
    must_exist(Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/venv/bin/mcp-server-time"))
}

/// The Python of the test venv (for `unruly_mcp.py`).
fn python() -> PathBuf {
    must_exist(Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/venv/bin/python"))
}

/// A TOML string literal.
fn quoted(text: impl AsRef<str>) -> String {
    serde_json::to_string(text.as_ref()).expect("a string")
}

/// `[mcp_servers.NAME]` running reference server `server` with `args`
/// under node, plus `extra` TOML lines.
pub fn node_section(name: &str, server: &str, args: &[&str], extra: &str) -> String {
    let mut all = vec![quoted(reference(server).display().to_string())];
    all.extend(args.iter().map(quoted));
    format!("[mcp_servers.{name}]\ncommand = \"node\"\nargs = [{}]\n{extra}\n", all.join(", "))
}

/// `[mcp_servers.NAME]` running `mcp-server-time`.
pub fn time_section(name: &str) -> String {
    format!("[mcp_servers.{name}]\ncommand = {}\n", quoted(time_server().display().to_string()))
}

/// The command line running `unruly_mcp.py MODE`: the venv's Python, the script, the mode.
pub fn unruly_command(mode: &str) -> [String; 3] {
    let script = must_exist(servers_dir().join("unruly_mcp.py"));
    [python().display().to_string(), script.display().to_string(), mode.to_owned()]
}

/// `[mcp_servers.NAME]` running `unruly_mcp.py MODE`, plus `extra` TOML lines.
pub fn unruly_section(name: &str, mode: &str, extra: &str) -> String {
    let [python, script, mode] = unruly_command(mode).map(quoted);
    format!("[mcp_servers.{name}]\ncommand = {python}\nargs = [{script}, {mode}]\n{extra}\n")
}

/// server-everything in streamable HTTP mode on a free loopback port.
pub struct EverythingHttp {
    /// `http://127.0.0.1:PORT/mcp`.
    pub url: String,
    child: Child,
}

impl EverythingHttp {
    /// Start it; returns once it says it listens.
    pub fn start() -> EverythingHttp {
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let mut child = Command::new("node")
            .arg(reference("everything"))
            .arg("streamableHttp")
            .env("PORT", port.to_string())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start server-everything: {e}"));
        let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
        loop {
            match lines.next() {
                Some(Ok(line)) if line.contains("listening on port") => break,
                Some(Ok(_)) => {}
                _ => panic!("server-everything exited before listening on port {port}"),
            }
        }
        std::thread::spawn(move || lines.for_each(drop));
        EverythingHttp { url: format!("http://127.0.0.1:{port}/mcp"), child }
    }
}

impl Drop for EverythingHttp {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Whether process `pid` is alive (not a zombie).
pub fn alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => !stat.rsplit(')').next().is_some_and(|rest| rest.trim_start().starts_with('Z')),
        Err(_) => false,
    }
}

/// The fault and message of an upstream failure; any other result panics.
pub fn fault(result: quiver::Result<serde_json::Value>) -> (quiver::UpstreamFault, String) {
    match result {
        Err(quiver::Error::Upstream { fault, message, .. }) => (fault, message),
        other => panic!("not an upstream fault: {other:?}"),
    }
}

/// How many times the host started (connected to) `server`.
pub fn starts(host: &quiver::Host, server: &str) -> u64 {
    host.upstream_status().into_iter().find(|s| s.name == server).expect("a configured server").starts
}
