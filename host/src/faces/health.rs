//! `GET /healthz` and `GET /readyz`: the probes of a load balancer and of
//! Kubernetes, public (no token) like the resource metadata.
//!
//! `/healthz` answers 200 while the process serves at all. `/readyz`
//! answers 200 until the server starts draining (a signal, or its
//! `shutdown` token), then 503 with `Retry-After`: a balancer stops
//! sending it new requests while the ones in flight finish. The catalog is
//! read before the server binds, so a server that answers is ready.

use axum::Json;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use serde::Serialize;
use tokio_util::sync::CancellationToken;

/// What a probe answers.
#[derive(Debug, Clone, Copy, Serialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum Health {
    /// Serving (`/healthz`), or ready for new requests (`/readyz`).
    Ok,
    /// Finishing what is in flight before it stops: send elsewhere.
    Draining,
}

/// The body of a probe's answer: `{"status": "ok"}`.
#[derive(Debug, Serialize)]
struct Probe {
    status: Health,
}

/// Seconds a balancer is told to wait before it tries a draining server
/// again (another replica answers meanwhile).
const RETRY_AFTER_SECONDS: u32 = 1;

/// The probe routes; `/readyz` says "draining" once `draining` is cancelled.
pub fn router(draining: CancellationToken) -> axum::Router {
    axum::Router::new()
        .route("/healthz", get(|| async { Json(Probe { status: Health::Ok }) }))
        .route("/readyz", get(move || ready(draining.clone())))
}

async fn ready(draining: CancellationToken) -> Response {
    if draining.is_cancelled() {
        let retry = [(header::RETRY_AFTER, RETRY_AFTER_SECONDS.to_string())];
        return (StatusCode::SERVICE_UNAVAILABLE, retry, Json(Probe { status: Health::Draining })).into_response();
    }
    Json(Probe { status: Health::Ok }).into_response()
}
