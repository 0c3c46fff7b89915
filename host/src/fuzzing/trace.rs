//! The W3C trace-context parsers: what a client sends in `params._meta`
//! or HTTP headers (`traceparent`, `tracestate`, `baggage`), read as the
//! faces read it and written on as the upstream client and the egress hook
//! write it.

use crate::telemetry::context;

/// `data` is up to three lines: a `traceparent`, a `tracestate` and a
/// `baggage` value. Read from `_meta` and from headers alike, never a
/// panic; what is read and written on again reads back as the same span
/// context, and the headers written never exceed the W3C limits nor carry
/// a control character.
pub fn trace_context(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let parts = text.splitn(3, '\n');
    let keys = [context::TRACEPARENT, context::TRACESTATE, context::BAGGAGE];
    let mut meta = serde_json::Map::new();
    let mut headers = http::HeaderMap::new();
    for (key, value) in keys.into_iter().zip(parts) {
        meta.insert(key.to_owned(), serde_json::Value::String(value.to_owned()));
        if let Ok(value) = http::HeaderValue::try_from(value) {
            headers.insert(key, value);
        }
    }
    let _ = context::from_headers(&headers);
    let Some(cx) = context::from_meta(&meta) else { return };
    if !context::has_span(&cx) {
        return;
    }
    let mut written = serde_json::Map::new();
    context::into_meta(&cx, &mut written);
    let again = context::from_meta(&written).expect("a context written is read back");
    use opentelemetry::trace::TraceContextExt as _;
    assert_eq!(again.span().span_context(), cx.span().span_context(), "{written:?}");
    let mut out = http::HeaderMap::new();
    context::into_headers(&cx, &mut out, true);
    for (name, value) in &out {
        assert!(value.len() <= 8192, "{name}: {} bytes", value.len());
        assert!(!value.as_bytes().iter().any(|b| b.is_ascii_control()), "{name}: {value:?}");
    }
}
