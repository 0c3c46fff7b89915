//! Metrics: what a Prometheus scrape of `GET /metrics` costs on a catalog
//! of 10,000 tools (100 saved MCP lists of 100 tools each), after every tool
//! was called once (the first `tool_labels` keep their label, the rest
//! share `_other`), and what recording one call costs.

use std::fmt::Write as _;
use std::time::Instant;

use quiver::Host;
use serde_json::json;

use crate::{Options, Stats, us};

pub(crate) fn section(options: &Options, _runtime: &tokio::runtime::Runtime, report: &mut String) {
    writeln!(report, "## Metrics\n").unwrap();
    let (servers, per) = if options.smoke { (2, 10) } else { (100, 100) };
    let dir = tempfile::tempdir().unwrap();
    for s in 0..servers {
        let tools: Vec<_> = (0..per)
            .map(|t| {
                json!({"name": format!("tool_{t:03}"), "description": format!("Tool {t} of server {s}."),
                       "inputSchema": {"type": "object", "properties": {"q": {"type": "string"}}}})
            })
            .collect();
        std::fs::write(dir.path().join(format!("s{s:03}.json")), serde_json::to_vec(&tools).unwrap()).unwrap();
    }
    let mut config = quiver::Config::default();
    config.metrics.tier1_tokens = true;
    let host = Host::builder().config(config).mcp_dir(dir.path()).cache_dir(None).build().expect("a host");
    let names: Vec<String> = host.catalog().tools().iter().map(|t| t.name.clone()).collect();
    let metrics = host.metrics();
    let mut record = Vec::with_capacity(names.len());
    for name in &names {
        let start = Instant::now();
        metrics.operation("tools/call", Some(name), None, 0.00004);
        metrics.call(name.split("__").next().unwrap_or(name), "ok", 0, Default::default());
        record.push(start.elapsed());
    }
    let start = Instant::now();
    let first = metrics.encode();
    let first_scrape = start.elapsed();
    let scrapes: Vec<_> = (0..options.reps(50))
        .map(|_| {
            let start = Instant::now();
            std::hint::black_box(metrics.encode());
            start.elapsed()
        })
        .collect();
    let scrape = Stats::new(scrapes);
    let record = Stats::new(record);
    writeln!(report, "| measure | p50 µs | p99 µs |\n|---|---|---|").unwrap();
    writeln!(
        report,
        "| a scrape of {} tools, after each was called once | {} | {} |",
        names.len(),
        us(scrape.median()),
        us(scrape.pct(0.99))
    )
    .unwrap();
    writeln!(
        report,
        "| recording one call (an operation and a call by resource) | {} | {} |",
        us(record.median()),
        us(record.pct(0.99))
    )
    .unwrap();
    writeln!(
        report,
        "\nThe first scrape (it also counts the Tier-1 tokens of this catalog revision): {} µs; the answer is {} KiB, {} series lines.",
        us(first_scrape),
        first.len() / 1024,
        first.lines().filter(|l| !l.starts_with('#')).count()
    )
    .unwrap();
}
