//! OpenTelemetry traces: the exporter an operator configured, as a
//! `tracing` layer.
//!
//! Quiver's spans are ordinary `tracing` spans of target [`TARGET`]
//! (named and attributed by the MCP semantic conventions, see
//! [`super::spans`]); `tracing-opentelemetry` turns them into OTel spans,
//! and the SDK's batch processor sends them by OTLP over HTTP (protobuf or
//! JSON) on the host's own `reqwest` and rustls. Nothing is exported unless
//! an endpoint is configured; without one there is no layer, and a span
//! costs what a disabled `tracing` callsite costs.
//!
//! Configured the standard way: `OTEL_EXPORTER_OTLP_ENDPOINT` (or
//! `…_TRACES_ENDPOINT`), `OTEL_EXPORTER_OTLP_PROTOCOL`, `OTEL_SERVICE_NAME`,
//! `OTEL_TRACES_SAMPLER`/`_ARG`, `OTEL_SDK_DISABLED`, and the OTLP headers
//! and timeout variables; the `[telemetry]` table sets the same, and the
//! environment wins over it.

use std::time::Duration;

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::{Protocol, WithExportConfig as _, WithHttpConfig as _};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::trace::{Sampler, SdkTracerProvider};
use serde::Deserialize;

/// The target of every span Quiver exports.
pub const TARGET: &str = "quiver::trace";

/// The semantic-conventions release the span and attribute names follow.
pub const SEMCONV_VERSION: &str = "1.42.0";

/// The `[telemetry]` table.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TelemetrySettings {
    /// OTLP/HTTP base URL (`/v1/traces` is added), as
    /// `OTEL_EXPORTER_OTLP_ENDPOINT`. Nothing is exported when neither is set.
    pub endpoint: Option<String>,
    /// `http/protobuf` (default) or `http/json`.
    pub protocol: Option<String>,
    /// The `service.name` resource attribute (default `quiver`).
    pub service_name: Option<String>,
    /// As `OTEL_TRACES_SAMPLER`: `always_on`, `always_off`,
    /// `traceidratio`, `parentbased_always_on` (default),
    /// `parentbased_always_off`, `parentbased_traceidratio`.
    pub sampler: Option<String>,
    /// As `OTEL_TRACES_SAMPLER_ARG`: the ratio of the ratio samplers.
    pub sampler_arg: Option<f64>,
    /// As `OTEL_SDK_DISABLED`.
    pub disabled: bool,
}

/// Why telemetry could not start (the service does not start either: an
/// operator who asked for traces is told, not left guessing).
#[derive(Debug, thiserror::Error)]
#[error("telemetry: {0}")]
pub struct TelemetryError(String);

/// A running exporter: flushed and stopped by [`Exporter::shutdown`] (or
/// when dropped).
#[derive(Debug)]
pub struct Exporter {
    provider: SdkTracerProvider,
}

impl Exporter {
    /// Send what is still buffered, then stop.
    pub fn shutdown(self) {
        drop(self);
    }
}

impl Drop for Exporter {
    fn drop(&mut self) {
        if let Err(error) = self.provider.shutdown() {
            tracing::warn!(%error, "the trace exporter did not stop cleanly");
        }
    }
}

/// The `tracing` layer that exports Quiver's spans, and the exporter to
/// keep (and shut down) while it runs; `None` when nothing is configured
/// or telemetry is disabled. Call inside a Tokio runtime: the exporter
/// sends on it.
pub fn layer<S>(
    settings: &TelemetrySettings,
) -> Result<Option<(impl tracing_subscriber::Layer<S> + Send + Sync + use<S>, Exporter)>, TelemetryError>
where
    S: tracing::Subscriber + for<'a> tracing_subscriber::registry::LookupSpan<'a> + Send + Sync,
{
    let env = |name: &str| std::env::var(name).ok().filter(|v| !v.trim().is_empty());
    let disabled = env("OTEL_SDK_DISABLED").map_or(settings.disabled, |v| v.trim().eq_ignore_ascii_case("true"));
    let from_env = env("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT").is_some() || env("OTEL_EXPORTER_OTLP_ENDPOINT").is_some();
    if disabled || (!from_env && settings.endpoint.is_none()) {
        return Ok(None);
    }
    let runtime = tokio::runtime::Handle::try_current()
        .map_err(|_| TelemetryError("the exporter needs a Tokio runtime".into()))?;
    let mut builder = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_http_client(Client::new(runtime)?)
        .with_timeout(Duration::from_secs(10));
    // The environment wins: only what it leaves unset comes from the file.
    if !from_env && let Some(base) = &settings.endpoint {
        builder = builder.with_endpoint(format!("{}/v1/traces", base.trim_end_matches('/')));
    }
    let protocol = env("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
        .or_else(|| env("OTEL_EXPORTER_OTLP_PROTOCOL"))
        .or_else(|| settings.protocol.clone());
    builder = builder.with_protocol(match protocol.as_deref().map(str::trim) {
        None | Some("http/protobuf") => Protocol::HttpBinary,
        Some("http/json") => Protocol::HttpJson,
        Some(other) => {
            return Err(TelemetryError(format!(
                "protocol `{other}` is not supported (http/protobuf or http/json; not grpc)"
            )));
        }
    });
    let exporter = builder.build().map_err(|e| TelemetryError(e.to_string()))?;
    let mut resource = Resource::builder();
    if env("OTEL_SERVICE_NAME").is_none() {
        resource = resource.with_service_name(settings.service_name.clone().unwrap_or_else(|| "quiver".into()));
    }
    let mut provider = SdkTracerProvider::builder().with_batch_exporter(exporter).with_resource(resource.build());
    if env("OTEL_TRACES_SAMPLER").is_none()
        && let Some(name) = &settings.sampler
    {
        provider = provider.with_sampler(sampler(name, settings.sampler_arg)?);
    }
    let provider = provider.build();
    let tracer = provider.tracer_with_scope(
        opentelemetry::InstrumentationScope::builder("quiver")
            .with_version(env!("CARGO_PKG_VERSION"))
            .with_schema_url(format!("https://opentelemetry.io/schemas/{SEMCONV_VERSION}"))
            .build(),
    );
    let filter = tracing_subscriber::filter::Targets::new().with_target(TARGET, tracing::Level::INFO);
    let layer = tracing_subscriber::Layer::with_filter(
        tracing_opentelemetry::layer()
            .with_tracer(tracer)
            .with_tracked_inactivity(false)
            // Quiver reads a span's context itself (`OpenTelemetrySpanExt`);
            // attaching it to the thread on every poll costs a call tens of µs.
            .with_context_activation(false)
            .with_location(false)
            .with_threads(false)
            .with_target(false)
            .with_level(false),
        filter,
    );
    Ok(Some((layer, Exporter { provider })))
}

/// The sampler `name` names (the `OTEL_TRACES_SAMPLER` values this SDK has).
fn sampler(name: &str, arg: Option<f64>) -> Result<Sampler, TelemetryError> {
    let ratio = arg.unwrap_or(1.0);
    if !(0.0..=1.0).contains(&ratio) {
        return Err(TelemetryError(format!("sampler_arg {ratio} is not a ratio between 0 and 1")));
    }
    Ok(match name.trim() {
        "always_on" => Sampler::AlwaysOn,
        "always_off" => Sampler::AlwaysOff,
        "traceidratio" => Sampler::TraceIdRatioBased(ratio),
        "parentbased_always_on" => Sampler::ParentBased(Box::new(Sampler::AlwaysOn)),
        "parentbased_always_off" => Sampler::ParentBased(Box::new(Sampler::AlwaysOff)),
        "parentbased_traceidratio" => Sampler::ParentBased(Box::new(Sampler::TraceIdRatioBased(ratio))),
        other => {
            return Err(TelemetryError(format!(
                "sampler `{other}` is not one of always_on, always_off, traceidratio, parentbased_always_on, \
                 parentbased_always_off, parentbased_traceidratio"
            )));
        }
    })
}

/// The exporter's HTTP client: the host's `reqwest` (rustls with ring, no
/// proxy from the environment), each request run on the host's runtime
/// (the SDK's batch processor exports from a thread of its own).
#[derive(Debug)]
struct Client {
    client: reqwest::Client,
    runtime: tokio::runtime::Handle,
}

impl Client {
    fn new(runtime: tokio::runtime::Handle) -> Result<Client, TelemetryError> {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let client = reqwest::Client::builder()
            .no_proxy()
            .timeout(Duration::from_secs(10))
            .build()
            .map_err(|e| TelemetryError(format!("no HTTP client for the exporter: {e}")))?;
        Ok(Client { client, runtime })
    }
}

#[async_trait::async_trait]
impl opentelemetry_http::HttpClient for Client {
    async fn send_bytes(
        &self,
        request: http::Request<bytes::Bytes>,
    ) -> Result<http::Response<bytes::Bytes>, opentelemetry_http::HttpError> {
        let client = self.client.clone();
        let sent =
            self.runtime.spawn(async move { opentelemetry_http::HttpClient::send_bytes(&client, request).await });
        sent.await?
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sampler_is_named_as_the_environment_names_it() {
        assert!(matches!(sampler("traceidratio", Some(0.25)), Ok(Sampler::TraceIdRatioBased(r)) if r == 0.25));
        assert!(sampler("parentbased_always_on", None).is_ok());
        let error = sampler("jaeger_remote", None).unwrap_err().to_string();
        assert!(error.contains("jaeger_remote") && error.contains("always_on"), "{error}");
        assert!(sampler("traceidratio", Some(2.0)).is_err());
    }
}
