//! The dashboard's server side through the router: signing in (a cookie
//! for the token, a CSRF token for changes), its policy and files, and
//! what its pages read: the footprint (loading nothing until asked),
//! the search playground, live calls paged back by id, health.

use axum::body::Body;
use axum::http::{HeaderMap, Request, StatusCode, header};
use quiver::faces::dashboard::{ASSETS, CSP};
use quiver::faces::http::{HttpOptions, router};
use quiver_tests::TestHost;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::rest::{get, json_of, send};

async fn post(
    app: &axum::Router,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> (StatusCode, HeaderMap, Vec<u8>) {
    let mut request = Request::builder().method("POST").uri(path);
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    send(app, request.body(Body::from(body.to_owned())).unwrap()).await
}

/// Sign in to `app` with `token`: the cookie pair to send back and the
/// CSRF token.
async fn signed_in(app: &axum::Router, token: &str) -> (String, String) {
    let form = [("content-type", "application/x-www-form-urlencoded")];
    let (status, headers, _) = post(app, "/ui/sign-in", &form, &format!("token={token}")).await;
    assert_eq!(status, StatusCode::SEE_OTHER);
    let set = headers.get(header::SET_COOKIE).expect("a cookie").to_str().unwrap().to_owned();
    let cookie = set.split(';').next().unwrap().to_owned();
    let (status, _, body) = get(app, "/ui/api/me", &[("cookie", &cookie)]).await;
    assert_eq!(status, StatusCode::OK);
    (cookie, json_of(&body)["csrf"].as_str().unwrap().to_owned())
}

#[tokio::test]
async fn a_browser_signs_in_with_the_token_and_changes_nothing_without_its_csrf_token() {
    let t = TestHost::builder().bundled().build();
    let options = HttpOptions { token: Some("s3cret".into()), ..Default::default() };
    let app = router(&t.host, &options, CancellationToken::new()).unwrap();

    // Not signed in: the page sends the browser to the form; the API refuses.
    let (status, headers, _) = get(&app, "/ui/", &[]).await;
    assert_eq!(status, StatusCode::SEE_OTHER);
    assert_eq!(headers[header::LOCATION], "/ui/sign-in");
    assert_eq!(get(&app, "/ui/api/me", &[]).await.0, StatusCode::UNAUTHORIZED);
    let (status, headers, body) = get(&app, "/ui/sign-in", &[]).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(headers[header::CONTENT_SECURITY_POLICY], CSP);
    assert!(String::from_utf8_lossy(&body).contains("name=\"token\""));

    let form = [("content-type", "application/x-www-form-urlencoded")];
    let (status, headers, body) = post(&app, "/ui/sign-in", &form, "token=s3cret-not").await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert!(headers.get(header::SET_COOKIE).is_none());
    assert!(String::from_utf8_lossy(&body).contains("not this server&#39;s token"));

    let (status, headers, _) = post(&app, "/ui/sign-in", &form, "token=s3cret").await;
    assert_eq!(status, StatusCode::SEE_OTHER);
    let set = headers[header::SET_COOKIE].to_str().unwrap();
    assert!(set.contains("; HttpOnly") && set.contains("; SameSite=Strict"), "{set}");
    let (cookie, csrf) = signed_in(&app, "s3cret").await;
    let cookie = [("cookie", cookie.as_str())];
    let (status, headers, body) = get(&app, "/ui/", &cookie).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(headers[header::CONTENT_SECURITY_POLICY], CSP);
    assert!(String::from_utf8_lossy(&body).contains("/ui/assets/app.js"));

    // The cookie reads the REST API; a call (a change) needs the CSRF token too.
    assert_eq!(get(&app, "/v1/status", &cookie).await.0, StatusCode::OK);
    let call = "/v1/tools/calc__evaluate/call";
    let args = r#"{"expression": "6 * 7"}"#;
    let json = ("content-type", "application/json");
    let (status, _, _) = post(&app, call, &[cookie[0], json], args).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "no CSRF token");
    let (status, _, _) = post(&app, call, &[cookie[0], json, ("x-csrf-token", "0".repeat(64).as_str())], args).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "a wrong CSRF token");
    let (status, _, body) = post(&app, call, &[cookie[0], json, ("x-csrf-token", &csrf)], args).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(json_of(&body)["value"]["value"], 42);
    // A cookie never speaks for MCP or the metrics.
    assert_eq!(get(&app, "/metrics", &cookie).await.0, StatusCode::UNAUTHORIZED);
    let (status, _, _) = post(&app, "/mcp", &[cookie[0], json, ("x-csrf-token", &csrf)], "{}").await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    // A cross-site page is refused before anything else.
    let (status, _, _) = get(&app, "/ui/api/me", &[cookie[0], ("origin", "https://evil.example")]).await;
    assert_eq!(status, StatusCode::FORBIDDEN);

    // Signing out needs the CSRF token, and ends the sign-in.
    assert_eq!(post(&app, "/ui/sign-out", &cookie, "").await.0, StatusCode::FORBIDDEN);
    let (status, headers, _) = post(&app, "/ui/sign-out", &[cookie[0], ("x-csrf-token", &csrf)], "").await;
    assert_eq!(status, StatusCode::SEE_OTHER);
    assert!(headers[header::SET_COOKIE].to_str().unwrap().contains("Max-Age=0"));
    assert_eq!(get(&app, "/ui/api/me", &cookie).await.0, StatusCode::UNAUTHORIZED);
}

#[tokio::test]
async fn without_a_token_the_page_signs_the_browser_in_and_its_files_fit_the_budget() {
    let t = TestHost::builder().bundled().build();
    let app = router(&t.host, &HttpOptions::default(), CancellationToken::new()).unwrap();
    let (status, headers, _) = get(&app, "/ui/sign-in", &[]).await;
    assert_eq!((status, &headers[header::LOCATION]), (StatusCode::SEE_OTHER, &"/ui/".parse().unwrap()));
    let (status, headers, _) = get(&app, "/ui/", &[]).await;
    assert_eq!(status, StatusCode::OK);
    let cookie = headers[header::SET_COOKIE].to_str().unwrap().split(';').next().unwrap().to_owned();
    let (_, _, body) = get(&app, "/ui/api/me", &[("cookie", &cookie)]).await;
    assert_eq!(json_of(&body)["csrf"].as_str().unwrap().len(), 64);
    assert_eq!(json_of(&body)["token_mode"], false);

    let mut total = 0;
    for (name, kind, bytes) in ASSETS {
        let (status, headers, body) = get(&app, &format!("/ui/assets/{name}"), &[]).await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(headers[header::CONTENT_TYPE], *kind);
        assert_eq!(&body, bytes);
        total += bytes.len();
    }
    assert_eq!(get(&app, "/ui/assets/../Cargo.toml", &[]).await.0, StatusCode::NOT_FOUND);
    // The issue's budget is 100 KB gzip for everything; uncompressed is stricter.
    assert!(total < 100_000, "{total} bytes of script and style");
}

#[tokio::test]
async fn the_footprint_loads_nothing_until_asked_and_counts_every_tool_when_it_does() {
    let t = TestHost::builder().bundled().fixture("connector").mcp(quiver_tests::data("mcp")).build();
    let app = router(&t.host, &HttpOptions::default(), CancellationToken::new()).unwrap();
    let (status, _, body) = get(&app, "/ui/api/footprint", &[]).await;
    assert_eq!(status, StatusCode::OK);
    let unloaded = json_of(&body);
    assert_eq!(unloaded["tier1"].as_str().unwrap(), t.host.session(None).unwrap().system_prompt());
    assert!(unloaded["tier1_tokens"]["o200k"].as_u64().unwrap() > 0);
    assert!(unloaded["tier1_tokens"]["cl100k"].as_u64().unwrap() > 0);
    let unknown = unloaded["unknown_tools"].as_u64().unwrap();
    assert!(unknown > 0, "the connector fixture has no packaged manifest: {unloaded}");
    let not_loaded: Vec<&Value> =
        unloaded["tools"].as_array().unwrap().iter().filter(|t| t["full"].is_null()).collect();
    assert_eq!(not_loaded.len() as u64, unknown);
    let weather = unloaded["tools"].as_array().unwrap().iter().find(|t| t["origin"] == "weather").unwrap();
    assert!(weather["full"]["o200k"].as_u64().unwrap() > 0, "a saved list is known without listing");
    assert!(unloaded["meta_tools"].as_array().unwrap().iter().any(|m| m["name"] == "connector"));
    assert_eq!(t.host.load_stats().instantiated(), 0, "counting loaded nothing");
    assert!(t.host.status().plugins.iter().all(|p| !p.compiled), "nor compiled anything");

    assert_eq!(get(&app, "/ui/api/footprint?agent=nobody", &[]).await.0, StatusCode::BAD_REQUEST);
    let (status, _, body) = post(&app, "/ui/api/footprint/load", &[], "").await;
    assert_eq!(status, StatusCode::OK);
    let loaded = json_of(&body);
    assert_eq!(loaded["loaded"], true);
    assert_eq!(loaded["unknown_tools"], 0);
    assert!(loaded["full"]["o200k"].as_u64() > unloaded["full"]["o200k"].as_u64());
    let saving = loaded["saving_percent"].as_f64().unwrap();
    assert!(saving > 0.0 && saving < 100.0, "{saving}");
}

#[tokio::test]
async fn the_search_playground_shows_each_arm_and_what_a_model_reads() {
    let t = TestHost::builder().bundled().build();
    let app = router(&t.host, &HttpOptions::default(), CancellationToken::new()).unwrap();
    let (status, _, body) = get(&app, "/ui/api/search?q=evaluate%20arithmetic&detail=names&limit=3", &[]).await;
    assert_eq!(status, StatusCode::OK);
    let searched = json_of(&body);
    let hits = searched["hits"].as_array().unwrap();
    assert_eq!(hits[0]["name"], "calc__evaluate", "{searched}");
    assert_eq!(hits[0]["lexical_rank"], 1);
    assert!(hits.len() <= 3);
    assert_eq!(searched["is_error"], false);
    assert!(searched["answer"].as_str().unwrap().contains("calc__evaluate"));
    let (_, _, body) = get(&app, "/ui/api/search?q=&detail=names", &[]).await;
    assert_eq!(json_of(&body)["is_error"], true, "the model's own refusal: {}", String::from_utf8_lossy(&body));
}

#[tokio::test]
async fn live_calls_page_back_to_the_oldest_kept_and_health_sums_them_up() {
    let t = TestHost::builder().bundled().build();
    let app = router(&t.host, &HttpOptions::default(), CancellationToken::new()).unwrap();
    let json = [("content-type", "application/json")];
    for i in 0..5 {
        let body = json!({"expression": format!("{i} + 1")}).to_string();
        assert_eq!(post(&app, "/v1/tools/calc__evaluate/call", &json, &body).await.0, StatusCode::OK);
    }
    let (_, _, body) = post(&app, "/v1/tools/calc__evaluate/call", &json, r#"{"expression": "1 +"}"#).await;
    assert_eq!(json_of(&body)["is_error"], true);

    let (_, _, body) = get(&app, "/ui/api/calls?limit=4", &[]).await;
    let page = json_of(&body);
    let ids: Vec<u64> = page["calls"].as_array().unwrap().iter().map(|c| c["id"].as_u64().unwrap()).collect();
    assert_eq!(ids, [6, 5, 4, 3], "newest first");
    assert_eq!(page["calls"][0]["tool"], "calc__evaluate");
    assert_eq!(page["calls"][1]["params"]["expression"], "4 + 1", "params kept by [audit] params' default");
    assert_eq!(page["next_before"], 3);
    let (_, _, body) = get(&app, "/ui/api/calls?limit=4&before=3", &[]).await;
    let page = json_of(&body);
    assert_eq!(page["calls"].as_array().unwrap().len(), 2);
    assert_eq!(page["next_before"], Value::Null, "the oldest kept is reached");
    assert_eq!(page["oldest_kept"], 1);
    let (_, _, body) = get(&app, "/ui/api/calls?outcome=error", &[]).await;
    assert_eq!(json_of(&body)["calls"].as_array().unwrap().len(), 1);

    let (_, _, body) = get(&app, "/ui/api/health", &[]).await;
    let health = json_of(&body);
    let calc = &health["tools"].as_array().unwrap().iter().find(|r| r["tool"] == "calc__evaluate").unwrap();
    assert_eq!((calc["calls"].as_u64(), calc["errors"].as_u64()), (Some(6), Some(1)));
    assert!(calc["p99_ms"].as_f64() >= calc["p50_ms"].as_f64());
    assert_eq!(calc["last_error"]["outcome"], "invalid_input", "{calc}");
    let started = &health["reloads"].as_array().unwrap().last().unwrap()["changes"][0];
    assert!(started.as_str().unwrap().starts_with("started serving"), "{health}");
    assert!(health["replica"].as_str().unwrap().contains(&format!("pid {}", std::process::id())));
}

/// The live stream: each call as an event `call` with its id, and the
/// stream ends when the server shuts down (an open stream never holds a
/// graceful shutdown).
#[tokio::test]
async fn the_live_stream_carries_each_call_and_ends_at_shutdown() {
    use http_body_util::BodyExt as _;
    use tower::ServiceExt as _;

    let t = TestHost::builder().bundled().build();
    let stop = CancellationToken::new();
    let app = router(&t.host, &HttpOptions::default(), stop.clone()).unwrap();
    let request = Request::builder().uri("/ui/api/calls/live").header("host", "localhost").body(Body::empty());
    let response = app.clone().oneshot(request.unwrap()).await.unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(response.headers()[header::CONTENT_TYPE], "text/event-stream");
    let mut body = response.into_body();

    let json = [
        ("content-type", "application/json"),
        ("traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"),
    ];
    assert_eq!(
        post(&app, "/v1/tools/calc__evaluate/call", &json, r#"{"expression": "2 * 21"}"#).await.0,
        StatusCode::OK
    );
    let mut text = String::new();
    while !text.contains("\n\n") {
        let frame = body.frame().await.expect("an event").unwrap();
        if let Some(data) = frame.data_ref() {
            text.push_str(&String::from_utf8_lossy(data));
        }
    }
    assert!(text.contains("event: call\n") && text.contains("id: 1\n"), "{text}");
    let data = text.lines().find_map(|l| l.strip_prefix("data: ")).expect("a data line");
    let call = json_of(data.as_bytes());
    assert_eq!((call["tool"].as_str(), call["outcome"].as_str()), (Some("calc__evaluate"), Some("ok")));
    assert_eq!(call["trace_id"], "0af7651916cd43dd8448eb211c80319c", "the caller's trace, passed on unchanged");

    stop.cancel();
    let ended = tokio::time::timeout(std::time::Duration::from_secs(30), async {
        while let Some(frame) = body.frame().await {
            frame.unwrap();
        }
    });
    ended.await.expect("the stream ends when the server shuts down");
}

/// The catalog page reads `/v1/status`: each plugin's file digest (none
/// for a bundled one) and its access ceiling (when the operator set one).
#[tokio::test]
async fn the_status_names_each_plugins_digest_and_access_ceiling() {
    let t = TestHost::builder().bundled().fixture("connector").demo().build();
    let app = router(&t.host, &HttpOptions::default(), CancellationToken::new()).unwrap();
    let (_, _, body) = get(&app, "/v1/status", &[]).await;
    let status = json_of(&body);
    let plugins = status["plugins"].as_array().unwrap();
    let named = |name: &str| plugins.iter().find(|p| p["name"] == name).unwrap_or_else(|| panic!("{name}: {status}"));
    let digest = named("fixture-connector")["digest"].as_str().unwrap();
    assert!(digest.len() == 64 && digest.bytes().all(|b| b.is_ascii_hexdigit()), "{digest}");
    assert!(named("calc").get("digest").is_none(), "a bundled plugin is the binary's own");
    assert_eq!(named("chinook")["access"], "read", "the demo database is read-only by default: {status}");
}

/// The call page calls as the profile the operator chose: a tool another
/// profile does not see is unknown to it, as a model of that profile
/// would be told.
#[tokio::test]
async fn the_call_page_calls_as_the_chosen_profile() {
    let t = TestHost::builder().bundled().config("[agents.clock]\nplugin_categories = [\"time\"]").build();
    let app = router(&t.host, &HttpOptions::default(), CancellationToken::new()).unwrap();
    let (_, _, body) = get(&app, "/ui/api/me", &[]).await;
    assert_eq!(json_of(&body)["agents"], json!(["default", "clock"]));
    let json = [("content-type", "application/json")];
    let args = r#"{"expression": "6 * 7"}"#;
    let (status, _, body) = post(&app, "/ui/api/call/calc__evaluate", &json, args).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(json_of(&body)["value"]["value"], 42);
    let (status, _, body) = post(&app, "/ui/api/call/calc__evaluate?agent=clock", &json, args).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{}", String::from_utf8_lossy(&body));
    let (status, _, body) = post(&app, "/ui/api/call/datetime__now?agent=clock", &json, "{}").await;
    assert_eq!(status, StatusCode::OK, "{}", String::from_utf8_lossy(&body));
    let (_, _, body) = get(&app, "/ui/api/calls?limit=1", &[]).await;
    assert_eq!(json_of(&body)["calls"][0]["agent"], "clock", "audited as the profile it was made as");
    assert_eq!(post(&app, "/ui/api/call/calc__evaluate?agent=nobody", &json, args).await.0, StatusCode::BAD_REQUEST);
}
