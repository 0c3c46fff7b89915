//! The health probes and the drain of the HTTP server: new connections
//! refused, running calls finished (both MCP revisions), event streams
//! ended, and no request lost on a kept-alive connection, whenever its
//! client sends it.

use axum::http::{StatusCode, header};
use quiver::faces::http::{HttpOptions, router};
use quiver_tests::TestHost;
use serde_json::json;
use tokio_util::sync::CancellationToken;

use super::rest::{get, json_of};

/// The probes are public (no token), and `/readyz` says "draining", 503
/// with `Retry-After`, once the server's shutdown token is cancelled.
#[tokio::test]
async fn the_probes_are_public_and_readiness_ends_with_the_drain() {
    let t = TestHost::builder().build();
    let options = HttpOptions { token: Some("s3cret".into()), ..Default::default() };
    let draining = CancellationToken::new();
    let app = router(&t.host, &options, draining.clone()).unwrap();
    let (status, _, _) = get(&app, "/v1/status", &[]).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED, "the rest needs the token");
    for path in ["/healthz", "/readyz"] {
        let (status, _, body) = get(&app, path, &[]).await;
        assert_eq!((status, json_of(&body)), (StatusCode::OK, json!({"status": "ok"})), "{path}");
    }
    draining.cancel();
    let (status, headers, body) = get(&app, "/readyz", &[]).await;
    assert_eq!((status, json_of(&body)), (StatusCode::SERVICE_UNAVAILABLE, json!({"status": "draining"})));
    assert_eq!(headers[header::RETRY_AFTER], "1");
    let (status, _, _) = get(&app, "/healthz", &[]).await;
    assert_eq!(status, StatusCode::OK, "alive while it drains");
}

/// A server serving `t` with `options` (on a free loopback port): its
/// address, its shutdown token, and the task that ends when it has drained.
pub(super) async fn served(
    t: &TestHost,
    options: HttpOptions,
) -> (std::net::SocketAddr, CancellationToken, tokio::task::JoinHandle<quiver::Result<()>>) {
    let shutdown = CancellationToken::new();
    let (bound_tx, bound_rx) = tokio::sync::oneshot::channel();
    let (host, stop) = (t.host.clone(), shutdown.clone());
    let server = tokio::spawn(async move {
        quiver::faces::http::serve(&host, &options, stop, |addr| {
            let _ = bound_tx.send(addr);
        })
        .await
    });
    (bound_rx.await.unwrap(), shutdown, server)
}

/// A call of `misbehave`'s `spin` (which runs until the plugin's time
/// limit) sent on its own connection, and started: its whole answer as
/// read until the server closes the connection.
async fn spinning(t: &TestHost, addr: std::net::SocketAddr) -> tokio::task::JoinHandle<String> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let started = t.host.load_stats().instantiated();
    let call = tokio::spawn(async move {
        let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
        let request = "POST /v1/tools/misbehave__spin/call HTTP/1.1\r\nHost: 127.0.0.1\r\n\
                       Content-Type: application/json\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}";
        stream.write_all(request.as_bytes()).await.unwrap();
        let mut answer = Vec::new();
        let _ = stream.read_to_end(&mut answer).await;
        String::from_utf8_lossy(&answer).into_owned()
    });
    // Running once the plugin has been instantiated for it.
    while t.host.load_stats().instantiated() == started {
        tokio::task::yield_now().await;
    }
    call
}

/// Once the listener is closed a connection is refused: connections made
/// before it (still in the backlog) are dropped with it.
async fn refused(addr: std::net::SocketAddr) {
    loop {
        match tokio::net::TcpStream::connect(addr).await {
            Err(error) if error.kind() == std::io::ErrorKind::ConnectionRefused => return,
            // Accepted into the backlog as the listener closed, and reset.
            Err(error) if error.kind() == std::io::ErrorKind::ConnectionReset => {}
            Err(error) => panic!("{error}"),
            Ok(stream) => drop(stream),
        }
        tokio::task::yield_now().await;
    }
}

/// Issue 36's drain: once the shutdown token is cancelled, new connections
/// are refused at once (a balancer tries another replica) while a running
/// call finishes and is answered; the server ends after it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_drain_refuses_new_connections_and_lets_running_calls_finish() {
    let t = quiver_tests::misbehave::host("[plugins.misbehave]\ntimeout_ms = 1500");
    let drain = std::time::Duration::from_secs(60);
    let options = HttpOptions { addr: "127.0.0.1:0".parse().unwrap(), drain, ..Default::default() };
    let (addr, shutdown, server) = served(&t, options).await;
    let call = spinning(&t, addr).await;
    shutdown.cancel();
    tokio::time::timeout(std::time::Duration::from_secs(30), refused(addr)).await.expect("refused while draining");
    assert!(!call.is_finished() && !server.is_finished(), "the call still runs");
    let answer = call.await.unwrap();
    assert!(answer.starts_with("HTTP/1.1 504"), "the call's own answer (its time limit): {answer}");
    server.await.unwrap().unwrap();
}

/// A call still running when the drain period ends is cut: the server
/// ends without answering it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_past_the_drain_period_is_cut() {
    let t = quiver_tests::misbehave::host("[plugins.misbehave]\ntimeout_ms = 20000");
    let drain = std::time::Duration::from_millis(200);
    let options = HttpOptions { addr: "127.0.0.1:0".parse().unwrap(), drain, ..Default::default() };
    let (addr, shutdown, server) = served(&t, options).await;
    let call = spinning(&t, addr).await;
    shutdown.cancel();
    server.await.unwrap().unwrap();
    let answer = tokio::time::timeout(std::time::Duration::from_secs(10), call).await.expect("cut").unwrap();
    assert_eq!(answer, "", "no answer to a call cut by the drain");
}

/// A 2025-11-25 session's event stream (`GET /mcp`) ends when the server
/// drains (the session manager ends it at the drain's start), so the drain does not wait
/// out its whole period for a stream that would never end by itself.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_drain_ends_a_sessions_event_stream() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let t = TestHost::builder().build();
    let drain = std::time::Duration::from_secs(600);
    let options = HttpOptions { addr: "127.0.0.1:0".parse().unwrap(), drain, ..Default::default() };
    let (addr, shutdown, server) = served(&t, options).await;
    let header = raw_session(addr).await;

    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let get = format!(
        "GET /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\nAccept: text/event-stream\r\n\
         {header}\r\n"
    );
    stream.write_all(get.as_bytes()).await.unwrap();
    let mut head = Vec::new();
    while !head.ends_with(b"\r\n\r\n") {
        let mut byte = [0u8];
        assert_eq!(stream.read(&mut byte).await.unwrap(), 1, "{}", String::from_utf8_lossy(&head));
        head.push(byte[0]);
    }
    let head = String::from_utf8_lossy(&head).to_ascii_lowercase();
    assert!(head.starts_with("http/1.1 200") && head.contains("text/event-stream"), "{head}");
    shutdown.cancel();
    let mut rest = Vec::new();
    let ended = tokio::time::timeout(std::time::Duration::from_secs(60), stream.read_to_end(&mut rest)).await;
    assert!(ended.is_ok(), "the event stream outlived the drain's start");
    tokio::time::timeout(std::time::Duration::from_secs(60), server).await.expect("drained").unwrap().unwrap();
}

/// `request` on a connection of its own: the whole answer, as read until
/// the server closes it.
async fn exchange(addr: std::net::SocketAddr, request: String) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut answer = Vec::new();
    let _ = stream.read_to_end(&mut answer).await;
    String::from_utf8_lossy(&answer).into_owned()
}

/// A `POST /mcp` of `body` with the header lines `headers`, on a
/// connection closed after it.
fn post_mcp(body: &str, headers: &str) -> String {
    format!(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\n{headers}Content-Length: {}\r\n\r\n{body}",
        body.len()
    )
}

/// Open a 2025-11-25 session on the server at `addr`: the header lines
/// its requests carry.
async fn raw_session(addr: std::net::SocketAddr) -> String {
    let old = "MCP-Protocol-Version: 2025-11-25\r\n";
    let initialize = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;
    let answer = exchange(addr, post_mcp(initialize, old)).await;
    let session = answer
        .lines()
        .find_map(|l| l.to_ascii_lowercase().starts_with("mcp-session-id:").then(|| l[15..].trim().to_owned()))
        .unwrap_or_else(|| panic!("no session: {answer}"));
    let headers = format!("{old}Mcp-Session-Id: {session}\r\n");
    exchange(addr, post_mcp(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#, &headers)).await;
    headers
}

/// A connection made before the drain has its first request answered, even
/// one sent once new connections are refused: it was accepted, or still in
/// the listen backlog (whose connections closing the listener would reset).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connection_made_before_the_drain_is_answered() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let t = TestHost::builder().build();
    let options = HttpOptions { addr: "127.0.0.1:0".parse().unwrap(), ..Default::default() };
    let (addr, shutdown, server) = served(&t, options).await;
    let mut early = Vec::new();
    for _ in 0..8 {
        early.push(tokio::net::TcpStream::connect(addr).await.unwrap());
    }
    shutdown.cancel();
    tokio::time::timeout(std::time::Duration::from_secs(30), refused(addr)).await.expect("refused while draining");
    for mut stream in early {
        stream.write_all(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n").await.unwrap();
        let mut answer = String::new();
        stream.read_to_string(&mut answer).await.unwrap();
        assert!(answer.starts_with("HTTP/1.1 200"), "a connection made before the drain was cut: {answer:?}");
    }
    server.await.unwrap().unwrap();
}

/// MCP calls running when the drain starts are answered, in both
/// revisions: rmcp's sessions and response streams end when the drain
/// period does, not when it starts (the soak found stateless calls
/// answered 500 "empty response", and session calls' streams ended with
/// no answer, on a replica stopped with SIGTERM).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_drain_lets_running_mcp_calls_finish_in_both_revisions() {
    let t = quiver_tests::misbehave::host("[plugins.misbehave]\ntimeout_ms = 1500");
    let drain = std::time::Duration::from_secs(60);
    let options = HttpOptions { addr: "127.0.0.1:0".parse().unwrap(), drain, ..Default::default() };
    let (addr, shutdown, server) = served(&t, options).await;
    let in_session = raw_session(addr).await;

    let spin = r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"misbehave__spin","arguments":{}}}"#;
    let stateless_spin = json!({"jsonrpc": "2.0", "id": 8, "method": "tools/call", "params": {
        "name": "misbehave__spin", "arguments": {},
        "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                  "io.modelcontextprotocol/clientCapabilities": {},
                  "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"}}}})
    .to_string();
    let new = "MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/call\r\nMcp-Name: misbehave__spin\r\n";
    let started = t.host.load_stats().instantiated();
    let calls = [
        tokio::spawn(exchange(addr, post_mcp(spin, &in_session))),
        tokio::spawn(exchange(addr, post_mcp(&stateless_spin, new))),
    ];
    while t.host.load_stats().instantiated() < started + 2 {
        tokio::task::yield_now().await;
    }
    shutdown.cancel();
    for (call, id) in calls.into_iter().zip([7, 8]) {
        let answer = call.await.unwrap();
        assert!(answer.starts_with("HTTP/1.1 200"), "call {id}: {answer}");
        assert!(answer.contains(&format!("\"id\":{id}")) && answer.contains("\"result\""), "call {id}: {answer}");
    }
    server.await.unwrap().unwrap();
}

/// A kept-alive connection is not closed the moment the drain starts: a
/// request a client (a load balancer reusing its pooled connection) sends
/// on it just then is answered, with `Connection: close`. The soak found
/// such requests lost (nginx answered 502) when every idle connection was
/// closed at the drain's start.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_drain_answers_a_request_on_a_kept_alive_connection() {
    use tokio::io::AsyncWriteExt;
    let t = TestHost::builder().build();
    let options = HttpOptions { addr: "127.0.0.1:0".parse().unwrap(), ..Default::default() };
    let (addr, shutdown, server) = served(&t, options).await;
    let mut stream = tokio::io::BufReader::new(tokio::net::TcpStream::connect(addr).await.unwrap());
    let probe = PROBE.as_bytes();
    stream.get_mut().write_all(probe).await.unwrap();
    assert!(answer(&mut stream).await.0.starts_with("http/1.1 200"));
    // Idle for longer than the quiet time when the drain starts: its client
    // may still pick it for a request then (a balancer learns of the drain
    // only when a new connection is refused).
    tokio::time::sleep(std::time::Duration::from_millis(1200)).await;
    shutdown.cancel();
    tokio::time::timeout(std::time::Duration::from_secs(30), refused(addr)).await.expect("refused while draining");
    // Well within the quiet time a kept-alive connection is given.
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    stream.get_mut().write_all(probe).await.unwrap();
    let (head, _) = answer(&mut stream).await;
    assert!(head.starts_with("http/1.1 200") && head.contains("connection: close"), "{head}");
    server.await.unwrap().unwrap();
}

/// A response whose head went out before the drain did not say
/// `Connection: close`: its client may send another request on the
/// connection the moment it ends, and that request is answered. The soak
/// found it lost (nginx answered 502) when such a connection was closed
/// right after the response.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_drain_answers_the_request_after_a_response_begun_before_it() {
    use tokio::io::AsyncWriteExt;
    let t = quiver_tests::misbehave::host("[plugins.misbehave]\ntimeout_ms = 1500");
    let options = HttpOptions { addr: "127.0.0.1:0".parse().unwrap(), ..Default::default() };
    let (addr, shutdown, server) = served(&t, options).await;
    let in_session = raw_session(addr).await;
    let mut stream = tokio::io::BufReader::new(tokio::net::TcpStream::connect(addr).await.unwrap());
    // A session's call is answered as an event stream: its head goes out at once.
    let spin = r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"misbehave__spin","arguments":{}}}"#;
    let kept_alive = post_mcp(spin, &in_session).replace("Connection: close\r\n", "");
    stream.get_mut().write_all(kept_alive.as_bytes()).await.unwrap();
    let head = answer_head(&mut stream).await;
    assert!(head.starts_with("http/1.1 200") && !head.contains("connection: close"), "{head}");
    shutdown.cancel();
    let body = answer_body(&mut stream, &head).await;
    assert!(body.contains("\"id\":7"), "{body}");
    // At once, the next request on it.
    stream.get_mut().write_all(PROBE.as_bytes()).await.unwrap();
    let (head, _) = answer(&mut stream).await;
    assert!(head.starts_with("http/1.1 200") && head.contains("connection: close"), "{head}");
    server.await.unwrap().unwrap();
}

/// A request for the liveness probe, on a kept-alive connection.
const PROBE: &str = "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";

type Stream = tokio::io::BufReader<tokio::net::TcpStream>;

/// One answer on `stream`: its head (lower case) and its body.
async fn answer(stream: &mut Stream) -> (String, String) {
    let head = answer_head(stream).await;
    let body = answer_body(stream, &head).await;
    (head, body)
}

/// The head of the next answer on `stream`, in lower case.
async fn answer_head(stream: &mut Stream) -> String {
    use tokio::io::AsyncBufReadExt;
    let mut head = String::new();
    loop {
        let mut line = String::new();
        assert!(stream.read_line(&mut line).await.unwrap() > 0, "the connection closed: {head:?}");
        head.push_str(&line);
        if line == "\r\n" {
            return head.to_ascii_lowercase();
        }
    }
}

/// The body after `head`: as many bytes as it says, or its chunks.
async fn answer_body(stream: &mut Stream, head: &str) -> String {
    use tokio::io::{AsyncBufReadExt, AsyncReadExt};
    let length = head.lines().find_map(|l| l.strip_prefix("content-length:")).map(|v| v.trim().parse().unwrap());
    let mut body = Vec::new();
    if let Some(length) = length {
        body.resize(length, 0);
        stream.read_exact(&mut body).await.unwrap();
        return String::from_utf8_lossy(&body).into_owned();
    }
    assert!(head.contains("transfer-encoding: chunked"), "{head}");
    loop {
        let mut size = String::new();
        stream.read_line(&mut size).await.unwrap();
        let size = usize::from_str_radix(size.trim(), 16).unwrap();
        let mut chunk = vec![0; size + 2];
        stream.read_exact(&mut chunk).await.unwrap();
        if size == 0 {
            return String::from_utf8_lossy(&body).into_owned();
        }
        body.extend_from_slice(&chunk[..size]);
    }
}
