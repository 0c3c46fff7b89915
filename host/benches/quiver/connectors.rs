//! Connectors: what the host adds to one HTTP request (a fresh instance,
//! the egress guard, the credential, the response read back into the
//! guest, the JSON result) over the same request sent directly, against
//! json-server on loopback.

use std::fmt::Write as _;
use std::io::{Read, Write};
use std::time::Instant;

use quiver_tests::TestHost;
use quiver_tests::servers::JsonServer;

use crate::{Options, Stats, us};

const TOKEN: &str = "bench-token";

pub(crate) fn section(options: &Options, runtime: &tokio::runtime::Runtime, report: &mut String) {
    writeln!(report, "## Connectors\n").unwrap();
    let reps = options.reps(2000);
    let server = JsonServer::start(&serde_json::json!({ "books": [{ "id": 7, "title": "Piranesi" }] }), TOKEN);
    let secrets = tempfile::tempdir().unwrap();
    let token = secrets.path().join("token");
    std::fs::write(&token, TOKEN).unwrap();
    let config = format!(
        "[connectors.books]\nplugin = \"fixture-connector\"\nbase_url = \"{}\"\nauth = {{ kind = \"bearer\", token_file = \"{}\" }}",
        server.url,
        token.display()
    );
    let t = TestHost::builder().fixture("connector").config(&config).build();
    let input = r#"{"path": "/books/7"}"#;
    let through = runtime.block_on(async {
        let answer = t.host.call("books", "read", input).await.unwrap();
        assert!(answer.to_string().contains("Piranesi"), "{answer}");
        let mut samples = Vec::with_capacity(reps);
        for _ in 0..reps {
            let start = Instant::now();
            std::hint::black_box(t.host.call("books", "read", input).await.unwrap());
            samples.push(start.elapsed());
        }
        Stats::new(samples)
    });
    // The same request on a fresh connection, as the connector sends it.
    let address = server.url.trim_start_matches("http://").to_owned();
    let request = format!(
        "GET /books/7 HTTP/1.1\r\nhost: {address}\r\nauthorization: Bearer {TOKEN}\r\nconnection: close\r\n\r\n"
    );
    let direct = |_| {
        let start = Instant::now();
        let mut stream = std::net::TcpStream::connect(&address).unwrap();
        stream.set_nodelay(true).unwrap();
        stream.write_all(request.as_bytes()).unwrap();
        let mut answer = Vec::new();
        stream.read_to_end(&mut answer).unwrap();
        assert!(answer.starts_with(b"HTTP/1.1 200"));
        start.elapsed()
    };
    direct(0);
    let fresh = Stats::new((0..reps).map(direct).collect());
    // And on a kept-alive connection (what a pooled client would pay).
    let kept = runtime.block_on(async {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let client = reqwest::Client::new();
        let url = format!("{}/books/7", server.url);
        let get = || client.get(&url).bearer_auth(TOKEN).send();
        get().await.unwrap().bytes().await.unwrap();
        let mut samples = Vec::with_capacity(reps);
        for _ in 0..reps {
            let start = Instant::now();
            std::hint::black_box(get().await.unwrap().bytes().await.unwrap());
            samples.push(start.elapsed());
        }
        Stats::new(samples)
    });
    let added = through.median().as_secs_f64() - fresh.median().as_secs_f64();
    writeln!(
        report,
        "`read` of `/books/7` through a connector instance (`Host::call`: input check, a fresh instance, \
         the egress guard, the host-held bearer token, HTTP/1.1 on a new loopback connection, the body \
         back into the guest, JSON out) against the same request sent directly on a new connection \
         (std `TcpStream`, `connection: close`), and on a kept-alive `reqwest` connection. json-server \
         0.17.4 on loopback (Node 20, its auth middleware). Warm; p50 / p99 over {reps} requests each. \
         Goal: at most 150 µs added.\n"
    )
    .unwrap();
    writeln!(report, "| request | p50 / p99 (µs) |").unwrap();
    writeln!(report, "|---|---:|").unwrap();
    for (label, stats) in [
        ("direct, new connection", &fresh),
        ("direct, kept-alive connection (reqwest)", &kept),
        ("through the connector", &through),
    ] {
        writeln!(report, "| {label} | {} / {} |", us(stats.median()), us(stats.pct(0.99))).unwrap();
    }
    writeln!(report, "\nAdded at p50 over the direct request on a new connection: **{:.1} µs**.\n", added * 1e6)
        .unwrap();
    eprintln!("measured connectors");
}
