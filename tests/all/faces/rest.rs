//! The REST API through the router itself: the three levels and their
//! ETags, the OpenAI strict export, the audit log.

use axum::body::Body;
use axum::http::{Request, StatusCode, header};
use http_body_util::BodyExt;
use quiver::faces::http::{HttpOptions, router};
use quiver_tests::TestHost;
use quiver_tests::builds::versioned;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;
use tower::ServiceExt as _;

pub(crate) async fn get(
    app: &axum::Router,
    path: &str,
    headers: &[(&str, &str)],
) -> (StatusCode, axum::http::HeaderMap, Vec<u8>) {
    let mut request = Request::builder().uri(path);
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    send(app, request.body(Body::empty()).unwrap()).await
}

/// Send `request` as an HTTP/1.1 client would: with a `Host` (localhost)
/// unless it names one.
pub(crate) async fn send(
    app: &axum::Router,
    mut request: Request<Body>,
) -> (StatusCode, axum::http::HeaderMap, Vec<u8>) {
    if !request.headers().contains_key(header::HOST) {
        request.headers_mut().insert(header::HOST, "localhost".parse().unwrap());
    }
    let response = app.clone().oneshot(request).await.unwrap();
    let (parts, body) = response.into_parts();
    (parts.status, parts.headers, body.collect().await.unwrap().to_bytes().to_vec())
}

pub(crate) fn json_of(body: &[u8]) -> Value {
    serde_json::from_slice(body).unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(body)))
}

#[tokio::test]
async fn the_rest_api_answers_at_three_levels_with_etags() {
    let t = TestHost::builder().bundled().file("versioned.wasm", versioned(1)).build();
    let app = router(&t.host, &HttpOptions::default(), CancellationToken::new()).unwrap();

    let (status, headers, body) = get(&app, "/v1/tools", &[]).await;
    assert_eq!(status, StatusCode::OK);
    let names = json_of(&body);
    assert!(names["tools"].as_array().unwrap().iter().any(|n| n == "calc__evaluate"), "{names}");
    let etag = headers[header::ETAG].to_str().unwrap().to_owned();
    let (status, _, _) = get(&app, "/v1/tools", &[("if-none-match", &etag)]).await;
    assert_eq!(status, StatusCode::NOT_MODIFIED);

    let (_, _, body) = get(&app, "/v1/tools/summary", &[]).await;
    let summary = json_of(&body);
    let calc = summary["tools"].as_array().unwrap().iter().find(|t| t["name"] == "calc__evaluate").unwrap().clone();
    assert_eq!(calc["category"], "builtin");
    assert!(!calc["summary"].as_str().unwrap().is_empty());

    // Pages chain through next_cursor and add up to the whole listing.
    let all: Vec<Value> = names["tools"].as_array().unwrap().clone();
    assert!(names.get("next_cursor").is_none(), "level 1 fits in one page: {names}");
    let (mut paged, mut cursor) = (Vec::new(), None::<String>);
    loop {
        let path = match &cursor {
            Some(c) => format!("/v1/tools/summary?limit=7&cursor={c}"),
            None => "/v1/tools/summary?limit=7".to_owned(),
        };
        let (status, _, body) = get(&app, &path, &[]).await;
        assert_eq!(status, StatusCode::OK);
        let page = json_of(&body);
        let tools = page["tools"].as_array().unwrap();
        assert!(tools.len() <= 7 && !tools.is_empty(), "{page}");
        paged.extend(tools.iter().map(|t| t["name"].clone()));
        match page.get("next_cursor").and_then(Value::as_str) {
            Some(next) => cursor = Some(next.to_owned()),
            None => break,
        }
    }
    assert_eq!(paged, all, "the pages of level 2 list what level 1 lists, in order");
    for bad in ["/v1/tools?limit=0", "/v1/tools/summary?limit=5001", "/v1/tools?cursor=nope"] {
        let (status, _, body) = get(&app, bad, &[]).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{bad}");
        assert!(json_of(&body)["error"].is_string());
    }

    let (status, _, body) = get(&app, "/v1/tools/calc__evaluate", &[]).await;
    assert_eq!(status, StatusCode::OK);
    let full = json_of(&body);
    assert_eq!(full["inputSchema"]["properties"]["expression"]["type"], "string", "{full}");
    assert_eq!(full["annotations"]["readOnlyHint"], true);
    let (status, _, _) = get(&app, "/v1/tools/nope__nothing", &[]).await;
    assert_eq!(status, StatusCode::NOT_FOUND);

    let call = Request::post("/v1/tools/calc__evaluate/call")
        .header("content-type", "application/json")
        .body(Body::from(r#"{"expression": "6 * 7"}"#))
        .unwrap();
    let (status, _, body) = send(&app, call).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(json_of(&body)["value"], json!({"value": 42}));
    let bad = Request::post("/v1/tools/calc__evaluate/call").body(Body::from(r#"{"expression": 1}"#)).unwrap();
    let (status, _, body) = send(&app, bad).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "the caller's mistake is a 4xx, with the body kept");
    assert_eq!(json_of(&body)["is_error"], true);

    let (_, headers, body) = get(&app, "/v1/prompt", &[]).await;
    assert!(headers[header::CONTENT_TYPE].to_str().unwrap().starts_with("text/plain"));
    assert!(String::from_utf8(body).unwrap().contains("calc__evaluate"));

    let (_, _, body) = get(&app, "/v1/export/openai", &[]).await;
    let openai = json_of(&body);
    assert!(
        openai.as_array().unwrap().iter().all(|t| t["type"] == "function" && t["function"]["parameters"].is_object())
    );
    let (_, _, body) = get(&app, "/v1/export/anthropic", &[]).await;
    let anthropic = json_of(&body);
    assert_eq!(anthropic[0]["name"], "tool_search_tool_bm25");
    assert!(
        anthropic.as_array().unwrap()[1..].iter().all(|t| t["defer_loading"] == true && t["input_schema"].is_object())
    );
    assert_eq!(openai.as_array().unwrap().len() + 1, anthropic.as_array().unwrap().len());

    let (_, _, body) = get(&app, "/v1/openapi.json", &[]).await;
    let openapi = json_of(&body);
    assert_eq!(openapi["openapi"], "3.1.0");
    assert!(openapi["components"]["schemas"]["Summaries"]["properties"]["tools"].is_object());

    // A reload that changes the catalog changes the ETag.
    std::fs::write(t.plugins.path().join("versioned.wasm"), versioned(2)).unwrap();
    t.host.reload().await.unwrap();
    let (status, headers, _) = get(&app, "/v1/tools", &[("if-none-match", &etag)]).await;
    assert_eq!(status, StatusCode::OK);
    assert_ne!(headers[header::ETAG].to_str().unwrap(), etag);
}

/// Every object of a strict schema is closed and lists every property as
/// required (what OpenAI's strict mode demands).
fn strictly_closed(schema: &serde_json::Value) -> bool {
    match schema {
        serde_json::Value::Object(map) => {
            let object = map.get("properties").and_then(|p| p.as_object());
            let closed = object.is_none_or(|properties| {
                let required: Vec<&str> =
                    map["required"].as_array().unwrap().iter().map(|k| k.as_str().unwrap()).collect();
                map["additionalProperties"] == false && properties.keys().all(|k| required.contains(&k.as_str()))
            });
            closed && !map.contains_key("oneOf") && map.values().all(strictly_closed)
        }
        serde_json::Value::Array(items) => items.iter().all(strictly_closed),
        _ => true,
    }
}

/// `?strict=true` rewrites the bundled tools' schemas for OpenAI's strict
/// mode, and the calls such a model makes (every optional argument present,
/// as `null`) are accepted and mean what they mean without the nulls.
#[tokio::test]
async fn the_openai_strict_export_is_strict_and_its_calls_are_accepted() {
    let t = TestHost::builder().bundled().build();
    let app = router(&t.host, &HttpOptions::default(), CancellationToken::new()).unwrap();
    let (_, exact_headers, body) = get(&app, "/v1/export/openai-responses", &[]).await;
    assert!(json_of(&body).as_array().unwrap().iter().all(|t| t["strict"] == false));
    let (status, strict_headers, body) = get(&app, "/v1/export/openai-responses?strict=true", &[]).await;
    assert_eq!(status, StatusCode::OK);
    assert_ne!(exact_headers[header::ETAG], strict_headers[header::ETAG], "each variant has its own ETag");
    let tools = json_of(&body);
    let tools = tools.as_array().unwrap();
    let (strict, loose): (Vec<_>, Vec<_>) = tools.iter().partition(|t| t["strict"] == true);
    for tool in &strict {
        assert!(strictly_closed(&tool["parameters"]), "{tool}");
    }
    // Only tools that take arbitrary JSON (a jq input, template data) or
    // open maps stay loose.
    let loose: Vec<&str> = loose.iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(loose, ["json__query", "template__render"], "{} strict", strict.len());
    let hash = strict.iter().find(|t| t["name"] == "codec__hash").expect("codec__hash is strict");
    assert_eq!(
        hash["parameters"]["properties"]["key_encoding"]["anyOf"].as_array().unwrap().last().unwrap()["type"],
        "null"
    );
    let (_, _, body) = get(&app, "/v1/export/openai?strict=true", &[]).await;
    assert!(json_of(&body).as_array().unwrap().iter().any(|t| t["function"]["strict"] == true));

    let call = |body: &'static str| {
        Request::post("/v1/tools/codec__hash/call")
            .header("content-type", "application/json")
            .body(Body::from(body))
            .unwrap()
    };
    let (status, _, plain) = send(&app, call(r#"{"data": "x", "algorithm": "sha256"}"#)).await;
    assert_eq!(status, StatusCode::OK);
    let strict_call =
        r#"{"data": "x", "algorithm": "sha256", "input_encoding": null, "hmac_key": null, "key_encoding": null}"#;
    let (status, _, nulls) = send(&app, call(strict_call)).await;
    assert_eq!(status, StatusCode::OK, "{}", String::from_utf8_lossy(&nulls));
    assert_eq!(json_of(&plain)["value"], json_of(&nulls)["value"]);
    // A required argument given as null is still the caller's mistake.
    let (status, _, _) = send(&app, call(r#"{"data": null, "algorithm": "sha256"}"#)).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
}

/// With `[audit] path` set, every call is a line in the file and in
/// `GET /v1/audit` (newest last, filtered by resource).
#[tokio::test]
async fn the_rest_api_serves_the_audit_log() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("audit.jsonl");
    let t = TestHost::builder().bundled().config(&format!("[audit]\npath = \"{}\"", log.display())).build();
    let app = router(&t.host, &HttpOptions::default(), CancellationToken::new()).unwrap();
    for body in [r#"{"expression": "6 * 7"}"#, r#"{"expression": "1 +"}"#] {
        let call = Request::post("/v1/tools/calc__evaluate/call")
            .header("content-type", "application/json")
            .body(Body::from(body))
            .unwrap();
        send(&app, call).await;
    }
    let hashed = Request::post("/v1/tools/codec__hash/call")
        .header("content-type", "application/json")
        .body(Body::from(r#"{"data": "x", "algorithm": "sha256", "hmac_key": "webhook-signing-key"}"#))
        .unwrap();
    assert_eq!(send(&app, hashed).await.0, StatusCode::OK);

    let (status, _, body) = get(&app, "/v1/audit?resource=calc&limit=10", &[]).await;
    assert_eq!(status, StatusCode::OK);
    let records = json_of(&body);
    let records = records.as_array().unwrap();
    assert_eq!(records.len(), 2, "{records:?}");
    assert_eq!((&records[0]["action"], &records[0]["outcome"]), (&json!("evaluate"), &json!("ok")));
    assert_eq!(records[1]["outcome"], "invalid_input");
    assert_eq!(records[0]["params"], json!({ "expression": "6 * 7" }));
    let (_, _, body) = get(&app, "/v1/audit?limit=1", &[]).await;
    let hashed = json_of(&body);
    assert_eq!((&hashed[0]["resource"], &hashed[0]["params"]["hmac_key"]), (&json!("codec"), &json!("[redacted]")));
    assert!(!std::fs::read_to_string(&log).unwrap().contains("webhook-signing-key"));
    assert_eq!(std::fs::read_to_string(&log).unwrap().lines().count(), 3);
    let (_, _, body) = get(&app, "/v1/openapi.json", &[]).await;
    assert!(json_of(&body)["paths"]["/v1/audit"]["get"].is_object());
}

/// `GET /` and `GET /v1/` say where each face is, instead of an empty 404.
#[tokio::test]
async fn the_root_says_where_each_face_is() {
    let t = TestHost::builder().build();
    let app = router(&t.host, &HttpOptions::default(), CancellationToken::new()).unwrap();
    for path in ["/", "/v1/"] {
        let (status, _, body) = get(&app, path, &[]).await;
        assert_eq!(status, StatusCode::OK, "{path}");
        let index = json_of(&body);
        assert_eq!((&index["openapi"], &index["mcp"]), (&json!("/v1/openapi.json"), &json!("/mcp")), "{index}");
        // Each link it gives is served.
        for link in ["openapi", "tools", "prompt", "status"] {
            let (status, _, _) = get(&app, index[link].as_str().unwrap(), &[]).await;
            assert_eq!(status, StatusCode::OK, "{link}");
        }
    }
}
