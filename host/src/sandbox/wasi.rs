//! WASI with no ambient authority, and guest output routed to `tracing`.
//!
//! `WasiCtxBuilder::new()` starts closed: no preopened directories (so no
//! filesystem), no environment, no arguments, stdin empty, TCP/UDP and name
//! lookup denied. We never call any `inherit_*` method. The guest's stdout
//! and stderr, like its `log` import, go to the host's log under a per-call
//! byte budget, and never to the host's stdout (which carries MCP on stdio).

use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use bytes::Bytes;
use wasmtime_wasi::cli::{IsTerminal, StdoutStream};
use wasmtime_wasi::p2::{OutputStream, Pollable, StreamResult};
use wasmtime_wasi::{WasiCtx, WasiCtxBuilder};

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
    pub(crate) panic: Option<String>,
    /// The last complete line written to stderr.
    pub(crate) last_stderr: Option<String>,
}

/// Longest partial line kept before it is emitted as is.
const MAX_LINE: usize = 4096;

impl GuestLog {
    pub(crate) fn new(plugin: Arc<str>, budget: usize) -> Arc<Mutex<Self>> {
        Arc::new(Mutex::new(Self {
            plugin,
            remaining: budget,
            dropped: 0,
            partial: [Vec::new(), Vec::new()],
            panic: None,
            last_stderr: None,
        }))
    }

    /// Charge `bytes` to the budget; false if they must be dropped.
    pub(crate) fn charge(&mut self, bytes: usize) -> bool {
        if bytes <= self.remaining {
            self.remaining -= bytes;
            true
        } else {
            self.remaining = 0;
            self.dropped += bytes;
            false
        }
    }

    pub(crate) fn plugin(&self) -> &str {
        &self.plugin
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
        match stream {
            Stream::Stdout => {
                tracing::info!(target: "quiver::guest", plugin = %self.plugin, stream = "stdout", "{line}")
            }
            Stream::Stderr => {
                tracing::warn!(target: "quiver::guest", plugin = %self.plugin, stream = "stderr", "{line}");
                if !line.trim().is_empty() {
                    self.last_stderr = Some(line);
                }
            }
        }
    }

    /// Emit what is left and report dropped bytes. Called when the call ends.
    pub(crate) fn finish(&mut self) {
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
    }
}

/// One of the guest's output streams, feeding a [`GuestLog`].
#[derive(Clone)]
pub(crate) struct LogPipe {
    log: Arc<Mutex<GuestLog>>,
    stream: Stream,
}

impl LogPipe {
    fn push(&self, bytes: &[u8]) {
        self.log.lock().expect("guest log lock").write(self.stream, bytes);
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

/// A WASI context with nothing granted; stdout and stderr feed `log`.
pub(crate) fn context(log: &Arc<Mutex<GuestLog>>) -> WasiCtx {
    WasiCtxBuilder::new()
        .stdout(LogPipe { log: log.clone(), stream: Stream::Stdout })
        .stderr(LogPipe { log: log.clone(), stream: Stream::Stderr })
        .build()
}
