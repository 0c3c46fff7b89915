//! Traces: what they cost a call, three ways. *Off*: nothing configured,
//! so no exporter and no span is made (the default). *On, sampled out*: an
//! exporter is configured but `OTEL_TRACES_SAMPLER=always_off`, so spans
//! are made and dropped. *Exporting*: the default sampler, every call's
//! spans batched and sent by OTLP/HTTP (protobuf) to a sink in this process
//! that answers 200. Measured on `tools/call` over stdio and streamable
//! HTTP (a child `quiver serve`, as the `client` section does), and on the
//! in-process warm call (`Host::call_json` under a SERVER span, as a face
//! runs it).

use std::fmt::Write as _;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use quiver::telemetry::spans;
use tracing_subscriber::layer::SubscriberExt as _;
use tracing_subscriber::util::SubscriberInitExt as _;

use crate::client::{self, Env};
use crate::{Options, Stats, us};

/// An OTLP/HTTP sink on loopback: takes every export, answers 200, counts
/// the requests and the bytes.
struct Sink {
    endpoint: String,
    requests: Arc<AtomicU64>,
    bytes: Arc<AtomicU64>,
}

fn sink(runtime: &tokio::runtime::Runtime) -> Sink {
    let (requests, bytes) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
    let (r, b) = (requests.clone(), bytes.clone());
    let app = axum::Router::new().route(
        "/v1/traces",
        axum::routing::post(move |body: axum::body::Bytes| {
            r.fetch_add(1, Ordering::Relaxed);
            b.fetch_add(body.len() as u64, Ordering::Relaxed);
            async { axum::http::StatusCode::OK }
        }),
    );
    let listener = runtime.block_on(tokio::net::TcpListener::bind("127.0.0.1:0")).unwrap();
    let endpoint = format!("http://{}", listener.local_addr().unwrap());
    runtime.spawn(async move { axum::serve(listener, app).await });
    Sink { endpoint, requests, bytes }
}

/// The request both measurements make spans for: a stdio `tools/call`.
const CALL: spans::Request<'static> = spans::Request {
    method: "tools/call",
    tool: Some("calc__evaluate"),
    id: Some("7"),
    protocol: Some("2025-11-25"),
    session: None,
    transport: spans::Transport::Pipe,
};

/// The cost of the spans a `tools/call` makes (the SERVER span, its end,
/// the guest call's and the instantiation's) when nothing listens: what
/// "off" adds to every call, per call.
fn disabled_spans(reps: usize) -> Duration {
    let request = CALL;
    let start = Instant::now();
    for _ in 0..reps {
        let server = spans::server(request, None, None);
        let _in = server.enter();
        let guest = spans::guest("calc", "evaluate");
        let instantiate = spans::instantiate("calc");
        spans::ended(&server, None, None);
        std::hint::black_box((&guest, &instantiate));
    }
    start.elapsed() / reps as u32
}

/// The in-process warm call under a SERVER span, `reps` times, in a fresh
/// copy of this runner (`--traces-child MODE ENDPOINT REPS`), so that the
/// exporter's layer is the process's global dispatcher as in `quiver
/// serve` (a scoped one makes `tracing` ask every callsite of wasmtime
/// again on each call, which a served process never does).
fn in_process(mode: &str, endpoint: &str, reps: usize) -> Stats {
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--traces-child", mode, endpoint, &reps.to_string()])
        .stderr(std::process::Stdio::inherit())
        .output()
        .expect("run the traces child");
    assert!(out.status.success(), "the traces child failed");
    let samples = String::from_utf8(out.stdout).unwrap();
    Stats::new(samples.split_whitespace().map(|n| Duration::from_nanos(n.parse().unwrap())).collect())
}

/// The child of [`in_process`]: `mode` is `off`, `sampled-out` or
/// `exporting`; prints each call's nanoseconds.
pub(crate) fn child(mode: &str, endpoint: &str, reps: usize) -> ! {
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    let exporter = match mode {
        "off" => None,
        sampled => {
            let sampler = if sampled == "sampled-out" { "always_off" } else { "parentbased_always_on" };
            let settings = quiver::telemetry::TelemetrySettings {
                endpoint: Some(endpoint.to_owned()),
                sampler: Some(sampler.to_owned()),
                ..Default::default()
            };
            let _entered = runtime.enter();
            let (layer, exporter) = quiver::telemetry::traces::layer(&settings).unwrap().expect("an exporter");
            tracing_subscriber::registry().with(layer).init();
            Some(exporter)
        }
    };
    let host = quiver::Host::builder().bundled().cache_dir(None).build().unwrap();
    runtime.block_on(host.describe("calc")).unwrap();
    let input = serde_json::json!({"expression": "1 + 1"});
    let request = CALL;
    let samples: Vec<u128> = runtime.block_on(async {
        for _ in 0..20 {
            host.call_json("calc", "evaluate", &input).await.unwrap();
        }
        let mut samples = Vec::with_capacity(reps);
        for _ in 0..reps {
            let start = Instant::now();
            let span = spans::server(request, None, None);
            tracing::Instrument::instrument(host.call_json("calc", "evaluate", &input), span).await.unwrap();
            samples.push(start.elapsed().as_nanos());
        }
        samples
    });
    drop(exporter);
    let text: Vec<String> = samples.iter().map(u128::to_string).collect();
    println!("{}", text.join(" "));
    std::process::exit(0);
}

/// `measure` run for each mode in turn, `ROUNDS` times over, its samples
/// gathered by mode: the machine's drifts fall on every mode alike.
fn interleaved(reps: usize, mut measure: impl FnMut(usize, usize) -> Vec<Duration>) -> [Stats; 3] {
    const ROUNDS: usize = 3;
    let mut samples: [Vec<Duration>; 3] = Default::default();
    for _ in 0..ROUNDS {
        for (mode, gathered) in samples.iter_mut().enumerate() {
            gathered.extend(measure(mode, reps.div_ceil(ROUNDS)));
        }
    }
    samples.map(Stats::new)
}

fn cell(stats: &Stats) -> String {
    format!("{} / {}", us(stats.median()), us(stats.pct(0.99)))
}

fn added(stats: &Stats, off: &Stats) -> String {
    let off = off.median().as_secs_f64();
    format!("{:+.1} %", (stats.median().as_secs_f64() - off) / off * 100.0)
}

pub(crate) fn section(options: &Options, runtime: &tokio::runtime::Runtime, report: &mut String) {
    writeln!(report, "## Traces\n").unwrap();
    for var in ["OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_TRACES_SAMPLER"] {
        assert!(std::env::var_os(var).is_none(), "unset {var} to measure traces");
    }
    let sink = sink(runtime);
    let reps = options.reps(2000);
    writeln!(
        report,
        "What traces add to a call. *Off*: nothing configured (the default): no exporter, no span made. *On, \
         sampled out*: an endpoint set and `OTEL_TRACES_SAMPLER=always_off`: spans made and dropped. \
         *Exporting*: the default sampler (`parentbased_always_on`), every call's spans batched and sent by \
         OTLP/HTTP protobuf to a sink in the runner that answers 200. Over stdio and streamable HTTP: \
         `tools/call` of `calc__evaluate` from a client process, as in *MCP from a client process* ({reps} \
         calls each, in three rounds that take the modes in turn; p50 / p99 µs, and the p50 against *off*). \
         In-process: `Host::call_json` under a SERVER span, as a face runs it, in a fresh process whose \
         global dispatcher is the exporter's layer (as in `quiver serve`).\n"
    )
    .unwrap();
    writeln!(report, "| where | off | on, sampled out | exporting |\n|---|---:|---:|---:|").unwrap();
    let sampled_out: Env<'_> =
        &[("OTEL_EXPORTER_OTLP_ENDPOINT", &sink.endpoint), ("OTEL_TRACES_SAMPLER", "always_off")];
    let exporting_env: Env<'_> = &[("OTEL_EXPORTER_OTLP_ENDPOINT", &sink.endpoint)];
    let modes: [Env<'_>; 3] = [&[], sampled_out, exporting_env];
    let stdio = interleaved(reps, |mode, reps| client::stdio(reps, modes[mode]).1.samples());
    let client_runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let http = interleaved(reps, |mode, reps| client::http(&client_runtime, reps, modes[mode]).0.1.samples());
    for (name, rows) in [("stdio `tools/call`", &stdio), ("streamable HTTP `tools/call` (2025-11-25 session)", &http)] {
        writeln!(
            report,
            "| {name} | {} | {} ({}) | {} ({}) |",
            cell(&rows[0]),
            cell(&rows[1]),
            added(&rows[1], &rows[0]),
            cell(&rows[2]),
            added(&rows[2], &rows[0])
        )
        .unwrap();
    }
    let exported_by_processes = sink.requests.load(Ordering::Relaxed);

    let names = ["off", "sampled-out", "exporting"];
    let [off, dropped, sent] =
        interleaved(options.reps(20_000), |mode, reps| in_process(names[mode], &sink.endpoint, reps).samples());
    writeln!(
        report,
        "| in-process warm call | {} | {} ({}) | {} ({}) |\n",
        cell(&off),
        cell(&dropped),
        added(&dropped, &off),
        cell(&sent),
        added(&sent, &off)
    )
    .unwrap();
    let spans_off = disabled_spans(options.reps(200_000));
    writeln!(
        report,
        "With telemetry off, the spans a `tools/call` makes (its SERVER span, the guest call's and the \
         instantiation's) cost {:.0} ns together: disabled `tracing` callsites. The sink took {} exports \
         ({} KiB) from the processes and {} in all.\n",
        spans_off.as_secs_f64() * 1e9,
        exported_by_processes,
        sink.bytes.load(Ordering::Relaxed) / 1024,
        sink.requests.load(Ordering::Relaxed),
    )
    .unwrap();
    eprintln!("measured traces");
}
