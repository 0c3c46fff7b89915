//! MCP from a client process: `quiver serve` runs as a child process (over
//! stdio, or streamable HTTP on loopback), and this bench is its client,
//! one request at a time. `ping` is the floor of the transport and the
//! protocol layer; `tools/call` of `calc__evaluate` (`1 + 1`) adds a
//! session, a catalog lookup, input validation, a fresh sandboxed instance
//! and the answer.

use std::fmt::Write as _;
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use crate::{Options, Stats, us};

/// What a client sends besides the request in 2026-07-28 (stateless).
const META: &str = r#""_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"quiver-bench","version":"0"}}"#;

const CALL_ARGS: &str = r#""name":"calc__evaluate","arguments":{"expression":"1 + 1"}"#;

/// A `quiver serve` child and the cache folder it compiles into.
struct Server {
    child: Child,
    _cache: tempfile::TempDir,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The child's environment beyond the bench's own (the trace exporter's
/// settings, for the `traces` section).
pub(crate) type Env<'a> = &'a [(&'a str, &'a str)];

fn spawn(args: &[&str], env: Env<'_>, stdin: Stdio, stdout: Stdio, stderr: Stdio) -> Server {
    let cache = tempfile::tempdir().unwrap();
    let child = Command::new(env!("CARGO_BIN_EXE_quiver"))
        .arg("--cache-dir")
        .arg(cache.path())
        .args(args)
        .envs(env.iter().copied())
        .stdin(stdin)
        .stdout(stdout)
        .stderr(stderr)
        .spawn()
        .expect("spawn quiver serve");
    Server { child, _cache: cache }
}

/// JSON-RPC over the child's stdin and stdout, one line each way.
struct Lines {
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    line: String,
}

impl Lines {
    fn send(&mut self, message: &str) {
        self.stdin.write_all(message.as_bytes()).unwrap();
        self.stdin.write_all(b"\n").unwrap();
        self.stdin.flush().unwrap();
    }

    /// Send a request and read its answer; panics on a JSON-RPC error.
    fn request(&mut self, message: &str) -> &str {
        self.send(message);
        self.line.clear();
        self.stdout.read_line(&mut self.line).unwrap();
        assert!(self.line.contains("\"result\""), "{}", self.line);
        assert!(!self.line.contains("\"isError\":true"), "{}", self.line);
        &self.line
    }
}

fn sample(reps: usize, mut request: impl FnMut()) -> Stats {
    Stats::new(
        (0..reps)
            .map(|_| {
                let start = Instant::now();
                request();
                start.elapsed()
            })
            .collect(),
    )
}

/// Over stdio, with the 2025-11-25 handshake: (ping, tools/call).
pub(crate) fn stdio(reps: usize, env: Env<'_>) -> (Stats, Stats) {
    let mut server = spawn(&["serve", "--stdio", "--no-watch"], env, Stdio::piped(), Stdio::piped(), Stdio::null());
    let mut lines = Lines {
        stdin: server.child.stdin.take().unwrap(),
        stdout: BufReader::new(server.child.stdout.take().unwrap()),
        line: String::new(),
    };
    lines.request(
        r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"quiver-bench","version":"0"}}}"#,
    );
    lines.send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
    let call = format!(r#"{{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{{{CALL_ARGS}}}}}"#);
    // The first call compiles calc; then warm up.
    for _ in 0..20 {
        lines.request(&call);
    }
    let ping = sample(reps, || {
        lines.request(r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#);
    });
    let calls = sample(reps, || {
        lines.request(&call);
    });
    (ping, calls)
}

/// `quiver serve --http` on a free loopback port, and its base URL.
fn http_server(env: Env<'_>) -> (Server, String) {
    let mut server =
        spawn(&["serve", "--http", "127.0.0.1:0", "--no-watch"], env, Stdio::null(), Stdio::null(), Stdio::piped());
    // The server announces its address on stderr.
    let mut stderr = BufReader::new(server.child.stderr.take().unwrap());
    let mut line = String::new();
    let base = loop {
        line.clear();
        assert!(stderr.read_line(&mut line).unwrap() > 0, "quiver serve exited");
        if let Some(rest) = line.trim().strip_prefix("quiver: MCP at ") {
            break rest.split_whitespace().next().unwrap().trim_end_matches(',').trim_end_matches("/mcp").to_owned();
        }
    };
    // Keep reading its stderr, so that it never blocks on a full pipe.
    std::thread::spawn(move || while stderr.read_line(&mut line).is_ok_and(|n| n > 0) {});
    (server, base)
}

/// One MCP request over HTTP: its method, the `mcp-name` header, its
/// params, and the session (2025-11-25) or none (stateless 2026-07-28).
struct Post<'a> {
    client: &'a reqwest::Client,
    url: String,
    session: Option<String>,
}

impl Post<'_> {
    fn request(&self, method: &str, name: Option<&str>, params: &str) -> reqwest::RequestBuilder {
        let version = if self.session.is_some() { "2025-11-25" } else { "2026-07-28" };
        let mut request = self
            .client
            .post(&self.url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", version)
            .header("mcp-method", method);
        if let Some(session) = &self.session {
            request = request.header("mcp-session-id", session);
        }
        if let Some(name) = name {
            request = request.header("mcp-name", name);
        }
        request.body(format!(r#"{{"jsonrpc":"2.0","id":1,"method":"{method}","params":{{{params}}}}}"#))
    }

    /// Send it and read the whole answer; panics on an error.
    fn send(&self, runtime: &tokio::runtime::Runtime, request: reqwest::RequestBuilder) -> reqwest::header::HeaderMap {
        runtime.block_on(async {
            let response = request.send().await.expect("an answer");
            assert!(response.status().is_success(), "{}", response.status());
            let headers = response.headers().clone();
            let body = response.bytes().await.expect("a body");
            assert!(!body.windows(9).any(|w| w == br#""error":{"#), "{}", String::from_utf8_lossy(&body));
            headers
        })
    }
}

/// Over streamable HTTP on one keep-alive connection: a 2025-11-25 session
/// (ping, tools/call), and stateless 2026-07-28 requests (tools/call; that
/// revision has no ping).
pub(crate) fn http(runtime: &tokio::runtime::Runtime, reps: usize, env: Env<'_>) -> ((Stats, Stats), Stats, Stats) {
    let (server, base) = http_server(env);
    let _ = rustls::crypto::ring::default_provider().install_default();
    let client = reqwest::Client::new();
    let mut post = Post { client: &client, url: format!("{base}/mcp"), session: None };

    // A 2025-11-25 session.
    post.session = Some(String::new());
    let init = r#""protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"quiver-bench","version":"0"}"#;
    let initialize = client
        .post(&post.url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(format!(r#"{{"jsonrpc":"2.0","id":0,"method":"initialize","params":{{{init}}}}}"#));
    let headers = post.send(runtime, initialize);
    let session = headers.get("mcp-session-id").and_then(|v| v.to_str().ok()).expect("a session id").to_owned();
    post.session = Some(session);
    let initialized = post
        .request("notifications/initialized", None, "")
        .body(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
    runtime.block_on(async { initialized.send().await.expect("accepted") });
    for _ in 0..20 {
        post.send(runtime, post.request("tools/call", Some("calc__evaluate"), CALL_ARGS));
    }
    let ping = sample(reps, || {
        post.send(runtime, post.request("ping", None, ""));
    });
    let session_calls = sample(reps, || {
        post.send(runtime, post.request("tools/call", Some("calc__evaluate"), CALL_ARGS));
    });

    // Stateless.
    post.session = None;
    let call = format!("{CALL_ARGS},{META}");
    for _ in 0..20 {
        post.send(runtime, post.request("tools/call", Some("calc__evaluate"), &call));
    }
    let stateless = sample(reps, || {
        post.send(runtime, post.request("tools/call", Some("calc__evaluate"), &call));
    });

    // The same call through the REST face, for comparison: HTTP without MCP.
    let rest = || {
        client
            .post(format!("{base}/v1/tools/calc__evaluate/call"))
            .header("content-type", "application/json")
            .body(r#"{"expression": "1 + 1"}"#)
    };
    for _ in 0..20 {
        post.send(runtime, rest());
    }
    let rest = sample(reps, || {
        post.send(runtime, rest());
    });
    drop(server);
    ((ping, session_calls), stateless, rest)
}

pub(crate) fn section(options: &Options, runtime: &tokio::runtime::Runtime, report: &mut String) {
    writeln!(report, "## MCP from a client process\n").unwrap();
    writeln!(
        report,
        "`quiver serve` (bundled plugins) runs as a child process and this runner is its client, one request \
         at a time, measuring each round trip. stdio: the 2025-11-25 handshake, then newline-delimited \
         JSON-RPC on the child's stdin and stdout. HTTP: a keep-alive `reqwest` client (on a single-threaded runtime) to `/mcp` on 127.0.0.1, \
         in a 2025-11-25 session and with stateless 2026-07-28 requests (protocol metadata in `_meta` and the \
         standard headers); answers are one JSON body each. `ping` \
         is the floor of transport and protocol; `tools/call` of `calc__evaluate` (`1 + 1`) adds the session, \
         input validation, a fresh sandboxed instance and the answer.\n"
    )
    .unwrap();
    let reps = options.reps(2000);
    writeln!(report, "| transport | `ping` p50 / p99 (µs) | `tools/call` p50 / p99 (µs) |\n|---|---:|---:|").unwrap();
    let mut row = |transport: &str, ping: Option<Stats>, call: Stats| {
        let ping = ping.map_or("— / —".to_owned(), |p| format!("{} / {}", us(p.median()), us(p.pct(0.99))));
        writeln!(report, "| {transport} | {ping} | {} / {} |", us(call.median()), us(call.pct(0.99))).unwrap();
    };
    let (ping, call) = stdio(reps, &[]);
    row("stdio, 2025-11-25", Some(ping), call);
    // The HTTP client runs on a runtime of its own thread, so that its
    // connection task and this thread never hand a request over between
    // threads: the round trip measures the server, not the client.
    let _ = runtime;
    let client_runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let ((ping, call), stateless, rest) = http(&client_runtime, reps, &[]);
    row("streamable HTTP, 2025-11-25 session", Some(ping), call);
    row("streamable HTTP, 2026-07-28 stateless (no `ping` in this revision)", None, stateless);
    row("REST `POST /v1/tools/calc__evaluate/call` (HTTP without MCP, for comparison)", None, rest);
    writeln!(report).unwrap();
    eprintln!("measured MCP from a client process");
}

/// The work one MCP `tools/call` does in the library, step by step,
/// in-process (no transport): what each costs, and what this layout no
/// longer does per request.
pub(crate) fn per_request(options: &Options, runtime: &tokio::runtime::Runtime, report: &mut String) {
    let host = quiver::Host::builder().bundled().cache_dir(None).build().unwrap();
    runtime.block_on(host.describe("calc")).unwrap();
    let reps = options.reps(20_000);
    let session = host.open_session(None).unwrap();
    let input = serde_json::json!({"expression": "1 + 1"});
    let micro = |f: &mut dyn FnMut()| {
        let stats = sample(reps, f);
        (stats.median(), stats.pct(0.99))
    };
    let policy = micro(&mut || {
        std::hint::black_box(host.policy(None).unwrap());
    });
    let open = micro(&mut || {
        std::hint::black_box(host.open_session(None).unwrap());
    });
    let clone = micro(&mut || {
        std::hint::black_box(session.clone());
    });
    let lookup = micro(&mut || {
        let catalog = host.catalog();
        std::hint::black_box(catalog.tool("calc__evaluate").map(|e| e.action.len()));
    });
    let reparse = micro(&mut || {
        let text = input.to_string();
        std::hint::black_box(serde_json::from_str::<serde_json::Value>(&text).unwrap());
    });
    let calls = options.reps(2000);
    let call = Stats::new(
        (0..calls)
            .map(|_| {
                let start = Instant::now();
                runtime.block_on(host.call_json("calc", "evaluate", &input)).unwrap();
                start.elapsed()
            })
            .collect(),
    );
    let through_session = Stats::new(
        (0..calls)
            .map(|_| {
                let mut session = session.clone();
                let start = Instant::now();
                let outcome = runtime.block_on(session.call("calc__evaluate", input.clone()));
                assert!(!outcome.is_error, "{}", outcome.text);
                start.elapsed()
            })
            .collect(),
    );
    writeln!(
        report,
        "### Per-request work, in-process
"
    )
    .unwrap();
    writeln!(
        report,
        "What one `tools/call` does in the library, each step timed alone ({reps} repetitions; the calls \
         {calls}). *Before* marks work the previous layout did on every request and this one does not: each \
         MCP and REST request resolved the agent's policy again (environment reads included) to open a \
         session, and a call's input went from a JSON value to text and back before validation; now a face \
         resolves the policy once and clones its open session per request, and the value reaches validation \
         as is (it becomes text once, for the guest).\n"
    )
    .unwrap();
    writeln!(report, "| step | p50 (µs) | p99 (µs) | per request |\n|---|---:|---:|---|").unwrap();
    let mut row = |step: &str, (p50, p99): (Duration, Duration), when: &str| {
        writeln!(report, "| {step} | {} | {} | {when} |", us(p50), us(p99)).unwrap();
    };
    row("resolve the policy (`Host::policy`)", policy, "before");
    row("open a session (`Host::open_session`)", open, "before");
    row("clone the face's open session", clone, "now");
    row("find the tool in the catalog snapshot", lookup, "before and now");
    row("input JSON value → text → value", reparse, "before");
    row(
        "`Host::call_json`: lookup, validation, fresh instance, call",
        (call.median(), call.pct(0.99)),
        "before and now",
    );
    row(
        "`Session::call`: all of the above, as a face calls it",
        (through_session.median(), through_session.pct(0.99)),
        "now",
    );
    writeln!(report).unwrap();
}
