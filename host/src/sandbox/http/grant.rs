//! Where a connector may send requests, and what the host adds to them:
//! the allow-list, the connector's own origin with its credential, the
//! per-request time limits and the response cap.

use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

use http::uri::Scheme;

use super::credentials::Credential;
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
        self.allowed.iter().any(|a| a.host.eq_ignore_ascii_case(host))
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
        if authority.port().is_some_and(|p| p.as_str() != p.as_u16().to_string()) {
            return Err(format!("`{entry}`: write the port as its number"));
        }
        Ok(Self {
            https,
            host: authority.host().to_ascii_lowercase(),
            port: authority.port_u16().unwrap_or(if https { 443 } else { 80 }),
        })
    }
}

impl AllowedHost {
    /// The origin of `url` (`scheme://host[:port]/...`).
    pub fn origin_of(url: &str) -> Result<AllowedHost, String> {
        let uri: http::Uri = url.parse().map_err(|e| format!("`{url}`: {e}"))?;
        match (uri.scheme_str(), uri.authority()) {
            (Some(scheme @ ("http" | "https")), Some(authority)) => format!("{scheme}://{authority}").parse(),
            _ => Err(format!("`{url}` is not an absolute http(s) URL")),
        }
    }

    pub(crate) fn matches(&self, uri: &http::Uri) -> bool {
        let https = uri.scheme() == Some(&Scheme::HTTPS);
        let Some(authority) = uri.authority() else { return false };
        let port = authority.port_u16().unwrap_or(if https { 443 } else { 80 });
        // A port spelt otherwise than its number (`:018801`) would reach
        // the server's `Host` as given: it never matches.
        let canonical = authority.port().is_none_or(|p| p.as_str() == p.as_u16().to_string());
        // A user-info part (`http://allowed@elsewhere/`) never matches.
        canonical
            && !authority.as_str().contains('@')
            && self.https == https
            && self.host.eq_ignore_ascii_case(authority.host())
            && self.port == port
    }

    /// The address this entry names, when it names one (`127.0.0.1`,
    /// `[::1]`) rather than a host name: the only way to allow a loopback
    /// or private destination.
    pub(crate) fn address(&self) -> Option<IpAddr> {
        self.host.trim_start_matches('[').trim_end_matches(']').parse().ok()
    }
}

impl std::fmt::Display for AllowedHost {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}://{}:{}", if self.https { "https" } else { "http" }, self.host, self.port)
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

    #[test]
    fn parses_and_matches_allow_entries() {
        let a: AllowedHost = "api.example.com".parse().unwrap();
        assert!(a.matches(&"https://api.example.com/v1".parse().unwrap()));
        assert!(a.matches(&"https://API.example.com:443/".parse().unwrap()));
        assert!(!a.matches(&"http://api.example.com/".parse().unwrap()));
        assert!(!a.matches(&"https://api.example.com:8443/".parse().unwrap()));
        assert!(!a.matches(&"https://evil.example.com/".parse().unwrap()));
        assert!(!a.matches(&"https://api.example.com@evil.example.com/".parse().unwrap()));
        assert_eq!(a.address(), None);
        let local: AllowedHost = "http://127.0.0.1:8080".parse().unwrap();
        assert!(local.matches(&"http://127.0.0.1:8080/x".parse().unwrap()));
        assert!(!local.matches(&"https://127.0.0.1:8080/x".parse().unwrap()));
        assert!(!local.matches(&"http://127.0.0.1.:8080/x".parse().unwrap()));
        assert!(!local.matches(&"http://2130706433:8080/x".parse().unwrap()));
        assert!(!local.matches(&"http://[::ffff:127.0.0.1]:8080/x".parse().unwrap()));
        assert!(!local.matches(&"http://127.0.0.1:8080@127.0.0.2:8080/x".parse().unwrap()));
        assert!(!local.matches(&"http://127.0.0.1:08080/x".parse().unwrap()), "a port with a leading zero");
        assert!(!local.matches(&"http://user:pw@127.0.0.1:8080/x".parse().unwrap()), "user-info");
        assert_eq!(local.address(), Some("127.0.0.1".parse().unwrap()));
        let v6: AllowedHost = "http://[::1]:9000".parse().unwrap();
        assert_eq!(v6.address(), Some("::1".parse().unwrap()));
        assert!("ftp://x".parse::<AllowedHost>().is_err());
        assert!("https://user@host".parse::<AllowedHost>().is_err());
        assert!("https://host:0443".parse::<AllowedHost>().is_err(), "a port with a leading zero");
        assert!("https://host/path".parse::<AllowedHost>().is_err());
        assert_eq!(AllowedHost::origin_of("http://127.0.0.1:8080/v1/").unwrap(), local);
    }
}
