//! The request headers a guest may set: an allow-list. The standard
//! content and negotiation headers any API reads ([`STANDARD`]), and the
//! ones this connector's API declares: the header parameters of its
//! OpenAPI document, or `allow_headers` in its section. A request with any
//! other header is refused before it is sent ([`HEADER_REFUSAL`], which
//! the SDK reports as `denied`, naming the header).
//!
//! Never on the list, whatever a document or an operator says: what the
//! host owns; a guest cannot even set those (wasi-http's `forbidden` header
//! error; the same filter keeps them out of the responses a guest reads). Credentials and routing ([`Credential::forbids`]:
//! `Authorization`, `Cookie`, `Host`, the credential's own header in any
//! spelling a server may read as it) and the W3C trace context
//! (`traceparent`, `tracestate`, `baggage`), which the host sets from the
//! call's span.

use std::sync::Arc;

use http::HeaderName;

use super::credentials::Credential;
#[cfg(doc)]
use crate::contract::HEADER_REFUSAL;
use crate::telemetry::context::{BAGGAGE, TRACEPARENT, TRACESTATE};

/// What any connector may send: content description, content negotiation,
/// conditional and range requests, caching, and the request's own
/// identity.
pub const STANDARD: [&str; 17] = [
    "accept",
    "accept-encoding",
    "accept-language",
    "cache-control",
    "content-encoding",
    "content-language",
    "content-length",
    "content-type",
    "idempotency-key",
    "if-match",
    "if-modified-since",
    "if-none-match",
    "if-range",
    "if-unmodified-since",
    "prefer",
    "range",
    "user-agent",
];

/// Whether the host owns `name` on a connector with `credentials`: it
/// sets the header itself, so no guest, document or operator may.
pub(crate) fn host_owned(credentials: &[Arc<Credential>], name: &HeaderName) -> bool {
    Credential::forbids(credentials, name) || [TRACEPARENT, TRACESTATE, BAGGAGE].contains(&name.as_str())
}

/// Whether a guest may set `name`: not the host's, and standard or one
/// its API declares (`declared`).
pub(crate) fn guest_may_set(credentials: &[Arc<Credential>], declared: &[HeaderName], name: &HeaderName) -> bool {
    !host_owned(credentials, name) && (STANDARD.contains(&name.as_str()) || declared.contains(name))
}

/// Why a request with the header `name` is refused, for the guest (and
/// through it the model): what a connector may send, and how an operator
/// allows more.
pub(crate) fn refusal(name: &HeaderName) -> String {
    format!(
        "the header `{name}` is not one this connector may send: only standard content headers (Accept, \
         Content-Type, If-None-Match...) and the ones its API declares (the OpenAPI document's header \
         parameters, or `allow_headers` in its [connectors] section); send the request without it"
    )
}

/// Whether no guest may set the header `name` on any connector, whatever
/// its credentials: what the host owns ([`host_owned`]: `Authorization`,
/// `Proxy-Authorization`, `Cookie`, `Host`, what `wasi-http` refuses
/// itself, and the trace context). A name that is not a valid header name
/// cannot be set either. An OpenAPI document's header parameters of these
/// names are not offered to the model.
pub fn forbidden_to_guests(name: &str) -> bool {
    HeaderName::from_bytes(name.as_bytes()).map_or(true, |name| host_owned(&[], &name))
}

/// `names`, the headers an API declares, checked: each a valid header
/// name the host does not own (with no credential in mind: the
/// connector's own are checked when a request is sent).
pub(crate) fn declared(names: &[String]) -> Result<Arc<[HeaderName]>, String> {
    let mut checked = Vec::with_capacity(names.len());
    for name in names {
        let header = HeaderName::from_bytes(name.trim().as_bytes())
            .map_err(|_| format!("allow_headers: `{name}` is not a header name"))?;
        if host_owned(&[], &header) {
            return Err(format!(
                "allow_headers: the host sets `{name}` itself (credentials, routing and trace context are its own)"
            ));
        }
        checked.push(header);
    }
    Ok(checked.into())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn name(text: &str) -> HeaderName {
        HeaderName::from_bytes(text.as_bytes()).unwrap()
    }

    #[test]
    fn a_guest_sets_standard_and_declared_headers_only() {
        let declared = declared(&["X-GitHub-Api-Version".into()]).unwrap();
        for allowed in ["content-type", "Accept", "if-none-match", "x-github-api-version"] {
            assert!(guest_may_set(&[], &declared, &name(allowed)), "{allowed}");
        }
        for refused in ["x-forwarded-for", "x-real-ip", "forwarded", "x-custom", "authorization", "cookie", "host"] {
            assert!(!guest_may_set(&[], &declared, &name(refused)), "{refused}");
        }
        for trace in ["traceparent", "tracestate", "baggage"] {
            assert!(!guest_may_set(&[], &declared, &name(trace)), "{trace}");
        }
    }

    #[test]
    fn an_operator_cannot_hand_a_guest_what_the_host_owns() {
        for owned in ["Authorization", "traceparent", "Baggage", "cookie", "host", "proxy-authorization"] {
            let error = declared(&[owned.into()]).unwrap_err();
            assert!(error.contains("the host sets"), "{owned}: {error}");
        }
        assert!(declared(&["bad header".into()]).unwrap_err().contains("not a header name"));
    }
}
