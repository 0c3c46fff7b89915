//! Health per tool over the calls the audit log keeps (its last
//! [`KEPT`](crate::audit::KEPT)): latency percentiles, error rate, the last
//! error; with the reload timeline and the upstream servers' states. Each
//! replica shows its own figures.

use std::collections::BTreeMap;
use std::sync::Arc;

use axum::extract::State;
use axum::response::{IntoResponse, Response};
use serde::Serialize;

use super::Dashboard;
use crate::audit::AuditRecord;
use crate::reload::Reload;
use crate::upstream::UpstreamStatus;

/// `GET /ui/api/health`.
#[derive(Serialize)]
struct Health {
    /// The process these figures are of.
    replica: String,
    /// The calls they are taken over.
    window: Window,
    /// One row per tool called in the window, by name.
    tools: Vec<ToolHealth>,
    /// What each of the latest reloads changed, newest first.
    reloads: Vec<Reload>,
    /// The upstream MCP servers.
    upstreams: Vec<UpstreamStatus>,
}

/// The window the figures cover.
#[derive(Serialize)]
struct Window {
    /// Calls in it.
    calls: usize,
    /// When its oldest call started.
    since: Option<String>,
}

/// One tool's figures.
#[derive(Serialize, Default)]
struct ToolHealth {
    tool: String,
    resource: String,
    calls: usize,
    errors: usize,
    error_rate: f64,
    p50_ms: f64,
    p95_ms: f64,
    p99_ms: f64,
    last_error: Option<LastError>,
}

/// A tool's latest failure.
#[derive(Serialize, Clone)]
struct LastError {
    time: String,
    outcome: String,
}

pub(super) async fn health(
    State(ui): State<Arc<Dashboard>>,
    who: Option<axum::Extension<crate::faces::guard::Principal>>,
) -> Response {
    let seen = |records: &mut dyn Iterator<Item = &AuditRecord>| {
        per_tool(&mut records.filter(|r| super::live::visible(who.as_deref(), r)))
    };
    let (window, tools) =
        ui.host.audit_log().map_or_else(|| (Window { calls: 0, since: None }, Vec::new()), |log| log.read(seen));
    // The reload timeline and the upstream servers are the operator's: an
    // OAuth principal without `quiver:*:admin` is shown its own calls only.
    let operator = who.as_deref().and_then(crate::faces::guard::Principal::oauth).is_none_or(|p| p.grants.operator());
    let (mut reloads, upstreams) = match operator {
        true => (ui.host.reloads(), ui.host.upstream_status()),
        false => (Vec::new(), Vec::new()),
    };
    reloads.reverse();
    axum::Json(Health { replica: super::api::replica(), window, tools, reloads, upstreams }).into_response()
}

/// The figures of `records` (oldest first), per tool.
fn per_tool(records: &mut dyn Iterator<Item = &AuditRecord>) -> (Window, Vec<ToolHealth>) {
    let mut durations: BTreeMap<String, (ToolHealth, Vec<f64>)> = BTreeMap::new();
    let (mut calls, mut since) = (0, None);
    for record in records {
        calls += 1;
        since.get_or_insert_with(|| record.time.clone());
        let name =
            if record.tool.is_empty() { format!("{}.{}", record.resource, record.action) } else { record.tool.clone() };
        let (row, times) = durations.entry(name.clone()).or_insert_with(|| {
            (ToolHealth { tool: name, resource: record.resource.clone(), ..Default::default() }, Vec::new())
        });
        row.calls += 1;
        times.push(record.duration_ms);
        if record.outcome != "ok" {
            row.errors += 1;
            row.last_error = Some(LastError { time: record.time.clone(), outcome: record.outcome.clone() });
        }
    }
    let tools = durations
        .into_values()
        .map(|(mut row, mut times)| {
            times.sort_by(f64::total_cmp);
            row.error_rate = row.errors as f64 / row.calls as f64;
            row.p50_ms = quantile(&times, 0.50);
            row.p95_ms = quantile(&times, 0.95);
            row.p99_ms = quantile(&times, 0.99);
            row
        })
        .collect();
    (Window { calls, since }, tools)
}

/// The `q` quantile of `sorted` (nearest rank); 0 for none.
fn quantile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let rank = (q * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_are_nearest_ranks() {
        let times: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(quantile(&times, 0.5), 50.0);
        assert_eq!(quantile(&times, 0.95), 95.0);
        assert_eq!(quantile(&times, 0.99), 99.0);
        assert_eq!(quantile(&[7.0], 0.99), 7.0);
        assert_eq!(quantile(&[], 0.5), 0.0);
    }
}
