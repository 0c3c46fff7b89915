//! The dashboard in a real browser: Debian's Chromium driven by
//! playwright-core (`tests/browser/dashboard.mjs`) against `quiver serve
//! --http` on a loopback port, signed in with the token. Every page loads
//! with no console error, no failed request and no serious accessibility
//! violation (axe-core); a call made by another client shows on the live
//! page within a second; the call page calls a tool through its form; a
//! tool description holding markup stays text; no request leaves
//! loopback. Screenshots of each page land in `target/dashboard/`.

use std::process::Command;

use quiver::faces::http::{HttpOptions, serve};
use quiver_tests::TestHost;
use tokio_util::sync::CancellationToken;

/// A saved MCP tool list whose description is an XSS probe.
const PROBE: &str = r#"[{"name": "probe",
  "description": "<script>window.__xss=1</script><img src=x onerror=\"window.__xss=1\"> A probe that must render as text.",
  "inputSchema": {"type": "object", "properties": {"note": {"type": "string", "description": "<b onmouseover=\"window.__xss=1\">bold?</b>"}}}}]"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_page_works_in_chromium_and_markup_from_outside_stays_text() {
    let mcp = tempfile::tempdir().unwrap();
    std::fs::write(mcp.path().join("xss.json"), PROBE).unwrap();
    let t = TestHost::builder().bundled().mcp(mcp.path().to_path_buf()).build();
    let token = "browser-s3cret";
    let options = HttpOptions { addr: "127.0.0.1:0".parse().unwrap(), token: Some(token.into()), ..Default::default() };
    let stop = CancellationToken::new();
    let (bound, at) = tokio::sync::oneshot::channel();
    let host = t.host.clone();
    let served = tokio::spawn({
        let stop = stop.clone();
        async move {
            serve(&host, &options, stop, move |addr| {
                let _ = bound.send(addr);
            })
            .await
        }
    });
    let addr = at.await.expect("the server listens");

    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf();
    let target = std::env::var_os("CARGO_TARGET_DIR").map_or_else(|| root.join("target"), Into::into);
    let shots = target.join("dashboard");
    std::fs::create_dir_all(&shots).unwrap();
    let run = tokio::task::spawn_blocking(move || {
        Command::new("node")
            .arg(root.join("tests/browser/dashboard.mjs"))
            .env("QUIVER_URL", format!("http://{addr}"))
            .env("QUIVER_TOKEN", token)
            .env("CHROMIUM", "/usr/bin/chromium")
            .env("SHOTS", &shots)
            .env("XSS_TOOL", "xss__probe")
            .env("CALL_TOOL", "calc__evaluate")
            .env("CALL_FIELD", "expression")
            .env("CALL_VALUE", "6 * 7")
            .env("CALL_EXPECT", "42")
            .output()
            .expect("node runs (installed by .ci/run)")
    })
    .await
    .unwrap();
    stop.cancel();
    served.await.unwrap().unwrap();
    let (stdout, stderr) = (String::from_utf8_lossy(&run.stdout), String::from_utf8_lossy(&run.stderr));
    assert!(run.status.success(), "the browser run failed:\n{stdout}\n{stderr}");
    let report: serde_json::Value = stdout
        .lines()
        .rev()
        .find_map(|line| serde_json::from_str(line).ok())
        .unwrap_or_else(|| panic!("no report line:\n{stdout}"));
    assert_eq!(report["ok"], true, "{report}");
    assert_eq!(report["pages"], 6, "{report}");
    assert!(report["live_ms"].as_f64().is_some_and(|ms| ms <= 1000.0), "{report}");
    println!("{report}");
}

/// The dashboard's sign-in through a real authorization server
/// (oauth2-mock-server), in Chromium (`tests/browser/oauth_sign_in.mjs`):
/// the whole redirect chain, the session cookie after it (a browser
/// withholds `SameSite=Strict` cookies from a chain begun on another
/// site, which no hand-played client shows), what the principal is shown,
/// and signing out.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_dashboard_signs_in_through_the_issuer_in_chromium() {
    let issuer = quiver_tests::oauth::Issuer::start();
    // Ada signs in through a form on the issuer's site, so the way back
    // to Quiver begins on another site.
    issuer.consent(serde_json::json!({"sub": "ada", "form": true}));
    // The resource names the port, so it is chosen before the server
    // listens (bound and released here; nothing else takes it between).
    // The browser reaches Quiver as `localhost` and the issuer as
    // `127.0.0.1`: two sites, as in production.
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let base = format!("http://localhost:{port}");
    let config = format!(
        "[auth]\nmode = \"oauth\"\nissuer = \"{}\"\nresource = \"{base}/mcp\"\n\
         scopes_supported = [\"quiver:calc:read\"]\ndashboard_client_id = \"quiver-dashboard\"\n\
         [auth.subjects]\nada = \"scoped\"\n[agents.scoped]\nhide_unauthorized = true\n",
        issuer.url
    );
    let t = TestHost::builder().bundled().config(&config).build();
    let bind = quiver::auth::Bind { loopback: true, local_resource: None };
    let auth = quiver::auth::Authenticator::new(t.host.auth_settings(), None, &bind, &|_| None).await.unwrap();
    let options = HttpOptions {
        addr: format!("127.0.0.1:{port}").parse().unwrap(),
        authenticator: Some(std::sync::Arc::new(auth)),
        ..Default::default()
    };
    let stop = CancellationToken::new();
    let (bound, at) = tokio::sync::oneshot::channel();
    let host = t.host.clone();
    let served = tokio::spawn({
        let stop = stop.clone();
        async move {
            serve(&host, &options, stop, move |addr| {
                let _ = bound.send(addr);
            })
            .await
        }
    });
    at.await.expect("the server listens");

    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf();
    let target = std::env::var_os("CARGO_TARGET_DIR").map_or_else(|| root.join("target"), Into::into);
    let shots = target.join("dashboard");
    std::fs::create_dir_all(&shots).unwrap();
    let issuer_url = issuer.url.clone();
    let run = tokio::task::spawn_blocking(move || {
        Command::new("node")
            .arg(root.join("tests/browser/oauth_sign_in.mjs"))
            .env("QUIVER_URL", &base)
            .env("ISSUER_URL", issuer_url)
            .env("SUBJECT", "ada")
            .env("CHROMIUM", "/usr/bin/chromium")
            .env("SHOTS", &shots)
            .output()
            .expect("node runs (installed by .ci/run)")
    })
    .await
    .unwrap();
    stop.cancel();
    served.await.unwrap().unwrap();
    let (stdout, stderr) = (String::from_utf8_lossy(&run.stdout), String::from_utf8_lossy(&run.stderr));
    assert!(run.status.success(), "the browser run failed:\n{stdout}\n{stderr}");
    let report: serde_json::Value = stdout
        .lines()
        .rev()
        .find_map(|line| serde_json::from_str(line).ok())
        .unwrap_or_else(|| panic!("no report line:\n{stdout}"));
    assert_eq!(report["ok"], true, "{report}");
    println!("{report}");
}
