//! MCP over stdin/stdout: rmcp's server on the process's pipes, with one
//! thing added in front. JSON-RPC asks for a reply to input that is not
//! JSON (`-32700`, id `null`) and rmcp drops such a line in silence, so a
//! client that sent a broken line waits forever. Each line is checked
//! before rmcp reads it; one that is not JSON (or is over the length
//! limit) is answered here, the rest pass through untouched.
//!
//! Against an echo loop with a peer that answers replies with garbage,
//! only the first [`MAX_REPLIES_IN_A_ROW`] bad lines in a row are
//! answered; a good line starts the count again.

use serde_json::value::RawValue;
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;

use super::mcp::{self, ErrorReply};
use crate::error::{Error, Result};
use crate::host::Host;

/// Longest line read; a longer one is answered and skipped.
pub const MAX_LINE_BYTES: usize = 16 << 20;

/// Bad lines in a row that get a reply; the rest are only logged.
pub const MAX_REPLIES_IN_A_ROW: u32 = 16;

/// Bytes of the pipes between the line check and rmcp.
const PIPE_BYTES: usize = 256 << 10;

/// Serve MCP on stdin/stdout until the client closes them. Nothing but
/// protocol is written to stdout (logs go to stderr, guest output to logs).
/// When both are pipes (as MCP clients launch servers), they are driven by
/// the IO reactor instead of blocking threads (rmcp's `stdio_pipes`).
pub async fn serve_stdio(host: &Host, agent: Option<String>) -> Result<()> {
    let (stdin, stdout) = rmcp::transport::stdio_pipes();
    serve_lines(host, agent, stdin, stdout).await
}

/// Serve MCP on any line-delimited pair of streams, as on stdio.
pub async fn serve_lines<R, W>(host: &Host, agent: Option<String>, input: R, output: W) -> Result<()>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    use rmcp::ServiceExt;
    let server = mcp::McpServer::new(host.clone(), agent)?;
    let (to_server, server_in) = tokio::io::duplex(PIPE_BYTES);
    let (server_out, from_server) = tokio::io::duplex(PIPE_BYTES);
    let (replies, replies_rx) = mpsc::channel(MAX_REPLIES_IN_A_ROW as usize);
    let inbound = tokio::spawn(check_lines(BufReader::new(input), to_server, replies));
    let outbound = tokio::spawn(write_lines(BufReader::new(from_server), replies_rx, output));
    let served = async {
        let running = server.serve((server_in, server_out)).await.map_err(|e| Error::internal("MCP on stdio", e))?;
        running.waiting().await.map_err(|e| Error::internal("MCP on stdio", e))?;
        Ok(())
    };
    let result = served.await;
    inbound.abort();
    // What rmcp wrote last still goes out (its end of the pipe is closed).
    let _ = outbound.await;
    result
}

/// Pass each line of `input` that is JSON to `server`; answer each other
/// one through `replies`. Ends at the end of `input` (closing `server`).
async fn check_lines<R: AsyncBufRead + Unpin, W: AsyncWrite + Unpin>(
    mut input: R,
    mut server: W,
    replies: mpsc::Sender<Vec<u8>>,
) {
    let mut line = Vec::new();
    let mut bad_in_a_row = 0u32;
    loop {
        line.clear();
        let fault = match read_line(&mut input, &mut line, MAX_LINE_BYTES).await {
            Ok(Line::End) => break,
            Ok(Line::TooLong) => Some(format!("a message over {MAX_LINE_BYTES} bytes was skipped")),
            Ok(Line::Whole) => {
                // As rmcp reads it: a byte-order mark and blank lines are allowed.
                let text = line.strip_prefix(b"\xEF\xBB\xBF".as_slice()).unwrap_or(&line).trim_ascii();
                match serde_json::from_slice::<&RawValue>(text) {
                    Ok(_) => None,
                    Err(_) if text.is_empty() => continue,
                    Err(e) => Some(format!("the line is not JSON: {e}")),
                }
            }
            Err(error) => {
                tracing::warn!(%error, "cannot read stdin");
                break;
            }
        };
        let Some(fault) = fault else {
            bad_in_a_row = 0;
            if server.write_all(&line).await.is_err() {
                break;
            }
            if !line.ends_with(b"\n") && server.write_all(b"\n").await.is_err() {
                break;
            }
            continue;
        };
        bad_in_a_row += 1;
        if bad_in_a_row > MAX_REPLIES_IN_A_ROW {
            tracing::debug!(%fault, "bad line not answered (too many in a row)");
            continue;
        }
        tracing::debug!(%fault, "bad line answered with a parse error");
        if replies.send(parse_error(&fault)).await.is_err() {
            break;
        }
    }
    let _ = server.shutdown().await;
}

/// Copy the server's lines to `output`, and the replies between them,
/// each whole and flushed.
async fn write_lines<R: AsyncBufRead + Unpin, W: AsyncWrite + Unpin>(
    mut server: R,
    mut replies: mpsc::Receiver<Vec<u8>>,
    mut output: W,
) {
    let mut line = Vec::new();
    let mut replying = true;
    loop {
        line.clear();
        tokio::select! {
            read = server.read_until(b'\n', &mut line) => match read {
                Ok(0) | Err(_) => break,
                Ok(_) => {}
            },
            reply = replies.recv(), if replying => match reply {
                Some(reply) => line = reply,
                None => {
                    replying = false;
                    continue;
                }
            },
        }
        if output.write_all(&line).await.is_err() || output.flush().await.is_err() {
            break;
        }
    }
}

/// What one read gave.
enum Line {
    /// A line (with its `\n`, unless the input ended without one).
    Whole,
    /// A line over [`MAX_LINE_BYTES`], read to its end and dropped.
    TooLong,
    /// The end of the input.
    End,
}

/// Read one line into `line`, holding at most `max` bytes of it.
async fn read_line<R: AsyncBufRead + Unpin>(input: &mut R, line: &mut Vec<u8>, max: usize) -> std::io::Result<Line> {
    let mut too_long = false;
    loop {
        let chunk = input.fill_buf().await?;
        if chunk.is_empty() {
            return Ok(if too_long {
                Line::TooLong
            } else if line.is_empty() {
                Line::End
            } else {
                Line::Whole
            });
        }
        let (taken, done) = match chunk.iter().position(|&b| b == b'\n') {
            Some(i) => (i + 1, true),
            None => (chunk.len(), false),
        };
        if !too_long && line.len() + taken <= max {
            line.extend_from_slice(&chunk[..taken]);
        } else {
            too_long = true;
            line.clear();
        }
        input.consume(taken);
        if done {
            return Ok(if too_long { Line::TooLong } else { Line::Whole });
        }
    }
}

/// A JSON-RPC parse error (`-32700`, id `null`), as one line.
fn parse_error(message: &str) -> Vec<u8> {
    let message = format!("Parse error: {message}");
    let reply = ErrorReply::new(None, -32700, &message);
    let mut line = serde_json::to_vec(&reply).unwrap_or_default();
    line.push(b'\n');
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn lines_of(input: &'static [u8], max: usize) -> Vec<(bool, String)> {
        // A small buffer, so that lines span several reads.
        let mut reader = BufReader::with_capacity(4, input);
        let mut out = Vec::new();
        loop {
            let mut line = Vec::new();
            match read_line(&mut reader, &mut line, max).await.unwrap() {
                Line::End => return out,
                Line::TooLong => out.push((false, String::new())),
                Line::Whole => out.push((true, String::from_utf8(line).unwrap())),
            }
        }
    }

    #[tokio::test]
    async fn lines_are_read_whole_and_the_last_may_lack_its_end() {
        assert_eq!(lines_of(b"{}\n[1]\n", 100).await, [(true, "{}\n".into()), (true, "[1]\n".into())]);
        assert_eq!(lines_of(b"{}\n{\"a\":1}", 100).await, [(true, "{}\n".into()), (true, "{\"a\":1}".into())]);
    }

    #[tokio::test]
    async fn a_line_over_the_limit_is_skipped_to_its_end() {
        let lines = lines_of(b"[1,2,3,4,5,6,7,8]\n[1]\n[1,2,3,4,5,6,7,8]", 8).await;
        assert_eq!(lines, [(false, String::new()), (true, "[1]\n".into()), (false, String::new())]);
    }

    /// A peer that answers every reply with garbage gets a bounded number
    /// of replies; a good line passes and starts the count again.
    #[tokio::test]
    async fn bad_lines_in_a_row_get_a_bounded_number_of_replies() {
        let mut input = "garbage\n".repeat(MAX_REPLIES_IN_A_ROW as usize + 10);
        input.push_str("{\"ok\":1}\nagain\n");
        let (replies, mut received) = mpsc::channel(64);
        let mut forwarded = Vec::new();
        check_lines(BufReader::new(input.as_bytes()), &mut forwarded, replies).await;
        assert_eq!(forwarded, b"{\"ok\":1}\n");
        let mut count = 0;
        while received.try_recv().is_ok() {
            count += 1;
        }
        assert_eq!(count, MAX_REPLIES_IN_A_ROW + 1);
    }

    #[test]
    fn a_parse_error_is_one_json_rpc_line() {
        let line = parse_error("x");
        assert!(line.ends_with(b"\n") && !line[..line.len() - 1].contains(&b'\n'));
        let reply: serde_json::Value = serde_json::from_slice(&line).unwrap();
        assert_eq!((reply["id"].is_null(), &reply["error"]["code"]), (true, &serde_json::json!(-32700)));
    }
}
