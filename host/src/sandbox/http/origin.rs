//! One allowed destination of a connector: scheme, host and port, as the
//! operator writes it (`https://api.github.com`, `http://127.0.0.1:8080`)
//! and as a request's URI must match it exactly.

use std::net::IpAddr;

use http::uri::Scheme;

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
    /// Its host name (or address), lower case.
    pub(crate) fn host(&self) -> &str {
        &self.host
    }

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
