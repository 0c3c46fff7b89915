//! The `http` capability's part of a `[connectors.NAME]` section: the
//! API's base URL and the other allowed destinations, the internal host
//! names, the credentials (read from where they are kept), the time
//! limits and the response cap, resolved into an [`HttpGrant`]. The rest of
//! the section (the plugin it runs, its access and answer budget) is the
//! connector instance's ([`load::connector`](crate::load::connector)).

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use super::credentials::{Credential, RawAuth};
use super::grant::{BYTE_TIMEOUT, CONNECT_TIMEOUT, HttpGrant, MAX_RESPONSE_BYTES};
use super::origin::AllowedHost;
use crate::error::{Error, Result};

/// What a connector's section says of HTTP, as written.
#[derive(Debug, Clone, Copy)]
pub struct HttpSection<'a> {
    /// The API's base URL; its origin is allowed and gets the credentials.
    pub base_url: &'a str,
    /// More destinations it may reach (never with the credentials).
    pub allow_http: &'a [String],
    /// Host names (of `base_url`, `allow_http` or an OAuth2 `token_url`)
    /// that may resolve to loopback or private addresses.
    pub private_hosts: &'a [String],
    /// The credentials the host adds on requests to `base_url`'s origin.
    pub auth: &'a [RawAuth],
    /// Longest a connection may take, in ms.
    pub connect_timeout_ms: Option<u64>,
    /// Longest wait for the first byte, and between two bytes, in ms.
    pub response_timeout_ms: Option<u64>,
    /// Largest response body, in KiB.
    pub max_response_kb: Option<u64>,
    /// Whether the caller's W3C `baggage` goes on to the API.
    pub baggage: bool,
    /// Headers the guest may set besides the standard ones.
    pub allow_headers: &'a [String],
}

impl HttpGrant {
    /// The grant `raw` describes, for the section named `section`; files
    /// (credentials) are relative to `base`.
    pub fn resolve(section: &str, raw: HttpSection<'_>, base: &Path) -> Result<HttpGrant> {
        let fail = |message: String| Error::config(section, message);
        let origin = AllowedHost::origin_of(raw.base_url).map_err(|e| fail(format!("base_url: {e}")))?;
        let mut allowed = vec![origin.clone()];
        for entry in raw.allow_http {
            allowed.push(entry.parse().map_err(|e| fail(format!("allow_http: {e}")))?);
        }
        // A name that always means this machine (`localhost`, RFC 6761) is
        // refused by the egress guard when a request is sent, unless it is
        // marked internal: say so now, with the fix.
        for (key, entry) in
            std::iter::once(("base_url", &allowed[0])).chain(allowed[1..].iter().map(|e| ("allow_http", e)))
        {
            let host = entry.host().trim_end_matches('.').to_ascii_lowercase();
            let loopback_name = host == "localhost" || host.ends_with(".localhost");
            if loopback_name && !raw.private_hosts.iter().any(|h| h.eq_ignore_ascii_case(entry.host())) {
                return Err(fail(format!(
                    "{key}: `{}` always names this machine, which a connector may not reach by name; write the \
                     address (127.0.0.1 or [::1]) instead, or mark the name internal with private_hosts = [\"{}\"]",
                    entry.host(),
                    entry.host()
                )));
            }
        }
        let mut grant = HttpGrant::new(allowed);
        let mut credentials: Vec<Arc<Credential>> = Vec::with_capacity(raw.auth.len());
        for auth in raw.auth {
            let credential = Credential::resolve(auth, section, base)?;
            if let Some(earlier) = credentials.iter().find(|c| c.place() == credential.place()) {
                return Err(fail(format!("auth: two credentials go in {}", earlier.place())));
            }
            if let Some(url) = credential.oauth2().and_then(|client| client.unlisted(grant.allowed())) {
                tracing::warn!(
                    %section,
                    token_url = %url,
                    "the document's OAuth2 token URL is not in the allow-list: the host will not ask it for tokens \
                     (add its origin to `allow_http`, or write `token_url` in `auth`)"
                );
            }
            credentials.push(Arc::new(credential));
        }
        // Internal names: the API's, another allowed destination's, or the
        // token endpoint's the operator wrote.
        let token_host = |host: &str| {
            credentials.iter().filter_map(|c| c.oauth2()?.operator_host()).any(|h| h.eq_ignore_ascii_case(host))
        };
        if let Some(host) = raw.private_hosts.iter().find(|h| !grant.has_host(h) && !token_host(h)) {
            return Err(fail(format!(
                "private_hosts: `{host}` is not the host of `base_url`, an `allow_http` entry or `auth.token_url`"
            )));
        }
        grant.set_internal(raw.private_hosts.to_vec());
        grant.baggage = raw.baggage;
        grant.guest_headers = super::headers::declared(raw.allow_headers).map_err(fail)?;
        if !credentials.is_empty() {
            grant.credentials = Some((origin, credentials.into()));
        }
        let positive = |value: Option<u64>, key: &str| match value {
            Some(0) => Err(fail(format!("{key} must be at least 1"))),
            other => Ok(other),
        };
        grant.connect_timeout =
            positive(raw.connect_timeout_ms, "connect_timeout_ms")?.map_or(CONNECT_TIMEOUT, Duration::from_millis);
        grant.byte_timeout =
            positive(raw.response_timeout_ms, "response_timeout_ms")?.map_or(BYTE_TIMEOUT, Duration::from_millis);
        grant.max_response_bytes =
            positive(raw.max_response_kb, "max_response_kb")?.map_or(MAX_RESPONSE_BYTES, |kb| kb.saturating_mul(1024));
        Ok(grant)
    }

    /// Its credentials' secrets, for the audit log to redact.
    pub fn secrets(&self) -> impl Iterator<Item = &crate::sandbox::secrets::Secret> {
        self.credentials().iter().map(|credential| credential.secret())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn section(base_url: &str) -> HttpSection<'_> {
        HttpSection {
            base_url,
            allow_http: &[],
            private_hosts: &[],
            auth: &[],
            connect_timeout_ms: None,
            response_timeout_ms: None,
            max_response_kb: None,
            baggage: false,
            allow_headers: &[],
        }
    }

    #[test]
    fn the_base_urls_origin_is_allowed_with_the_default_limits() {
        let grant =
            HttpGrant::resolve("[connectors.books]", section("http://127.0.0.1:8080/v1/"), Path::new(".")).unwrap();
        assert!(grant.entry_for(&"http://127.0.0.1:8080/v1/books".parse().unwrap()).is_some());
        assert!(grant.entry_for(&"http://127.0.0.1:8081/".parse().unwrap()).is_none());
        assert_eq!(grant.max_response_bytes, MAX_RESPONSE_BYTES);
        assert!(grant.credentials().is_empty());
        let error = HttpGrant::resolve("[connectors.books]", section("ftp://x"), Path::new(".")).unwrap_err();
        assert!(error.to_string().contains("[connectors.books]") && error.to_string().contains("base_url"), "{error}");
    }

    #[test]
    fn localhost_is_refused_when_read_unless_marked_internal() {
        for url in ["http://localhost:8080", "http://LOCALHOST.:8080/v1", "http://api.localhost"] {
            let error = HttpGrant::resolve("[connectors.books]", section(url), Path::new(".")).unwrap_err().to_string();
            assert!(
                error.contains("base_url") && error.contains("127.0.0.1") && error.contains("private_hosts"),
                "{error}"
            );
        }
        let internal = ["localhost".to_owned()];
        let raw = HttpSection { private_hosts: &internal, ..section("http://localhost:8080") };
        assert!(HttpGrant::resolve("[connectors.books]", raw, Path::new(".")).is_ok());
        let elsewhere = ["http://localhost:9".to_owned()];
        let raw = HttpSection { allow_http: &elsewhere, ..section("http://127.0.0.1:8080") };
        let error = HttpGrant::resolve("[connectors.books]", raw, Path::new(".")).unwrap_err().to_string();
        assert!(error.contains("allow_http"), "{error}");
    }
}
