//! Replicas behind a real load balancer (issue 36): three `quiver serve
//! --http` processes sharing one plugins folder and one compile cache
//! (read-only, its entries signed with a key from a file every replica
//! reads), behind Debian's nginx, round robin. Stateless requests (REST,
//! and MCP 2026-07-28 with no session) land on every replica, each
//! answered; none of the replicas compiles anything; one replica stopped
//! with SIGTERM while calls flow costs no call.

mod common;

use std::io::{Read, Write};
use std::process::Command;

use common::Served;
use quiver_tests::nginx::Nginx;
use serde_json::{Value, json};

/// `method path` with `headers` and `body` to `addr` (HTTP/1.0, one
/// connection), and the answer's status and body.
fn exchange(addr: &str, method: &str, path: &str, headers: &[(&str, &str)], body: &str) -> (u16, String) {
    let mut stream = std::net::TcpStream::connect(addr).unwrap();
    let mut request = format!("{method} {path} HTTP/1.0\r\nHost: {addr}\r\nContent-Length: {}\r\n", body.len());
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    write!(stream, "{request}\r\n{body}").unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    let status = answer.get(9..12).and_then(|s| s.parse().ok()).unwrap_or(0);
    let body = answer.split_once("\r\n\r\n").map(|(_, b)| b.to_owned()).unwrap_or_default();
    (status, body)
}

/// The sum of the samples of `metric` in a replica's `/metrics`.
fn metric(addr: &str, metric: &str) -> f64 {
    let (status, text) = exchange(addr, "GET", "/metrics", &[], "");
    assert_eq!(status, 200, "{text}");
    text.lines()
        .filter(|l| l.starts_with(metric) && l[metric.len()..].starts_with([' ', '{']))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

#[test]
fn three_replicas_behind_nginx_share_the_plugins_and_a_read_only_cache() {
    let cli = common::Cli::new();
    let secrets = tempfile::tempdir().unwrap();
    let key = secrets.path().join("cache-key");
    std::fs::write(&key, format!("{}\n", "5e".repeat(32))).unwrap();
    let shared = tempfile::tempdir().unwrap();

    // A builder (a Job, in a cluster) fills the shared cache, signing with the key.
    let builder = secrets.path().join("builder.toml");
    std::fs::write(&builder, format!("[cache]\nkey_file = {key:?}\n")).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_quiver"))
        .args(["--no-bundled", "--config"])
        .arg(&builder)
        .arg("--plugins")
        .arg(cli.plugins.path())
        .arg("--cache-dir")
        .arg(shared.path())
        .arg("precompile")
        .env_remove("QUIVER_CONFIG")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));

    let replica = secrets.path().join("replica.toml");
    std::fs::write(&replica, format!("[cache]\nshared = {:?}\nkey_file = {key:?}\n", shared.path())).unwrap();
    let caches: Vec<tempfile::TempDir> = (0..3).map(|_| tempfile::tempdir().unwrap()).collect();
    let replicas: Vec<Served> = caches
        .iter()
        .map(|cache| {
            let args = [
                "--no-bundled".as_ref(),
                "--config".as_ref(),
                replica.as_os_str(),
                "--plugins".as_ref(),
                cli.plugins.path().as_os_str(),
                "--cache-dir".as_ref(),
                cache.path().as_os_str(),
                "serve".as_ref(),
                "--no-watch".as_ref(),
                "--http".as_ref(),
                "127.0.0.1:0".as_ref(),
            ];
            Served::run::<&std::ffi::OsStr>(&args, &[])
        })
        .collect();
    let addrs: Vec<String> = replicas.iter().map(Served::http_addr).collect();
    let nginx = Nginx::start(&addrs);

    let json = [("Content-Type", "application/json")];
    let stateless = [
        ("Content-Type", "application/json"),
        ("Accept", "application/json, text/event-stream"),
        ("MCP-Protocol-Version", "2026-07-28"),
        ("Mcp-Method", "tools/call"),
        ("Mcp-Name", "misbehave__echo"),
    ];
    let meta = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                      "io.modelcontextprotocol/clientCapabilities": {},
                      "io.modelcontextprotocol/clientInfo": {"name": "replicas", "version": "0"}});
    for n in 0..12 {
        let text = format!("call {n}");
        let (status, body) =
            exchange(&nginx.addr, "POST", "/v1/tools/misbehave__echo/call", &json, &json!({"text": text}).to_string());
        assert_eq!(status, 200, "REST {n}: {body}");
        assert!(body.contains(&text), "REST {n}: {body}");
        let call = json!({"jsonrpc": "2.0", "id": n, "method": "tools/call",
                          "params": {"name": "misbehave__echo", "arguments": {"text": text}, "_meta": meta}});
        let (status, body) = exchange(&nginx.addr, "POST", "/mcp", &stateless, &call.to_string());
        assert_eq!(status, 200, "MCP {n}: {body}");
        let answer: Value = serde_json::from_str(&body).unwrap_or_else(|e| panic!("MCP {n} ({e}): {body}"));
        assert_eq!(answer["result"]["content"][0]["text"], text.as_str(), "MCP {n}: {answer}");
    }
    let calls: Vec<f64> = addrs.iter().map(|addr| metric(addr, "quiver_calls_total")).collect();
    assert!(calls.iter().all(|&n| n >= 1.0), "round robin reached every replica: {calls:?}");
    assert_eq!(calls.iter().sum::<f64>(), 24.0, "every call answered once: {calls:?}");
    for addr in &addrs {
        assert_eq!(metric(addr, "quiver_compiles_total"), 0.0, "{addr} compiled nothing");
        assert_eq!(metric(addr, "quiver_compile_cache_hits_total"), 1.0, "{addr} read the shared entry");
    }
    let files = std::fs::read_dir(shared.path()).unwrap().count();
    assert_eq!(files, 1, "the builder's entry alone: no key file, nothing a replica wrote");

    // A replica stopped with SIGTERM while calls flow: it drains, and
    // nginx sends what it refuses to the others; no call fails.
    let mut replicas = replicas;
    let leaving = replicas.remove(1);
    let answered = std::sync::atomic::AtomicUsize::new(0);
    let failures: Vec<String> = std::thread::scope(|scope| {
        let clients: Vec<_> = (0..4)
            .map(|client| {
                let (nginx, answered) = (&nginx.addr, &answered);
                scope.spawn(move || {
                    let mut failures = Vec::new();
                    for n in 0..30 {
                        let text = format!("client {client} call {n}");
                        let body = json!({"text": text}).to_string();
                        let (status, answer) = exchange(nginx, "POST", "/v1/tools/misbehave__echo/call", &json, &body);
                        if status != 200 || !answer.contains(&text) {
                            failures.push(format!("{text}: {status} {answer}"));
                        }
                        answered.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                    }
                    failures
                })
            })
            .collect();
        while answered.load(std::sync::atomic::Ordering::SeqCst) < 20 {
            std::thread::yield_now();
        }
        let (success, log) = leaving.terminate();
        assert!(success, "{log}");
        clients.into_iter().flat_map(|c| c.join().unwrap()).collect()
    });
    assert!(failures.is_empty(), "{} of 120 calls failed: {failures:#?}\n{}", failures.len(), nginx.log());
    drop(nginx);
    for served in replicas {
        let (success, log) = served.terminate();
        assert!(success, "{log}");
    }
}
