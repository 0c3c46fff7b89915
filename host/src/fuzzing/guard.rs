//! The HTTP guard's decision of who a request is from, fed requests as a
//! browser or a client might send them. The input is lines: a method, a
//! path, then `name: value` headers, where `{token}`, `{cookie}` and
//! `{csrf}` stand for the server's bearer token and a live sign-in's
//! cookie and CSRF token (so that the fuzzer reaches both sides of every
//! check). The oracle: a request that is neither the token's nor a
//! sign-in's (with its CSRF token for a change) never gets past the guard
//! to anything but the public pages (the index of links, health probes,
//! the sign-in form and the page's files, the OAuth metadata).

use std::sync::OnceLock;

use axum::body::Body;
use axum::http::{Request, StatusCode, header};
use tokio_util::sync::CancellationToken;
use tower::ServiceExt as _;

use crate::faces::http::{HttpOptions, router};
use crate::host::Host;

const TOKEN: &str = "fuzz-token";

struct Guarded {
    runtime: tokio::runtime::Runtime,
    app: axum::Router,
    /// The `name=value` pair of a live sign-in's cookie.
    cookie: String,
    csrf: String,
    _host: Host,
}

fn guarded() -> &'static Guarded {
    static GUARDED: OnceLock<Guarded> = OnceLock::new();
    GUARDED.get_or_init(|| {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let host = runtime.block_on(async { Host::builder().cache_dir(None).build().expect("a host with no plugins") });
        let options = HttpOptions { token: Some(TOKEN.into()), ..Default::default() };
        let app = runtime.block_on(async { router(&host, &options, CancellationToken::new()) }).expect("a router");
        let (cookie, csrf) = runtime.block_on(async {
            let form = Request::post("/ui/sign-in")
                .header(header::HOST, "localhost")
                .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
                .body(Body::from(format!("token={TOKEN}")))
                .unwrap();
            let signed = app.clone().oneshot(form).await.unwrap();
            let set = signed.headers()[header::SET_COOKIE].to_str().unwrap();
            let cookie = set.split(';').next().unwrap().to_owned();
            let me = Request::get("/ui/api/me").header(header::HOST, "localhost").header(header::COOKIE, &cookie);
            let me = app.clone().oneshot(me.body(Body::empty()).unwrap()).await.unwrap();
            let body = http_body_util::BodyExt::collect(me.into_body()).await.unwrap().to_bytes();
            let me: serde_json::Value = serde_json::from_slice(&body).unwrap();
            (cookie, me["csrf"].as_str().unwrap().to_owned())
        });
        Guarded { runtime, app, cookie, csrf, _host: host }
    })
}

/// See the module's documentation.
pub fn guard(data: &[u8]) {
    let guarded = guarded();
    let text = String::from_utf8_lossy(data)
        .replace("{token}", TOKEN)
        .replace("{cookie}", &guarded.cookie)
        .replace("{csrf}", &guarded.csrf);
    let mut lines = text.lines();
    let (Some(method), Some(path)) = (lines.next(), lines.next()) else { return };
    let mut request = Request::builder().method(method).uri(path);
    for line in lines {
        if let Some((name, value)) = line.split_once(':') {
            request = request.header(name.trim(), value.trim());
        }
    }
    // What the HTTP parser refuses never reaches the guard.
    let Ok(request) = request.body(Body::empty()) else { return };
    let allowed = allowed(&request, guarded);
    // Public: the index of links, the health probes, the sign-in form and
    // the page's files, the OAuth metadata.
    let path = request.uri().path().to_owned();
    let public = matches!(path.as_str(), "/" | "/healthz" | "/readyz" | "/ui/sign-in")
        || path.starts_with("/ui/assets/")
        || path.starts_with("/.well-known/oauth-protected-resource");
    let response = guarded.runtime.block_on(guarded.app.clone().oneshot(request)).expect("the router answers");
    let status = response.status();
    let refused = matches!(status, StatusCode::BAD_REQUEST | StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN)
        || (status == StatusCode::SEE_OTHER && response.headers()[header::LOCATION] == "/ui/sign-in");
    assert!(allowed || public || refused, "{method} {path}: neither the token's nor a sign-in's, answered {status}");
}

/// Whether `request` is the token's, or a signed-in browser's (with its
/// CSRF token when it changes something) on a route a cookie opens.
fn allowed(request: &Request<Body>, guarded: &Guarded) -> bool {
    let headers = request.headers();
    let bearer = headers.get_all(header::AUTHORIZATION).iter().next().and_then(|v| v.to_str().ok()).is_some_and(|v| {
        v.split_once(' ').is_some_and(|(scheme, t)| scheme.eq_ignore_ascii_case("bearer") && t.trim_start() == TOKEN)
    });
    let path = request.uri().path();
    let browser = path == "/ui" || path.starts_with("/ui/") || path.starts_with("/v1/");
    let (id_name, id) = guarded.cookie.split_once('=').unwrap();
    let cookie =
        headers.get_all(header::COOKIE).iter().filter_map(|v| v.to_str().ok()).any(|v| {
            v.split(';').filter_map(|p| p.trim().split_once('=')).any(|(n, value)| n == id_name && value == id)
        });
    let safe = matches!(*request.method(), axum::http::Method::GET | axum::http::Method::HEAD);
    let csrf = headers.get("x-csrf-token").and_then(|v| v.to_str().ok()) == Some(guarded.csrf.as_str());
    bearer || (browser && cookie && (safe || csrf))
}
