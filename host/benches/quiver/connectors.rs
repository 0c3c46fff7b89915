//! Connectors: what the host adds to one HTTP request (a fresh instance,
//! the egress guard, the credential, the response read back into the
//! guest, the JSON result) over the same request sent directly, against
//! json-server and a minimal responder on loopback.

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
    writeln!(
        report,
        "A connector call (`Host::call` of the connector fixture's `read`: input check, a fresh instance, \
         the egress guard, the host-held bearer token, HTTP/1.1 on a new loopback connection, the body \
         back into the guest, JSON out) against the same request sent directly on a new connection (std \
         `TcpStream`, `connection: close`) and on a kept-alive `reqwest` connection. Two upstreams: \
         json-server 0.17.4 (Node 20, its auth middleware; `GET /books/7`), and a minimal HTTP/1.1 \
         responder in this process (std threads, one fixed answer; it closes every connection, so its \
         kept-alive column reconnects too), whose own time is near zero, so that the difference is the \
         host's. The OpenAPI columns send the same request through the bundled generic connector \
         (`get_book` of `tests/data/openapi/books.yaml`: the host's plan, the path parameter written \
         into the URL, the JSON answer parsed). Warm; p50 / p99 over {reps} requests each. Goal: at \
         most 150 µs added.\n"
    )
    .unwrap();
    writeln!(
        report,
        "| upstream | direct, new connection | direct, kept alive | through the connector | added at p50 (µs) | \
         through the OpenAPI connector | added at p50 (µs) |"
    )
    .unwrap();
    writeln!(report, "|---|---:|---:|---:|---:|---:|---:|").unwrap();
    let server = JsonServer::start(&serde_json::json!({ "books": [{ "id": 7, "title": "Piranesi" }] }), TOKEN);
    row(runtime, reps, report, "json-server", &server.url, "/books/7");
    let responder = quiver_tests::http_server();
    row(runtime, reps, report, "minimal responder", &responder, "/books/7");
    writeln!(report).unwrap();
}

fn row(runtime: &tokio::runtime::Runtime, reps: usize, report: &mut String, label: &str, base: &str, path: &str) {
    let secrets = tempfile::tempdir().unwrap();
    let token = secrets.path().join("token");
    std::fs::write(&token, TOKEN).unwrap();
    let config = format!(
        "[connectors.books]\nplugin = \"fixture-connector\"\nbase_url = \"{base}\"\nauth = {{ kind = \"bearer\", token_file = \"{token}\" }}\n\
         [connectors.documented]\nopenapi = \"{document}\"\nbase_url = \"{base}\"\nauth = {{ kind = \"bearer\", token_file = \"{token}\" }}",
        token = token.display(),
        document = quiver_tests::data("openapi/books.yaml").display(),
    );
    let t = TestHost::builder().fixture("connector").config(&config).build();
    let measure = |instance: &'static str, action: &'static str, input: String| {
        runtime.block_on(async {
            let answer = t.host.call(instance, action, &input).await.unwrap();
            assert!(answer["status"] == 200 || answer["id"] == 7, "{answer}");
            let mut samples = Vec::with_capacity(reps);
            for _ in 0..reps {
                let start = Instant::now();
                std::hint::black_box(t.host.call(instance, action, &input).await.unwrap());
                samples.push(start.elapsed());
            }
            Stats::new(samples)
        })
    };
    let through = measure("books", "read", format!(r#"{{"path": "{path}"}}"#));
    let documented = measure("documented", "get_book", r#"{"bookId": 7}"#.to_owned());
    // The same request on a fresh connection, as the connector sends it.
    let address = base.trim_start_matches("http://").to_owned();
    let request =
        format!("GET {path} HTTP/1.1\r\nhost: {address}\r\nauthorization: Bearer {TOKEN}\r\nconnection: close\r\n\r\n");
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
        let url = format!("{base}{path}");
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
    let cell = |s: &Stats| format!("{} / {}", us(s.median()), us(s.pct(0.99)));
    let added_documented = documented.median().as_secs_f64() - fresh.median().as_secs_f64();
    writeln!(
        report,
        "| {label} | {} | {} | {} | {:.1} | {} | {:.1} |",
        cell(&fresh),
        cell(&kept),
        cell(&through),
        added * 1e6,
        cell(&documented),
        added_documented * 1e6
    )
    .unwrap();
    eprintln!("measured connectors via {label}");
}
