//! One live connection to an upstream server, over rmcp's client: a spawned
//! stdio process, or a streamable HTTP endpoint. Both protocol eras are
//! negotiated by rmcp (`server/discover` first, `initialize` for servers of
//! 2025-11-25 and earlier).
//!
//! A stdio server runs in its own process group; the group and every
//! descendant are killed when the connection is closed or dropped (see
//! [`process`](super::process)), so neither the server nor anything it
//! started (`npx` runs `node`) outlives it. Its stderr is followed by a
//! [`Tail`] (the log, and the last lines for the message of a failure).
//! Its stdout is read by rmcp, which drops lines over
//! 16 MiB; [`Watched`] notes that it happened, so the failure says why.

use std::collections::{BTreeMap, HashMap};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use rmcp::model::{
    ClientCapabilities, ClientConfig, Implementation, ProgressNotificationParam, ProgressToken, ProtocolVersion,
};
use rmcp::service::{ClientServiceExt, NotificationContext, Peer, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{ClientHandler, RoleClient};
use tokio::io::{AsyncRead, ReadBuf};

use super::probe::{Era, Late, Probed};
use super::process::{Child, spawn};
use super::spec::{Launch, ServerSpec};
use super::stderr::Tail;
use crate::catalog::shown::shown_bytes;
use crate::error::{Error, Result, UpstreamFault};
use crate::invoke::progress::{Progress, Sink};

/// Longest wait for a server to start and finish the handshake (or the
/// server's call timeout, if shorter).
pub(crate) const CONNECT_TIMEOUT: Duration = Duration::from_secs(30);
/// Longest line rmcp reads from a stdio server (its own limit).
const MAX_LINE: usize = rmcp::transport::async_rw::DEFAULT_MAX_LINE_LENGTH;
/// Longest message of an upstream error.
const MESSAGE_BYTES: usize = 4096;

/// A live connection.
pub(crate) struct Connection {
    /// Where requests go.
    pub(crate) peer: Peer<RoleClient>,
    service: Mutex<Option<RunningService<RoleClient, Handler>>>,
    child: Mutex<Option<Child>>,
    /// The last lines the server wrote to stderr.
    pub(crate) stderr: Arc<Tail>,
    /// Set when the server wrote a line over [`MAX_LINE`].
    pub(crate) overflow: Arc<AtomicBool>,
    /// Its process id (stdio).
    pub(crate) pid: Option<u32>,
    /// What it hears from the server.
    pub(crate) handler: Handler,
}

/// What a connection tells its server about, and what it hears back.
#[derive(Clone, Default)]
pub(crate) struct Handler {
    /// Notified on `notifications/tools/list_changed`.
    pub(crate) tools_changed: Arc<tokio::sync::Notify>,
    /// Where the progress of each call in flight goes, by its progress token.
    pub(crate) progress: Arc<Mutex<HashMap<ProgressToken, Sink>>>,
}

impl ClientHandler for Handler {
    fn get_info(&self) -> ClientConfig {
        // The version is the one `initialize` asks for (a legacy server's
        // handshake); `server/discover` asks in its own.
        ClientConfig::new(ClientCapabilities::default(), Implementation::new("quiver", env!("CARGO_PKG_VERSION")))
            .with_protocol_version(ProtocolVersion::LATEST_WITH_INITIALIZE)
    }

    async fn on_tool_list_changed(&self, _: NotificationContext<RoleClient>) {
        self.tools_changed.notify_one();
    }

    async fn on_progress(&self, params: ProgressNotificationParam, _: NotificationContext<RoleClient>) {
        let sink = self.progress.lock().unwrap_or_else(|e| e.into_inner()).get(&params.progress_token).cloned();
        if let Some(sink) = sink {
            sink(Progress { progress: params.progress, total: params.total, message: params.message });
        }
    }
}

impl Connection {
    /// Spawn or reach `spec`'s server and complete the handshake, in era
    /// `era` if it is known, else in either (see [`probe`](super::probe)).
    pub(crate) async fn open(spec: &ServerSpec, era: Option<Era>) -> Result<Connection> {
        let late = Late::default();
        match Connection::open_once(spec, era, &late).await {
            // The server answered the era probe after rmcp fell back to
            // `initialize`, which a 2026 server refuses: open again in its era.
            Err(error) if era.is_none() && late.era() == Some(Era::Modern) => {
                tracing::info!(server = %spec.name, %error, "the MCP server answered the 2026 probe late; connecting again in that era");
                Connection::open_once(spec, Some(Era::Modern), &Late::default()).await
            }
            opened => opened,
        }
    }

    async fn open_once(spec: &ServerSpec, era: Option<Era>, late: &Late) -> Result<Connection> {
        let handler = Handler::default();
        let fault = |fault: UpstreamFault, message: String| upstream_error(&spec.name, fault, &message);
        let stderr = Arc::new(Tail::new(&spec.name, &spec.secrets));
        let overflow = Arc::new(AtomicBool::new(false));
        let (service, child, pid) = match &spec.launch {
            Launch::Stdio { command, args, env, cwd } => {
                let mut child = spawn(command, args, env, cwd.as_deref())
                    .map_err(|e| fault(UpstreamFault::Start, format!("cannot run `{command}`: {e}")))?;
                let pid = child.process.id();
                let (Some(stdin), Some(stdout), Some(err)) =
                    (child.process.stdin.take(), child.process.stdout.take(), child.process.stderr.take())
                else {
                    return Err(fault(UpstreamFault::Start, "its standard streams could not be opened".into()));
                };
                tokio::spawn(stderr.clone().follow(err));
                let stdout = Watched { inner: stdout, line: 0, overflow: overflow.clone() };
                (handshake(spec, handler.clone(), (stdout, stdin), era, late).await, Some(child), pid)
            }
            Launch::Http { url, headers } => {
                let _ = rustls::crypto::ring::default_provider().install_default();
                let headers = header_map(headers).map_err(|e| fault(UpstreamFault::Start, e))?;
                let config = StreamableHttpClientTransportConfig::with_uri(url.as_str()).custom_headers(headers);
                let transport = StreamableHttpClientTransport::from_config(config);
                (handshake(spec, handler.clone(), transport, era, late).await, None, None)
            }
        };
        let service = match service {
            Ok(service) => service,
            Err(error) => {
                if child.is_some() {
                    stderr.settle().await;
                }
                if let Some(child) = child {
                    child.kill();
                }
                return Err(annotate(error, &stderr, &overflow));
            }
        };
        Ok(Connection {
            peer: service.peer().clone(),
            service: Mutex::new(Some(service)),
            child: Mutex::new(child),
            stderr,
            overflow,
            pid,
            handler,
        })
    }

    /// The server's one line of purpose: its `serverInfo` description, else
    /// the first sentence of its `instructions`.
    pub(crate) fn purpose(&self) -> Option<String> {
        let info = self.peer.peer_info()?;
        let described = info.server_info.as_ref().and_then(|i| i.description.clone()).filter(|d| !d.trim().is_empty());
        let text = described.or_else(|| {
            // The first line with words (a Markdown heading's text), up to
            // the end of its first sentence.
            let line = info
                .instructions
                .as_deref()?
                .lines()
                .map(|l| l.trim_start_matches('#').trim())
                .find(|l| !l.is_empty())?;
            let end = line.find(". ").map_or(line.len(), |i| i + 1);
            Some(line[..end].to_owned())
        })?;
        Some(crate::contract::one_line(&text, 200))
    }

    /// Whether the connection is gone (the process exited, the stream closed).
    pub(crate) fn is_closed(&self) -> bool {
        self.peer.is_transport_closed()
    }

    /// Kill a stdio server's process group now (the host is going away).
    pub(crate) fn kill_now(&self) {
        drop(self.child.lock().unwrap_or_else(|e| e.into_inner()).take());
    }

    /// Close the connection: end the session, give a stdio server a moment
    /// to exit, then kill its process group.
    pub(crate) async fn close(&self) {
        // Its exit orphans what it started: noted now, killed after.
        if let Some(child) = self.child.lock().unwrap_or_else(|e| e.into_inner()).as_mut() {
            child.note_descendants();
        }
        let service = self.service.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(mut service) = service {
            let _ = service.close_with_timeout(Duration::from_secs(2)).await;
        }
        let child = self.child.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(mut child) = child {
            let _ = tokio::time::timeout(Duration::from_secs(2), child.process.wait()).await;
            child.kill();
        }
    }
}

/// The handshake over `transport` in era `era`, or in either, within
/// [`CONNECT_TIMEOUT`]; a late answer to the era probe is dropped and
/// noted in `late` ([`Probed`]).
async fn handshake<T, E, A>(
    spec: &ServerSpec,
    handler: Handler,
    transport: T,
    era: Option<Era>,
    late: &Late,
) -> Result<RunningService<RoleClient, Handler>>
where
    T: rmcp::transport::IntoTransport<RoleClient, E, A>,
    E: std::error::Error + Send + Sync + 'static,
{
    let lifecycle = Era::lifecycle(era);
    let fault = |message: String| {
        upstream_error(&spec.name, UpstreamFault::Handshake, &format!("{message} ({})", spec.endpoint()))
    };
    let limit = spec.call_timeout.min(CONNECT_TIMEOUT);
    let transport = Probed::new(transport.into_transport(), late.clone());
    match tokio::time::timeout(limit, handler.serve_with_lifecycle(transport, lifecycle)).await {
        Ok(Ok(service)) => Ok(service),
        Ok(Err(error)) => Err(fault(error.to_string())),
        Err(_) => Err(fault(format!("no answer to the handshake within {} s", limit.as_secs_f64()))),
    }
}

/// The error of server `server`: `message` (which quotes what the server
/// said: its errors, its stderr) passes the one sanitiser, on one line and
/// cut to [`MESSAGE_BYTES`], before a model, a log or a terminal sees it.
pub(crate) fn upstream_error(server: &str, fault: UpstreamFault, message: &str) -> Error {
    Error::Upstream { server: server.to_owned(), fault, message: shown_bytes(message, MESSAGE_BYTES) }
}

/// `error` with what the server's stderr and stdout say about it.
pub(crate) fn annotate(error: Error, stderr: &Tail, overflow: &AtomicBool) -> Error {
    let Error::Upstream { server, mut fault, mut message } = error else { return error };
    if overflow.load(Ordering::Relaxed) {
        fault = UpstreamFault::Protocol;
        message = format!("it sent a message over {} MiB, which was dropped; {message}", MAX_LINE >> 20);
    }
    if let Some(last) = stderr.last() {
        message = format!("{message}; its last stderr line: {last}");
    }
    stderr.log_tail();
    upstream_error(&server, fault, &message)
}

/// HTTP headers from configured names and values.
fn header_map(
    headers: &BTreeMap<String, String>,
) -> std::result::Result<HashMap<http::HeaderName, http::HeaderValue>, String> {
    headers
        .iter()
        .map(|(name, value)| {
            let name: http::HeaderName = name.parse().map_err(|_| format!("`{name}` is not a header name"))?;
            let mut value =
                http::HeaderValue::from_str(value).map_err(|_| format!("the value of header `{name}` is not valid"))?;
            value.set_sensitive(true);
            Ok((name, value))
        })
        .collect()
}

/// A stdio server's stdout, watched for lines rmcp will drop.
struct Watched<R> {
    inner: R,
    /// Bytes of the current line so far.
    line: usize,
    overflow: Arc<AtomicBool>,
}

impl<R: AsyncRead + Unpin> AsyncRead for Watched<R> {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let poll = Pin::new(&mut self.inner).poll_read(cx, buf);
        if let Poll::Ready(Ok(())) = poll {
            let read = &buf.filled()[before..];
            let line = match read.iter().rposition(|b| *b == b'\n') {
                Some(end) => read.len() - end - 1,
                None => self.line + read.len(),
            };
            if read.split(|b| *b == b'\n').any(|part| part.len() > MAX_LINE) || line > MAX_LINE {
                self.overflow.store(true, Ordering::Relaxed);
            }
            self.line = line;
        }
        poll
    }
}
