//! MCP over stdin/stdout: rmcp's server on the process's pipes, with one
//! thing added. JSON-RPC asks for a reply to input that is not JSON
//! (`-32700`, id `null`) or not a request it can read (`-32600`, the id
//! if it can be read, else `null`); rmcp drops the first in silence and
//! answers the second without any `id`, so a client that sent a broken
//! line would wait forever, or get a reply it cannot match. Each line is
//! checked as rmcp reads it ([`CheckedLines`], through
//! [`envelope::check`](super::envelope::check)); one rmcp cannot read (or
//! over the length limit) is answered here and never reaches rmcp, except
//! a notification, which JSON-RPC never answers. Replies go out between
//! rmcp's messages ([`SharedOutput`]): written by rmcp's own next write,
//! or by a small task when rmcp has nothing to write. Good lines pay a
//! check and a copy, never a hop between tasks.
//!
//! Against an echo loop with a peer that answers replies with garbage,
//! only the first [`MAX_REPLIES_IN_A_ROW`] bad lines in a row are
//! answered; a good line starts the count again.

use std::collections::VecDeque;
use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll, Waker, ready};

use serde_json::value::RawValue;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::sync::Notify;

use super::envelope::ErrorReply;
use super::mcp;
use crate::error::{Error, Result};
use crate::host::Host;

/// Longest line read; a longer one is answered and skipped.
pub const MAX_LINE_BYTES: usize = 16 << 20;

/// Bad lines in a row that get a reply; the rest are only logged.
pub const MAX_REPLIES_IN_A_ROW: u32 = 16;

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
    let output = SharedOutput::new(output);
    let replier = tokio::spawn(output.clone().write_replies());
    let input = CheckedLines::new(input, output.clone(), MAX_LINE_BYTES);
    let served = async {
        let running = server.serve((input, output)).await.map_err(|e| Error::internal("MCP on stdio", e))?;
        running.waiting().await.map_err(|e| Error::internal("MCP on stdio", e))?;
        Ok(())
    };
    let result = served.await;
    replier.abort();
    result
}

/// The reading side: the lines of `input` rmcp can read, for rmcp; the
/// others answered through `output`.
pub struct CheckedLines<R, W> {
    input: R,
    output: SharedOutput<W>,
    max: usize,
    /// The start of a line, read but not yet ended.
    partial: Vec<u8>,
    /// Inside a line over `max`, skipped to its end.
    skipping: bool,
    /// Checked lines rmcp has not read yet, from `sent` on.
    checked: Vec<u8>,
    sent: usize,
    scratch: Box<[u8]>,
    bad_in_a_row: u32,
    ended: bool,
}

impl<R, W> CheckedLines<R, W> {
    fn new(input: R, output: SharedOutput<W>, max: usize) -> Self {
        CheckedLines {
            input,
            output,
            max,
            partial: Vec::new(),
            skipping: false,
            checked: Vec::new(),
            sent: 0,
            scratch: vec![0; 64 << 10].into_boxed_slice(),
            bad_in_a_row: 0,
            ended: false,
        }
    }

    /// Split `data` into lines: each whole one is checked; the rest waits
    /// for its end.
    fn absorb(&mut self, mut data: &[u8]) {
        while let Some(end) = data.iter().position(|&b| b == b'\n') {
            let (line, rest) = data.split_at(end + 1);
            data = rest;
            if self.skipping || self.partial.len() + line.len() > self.max {
                self.skipping = false;
                self.partial.clear();
                self.refuse_long();
            } else if self.partial.is_empty() {
                self.check(line);
            } else {
                let mut whole = std::mem::take(&mut self.partial);
                whole.extend_from_slice(line);
                self.check(&whole);
            }
        }
        if self.skipping || data.is_empty() {
            return;
        }
        if self.partial.len() + data.len() > self.max {
            self.partial.clear();
            self.skipping = true;
        } else {
            self.partial.extend_from_slice(data);
        }
    }

    /// The input ended: a last line without its `\n` is still a line.
    fn finish(&mut self) {
        if self.skipping {
            self.skipping = false;
            self.refuse_long();
        } else if !self.partial.is_empty() {
            let mut last = std::mem::take(&mut self.partial);
            last.push(b'\n');
            self.check(&last);
        }
    }

    /// Pass `line` on if rmcp can read it (a byte-order mark and blank
    /// lines are allowed, as rmcp allows them), else answer it; a
    /// notification rmcp cannot read is only logged (JSON-RPC never answers
    /// a notification).
    fn check(&mut self, line: &[u8]) {
        let text = line.strip_prefix(b"\xEF\xBB\xBF".as_slice()).unwrap_or(line).trim_ascii();
        if text.is_empty() {
            return;
        }
        match super::envelope::check(text) {
            Ok(_) => {
                self.bad_in_a_row = 0;
                self.checked.extend_from_slice(line);
            }
            Err(refused) if refused.notification => {
                tracing::debug!(fault = %refused.message, "a notification MCP cannot read was dropped");
            }
            Err(refused) => {
                let reply = error_line(refused.id.as_deref(), refused.code, &refused.message);
                self.refuse(&refused.message, reply);
            }
        }
    }

    /// Answer a bad line with `reply`, unless too many came in a row.
    fn refuse(&mut self, fault: &str, reply: Vec<u8>) {
        self.bad_in_a_row += 1;
        if self.bad_in_a_row > MAX_REPLIES_IN_A_ROW {
            tracing::debug!(%fault, "bad line not answered (too many in a row)");
            return;
        }
        tracing::debug!(%fault, "bad line answered with an error");
        self.output.reply(reply);
    }

    /// A line over the length limit was skipped.
    fn refuse_long(&mut self) {
        let fault = format!("Parse error: a message over {} bytes was skipped", self.max);
        self.refuse(&fault, error_line(None, -32700, &fault));
    }
}

impl<R: AsyncRead + Unpin, W> AsyncRead for CheckedLines<R, W> {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, dst: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let this = &mut *self;
        loop {
            if this.sent < this.checked.len() {
                let n = dst.remaining().min(this.checked.len() - this.sent);
                dst.put_slice(&this.checked[this.sent..this.sent + n]);
                this.sent += n;
                if this.sent == this.checked.len() {
                    this.checked.clear();
                    this.sent = 0;
                }
                return Poll::Ready(Ok(()));
            }
            if this.ended {
                return Poll::Ready(Ok(()));
            }
            let mut read = ReadBuf::new(&mut this.scratch);
            ready!(Pin::new(&mut this.input).poll_read(cx, &mut read))?;
            let filled = read.filled().len();
            if filled == 0 {
                this.ended = true;
                this.finish();
            } else {
                let scratch = std::mem::take(&mut this.scratch);
                this.absorb(&scratch[..filled]);
                this.scratch = scratch;
            }
        }
    }
}

/// The writing side, shared by rmcp and the replies: replies are written
/// only between rmcp's messages, never inside one.
pub struct SharedOutput<W>(Arc<Shared<W>>);

struct Shared<W> {
    state: Mutex<Output<W>>,
    /// Told when a reply is queued.
    queued: Notify,
}

struct Output<W> {
    sink: W,
    /// rmcp's message being written is not finished (its last byte
    /// written was not `\n`).
    mid_message: bool,
    /// Replies to write, the first perhaps in part (`written` bytes).
    replies: VecDeque<Vec<u8>>,
    written: usize,
    /// The reply task, waiting for rmcp to finish a message.
    waiting: Option<Waker>,
}

impl<W> Clone for SharedOutput<W> {
    fn clone(&self) -> Self {
        SharedOutput(self.0.clone())
    }
}

impl<W> SharedOutput<W> {
    fn new(sink: W) -> Self {
        let output = Output { sink, mid_message: false, replies: VecDeque::new(), written: 0, waiting: None };
        SharedOutput(Arc::new(Shared { state: Mutex::new(output), queued: Notify::new() }))
    }

    fn lock(&self) -> MutexGuard<'_, Output<W>> {
        self.0.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Queue `reply`; it goes out at the next boundary between messages.
    fn reply(&self, reply: Vec<u8>) {
        self.lock().replies.push_back(reply);
        self.0.queued.notify_one();
    }
}

impl<W: AsyncWrite + Unpin> SharedOutput<W> {
    /// Write queued replies while rmcp has nothing to write, until the
    /// output fails (or the task is stopped with the server).
    async fn write_replies(self) {
        loop {
            self.0.queued.notified().await;
            let written = std::future::poll_fn(|cx| {
                let mut out = self.lock();
                if out.mid_message {
                    out.waiting = Some(cx.waker().clone());
                    return Poll::Pending;
                }
                ready!(out.poll_replies(cx))?;
                Pin::new(&mut out.sink).poll_flush(cx)
            })
            .await;
            if written.is_err() {
                return;
            }
        }
    }
}

impl<W: AsyncWrite + Unpin> Output<W> {
    /// Write every queued reply; `Pending` while the sink is full.
    fn poll_replies(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        while let Some(reply) = self.replies.front() {
            let n = ready!(Pin::new(&mut self.sink).poll_write(cx, &reply[self.written..]))?;
            if n == 0 {
                return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
            }
            self.written += n;
            if self.written == reply.len() {
                self.replies.pop_front();
                self.written = 0;
            }
        }
        Poll::Ready(Ok(()))
    }
}

impl<W: AsyncWrite + Unpin> AsyncWrite for SharedOutput<W> {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        let mut out = self.lock();
        if !out.mid_message {
            ready!(out.poll_replies(cx))?;
        }
        let n = ready!(Pin::new(&mut out.sink).poll_write(cx, buf))?;
        if n > 0 {
            out.mid_message = buf[n - 1] != b'\n';
            if !out.mid_message
                && let Some(waiting) = out.waiting.take()
            {
                waiting.wake();
            }
        }
        Poll::Ready(Ok(n))
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let mut out = self.lock();
        if !out.mid_message {
            ready!(out.poll_replies(cx))?;
        }
        Pin::new(&mut out.sink).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let mut out = self.lock();
        if !out.mid_message {
            ready!(out.poll_replies(cx))?;
        }
        Pin::new(&mut out.sink).poll_shutdown(cx)
    }
}

/// A JSON-RPC error reply (`id` `null` when there is none), as one line.
fn error_line(id: Option<&RawValue>, code: i32, message: &str) -> Vec<u8> {
    let mut line = serde_json::to_vec(&ErrorReply::new(id, code, message)).unwrap_or_default();
    line.push(b'\n');
    line
}

#[cfg(test)]
mod tests {
    use serde_json::Value;
    use tokio::io::AsyncReadExt;

    use super::*;

    /// What rmcp would read from `input`, and the replies queued.
    async fn checked(input: &[u8], max: usize) -> (String, Vec<serde_json::Value>) {
        let output = SharedOutput::new(Vec::<u8>::new());
        let mut lines = CheckedLines::new(input, output.clone(), max);
        // A small buffer, so that messages span several reads.
        let mut passed = Vec::new();
        let mut buf = [0u8; 3];
        loop {
            let n = lines.read(&mut buf).await.unwrap();
            if n == 0 {
                break;
            }
            passed.extend_from_slice(&buf[..n]);
        }
        let replies = output.lock().replies.iter().map(|r| serde_json::from_slice(r).unwrap()).collect();
        (String::from_utf8(passed).unwrap(), replies)
    }

    const PING: &str = r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#;

    #[tokio::test]
    async fn good_lines_pass_whole_and_bad_ones_are_answered() {
        let input =
            format!("{PING}\n{{bad\n\n[1,2,3]\r\n\u{feff}{PING}\n{{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":5}}");
        let (passed, replies) = checked(input.as_bytes(), 100).await;
        assert_eq!(passed, format!("{PING}\n\u{feff}{PING}\n"));
        assert_eq!(replies.len(), 3, "{replies:?}");
        let codes: Vec<_> = replies.iter().map(|r| (r["id"].clone(), r["error"]["code"].clone())).collect();
        assert_eq!(
            codes,
            [(Value::Null, (-32700).into()), (Value::Null, (-32600).into()), (9.into(), (-32600).into())]
        );
        assert!(replies.iter().all(|r| r.as_object().unwrap().contains_key("id")), "{replies:?}");
    }

    /// JSON-RPC never answers a notification, even one that cannot be read.
    #[tokio::test]
    async fn a_notification_rmcp_cannot_read_gets_no_reply() {
        let deep = format!(
            r#"{{"jsonrpc":"2.0","method":"notifications/progress","params":{}{}}}"#,
            "[".repeat(200),
            "]".repeat(200)
        );
        let (passed, replies) = checked(format!("{deep}\n{PING}\n").as_bytes(), 1 << 12).await;
        assert_eq!((passed, replies.len()), (format!("{PING}\n"), 0));
    }

    #[tokio::test]
    async fn a_line_over_the_limit_is_skipped_to_its_end() {
        let long = format!("{PING}{}", " ".repeat(8));
        let (passed, replies) = checked(format!("{long}\n{PING}\n{long}").as_bytes(), PING.len() + 1).await;
        assert_eq!(passed, format!("{PING}\n"));
        assert_eq!(replies.len(), 2, "{replies:?}");
        assert!(replies[0]["error"]["message"].as_str().unwrap().contains(&format!("over {} bytes", PING.len() + 1)));
    }

    /// A peer that answers every reply with garbage gets a bounded number
    /// of replies; a good line passes and starts the count again.
    #[tokio::test]
    async fn bad_lines_in_a_row_get_a_bounded_number_of_replies() {
        let mut input = "garbage\n".repeat(MAX_REPLIES_IN_A_ROW as usize + 10);
        input.push_str(&format!("{PING}\nagain\n"));
        let (passed, replies) = checked(input.as_bytes(), 1 << 10).await;
        assert_eq!(passed, format!("{PING}\n"));
        assert_eq!(replies.len(), MAX_REPLIES_IN_A_ROW as usize + 1);
    }

    /// Replies never land inside a message rmcp is writing.
    #[tokio::test]
    async fn replies_go_between_messages() {
        use tokio::io::AsyncWriteExt;
        let mut output = SharedOutput::new(Vec::<u8>::new());
        output.write_all(b"{\"first\":").await.unwrap();
        output.reply(b"{\"reply\":1}\n".to_vec());
        output.write_all(b"1}\n").await.unwrap();
        output.write_all(b"{\"second\":2}\n").await.unwrap();
        let written = String::from_utf8(output.lock().sink.clone()).unwrap();
        assert_eq!(written, "{\"first\":1}\n{\"reply\":1}\n{\"second\":2}\n");
    }
}
