//! Every action of every bundled plugin, called through the host with a
//! realistic input, and checked against a known answer.

use serde_json::{Value, json};

use quiver_tests::TestHost;

/// `actual` has every field of `expected` (recursively; arrays element-wise).
fn contains(actual: &Value, expected: &Value) -> bool {
    match (actual, expected) {
        (Value::Object(a), Value::Object(e)) => e.iter().all(|(k, v)| a.get(k).is_some_and(|av| contains(av, v))),
        (Value::Array(a), Value::Array(e)) => a.len() == e.len() && a.iter().zip(e).all(|(x, y)| contains(x, y)),
        _ => actual == expected,
    }
}

/// (plugin, action, input, part of the expected output).
fn cases() -> Vec<(&'static str, &'static str, Value, Value)> {
    vec![
        ("calc", "evaluate", json!({"expression": "2 * (3 + 4)"}), json!({"value": 14})),
        ("calc", "evaluate", json!({"expression": "max(1, 7) > 5 && true"}), json!({"value": true})),
        (
            "codec",
            "hash",
            json!({"data": "abc", "algorithm": "sha256"}),
            json!({"hex": "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"}),
        ),
        (
            "codec",
            "hash",
            json!({"data": "what do ya want for nothing?", "algorithm": "sha256", "hmac_key": "Jefe"}),
            json!({"hex": "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"}),
        ),
        ("codec", "encode", json!({"data": "hello?", "scheme": "base64"}), json!({"text": "aGVsbG8/"})),
        ("codec", "decode", json!({"data": "a%20b%26c", "scheme": "url"}), json!({"text": "a b&c"})),
        (
            "codec",
            "uuid",
            json!({"version": "v5", "namespace": "dns", "name": "example.com"}),
            json!({"uuids": ["cfbff0d1-9375-5685-968c-48ce8b15ae17"]}),
        ),
        ("datetime", "now", json!({"time_zone": "Asia/Tokyo"}), json!({"time_zone": "Asia/Tokyo", "offset": "+09:00"})),
        (
            "datetime",
            "convert",
            json!({"timestamp": "2024-06-01T12:00:00Z", "to_time_zone": "Europe/Paris"}),
            json!({"rfc3339": "2024-06-01T14:00:00+02:00", "dst": true}),
        ),
        (
            "datetime",
            "add",
            json!({"timestamp": "2024-03-09T12:00:00[America/New_York]", "duration": "1 day"}),
            json!({"rfc3339": "2024-03-10T12:00:00-04:00"}),
        ),
        (
            "datetime",
            "difference",
            json!({"start": "2024-01-01T00:00:00Z", "end": "2024-03-02T06:00:00Z"}),
            json!({"days": 61, "hours": 6}),
        ),
        (
            "datetime",
            "format",
            json!({"timestamp": "2024-06-01T14:30:00Z", "format": "%A %d %B %Y"}),
            json!({"text": "Saturday 01 June 2024"}),
        ),
        (
            "json",
            "query",
            json!({"filter": ".items[] | select(.price > 10) | .name", "input": {"items": [
                {"name": "a", "price": 5}, {"name": "b", "price": 20}, {"name": "c", "price": 30}]}}),
            json!({"outputs": ["b", "c"], "truncated": false}),
        ),
        (
            "json",
            "format",
            json!({"json": "{\"b\": 1, \"a\": [1, 2]}", "style": "minify"}),
            json!({"json": "{\"b\":1,\"a\":[1,2]}"}),
        ),
        (
            "template",
            "render",
            json!({"template": "{% for u in users %}{{ u.name|upper }};{% endfor %}", "context": {"users": [{"name": "ada"}, {"name": "alan"}]}}),
            json!({"text": "ADA;ALAN;"}),
        ),
        ("text", "stats", json!({"text": "Hello world. Bye!\nNext"}), json!({"words": 4, "lines": 2, "sentences": 3})),
        ("text", "change_case", json!({"text": "userAccountID", "case": "snake"}), json!({"text": "user_account_id"})),
        (
            "text",
            "slugify",
            json!({"text": "Ünïcödé & Friends: Hello World!"}),
            json!({"text": "unicode-friends-hello-world"}),
        ),
        (
            "text",
            "diff",
            json!({"old": "a\nb\nc\n", "new": "a\nB\nc\n"}),
            json!({"identical": false, "lines_added": 1, "lines_removed": 1}),
        ),
        (
            "text",
            "regex_find",
            json!({"pattern": "(\\d{4})-(\\d{2})", "text": "from 2024-01 to 2025-12"}),
            json!({"count": 2, "matches": [{"text": "2024-01"}, {"text": "2025-12"}]}),
        ),
        (
            "text",
            "regex_replace",
            json!({"pattern": "(\\w+)@(\\w+)", "text": "ada@home bob@work", "replacement": "$2:$1"}),
            json!({"text": "home:ada work:bob", "replacements": 2}),
        ),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_bundled_action_answers_correctly() {
    let t = TestHost::builder().bundled().build();
    for (plugin, action, input, expected) in cases() {
        let output = t
            .host
            .call_json(plugin, action, &input)
            .await
            .unwrap_or_else(|e| panic!("{plugin}.{action}({input}): {e}"));
        assert!(contains(&output, &expected), "{plugin}.{action}({input})\n got {output:#}\n want {expected:#}");
    }
    // Every action of the bundled catalog has a case above.
    let covered: Vec<String> = cases().iter().map(|(p, a, _, _)| format!("{p}__{a}")).collect();
    for tool in t.host.catalog().tools() {
        assert!(covered.contains(&tool.name), "bundled tool {} has no test case", tool.name);
    }
}

#[tokio::test]
async fn bad_input_to_bundled_tools_is_a_clear_error() {
    let t = TestHost::builder().bundled().build();
    let cases = [
        ("calc", "evaluate", json!({"expression": "2 +* 3"})),
        ("json", "query", json!({"filter": ".a | foo(1)", "input": {}})),
        ("template", "render", json!({"template": "{{ usr.name }}", "context": {"user": {"name": "x"}}})),
        ("datetime", "now", json!({"time_zone": "Mars/Olympus"})),
        ("text", "regex_find", json!({"pattern": "(unclosed", "text": "x"})),
        ("codec", "decode", json!({"data": "100%", "scheme": "url"})),
    ];
    for (plugin, action, input) in cases {
        let error = t.host.call_json(plugin, action, &input).await.unwrap_err();
        assert!(
            matches!(error, quiver::Error::Guest { kind: quiver::GuestErrorKind::InvalidInput, .. }),
            "{plugin}.{action}({input}): {error}"
        );
    }
}

/// Every bundled plugin carries its `quiver:manifest` section (written by
/// the bundle's build from the plugin crate built natively): every schema
/// is served before anything is compiled, and each plugin's first load
/// finds its `describe()` saying the same (or it would refuse the plugin).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bundled_schemas_are_served_without_compiling() {
    let t = TestHost::builder().bundled().build();
    let session = t.host.session(None).unwrap();
    let definitions = session.definitions().await;
    let names: Vec<&str> = definitions.iter().map(|d| d.name.as_str()).collect();
    for tool in ["calc__evaluate", "json__query", "template__render", "datetime__convert", "text__slugify"] {
        assert!(names.contains(&tool), "{tool} is not in {names:?}");
    }
    assert!(definitions.iter().all(|d| d.input_schema["type"] == "object"));
    let stats = t.host.load_stats();
    assert_eq!((stats.compiled(), stats.cache_hits()), (0, 0), "nothing compiled for the schemas");
    let mut loaded = Vec::new();
    t.host
        .preload(|plugin, result| {
            assert!(result.is_ok(), "{}: {:?}", plugin.name(), result);
            assert!(plugin.declared_section().is_some(), "{} has no manifest section", plugin.name());
            loaded.push(plugin.name().to_owned());
        })
        .await;
    assert_eq!(loaded.len(), t.host.catalog().plugins().count(), "{loaded:?}");
}
