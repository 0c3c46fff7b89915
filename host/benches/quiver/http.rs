//! The faces over loopback HTTP: the three REST levels, a REST call and an
//! MCP `tools/call` (streamable HTTP, stateless 2026-07-28), through a real
//! server (`faces::http::serve`) and a keep-alive client.

use std::fmt::Write as _;
use std::time::{Duration, Instant};

use quiver::Host;
use quiver::faces::http::{HttpOptions, serve};
use tokio_util::sync::CancellationToken;

use crate::{Options, Stats, us};

/// One stateless (2026-07-28) MCP `tools/call` of `calc__evaluate`, as a
/// client sends it: the request carries its protocol metadata, in `_meta`
/// and in the standard headers.
pub(crate) fn mcp_call(client: &reqwest::Client, base: &str) -> reqwest::RequestBuilder {
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"calc__evaluate","arguments":{"expression":"1 + 1"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"quiver-bench","version":"0"}}}}"#;
    client
        .post(format!("{base}/mcp"))
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "tools/call")
        .header("mcp-name", "calc__evaluate")
        .body(body)
}

/// One `POST /v1/tools/calc__evaluate/call`.
fn rest_call(client: &reqwest::Client, base: &str) -> reqwest::RequestBuilder {
    client
        .post(format!("{base}/v1/tools/calc__evaluate/call"))
        .header("content-type", "application/json")
        .body(r#"{"expression": "1 + 1"}"#)
}

/// Send `request`, check it answered (an MCP result, not an error), and
/// read the whole body.
pub(crate) async fn answered(request: reqwest::RequestBuilder) {
    let response = request.send().await.expect("a response");
    assert!(response.status().is_success(), "{}", response.status());
    let body = response.bytes().await.expect("a body");
    assert!(!body.windows(9).any(|w| w == br#""error":{"#), "{}", String::from_utf8_lossy(&body));
    std::hint::black_box(body);
}

async fn sample(reps: usize, request: impl Fn() -> reqwest::RequestBuilder) -> Stats {
    let mut samples = Vec::with_capacity(reps);
    for _ in 0..reps {
        let start = Instant::now();
        answered(request()).await;
        samples.push(start.elapsed());
    }
    Stats::new(samples)
}

pub(crate) fn section(options: &Options, runtime: &tokio::runtime::Runtime, report: &mut String) {
    writeln!(report, "## Discovery and calls over loopback HTTP\n").unwrap();
    writeln!(
        report,
        "`quiver serve --http` in-process on 127.0.0.1, a keep-alive `reqwest` client, one request at a time: \
         L1 `GET /v1/tools`, L2 `GET /v1/tools/summary`, L3 `GET /v1/tools/calc__evaluate` (calc loaded), \
         `POST /v1/tools/calc__evaluate/call`, and MCP `tools/call` of `calc__evaluate` on `/mcp` (streamable \
         HTTP, a stateless 2026-07-28 request answered with one JSON body). L1 and L2 are their default first \
         pages (L1 up to 5,000 names: every name here; L2 500 summaries, ~100 KB), each serialized once per \
         catalog version. Catalogs as in the in-process table.\n"
    )
    .unwrap();
    writeln!(
        report,
        "| plugins | tools | L1 p50 / p99 (µs) | L2 p50 / p99 (µs) | L3 p50 / p99 (µs) | REST call p50 / p99 (µs) | MCP `tools/call` p50 / p99 (µs) |\n|---:|---:|---:|---:|---:|---:|---:|"
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
        let (l1, l2, l3, call, mcp) = runtime.block_on(async {
            let get = |path: &str| {
                let url = format!("{base}{path}");
                let client = client.clone();
                move || client.get(&url)
            };
            // Warm the connection, the listings and the MCP service.
            sample(10, get("/v1/tools")).await;
            sample(10, get("/v1/tools/summary")).await;
            sample(10, || mcp_call(&client, &base)).await;
            (
                sample(reps, get("/v1/tools")).await,
                sample(reps, get("/v1/tools/summary")).await,
                sample(reps, get("/v1/tools/calc__evaluate")).await,
                sample(reps, || rest_call(&client, &base)).await,
                sample(reps, || mcp_call(&client, &base)).await,
            )
        });
        if n == crate::scale::sizes(options)[0] {
            let rest = runtime.block_on(calls_per_second(options, &client, &base, rest_call));
            let mcp = runtime.block_on(calls_per_second(options, &client, &base, mcp_call));
            throughput = Some((rest, mcp));
        }
        shutdown.cancel();
        runtime.block_on(server).unwrap();
        let catalog = host.catalog();
        writeln!(
            report,
            "| {} | {} | {} / {} | {} / {} | {} / {} | {} / {} | {} / {} |",
            catalog.len(),
            catalog.tools().len(),
            us(l1.median()),
            us(l1.pct(0.99)),
            us(l2.median()),
            us(l2.pct(0.99)),
            us(l3.median()),
            us(l3.pct(0.99)),
            us(call.median()),
            us(call.pct(0.99)),
            us(mcp.median()),
            us(mcp.pct(0.99)),
        )
        .unwrap();
    }
    writeln!(report).unwrap();
    if let Some(((tasks, window, rest), (_, _, mcp))) = throughput {
        let per_second = |calls: u64| calls as f64 / window.as_secs_f64();
        writeln!(
            report,
            "Throughput over HTTP, `calc__evaluate` of `1 + 1` from {tasks} concurrent keep-alive clients for \
             {:.1} s each, server and clients on the same 2 cores: REST `POST /v1/tools/calc__evaluate/call` \
             **{:.0} calls/s**; MCP `tools/call` (stateless, streamable HTTP) **{:.0} calls/s**.\n",
            window.as_secs_f64(),
            per_second(rest),
            per_second(mcp),
        )
        .unwrap();
    }
    eprintln!("measured HTTP");
}

/// Calls per second from several concurrent keep-alive clients.
async fn calls_per_second(
    options: &Options,
    client: &reqwest::Client,
    base: &str,
    request: fn(&reqwest::Client, &str) -> reqwest::RequestBuilder,
) -> (usize, Duration, u64) {
    let tasks = 8;
    let window = if options.smoke { Duration::from_millis(200) } else { Duration::from_secs(5) };
    let deadline = Instant::now() + window;
    let workers: Vec<_> = (0..tasks)
        .map(|_| {
            let (client, base) = (client.clone(), base.to_owned());
            tokio::spawn(async move {
                let mut calls = 0u64;
                while Instant::now() < deadline {
                    answered(request(&client, &base)).await;
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
