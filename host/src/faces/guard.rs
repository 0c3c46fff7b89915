//! What every HTTP request passes before a face sees it: a `Host` header,
//! the `Host` and `Origin` allow-lists (against DNS rebinding and
//! cross-site requests), and who it is from: the token mode's bearer
//! token, an OAuth access token ([`crate::auth`]), or a dashboard
//! sign-in's cookie (with its CSRF token on any request that changes
//! something). The principal found is put in the request's extensions;
//! how it is established is this module's alone. A refusal is a 401 with
//! the challenge RFC 6750 and the MCP authorization spec ask for
//! (`resource_metadata`, `scope`, and `error` when a token was sent), and
//! is counted by reason; the token is never logged.

use std::sync::Arc;

use axum::extract::Request;
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::dashboard::signin::{SignIns, SignedIn};
use crate::auth::scopes::{self, Grants};
use crate::auth::tokens::Rejected;
use crate::auth::{self, Authenticator};
use crate::sandbox::secrets::constant_time_eq;
use crate::telemetry::metrics::Metrics;

/// Who a request is from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Principal {
    /// No token is configured (a loopback server): whoever reaches it.
    Anyone,
    /// The token mode's bearer token was presented.
    Bearer,
    /// A dashboard sign-in, by its cookie.
    SignedIn(SignedIn),
    /// An OAuth access token, checked: its subject, profile and scopes.
    Token(auth::Principal),
}

impl Principal {
    /// The OAuth principal, when the request carried an access token or
    /// the cookie of a sign-in through the authorization server.
    pub fn oauth(&self) -> Option<&auth::Principal> {
        match self {
            Principal::Token(principal) => Some(principal),
            Principal::SignedIn(signed) => signed.principal.as_ref(),
            _ => None,
        }
    }
}

/// The header a signed-in browser sends its CSRF token in.
pub const CSRF_HEADER: &str = "x-csrf-token";

/// The paths anyone may read without a token: the resource metadata,
/// health probes, the index of links, and the dashboard's sign-in (its
/// steps through the issuer among them) and static files.
fn public(path: &str) -> bool {
    path == "/"
        || path == "/healthz"
        || path == "/readyz"
        || path == "/ui/sign-in"
        || path.starts_with("/ui/sign-in/")
        || path.starts_with("/ui/assets/")
        || path.starts_with(super::oauth::WELL_KNOWN)
}

pub(super) struct Guard {
    pub(super) auth: Arc<Authenticator>,
    pub(super) origins: Vec<String>,
    /// Allowed `Host` names (`name` or `name:port`); empty: any.
    pub(super) hosts: Vec<String>,
    /// The dashboard's sign-ins (none where no dashboard is served).
    pub(super) sign_ins: Option<Arc<SignIns>>,
    /// Where refusals are counted.
    pub(super) metrics: Arc<Metrics>,
}

impl Guard {
    pub(super) async fn check(&self, mut request: Request, next: Next) -> Response {
        // HTTP/1.0 may leave out `Host`; every route needs it (the
        // DNS-rebinding check reads it), so none is served without it.
        if !request.headers().contains_key(header::HOST) && request.uri().authority().is_none() {
            return (StatusCode::BAD_REQUEST, "a Host header is required").into_response();
        }
        let path = request.uri().path().to_owned();
        let method = request.method().clone();
        let principal = match self.principal(request.headers(), &method, &path).await {
            Ok(principal) => principal,
            Err(refused) => return self.refuse(refused, &path),
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
            && !path.starts_with(super::oauth::WELL_KNOWN)
            && let Some(origin) = request.headers().get(header::ORIGIN)
            && !origin.to_str().is_ok_and(|o| self.origins.iter().any(|allowed| origin_matches(allowed, o)))
        {
            return (StatusCode::FORBIDDEN, "origin not allowed").into_response();
        }
        // Metrics are the server's own figures: an access token needs the
        // scope that names them.
        if path == "/metrics"
            && let Some(Principal::Token(token)) = &principal
            && !token.grants.metrics()
        {
            return self
                .refuse(Refused::Scope { have: token.grants.clone(), needed: scopes::METRICS.to_owned() }, &path);
        }
        if let Some(principal) = principal {
            request.extensions_mut().insert(principal);
        }
        next.run(request).await
    }

    /// Who `request` is from; none for a public page; a refusal when it
    /// must be someone and is not.
    async fn principal(&self, headers: &HeaderMap, method: &Method, path: &str) -> Result<Option<Principal>, Refused> {
        let callback = self.auth.oauth().and_then(|o| o.browser()).is_some_and(|b| b.redirect_path() == path);
        if public(path) || callback {
            return Ok(None);
        }
        let presented = headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.split_once(' '))
            .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
            .map(|(_, token)| token.trim())
            .filter(|token| !token.is_empty());
        let mut rejected = Rejected::Missing;
        if let Some(presented) = presented {
            match self.auth.authenticate(Some(presented)).await {
                Ok(Some(principal)) => return Ok(Some(Principal::Token(principal))),
                Ok(None) if self.auth.required() => return Ok(Some(Principal::Bearer)),
                Ok(None) => {}
                Err(reason) => rejected = reason,
            }
        }
        // A browser's cookie speaks for the dashboard and the REST API it
        // calls, never for /mcp or /metrics.
        let browser = path == "/ui" || path.starts_with("/ui/") || path.starts_with("/v1/");
        let signed = match (&self.sign_ins, browser) {
            (Some(sign_ins), true) => sign_ins.of(headers).await.map_err(Refused::Unkept)?,
            _ => None,
        };
        if let Some(signed) = signed {
            let safe = matches!(*method, Method::GET | Method::HEAD);
            let csrf = headers.get(CSRF_HEADER).and_then(|v| v.to_str().ok());
            if !safe && !csrf.is_some_and(|c| constant_time_eq(c.as_bytes(), signed.csrf.as_bytes())) {
                return Err(Refused::NoCsrfToken);
            }
            return Ok(Some(Principal::SignedIn(signed)));
        }
        if !self.auth.required() {
            return Ok(Some(Principal::Anyone));
        }
        if presented.is_none() && (path == "/ui" || path == "/ui/") {
            return Err(Refused::SignIn);
        }
        Err(Refused::Token(rejected))
    }

    /// Count `refused`, log it, and answer it.
    fn refuse(&self, refused: Refused, path: &str) -> Response {
        let reason = match &refused {
            Refused::SignIn => return refused.into_response(None),
            Refused::Token(rejected) => rejected.label(),
            Refused::NoCsrfToken => "csrf",
            Refused::Scope { .. } => "insufficient_scope",
            Refused::Unkept(reason) => {
                tracing::warn!(target: "quiver::faces", %reason, path, "the sign-ins' store cannot answer");
                return refused.into_response(None);
            }
        };
        self.metrics.auth_refused(reason);
        tracing::info!(reason, path, "refused a request for who sent it");
        refused.into_response(self.auth.oauth())
    }
}

/// Why the guard turned a request away.
pub(super) enum Refused {
    /// A browser without a sign-in, sent to the form.
    SignIn,
    /// No token that this server accepts.
    Token(Rejected),
    /// A signed-in change without its CSRF token.
    NoCsrfToken,
    /// A valid token without the scope `needed` (it has `have`).
    Scope { have: Arc<Grants>, needed: String },
    /// A cookie whose sign-in cannot be read now (the replicas' Redis does
    /// not answer): retry.
    Unkept(String),
}

impl Refused {
    /// The answer, with the OAuth challenge when `oauth` is set.
    pub(super) fn into_response(self, oauth: Option<&auth::Oauth>) -> Response {
        match self {
            Refused::SignIn => {
                (StatusCode::SEE_OTHER, [(header::LOCATION, HeaderValue::from_static("/ui/sign-in"))]).into_response()
            }
            Refused::Token(rejected) => {
                let challenge = match oauth {
                    Some(oauth) => super::oauth::challenge(oauth, Some(rejected), None),
                    None => "Bearer".to_owned(),
                };
                let challenge = HeaderValue::from_str(&challenge).unwrap_or(HeaderValue::from_static("Bearer"));
                (StatusCode::UNAUTHORIZED, [(header::WWW_AUTHENTICATE, challenge)], rejected.description())
                    .into_response()
            }
            Refused::NoCsrfToken => {
                (StatusCode::FORBIDDEN, "a signed-in request that changes something needs its CSRF token")
                    .into_response()
            }
            Refused::Unkept(_) => {
                let text = "the sign-ins' store cannot answer now: retry";
                (StatusCode::SERVICE_UNAVAILABLE, [(header::RETRY_AFTER, "1")], text).into_response()
            }
            Refused::Scope { have, needed } => {
                let challenge = match oauth {
                    Some(oauth) => super::oauth::challenge(oauth, None, Some(&have.stepped_up(&needed))),
                    None => "Bearer".to_owned(),
                };
                let challenge = HeaderValue::from_str(&challenge).unwrap_or(HeaderValue::from_static("Bearer"));
                let text = format!("the access token lacks the scope `{needed}`");
                (StatusCode::FORBIDDEN, [(header::WWW_AUTHENTICATE, challenge)], text).into_response()
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
