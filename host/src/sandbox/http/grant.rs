//! Where a connector may send requests, and what the host adds to them:
//! the allow-list, the connector's own origin with its credential, the
//! per-request time limits and the response cap.

use std::sync::Arc;
use std::time::Duration;

use super::credentials::Credential;
use super::origin::AllowedHost;
use super::redact::Echoes;

/// Longest a connection attempt may take, unless the operator says less.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// Longest wait for the response's first byte, and between two bytes.
pub const BYTE_TIMEOUT: Duration = Duration::from_secs(30);
/// Largest response body a connector reads, unless the operator says less.
pub const MAX_RESPONSE_BYTES: u64 = 16 << 20;

/// What the operator grants one connector over HTTP.
#[derive(Debug, Clone, PartialEq)]
pub struct HttpGrant {
    allowed: Arc<[AllowedHost]>,
    /// The connector's own origin and the credentials the host adds on
    /// requests to it (and to nothing else): one per scheme the API uses.
    pub(crate) credentials: Option<(AllowedHost, Arc<[Arc<Credential>]>)>,
    /// Per request: connecting, waiting for the first byte and between
    /// bytes.
    pub(crate) connect_timeout: Duration,
    pub(crate) byte_timeout: Duration,
    /// Response bodies larger than this are cut off with a typed error.
    pub(crate) max_response_bytes: u64,
    /// Host names the operator marks internal: they may resolve to
    /// loopback or private addresses (never to a metadata address).
    internal: Arc<[String]>,
    /// What responses may echo of the credentials, redacted (a cache).
    pub(crate) echoes: Echoes,
    /// Whether the caller's W3C `baggage` goes on to this connector's API
    /// (`traceparent` and `tracestate` always do).
    pub(crate) baggage: bool,
    /// Headers the guest may set besides the standard ones (see
    /// [`super::headers`]).
    pub(crate) guest_headers: Arc<[http::HeaderName]>,
}

impl Default for HttpGrant {
    fn default() -> Self {
        HttpGrant::new(Vec::new())
    }
}

impl HttpGrant {
    /// Allow exactly `allowed`, with the default limits and no credential.
    pub fn new(allowed: Vec<AllowedHost>) -> HttpGrant {
        HttpGrant {
            allowed: allowed.into(),
            credentials: None,
            connect_timeout: CONNECT_TIMEOUT,
            byte_timeout: BYTE_TIMEOUT,
            max_response_bytes: MAX_RESPONSE_BYTES,
            internal: Arc::new([]),
            echoes: Echoes::default(),
            baggage: false,
            guest_headers: Arc::new([]),
        }
    }

    /// Mark `hosts` internal (see the field).
    pub(crate) fn set_internal(&mut self, hosts: Vec<String>) {
        self.internal = hosts.into_iter().map(|h| h.to_ascii_lowercase()).collect();
    }

    /// Whether `host` is marked internal.
    pub(crate) fn is_internal(&self, host: &str) -> bool {
        self.internal.iter().any(|h| h.eq_ignore_ascii_case(host))
    }

    /// Whether some allow-list entry has host `host`.
    pub(crate) fn has_host(&self, host: &str) -> bool {
        self.allowed.iter().any(|a| a.host().eq_ignore_ascii_case(host))
    }

    /// Parse `allow_http` entries; the error names the bad entry.
    pub fn parse(entries: &[String]) -> Result<HttpGrant, String> {
        entries.iter().map(|e| e.parse()).collect::<Result<Vec<AllowedHost>, String>>().map(HttpGrant::new)
    }

    /// The allowed destinations.
    pub fn allowed(&self) -> &[AllowedHost] {
        &self.allowed
    }

    /// The allow-list entry `uri` matches, if any.
    pub(crate) fn entry_for(&self, uri: &http::Uri) -> Option<&AllowedHost> {
        self.allowed.iter().find(|a| a.matches(uri))
    }

    /// The credentials to add to a request for `uri`: only on the
    /// connector's own origin.
    pub(crate) fn credentials_for(&self, uri: &http::Uri) -> &[Arc<Credential>] {
        match &self.credentials {
            Some((origin, credentials)) if origin.matches(uri) => credentials,
            _ => &[],
        }
    }

    /// Every credential it holds.
    pub(crate) fn credentials(&self) -> &[Arc<Credential>] {
        self.credentials.as_ref().map_or(&[], |(_, credentials)| credentials)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_grant_allows_only_its_entries() {
        let grant = HttpGrant::parse(&["http://127.0.0.1:8080".to_owned()]).unwrap();
        assert!(grant.entry_for(&"http://127.0.0.1:8080/x".parse().unwrap()).is_some());
        assert!(grant.entry_for(&"http://127.0.0.1:8081/x".parse().unwrap()).is_none());
        assert!(HttpGrant::default().entry_for(&"http://127.0.0.1:8080/x".parse().unwrap()).is_none());
        let error = HttpGrant::parse(&["ftp://x".to_owned()]).unwrap_err();
        assert!(error.contains("ftp://x"), "{error}");
    }
}
