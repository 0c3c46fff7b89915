//! The dashboard's sign-in through a real authorization server
//! (oauth2-mock-server on loopback): the authorization code flow with
//! PKCE, its `state` bound to the browser, the sign-in that carries the
//! principal (never the token), and what that principal is shown and may
//! call through the dashboard and the REST API. The test plays the
//! browser: it follows each redirect by hand and keeps the cookies.

use std::sync::Arc;

use axum::body::Body;
use axum::http::{HeaderMap, Request, StatusCode, header};
use quiver::auth::{Authenticator, Bind};
use quiver::faces::http::{HttpOptions, router};
use quiver_tests::TestHost;
use quiver_tests::oauth::Issuer;
use serde_json::json;
use tokio_util::sync::CancellationToken;

use super::rest::{get, json_of, send};

const RESOURCE: &str = "http://localhost/mcp";

async fn serve(issuer: &Issuer, audit: &std::path::Path) -> (TestHost, axum::Router) {
    let config = format!(
        "[auth]\nmode = \"oauth\"\nissuer = \"{}\"\nresource = \"{RESOURCE}\"\njwks_refresh_seconds = 0\n\
         scopes_supported = [\"quiver:calc:read\", \"quiver:text:read\"]\n\
         dashboard_client_id = \"quiver-dashboard\"\ndashboard_scopes = [\"quiver:calc:read\"]\n\
         [auth.subjects]\nada = \"scoped\"\n\
         [agents.scoped]\nhide_unauthorized = true\n\
         [audit]\npath = {:?}\n",
        issuer.url,
        audit.join("audit.jsonl").display().to_string(),
    );
    let t = TestHost::builder().bundled().config(&config).build();
    let bind = Bind { loopback: true, local_resource: Some(RESOURCE.into()) };
    let auth = Authenticator::new(t.host.auth_settings(), None, &bind, &|_| None).await.unwrap();
    let options = HttpOptions { authenticator: Some(Arc::new(auth)), ..Default::default() };
    let app = router(&t.host, &options, CancellationToken::new()).unwrap();
    (t, app)
}

/// The `name=value` of each `Set-Cookie` in `headers`.
fn cookies(headers: &HeaderMap) -> Vec<String> {
    headers
        .get_all(header::SET_COOKIE)
        .iter()
        .map(|v| v.to_str().unwrap().split(';').next().unwrap().to_owned())
        .collect()
}

fn location(headers: &HeaderMap) -> String {
    headers[header::LOCATION].to_str().unwrap().to_owned()
}

/// The issuer's answer to the authorization request at `url` (it asks the
/// person nothing): where it sends the browser back.
async fn authorize(url: &str) -> String {
    let client = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().unwrap();
    let answer = client.get(url).send().await.unwrap();
    assert_eq!(answer.status(), 302, "{url}: {}", answer.text().await.unwrap_or_default());
    answer.headers()["location"].to_str().unwrap().to_owned()
}

/// Start a sign-in as a browser would: the state cookie and the URL the
/// issuer sends the browser back to (as a path and query on this server).
async fn begin(app: &axum::Router) -> (String, String) {
    let (status, headers, _) = get(app, "/ui/sign-in/oauth", &[]).await;
    assert_eq!(status, StatusCode::SEE_OTHER);
    let state = cookies(&headers).into_iter().find(|c| c.starts_with("quiver_sign_in_state=")).unwrap();
    let set = headers[header::SET_COOKIE].to_str().unwrap();
    assert!(set.contains("HttpOnly") && set.contains("SameSite=Lax") && set.contains("Path=/ui/sign-in/callback"));
    let back = authorize(&location(&headers)).await;
    let back = back.strip_prefix("http://localhost").unwrap_or_else(|| panic!("sent back elsewhere: {back}"));
    (state, back.to_owned())
}

fn page_text(body: &[u8]) -> String {
    String::from_utf8_lossy(body).into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_dashboard_signs_a_person_in_through_the_issuer_with_pkce() {
    let issuer = Issuer::start();
    let audit = tempfile::tempdir().unwrap();
    let (t, app) = serve(&issuer, audit.path()).await;

    // No sign-in: the dashboard sends the browser to its sign-in page,
    // which leads to the issuer (no token form in OAuth mode).
    let (status, headers, _) = get(&app, "/ui/", &[]).await;
    assert_eq!((status, location(&headers)), (StatusCode::SEE_OTHER, "/ui/sign-in".to_owned()));
    let (status, _, body) = get(&app, "/ui/sign-in", &[]).await;
    assert_eq!(status, StatusCode::OK);
    assert!(page_text(&body).contains(r#"href="/ui/sign-in/oauth""#) && !page_text(&body).contains("password"));

    // Reached by another name than the redirect URI's, the sign-in starts
    // over there (its cookie must come back with the browser).
    let (status, headers, _) = get(&app, "/ui/sign-in/oauth", &[("host", "127.0.0.1")]).await;
    let moved = "http://localhost/ui/sign-in/oauth?moved=true";
    assert_eq!((status, location(&headers)), (StatusCode::SEE_OTHER, moved.into()));
    // Once: behind a proxy that rewrites `Host`, the browser is there already.
    let (status, headers, _) = get(&app, "/ui/sign-in/oauth?moved=true", &[("host", "127.0.0.1")]).await;
    assert_eq!(status, StatusCode::SEE_OTHER);
    assert!(location(&headers).starts_with(&issuer.url), "{}", location(&headers));

    // The authorization request: PKCE (S256), the resource, the scopes asked.
    let (status, headers, _) = get(&app, "/ui/sign-in/oauth", &[]).await;
    assert_eq!(status, StatusCode::SEE_OTHER);
    let asked = reqwest::Url::parse(&location(&headers)).unwrap();
    let query: std::collections::HashMap<_, _> = asked.query_pairs().into_owned().collect();
    assert!(asked.as_str().starts_with(&issuer.url), "{asked}");
    assert_eq!(query["client_id"], "quiver-dashboard");
    assert_eq!(query["redirect_uri"], "http://localhost/ui/sign-in/callback");
    assert_eq!(query["code_challenge_method"], "S256");
    assert_eq!(query["resource"], RESOURCE);
    assert_eq!(query["scope"], "quiver:calc:read");

    // Ada agrees; the browser comes back with a code and its state cookie.
    issuer.consent(json!({"sub": "ada", "scope": "quiver:calc:read"}));
    let (state, back) = begin(&app).await;
    assert!(back.starts_with("/ui/sign-in/callback?code="), "{back}");
    // Without the cookie of the browser that started it, nothing happens.
    let (status, _, body) = get(&app, &back, &[]).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert!(page_text(&body).contains("was not started here"), "{}", page_text(&body));
    let stranger = format!("quiver_sign_in_state={}", "x".repeat(43));
    assert_eq!(get(&app, &back, &[("cookie", &stranger)]).await.0, StatusCode::UNAUTHORIZED);
    // With it: signed in, by a page that moves on to the dashboard.
    let (state2, back) = begin(&app).await;
    assert_ne!(state, state2);
    let (status, headers, body) = get(&app, &back, &[("cookie", &state2)]).await;
    assert_eq!(status, StatusCode::OK, "{}", page_text(&body));
    assert!(page_text(&body).contains(r#"http-equiv="refresh" content="0;url=/ui/""#));
    let set = cookies(&headers);
    let session = set.iter().find(|c| c.starts_with("quiver_session=")).expect("a session cookie").clone();
    assert!(set.contains(&"quiver_sign_in_state=".to_owned()), "the state cookie is cleared: {set:?}");
    let session_header =
        headers.get_all(header::SET_COOKIE).iter().find(|v| v.to_str().unwrap().starts_with("quiver_session="));
    let session_header = session_header.unwrap().to_str().unwrap();
    assert!(session_header.contains("SameSite=Strict") && session_header.contains("HttpOnly"), "{session_header}");
    let max_age: u64 = session_header.split("Max-Age=").nth(1).unwrap().split(';').next().unwrap().parse().unwrap();
    assert!((3590..=3600).contains(&max_age), "the sign-in lasts as long as the token: {session_header}");
    // The same code and state again: spent.
    let (status, _, _) = get(&app, &back, &[("cookie", &state2)]).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);

    // Signed in as Ada: the dashboard says who, with her own profile only.
    let (status, _, body) = get(&app, "/ui/api/me", &[("cookie", &session)]).await;
    assert_eq!(status, StatusCode::OK);
    let me = json_of(&body);
    assert_eq!(me["principal"], "ada", "{me}");
    assert_eq!(me["agents"], json!(["scoped"]), "{me}");
    assert_eq!(me["scopes"], json!(["quiver:calc:read"]), "{me}");
    let csrf = me["csrf"].as_str().unwrap().to_owned();
    assert_eq!(csrf.len(), 64);
    // The cookie does not speak for /mcp.
    let (status, _, _) = get(&app, "/mcp", &[("cookie", &session)]).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);

    // What she is shown: her profile hides what her scopes do not name,
    // in the REST listing and in the status the catalog page reads.
    let (status, _, body) = get(&app, "/v1/tools", &[("cookie", &session)]).await;
    assert_eq!(status, StatusCode::OK);
    let names: Vec<String> = serde_json::from_value(json_of(&body)["tools"].clone()).unwrap();
    assert!(names.iter().any(|n| n == "calc__evaluate"), "{names:?}");
    assert!(names.iter().all(|n| !n.contains("__") || n.starts_with("calc__")), "{names:?}");
    let status_body = json_of(&get(&app, "/v1/status", &[("cookie", &session)]).await.2);
    let plugins: Vec<&str> =
        status_body["plugins"].as_array().unwrap().iter().map(|p| p["name"].as_str().unwrap()).collect();
    assert_eq!(plugins, ["calc"], "{status_body}");

    // What she may call: calc, through the call page and REST; not text,
    // whose scope she lacks and which her profile hides (and a change
    // needs the CSRF token).
    let call = |path: &str, csrf: Option<&str>| {
        let body = if path.contains("calc__") { r#"{"expression": "6 * 7"}"# } else { r#"{"text": "Hello World"}"# };
        let mut request = Request::post(path)
            .header("host", "localhost")
            .header("cookie", &session)
            .header("content-type", "application/json");
        if let Some(csrf) = csrf {
            request = request.header("x-csrf-token", csrf);
        }
        request.body(Body::from(body)).unwrap()
    };
    let (status, _, body) = send(&app, call("/ui/api/call/calc__evaluate", Some(&csrf))).await;
    assert_eq!(status, StatusCode::OK, "{}", page_text(&body));
    assert!(json_of(&body)["text"].as_str().unwrap().contains("42"), "{}", page_text(&body));
    let (status, _, _) = send(&app, call("/ui/api/call/calc__evaluate", None)).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "no CSRF token");
    let (status, _, body) = send(&app, call("/v1/tools/text__slugify/call", Some(&csrf))).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{}", page_text(&body));
    assert!(page_text(&body).contains("no tool `text__slugify`"), "{}", page_text(&body));

    // Another principal's call (a bearer token) is not hers to see; hers
    // is audited under her subject and the dashboard's client.
    let bob = issuer.token(RESOURCE, "bob", "quiver:*:read", json!({}));
    let request = Request::post("/v1/tools/text__slugify/call")
        .header("host", "localhost")
        .header("authorization", format!("Bearer {bob}"))
        .body(Body::from(r#"{"text": "Bob Was Here"}"#))
        .unwrap();
    assert_eq!(send(&app, request).await.0, StatusCode::OK);
    let calls = json_of(&get(&app, "/ui/api/calls", &[("cookie", &session)]).await.2);
    let calls = calls["calls"].as_array().unwrap();
    assert!(!calls.is_empty() && calls.iter().all(|c| c["principal"] == "ada"), "{calls:?}");
    assert!(calls.iter().any(|c| c["tool"] == "calc__evaluate" && c["client_id"] == "quiver-dashboard"), "{calls:?}");
    let health = json_of(&get(&app, "/ui/api/health", &[("cookie", &session)]).await.2);
    assert!(health["tools"].as_array().unwrap().iter().all(|t| t["tool"] != "text__slugify"), "{health}");
    assert_eq!((&health["reloads"], &health["upstreams"]), (&json!([]), &json!([])), "the operator's: {health}");
    let audited = json_of(&get(&app, "/v1/audit", &[("cookie", &session)]).await.2);
    assert!(audited.as_array().unwrap().iter().all(|c| c["principal"] == "ada"), "{audited}");
    let everyone = json_of(&get(&app, "/v1/audit", &[("authorization", &format!("Bearer {bob}"))]).await.2);
    assert!(everyone.as_array().unwrap().iter().all(|c| c["principal"] == "bob"), "bob sees his own: {everyone}");
    let admin = issuer.token(RESOURCE, "root", "quiver:*:admin", json!({}));
    let all = json_of(&get(&app, "/v1/audit", &[("authorization", &format!("Bearer {admin}"))]).await.2);
    let principals: Vec<&str> = all.as_array().unwrap().iter().filter_map(|c| c["principal"].as_str()).collect();
    assert!(principals.contains(&"ada") && principals.contains(&"bob"), "the operator's scope sees all: {all}");

    // Signing out ends it; the sign-in page is where the browser lands.
    let out = Request::post("/ui/sign-out")
        .header("host", "localhost")
        .header("cookie", &session)
        .header("x-csrf-token", &csrf)
        .body(Body::empty())
        .unwrap();
    let (status, headers, _) = send(&app, out).await;
    assert_eq!((status, location(&headers)), (StatusCode::SEE_OTHER, "/ui/sign-in".to_owned()));
    assert_eq!(get(&app, "/ui/api/me", &[("cookie", &session)]).await.0, StatusCode::UNAUTHORIZED);

    // The person refuses: the page says so (the issuer's words as text).
    issuer.consent(json!({"sub": "ada", "deny": "<b>not today</b>"}));
    let (state, back) = begin(&app).await;
    assert!(back.contains("error=access_denied"), "{back}");
    let (status, _, body) = get(&app, &back, &[("cookie", &state)]).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    let text = page_text(&body);
    assert!(text.contains("access_denied") && text.contains("&lt;b&gt;not today&lt;/b&gt;"), "{text}");

    // An access token for another audience is not taken, however it was
    // obtained (an issuer that ignores `resource`).
    issuer.consent(json!({"sub": "ada", "scope": "quiver:calc:read", "aud": "https://other.example/mcp"}));
    let (state, back) = begin(&app).await;
    let (status, headers, body) = get(&app, &back, &[("cookie", &state)]).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert!(page_text(&body).contains("not for this server"), "{}", page_text(&body));
    assert!(cookies(&headers).iter().all(|c| !c.starts_with("quiver_session=")), "no sign-in");
    let refused = t.host.metrics().encode();
    assert!(refused.contains(r#"quiver_auth_refusals_total{reason="sign_in_token"} 1"#), "{refused}");
    assert!(refused.contains(r#"quiver_auth_refusals_total{reason="sign_in_refused"} 1"#), "{refused}");
}

#[tokio::test]
async fn without_a_dashboard_client_the_sign_in_page_says_what_to_set() {
    let issuer = Issuer::start();
    let config = format!(
        "[auth]\nmode = \"oauth\"\nissuer = \"{}\"\nresource = \"{RESOURCE}\"\n\
         jwks_url = \"{}/jwks\"\n",
        issuer.url, issuer.url
    );
    let t = TestHost::builder().bundled().config(&config).build();
    let bind = Bind { loopback: true, local_resource: None };
    let auth = Authenticator::new(t.host.auth_settings(), None, &bind, &|_| None).await.unwrap();
    let options = HttpOptions { authenticator: Some(Arc::new(auth)), ..Default::default() };
    let app = router(&t.host, &options, CancellationToken::new()).unwrap();
    let (status, _, body) = get(&app, "/ui/sign-in", &[]).await;
    assert_eq!(status, StatusCode::OK);
    assert!(page_text(&body).contains("dashboard_client_id"), "{}", page_text(&body));
    assert_eq!(get(&app, "/ui/sign-in/oauth", &[]).await.0, StatusCode::NOT_FOUND);

    // A redirect path of the operator's choosing is served (and public);
    // one of the server's own routes is refused at start.
    let with = |path: &str| {
        format!(
            "[auth]\nmode = \"oauth\"\nissuer = \"{}\"\nresource = \"{RESOURCE}\"\n\
             dashboard_client_id = \"d\"\ndashboard_redirect_path = \"{path}\"\n",
            issuer.url
        )
    };
    for (path, works) in
        [("/auth/callback", true), ("/v1/tools", false), ("/ui/api/me", false), ("/ui", false), ("/mcpcb", false)]
    {
        let t = TestHost::builder().bundled().config(&with(path)).build();
        let auth = Authenticator::new(t.host.auth_settings(), None, &bind, &|_| None).await.unwrap();
        let options = HttpOptions { authenticator: Some(Arc::new(auth)), ..Default::default() };
        match router(&t.host, &options, CancellationToken::new()) {
            Ok(app) if works => {
                let (status, _, body) = get(&app, path, &[]).await;
                assert_eq!(status, StatusCode::UNAUTHORIZED, "{}", page_text(&body));
                assert!(page_text(&body).contains("was not started here"), "{}", page_text(&body));
            }
            Ok(_) => panic!("{path} was taken as the redirect path"),
            Err(error) if !works => assert!(error.to_string().contains("dashboard_redirect_path"), "{error}"),
            Err(error) => panic!("{path}: {error}"),
        }
    }
}
