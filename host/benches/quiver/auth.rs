//! What checking an OAuth access token costs: the check alone with the
//! issuer's keys cached, and what it adds to an MCP `tools/call` over
//! loopback HTTP (the same call on a token-mode server, paired). The
//! issuer is the real authorization server of the tests
//! (oauth2-mock-server on loopback), signing RS256.

use std::fmt::Write as _;
use std::sync::Arc;
use std::time::{Duration, Instant};

use quiver::Host;
use quiver::auth::{Authenticator, Bind};
use quiver::faces::http::{HttpOptions, serve};
use quiver_tests::oauth::Issuer;
use tokio_util::sync::CancellationToken;

use crate::{Options, Stats, us};

const RESOURCE: &str = "http://127.0.0.1/mcp";

pub(crate) fn section(options: &Options, runtime: &tokio::runtime::Runtime, report: &mut String) {
    let issuer = Issuer::start();
    let config = format!("[auth]\nmode = \"oauth\"\nissuer = \"{}\"\nresource = \"{RESOURCE}\"\n", issuer.url);
    let config = quiver::Config::parse(&config, std::path::Path::new(".")).unwrap();
    let host = Host::builder().config(config).bundled().cache_dir(None).build().unwrap();
    runtime.block_on(host.describe("calc")).unwrap();
    let bind = Bind { loopback: true, local_resource: Some(RESOURCE.into()) };
    let oauth = runtime.block_on(Authenticator::new(host.auth_settings(), None, &bind, &|_| None)).unwrap();
    let oauth = Arc::new(oauth);
    let token = issuer.token(RESOURCE, "bench", "quiver:calc:read", serde_json::json!({}));
    let reps = options.reps(20_000);
    // The check alone, keys cached (the first check fetched them).
    let check = runtime.block_on(async {
        oauth.authenticate(Some(&token)).await.expect("the issuer's token is accepted");
        let mut samples = Vec::with_capacity(reps);
        for _ in 0..reps {
            let start = Instant::now();
            std::hint::black_box(oauth.authenticate(Some(&token)).await.unwrap());
            samples.push(start.elapsed());
        }
        Stats::new(samples)
    });
    // The same MCP call on a token-mode server and on an OAuth one, alternating.
    let serve_with = |authenticator: Arc<Authenticator>| {
        let shutdown = CancellationToken::new();
        let (bound_tx, bound_rx) = std::sync::mpsc::channel();
        let (host, stop) = (host.clone(), shutdown.clone());
        let options = HttpOptions {
            addr: "127.0.0.1:0".parse().unwrap(),
            authenticator: Some(authenticator),
            ..Default::default()
        };
        let task = runtime.spawn(async move {
            serve(&host, &options, stop, |addr| bound_tx.send(addr).unwrap()).await.expect("serve");
        });
        let addr = bound_rx.recv_timeout(Duration::from_secs(30)).expect("the server is listening");
        (format!("http://{addr}"), shutdown, task)
    };
    let (plain, stop_plain, plain_task) = serve_with(Arc::new(Authenticator::token(Some("static".into()))));
    let (guarded, stop_guarded, guarded_task) = serve_with(oauth.clone());
    let _ = rustls::crypto::ring::default_provider().install_default();
    let client = reqwest::Client::new();
    let calls = options.reps(2000);
    let (with_token, with_oauth) = runtime.block_on(async {
        let call = |base: &str, bearer: &str| {
            crate::http::mcp_call(&client, base).header("authorization", format!("Bearer {bearer}"))
        };
        for _ in 0..20 {
            crate::http::answered(call(&plain, "static")).await;
            crate::http::answered(call(&guarded, &token)).await;
        }
        let (mut a, mut b) = (Vec::with_capacity(calls), Vec::with_capacity(calls));
        for _ in 0..calls {
            let start = Instant::now();
            crate::http::answered(call(&plain, "static")).await;
            a.push(start.elapsed());
            let start = Instant::now();
            crate::http::answered(call(&guarded, &token)).await;
            b.push(start.elapsed());
        }
        (Stats::new(a), Stats::new(b))
    });
    stop_plain.cancel();
    stop_guarded.cancel();
    runtime.block_on(plain_task).unwrap();
    runtime.block_on(guarded_task).unwrap();
    drop(issuer);
    writeln!(report, "## OAuth access tokens\n").unwrap();
    writeln!(
        report,
        "An RS256 access token from a real authorization server (oauth2-mock-server 8.2.3 on loopback, a 2048-bit \
         key), checked by `Authenticator::authenticate` with the issuer's keys cached: signature, algorithm, `iss`, \
         `aud`, `exp`/`nbf`, then the principal and its scopes read. Then the same MCP `tools/call` of \
         `calc__evaluate` (stateless, loopback HTTP, keep-alive client) on a token-mode server and on an OAuth \
         one, alternating, {calls} pairs.\n"
    )
    .unwrap();
    writeln!(report, "| measure | p50 (µs) | p99 (µs) |\n|---|---:|---:|").unwrap();
    writeln!(report, "| token check, keys cached ({reps} checks) | {} | {} |", us(check.median()), us(check.pct(0.99)))
        .unwrap();
    writeln!(report, "| MCP `tools/call`, token mode | {} | {} |", us(with_token.median()), us(with_token.pct(0.99)))
        .unwrap();
    writeln!(report, "| MCP `tools/call`, OAuth mode | {} | {} |", us(with_oauth.median()), us(with_oauth.pct(0.99)))
        .unwrap();
    let added = with_oauth.median().as_secs_f64() - with_token.median().as_secs_f64();
    writeln!(report, "\nWhat OAuth adds to a call at the median: **{:.1} µs**.\n", added * 1e6).unwrap();
    eprintln!("measured auth");
}
