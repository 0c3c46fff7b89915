//! The HTTP capability: its linking, a call's state, the wasi-http hooks
//! every outgoing request passes, and the statuses a call's requests got
//! (part of how the call ended, see the store's `finish`).

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use http::HeaderName;
use wasmtime::component::{Linker, ResourceTable};
use wasmtime_wasi_http::{
    Error as HttpError, ForbiddenHeaderFilter, RequestOptions, WasiBody, WasiHttpCtx, WasiHttpCtxView, WasiHttpHooks,
    WasiHttpView,
};

use super::credentials::Credential;
use super::credentials::NotApplied;
use super::grant::HttpGrant;
use super::guard::{Resolve, SystemResolver};
use crate::contract::{CREDENTIAL_REFUSAL, HEADER_REFUSAL};
use crate::sandbox::secrets::Secret;

/// What one call's requests met: the statuses of the responses it
/// received, in order, and how many requests the host refused. Written by
/// the hooks as each request ends, read when the call ends.
#[derive(Debug, Default, Clone)]
struct Tally(Arc<std::sync::Mutex<(Vec<u16>, u32)>>);

impl Tally {
    fn lock(&self) -> std::sync::MutexGuard<'_, (Vec<u16>, u32)> {
        self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn push(&self, status: u16) {
        self.lock().0.push(status);
    }

    fn refused(&self) {
        self.lock().1 += 1;
    }

    fn take(&self) -> (Vec<u16>, u32) {
        std::mem::take(&mut *self.lock())
    }
}

/// Add `wasi:http/outgoing-handler` to `linker` (connectors only; it goes
/// on top of the [WASI baseline](super::wasi)).
pub(crate) fn link<T: WasiHttpView + 'static>(linker: &mut Linker<T>) -> wasmtime::Result<()> {
    wasmtime_wasi_http::p2::add_only_http_to_linker_async(linker)
}

/// The `http` capability's per-call state.
pub(crate) struct HttpState {
    ctx: WasiHttpCtx,
    policy: HttpPolicy,
}

impl HttpState {
    pub(crate) fn new(grant: &HttpGrant) -> HttpState {
        let policy = HttpPolicy {
            grant: grant.clone(),
            resolver: Arc::new(SystemResolver),
            tally: Tally::default(),
            sent: false,
        };
        HttpState { ctx: WasiHttpCtx::new(), policy }
    }

    /// Whether a request was ever sent (or refused) through this store: its
    /// request or response body may still be running on its own task, so
    /// such a store is never kept for another call.
    pub(crate) fn sent(&self) -> bool {
        self.policy.sent
    }

    /// The statuses of the responses this call received, in order
    /// (redirect hops included), and how many requests were refused.
    pub(crate) fn tally(&self) -> (Vec<u16>, u32) {
        self.policy.tally.take()
    }

    /// The view wasi-http works through: its context, the store's resource
    /// table, and this call's hooks.
    pub(crate) fn view<'a>(&'a mut self, table: &'a mut ResourceTable) -> WasiHttpCtxView<'a> {
        WasiHttpCtxView { ctx: &mut self.ctx, table, hooks: &mut self.policy }
    }
}

/// The `wasi:http` hooks of one call: the embedder's seam in wasi-http.
#[derive(Debug, Clone)]
pub(crate) struct HttpPolicy {
    grant: HttpGrant,
    resolver: Arc<dyn Resolve>,
    tally: Tally,
    /// Whether a request went through [`send_request`](WasiHttpHooks::send_request).
    sent: bool,
}

type SendFuture =
    Box<dyn Future<Output = wasmtime_wasi_http::Result<(http::Response<WasiBody>, super::send::Driver)>> + Send>;

impl WasiHttpHooks for HttpPolicy {
    fn forbidden_header_filter(&mut self) -> ForbiddenHeaderFilter {
        let credentials: Arc<[Arc<Credential>]> = self.grant.credentials().into();
        Arc::new(move |name: &HeaderName| super::headers::host_owned(&credentials, name))
    }

    fn send_request(
        &mut self,
        mut request: http::Request<WasiBody>,
        options: Option<RequestOptions>,
        fut: Box<dyn Future<Output = Result<(), HttpError>> + Send>,
    ) -> SendFuture {
        drop(fut);
        self.sent = true;
        // The rest of what a guest sets must be on the allow-list (wasi-http
        // applies the filter above to responses too, so it holds only what
        // the host owns). What the host owns and finds here, wasi-http set
        // (`host`): no guest could.
        let credentials = self.grant.credentials();
        if let Some(name) = request.headers().keys().find(|name| {
            !super::headers::host_owned(credentials, name)
                && !super::headers::guest_may_set(credentials, &self.grant.guest_headers, name)
        }) {
            let why = super::headers::refusal(name);
            tracing::info!(header = %name, "outbound request refused");
            self.tally.refused();
            return Box::new(std::future::ready(Err(HttpError::InternalError(Some(format!("{HEADER_REFUSAL}{why}"))))));
        }
        let tally = self.tally.clone();
        let grant = self.grant.clone();
        let resolver = self.resolver.clone();
        let limits = super::send::Limits {
            connect: clamp(options.as_ref().and_then(|o| o.connect_timeout), grant.connect_timeout),
            first_byte: clamp(options.as_ref().and_then(|o| o.first_byte_timeout), grant.byte_timeout),
            between_bytes: clamp(options.as_ref().and_then(|o| o.between_bytes_timeout), grant.byte_timeout),
            max_body: grant.max_response_bytes,
        };
        // The request's CLIENT span, under the guest call's; the trace
        // headers are the host's (a guest's own are dropped), baggage only
        // where the operator allowed it.
        let span = crate::telemetry::spans::egress(request.method().as_str(), request.uri().host().unwrap_or_default());
        let context = crate::telemetry::context::of(&span);
        crate::telemetry::context::into_headers(&context, request.headers_mut(), grant.baggage);
        let sending = async move {
            let addresses = match super::guard::destination(&grant, request.uri(), resolver.as_ref()).await {
                Ok(addresses) => addresses,
                Err(refusal) => {
                    tracing::info!(uri = %request.uri(), ?refusal, "outbound request refused");
                    tally.refused();
                    crate::telemetry::spans::egress_ended(&tracing::Span::current(), Err("refused"));
                    return Err(refusal.to_wasi());
                }
            };
            // What a response may echo of the credentials, to be redacted:
            // every credential's fixed forms, and what this request carries.
            let mut echoed: Vec<Secret> = grant.credentials().iter().flat_map(|c| c.echoed_forms(None)).collect();
            for credential in grant.credentials_for(request.uri()) {
                let value = match (credential.fixed(), credential.oauth2()) {
                    (Some(value), _) => Ok(value.clone()),
                    (None, Some(client)) => super::token::authorization(client, &grant, resolver.as_ref())
                        .await
                        .map_err(NotApplied::Unavailable),
                    (None, None) => Err(NotApplied::Unavailable("the credential has no value".into())),
                };
                match value.and_then(|value| credential.apply(&value, &mut request).map(|()| value)) {
                    Ok(sent) => echoed.extend(credential.echoed_forms(Some(&sent))),
                    Err(NotApplied::Refused(why)) => {
                        tracing::info!(uri = %request.uri().path(), why, "outbound request refused");
                        tally.refused();
                        return Err(HttpError::InternalError(Some(format!("{CREDENTIAL_REFUSAL}{why}"))));
                    }
                    Err(NotApplied::Unavailable(why)) => {
                        tracing::warn!(%why, "no credential for an outbound request");
                        return Err(HttpError::InternalError(Some(format!("the connector's credential: {why}"))));
                    }
                }
            }
            let sent = super::send::send(request, &addresses, limits).await;
            match &sent {
                Ok((response, _)) => {
                    tally.push(response.status().as_u16());
                    crate::telemetry::spans::egress_ended(&tracing::Span::current(), Ok(response.status().as_u16()));
                }
                Err(_) => crate::telemetry::spans::egress_ended(&tracing::Span::current(), Err("transport")),
            }
            // One list whatever the request's origin, so that the cached
            // redaction serves every request of the connector.
            echoed.sort_unstable_by(|a, b| a.expose().cmp(b.expose()));
            echoed.dedup();
            match sent {
                Ok((response, driver)) if !echoed.is_empty() => {
                    let redaction = grant.echoes.redaction(echoed);
                    let response =
                        if redaction.is_empty() { response } else { super::redact::response(response, redaction) };
                    Ok((response, driver))
                }
                other => other,
            }
        };
        Box::new(tracing::Instrument::instrument(sending, span))
    }
}

fn clamp(requested: Option<Duration>, max: Duration) -> Duration {
    requested.map_or(max, |r| r.min(max))
}
