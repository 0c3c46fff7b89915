//! Prometheus metrics, written as OpenMetrics text by `prometheus-client`.
//!
//! Two kinds: what is counted as it happens (the MCP operations' durations,
//! calls by resource and outcome, egress requests), recorded by the faces
//! and the call router; and what the host already knows of itself
//! (compiles, cache hits, the catalog, upstream servers, the audit log,
//! Tier 1's size), read from it on each scrape through a [`Source`]. A
//! scrape reads; it never loads, compiles or spawns anything.

use std::fmt;
use std::sync::{Arc, OnceLock};

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeLabelSet, EncodeMetric};
use prometheus_client::metrics::MetricType;
use prometheus_client::metrics::counter::{ConstCounter, Counter};
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::{Registry, Unit};
use serde::Deserialize;

use super::labels::StickyLabels;

/// The content type of [`Metrics::encode`]'s text.
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// The `[metrics]` table.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct MetricsSettings {
    /// Distinct tool (and resource) labels kept, the first seen; later
    /// ones share `_other`.
    pub tool_labels: usize,
    /// Count the Tier-1 tokens for `quiver_tier1_tokens`: off by default,
    /// because the first scrape then loads the o200k tokenizer table (tens
    /// of MiB) into a service that otherwise never needs it.
    pub tier1_tokens: bool,
}

impl Default for MetricsSettings {
    fn default() -> Self {
        MetricsSettings { tool_labels: 500, tier1_tokens: false }
    }
}

/// The labels of an MCP operation, as the semantic conventions name them
/// (dots become underscores).
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Operation {
    mcp_method_name: String,
    gen_ai_tool_name: String,
    error_type: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct CallLabels {
    resource: String,
    outcome: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ResourceLabel {
    resource: String,
}

type Histograms<L> = Family<L, Histogram, fn() -> Histogram>;

/// One host's metrics.
pub struct Metrics {
    registry: Registry,
    operations: Histograms<Operation>,
    calls: Family<CallLabels, Counter>,
    egress: Family<ResourceLabel, Counter>,
    tools: StickyLabels,
    resources: StickyLabels,
    source: Arc<OnceLock<Box<dyn Source>>>,
}

impl fmt::Debug for Metrics {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Metrics").finish_non_exhaustive()
    }
}

/// Buckets from 100 µs (a warm Wasm call takes tens of µs; the
/// conventions' default starts at 10 ms) doubling to about 13 s.
fn duration_histogram() -> Histogram {
    Histogram::new(exponential_buckets(0.0001, 2.0, 18))
}

impl Metrics {
    /// Empty metrics, keeping at most `settings.tool_labels` tool labels.
    pub fn new(settings: &MetricsSettings) -> Metrics {
        let mut registry = Registry::default();
        let operations: Histograms<Operation> = Family::new_with_constructor(duration_histogram);
        registry.register_with_unit(
            "mcp_server_operation_duration",
            "How long the server took to answer an MCP request, by method, tool and error type",
            Unit::Seconds,
            operations.clone(),
        );
        let calls = Family::<CallLabels, Counter>::default();
        registry.register(
            "quiver_calls",
            "Tool calls by resource and outcome (ok, tool_error, denied, invalid_input, timeout, busy, trap...)",
            calls.clone(),
        );
        let egress = Family::<ResourceLabel, Counter>::default();
        registry.register(
            "quiver_egress_requests",
            "HTTP requests connectors sent (redirect hops included), by connector",
            egress.clone(),
        );
        let source: Arc<OnceLock<Box<dyn Source>>> = Arc::default();
        registry.register_collector(Box::new(StateCollector(source.clone())));
        Metrics {
            registry,
            operations,
            calls,
            egress,
            tools: StickyLabels::new(settings.tool_labels),
            resources: StickyLabels::new(settings.tool_labels),
            source,
        }
    }

    /// Read the host's own state from `source` on every scrape (the first
    /// source given is kept).
    pub fn read_from(&self, source: impl Source) {
        let _ = self.source.set(Box::new(source));
    }

    /// One MCP request answered: its method, the tool it named, its error
    /// type (a JSON-RPC code, or `tool_error`), and how long it took.
    pub fn operation(&self, method: &str, tool: Option<&str>, error_type: Option<&str>, seconds: f64) {
        let labels = Operation {
            mcp_method_name: method.to_owned(),
            gen_ai_tool_name: tool.map(|t| self.tools.label(t)).unwrap_or_default(),
            error_type: error_type.unwrap_or_default().to_owned(),
        };
        self.operations.get_or_create(&labels).observe(seconds);
    }

    /// One tool call ended with `outcome` (see `invoke::Answer::outcome`)
    /// after sending `egress_requests` HTTP requests.
    pub fn call(&self, resource: &str, outcome: &str, egress_requests: usize) {
        let resource = self.resources.label(resource);
        if egress_requests > 0 {
            self.egress.get_or_create(&ResourceLabel { resource: resource.clone() }).inc_by(egress_requests as u64);
        }
        self.calls.get_or_create(&CallLabels { resource, outcome: outcome.to_owned() }).inc();
    }

    /// Everything, as OpenMetrics text ([`CONTENT_TYPE`]).
    pub fn encode(&self) -> String {
        let mut text = String::new();
        // Writing to a String cannot fail; a collector's error would be ours.
        if let Err(error) = prometheus_client::encoding::text::encode(&mut text, &self.registry) {
            tracing::error!(%error, "cannot encode the metrics");
        }
        text
    }
}

/// What the host knows of itself, read on each scrape.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Readings {
    /// Components compiled by Cranelift since start.
    pub compiles: u64,
    /// Components loaded from the compile cache since start.
    pub cache_hits: u64,
    /// Catalog snapshots published since start (reloads, status changes).
    pub revision: u64,
    /// Plugins served (configured databases and connectors among them).
    pub plugins: u64,
    /// Files and sections not served.
    pub rejected: u64,
    /// Each upstream MCP server.
    pub upstreams: Vec<UpstreamReading>,
    /// Audit records that could not be written to the file.
    pub audit_write_failures: u64,
    /// Tokens (o200k) of the default agent's Tier-1 text, when counted
    /// (`[metrics] tier1_tokens`).
    pub tier1_tokens: Option<u64>,
}

/// One upstream MCP server's readings.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct UpstreamReading {
    /// Its name.
    pub name: String,
    /// Connections opened (processes spawned) since start.
    pub starts: u64,
    /// Whether a connection is open now.
    pub connected: bool,
    /// Whether it is failing now.
    pub failing: bool,
}

/// Where the host's readings come from.
pub trait Source: Send + Sync + 'static {
    /// The readings now (cheap: no loading, no compiling, no spawning).
    fn read(&self) -> Readings;
}

/// Encodes a [`Source`]'s readings on each scrape.
struct StateCollector(Arc<OnceLock<Box<dyn Source>>>);

impl fmt::Debug for StateCollector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("StateCollector")
    }
}

impl Collector for StateCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> fmt::Result {
        let Some(source) = self.0.get() else { return Ok(()) };
        let r = source.read();
        let mut counter = |name: &str, help: &str, value: u64| {
            let counter = ConstCounter::new(value);
            counter.encode(encoder.encode_descriptor(name, help, None, counter.metric_type())?)
        };
        counter("quiver_compiles", "Components compiled by Cranelift", r.compiles)?;
        counter("quiver_compile_cache_hits", "Components loaded from the compile cache", r.cache_hits)?;
        counter("quiver_catalog_publications", "Catalog snapshots published (reloads, status changes)", r.revision)?;
        counter("quiver_audit_write_failures", "Audit records the file did not take", r.audit_write_failures)?;
        let mut gauge = |name: &str, help: &str, value: i64| {
            let gauge = ConstGauge::new(value);
            gauge.encode(encoder.encode_descriptor(name, help, None, gauge.metric_type())?)
        };
        gauge("quiver_catalog_plugins", "Plugins served", r.plugins as i64)?;
        gauge("quiver_catalog_rejected", "Files and sections not served", r.rejected as i64)?;
        if let Some(tokens) = r.tier1_tokens {
            gauge("quiver_tier1_tokens", "Tokens (o200k) of the default agent's Tier-1 text", tokens as i64)?;
        }
        let servers = |encoder: &mut DescriptorEncoder, name, help, kind, value: &dyn Fn(&UpstreamReading) -> i64| {
            let mut family = encoder.encode_descriptor(name, help, None, kind)?;
            for upstream in &r.upstreams {
                let labels = [("server", upstream.name.clone())];
                let encoder = family.encode_family(&labels)?;
                match kind {
                    MetricType::Counter => ConstCounter::new(value(upstream) as u64).encode(encoder)?,
                    _ => ConstGauge::new(value(upstream)).encode(encoder)?,
                }
            }
            Ok::<(), fmt::Error>(())
        };
        let starts = |u: &UpstreamReading| u.starts as i64;
        servers(&mut encoder, "quiver_upstream_starts", "Upstream connections opened", MetricType::Counter, &starts)?;
        let up = |u: &UpstreamReading| i64::from(u.connected);
        servers(&mut encoder, "quiver_upstream_connected", "1 while connected", MetricType::Gauge, &up)?;
        let failing = |u: &UpstreamReading| i64::from(u.failing);
        servers(&mut encoder, "quiver_upstream_failing", "1 while failing", MetricType::Gauge, &failing)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Fixed(Readings);

    impl Source for Fixed {
        fn read(&self) -> Readings {
            self.0.clone()
        }
    }

    #[test]
    fn operations_calls_and_readings_are_written_as_openmetrics() {
        let metrics = Metrics::new(&MetricsSettings { tool_labels: 1, ..MetricsSettings::default() });
        metrics.operation("tools/call", Some("calc__evaluate"), None, 0.00003);
        metrics.operation("tools/call", Some("text__stats"), Some("tool_error"), 0.002);
        metrics.call("api", "ok", 2);
        metrics.read_from(Fixed(Readings {
            compiles: 3,
            upstreams: vec![UpstreamReading { name: "time".into(), starts: 2, connected: true, failing: false }],
            tier1_tokens: Some(420),
            ..Readings::default()
        }));
        let text = metrics.encode();
        let has = |line: &str| assert!(text.lines().any(|l| l == line), "no `{line}` in\n{text}");
        has("# TYPE mcp_server_operation_duration_seconds histogram");
        has(
            r#"mcp_server_operation_duration_seconds_bucket{le="0.0001",mcp_method_name="tools/call",gen_ai_tool_name="calc__evaluate",error_type=""} 1"#,
        );
        has(
            r#"mcp_server_operation_duration_seconds_count{mcp_method_name="tools/call",gen_ai_tool_name="_other",error_type="tool_error"} 1"#,
        );
        has(r#"quiver_calls_total{resource="api",outcome="ok"} 1"#);
        has(r#"quiver_egress_requests_total{resource="api"} 2"#);
        has("quiver_compiles_total 3");
        has("quiver_tier1_tokens 420");
        has(r#"quiver_upstream_starts_total{server="time"} 2"#);
        has(r#"quiver_upstream_connected{server="time"} 1"#);
        assert!(text.ends_with("# EOF\n"), "{text}");
    }
}
