//! What every HTTP request passes before a face sees it: a `Host` header,
//! the `Host` and `Origin` allow-lists (against DNS rebinding and
//! cross-site requests), and who it is from: the bearer token, or a
//! dashboard sign-in's cookie (with its CSRF token on any request that
//! changes something). The principal found is put in the request's
//! extensions; how it is established is this module's alone.

use std::sync::Arc;

use axum::extract::Request;
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::dashboard::signin::{SignIns, SignedIn};
use crate::sandbox::secrets::constant_time_eq;

/// Who a request is from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Principal {
    /// No token is configured (a loopback server): whoever reaches it.
    Anyone,
    /// The bearer token was presented.
    Bearer,
    /// A dashboard sign-in, by its cookie.
    SignedIn(SignedIn),
}

/// The header a signed-in browser sends its CSRF token in.
pub const CSRF_HEADER: &str = "x-csrf-token";

pub(super) struct Guard {
    pub(super) token: Option<String>,
    pub(super) origins: Vec<String>,
    /// Allowed `Host` names (`name` or `name:port`); empty: any.
    pub(super) hosts: Vec<String>,
    /// The dashboard's sign-ins (none where no dashboard is served).
    pub(super) sign_ins: Option<Arc<SignIns>>,
}

impl Guard {
    pub(super) async fn check(&self, mut request: Request, next: Next) -> Response {
        // HTTP/1.0 may leave out `Host`; every route needs it (the
        // DNS-rebinding check reads it), so none is served without it.
        if !request.headers().contains_key(header::HOST) && request.uri().authority().is_none() {
            return (StatusCode::BAD_REQUEST, "a Host header is required").into_response();
        }
        let path = request.uri().path().to_owned();
        let principal = match self.principal(&request, &path) {
            Ok(principal) => principal,
            Err(refused) => return refused.into_response(),
        };
        // The REST routes and the dashboard get the same Host and Origin
        // checks rmcp applies to /mcp.
        if !path.starts_with("/mcp")
            && let Some(host) = request.headers().get(header::HOST)
            && !host.to_str().is_ok_and(|h| host_allowed(&self.hosts, h))
        {
            return (StatusCode::FORBIDDEN, "host not allowed (start the server with --allow-host NAME)")
                .into_response();
        }
        if !path.starts_with("/mcp")
            && let Some(origin) = request.headers().get(header::ORIGIN)
            && !origin.to_str().is_ok_and(|o| self.origins.iter().any(|allowed| origin_matches(allowed, o)))
        {
            return (StatusCode::FORBIDDEN, "origin not allowed").into_response();
        }
        if let Some(principal) = principal {
            request.extensions_mut().insert(principal);
        }
        next.run(request).await
    }

    /// Who `request` is from; none for a public page (the sign-in form
    /// and the dashboard's static files); a refusal when it must be
    /// someone and is not.
    fn principal(&self, request: &Request, path: &str) -> Result<Option<Principal>, Refused> {
        let headers = request.headers();
        let presented = headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.split_once(' '))
            .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
            .map(|(_, token)| token.trim_start());
        if let (Some(token), Some(presented)) = (&self.token, presented)
            && constant_time_eq(presented.as_bytes(), token.as_bytes())
        {
            return Ok(Some(Principal::Bearer));
        }
        // A browser's cookie speaks for the dashboard and the REST API it
        // calls, never for /mcp or /metrics.
        let browser = path == "/ui" || path.starts_with("/ui/") || path.starts_with("/v1/");
        if browser && let Some(signed) = self.sign_ins.as_ref().and_then(|s| s.of(headers)) {
            let safe = matches!(*request.method(), Method::GET | Method::HEAD);
            let csrf = headers.get(CSRF_HEADER).and_then(|v| v.to_str().ok());
            if !safe && !csrf.is_some_and(|c| constant_time_eq(c.as_bytes(), signed.csrf.as_bytes())) {
                return Err(Refused::NoCsrfToken);
            }
            return Ok(Some(Principal::SignedIn(signed)));
        }
        if self.token.is_none() {
            return Ok(Some(Principal::Anyone));
        }
        if path == "/ui/sign-in" || path.starts_with("/ui/assets/") {
            return Ok(None);
        }
        if path == "/ui" || path == "/ui/" {
            return Err(Refused::SignIn);
        }
        Err(Refused::NoToken)
    }
}

/// Why the guard turned a request away.
enum Refused {
    /// A browser without a sign-in, sent to the form.
    SignIn,
    /// Neither the bearer token nor a sign-in.
    NoToken,
    /// A signed-in change without its CSRF token.
    NoCsrfToken,
}

impl IntoResponse for Refused {
    fn into_response(self) -> Response {
        match self {
            Refused::SignIn => {
                (StatusCode::SEE_OTHER, [(header::LOCATION, HeaderValue::from_static("/ui/sign-in"))]).into_response()
            }
            Refused::NoToken => {
                (StatusCode::UNAUTHORIZED, [(header::WWW_AUTHENTICATE, "Bearer")], "a bearer token is required")
                    .into_response()
            }
            Refused::NoCsrfToken => {
                (StatusCode::FORBIDDEN, "a signed-in request that changes something needs its CSRF token")
                    .into_response()
            }
        }
    }
}

/// Whether the `Host` header `value` names one of `allowed` (`name`: any
/// port; `name:port`: that port); an empty list allows any.
fn host_allowed(allowed: &[String], value: &str) -> bool {
    let Ok(authority) = value.trim().parse::<http::uri::Authority>() else { return false };
    let name = authority.host().trim_matches(['[', ']']).to_ascii_lowercase();
    allowed.is_empty()
        || allowed.iter().any(|entry| match entry.parse::<http::uri::Authority>() {
            Ok(a) if a.port_u16().is_some() => {
                a.host().trim_matches(['[', ']']).eq_ignore_ascii_case(&name) && a.port_u16() == authority.port_u16()
            }
            _ => entry.trim_matches(['[', ']']).eq_ignore_ascii_case(&name),
        })
}

/// `allowed` is `scheme://host:port` or `scheme://host:*`.
fn origin_matches(allowed: &str, origin: &str) -> bool {
    match allowed.strip_suffix(":*") {
        Some(prefix) => {
            origin == prefix
                || origin
                    .strip_prefix(prefix)
                    .is_some_and(|rest| rest.strip_prefix(':').is_some_and(|p| p.chars().all(|c| c.is_ascii_digit())))
        }
        None => origin == allowed,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_match_by_name_and_port() {
        let allowed = ["localhost".to_owned(), "::1".to_owned(), "app.internal:8443".to_owned()];
        assert!(host_allowed(&allowed, "localhost:8080"));
        assert!(host_allowed(&allowed, "LOCALHOST"));
        assert!(host_allowed(&allowed, "[::1]:8080"));
        assert!(host_allowed(&allowed, "app.internal:8443"));
        assert!(!host_allowed(&allowed, "app.internal:80"));
        assert!(!host_allowed(&allowed, "evil.example"));
        assert!(!host_allowed(&allowed, "localhost.evil.example:8080"));
        assert!(host_allowed(&[], "anything"));
    }

    #[test]
    fn origins_match_by_scheme_host_and_port() {
        assert!(origin_matches("http://localhost:*", "http://localhost:3000"));
        assert!(origin_matches("http://localhost:*", "http://localhost"));
        assert!(!origin_matches("http://localhost:*", "http://localhost.evil.com"));
        assert!(!origin_matches("http://localhost:*", "https://localhost:3000"));
        assert!(origin_matches("https://app.example.com", "https://app.example.com"));
        assert!(!origin_matches("https://app.example.com", "https://app.example.com.evil"));
    }
}
