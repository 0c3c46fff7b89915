//! Dashboard sign-ins shared by replicas through a real Redis (issue 36):
//! two HTTP faces of two hosts with `[sessions] redis` naming one Redis,
//! as two replicas behind a round-robin load balancer. A browser signed in
//! on one is signed in on the other, signed out on both by either, and a
//! sign-in begun at the issuer through one replica finishes through the
//! other; when Redis cannot answer, a cookie is answered "retry", never
//! taken on trust.

use std::sync::Arc;

use axum::body::Body;
use axum::http::{HeaderMap, Request, StatusCode, header};
use quiver::auth::{Authenticator, Bind};
use quiver::faces::http::{HttpOptions, router};
use quiver_tests::TestHost;
use quiver_tests::oauth::Issuer;
use quiver_tests::redis::RedisServer;
use serde_json::json;
use tokio_util::sync::CancellationToken;

use super::rest::{get, json_of, send};

const RESOURCE: &str = "http://localhost/mcp";

/// The `name=value` of the `Set-Cookie` in `headers` whose name is `name`.
fn cookie(headers: &HeaderMap, name: &str) -> String {
    let values = headers.get_all(header::SET_COOKIE).iter().map(|v| v.to_str().unwrap().split(';').next().unwrap());
    values.map(str::to_owned).find(|c| c.starts_with(&format!("{name}="))).unwrap_or_else(|| panic!("no {name}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sign_in_on_one_replica_holds_on_every_one_until_it_ends_on_any() {
    let mut redis = RedisServer::start();
    let config = format!("[sessions]\nredis = \"{}\"\n", redis.url);
    let replica = || {
        let t = TestHost::builder().bundled().config(&config).build();
        let options = HttpOptions { token: Some("s3cret".into()), ..Default::default() };
        let app = router(&t.host, &options, CancellationToken::new()).unwrap();
        (t, app)
    };
    let ((_a, a), (_b, b)) = (replica(), replica());
    let sign_in = |token: &str| {
        Request::post("/ui/sign-in")
            .header("content-type", "application/x-www-form-urlencoded")
            .body(Body::from(format!("token={token}")))
            .unwrap()
    };
    assert_eq!(send(&a, sign_in("wrong")).await.0, StatusCode::UNAUTHORIZED);
    let (status, headers, _) = send(&a, sign_in("s3cret")).await;
    assert_eq!(status, StatusCode::SEE_OTHER);
    let session = cookie(&headers, "quiver_session");

    // Signed in on A, so on B: the same CSRF token on both.
    let (status, _, body) = get(&b, "/ui/api/me", &[("cookie", &session)]).await;
    assert_eq!(status, StatusCode::OK, "{}", String::from_utf8_lossy(&body));
    let csrf = json_of(&body)["csrf"].as_str().unwrap().to_owned();
    assert_eq!(json_of(&get(&a, "/ui/api/me", &[("cookie", &session)]).await.2)["csrf"], csrf.as_str());
    assert_eq!(get(&b, "/v1/tools", &[("cookie", &session)]).await.0, StatusCode::OK);

    // Signed out on B: over on A too.
    let sign_out = Request::post("/ui/sign-out")
        .header("cookie", &session)
        .header("x-csrf-token", &csrf)
        .body(Body::empty())
        .unwrap();
    assert_eq!(send(&b, sign_out).await.0, StatusCode::SEE_OTHER);
    assert_eq!(get(&a, "/v1/tools", &[("cookie", &session)]).await.0, StatusCode::UNAUTHORIZED);

    // Redis gone: a cookie is answered "retry" on both, never taken on
    // trust; the bearer token still serves.
    let (_, headers, _) = send(&a, sign_in("s3cret")).await;
    let session = cookie(&headers, "quiver_session");
    redis.stop();
    for app in [&a, &b] {
        let (status, headers, _) = get(app, "/v1/tools", &[("cookie", &session)]).await;
        assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(headers[header::RETRY_AFTER], "1");
    }
    let (status, headers, _) = send(&b, sign_in("s3cret")).await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "no sign-in is made that other replicas cannot see");
    assert!(headers.contains_key(header::RETRY_AFTER));
    assert_eq!(get(&a, "/v1/tools", &[("authorization", "Bearer s3cret")]).await.0, StatusCode::OK);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sign_in_begun_through_one_replica_finishes_through_another() {
    let redis = RedisServer::start();
    let issuer = Issuer::start();
    let config = format!(
        "[sessions]\nredis = \"{}\"\n[auth]\nmode = \"oauth\"\nissuer = \"{}\"\nresource = \"{RESOURCE}\"\n\
         scopes_supported = [\"quiver:calc:read\"]\n\
         dashboard_client_id = \"quiver-dashboard\"\ndashboard_scopes = [\"quiver:calc:read\"]\n",
        redis.url, issuer.url
    );
    let replica = async || {
        let t = TestHost::builder().bundled().config(&config).build();
        let bind = Bind { loopback: true, local_resource: Some(RESOURCE.into()) };
        let auth = Authenticator::new(t.host.auth_settings(), None, &bind, &|_| None).await.unwrap();
        let options = HttpOptions { authenticator: Some(Arc::new(auth)), ..Default::default() };
        let app = router(&t.host, &options, CancellationToken::new()).unwrap();
        (t, app)
    };
    let ((_a, a), (_b, b)) = (replica().await, replica().await);

    // Begun on A: off to the issuer, which sends the browser back at once.
    issuer.consent(json!({"sub": "ada", "scope": "quiver:calc:read"}));
    let (status, headers, _) = get(&a, "/ui/sign-in/oauth", &[]).await;
    assert_eq!(status, StatusCode::SEE_OTHER);
    let state = cookie(&headers, "quiver_sign_in_state");
    let client = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().unwrap();
    let asked = headers[header::LOCATION].to_str().unwrap();
    let answer = client.get(asked).send().await.unwrap();
    assert_eq!(answer.status(), 302);
    let back = answer.headers()["location"].to_str().unwrap().strip_prefix("http://localhost").unwrap().to_owned();

    // Back through B, which never saw it begin: signed in.
    let (status, headers, body) = get(&b, &back, &[("cookie", &state)]).await;
    assert_eq!(status, StatusCode::OK, "{}", String::from_utf8_lossy(&body));
    let session = cookie(&headers, "quiver_session");
    // The same way back again, through either: spent.
    assert_eq!(get(&a, &back, &[("cookie", &state)]).await.0, StatusCode::UNAUTHORIZED);
    // Ada, with her scopes, on A.
    let (status, _, body) = get(&a, "/ui/api/me", &[("cookie", &session)]).await;
    assert_eq!(status, StatusCode::OK);
    let me = json_of(&body);
    assert_eq!((me["principal"].clone(), me["scopes"].clone()), (json!("ada"), json!(["quiver:calc:read"])), "{me}");
}
