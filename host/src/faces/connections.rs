//! The HTTP server's connections: at most `max_connections` served at once
//! (more wait in the listen backlog), and each one watched, so that no
//! client can hold a slot without a request in flight.
//!
//! A watchdog per connection knows how many requests are in flight (from
//! the moment a request head is complete until its response body has ended
//! or was dropped) and since when none has been. It closes the connection
//! (graceful shutdown, then drop) once it has gone `header_timeout` from
//! accept without a complete request head, whatever the client sent (hyper
//! reads up to 24 bytes to choose HTTP/1 or HTTP/2 before its own header
//! timer can start: a client that sends nothing, `P` or part of the
//! HTTP/2 preface stays there), or `idle_timeout` with nothing in flight
//! after its last response (a kept-alive connection waiting for, or
//! slowly sending, its next request). A response in flight (a slow call, a
//! server-sent event stream on `GET /mcp`) is never cut, but by a drain.
//!
//! A drain (the `shutdown` token) closes the listener at once, so a new
//! connection is refused rather than left in the backlog of a server that
//! will not answer it (a balancer then tries another replica), and gives
//! the connections open `drain` to finish their requests; then the rest
//! are cut. Every response from then on says `Connection: close`, and a
//! kept-alive connection is closed after the first such response or once
//! idle for a second since the drain began (and since a response that did
//! not say so), never at its start, when its client may be sending a
//! request on it. A connection made before the drain is never cut before its
//! first request is answered: the ones still in the listen backlog are
//! accepted before the listener closes (closing it would reset them, after
//! their clients may have sent a request), and a connection with no
//! request yet waits for it (within `header_timeout` from accept).

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::Body;
use axum::http::{Request, Response};
use hyper::body::Incoming;
use tokio::sync::Notify;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// How long a kept-alive connection must have been idle before a drain
/// closes it (one busier than that is closed after its next response).
const DRAIN_QUIET: Duration = Duration::from_secs(1);

/// How long connections may take, and how many are served at once.
#[derive(Debug, Clone, Copy)]
pub(super) struct Limits {
    /// From accept to a complete first request head.
    pub(super) header_timeout: Duration,
    /// With nothing in flight, after a response.
    pub(super) idle_timeout: Duration,
    /// Connections served at once.
    pub(super) max_connections: usize,
    /// Once draining, how long requests in flight have to finish.
    pub(super) drain: Duration,
}

/// Serve each connection of `listener` with `router` until `shutdown`;
/// then close the listener and let the connections finish their requests
/// within `limits.drain`.
pub(super) async fn accept(
    listener: tokio::net::TcpListener,
    router: axum::Router,
    limits: Limits,
    shutdown: CancellationToken,
) {
    use hyper_util::rt::{TokioExecutor, TokioIo};
    use hyper_util::server::conn::auto::Builder;

    let slots = Arc::new(tokio::sync::Semaphore::new(limits.max_connections.max(1)));
    let mut connections = tokio::task::JoinSet::new();
    let builder = Builder::new(TokioExecutor::new());
    let serve = |connections: &mut tokio::task::JoinSet<()>, stream: tokio::net::TcpStream, slot| {
        // Answers are small and go out at once: without TCP_NODELAY, an
        // answer written in two pieces waits for the client's delayed ACK.
        if let Err(error) = stream.set_nodelay(true) {
            tracing::debug!(%error, "cannot set TCP_NODELAY");
        }
        let activity = Arc::new(Activity::new(Instant::now() + limits.header_timeout, limits.idle_timeout));
        let draining = shutdown.clone();
        let service = Tracked { router: router.clone(), activity: activity.clone(), draining };
        let (builder, shutdown) = (builder.clone(), shutdown.clone());
        connections.spawn(async move {
            let _slot: Option<tokio::sync::OwnedSemaphorePermit> = slot;
            let connection = builder.serve_connection_with_upgrades(TokioIo::new(stream), service);
            let mut connection = std::pin::pin!(connection);
            tokio::select! {
                _ = connection.as_mut() => return,
                () = shutdown.cancelled() => {
                    // Made before the drain: its first request is answered.
                    tokio::select! {
                        _ = connection.as_mut() => return,
                        () = activity.first_request() => {}
                    }
                    // Kept alive: closed at a safe moment (see [`Activity::settled`]).
                    tokio::select! {
                        biased;
                        _ = connection.as_mut() => return,
                        () = activity.settled(DRAIN_QUIET, Instant::now()) => {}
                    }
                }
                () = activity.expired() => tracing::debug!("idle connection closed"),
            }
            // Requests in flight finish; a connection with none left gets
            // one more `header_timeout` to close itself, then is dropped.
            connection.as_mut().graceful_shutdown();
            activity.restart(Instant::now() + limits.header_timeout);
            tokio::select! {
                _ = connection.as_mut() => {}
                () = activity.expired() => {}
            }
        });
    };
    loop {
        while connections.try_join_next().is_some() {}
        let slot = tokio::select! {
            slot = slots.clone().acquire_owned() => slot.expect("the semaphore is never closed"),
            () = shutdown.cancelled() => break,
        };
        let stream = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(error) => {
                    // Out of file descriptors, say: wait a moment, not spin.
                    tracing::warn!(%error, "cannot accept a connection");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            () = shutdown.cancelled() => break,
        };
        serve(&mut connections, stream, Some(slot));
    }
    for stream in backlog(listener) {
        serve(&mut connections, stream, None);
    }
    let finished = async { while connections.join_next().await.is_some() {} };
    if tokio::time::timeout(limits.drain, finished).await.is_err() {
        tracing::warn!(
            connections = connections.len(),
            drain_seconds = limits.drain.as_secs_f64(),
            "requests still in flight when the drain period ended: their connections are cut"
        );
        connections.shutdown().await;
    }
}

/// The connections the kernel has completed for `listener` but nobody has
/// accepted yet, accepted now; then the listener is closed, and later
/// connections are refused.
fn backlog(listener: tokio::net::TcpListener) -> Vec<tokio::net::TcpStream> {
    let Ok(listener) = listener.into_std() else { return Vec::new() };
    let _ = listener.set_nonblocking(true);
    let mut streams = Vec::new();
    while let Ok((stream, _)) = listener.accept() {
        if stream.set_nonblocking(true).is_ok()
            && let Ok(stream) = tokio::net::TcpStream::from_std(stream)
        {
            streams.push(stream);
        }
    }
    streams
}

/// What one connection is doing, as its watchdog sees it.
struct Activity {
    state: Mutex<State>,
    /// Told when the last request in flight ends.
    changed: Notify,
    /// How long the connection may stay idle after a response.
    idle_timeout: Duration,
}

#[derive(Debug, Clone, Copy)]
struct State {
    /// Requests whose response body has not ended.
    in_flight: usize,
    /// Requests started on it so far.
    started: u64,
    /// When the connection is closed if nothing is in flight by then.
    deadline: Instant,
    /// Since when nothing has been in flight (accept, or the last response).
    idle_since: Instant,
    /// Whether a response said `Connection: close` (once draining).
    said_close: bool,
}

impl Activity {
    /// A connection that must have a request in flight by `deadline`.
    fn new(deadline: Instant, idle_timeout: Duration) -> Activity {
        let state = State { in_flight: 0, started: 0, deadline, idle_since: Instant::now(), said_close: false };
        Activity { state: Mutex::new(state), changed: Notify::new(), idle_timeout }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A request head is complete: it is in flight until the guard drops.
    fn start(self: &Arc<Self>) -> InFlight {
        let mut state = self.state();
        state.in_flight += 1;
        state.started += 1;
        drop(state);
        self.changed.notify_one();
        InFlight(self.clone())
    }

    /// A response says `Connection: close`: the connection ends after it.
    fn say_close(&self) {
        self.state().said_close = true;
        self.changed.notify_one();
    }

    /// Wait until a first request has started on it, or its deadline
    /// (`header_timeout` from accept) passed with none.
    async fn first_request(&self) {
        loop {
            let notified = self.changed.notified();
            let State { started, deadline, .. } = *self.state();
            if started > 0 || Instant::now() >= deadline {
                return;
            }
            tokio::select! {
                () = tokio::time::sleep_until(deadline) => return,
                () = notified => {}
            }
        }
    }

    /// Wait until the connection may be closed without losing a request:
    /// a response in flight said `Connection: close` (the connection
    /// closes after it, and its client knows), or nothing has been in
    /// flight for `quiet`, counted from the drain's start (`drained`) at
    /// the earliest. A response whose head went out before the drain
    /// did not say so: its client may send another request the moment
    /// it ends, so the quiet time starts then.
    /// Closing a kept-alive connection the moment the drain starts loses
    /// the request a client (a load balancer reusing its pooled
    /// connection) may be sending on it just then: the soak found such
    /// requests answered 502 by nginx, on connections busy at the drain's
    /// start and on ones idle long before it (nginx picks a pooled
    /// connection as readily). Within `quiet` of the drain's start, the
    /// balancer's next new connection is refused and it stops choosing
    /// this server; a connection idle since is one nobody is using.
    async fn settled(&self, quiet: Duration, drained: Instant) {
        loop {
            let notified = self.changed.notified();
            let State { in_flight, idle_since, said_close, .. } = *self.state();
            let quiet_until = idle_since.max(drained) + quiet;
            if said_close || (in_flight == 0 && Instant::now() >= quiet_until) {
                return;
            }
            if in_flight > 0 {
                notified.await;
                continue;
            }
            tokio::select! {
                () = tokio::time::sleep_until(quiet_until) => {}
                () = notified => {}
            }
        }
    }

    /// Nothing in flight must last past `deadline` from now on.
    fn restart(&self, deadline: Instant) {
        self.state().deadline = deadline;
    }

    /// Wait until the connection has had nothing in flight past its
    /// deadline.
    async fn expired(&self) {
        loop {
            // Asked for before the state is read, so that an end in
            // between is not missed (`notify_one` keeps a permit).
            let notified = self.changed.notified();
            let State { in_flight, deadline, .. } = *self.state();
            if in_flight > 0 {
                notified.await;
            } else if Instant::now() >= deadline {
                return;
            } else {
                tokio::select! {
                    () = tokio::time::sleep_until(deadline) => {}
                    () = notified => {}
                }
            }
        }
    }
}

/// One request in flight on a connection; its drop (the response body
/// ended, or was dropped with the connection) counts it out.
struct InFlight(Arc<Activity>);

impl Drop for InFlight {
    fn drop(&mut self) {
        let mut state = self.0.state();
        state.in_flight -= 1;
        if state.in_flight == 0 {
            state.idle_since = Instant::now();
            state.deadline = state.idle_since + self.0.idle_timeout;
            drop(state);
            self.0.changed.notify_one();
        }
    }
}

/// The router as one connection's service: each request counts as in
/// flight from its call until its response body is done.
#[derive(Clone)]
struct Tracked {
    router: axum::Router,
    activity: Arc<Activity>,
    /// Once cancelled, every response says `Connection: close`: the client
    /// does not send another request on a connection about to close.
    draining: CancellationToken,
}

impl hyper::service::Service<Request<Incoming>> for Tracked {
    type Response = Response<TrackedBody>;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, Infallible>> + Send>>;

    fn call(&self, request: Request<Incoming>) -> Self::Future {
        let in_flight = self.activity.start();
        let router = hyper_util::service::TowerToHyperService::new(self.router.clone());
        let call = hyper::service::Service::call(&router, request);
        let (draining, activity) = (self.draining.clone(), self.activity.clone());
        Box::pin(async move {
            let mut response = call.await?;
            if draining.is_cancelled() {
                let close = axum::http::HeaderValue::from_static("close");
                response.headers_mut().insert(axum::http::header::CONNECTION, close);
                activity.say_close();
            }
            Ok(response.map(|body| TrackedBody { body, _in_flight: in_flight }))
        })
    }
}

/// A response body that keeps its request in flight until it is dropped.
struct TrackedBody {
    body: Body,
    _in_flight: InFlight,
}

impl http_body::Body for TrackedBody {
    type Data = bytes::Bytes;
    type Error = axum::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Self::Data>, Self::Error>>> {
        Pin::new(&mut self.get_mut().body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.body.size_hint()
    }
}
