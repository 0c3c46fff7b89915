//! The HTTP face against clients that do not play by the rules, over real
//! loopback sockets: messages rmcp itself cannot read. Each wait is for an
//! outcome (an answer), bounded generously; none is a sleep or a timing
//! assertion.

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
