//! OAuth2 client credentials (RFC 6749 §4.4): the host asks the token
//! endpoint for an access token with the connector's client id and secret,
//! keeps it until shortly before it expires, and asks again. The token
//! endpoint is the host's own traffic, never the guest's: the guest sees
//! neither the client secret nor the token.
//!
//! A token request passes the same [guard](super::guard) as every
//! connector request (the allow-list, then every address the name resolves
//! to) and is [sent](super::send) to the address that was checked. The
//! token URL the operator wrote (`auth.token_url`) counts as allowed; one
//! taken from an OpenAPI document is outside text and must be in the
//! connector's allow-list, or the client secret is never sent.

use std::time::{Duration, Instant};

use bytes::Bytes;
use http::header::{ACCEPT, AUTHORIZATION, CONTENT_LENGTH, CONTENT_TYPE, HOST};
use http_body_util::{BodyExt, Full};
use serde::Deserialize;
use wasmtime_wasi_http::WasiBody;

use super::origin::AllowedHost;
use crate::contract::{Shape, sanitize_cut};
use crate::error::{Error, Result};
use crate::sandbox::secrets::Secret;

/// A token is asked for again this long before it expires.
pub(super) const REFRESH_MARGIN: Duration = Duration::from_secs(30);
/// Lifetime of a token whose answer gives none (or none that reads as
/// seconds).
const DEFAULT_LIFETIME: Duration = Duration::from_secs(300);
/// Longest a token is kept, whatever its answer says.
const MAX_LIFETIME: Duration = Duration::from_secs(24 * 3600);
/// Longest the token endpoint may take.
pub(super) const TOKEN_TIMEOUT: Duration = Duration::from_secs(10);
/// Largest token answer read.
pub(super) const MAX_TOKEN_ANSWER: u64 = 64 << 10;
/// Longest token URL quoted in an error.
const SHOWN_URL: usize = 256;

/// One connector's client credentials and its cached token.
#[derive(Debug)]
pub struct ClientCredentials {
    pub(super) token_url: http::Uri,
    /// The token URL as errors quote it (sanitised, cut).
    pub(super) shown: String,
    /// The token URL's origin when the operator wrote it: allowed for
    /// token requests whatever the allow-list says. `None` when it came
    /// from an OpenAPI document.
    pub(super) operator_origin: Option<AllowedHost>,
    client_id: String,
    client_secret: Secret,
    scope: Option<String>,
    /// The token, and when to ask for a new one.
    pub(super) cached: tokio::sync::Mutex<Option<(Secret, Instant)>>,
}

impl PartialEq for ClientCredentials {
    fn eq(&self, other: &Self) -> bool {
        (&self.token_url, &self.operator_origin, &self.client_id, &self.client_secret, &self.scope)
            == (&other.token_url, &other.operator_origin, &other.client_id, &other.client_secret, &other.scope)
    }
}

/// The token endpoint's answer (RFC 6749 §5.1).
#[derive(Deserialize)]
pub(super) struct TokenAnswer {
    pub(super) access_token: String,
    #[serde(default)]
    pub(super) token_type: Option<String>,
    /// Outside text: any JSON value (see [`lifetime`]).
    #[serde(default)]
    pub(super) expires_in: Option<serde_json::Value>,
}

/// How long a token lives, from its answer's `expires_in`: seconds as a
/// number or a numeric string (some endpoints send `"3600"`), clamped to
/// [`MAX_LIFETIME`]; zero or less means it is used once; missing or
/// unreadable means [`DEFAULT_LIFETIME`].
pub(super) fn lifetime(expires_in: Option<&serde_json::Value>) -> Duration {
    use serde_json::Value;
    let seconds = match expires_in {
        Some(Value::Number(number)) => number.as_f64(),
        Some(Value::String(text)) => text.trim().parse::<f64>().ok(),
        _ => None,
    };
    match seconds {
        Some(seconds) if seconds.is_nan() => DEFAULT_LIFETIME,
        Some(seconds) if seconds <= 0.0 => Duration::ZERO,
        Some(seconds) => Duration::try_from_secs_f64(seconds).map_or(MAX_LIFETIME, |d| d.min(MAX_LIFETIME)),
        None => DEFAULT_LIFETIME,
    }
}

impl ClientCredentials {
    /// Client credentials for the connector in `section`, with the token
    /// URL the operator wrote (`from_document` false) or the one its
    /// OpenAPI document gives (true: asked only if the allow-list has it).
    pub fn new(
        section: &str,
        token_url: &str,
        from_document: bool,
        client_id: &str,
        client_secret: Secret,
        scope: Option<String>,
    ) -> Result<ClientCredentials> {
        let shown = sanitize_cut(token_url, Shape::Line, SHOWN_URL);
        let url: http::Uri =
            token_url.parse().map_err(|e| Error::config(section, format!("auth.token_url `{shown}`: {e}")))?;
        let origin = AllowedHost::origin_of(token_url)
            .map_err(|_| Error::config(section, format!("auth.token_url `{shown}` is not an http(s) URL")))?;
        Ok(ClientCredentials {
            token_url: url,
            shown,
            operator_origin: (!from_document).then_some(origin),
            client_id: client_id.to_owned(),
            client_secret,
            scope,
            cached: tokio::sync::Mutex::new(None),
        })
    }

    /// The host of the token URL the operator wrote, if they wrote one.
    pub(crate) fn operator_host(&self) -> Option<&str> {
        self.operator_origin.as_ref().and(self.token_url.host())
    }

    /// The token URL, as errors quote it, when it came from a document and
    /// the allow-list `allowed` does not have it: every token request would
    /// be refused.
    pub(crate) fn unlisted(&self, allowed: &[AllowedHost]) -> Option<&str> {
        let listed = allowed.iter().any(|a| a.matches(&self.token_url));
        (self.operator_origin.is_none() && !listed).then_some(self.shown.as_str())
    }

    /// The token request: HTTP basic client authentication, a form body.
    pub(super) fn request(&self) -> std::result::Result<http::Request<WasiBody>, String> {
        use base64::Engine as _;
        use percent_encoding::{NON_ALPHANUMERIC, utf8_percent_encode};
        let mut form = String::from("grant_type=client_credentials");
        if let Some(scope) = &self.scope {
            form.push_str("&scope=");
            form.push_str(&utf8_percent_encode(scope, NON_ALPHANUMERIC).to_string());
        }
        let pair = zeroize::Zeroizing::new(format!("{}:{}", self.client_id, self.client_secret.expose()));
        let basic = zeroize::Zeroizing::new(format!(
            "Basic {}",
            base64::engine::general_purpose::STANDARD.encode(pair.as_bytes())
        ));
        let mut basic =
            http::HeaderValue::from_str(&basic).map_err(|_| "the client id is not valid in a header".to_owned())?;
        basic.set_sensitive(true);
        let authority = self.token_url.authority().map_or("", |a| a.as_str());
        let length = form.len();
        let body = Full::new(Bytes::from(form)).map_err(|never| match never {}).boxed_unsync();
        http::Request::post(self.token_url.clone())
            .header(HOST, authority)
            .header(AUTHORIZATION, basic)
            .header(CONTENT_TYPE, "application/x-www-form-urlencoded")
            .header(CONTENT_LENGTH, length)
            .header(ACCEPT, "application/json")
            .body(body)
            .map_err(|_| "the token request is not valid HTTP".to_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn any_expires_in_gives_a_lifetime_within_bounds() {
        let of = |text: &str| lifetime(serde_json::from_str::<Option<serde_json::Value>>(text).unwrap().as_ref());
        assert_eq!(of("3600"), Duration::from_secs(3600));
        assert_eq!(of("\"3600\""), Duration::from_secs(3600));
        assert_eq!(of("1.5"), Duration::from_millis(1500));
        for huge in ["18446744073709551615", "18446744073709551616", "1e300", "\"inf\""] {
            assert_eq!(of(huge), MAX_LIFETIME, "{huge}");
        }
        for spent in ["0", "-1", "-18446744073709551616", "\"-5\""] {
            assert_eq!(of(spent), Duration::ZERO, "{spent}");
        }
        for unreadable in ["null", "true", "\"soon\"", "\"NaN\"", "{}", "[1]"] {
            assert_eq!(of(unreadable), DEFAULT_LIFETIME, "{unreadable}");
        }
        assert!(Instant::now().checked_add(MAX_LIFETIME).is_some());
    }
}
