//! The fixture server starts, announces its URL, and answers MCP over HTTP.
//! (This test also makes `cargo test` build the binary that `run.sh` and
//! `.ci/run` drive with the official conformance suite.)

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Command, Stdio};

#[test]
fn the_fixture_server_answers_server_discover() {
    let mut server = Command::new(env!("CARGO_BIN_EXE_quiver-conformance-server"))
        .arg("127.0.0.1:0")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("the fixture server starts");
    // The first line is written once it listens: no waiting by the clock.
    let mut url = String::new();
    BufReader::new(server.stdout.take().unwrap()).read_line(&mut url).expect("an announcement");
    let authority = url.trim().strip_prefix("http://").and_then(|rest| rest.strip_suffix("/mcp")).expect("a URL");

    let body = r#"{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"test","version":"0"}}}}"#;
    let mut stream = TcpStream::connect(authority).expect("it listens where it said");
    write!(
        stream,
        "POST /mcp HTTP/1.1\r\nHost: {authority}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\n\
         Mcp-Method: server/discover\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    server.kill().unwrap();
    server.wait().unwrap();

    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert!(answer.contains("supportedVersions") && answer.contains("2026-07-28"), "{answer}");
    assert!(answer.contains("`request_tools`"), "Quiver's instructions point at its meta-tools: {answer}");
    assert!(answer.contains("\"prompts\""), "the fixtures' capabilities are declared: {answer}");
}
