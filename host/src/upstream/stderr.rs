//! A stdio server's stderr: read in fixed memory, each line logged (debug)
//! with secrets masked and its text escaped, the last few kept for the
//! message of a failure.
//!
//! A line is not buffered whole: its head (what is shown, plus room to
//! recognise a secret that starts inside it) is kept and the rest counted,
//! so a server that writes hundreds of megabytes without a newline costs a
//! few kilobytes, and its next line is read as usual. A shown line that was
//! cut says how many bytes were dropped.

use std::collections::VecDeque;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt};

use crate::contract::{Shape, sanitize};
use crate::sandbox::secrets::{Redaction, Secret};

/// Stderr lines kept for failure messages.
const TAIL_LINES: usize = 20;
/// Longest stderr line kept or logged.
const TAIL_LINE_BYTES: usize = 512;
/// Bytes read from stderr at a time.
const CHUNK: usize = 8192;
/// How long a failure waits for a dying server's last stderr lines.
const SETTLE: Duration = Duration::from_millis(500);

/// The last stderr lines of a server, secrets masked.
pub(crate) struct Tail {
    server: String,
    secrets: Vec<Secret>,
    /// The one redaction of the host's secrets (as the audit log's).
    redaction: Redaction,
    /// Raw bytes kept of a line: what is shown, and room for a secret that
    /// starts inside it to be found whole.
    head: usize,
    lines: Mutex<VecDeque<String>>,
    /// Set (and notified) when stderr reached its end.
    ended: AtomicBool,
    end: tokio::sync::Notify,
}

impl Tail {
    pub(crate) fn new(server: &str, secrets: &[Secret]) -> Tail {
        let longest = secrets.iter().map(|s| s.expose().len()).max().unwrap_or(0);
        Tail {
            server: server.to_owned(),
            secrets: secrets.to_vec(),
            redaction: Redaction::new(secrets),
            head: TAIL_LINE_BYTES + longest,
            lines: Mutex::new(VecDeque::new()),
            ended: AtomicBool::new(false),
            end: tokio::sync::Notify::new(),
        }
    }

    /// Wait (briefly) until a server that is going away has written its
    /// last lines, so that a failure can quote them.
    pub(crate) async fn settle(&self) {
        let end = self.end.notified();
        if !self.ended.load(Ordering::Acquire) {
            let _ = tokio::time::timeout(SETTLE, end).await;
        }
    }

    /// Read `stderr` to its end, logging and keeping each line.
    pub(crate) async fn follow(self: std::sync::Arc<Self>, stderr: impl AsyncRead + Unpin) {
        self.read(stderr).await;
        self.ended.store(true, Ordering::Release);
        self.end.notify_waiters();
    }

    /// Read `stderr` in chunks: of each line, the first [`Tail::head`]
    /// bytes are kept and the rest counted.
    async fn read(&self, mut stderr: impl AsyncRead + Unpin) {
        let mut chunk = vec![0; CHUNK];
        let mut line = Vec::with_capacity(self.head);
        let mut dropped = 0usize;
        loop {
            let read = match stderr.read(&mut chunk).await {
                Ok(0) | Err(_) => break,
                Ok(read) => read,
            };
            let mut rest = &chunk[..read];
            while !rest.is_empty() {
                let end = rest.iter().position(|b| *b == b'\n');
                let part = &rest[..end.unwrap_or(rest.len())];
                let room = self.head - line.len();
                line.extend_from_slice(&part[..part.len().min(room)]);
                dropped += part.len().saturating_sub(room);
                match end {
                    Some(end) => {
                        self.keep(&line, dropped);
                        line.clear();
                        dropped = 0;
                        rest = &rest[end + 1..];
                    }
                    None => rest = &[],
                }
            }
        }
        if !line.is_empty() || dropped > 0 {
            self.keep(&line, dropped);
        }
    }

    /// Log and keep one line: `raw`, its head, and `dropped` bytes more.
    fn keep(&self, raw: &[u8], dropped: usize) {
        let line = self.shown(raw, dropped);
        tracing::debug!(server = %self.server, "stderr: {line}");
        let mut kept = self.lines.lock().unwrap_or_else(|e| e.into_inner());
        if kept.len() == TAIL_LINES {
            kept.pop_front();
        }
        kept.push_back(line);
    }

    /// `raw` as shown: secrets masked, escaped, cut to [`TAIL_LINE_BYTES`],
    /// with the count of what was left out.
    fn shown(&self, mut raw: &[u8], mut dropped: usize) -> String {
        if dropped > 0 {
            // The line was cut: a secret may begin in the head and go on
            // in what was dropped. Its beginning goes too.
            let partial = self
                .secrets
                .iter()
                .flat_map(|s| (1..s.expose().len()).map(move |n| &s.expose().as_bytes()[..n]))
                .filter(|prefix| raw.ends_with(prefix))
                .map(<[u8]>::len)
                .max()
                .unwrap_or(0);
            dropped += partial;
            raw = &raw[..raw.len() - partial];
        }
        let line = String::from_utf8_lossy(raw);
        let line = self.redaction.scrub(line.trim_end());
        // Control characters are escaped, not dropped: the reader sees they were there.
        let clean = sanitize(&line, Shape::Line);
        let mut end = clean.len().min(TAIL_LINE_BYTES);
        while !clean.is_char_boundary(end) {
            end -= 1;
        }
        match clean.len() - end + dropped {
            0 => clean.into_owned(),
            more => format!("{}… ({more} more bytes dropped)", &clean[..end]),
        }
    }

    /// The last line, if any.
    pub(crate) fn last(&self) -> Option<String> {
        self.lines.lock().unwrap_or_else(|e| e.into_inner()).back().cloned()
    }

    /// Log the kept lines (after a failure).
    pub(crate) fn log_tail(&self) {
        for line in self.lines.lock().unwrap_or_else(|e| e.into_inner()).iter() {
            tracing::warn!(server = %self.server, "stderr: {line}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn lines_of(input: &[u8], secrets: &[&str]) -> Vec<String> {
        let secrets: Vec<Secret> = secrets.iter().map(|s| Secret::new((*s).to_owned())).collect();
        let tail = Tail::new("s", &secrets);
        tail.read(input).await;
        tail.lines.into_inner().unwrap().into_iter().collect()
    }

    #[tokio::test]
    async fn a_long_line_keeps_its_head_and_the_next_line_is_read() {
        let mut input = vec![b'x'; 1 << 20];
        input.extend_from_slice(b"\nnext line\r\nlast words without a newline");
        let lines = lines_of(&input, &[]).await;
        assert_eq!(lines.len(), 3, "{lines:?}");
        assert!(lines[0].starts_with("xxx") && lines[0].len() < TAIL_LINE_BYTES + 64, "{}", lines[0]);
        assert!(lines[0].ends_with(&format!("… ({} more bytes dropped)", (1 << 20) - TAIL_LINE_BYTES)), "{}", lines[0]);
        assert_eq!(lines[1], "next line");
        assert_eq!(lines[2], "last words without a newline");
    }

    #[tokio::test]
    async fn control_characters_are_escaped_and_secrets_masked() {
        let lines = lines_of(b"token hunter2 \x1b[2J\rforged\n", &["hunter2"]).await;
        assert_eq!(lines, [r"token [redacted] \u{1b}[2J\rforged"]);
    }

    #[tokio::test]
    async fn a_secret_cut_at_the_head_of_a_long_line_is_not_shown_in_part() {
        // A long secret early on shortens what is shown, so that the shown
        // part reaches past the first 512 raw bytes, into a second secret.
        let (long, other) = ("L".repeat(200), "S".repeat(100));
        let mut input = format!("{long}{}{other}", "x".repeat(TAIL_LINE_BYTES - 80)).into_bytes();
        input.extend(vec![b'y'; 10_000]);
        input.push(b'\n');
        let lines = lines_of(&input, &[&long, &other]).await;
        assert!(lines[0].starts_with("[redacted]xxx"), "{}", lines[0]);
        assert!(!lines[0].contains('S') && !lines[0].contains('L'), "{}", lines[0]);
        assert!(lines[0].contains("more bytes dropped"), "{}", lines[0]);
    }
}
