//! The faces over loopback HTTP: the three REST levels and a call, through
//! a real server (`faces::http::serve`) and a keep-alive client.

use std::fmt::Write as _;
use std::time::{Duration, Instant};

use quiver::Host;
use quiver::faces::http::{HttpOptions, serve};
use tokio_util::sync::CancellationToken;

use crate::{Options, Stats, us};

async fn sample(client: &reqwest::Client, reps: usize, request: impl Fn() -> reqwest::RequestBuilder) -> Stats {
    let mut samples = Vec::with_capacity(reps);
    for _ in 0..reps {
        let start = Instant::now();
        let response = request().send().await.expect("a response");
        assert!(response.status().is_success(), "{}", response.status());
        std::hint::black_box(response.bytes().await.expect("a body"));
        samples.push(start.elapsed());
    }
    let _ = client;
    Stats::new(samples)
}

pub(crate) fn section(options: &Options, runtime: &tokio::runtime::Runtime, report: &mut String) {
    writeln!(report, "## Discovery and calls over loopback HTTP\n").unwrap();
    writeln!(
        report,
        "`quiver serve --http` in-process on 127.0.0.1, a keep-alive `reqwest` client, one request at a time: \
         L1 `GET /v1/tools`, L2 `GET /v1/tools/summary`, L3 `GET /v1/tools/calc__evaluate` (calc loaded), \
         and `POST /v1/tools/calc__evaluate/call`. Catalogs as in the in-process table. MCP `tools/call` over \
         streamable HTTP is not measured yet.\n"
    )
    .unwrap();
    writeln!(
        report,
        "| plugins | tools | L1 p50 / p99 (µs) | L2 p50 / p99 (µs) | L3 p50 / p99 (µs) | call p50 / p99 (µs) |\n|---:|---:|---:|---:|---:|---:|"
    )
    .unwrap();
    let mut throughput = None;
    for &n in crate::scale::sizes(options) {
        let dir = tempfile::tempdir().unwrap();
        crate::scale::generate(dir.path(), n);
        let host = Host::builder().bundled().plugins_dir(dir.path()).cache_dir(None).build().unwrap();
        runtime.block_on(host.describe("calc")).unwrap();
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
        let base = format!("http://{addr}");
        // reqwest is built without a bundled crypto provider (plain http here).
        let _ = rustls::crypto::ring::default_provider().install_default();
        let client = reqwest::Client::new();
        let reps = options.reps(1000);
        let (l1, l2, l3, call) = runtime.block_on(async {
            let get = |path: &str| {
                let url = format!("{base}{path}");
                let client = client.clone();
                move || client.get(&url)
            };
            let post = {
                let url = format!("{base}/v1/tools/calc__evaluate/call");
                let client = client.clone();
                move || client.post(&url).header("content-type", "application/json").body(r#"{"expression": "1 + 1"}"#)
            };
            // Warm the connection and the listing.
            sample(&client, 10, get("/v1/tools")).await;
            (
                sample(&client, reps, get("/v1/tools")).await,
                sample(&client, reps, get("/v1/tools/summary")).await,
                sample(&client, reps, get("/v1/tools/calc__evaluate")).await,
                sample(&client, reps, post).await,
            )
        });
        if n == crate::scale::sizes(options)[0] {
            throughput = Some(runtime.block_on(calls_per_second(options, &client, &base)));
        }
        shutdown.cancel();
        runtime.block_on(server).unwrap();
        let catalog = host.catalog();
        writeln!(
            report,
            "| {} | {} | {} / {} | {} / {} | {} / {} | {} / {} |",
            catalog.len(),
            catalog.listing().len(),
            us(l1.median()),
            us(l1.pct(0.99)),
            us(l2.median()),
            us(l2.pct(0.99)),
            us(l3.median()),
            us(l3.pct(0.99)),
            us(call.median()),
            us(call.pct(0.99)),
        )
        .unwrap();
    }
    writeln!(report).unwrap();
    if let Some((tasks, window, calls)) = throughput {
        writeln!(
            report,
            "Throughput over HTTP: `POST /v1/tools/calc__evaluate/call` (`1 + 1`) from {tasks} concurrent \
             keep-alive clients for {:.1} s, server and clients on the same 2 cores: **{:.0} calls/s**. \
             MCP `tools/call` over streamable HTTP: not measured yet (open faces issue).\n",
            window.as_secs_f64(),
            calls as f64 / window.as_secs_f64()
        )
        .unwrap();
    }
    eprintln!("measured HTTP");
}

/// Calls per second from several concurrent keep-alive clients.
async fn calls_per_second(options: &Options, client: &reqwest::Client, base: &str) -> (usize, Duration, u64) {
    let tasks = 8;
    let window = if options.smoke { Duration::from_millis(200) } else { Duration::from_secs(5) };
    let deadline = Instant::now() + window;
    let workers: Vec<_> = (0..tasks)
        .map(|_| {
            let client = client.clone();
            let url = format!("{base}/v1/tools/calc__evaluate/call");
            tokio::spawn(async move {
                let mut calls = 0u64;
                while Instant::now() < deadline {
                    let response = client
                        .post(&url)
                        .header("content-type", "application/json")
                        .body(r#"{"expression": "1 + 1"}"#)
                        .send()
                        .await
                        .expect("a response");
                    assert!(response.status().is_success());
                    response.bytes().await.expect("a body");
                    calls += 1;
                }
                calls
            })
        })
        .collect();
    let mut total = 0;
    for worker in workers {
        total += worker.await.unwrap();
    }
    (tasks, window, total)
}
