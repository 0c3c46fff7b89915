//! W3C trace context in and out: read from a request's `params._meta`
//! (SEP-414) or its HTTP headers, written into an upstream call's `_meta`
//! and a connector request's headers.
//!
//! What a client sends is bounded before it is parsed: a `traceparent` is
//! 55 characters, a `tracestate` at most 32 members in 512, a `baggage` at
//! most 64 members in 8,192 bytes (the W3C limits); a longer value is
//! ignored whole, and so is a value that would be written on past them
//! (baggage read within its limit can grow when it is percent-encoded
//! again: found by the fuzz target). The parsing itself is the OpenTelemetry
//! propagators'. A baggage value is never logged; it travels on only where the operator
//! said so (a connector's `baggage = true`; upstream MCP servers, the
//! operator's own, get it in `_meta`).

use opentelemetry::Context;
use opentelemetry::propagation::{Extractor, Injector, TextMapCompositePropagator, TextMapPropagator};
use opentelemetry_sdk::propagation::{BaggagePropagator, TraceContextPropagator};
use serde_json::{Map, Value};

/// The three keys, in `_meta` and as HTTP header names.
pub const TRACEPARENT: &str = "traceparent";
/// See [`TRACEPARENT`].
pub const TRACESTATE: &str = "tracestate";
/// See [`TRACEPARENT`].
pub const BAGGAGE: &str = "baggage";

/// Longest value read of each key (W3C limits; 55 is a version-00
/// `traceparent`, a later version may be longer, up to 256 here).
fn limit(key: &str) -> usize {
    match key {
        TRACEPARENT => 256,
        TRACESTATE => 512,
        _ => 8192,
    }
}

fn propagator() -> TextMapCompositePropagator {
    TextMapCompositePropagator::new(vec![Box::new(TraceContextPropagator::new()), Box::new(BaggagePropagator::new())])
}

/// A carrier's three values, each present only when it is a string within
/// its limit.
struct Bounded<'a>([Option<&'a str>; 3]);

impl<'a> Bounded<'a> {
    fn read(mut get: impl FnMut(&str) -> Option<&'a str>) -> Self {
        Bounded([TRACEPARENT, TRACESTATE, BAGGAGE].map(|key| get(key).filter(|v| v.len() <= limit(key))))
    }

    fn is_empty(&self) -> bool {
        self.0.iter().all(Option::is_none)
    }
}

impl Extractor for Bounded<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        match key {
            TRACEPARENT => self.0[0],
            TRACESTATE => self.0[1],
            BAGGAGE => self.0[2],
            _ => None,
        }
    }

    fn keys(&self) -> Vec<&str> {
        [TRACEPARENT, TRACESTATE, BAGGAGE]
            .into_iter()
            .zip(self.0)
            .filter(|(_, v)| v.is_some())
            .map(|(k, _)| k)
            .collect()
    }
}

/// The context a request's `_meta` carries, if it carries one.
pub fn from_meta(meta: &Map<String, Value>) -> Option<Context> {
    let carried = Bounded::read(|key| meta.get(key).and_then(Value::as_str));
    (!carried.is_empty()).then(|| propagator().extract(&carried))
}

/// The context an HTTP request's headers carry, if they carry one.
pub fn from_headers(headers: &http::HeaderMap) -> Option<Context> {
    let carried = Bounded::read(|key| headers.get(key).and_then(|v| v.to_str().ok()));
    (!carried.is_empty()).then(|| propagator().extract(&carried))
}

/// Whether `cx` names a span (a valid `traceparent` was read).
pub fn has_span(cx: &Context) -> bool {
    use opentelemetry::trace::TraceContextExt as _;
    cx.span().span_context().is_valid()
}

tokio::task_local! {
    /// The context the request being served carried (see [`carrying`]).
    static CARRIED: Context;
}

/// Run `future` (a request's work) with the context the request carried,
/// if any, to pass on where no span of Quiver's records it.
pub async fn carrying<F: std::future::Future>(carried: Option<Context>, future: F) -> F::Output {
    match carried.filter(has_span) {
        Some(cx) => CARRIED.scope(cx, future).await,
        None => future.await,
    }
}

/// The context to pass on from within `span`: its own when Quiver records
/// it (an exporter runs); else the one the request carried, unchanged (a
/// hop that does not trace passes the caller's trace on as it got it, as
/// W3C Trace Context asks); else none.
pub fn of(span: &tracing::Span) -> Context {
    use tracing_opentelemetry::OpenTelemetrySpanExt as _;
    let own = if span.is_disabled() { Context::new() } else { span.context() };
    if has_span(&own) { own } else { CARRIED.try_with(Context::clone).unwrap_or(own) }
}

/// The W3C trace id (32 hex digits) of the context [`of`] `span` gives,
/// if there is one.
pub fn trace_id(span: &tracing::Span) -> Option<String> {
    use opentelemetry::trace::TraceContextExt as _;
    let cx = of(span);
    let context = cx.span().span_context().clone();
    context.is_valid().then(|| context.trace_id().to_string())
}

struct MetaInjector<'a>(&'a mut Map<String, Value>);

impl Injector for MetaInjector<'_> {
    fn set(&mut self, key: &str, value: String) {
        if value.len() <= limit(key) {
            self.0.insert(key.to_owned(), Value::String(value));
        }
    }
}

/// Write `cx` into an outgoing request's `_meta` (trace context and
/// baggage): for upstream MCP servers.
pub fn into_meta(cx: &Context, meta: &mut Map<String, Value>) {
    if has_span(cx) {
        propagator().inject_context(cx, &mut MetaInjector(meta));
    }
}

struct HeaderInjector<'a>(&'a mut http::HeaderMap, bool);

impl Injector for HeaderInjector<'_> {
    fn set(&mut self, key: &str, value: String) {
        if (key != BAGGAGE || self.1)
            && value.len() <= limit(key)
            && let (Ok(name), Ok(value)) = (http::HeaderName::try_from(key), http::HeaderValue::try_from(value))
        {
            self.0.insert(name, value);
        }
    }
}

/// Write `cx` into an outgoing HTTP request's headers, replacing any a
/// guest set: `traceparent` and `tracestate` always, `baggage` only when
/// `baggage` (it can carry user data to a third party).
pub fn into_headers(cx: &Context, headers: &mut http::HeaderMap, baggage: bool) {
    for key in [TRACEPARENT, TRACESTATE, BAGGAGE] {
        headers.remove(key);
    }
    if has_span(cx) {
        propagator().inject_context(cx, &mut HeaderInjector(headers, baggage));
    }
}

#[cfg(test)]
mod tests {
    use opentelemetry::baggage::BaggageExt as _;
    use opentelemetry::trace::TraceContextExt as _;
    use serde_json::json;

    use super::*;

    const PARENT: &str = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";

    fn meta(value: Value) -> Map<String, Value> {
        value.as_object().unwrap().clone()
    }

    #[test]
    fn a_context_in_meta_is_read_and_written_on() {
        let cx =
            from_meta(&meta(json!({"traceparent": PARENT, "tracestate": "congo=t61rcWkgMzE", "baggage": "user=42"})))
                .unwrap();
        assert_eq!(cx.span().span_context().trace_id().to_string(), "0af7651916cd43dd8448eb211c80319c");
        assert_eq!(cx.baggage().get("user").map(|v| v.to_string()), Some("42".into()));
        let mut out = Map::new();
        into_meta(&cx, &mut out);
        assert_eq!(out["traceparent"], PARENT);
        assert_eq!(out["tracestate"], "congo=t61rcWkgMzE");
        assert_eq!(out["baggage"], "user=42");
    }

    #[test]
    fn headers_get_baggage_only_when_allowed_and_never_a_guests_own() {
        let cx = from_meta(&meta(json!({"traceparent": PARENT, "baggage": "user=42"}))).unwrap();
        let mut headers = http::HeaderMap::new();
        headers.insert("traceparent", "00-11111111111111111111111111111111-2222222222222222-01".parse().unwrap());
        headers.insert("baggage", "forged=1".parse().unwrap());
        into_headers(&cx, &mut headers, false);
        assert_eq!(headers["traceparent"], PARENT);
        assert!(headers.get("baggage").is_none());
        into_headers(&cx, &mut headers, true);
        assert_eq!(headers["baggage"], "user=42");
        // No context: the guest's forged header is gone all the same.
        headers.insert("traceparent", PARENT.parse().unwrap());
        into_headers(&Context::new(), &mut headers, true);
        assert!(headers.is_empty());
    }

    #[test]
    fn baggage_that_grows_past_the_limit_when_encoded_is_not_written_on() {
        // 8,100 bytes read, with control characters that become `%00` again.
        let baggage = format!("k={}{}", "v".repeat(7_900), "\u{0}".repeat(150));
        let cx = from_meta(&meta(json!({"traceparent": PARENT, "baggage": baggage}))).unwrap();
        let mut out = Map::new();
        into_meta(&cx, &mut out);
        assert_eq!(out["traceparent"], PARENT);
        assert!(out.get("baggage").is_none(), "{} bytes written", out["baggage"].as_str().unwrap_or("").len());
        let mut headers = http::HeaderMap::new();
        into_headers(&cx, &mut headers, true);
        assert!(headers.get("baggage").is_none() && headers.get("traceparent").is_some());
    }

    #[tokio::test]
    async fn without_a_recorded_span_the_carried_context_is_passed_on_unchanged() {
        let carried = from_meta(&meta(json!({"traceparent": PARENT, "baggage": "user=42"})));
        let written = carrying(carried, async {
            let mut out = Map::new();
            into_meta(&of(&tracing::Span::none()), &mut out);
            out
        })
        .await;
        assert_eq!((&written["traceparent"], &written["baggage"]), (&json!(PARENT), &json!("user=42")));
        // Outside a request that carried one: nothing.
        let mut out = Map::new();
        into_meta(&of(&tracing::Span::none()), &mut out);
        assert!(out.is_empty());
    }

    #[test]
    fn what_is_no_context_reads_as_none_or_no_span() {
        assert!(from_meta(&meta(json!({"progressToken": 1}))).is_none());
        let garbage = from_meta(&meta(json!({"traceparent": "00-zz-yy-01"}))).unwrap();
        assert!(!has_span(&garbage));
        let long = format!("{PARENT}{}", " ".repeat(300));
        assert!(from_meta(&meta(json!({"traceparent": long}))).is_none());
        assert!(from_meta(&meta(json!({"traceparent": 7}))).is_none());
    }
}
