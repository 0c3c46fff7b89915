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

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ReasonLabel {
    reason: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct TrapLabels {
    resource: String,
    kind: String,
}

/// The labels of an HTTP request, as the HTTP semantic conventions name
/// them.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct HttpLabels {
    http_request_method: String,
    http_route: String,
    http_response_status_code: u16,
}

type Histograms<L> = Family<L, Histogram, fn() -> Histogram>;

/// What one call did through the host's capabilities besides its HTTP
/// responses (counted from their statuses): counted by the sandbox as the
/// call runs, carried with the call's facts to the metrics.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Usage {
    /// Outgoing HTTP requests the host refused (destination, header or
    /// credential rules).
    pub egress_refused: u32,
    /// SQL statements sent to the host (refused ones included).
    pub sql_statements: u32,
    /// SQL statements refused: by the host's SQL policy or by the
    /// database's own read-only guard.
    pub sql_refused: u32,
}

/// One host's metrics.
pub struct Metrics {
    registry: Registry,
    operations: Histograms<Operation>,
    http: Histograms<HttpLabels>,
    calls: Family<CallLabels, Counter>,
    egress: Family<ResourceLabel, Counter>,
    egress_refused: Family<ResourceLabel, Counter>,
    sql_statements: Family<ResourceLabel, Counter>,
    sql_refused: Family<ResourceLabel, Counter>,
    traps: Family<TrapLabels, Counter>,
    busy: Family<ResourceLabel, Counter>,
    auth_refused: Family<ReasonLabel, Counter>,
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
        let http: Histograms<HttpLabels> = Family::new_with_constructor(duration_histogram);
        registry.register_with_unit(
            "http_server_request_duration",
            "How long the REST API took to answer, by method, route and status",
            Unit::Seconds,
            http.clone(),
        );
        let calls = Family::<CallLabels, Counter>::default();
        registry.register(
            "quiver_calls",
            "Tool calls by resource and outcome (ok, tool_error, denied, invalid_input, timeout, busy, trap...)",
            calls.clone(),
        );
        let mut per_resource = |name: &str, help: &str| {
            let family = Family::<ResourceLabel, Counter>::default();
            registry.register(name, help, family.clone());
            family
        };
        let egress = per_resource(
            "quiver_egress_requests",
            "HTTP requests connectors sent (redirect hops included), by connector",
        );
        let egress_refused = per_resource(
            "quiver_egress_refusals",
            "HTTP requests the host refused to send (destination, header, credential rules), by connector",
        );
        let sql_statements =
            per_resource("quiver_sql_statements", "SQL statements plugins sent (refused ones included), by resource");
        let sql_refused = per_resource(
            "quiver_sql_refusals",
            "SQL statements refused by the SQL policy or the database's read-only guard, by resource",
        );
        let busy = per_resource(
            "quiver_busy_refusals",
            "Calls refused because every instance slot of the resource stayed busy, by resource",
        );
        let traps = Family::<TrapLabels, Counter>::default();
        registry.register(
            "quiver_guest_traps",
            "Guest calls ended by the sandbox, by resource and kind (trap, timeout, memory)",
            traps.clone(),
        );
        let auth_refused = Family::<ReasonLabel, Counter>::default();
        registry.register(
            "quiver_auth_refusals",
            "HTTP requests refused for who sent them, by reason (missing, expired, audience, signature, \
             insufficient_scope...)",
            auth_refused.clone(),
        );
        let source: Arc<OnceLock<Box<dyn Source>>> = Arc::default();
        registry.register_collector(Box::new(StateCollector(source.clone())));
        Metrics {
            registry,
            operations,
            http,
            calls,
            egress,
            egress_refused,
            sql_statements,
            sql_refused,
            traps,
            busy,
            auth_refused,
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

    /// One REST request answered with `status` after `seconds`; `route`
    /// is the route's pattern (`/v1/tools/{name}/call`), never the path.
    pub fn http_request(&self, method: &str, route: &str, status: u16, seconds: f64) {
        let labels = HttpLabels {
            http_request_method: method.to_owned(),
            http_route: route.to_owned(),
            http_response_status_code: status,
        };
        self.http.get_or_create(&labels).observe(seconds);
    }

    /// Count an HTTP request refused for who sent it, by `reason` (one of
    /// a fixed set of labels).
    pub fn auth_refused(&self, reason: &'static str) {
        self.auth_refused.get_or_create(&ReasonLabel { reason: reason.to_owned() }).inc();
    }

    /// One tool call ended with `outcome` (see `invoke::Answer::outcome`)
    /// after receiving `egress_responses` HTTP responses and doing what
    /// `usage` counts.
    pub fn call(&self, resource: &str, outcome: &str, egress_responses: usize, usage: Usage) {
        let label = ResourceLabel { resource: self.resources.label(resource) };
        let add = |family: &Family<ResourceLabel, Counter>, n: u64| {
            if n > 0 {
                family.get_or_create(&label).inc_by(n);
            }
        };
        add(&self.egress, egress_responses as u64);
        add(&self.egress_refused, usage.egress_refused.into());
        add(&self.sql_statements, usage.sql_statements.into());
        add(&self.sql_refused, usage.sql_refused.into());
        add(&self.busy, u64::from(outcome == "busy"));
        let trap = match outcome {
            "trap" => Some("trap"),
            "timeout" => Some("timeout"),
            "memory_limit" => Some("memory"),
            _ => None,
        };
        if let Some(kind) = trap {
            self.traps.get_or_create(&TrapLabels { resource: label.resource.clone(), kind: kind.into() }).inc();
        }
        self.calls.get_or_create(&CallLabels { resource: label.resource, outcome: outcome.to_owned() }).inc();
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
    /// Instances made for calls since start (one per guest call, but for
    /// calls that ran in a kept instance).
    pub instantiations: u64,
    /// Guest calls since start that ran in the instance the same caller's
    /// last call left (plugins with `instances = "per-caller"`).
    pub reused_instances: u64,
    /// Rescans of the plugin folders and configured sources since start.
    pub reloads: u64,
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
    /// The default agent's prompt footprint, when counted (`[metrics]
    /// tier1_tokens`).
    pub footprint: Option<Footprint>,
}

/// What the catalog costs the default agent's prompt (o200k tokens), as
/// far as it is known without loading anything.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Footprint {
    /// The Tier-1 text.
    pub tier1: u64,
    /// Every tool it may see, flat with its full schema, for the tools
    /// whose schema is known without compiling or spawning (packaged
    /// manifests, cached lists).
    pub full_known: u64,
    /// The tools left out of `full_known` (their schema is known only
    /// once their plugin is loaded).
    pub tools_unknown: u64,
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
    /// Connections and requests that failed since start.
    pub failures: u64,
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
        counter("quiver_instantiations", "Instances made for guest calls", r.instantiations)?;
        counter("quiver_instance_reuses", "Guest calls run in an instance kept for their caller", r.reused_instances)?;
        counter("quiver_reloads", "Rescans of the plugin folders and configured sources", r.reloads)?;
        counter("quiver_catalog_publications", "Catalog snapshots published (reloads, status changes)", r.revision)?;
        counter("quiver_audit_write_failures", "Audit records the file did not take", r.audit_write_failures)?;
        let mut gauge = |name: &str, help: &str, value: i64| {
            let gauge = ConstGauge::new(value);
            gauge.encode(encoder.encode_descriptor(name, help, None, gauge.metric_type())?)
        };
        gauge("quiver_catalog_plugins", "Plugins served", r.plugins as i64)?;
        gauge("quiver_catalog_rejected", "Files and sections not served", r.rejected as i64)?;
        if let Some(footprint) = r.footprint {
            gauge("quiver_tier1_tokens", "Tokens (o200k) of the default agent's Tier-1 text", footprint.tier1 as i64)?;
            gauge(
                "quiver_full_tokens",
                "Tokens (o200k) of the default agent's tools flat with full schemas, for those known without loading",
                footprint.full_known as i64,
            )?;
            gauge(
                "quiver_full_tokens_unknown_tools",
                "Tools not in quiver_full_tokens: their schema is known once their plugin is loaded",
                footprint.tools_unknown as i64,
            )?;
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
        let failures = |u: &UpstreamReading| u.failures as i64;
        let help = "Upstream connections and requests that failed";
        servers(&mut encoder, "quiver_upstream_failures", help, MetricType::Counter, &failures)?;
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
        let metrics = Metrics::new(&MetricsSettings { tool_labels: 2, ..MetricsSettings::default() });
        metrics.operation("tools/call", Some("calc__evaluate"), None, 0.00003);
        metrics.operation("tools/call", Some("text__stats"), None, 0.001);
        metrics.operation("tools/call", Some("text__words"), Some("tool_error"), 0.002);
        metrics.call("api", "ok", 2, Usage { egress_refused: 1, ..Usage::default() });
        metrics.call("db", "denied", 0, Usage { sql_statements: 2, sql_refused: 1, ..Usage::default() });
        metrics.call("db", "memory_limit", 0, Usage::default());
        metrics.call("db", "busy", 0, Usage::default());
        metrics.http_request("POST", "/v1/tools/{name}/call", 200, 0.0002);
        metrics.read_from(Fixed(Readings {
            compiles: 3,
            instantiations: 5,
            reused_instances: 7,
            upstreams: vec![UpstreamReading {
                name: "time".into(),
                starts: 2,
                connected: true,
                failing: false,
                failures: 4,
            }],
            footprint: Some(Footprint { tier1: 420, full_known: 9000, tools_unknown: 1 }),
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
        has(r#"quiver_egress_refusals_total{resource="api"} 1"#);
        has(r#"quiver_sql_statements_total{resource="db"} 2"#);
        has(r#"quiver_sql_refusals_total{resource="db"} 1"#);
        has(r#"quiver_guest_traps_total{resource="db",kind="memory"} 1"#);
        has(r#"quiver_busy_refusals_total{resource="db"} 1"#);
        has(
            r#"http_server_request_duration_seconds_count{http_request_method="POST",http_route="/v1/tools/{name}/call",http_response_status_code="200"} 1"#,
        );
        has("quiver_compiles_total 3");
        has("quiver_instantiations_total 5");
        has("quiver_instance_reuses_total 7");
        has("quiver_tier1_tokens 420");
        has("quiver_full_tokens 9000");
        has("quiver_full_tokens_unknown_tools 1");
        has(r#"quiver_upstream_failures_total{server="time"} 4"#);
        has(r#"quiver_upstream_starts_total{server="time"} 2"#);
        has(r#"quiver_upstream_connected{server="time"} 1"#);
        assert!(text.ends_with("# EOF\n"), "{text}");
    }
}
