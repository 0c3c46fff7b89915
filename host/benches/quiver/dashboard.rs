//! The dashboard: what its files weigh (as served, and gzipped as a
//! proxy would send them) and how soon the page first paints, loaded in
//! Debian's Chromium (each load in a fresh browser context) from a real
//! server on loopback (`tests/browser/first_paint.mjs`).

use std::fmt::Write as _;
use std::io::Write as _;
use std::process::{Command, Stdio};
use std::time::Duration;

use quiver::Host;
use quiver::faces::dashboard::ASSETS;
use quiver::faces::http::{HttpOptions, serve};
use tokio_util::sync::CancellationToken;

use crate::{Options, Stats, ms};

/// `bytes` gzipped at the highest level (the `gzip` command's).
fn gzipped(bytes: &[u8]) -> usize {
    let mut gzip = Command::new("gzip").arg("-9c").stdin(Stdio::piped()).stdout(Stdio::piped()).spawn().expect("gzip");
    gzip.stdin.take().unwrap().write_all(bytes).unwrap();
    gzip.wait_with_output().expect("gzip runs").stdout.len()
}

pub(crate) fn section(options: &Options, runtime: &tokio::runtime::Runtime, report: &mut String) {
    writeln!(report, "## Dashboard\n").unwrap();
    let index = quiver::faces::dashboard::INDEX.as_bytes();
    let files: Vec<(&str, &[u8])> =
        std::iter::once(("index.html", index)).chain(ASSETS.iter().map(|(name, _, bytes)| (*name, *bytes))).collect();
    writeln!(report, "| file | bytes | gzip -9 |\n|---|---|---|").unwrap();
    let (mut total, mut total_gz) = (0, 0);
    for (name, bytes) in &files {
        let gz = gzipped(bytes);
        (total, total_gz) = (total + bytes.len(), total_gz + gz);
        writeln!(report, "| `{name}` | {} | {gz} |", bytes.len()).unwrap();
    }
    writeln!(report, "| **everything the page loads** | **{total}** | **{total_gz}** |\n").unwrap();

    let host = Host::builder().bundled().cache_dir(None).build().unwrap();
    let shutdown = CancellationToken::new();
    let (bound_tx, bound_rx) = std::sync::mpsc::channel();
    let server = {
        let (host, shutdown) = (host.clone(), shutdown.clone());
        let options = HttpOptions { addr: "127.0.0.1:0".parse().unwrap(), ..Default::default() };
        runtime.spawn(async move {
            serve(&host, &options, shutdown, |addr| bound_tx.send(addr).unwrap()).await.expect("serve");
        })
    };
    let addr = bound_rx.recv_timeout(Duration::from_secs(30)).expect("the server is listening");
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let loads = options.reps(30);
    let output = Command::new("node")
        .arg(root.join("tests/browser/first_paint.mjs"))
        .env("QUIVER_URL", format!("http://{addr}"))
        .env("LOADS", loads.to_string())
        .output()
        .expect("node runs (tests/servers has playwright-core: npm ci --prefix tests/servers)");
    shutdown.cancel();
    runtime.block_on(server).unwrap();
    assert!(output.status.success(), "first_paint.mjs: {}", String::from_utf8_lossy(&output.stderr));
    let line: serde_json::Value = serde_json::from_slice(&output.stdout).expect("one JSON line");
    let stats = |key: &str| {
        Stats::new(
            line[key].as_array().unwrap().iter().map(|v| Duration::from_secs_f64(v.as_f64().unwrap() / 1e3)).collect(),
        )
    };
    let (paint, ready) = (stats("first_paint_ms"), stats("dom_content_loaded_ms"));
    writeln!(report, "| `/ui/` loaded in a fresh context ({loads} loads) | p50 ms | p95 ms |\n|---|---|---|").unwrap();
    writeln!(report, "| first contentful paint | {} | {} |", ms(paint.median()), ms(paint.pct(0.95))).unwrap();
    writeln!(report, "| DOMContentLoaded | {} | {} |\n", ms(ready.median()), ms(ready.pct(0.95))).unwrap();
    writeln!(
        report,
        "The page is the dashboard's own script modules and style sheet, no third-party code; the goals are \
         ≤ 100 KB gzip for everything and a first paint under 300 ms on loopback."
    )
    .unwrap();
}
