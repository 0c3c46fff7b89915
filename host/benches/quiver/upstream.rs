//! Upstream MCP servers: what fronting them costs. Real servers only: the
//! MCP reference servers (server-everything, -filesystem, -memory from npm,
//! `mcp-server-time` from PyPI), installed by `.ci/run`.
//!
//! - Tier 1 from process start with 20 configured servers whose tool lists
//!   are cached (nothing spawned), against the same command with none.
//! - The first call to a cold stdio server: spawn, handshake, `tools/list`,
//!   `tools/call`.
//! - The warm hop: a client calling server-everything's `echo` through
//!   `quiver serve` (the `mcp` meta-tool) against calling it directly, both
//!   as raw JSON-RPC lines over stdio from this process.
//! - Prompt tokens of the 20 servers, progressive against legacy.
//! - Hostile servers (a tool list that never ends, an endless stderr
//!   line): the time to Quiver's answer and its peak memory.

use std::fmt::Write as _;
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use quiver::{Config, Host};
use quiver_tests::mcp_servers::{node_section, reference, time_section, unruly_section};

use crate::{Options, Stats, ms, us};

/// Twenty servers: five of each reference server, under distinct names.
fn twenty(files: &Path, memory: &Path) -> String {
    let mut sections = String::new();
    for i in 0..5 {
        sections.push_str(&node_section(&format!("everything{i}"), "everything", &["stdio"], ""));
        sections.push_str(&node_section(&format!("files{i}"), "filesystem", &[&files.display().to_string()], ""));
        let env =
            format!("env = {{ MEMORY_FILE_PATH = {:?} }}", memory.join(format!("{i}.jsonl")).display().to_string());
        sections.push_str(&node_section(&format!("memory{i}"), "memory", &[], &env));
        sections.push_str(&time_section(&format!("time{i}")));
    }
    sections
}

fn host(config: &str, base: &Path, cache: &Path) -> Host {
    let config = Config::parse(config, base).unwrap();
    Host::builder().config(config).cache_dir(Some(cache.to_owned())).build().unwrap()
}

pub(crate) fn section(options: &Options, runtime: &tokio::runtime::Runtime, report: &mut String) {
    writeln!(report, "## Upstream MCP servers\n").unwrap();
    writeln!(
        report,
        "Real servers: the MCP reference servers (server-everything, -filesystem, -memory 2026.8.31 on \
         Node 20; mcp-server-time 2026.10.19 on Python), over stdio.\n"
    )
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (files, memory, cache) = (dir.path().join("files"), dir.path().join("memory"), dir.path().join("cache"));
    for folder in [&files, &memory] {
        std::fs::create_dir_all(folder).unwrap();
    }
    let config = twenty(&files, &memory);
    let path = dir.path().join("quiver.toml");
    std::fs::write(&path, &config).unwrap();

    // Fill the caches once: every server listed (20 processes, once).
    runtime.block_on(async {
        let host = host(&config, dir.path(), &cache);
        let mut versions = host.subscribe();
        while host.catalog().mcp_servers().any(|s| s.tools.is_empty()) {
            tokio::time::timeout(Duration::from_secs(120), versions.changed()).await.unwrap().unwrap();
        }
        host.shutdown_upstreams().await;
    });

    let reps = options.reps(30);
    let prompt = |config: Option<&Path>| {
        let mut command = Command::new(env!("CARGO_BIN_EXE_quiver"));
        command.arg("--no-bundled").arg("--cache-dir").arg(&cache);
        if let Some(config) = config {
            command.arg("--config").arg(config);
        }
        let start = Instant::now();
        let out = command.arg("prompt").stdout(Stdio::piped()).stderr(Stdio::null()).output().unwrap();
        let elapsed = start.elapsed();
        let text = String::from_utf8(out.stdout).unwrap();
        (elapsed, text)
    };
    let (_, text) = prompt(Some(&path));
    assert!(text.contains("- time4 (2 tools") && !text.contains("not listed yet"), "{text}");
    let with: Vec<Duration> = (0..reps).map(|_| prompt(Some(&path)).0).collect();
    let without: Vec<Duration> = (0..reps).map(|_| prompt(None).0).collect();
    let (with, without) = (Stats::new(with), Stats::new(without));
    writeln!(
        report,
        "**Tier 1 from process start** (`quiver --no-bundled --config 20-servers.toml prompt`, a new process \
         each time, tool lists from the disk cache, no server spawned; {reps} runs): median **{} ms** \
         (p95 {} ms), against {} ms with no servers configured: **{} ms** for 20 servers, 190 tools.\n",
        ms(with.median()),
        ms(with.pct(0.95)),
        ms(without.median()),
        ms(with.median().saturating_sub(without.median())),
    )
    .unwrap();

    // Prompt tokens for the 20 servers, progressive against legacy.
    let tokens = runtime.block_on(async {
        let host = host(&config, dir.path(), &cache);
        host.token_report(None).await.unwrap()
    });
    let mcp = tokens.rows.iter().filter(|r| r.category == quiver::catalog::Category::Mcp);
    let (full, stub): (usize, usize) = mcp.fold((0, 0), |(f, p), r| (f + r.full.o200k, p + r.progressive.o200k));
    let meta = tokens.overhead.iter().find(|(name, _)| name == "mcp").map_or(0, |(_, c)| c.o200k);
    writeln!(
        report,
        "**Prompt tokens of the 20 servers** (o200k): legacy (every tool flat with its schema) **{full}**; \
         progressive **{}** (their Tier-1 lines {stub} + the `mcp` meta-tool's own text and schema {meta}), \
         {:.1}% fewer.\n",
        stub + meta,
        100.0 * (1.0 - (stub + meta) as f64 / full.max(1) as f64)
    )
    .unwrap();

    // The first call to a cold stdio server.
    let cold_reps = options.reps(10);
    writeln!(report, "**First call to a cold stdio server** (spawn, handshake, `tools/list`, `tools/call`; {cold_reps} runs; the connection closed between runs):\n").unwrap();
    writeln!(report, "| server | call | median ms | p95 ms |\n|---|---|---:|---:|").unwrap();
    for (name, tool, args) in [
        ("memory0", "read_graph", serde_json::json!({})),
        ("everything0", "echo", serde_json::json!({"message": "x"})),
        ("time0", "get_current_time", serde_json::json!({"timezone": "UTC"})),
    ] {
        let samples = runtime.block_on(async {
            let host = host(&config, dir.path(), &cache);
            let mut samples = Vec::new();
            for _ in 0..cold_reps {
                let start = Instant::now();
                host.call_json(name, tool, &args).await.unwrap();
                samples.push(start.elapsed());
                host.shutdown_upstreams().await;
            }
            samples
        });
        let stats = Stats::new(samples);
        writeln!(report, "| {name} | `{tool}` | {} | {} |", ms(stats.median()), ms(stats.pct(0.95))).unwrap();
    }
    writeln!(report).unwrap();

    hop(options, report, dir.path());
    hostile(report, dir.path());
}

/// Peak resident memory of process `pid` (`VmHWM`), in MiB.
fn peak_mib(pid: u32) -> f64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let kb = status.lines().find_map(|l| l.strip_prefix("VmHWM:")).and_then(|v| v.split_whitespace().next());
    kb.and_then(|kb| kb.parse::<f64>().ok()).unwrap_or(0.0) / 1024.0
}

/// Hostile servers (`unruly_mcp.py`, issue 28 M4 and M5): how long
/// `quiver serve` takes to refuse them, and what it peaks at meanwhile.
fn hostile(report: &mut String, dir: &Path) {
    writeln!(
        report,
        "**Hostile servers** (`tests/servers/unruly_mcp.py`; a new `quiver serve --stdio` for each, one \
         `tools/call` of the `mcp` meta-tool, which spawns the server and lists its tools; the time to the \
         answer, and the process's peak resident memory, `VmHWM`):\n\n\
         | server | Quiver answers | ms | peak MiB |\n|---|---|---:|---:|"
    )
    .unwrap();
    for (mode, what, answer) in [
        ("normal", "a well-behaved one (for comparison)", "its result"),
        ("paginate", "`tools/list` pages forever, one tool a page", "refused at the 100-page cap"),
        ("paginate-big", "`tools/list` pages forever, 1 MiB a page", "refused at the 4 MiB cap"),
        ("stderr-flood", "256 MiB of stderr without a newline, then exits", "its last stderr line"),
    ] {
        let config = dir.join(format!("hostile-{mode}.toml"));
        std::fs::write(&config, unruly_section("unruly", mode, "timeout = 120")).unwrap();
        let mut quiver = Peer::start(
            Command::new(env!("CARGO_BIN_EXE_quiver"))
                .arg("--no-bundled")
                .arg("--config")
                .arg(&config)
                .arg("--cache-dir")
                .arg(dir.join(format!("hostile-{mode}-cache")))
                .args(["serve", "--stdio", "--no-watch"]),
        );
        let call = r#""name":"mcp","arguments":{"subcommand":"call","server":"unruly","tool":"slow","parameters":{}}"#;
        let start = Instant::now();
        let line = quiver.answer("tools/call", call);
        let elapsed = start.elapsed();
        let expected = if mode == "normal" { "done" } else { "MCP server `unruly`" };
        assert!(line.contains(expected), "{mode}: {line}");
        let peak = peak_mib(quiver.child.id());
        writeln!(report, "| {what} | {answer} | {} | {peak:.1} |", ms(elapsed)).unwrap();
    }
    writeln!(report).unwrap();
}

/// A child speaking JSON-RPC lines on stdio.
struct Peer {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    next: u64,
}

impl Drop for Peer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Peer {
    fn start(command: &mut Command) -> Peer {
        let mut child = command.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::null()).spawn().unwrap();
        let (stdin, stdout) = (child.stdin.take().unwrap(), BufReader::new(child.stdout.take().unwrap()));
        let mut peer = Peer { child, stdin, stdout, next: 0 };
        let init =
            r#""protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"quiver-bench","version":"0"}"#;
        peer.request("initialize", init);
        peer.send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
        peer
    }

    fn send(&mut self, line: &str) {
        self.stdin.write_all(line.as_bytes()).unwrap();
        self.stdin.write_all(b"\n").unwrap();
        self.stdin.flush().unwrap();
    }

    /// Send a request; read lines (skipping notifications) until its answer.
    fn request(&mut self, method: &str, params: &str) -> String {
        let line = self.answer(method, params);
        assert!(line.contains("\"result\"") && !line.contains("\"isError\":true"), "{line}");
        line
    }

    /// Send a request; its answer, whatever it is.
    fn answer(&mut self, method: &str, params: &str) -> String {
        self.next += 1;
        let id = self.next;
        self.send(&format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"{method}","params":{{{params}}}}}"#));
        let mut line = String::new();
        loop {
            line.clear();
            assert!(self.stdout.read_line(&mut line).unwrap() > 0, "the server exited");
            if line.contains(&format!(r#""id":{id}"#)) {
                return line;
            }
        }
    }
}

/// The warm hop: `echo` through Quiver against `echo` directly.
fn hop(options: &Options, report: &mut String, dir: &Path) {
    let reps = options.reps(2000);
    let servers = dir.join("hop.json");
    let everything = reference("everything").display().to_string();
    let file = serde_json::json!({"mcpServers": {"everything": {"command": "node", "args": [everything, "stdio"]}}});
    std::fs::write(&servers, file.to_string()).unwrap();

    let mut direct = Peer::start(Command::new("node").arg(reference("everything")).arg("stdio"));
    let mut quiver = Peer::start(
        Command::new(env!("CARGO_BIN_EXE_quiver"))
            .arg("--no-bundled")
            .arg("--mcp-config")
            .arg(&servers)
            .arg("--cache-dir")
            .arg(dir.join("hop-cache"))
            .args(["serve", "--stdio", "--no-watch"]),
    );
    let echo = r#""name":"echo","arguments":{"message":"hop"}"#;
    let through = r#""name":"mcp","arguments":{"subcommand":"call","server":"everything","tool":"echo","parameters":{"message":"hop"}}"#;
    // Warm both (the first call through Quiver spawns its upstream).
    for _ in 0..options.reps(50) {
        direct.request("tools/call", echo);
        quiver.request("tools/call", through);
    }
    let mut directs = Vec::with_capacity(reps);
    let mut hops = Vec::with_capacity(reps);
    for _ in 0..reps {
        let start = Instant::now();
        direct.request("tools/call", echo);
        directs.push(start.elapsed());
        let start = Instant::now();
        quiver.request("tools/call", through);
        hops.push(start.elapsed());
    }
    let (direct, hop) = (Stats::new(directs), Stats::new(hops));
    let added = |p: f64| us(hop.pct(p).saturating_sub(direct.pct(p)));
    writeln!(
        report,
        "**Warm call through Quiver** (server-everything `echo`, {reps} calls each, interleaved; raw JSON-RPC \
         lines over stdio from one client process; through Quiver = `tools/call` of the `mcp` meta-tool):\n\n\
         | path | p50 µs | p99 µs |\n|---|---:|---:|\n\
         | client → server-everything | {} | {} |\n\
         | client → Quiver → server-everything | {} | {} |\n\
         | **added by the hop** | **{}** | **{}** |\n\n\
         Goal: ≤ 300 µs added at p50.\n",
        us(direct.median()),
        us(direct.pct(0.99)),
        us(hop.median()),
        us(hop.pct(0.99)),
        added(0.5),
        added(0.99),
    )
    .unwrap();
}
