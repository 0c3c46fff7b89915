//! `GET /metrics`: the host's [metrics](crate::telemetry::metrics) as
//! OpenMetrics text, for Prometheus. On the HTTP face it sits behind the
//! face's own checks (its bearer token); beside stdio, `serve --metrics
//! ADDR` serves it alone ([`super::http::serve_metrics`]).

use axum::http::header;
use axum::routing::get;

use crate::host::Host;
use crate::telemetry::metrics::CONTENT_TYPE;

/// The `/metrics` route of `host`. A scrape reads what the host counted and
/// what it knows of itself; it loads nothing.
pub fn router(host: &Host) -> axum::Router {
    let host = host.clone();
    axum::Router::new().route(
        "/metrics",
        get(move || {
            let text = host.metrics().encode();
            async move { ([(header::CONTENT_TYPE, CONTENT_TYPE)], text) }
        }),
    )
}
