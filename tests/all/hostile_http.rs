//! The HTTP face against clients that do not play by the rules, over real
//! loopback sockets: connections that never send a request head (or only
//! the start of one), kept-alive connections left idle, requests without a
//! `Host`, and messages rmcp itself cannot read. Each wait is for an
//! outcome (an answer, an end of stream), bounded generously; none is a
//! sleep or a timing assertion.

use std::net::SocketAddr;
use std::time::Duration;

use quiver::faces::http::HttpOptions;
use quiver_tests::TestHost;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_util::sync::CancellationToken;

/// Longest wait for any one outcome; it only bounds a failing test.
const OUTCOME: Duration = Duration::from_secs(30);

/// A server of `host` on a free loopback port, until dropped.
struct Server {
    addr: SocketAddr,
    shutdown: CancellationToken,
    task: Option<tokio::task::JoinHandle<quiver::Result<()>>>,
}

impl Server {
    async fn start(host: &quiver::Host, options: HttpOptions) -> Server {
        let options = HttpOptions { addr: "127.0.0.1:0".parse().unwrap(), ..options };
        let shutdown = CancellationToken::new();
        let (bound_tx, bound_rx) = tokio::sync::oneshot::channel();
        let (host, stop) = (host.clone(), shutdown.clone());
        let task = tokio::spawn(async move {
            quiver::faces::http::serve(&host, &options, stop, |addr| {
                let _ = bound_tx.send(addr);
            })
            .await
        });
        Server { addr: bound_rx.await.unwrap(), shutdown, task: Some(task) }
    }

    async fn connect(&self) -> TcpStream {
        TcpStream::connect(self.addr).await.unwrap()
    }

    async fn stop(mut self) {
        self.shutdown.cancel();
        let task = self.task.take().unwrap();
        tokio::time::timeout(OUTCOME, task).await.expect("the server stops").unwrap().unwrap();
    }
}

/// Read until the server closes the connection; what it sent.
async fn until_closed(stream: &mut TcpStream, what: &str) -> Vec<u8> {
    let mut rest = Vec::new();
    match tokio::time::timeout(OUTCOME, stream.read_to_end(&mut rest)).await {
        Ok(_) => rest,
        Err(_) => panic!("{what}: the server never closed the connection"),
    }
}

/// Read one HTTP/1.1 response with a `content-length` (the connection
/// stays open); its status line and body.
async fn response(stream: &mut TcpStream) -> (String, Vec<u8>) {
    let mut bytes = Vec::new();
    let read = async {
        let head_end = loop {
            if let Some(end) = bytes.windows(4).position(|w| w == b"\r\n\r\n") {
                break end + 4;
            }
            let mut chunk = [0u8; 4096];
            let n = stream.read(&mut chunk).await.unwrap();
            assert!(n > 0, "closed mid-response: {}", String::from_utf8_lossy(&bytes));
            bytes.extend_from_slice(&chunk[..n]);
        };
        let head = String::from_utf8_lossy(&bytes[..head_end]).into_owned();
        let length: usize = head
            .lines()
            .find_map(|l| l.to_ascii_lowercase().strip_prefix("content-length:").map(|v| v.trim().parse().unwrap()))
            .unwrap_or_else(|| panic!("no content-length: {head}"));
        while bytes.len() < head_end + length {
            let mut chunk = [0u8; 4096];
            let n = stream.read(&mut chunk).await.unwrap();
            assert!(n > 0, "closed mid-body");
            bytes.extend_from_slice(&chunk[..n]);
        }
        (head.lines().next().unwrap_or_default().to_owned(), bytes[head_end..head_end + length].to_vec())
    };
    tokio::time::timeout(OUTCOME, read).await.expect("a response")
}

/// Finding H1: connections that send nothing, `P`, or half the HTTP/2
/// preface (what hyper-util reads before it picks a protocol) are closed
/// from accept, whatever they send, so they cannot keep every slot; a real
/// request waiting in the backlog is then served.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_that_never_send_a_request_head_are_closed() {
    let t = TestHost::builder().build();
    let options = HttpOptions {
        header_timeout: Duration::from_millis(300),
        idle_timeout: Duration::from_millis(300),
        max_connections: 3,
        ..Default::default()
    };
    let server = Server::start(&t.host, options).await;
    let mut silent = Vec::new();
    for opening in [&b""[..], b"P", b"PRI * HTTP/2.0\r\n"] {
        let mut stream = server.connect().await;
        stream.write_all(opening).await.unwrap();
        silent.push((opening, stream));
    }
    // Every slot is taken: this one waits in the backlog until they go.
    let mut real = server.connect().await;
    real.write_all(b"GET /v1/status HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n").await.unwrap();
    for (opening, stream) in &mut silent {
        let sent =
            until_closed(stream, &format!("a connection that sent {:?}", String::from_utf8_lossy(opening))).await;
        assert!(!String::from_utf8_lossy(&sent).contains(" 200 "), "it was answered as a request");
    }
    let answer = String::from_utf8(until_closed(&mut real, "the real request").await).unwrap();
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    server.stop().await;
}

/// Finding H1: a kept-alive connection with nothing in flight is closed
/// after `idle_timeout`; a call in flight for longer is not cut (the
/// plugin's own time limit, five times the idle timeout, ends it).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_connection_is_closed_and_a_call_in_flight_is_not() {
    let t = TestHost::builder().fixture("misbehave").config("[plugins.misbehave]\ntimeout_ms = 1500").build();
    let options = HttpOptions {
        header_timeout: Duration::from_millis(300),
        idle_timeout: Duration::from_millis(300),
        ..Default::default()
    };
    let server = Server::start(&t.host, options).await;

    let mut kept = server.connect().await;
    kept.write_all(b"GET /v1/status HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n").await.unwrap();
    let (status, _) = response(&mut kept).await;
    assert!(status.starts_with("HTTP/1.1 200"), "{status}");
    assert!(until_closed(&mut kept, "an idle kept-alive connection").await.is_empty());

    let mut slow = server.connect().await;
    let body = "{}";
    let request = format!(
        "POST /v1/tools/misbehave__spin/call HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    slow.write_all(request.as_bytes()).await.unwrap();
    let (status, body) = response(&mut slow).await;
    let answer: Value = serde_json::from_slice(&body).unwrap();
    assert!(status.starts_with("HTTP/1.1 "), "{status}");
    assert_eq!(answer["error_kind"], "Timeout", "the call ran to its own limit: {answer}");
    server.stop().await;
}

/// Finding I3: a request without a `Host` (HTTP/1.0 allows it) is refused
/// with 400 on REST as on `/mcp`.
#[tokio::test]
async fn a_request_without_host_is_refused_on_every_route() {
    let t = TestHost::builder().build();
    let server = Server::start(&t.host, HttpOptions::default()).await;
    for request in [
        "GET /v1/status HTTP/1.0\r\n\r\n".to_owned(),
        "GET /v1/tools HTTP/1.0\r\n\r\n".to_owned(),
        format!(
            "POST /mcp HTTP/1.0\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: {}\r\n\r\n{}",
            PING.len(),
            PING
        ),
    ] {
        let mut stream = server.connect().await;
        stream.write_all(request.as_bytes()).await.unwrap();
        let answer = String::from_utf8_lossy(&until_closed(&mut stream, "HTTP/1.0").await).into_owned();
        assert!(answer.starts_with("HTTP/1.0 400") || answer.starts_with("HTTP/1.1 400"), "{request}\n→ {answer}");
    }
    let mut stream = server.connect().await;
    stream.write_all(b"GET /v1/status HTTP/1.0\r\nHost: localhost\r\n\r\n").await.unwrap();
    let answer = String::from_utf8_lossy(&until_closed(&mut stream, "HTTP/1.0 with a Host").await).into_owned();
    assert!(answer.contains(" 200 "), "{answer}");
    server.stop().await;
}

const PING: &str = r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#;

/// Finding L9: what rmcp itself cannot read (nesting past serde_json's
/// limit, an `id` out of range, a batch) gets a JSON-RPC error with HTTP
/// 400 on `/mcp`, never rmcp's 415 with text, and every reply has an `id`
/// (`null` when it cannot be read), on stdio too.
#[tokio::test]
async fn messages_rmcp_cannot_read_get_json_rpc_errors_with_an_id() {
    let t = TestHost::builder().build();
    let server = Server::start(&t.host, HttpOptions::default()).await;
    let deep = format!(
        r#"{{"jsonrpc":"2.0","id":4,"method":"ping","params":{{"a":{}1{}}}}}"#,
        "[".repeat(300),
        "]".repeat(300)
    );
    let bodies = [
        (deep.clone(), json!(4)),
        (r#"{"jsonrpc":"2.0","id":1e999999,"method":"ping"}"#.to_owned(), Value::Null),
        (r#"{"jsonrpc":"2.0","id":1.5,"method":"ping"}"#.to_owned(), Value::Null),
        ("[1,2,3]".to_owned(), Value::Null),
    ];
    for (body, id) in &bodies {
        let mut stream = server.connect().await;
        let request = format!(
            "POST /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        );
        stream.write_all(request.as_bytes()).await.unwrap();
        let (status, reply) = response(&mut stream).await;
        let shown = &body[..body.len().min(60)];
        assert!(status.starts_with("HTTP/1.1 400"), "{shown}: {status} {}", String::from_utf8_lossy(&reply));
        let reply: Value = serde_json::from_slice(&reply).unwrap();
        assert_eq!(reply["error"]["code"], -32600, "{shown}: {reply}");
        assert_eq!((reply.get("id"), &reply["jsonrpc"]), (Some(id), &json!("2.0")), "{shown}: {reply}");
    }
    server.stop().await;

    let (mut client, io) = tokio::io::duplex(1 << 16);
    let (server_in, server_out) = tokio::io::split(io);
    let host = t.host.clone();
    let served =
        tokio::spawn(async move { quiver::faces::stdio::serve_lines(&host, None, server_in, server_out).await });
    let initialize = r#"{"jsonrpc":"2.0","id":100,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;
    client.write_all(format!("{initialize}\n").as_bytes()).await.unwrap();
    for (body, _) in &bodies {
        client.write_all(format!("{body}\n").as_bytes()).await.unwrap();
    }
    let (reader, mut writer) = tokio::io::split(client);
    let mut lines = tokio::io::AsyncBufReadExt::lines(tokio::io::BufReader::new(reader));
    let mut replies = Vec::new();
    while replies.len() < bodies.len() {
        let line = tokio::time::timeout(OUTCOME, lines.next_line()).await.expect("a reply per line").unwrap().unwrap();
        let reply = serde_json::from_str::<Value>(&line).unwrap();
        if reply["id"] != 100 {
            replies.push(reply);
        }
    }
    for (reply, (body, id)) in replies.iter().zip(&bodies) {
        let shown = &body[..body.len().min(60)];
        assert_eq!(reply["error"]["code"], -32600, "{shown}: {reply}");
        assert_eq!(reply.get("id"), Some(id), "{shown}: {reply}");
    }
    writer.shutdown().await.unwrap();
    tokio::time::timeout(OUTCOME, served).await.unwrap().unwrap().unwrap();
}
