//! One configured server's life: connect on first use, list its tools on
//! every new connection (and on `list_changed`), call, close when idle,
//! and back off when it keeps failing.
//!
//! Failures in a row push the next attempt back (none before the
//! [`FAILING_AFTER`]th, then 1 s, 2 s, ... up to a minute); from then on the
//! server is marked failing in its [`Listing`], which Tier 1 and `/v1/status` show,
//! until a connection succeeds again.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, RwLock, Weak};
use std::time::{Duration, Instant};

use rmcp::RoleClient;
use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CallToolResult, CancelledNotificationParam, ClientRequest, ContentBlock,
    MetaObject, RequestId, RequestMetaObject, ServerResult, SubscriptionFilter,
};
use rmcp::service::{Peer, PeerRequestOptions, ServiceError};
use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;

use super::connection::{Connection, annotate, upstream_error};
use super::list::{self, ListError};
use super::probe::Era;
use super::spec::ServerSpec;
use super::{answer, cache};
use crate::catalog::shown::shown_bytes;
use crate::catalog::{Listing, mcp::parse_tools};
use crate::error::{Error, Result, UpstreamFault};
use crate::invoke::progress::Sink;

/// Failures in a row after which a server is shown as failing.
pub(crate) const FAILING_AFTER: u32 = 3;
/// Longest wait between attempts.
const MAX_BACKOFF: Duration = Duration::from_secs(60);
/// Longest JSON-RPC refusal of a call quoted to the model.
const REFUSAL_BYTES: usize = 4096;

/// Called when what a snapshot shows of a server changed.
pub(crate) type OnChange = Arc<OnceLock<Box<dyn Fn() + Send + Sync>>>;

/// A configured server.
pub(crate) struct Server {
    pub(crate) spec: ServerSpec,
    pub(crate) listing: Arc<RwLock<Listing>>,
    cache: Option<PathBuf>,
    connection: tokio::sync::Mutex<Option<Live>>,
    health: Mutex<Health>,
    activity: Mutex<Activity>,
    /// The protocol era of its last handshake, once one succeeded.
    era: Mutex<Option<Era>>,
    /// Connections opened (processes spawned), for status and tests.
    pub(crate) starts: AtomicU64,
    /// Connections and requests that failed, for status and metrics.
    pub(crate) failures: AtomicU64,
    on_change: OnChange,
    myself: Weak<Server>,
}

/// A connection and what stops its watchers.
#[derive(Clone)]
struct Live {
    connection: Arc<Connection>,
    stop: CancellationToken,
}

#[derive(Default)]
struct Health {
    failures: u32,
    retry_at: Option<Instant>,
    last: Option<String>,
}

struct Activity {
    last_used: Instant,
    in_flight: usize,
}

/// A call in progress: counted while it lasts, and the time of its end kept.
struct InFlight<'a>(&'a Mutex<Activity>);

impl<'a> InFlight<'a> {
    fn start(activity: &'a Mutex<Activity>) -> InFlight<'a> {
        activity.lock().unwrap_or_else(|e| e.into_inner()).in_flight += 1;
        InFlight(activity)
    }
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        let mut activity = self.0.lock().unwrap_or_else(|e| e.into_inner());
        activity.in_flight -= 1;
        activity.last_used = Instant::now();
    }
}

impl Drop for Server {
    /// The host is going away: stop the watchers, kill the process group.
    fn drop(&mut self) {
        if let Some(live) = self.connection.get_mut().take() {
            live.stop.cancel();
            live.connection.kill_now();
        }
    }
}

impl Server {
    /// A server whose tools are read from its cache file, if any, under `cache_dir`.
    pub(crate) fn new(spec: ServerSpec, cache_dir: Option<&std::path::Path>, on_change: OnChange) -> Arc<Server> {
        let cache = cache_dir.map(|dir| cache::path(dir, &spec));
        let listing = cache.as_deref().and_then(cache::read).unwrap_or_default();
        Arc::new_cyclic(|myself| Server {
            spec,
            listing: Arc::new(RwLock::new(listing)),
            cache,
            connection: tokio::sync::Mutex::new(None),
            health: Mutex::new(Health::default()),
            activity: Mutex::new(Activity { last_used: Instant::now(), in_flight: 0 }),
            era: Mutex::new(None),
            starts: AtomicU64::new(0),
            failures: AtomicU64::new(0),
            on_change,
            myself: myself.clone(),
        })
    }

    fn fault(&self, fault: UpstreamFault, message: String) -> Error {
        upstream_error(&self.spec.name, fault, &message)
    }

    fn changed(&self) {
        if let Some(notify) = self.on_change.get() {
            notify();
        }
    }

    /// Whether its tools were ever listed.
    pub(crate) fn is_listed(&self) -> bool {
        self.listing.read().unwrap_or_else(|e| e.into_inner()).tools.is_some()
    }

    /// Whether a connection is open now, and its process id.
    pub(crate) fn connected(&self) -> (bool, Option<u32>) {
        match self.connection.try_lock() {
            Ok(slot) => match slot.as_ref().filter(|live| !live.connection.is_closed()) {
                Some(live) => (true, live.connection.pid),
                None => (false, None),
            },
            Err(_) => (false, None),
        }
    }

    /// The open connection, or a new one (its tools listed first).
    pub(crate) async fn connection(&self) -> Result<Arc<Connection>> {
        let mut slot = self.connection.lock().await;
        if let Some(live) = slot.as_ref() {
            if !live.connection.is_closed() {
                return Ok(live.connection.clone());
            }
            let gone = slot.take().expect("checked above");
            tracing::info!(server = %self.spec.name, pid = ?gone.connection.pid, "the MCP server's connection ended; restarting it");
            gone.stop.cancel();
            tokio::spawn(async move { gone.connection.close().await });
        }
        self.check_backoff()?;
        self.starts.fetch_add(1, Ordering::Relaxed);
        // Its era, once known, is asked for directly: no probe to outwait.
        let era = *self.era.lock().unwrap_or_else(|e| e.into_inner());
        let connection = match Connection::open(&self.spec, era).await {
            Ok(connection) => Arc::new(connection),
            Err(error) => {
                // It may have been replaced by a server of the other era.
                *self.era.lock().unwrap_or_else(|e| e.into_inner()) = None;
                self.failed(&error);
                return Err(error);
            }
        };
        *self.era.lock().unwrap_or_else(|e| e.into_inner()) = Era::of(&connection.peer);
        tracing::info!(server = %self.spec.name, pid = ?connection.pid, "connected to the MCP server");
        if let Err(error) = self.refresh(&connection).await {
            connection.close().await;
            self.failed(&error);
            return Err(error);
        }
        self.succeeded();
        let live = Live { connection: connection.clone(), stop: CancellationToken::new() };
        *slot = Some(live.clone());
        drop(slot);
        self.watch(live);
        Ok(connection)
    }

    /// List the tools on `connection` and keep them (cache, catalog) if they changed.
    async fn refresh(&self, connection: &Connection) -> Result<()> {
        let listed = tokio::time::timeout(self.spec.call_timeout, list::all_tools(&connection.peer)).await;
        let raw = match listed {
            Ok(Ok(tools)) => tools,
            Ok(Err(ListError::Service(error))) => return Err(self.service_error(error, connection, "tools/list")),
            Ok(Err(ListError::Limit(message))) => return Err(self.fault(UpstreamFault::Protocol, message)),
            Err(_) => {
                let error = self.fault(
                    UpstreamFault::Timeout,
                    format!("tools/list got no answer within {} s", self.spec.call_timeout.as_secs_f64()),
                );
                return Err(annotate(error, &connection.stderr, &connection.overflow));
            }
        };
        // What is left out is reported by the catalog (`rejected` in the
        // status, logged once), as a saved list's is.
        let (tools, left_out) = parse_tools(raw);
        let purpose = connection.purpose();
        let mut listing = self.listing.write().unwrap_or_else(|e| e.into_inner());
        if listing.tools.as_ref() == Some(&tools) && listing.purpose == purpose && listing.left_out == left_out {
            return Ok(());
        }
        (listing.tools, listing.purpose, listing.left_out) = (Some(tools), purpose, left_out);
        let written = listing.clone();
        drop(listing);
        if let Some(path) = &self.cache {
            cache::write(path, &self.spec.name, &written);
        }
        tracing::info!(server = %self.spec.name, tools = written.tools.as_ref().map_or(0, Vec::len), "listed the MCP server's tools");
        self.changed();
        Ok(())
    }

    /// Follow `list_changed` and close the connection when it has been idle.
    fn watch(&self, live: Live) {
        let handler = live.connection.handler.clone();
        let Some(server) = self.myself.upgrade() else { return };
        let (connection, stop) = (live.connection.clone(), live.stop.clone());
        if Era::of(&connection.peer) == Some(Era::Modern) {
            let (peer, changed, stop) = (connection.peer.clone(), handler.tools_changed.clone(), stop.clone());
            tokio::spawn(async move {
                let filter = SubscriptionFilter::builder().tools_list_changed().build();
                let Ok(mut subscription) = peer.listen(filter).await else { return };
                loop {
                    tokio::select! {
                        _ = stop.cancelled() => break,
                        next = subscription.next() => match next {
                            Ok(Some(_)) => changed.notify_one(),
                            _ => break,
                        },
                    }
                }
            });
        }
        let weak = Arc::downgrade(&server);
        let listing_stop = stop.clone();
        let watched = connection.clone();
        tokio::spawn(async move {
            loop {
                tokio::select! {
                    _ = listing_stop.cancelled() => break,
                    _ = handler.tools_changed.notified() => {
                        let Some(server) = weak.upgrade() else { break };
                        if let Err(error) = server.refresh(&watched).await {
                            tracing::warn!(server = %server.spec.name, %error, "cannot list the tools after list_changed");
                        }
                    }
                }
            }
        });
        let weak = Arc::downgrade(&server);
        tokio::spawn(async move {
            let idle = server.spec.idle_timeout;
            drop(server);
            loop {
                tokio::select! {
                    _ = stop.cancelled() => break,
                    _ = tokio::time::sleep(idle) => {}
                }
                let Some(server) = weak.upgrade() else { break };
                let quiet = {
                    let activity = server.activity.lock().unwrap_or_else(|e| e.into_inner());
                    activity.in_flight == 0 && activity.last_used.elapsed() >= idle
                };
                if quiet && server.close_if(&connection).await {
                    tracing::info!(server = %server.spec.name, "closed the idle MCP server");
                    break;
                }
                if connection.is_closed() {
                    break;
                }
            }
        });
    }

    /// Close `connection` if it is still the open one.
    async fn close_if(&self, connection: &Arc<Connection>) -> bool {
        let mut slot = self.connection.lock().await;
        if !slot.as_ref().is_some_and(|live| Arc::ptr_eq(&live.connection, connection)) {
            return false;
        }
        let live = slot.take().expect("checked above");
        drop(slot);
        live.stop.cancel();
        live.connection.close().await;
        true
    }

    /// Close the connection, if one is open.
    pub(crate) async fn close(&self) {
        let live = self.connection.lock().await.take();
        if let Some(live) = live {
            live.stop.cancel();
            live.connection.close().await;
            tracing::info!(server = %self.spec.name, pid = ?live.connection.pid, "stopped the MCP server");
        }
    }

    /// Call `tool` with `arguments`: the server's `CallToolResult`, as
    /// Quiver passes it on ([`answer`]); the server's progress goes to
    /// `progress`, when given. A repeatable tool (the server's current
    /// list says it is read-only or idempotent) whose connection is lost
    /// mid-call is called once more on a new connection: a killed or
    /// crashed server costs such calls nothing. Any other tool's lost call
    /// is the typed error, since it may have changed something before the
    /// server died. The list asked is the one the server gave last (that
    /// call's own connection may have been the first), never a catalog
    /// snapshot, which may predate it.
    pub(crate) async fn call(
        &self,
        tool: &str,
        arguments: Map<String, Value>,
        progress: Option<Sink>,
    ) -> Result<CallToolResult> {
        let again = (arguments.clone(), progress.clone());
        match self.call_once(tool, arguments, progress).await {
            Err(Error::Upstream { fault: UpstreamFault::Crashed, message, .. }) if self.repeatable(tool) => {
                let (server, message) = (&self.spec.name, crate::catalog::shown::shown(&message));
                tracing::info!(%server, tool, %message, "calling the read-only tool once more on a new connection");
                self.call_once(tool, again.0, again.1).await
            }
            answer => answer,
        }
    }

    /// Whether the server's last list says `tool` may be called again.
    fn repeatable(&self, tool: &str) -> bool {
        let listing = self.listing.read().unwrap_or_else(|e| e.into_inner());
        listing.tools.as_ref().and_then(|tools| tools.iter().find(|t| t.name == tool)).is_some_and(|t| t.repeatable())
    }

    async fn call_once(
        &self,
        tool: &str,
        arguments: Map<String, Value>,
        progress: Option<Sink>,
    ) -> Result<CallToolResult> {
        let connection = self.connection().await?;
        let _in_flight = InFlight::start(&self.activity);
        let mut params = CallToolRequestParams::new(tool.to_owned()).with_arguments(arguments);
        // The CLIENT span of this hop; the server gets its context in `_meta`.
        let span = crate::telemetry::spans::upstream(&self.spec.name, tool);
        let mut meta = serde_json::Map::new();
        crate::telemetry::context::into_meta(&crate::telemetry::context::of(&span), &mut meta);
        if !meta.is_empty() {
            params.meta = Some(RequestMetaObject(MetaObject(meta)));
        }
        let timeout = self.spec.call_timeout;
        let request = tracing::Instrument::instrument(Self::request(&connection, params, progress), span.clone());
        let answer = tokio::time::timeout(timeout, request).await;
        crate::telemetry::spans::upstream_ended(&span, &answer);
        let answer = match answer {
            Err(_) => {
                let message =
                    format!("`{tool}` got no answer within {} s; the call was cancelled", timeout.as_secs_f64());
                return Err(annotate(
                    self.fault(UpstreamFault::Timeout, message),
                    &connection.stderr,
                    &connection.overflow,
                ));
            }
            Ok(answer) => answer,
        };
        let result = match answer {
            Ok(ServerResult::CallToolResult(result)) => result,
            Ok(_) => {
                let message = format!("`{tool}` asked for more input or started a task, which Quiver does not relay");
                return Err(self.fault(UpstreamFault::Protocol, message));
            }
            Err(ServiceError::McpError(error)) => {
                let text = format!("MCP server `{}` refused the call of `{tool}`: {}", self.spec.name, error.message);
                CallToolResult::error(vec![ContentBlock::text(shown_bytes(&text, REFUSAL_BYTES))])
            }
            Err(error) => {
                if matches!(error, ServiceError::TransportClosed | ServiceError::TransportSend(_)) {
                    connection.stderr.settle().await;
                }
                let error = self.service_error(error, &connection, tool);
                // One lost connection is one failure, however many calls were on it.
                if matches!(&error, Error::Upstream { fault: UpstreamFault::Crashed, .. })
                    && self.close_if(&connection).await
                {
                    self.failed(&error);
                }
                return Err(error);
            }
        };
        let mut answer = answer::passed_on(result);
        answer::fit_result(&mut answer, self.spec.answer_budget);
        Ok(answer)
    }

    /// Send one `tools/call` on `connection` and wait for its answer. The
    /// server's progress goes to `progress`, if given; if this future is
    /// dropped (the downstream call was cancelled, or timed out), the
    /// server is told to cancel.
    async fn request(
        connection: &Connection,
        params: CallToolRequestParams,
        progress: Option<Sink>,
    ) -> std::result::Result<ServerResult, ServiceError> {
        let request = ClientRequest::CallToolRequest(CallToolRequest::new(params));
        let handle = connection.peer.send_request_with_option(request, PeerRequestOptions::no_options()).await?;
        let sinks = &connection.handler.progress;
        if let Some(sink) = progress {
            sinks.lock().unwrap_or_else(|e| e.into_inner()).insert(handle.progress_token.clone(), sink);
        }
        let mut pending = Pending { peer: handle.peer.clone(), id: Some(handle.id.clone()) };
        let token = handle.progress_token.clone();
        let answer = handle.await_response().await;
        pending.id = None;
        sinks.lock().unwrap_or_else(|e| e.into_inner()).remove(&token);
        answer
    }

    /// A typed error for a failed request `what`.
    fn service_error(&self, error: ServiceError, connection: &Connection, what: &str) -> Error {
        let (fault, message) = match error {
            ServiceError::TransportClosed | ServiceError::TransportSend(_) => (
                UpstreamFault::Crashed,
                format!(
                    "the connection closed during `{what}` (the server exited or crashed; it restarts on the next call)"
                ),
            ),
            ServiceError::Timeout { timeout } => {
                (UpstreamFault::Timeout, format!("`{what}` got no answer within {} s", timeout.as_secs_f64()))
            }
            ServiceError::McpError(error) => (UpstreamFault::Protocol, format!("`{what}` failed: {}", error.message)),
            other => (UpstreamFault::Protocol, format!("`{what}`: {other}")),
        };
        annotate(self.fault(fault, message), &connection.stderr, &connection.overflow)
    }

    fn check_backoff(&self) -> Result<()> {
        let health = self.health.lock().unwrap_or_else(|e| e.into_inner());
        match health.retry_at {
            Some(at) if at > Instant::now() => Err(self.fault(
                UpstreamFault::Failing,
                format!(
                    "{} failed attempts in a row (last: {}); the next attempt is in {} s",
                    health.failures,
                    health.last.as_deref().unwrap_or("unknown"),
                    (at - Instant::now()).as_secs() + 1
                ),
            )),
            _ => Ok(()),
        }
    }

    fn failed(&self, error: &Error) {
        self.failures.fetch_add(1, Ordering::Relaxed);
        let mut health = self.health.lock().unwrap_or_else(|e| e.into_inner());
        health.failures += 1;
        let wait = match health.failures {
            n if n < FAILING_AFTER => Duration::ZERO,
            n => Duration::from_secs(1 << (n - FAILING_AFTER).min(6)).min(MAX_BACKOFF),
        };
        health.retry_at = Some(Instant::now() + wait);
        let reason = match error {
            Error::Upstream { fault, message, .. } => format!("{fault}: {message}"),
            other => other.to_string(),
        };
        health.last = Some(crate::catalog::shown::shown(&reason));
        tracing::warn!(server = %self.spec.name, failures = health.failures, "{reason}");
        if health.failures >= FAILING_AFTER {
            let shown =
                format!("{} failures in a row; last: {}", health.failures, health.last.as_deref().unwrap_or(""));
            drop(health);
            self.listing.write().unwrap_or_else(|e| e.into_inner()).failure = Some(shown);
            self.changed();
        }
    }

    fn succeeded(&self) {
        let mut health = self.health.lock().unwrap_or_else(|e| e.into_inner());
        *health = Health::default();
        drop(health);
        let was_failing = self.listing.write().unwrap_or_else(|e| e.into_inner()).failure.take().is_some();
        if was_failing {
            self.changed();
        }
    }
}

/// A request the server is still working on: dropped before its answer,
/// it tells the server to cancel.
struct Pending {
    peer: Peer<RoleClient>,
    id: Option<RequestId>,
}

impl Drop for Pending {
    fn drop(&mut self) {
        let Some(id) = self.id.take() else { return };
        let peer = self.peer.clone();
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                let reason = Some("the caller cancelled the call, or it timed out".to_owned());
                let _ = peer.notify_cancelled(CancelledNotificationParam::new(Some(id), reason)).await;
            });
        }
    }
}
