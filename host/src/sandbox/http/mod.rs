//! The `http` capability: outbound HTTP for connectors, deny by default,
//! allow what the operator listed.
//!
//! Grant: [`HttpGrant`], the plugin's `allow_http` list. Per-call state:
//! [`HttpState`], wasi-http's context plus [`HttpPolicy`], the hooks every
//! request passes. `wasi:http/outgoing-handler` is a connector's only way
//! out (raw sockets are never granted) and only connectors are linked with
//! it. Every request, including each redirect hop the guest follows itself,
//! passes [`HttpPolicy::send_request`], which checks scheme, host and port
//! against the allow-list before any connection is made. A refused request
//! reaches the guest as the typed WASI error `HTTP-request-denied`, not as a
//! trap.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use http::uri::Scheme;
use http_body_util::BodyExt;
use wasmtime::component::{Linker, ResourceTable};
use wasmtime_wasi_http::{
    Error as HttpError, RequestOptions, WasiBody, WasiHttpCtx, WasiHttpCtxView, WasiHttpHooks, WasiHttpView,
};

/// Add `wasi:http/outgoing-handler` to `linker` (connectors only; it goes
/// on top of the [WASI baseline](super::wasi)).
pub(crate) fn link<T: WasiHttpView + 'static>(linker: &mut Linker<T>) -> wasmtime::Result<()> {
    wasmtime_wasi_http::p2::add_only_http_to_linker_async(linker)
}

/// Where a plugin may send requests: its `allow_http` list.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HttpGrant {
    allowed: Arc<[AllowedHost]>,
}

impl HttpGrant {
    /// Allow exactly `allowed`.
    pub fn new(allowed: Vec<AllowedHost>) -> HttpGrant {
        HttpGrant { allowed: allowed.into() }
    }

    /// Parse `allow_http` entries; the error names the bad entry.
    pub fn parse(entries: &[String]) -> Result<HttpGrant, String> {
        entries.iter().map(|e| e.parse()).collect::<Result<Vec<AllowedHost>, String>>().map(HttpGrant::new)
    }

    /// The allowed destinations.
    pub fn allowed(&self) -> &[AllowedHost] {
        &self.allowed
    }

    fn allows(&self, uri: &http::Uri) -> bool {
        self.allowed.iter().any(|a| a.matches(uri))
    }
}

/// One allowed destination: scheme, host and port, e.g.
/// `https://api.github.com` or `http://127.0.0.1:8080`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AllowedHost {
    https: bool,
    host: String,
    port: u16,
}

impl std::str::FromStr for AllowedHost {
    type Err = String;

    /// Parse `https://host[:port]`, `http://host[:port]` or a bare
    /// `host[:port]` (which means HTTPS).
    fn from_str(entry: &str) -> Result<Self, String> {
        let (https, rest) = match entry.split_once("://") {
            Some(("https", rest)) => (true, rest),
            Some(("http", rest)) => (false, rest),
            Some((other, _)) => return Err(format!("`{entry}`: scheme `{other}` is not http or https")),
            None => (true, entry),
        };
        let authority: http::uri::Authority =
            rest.trim_end_matches('/').parse().map_err(|e| format!("`{entry}`: {e}"))?;
        if authority.as_str().contains('@') || rest.trim_end_matches('/').contains('/') {
            return Err(format!("`{entry}`: give scheme, host and port only"));
        }
        Ok(Self {
            https,
            host: authority.host().to_ascii_lowercase(),
            port: authority.port_u16().unwrap_or(if https { 443 } else { 80 }),
        })
    }
}

impl AllowedHost {
    fn matches(&self, uri: &http::Uri) -> bool {
        let https = uri.scheme() == Some(&Scheme::HTTPS);
        let Some(host) = uri.host() else { return false };
        let port = uri.port_u16().unwrap_or(if https { 443 } else { 80 });
        self.https == https && self.host.eq_ignore_ascii_case(host) && self.port == port
    }
}

/// Longest a connection attempt or a silent upstream may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
const BYTE_TIMEOUT: Duration = Duration::from_secs(30);

/// The `http` capability's per-call state.
pub(crate) struct HttpState {
    ctx: WasiHttpCtx,
    policy: HttpPolicy,
}

impl HttpState {
    pub(crate) fn new(grant: &HttpGrant) -> HttpState {
        HttpState { ctx: WasiHttpCtx::new(), policy: HttpPolicy { grant: grant.clone() } }
    }
}

impl HttpState {
    /// The view wasi-http works through: its context, the store's resource
    /// table, and this call's hooks.
    pub(crate) fn view<'a>(&'a mut self, table: &'a mut ResourceTable) -> WasiHttpCtxView<'a> {
        WasiHttpCtxView { ctx: &mut self.ctx, table, hooks: &mut self.policy }
    }
}

/// The `wasi:http` hooks of one call: the embedder's seam in wasi-http.
#[derive(Debug, Clone, Default)]
pub(crate) struct HttpPolicy {
    grant: HttpGrant,
}

type SendFuture = Box<
    dyn Future<
            Output = wasmtime_wasi_http::Result<(
                http::Response<WasiBody>,
                Box<dyn Future<Output = Result<(), HttpError>> + Send>,
            )>,
        > + Send,
>;

impl WasiHttpHooks for HttpPolicy {
    fn send_request(
        &mut self,
        request: http::Request<WasiBody>,
        options: Option<RequestOptions>,
        fut: Box<dyn Future<Output = Result<(), HttpError>> + Send>,
    ) -> SendFuture {
        drop(fut);
        if !self.grant.allows(request.uri()) {
            tracing::info!(uri = %request.uri(), "outbound request denied: not in the plugin's allow-list");
            return Box::new(async { Err(HttpError::HttpRequestDenied) });
        }
        let options = RequestOptions {
            connect_timeout: Some(clamp(options.as_ref().and_then(|o| o.connect_timeout), CONNECT_TIMEOUT)),
            first_byte_timeout: Some(clamp(options.as_ref().and_then(|o| o.first_byte_timeout), BYTE_TIMEOUT)),
            between_bytes_timeout: Some(clamp(options.as_ref().and_then(|o| o.between_bytes_timeout), BYTE_TIMEOUT)),
        };
        Box::new(async move {
            let (response, io) = wasmtime_wasi_http::default_send_request(request, Some(options)).await?;
            Ok((
                response.map(BodyExt::boxed_unsync),
                Box::new(io) as Box<dyn Future<Output = Result<(), HttpError>> + Send>,
            ))
        })
    }
}

fn clamp(requested: Option<Duration>, max: Duration) -> Duration {
    requested.map_or(max, |r| r.min(max))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_grant_allows_only_its_entries() {
        let grant = HttpGrant::parse(&["http://127.0.0.1:8080".to_owned()]).unwrap();
        assert!(grant.allows(&"http://127.0.0.1:8080/x".parse().unwrap()));
        assert!(!grant.allows(&"http://127.0.0.1:8081/x".parse().unwrap()));
        assert!(!HttpGrant::default().allows(&"http://127.0.0.1:8080/x".parse().unwrap()));
        let error = HttpGrant::parse(&["ftp://x".to_owned()]).unwrap_err();
        assert!(error.contains("ftp://x"), "{error}");
    }

    #[test]
    fn parses_and_matches_allow_entries() {
        let a: AllowedHost = "api.example.com".parse().unwrap();
        assert!(a.matches(&"https://api.example.com/v1".parse().unwrap()));
        assert!(a.matches(&"https://API.example.com:443/".parse().unwrap()));
        assert!(!a.matches(&"http://api.example.com/".parse().unwrap()));
        assert!(!a.matches(&"https://api.example.com:8443/".parse().unwrap()));
        assert!(!a.matches(&"https://evil.example.com/".parse().unwrap()));
        let local: AllowedHost = "http://127.0.0.1:8080".parse().unwrap();
        assert!(local.matches(&"http://127.0.0.1:8080/x".parse().unwrap()));
        assert!(!local.matches(&"https://127.0.0.1:8080/x".parse().unwrap()));
        assert!("ftp://x".parse::<AllowedHost>().is_err());
        assert!("https://user@host".parse::<AllowedHost>().is_err());
        assert!("https://host/path".parse::<AllowedHost>().is_err());
    }
}
