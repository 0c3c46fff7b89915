//! The `log` capability: structured logs from the guest, and its stdout and
//! stderr, into the host's log under one per-call byte budget.
//!
//! Grant: the budget (`max_log_kb`). Per-call state: [`GuestLog`], which
//! also keeps what the host needs to explain a crash (the panic message the
//! SDK's hook reported, the last stderr line). Nothing a guest writes ever
//! reaches the host's stdout, which carries MCP on stdio, and what reaches
//! the log passes the one sanitiser on one line (`Shape::Line`).

use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use bytes::Bytes;
use wasmtime::component::{HasSelf, Linker};
use wasmtime_wasi::cli::{IsTerminal, StdoutStream};
use wasmtime_wasi::p2::{OutputStream, Pollable, StreamResult};

use crate::contract::tool::quiver::plugin::log;
use crate::contract::{Shape, sanitize};

/// Add the `log` import to `linker`; `state` finds the call's [`LogState`].
pub(crate) fn link<T: 'static>(linker: &mut Linker<T>, state: fn(&mut T) -> &mut LogState) -> wasmtime::Result<()> {
    log::add_to_linker::<T, HasSelf<LogState>>(linker, state)
}

/// Where a guest's log bytes came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Stream {
    Stdout,
    Stderr,
}

/// The per-call log of one guest: a byte budget shared by stdout, stderr
/// and the `log` import, plus what the host needs to explain a crash.
#[derive(Debug)]
pub(crate) struct GuestLog {
    plugin: Arc<str>,
    remaining: usize,
    dropped: usize,
    partial: [Vec<u8>; 2],
    /// The panic message the SDK's panic hook reported, if any.
    panic: Option<String>,
    /// The last complete line written to stderr.
    last_stderr: Option<String>,
}

/// Longest partial line kept before it is emitted as is.
const MAX_LINE: usize = 4096;

/// Field the SDK's panic hook sets on the log record of a panic.
const PANIC_FIELD: &str = "quiver.panic";

/// What a finished call left in its log: the crash explanation, if any.
#[derive(Debug, Default)]
pub(crate) struct Last {
    /// The panic message the SDK reported.
    pub(crate) panic: Option<String>,
    /// The last line of stderr.
    pub(crate) stderr: Option<String>,
}

impl GuestLog {
    fn new(plugin: Arc<str>, budget: usize) -> Self {
        Self {
            plugin,
            remaining: budget,
            dropped: 0,
            partial: [Vec::new(), Vec::new()],
            panic: None,
            last_stderr: None,
        }
    }

    /// Charge `bytes` to the budget; false if they must be dropped.
    fn charge(&mut self, bytes: usize) -> bool {
        if bytes <= self.remaining {
            self.remaining -= bytes;
            true
        } else {
            self.remaining = 0;
            self.dropped += bytes;
            false
        }
    }

    fn write(&mut self, stream: Stream, bytes: &[u8]) {
        let accepted = bytes.len().min(self.remaining);
        self.dropped += bytes.len() - accepted;
        self.remaining -= accepted;
        let index = stream as usize;
        let mut rest = &bytes[..accepted];
        while let Some(newline) = rest.iter().position(|&b| b == b'\n') {
            self.partial[index].extend_from_slice(&rest[..newline]);
            self.emit(stream);
            rest = &rest[newline + 1..];
        }
        self.partial[index].extend_from_slice(rest);
        if self.partial[index].len() >= MAX_LINE {
            self.emit(stream);
        }
    }

    fn emit(&mut self, stream: Stream) {
        let line = String::from_utf8_lossy(&std::mem::take(&mut self.partial[stream as usize])).into_owned();
        // One host log line per guest line, whatever it holds.
        let shown = sanitize(&line, Shape::Line);
        match stream {
            Stream::Stdout => {
                tracing::info!(target: "quiver::guest", plugin = %self.plugin, stream = "stdout", "{shown}")
            }
            Stream::Stderr => {
                tracing::warn!(target: "quiver::guest", plugin = %self.plugin, stream = "stderr", "{shown}");
                if !line.trim().is_empty() {
                    self.last_stderr = Some(line);
                }
            }
        }
    }

    /// Emit what is left, report dropped bytes, and hand over the crash
    /// explanation. Called once, when the call ends.
    fn finish(&mut self) -> Last {
        for stream in [Stream::Stdout, Stream::Stderr] {
            if !self.partial[stream as usize].is_empty() {
                self.emit(stream);
            }
        }
        if self.dropped > 0 {
            tracing::warn!(
                target: "quiver::guest",
                plugin = %self.plugin,
                dropped_bytes = self.dropped,
                "guest output over the log budget was dropped"
            );
            self.dropped = 0;
        }
        Last { panic: self.panic.take(), stderr: self.last_stderr.take() }
    }
}

/// The log capability's per-call state, shared with the guest's stdout and
/// stderr pipes.
#[derive(Debug, Clone)]
pub(crate) struct LogState(Arc<Mutex<GuestLog>>);

impl LogState {
    /// A log for one call of `plugin`, with `budget` bytes.
    pub(crate) fn new(plugin: Arc<str>, budget: usize) -> LogState {
        LogState(Arc::new(Mutex::new(GuestLog::new(plugin, budget))))
    }

    /// The pipe the guest's `stream` writes into.
    pub(crate) fn pipe(&self, stream: Stream) -> LogPipe {
        LogPipe { log: self.clone(), stream }
    }

    /// See [`GuestLog::finish`].
    pub(crate) fn finish(&self) -> Last {
        self.lock().finish()
    }

    /// A fresh `budget` for the next call of a kept instance (after
    /// [`finish`](Self::finish)).
    pub(crate) fn rearm(&self, budget: usize) {
        self.lock().remaining = budget;
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, GuestLog> {
        // A panic while the lock is held cannot leave the log inconsistent
        // in a way that matters: take it back.
        self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl log::Host for LogState {
    fn log(&mut self, level: log::Level, message: String, fields: Vec<(String, String)>) -> wasmtime::Result<()> {
        let mut guest = self.lock();
        if fields.iter().any(|(k, v)| k == PANIC_FIELD && v == "true") {
            let location = fields.iter().find(|(k, _)| k == "location").map(|(_, v)| v.as_str());
            guest.panic = Some(match location {
                Some(l) if !l.is_empty() => format!("panicked at {l}: {message}"),
                _ => format!("panicked: {message}"),
            });
        }
        let size = message.len() + fields.iter().map(|(k, v)| k.len() + v.len()).sum::<usize>();
        if !guest.charge(size) {
            return Ok(());
        }
        let plugin = guest.plugin.clone();
        // The message and each field on the record's one line: a guest
        // cannot forge a host log line nor drive a terminal.
        let message = sanitize(&message, Shape::Line);
        let fields = fields
            .iter()
            .map(|(k, v)| format!("{}={}", sanitize(k, Shape::Line), sanitize(v, Shape::Line)))
            .collect::<Vec<_>>()
            .join(" ");
        match level {
            log::Level::Trace => tracing::trace!(target: "quiver::guest", %plugin, %fields, "{message}"),
            log::Level::Debug => tracing::debug!(target: "quiver::guest", %plugin, %fields, "{message}"),
            log::Level::Info => tracing::info!(target: "quiver::guest", %plugin, %fields, "{message}"),
            log::Level::Warn => tracing::warn!(target: "quiver::guest", %plugin, %fields, "{message}"),
            log::Level::Error => tracing::error!(target: "quiver::guest", %plugin, %fields, "{message}"),
        }
        Ok(())
    }
}

/// One of the guest's output streams, feeding a [`LogState`].
#[derive(Clone)]
pub(crate) struct LogPipe {
    log: LogState,
    stream: Stream,
}

impl LogPipe {
    fn push(&self, bytes: &[u8]) {
        self.log.lock().write(self.stream, bytes);
    }
}

impl IsTerminal for LogPipe {
    fn is_terminal(&self) -> bool {
        false
    }
}

impl StdoutStream for LogPipe {
    fn async_stream(&self) -> Box<dyn tokio::io::AsyncWrite + Send + Sync> {
        Box::new(self.clone())
    }

    // The default adapter hands every write to a background task (~90 µs per
    // line); writing straight into the log costs ~2 µs.
    fn p2_stream(&self) -> Box<dyn OutputStream> {
        Box::new(self.clone())
    }
}

impl tokio::io::AsyncWrite for LogPipe {
    fn poll_write(self: Pin<&mut Self>, _: &mut Context<'_>, buf: &[u8]) -> Poll<std::io::Result<usize>> {
        self.push(buf);
        Poll::Ready(Ok(buf.len()))
    }

    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

#[wasmtime_wasi::async_trait]
impl Pollable for LogPipe {
    async fn ready(&mut self) {}
}

/// How much a guest may write per `write` call: it never has to wait.
const WRITE_PERMIT: usize = 64 * 1024;

#[wasmtime_wasi::async_trait]
impl OutputStream for LogPipe {
    fn write(&mut self, bytes: Bytes) -> StreamResult<()> {
        self.push(&bytes);
        Ok(())
    }

    fn flush(&mut self) -> StreamResult<()> {
        Ok(())
    }

    fn check_write(&mut self) -> StreamResult<usize> {
        Ok(WRITE_PERMIT)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_budget_is_shared_and_lines_are_split() {
        let mut guest = LogState::new(Arc::from("p"), 10);
        guest.pipe(Stream::Stderr).push(b"first\nsecond line that overflows\n");
        // The `log` import draws on the same budget, which is spent.
        log::Host::log(&mut guest, log::Level::Info, "over budget".into(), vec![]).unwrap();
        assert!(!guest.lock().charge(1));
        let last = guest.finish();
        assert_eq!(last.stderr.as_deref(), Some("seco"), "the cut-off rest of the second line");
        assert!(last.panic.is_none());
    }

    /// Log lines written while `f` runs on this thread.
    fn logged(f: impl FnOnce()) -> String {
        #[derive(Clone, Default)]
        struct Lines(Arc<Mutex<Vec<u8>>>);
        impl std::io::Write for Lines {
            fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
                self.0.lock().unwrap().extend_from_slice(bytes);
                Ok(bytes.len())
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        let lines = Lines::default();
        let writer = lines.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_writer(move || writer.clone())
            .with_ansi(false)
            .with_max_level(tracing::Level::TRACE)
            .finish();
        tracing::subscriber::with_default(subscriber, || {
            // tracing caches each callsite's interest for the whole process:
            // one first hit on a thread with no subscriber can leave it
            // disabled; ask again with this subscriber in place.
            tracing::callsite::rebuild_interest_cache();
            f()
        });
        String::from_utf8(lines.0.lock().unwrap().clone()).unwrap()
    }

    /// Finding L2: a guest's log message, its fields and its stdout and
    /// stderr lines cannot forge a host log line or drive a terminal:
    /// every control character is escaped, each record stays one line.
    #[test]
    fn guest_log_lines_cannot_forge_host_lines() {
        let forged = "ok\r\n2026-01-01T00:00:00Z  WARN quiver: forged \u{1b}[2J\u{7}\u{202e}";
        let emit = || {
            let mut guest = LogState::new(Arc::from("p"), 1 << 16);
            let fields = vec![("key\nWARN".to_owned(), forged.to_owned())];
            log::Host::log(&mut guest, log::Level::Warn, forged.into(), fields).unwrap();
            guest.pipe(Stream::Stdout).push(format!("{forged}\n").as_bytes());
            guest.pipe(Stream::Stderr).push(forged.as_bytes());
            guest.finish();
        };
        // Another test registering its subscriber at the same moment can
        // still leave a callsite disabled while this one runs (a race in
        // tracing's process-wide cache: records go missing, never appear
        // changed), so a capture short of records is taken again.
        let log = (0..5).map(|_| logged(emit)).find(|log| log.lines().count() >= 5).unwrap_or_else(|| logged(emit));
        // One record from `log`, two lines each from stdout and stderr
        // (split at the guest's `\n`): every line is the host's own record.
        assert_eq!(log.lines().count(), 5, "{log}");
        for line in log.lines() {
            let record = line.split_once("Z ").map(|(_, rest)| rest.trim_start());
            assert!(
                record.is_some_and(|r| r.starts_with("WARN quiver::guest: ") || r.starts_with("INFO quiver::guest: ")),
                "a forged line: {line}"
            );
        }
        let raw: Vec<char> = log
            .chars()
            .filter(|&c| c != '\n' && crate::contract::unsafe_char(c, crate::contract::Shape::Lines))
            .collect();
        assert!(raw.is_empty(), "raw control characters {raw:?} in {log}");
        assert!(log.contains("ok\\r\\n2026") && log.contains("key\\nWARN"), "{log}");
    }

    #[test]
    fn a_panic_record_is_kept_for_the_error() {
        let mut guest = LogState::new(Arc::from("p"), 1024);
        let fields =
            vec![(PANIC_FIELD.to_owned(), "true".to_owned()), ("location".to_owned(), "src/lib.rs:3".to_owned())];
        log::Host::log(&mut guest, log::Level::Error, "boom".into(), fields).unwrap();
        assert_eq!(guest.finish().panic.as_deref(), Some("panicked at src/lib.rs:3: boom"));
    }
}
