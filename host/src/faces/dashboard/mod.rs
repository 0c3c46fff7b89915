//! The operators' dashboard at `/ui`: the catalog, the context footprint,
//! search and call playgrounds, live calls and health, as one page served
//! from the binary.
//!
//! ```text
//! GET  /ui/                   the page (hash-routed: #catalog, #footprint, #search, #call, #live, #health)
//! GET  /ui/assets/{file}      its script modules and style sheet
//! GET  /ui/sign-in            the sign-in form (token mode), or the way to the issuer (OAuth)
//! POST /ui/sign-in            exchange the token for a session cookie
//! GET  /ui/sign-in/oauth      off to the authorization server (OAuth, `dashboard_client_id`)
//! GET  /ui/sign-in/callback   back from it with a code (`dashboard_redirect_path`)
//! POST /ui/sign-out           end the sign-in
//! GET  /ui/api/me             who is signed in, the CSRF token, the agent profiles
//! GET  /ui/api/footprint      what the context costs (?agent=); POST …/load counts it all loaded
//! GET  /ui/api/search         a query ranked as search_tools ranks it, each arm's rank beside
//! POST /ui/api/call/{name}    call a tool as the chosen agent profile (?agent=)
//! GET  /ui/api/calls          audited calls, newest first, paged back by id
//! GET  /ui/api/calls/live     each call as it finishes (server-sent events)
//! GET  /ui/api/health         latency and errors per tool, reloads, upstream servers
//! ```
//!
//! The catalog and call pages read the REST API (`/v1/status`,
//! `/v1/tools…`) with the same cookie; a call is made with the profile the
//! operator chose. Everything is served under a
//! content security policy that allows nothing but this origin's own files:
//! no inline script or style, no eval; the page puts every text it is
//! given in as text, never as markup. The files are the page's own (no
//! third-party code), embedded at build time.

mod api;
mod health;
pub mod issuer;
mod kept;
mod live;
pub mod signin;

use std::sync::Arc;

use axum::extract::{Path, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};

use tokio_util::sync::CancellationToken;

use self::signin::SignIns;
use crate::auth::Authenticator;
use crate::error::{Error, Result};
use crate::faces::principals::ByPrincipal;
use crate::host::Host;

/// What the dashboard's handlers share.
pub(super) struct Dashboard {
    host: Host,
    /// The profile the REST face (and so the call page) works with.
    agent: Option<String>,
    sign_ins: Arc<SignIns>,
    /// How the HTTP face checks who a request is from.
    auth: Arc<Authenticator>,
    /// The sessions an OAuth principal's views and calls run in.
    sessions: ByPrincipal,
    /// Ends the live streams when the server shuts down.
    shutdown: CancellationToken,
}

/// The policy every dashboard answer is served under.
pub const CSP: &str = "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; \
     connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'";

/// The page's files, embedded: (name, content type, bytes).
pub const ASSETS: &[(&str, &str, &[u8])] = &[
    ("app.js", "text/javascript; charset=utf-8", include_bytes!("assets/app.js")),
    ("dom.js", "text/javascript; charset=utf-8", include_bytes!("assets/dom.js")),
    ("api.js", "text/javascript; charset=utf-8", include_bytes!("assets/api.js")),
    ("catalog.js", "text/javascript; charset=utf-8", include_bytes!("assets/catalog.js")),
    ("footprint.js", "text/javascript; charset=utf-8", include_bytes!("assets/footprint.js")),
    ("search.js", "text/javascript; charset=utf-8", include_bytes!("assets/search.js")),
    ("form.js", "text/javascript; charset=utf-8", include_bytes!("assets/form.js")),
    ("call.js", "text/javascript; charset=utf-8", include_bytes!("assets/call.js")),
    ("live.js", "text/javascript; charset=utf-8", include_bytes!("assets/live.js")),
    ("health.js", "text/javascript; charset=utf-8", include_bytes!("assets/health.js")),
    ("app.css", "text/css; charset=utf-8", include_bytes!("assets/app.css")),
];

/// The page itself.
pub const INDEX: &str = include_str!("assets/index.html");
const SIGN_IN: &str = include_str!("assets/signin.html");
const SIGN_IN_OAUTH: &str = include_str!("assets/signin-oauth.html");
const SIGN_IN_ERROR_SLOT: &str = r#"<p id="sign-in-error" role="alert" hidden></p>"#;
const SIGN_IN_HOW_SLOT: &str = r#"<p id="sign-in-how"><a class="button" id="sign-in" href="/ui/sign-in/oauth">Sign in with the authorization server</a></p>"#;

/// Paths a `dashboard_redirect_path` may not take: the server's own
/// routes, and everything under these.
const OWN_PREFIXES: &[&str] =
    &["/mcp", "/v1", "/metrics", "/healthz", "/readyz", "/.well-known", "/ui/api", "/ui/assets", issuer::START];
const OWN_PATHS: &[&str] = &["/ui", "/ui/sign-in", "/ui/sign-out"];

/// The dashboard's routes for `host`; the call page works as `agent`;
/// `auth` says how requests prove who they are from.
pub fn router(
    host: &Host,
    agent: Option<&str>,
    sign_ins: Arc<SignIns>,
    auth: Arc<Authenticator>,
    shutdown: CancellationToken,
) -> Result<axum::Router> {
    let sessions = ByPrincipal::new(host.clone(), host.open_session(agent)?);
    let callback = auth.oauth().and_then(|o| o.browser()).map(|b| b.redirect_path().to_owned());
    if let Some(path) = &callback
        && (OWN_PATHS.contains(&path.as_str())
            // The guard lets `/mcp…` past its Host and Origin checks (rmcp makes them).
            || path.starts_with("/mcp")
            || OWN_PREFIXES.iter().any(|p| path == p || path.strip_prefix(p).is_some_and(|rest| rest.starts_with('/'))))
    {
        return Err(Error::config(
            "[auth] dashboard_redirect_path",
            format!("`{path}` is one of the server's own routes"),
        ));
    }
    let state =
        Arc::new(Dashboard { host: host.clone(), agent: agent.map(str::to_owned), sign_ins, auth, sessions, shutdown });
    let mut router = axum::Router::new()
        .route("/ui", get(index))
        .route("/ui/", get(index))
        .route("/ui/assets/{file}", get(asset))
        .route("/ui/sign-in", get(sign_in_form).post(sign_in))
        .route(issuer::START, get(issuer::start))
        .route("/ui/sign-out", post(sign_out))
        .route("/ui/api/me", get(api::me))
        .route("/ui/api/footprint", get(api::footprint))
        .route("/ui/api/footprint/load", post(api::footprint_loaded))
        .route("/ui/api/search", get(api::search))
        .route("/ui/api/call/{name}", post(api::call))
        .route("/ui/api/calls", get(live::calls))
        .route("/ui/api/calls/live", get(live::follow))
        .route("/ui/api/health", get(health::health));
    if let Some(path) = callback {
        router = router.route(&path, get(issuer::callback));
    }
    Ok(router.layer(axum::middleware::map_response(secured)).with_state(state))
}

/// Every answer under the dashboard's policy; none cached but its files.
async fn secured(mut response: Response) -> Response {
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_SECURITY_POLICY, HeaderValue::from_static(CSP));
    headers.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    // Not `no-referrer`: under it a browser's POST carries `Origin: null`,
    // which the Origin check refuses.
    headers.insert(header::REFERRER_POLICY, HeaderValue::from_static("same-origin"));
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    headers.entry(header::CACHE_CONTROL).or_insert(HeaderValue::from_static("no-store"));
    response
}

fn html(status: StatusCode, body: String) -> Response {
    (status, [(header::CONTENT_TYPE, "text/html; charset=utf-8")], body).into_response()
}

/// The page. Without a token to sign in with, a visit signs in at once
/// (the cookie carries the CSRF token's session all the same).
async fn index(State(ui): State<Arc<Dashboard>>, headers: HeaderMap) -> Response {
    let mut response = html(StatusCode::OK, INDEX.to_owned());
    if ui.sign_ins.token_mode() || matches!(ui.sign_ins.of(&headers).await, Ok(Some(_))) {
        return response;
    }
    match ui.sign_ins.sign_in("").await {
        Ok(cookie) => {
            if let Some(cookie) = cookie.and_then(|c| HeaderValue::from_str(&c).ok()) {
                response.headers_mut().insert(header::SET_COOKIE, cookie);
            }
            response
        }
        Err(reason) => unkept(&ui, &reason),
    }
}

async fn asset(Path(file): Path<String>) -> Response {
    match ASSETS.iter().find(|(name, _, _)| *name == file) {
        Some((_, kind, bytes)) => {
            ([(header::CONTENT_TYPE, *kind), (header::CACHE_CONTROL, "no-cache")], *bytes).into_response()
        }
        None => (StatusCode::NOT_FOUND, "no such file").into_response(),
    }
}

async fn sign_in_form(State(ui): State<Arc<Dashboard>>) -> Response {
    if !ui.sign_ins.token_mode() {
        return see_other("/ui/", []);
    }
    sign_in_page(&ui, StatusCode::OK, None)
}

/// The sign-in page this server's mode asks for, telling `error` (as text).
fn sign_in_page(ui: &Dashboard, status: StatusCode, error: Option<&str>) -> Response {
    let page = match ui.auth.oauth() {
        None => SIGN_IN.to_owned(),
        Some(oauth) if oauth.browser().is_some() => SIGN_IN_OAUTH.to_owned(),
        Some(_) => SIGN_IN_OAUTH.replace(
            SIGN_IN_HOW_SLOT,
            "<p id=\"sign-in-how\">This server takes OAuth access tokens. The dashboard signs people in through \
             the authorization server once <code>[auth] dashboard_client_id</code> names its client there.</p>",
        ),
    };
    let page = match error {
        Some(error) => {
            let told = format!(r#"<p id="sign-in-error" role="alert">{}</p>"#, escaped(error));
            page.replace(SIGN_IN_ERROR_SLOT, &told)
        }
        None => page,
    };
    html(status, page)
}

/// `text` safe inside HTML.
fn escaped(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// The sign-in form's fields.
#[derive(serde::Deserialize)]
struct SignInForm {
    token: String,
}

async fn sign_in(State(ui): State<Arc<Dashboard>>, axum::Form(form): axum::Form<SignInForm>) -> Response {
    match ui.sign_ins.sign_in(&form.token).await {
        Ok(Some(cookie)) => see_other("/ui/", [cookie]),
        Ok(None) => sign_in_page(&ui, StatusCode::UNAUTHORIZED, Some("That is not this server's token.")),
        Err(reason) => unkept(&ui, &reason),
    }
}

async fn sign_out(State(ui): State<Arc<Dashboard>>, headers: HeaderMap) -> Response {
    match ui.sign_ins.sign_out(&headers).await {
        Ok(cleared) => see_other("/ui/sign-in", [cleared]),
        Err(reason) => unkept(&ui, &reason),
    }
}

/// The page when the sign-ins' store (the replicas' Redis) cannot answer:
/// retry in a moment (HTTP 503, `Retry-After`).
fn unkept(ui: &Dashboard, reason: &str) -> Response {
    tracing::warn!(target: "quiver::faces", %reason, "the sign-ins' store cannot answer");
    let text = "The server cannot reach where sign-ins are kept just now. Try again in a moment.";
    let mut response = sign_in_page(ui, StatusCode::SERVICE_UNAVAILABLE, Some(text));
    response.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
    response
}

fn see_other(to: impl Into<String>, cookies: impl IntoIterator<Item = String>) -> Response {
    let Ok(location) = HeaderValue::from_str(&to.into()) else {
        return (StatusCode::INTERNAL_SERVER_ERROR, "cannot redirect there").into_response();
    };
    let mut response = (StatusCode::SEE_OTHER, [(header::LOCATION, location)]).into_response();
    for cookie in cookies.into_iter().filter_map(|c| HeaderValue::from_str(&c).ok()) {
        response.headers_mut().append(header::SET_COOKIE, cookie);
    }
    response
}

/// Why a request was not answered as asked.
#[derive(serde::Serialize)]
struct Refusal {
    /// What to do instead, for a person to read.
    error: String,
}

/// A request the dashboard cannot answer as asked, said as JSON.
fn refused(status: StatusCode, error: impl std::fmt::Display) -> Response {
    (status, axum::Json(Refusal { error: error.to_string() })).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sign_in_pages_slots_are_where_the_code_looks_for_them() {
        assert!(SIGN_IN.contains(SIGN_IN_ERROR_SLOT));
        assert!(SIGN_IN_OAUTH.contains(SIGN_IN_ERROR_SLOT));
        assert!(SIGN_IN_OAUTH.contains(SIGN_IN_HOW_SLOT), "the link to the issuer is replaced when unconfigured");
        assert_eq!(escaped(r#"<b a="1">'&'</b>"#), "&lt;b a=&quot;1&quot;&gt;&#39;&amp;&#39;&lt;/b&gt;");
    }
}
