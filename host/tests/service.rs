//! The `quiver` binary as a service and as its operator's check: what
//! each command logs, and `quiver check` over a whole configuration.

mod common;

use std::process::Command;

use common::{Cli, stderr, stdout};

/// What each command logs with no `RUST_LOG`: `serve` one line per call
/// (the tool, the agent, the outcome, the time; never the arguments) and
/// its reloads; a one-shot command nothing below a warning; `-vv` the debug
/// lines of Quiver's own modules, never the engine's.
#[test]
fn each_command_logs_what_its_user_needs() {
    let cli = Cli::new();
    let quiet = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_quiver"))
            .arg("--cache-dir")
            .arg(cli.cache.path())
            .arg("--plugins")
            .arg(cli.plugins.path())
            .args(args)
            .env_remove("QUIVER_CONFIG")
            .env_remove("RUST_LOG")
            .output()
            .expect("run quiver")
    };
    let prompt = quiet(&["prompt"]);
    assert!(prompt.status.success());
    assert_eq!(stderr(&prompt), "", "a one-shot command logs nothing at its default level");

    let verbose = quiet(&["-vv", "call", "misbehave", "echo", r#"{"text": "hi"}"#]);
    assert!(verbose.status.success(), "{}", stderr(&verbose));
    let log = stderr(&verbose);
    assert!(log.contains("INFO") && log.contains(" quiver::"), "{log}");
    assert!(
        log.lines().all(|l| !l.contains(" cranelift") && !l.contains(" wasmtime")),
        "-vv prints the engine's lines: {} lines",
        log.lines().count()
    );

    let mut served = cli.serve_stdio(&["--no-bundled"], &[], &[("REACT_TOOL_SELECTION_THRESHOLD", "50")]);
    served.send(common::HANDSHAKE.into_iter().chain([
        r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"misbehave__echo","arguments":{"text":"a-secret-argument"}}}"#,
        r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"misbehave__nope","arguments":{}}}"#,
    ]));
    served.answers(3);
    let (_, log) = served.finish();
    // Calls run concurrently: their lines come in any order.
    let calls: Vec<&str> = log.lines().filter(|l| l.contains("quiver::calls")).collect();
    assert_eq!(calls.len(), 2, "{log}");
    let line = |tool: &str| *calls.iter().find(|l| l.contains(&format!("tool={tool} "))).expect(tool);
    let echo = line("misbehave__echo");
    assert!(echo.contains("outcome=ok") && echo.contains("agent=-") && echo.contains("ms="), "{echo}");
    assert!(line("misbehave__nope").contains("outcome=unknown_tool"), "{log}");
    assert!(!log.contains("a-secret-argument"), "arguments reached the log: {log}");
    assert!(log.contains("catalog ready"), "a service logs its catalog: {log}");
}

/// `quiver check` with no file checks what the configuration serves: a
/// resource that fails is named, with why, and the exit code says so; the
/// rest is counted as served.
#[test]
fn check_with_no_file_names_each_failing_resource() {
    let cli = Cli::new();
    let config = cli.cache.path().join("quiver.toml");
    let missing = cli.cache.path().join("nowhere/shop.db");
    std::fs::write(&config, format!("[databases.shop]\nurl = \"sqlite:{}\"\n", missing.display())).unwrap();
    let out = cli.run(&["--config", config.to_str().unwrap(), "check"]);
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    let text = stdout(&out);
    assert!(text.contains("failing: [databases.shop]") && text.contains(&missing.display().to_string()), "{text}");
    std::fs::write(&config, "").unwrap();
    let out = cli.run(&["--config", config.to_str().unwrap(), "check"]);
    assert!(out.status.success(), "{}", stdout(&out));
    assert!(stdout(&out).contains("serving: "), "{}", stdout(&out));
}

/// `serve --stdio --metrics ADDR` serves `/metrics` beside the stdio face:
/// the calls made over stdio are counted there, and an address off
/// loopback without a token is refused before anything is served.
#[test]
fn stdio_serves_its_metrics_on_a_side_listener() {
    use std::io::{Read, Write};
    let cli = Cli::new();
    let refused = cli.run(&["--no-bundled", "serve", "--stdio", "--no-watch", "--metrics", "0.0.0.0:0"]);
    assert!(!refused.status.success() && stderr(&refused).contains("needs a bearer token"), "{}", stderr(&refused));

    let mut served = cli.serve_stdio(&["--no-bundled"], &["--metrics", "127.0.0.1:0"], &[]);
    // The side listener says where it is before stdio is served.
    let line = served.log_line("quiver: metrics at http://");
    let addr = line.trim_start_matches("quiver: metrics at http://").trim_end_matches("/metrics").to_owned();
    served.send(common::HANDSHAKE.into_iter().chain([
        r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"misbehave__echo","arguments":{"text":"hi"}}}"#,
    ]));
    served.answers(2);
    let mut stream = std::net::TcpStream::connect(&addr).expect("connect to the metrics listener");
    write!(stream, "GET /metrics HTTP/1.0\r\nHost: {addr}\r\n\r\n").unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    assert!(answer.starts_with("HTTP/1.0 200"), "{answer}");
    let counted = r#"quiver_calls_total{resource="misbehave",outcome="ok"} 1"#;
    assert!(answer.lines().any(|l| l == counted), "{answer}");
    assert!(answer.contains(r#"gen_ai_tool_name="misbehave__echo""#), "{answer}");
    assert!(served.finish().0);
}

/// `--log-format json` writes one JSON object per line, with stable keys:
/// a serving process's per-call line carries the tool and the outcome as
/// fields, never the arguments.
#[test]
fn json_logs_are_one_object_per_line() {
    let cli = Cli::new();
    let mut served = cli.serve_stdio(&["--no-bundled", "--log-format", "json"], &[], &[]);
    served.send(common::HANDSHAKE.into_iter().chain([
        r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"misbehave__echo","arguments":{"text":"a-secret-argument"}}}"#,
    ]));
    served.answers(2);
    let (_, log) = served.finish();
    let events: Vec<serde_json::Value> =
        log.lines().map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}"))).collect();
    assert!(events.iter().all(|e| e["timestamp"].is_string() && e["level"].is_string() && e["target"].is_string()));
    let call = events.iter().find(|e| e["target"] == "quiver::calls").unwrap_or_else(|| panic!("{log}"));
    assert_eq!((call["tool"].as_str(), call["outcome"].as_str()), (Some("misbehave__echo"), Some("ok")), "{call}");
    assert!(!log.contains("a-secret-argument"), "arguments reached the log: {log}");
}

/// `[audit] stream = "stdout"`: when serving HTTP, one JSON line per call
/// on stdout, for a cluster's log collector; when serving stdio (stdout is
/// the MCP channel) the lines go to stderr, and stdout carries MCP only.
#[test]
fn audit_lines_go_to_stdout_when_serving_http_and_to_stderr_beside_stdio() {
    use std::io::{Read, Write};
    let cli = Cli::new();
    let config = cli.cache.path().join("quiver.toml");
    std::fs::write(&config, "[audit]\nstream = \"stdout\"\n").unwrap();
    let global = ["--no-bundled", "--config", config.to_str().unwrap()];

    let mut served = cli.serve(&global, &["--http", "127.0.0.1:0"], &[]);
    let addr = served.http_addr();
    let body = r#"{"text": "audited"}"#;
    let mut stream = std::net::TcpStream::connect(&addr).unwrap();
    write!(
        stream,
        "POST /v1/tools/misbehave__echo/call HTTP/1.0\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    assert!(answer.starts_with("HTTP/1.0 200"), "{answer}");
    let record: serde_json::Value = serde_json::from_str(&served.stdout_line()).unwrap();
    assert_eq!((record["resource"].as_str(), record["action"].as_str()), (Some("misbehave"), Some("echo")), "{record}");
    assert_eq!((record["outcome"].as_str(), record["params"]["text"].as_str()), (Some("ok"), Some("audited")));
    assert!(served.terminate().0);

    let mut served = cli.serve_stdio(&global, &[], &[]);
    served.send(common::HANDSHAKE.into_iter().chain([
        r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"misbehave__echo","arguments":{"text":"beside"}}}"#,
    ]));
    let answers = served.answers(2);
    assert_eq!(answers[1]["result"]["content"][0]["text"], "beside", "{answers:?}");
    let (success, log) = served.finish();
    assert!(success, "{log}");
    let record = log.lines().find(|l| l.starts_with('{') && l.contains("\"resource\":\"misbehave\"")).expect(&log);
    let record: serde_json::Value = serde_json::from_str(record).unwrap();
    assert_eq!(record["params"]["text"], "beside");
}

/// `request` sent to `addr` on a connection of its own (HTTP/1.0: closed
/// after the answer), and the whole answer.
fn exchange(addr: &str, request: &str) -> String {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(addr).unwrap();
    write!(stream, "{request}").unwrap();
    let mut answer = String::new();
    let _ = stream.read_to_string(&mut answer);
    answer
}

/// Issue 36's drain, through the binary: on SIGTERM `serve --http` refuses
/// new connections at once while a running call finishes and is answered
/// (within `--drain-seconds`), then exits cleanly.
#[test]
fn sigterm_drains_the_http_face() {
    let cli = Cli::new();
    let config = cli.cache.path().join("quiver.toml");
    std::fs::write(&config, "[plugins.misbehave]\ntimeout_ms = 1500\n").unwrap();
    let global = ["--no-bundled", "--config", config.to_str().unwrap()];
    let served = cli.serve(&global, &["--http", "127.0.0.1:0", "--drain-seconds", "60"], &[]);
    let addr = served.http_addr();
    let ready = exchange(&addr, &format!("GET /readyz HTTP/1.0\r\nHost: {addr}\r\n\r\n"));
    assert!(ready.starts_with("HTTP/1.0 200") && ready.ends_with(r#"{"status":"ok"}"#), "{ready}");
    let spin = format!(
        "POST /v1/tools/misbehave__spin/call HTTP/1.0\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
         Content-Length: 2\r\n\r\n{{}}"
    );
    let call = std::thread::spawn({
        let addr = addr.clone();
        move || exchange(&addr, &spin)
    });
    // Running once the metrics count its instance.
    let metrics = format!("GET /metrics HTTP/1.0\r\nHost: {addr}\r\n\r\n");
    while !exchange(&addr, &metrics).lines().any(|l| l.starts_with("quiver_instantiations_total") && !l.ends_with(" 0"))
    {
        std::thread::yield_now();
    }
    served.signal_term();
    loop {
        match std::net::TcpStream::connect(&addr) {
            Err(error) if error.kind() == std::io::ErrorKind::ConnectionRefused => break,
            Err(error) if error.kind() == std::io::ErrorKind::ConnectionReset => {}
            Err(error) => panic!("{error}"),
            Ok(stream) => drop(stream),
        }
    }
    assert!(!call.is_finished(), "the call still runs while new connections are refused");
    let answer = call.join().unwrap();
    assert!(answer.starts_with("HTTP/1.0 504"), "the call's own answer (its time limit): {answer}");
    let (success, log) = served.finish();
    assert!(success, "{log}");
    assert!(log.contains("draining on a signal"), "{log}");
}
