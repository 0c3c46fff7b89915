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

use super::grant::{AllowedHost, HttpGrant};
use super::guard::{self, Refusal, Resolve};
use super::send;
use crate::contract::{Shape, sanitize_cut};
use crate::error::{Error, Result};
use crate::sandbox::secrets::Secret;

/// A token is asked for again this long before it expires.
const REFRESH_MARGIN: Duration = Duration::from_secs(30);
/// Lifetime of a token whose answer gives none (or none that reads as
/// seconds).
const DEFAULT_LIFETIME: Duration = Duration::from_secs(300);
/// Longest a token is kept, whatever its answer says.
const MAX_LIFETIME: Duration = Duration::from_secs(24 * 3600);
/// Longest the token endpoint may take.
const TOKEN_TIMEOUT: Duration = Duration::from_secs(10);
/// Largest token answer read.
const MAX_TOKEN_ANSWER: u64 = 64 << 10;
/// Longest token URL quoted in an error.
const SHOWN_URL: usize = 256;

/// One connector's client credentials and its cached token.
#[derive(Debug)]
pub struct ClientCredentials {
    token_url: http::Uri,
    /// The token URL as errors quote it (sanitised, cut).
    shown: String,
    /// The token URL's origin when the operator wrote it: allowed for
    /// token requests whatever the allow-list says. `None` when it came
    /// from an OpenAPI document.
    operator_origin: Option<AllowedHost>,
    client_id: String,
    client_secret: Secret,
    scope: Option<String>,
    cached: tokio::sync::Mutex<Option<(Secret, Instant)>>,
}

impl PartialEq for ClientCredentials {
    fn eq(&self, other: &Self) -> bool {
        (&self.token_url, &self.operator_origin, &self.client_id, &self.client_secret, &self.scope)
            == (&other.token_url, &other.operator_origin, &other.client_id, &other.client_secret, &other.scope)
    }
}

/// The token endpoint's answer (RFC 6749 §5.1).
#[derive(Deserialize)]
struct TokenAnswer {
    access_token: String,
    #[serde(default)]
    token_type: Option<String>,
    /// Outside text: any JSON value (see [`lifetime`]).
    #[serde(default)]
    expires_in: Option<serde_json::Value>,
}

/// How long a token lives, from its answer's `expires_in`: seconds as a
/// number or a numeric string (some endpoints send `"3600"`), clamped to
/// [`MAX_LIFETIME`]; zero or less means it is used once; missing or
/// unreadable means [`DEFAULT_LIFETIME`].
fn lifetime(expires_in: Option<&serde_json::Value>) -> Duration {
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
    /// `grant`'s allow-list does not have it: every token request would be
    /// refused.
    pub(crate) fn unlisted(&self, grant: &HttpGrant) -> Option<&str> {
        (self.operator_origin.is_none() && grant.entry_for(&self.token_url).is_none()).then_some(self.shown.as_str())
    }

    /// `Bearer TOKEN`, from the cache or a fresh token asked for through
    /// `grant`'s guard. The error says what went wrong with the token
    /// endpoint, without any secret.
    pub(crate) async fn authorization(
        &self,
        grant: &HttpGrant,
        resolver: &dyn Resolve,
    ) -> std::result::Result<Secret, String> {
        let mut cached = self.cached.lock().await;
        if let Some((token, expires)) = cached.as_ref()
            && Instant::now() + REFRESH_MARGIN < *expires
        {
            return Ok(Secret::new(format!("Bearer {}", token.expose())));
        }
        let asked = Instant::now();
        let where_ = format!("the OAuth2 token endpoint {}", self.shown);
        let (token, lifetime) = match tokio::time::timeout(TOKEN_TIMEOUT, self.fetch(grant, resolver, &where_)).await {
            Ok(fetched) => fetched?,
            Err(_) => return Err(format!("{where_} did not answer within {} s", TOKEN_TIMEOUT.as_secs())),
        };
        let header = Secret::new(format!("Bearer {}", token.expose()));
        *cached = Some((token, asked.checked_add(lifetime).unwrap_or(asked)));
        Ok(header)
    }

    async fn fetch(
        &self,
        grant: &HttpGrant,
        resolver: &dyn Resolve,
        where_: &str,
    ) -> std::result::Result<(Secret, Duration), String> {
        let addresses = guard::token_destination(grant, self.operator_origin.as_ref(), &self.token_url, resolver)
            .await
            .map_err(|refusal| {
                tracing::warn!(token_url = %self.shown, ?refusal, "token request refused");
                refused(where_, &refusal)
            })?;
        let limits = send::Limits {
            connect: grant.connect_timeout.min(TOKEN_TIMEOUT),
            first_byte: grant.byte_timeout.min(TOKEN_TIMEOUT),
            between_bytes: grant.byte_timeout.min(TOKEN_TIMEOUT),
            max_body: MAX_TOKEN_ANSWER,
        };
        let (answer, driver) = send::send(self.request()?, &addresses, limits)
            .await
            .map_err(|e| format!("{where_} cannot be reached: {}", failure(&e)))?;
        let status = answer.status();
        if !status.is_success() {
            return Err(format!("{where_} refused the client credentials (status {})", status.as_u16()));
        }
        // The connection is driven while the body is read, and dropped after.
        let driver = tokio::spawn(Box::into_pin(driver));
        let body = answer.into_body().collect().await;
        driver.abort();
        let body = body.map_err(|e| format!("{where_} did not answer in full: {}", failure(&e)))?.to_bytes();
        let token: TokenAnswer = serde_json::from_slice(&body)
            .map_err(|_| format!("{where_} did not answer with a token (RFC 6749 §5.1)"))?;
        if token.token_type.as_deref().is_some_and(|t| !t.eq_ignore_ascii_case("bearer")) {
            return Err(format!("{where_} gave a token that is not a bearer token"));
        }
        if http::HeaderValue::from_str(&format!("Bearer {}", token.access_token)).is_err() {
            return Err(format!("{where_} gave a token that cannot be sent in a header"));
        }
        Ok((Secret::new(token.access_token), lifetime(token.expires_in.as_ref())))
    }

    /// The token request: HTTP basic client authentication, a form body.
    fn request(&self) -> std::result::Result<http::Request<WasiBody>, String> {
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

/// A refused token request, as the guest and the model read it: the rule,
/// and what the operator can change.
fn refused(where_: &str, refusal: &Refusal) -> String {
    match refusal {
        Refusal::NotAllowed => format!(
            "{where_} is not in this connector's allow-list, so the host does not send it the client secret \
             (the operator adds its origin to `allow_http`, or writes `token_url` in the connector's `auth`)"
        ),
        Refusal::Prohibited { address, why } => format!(
            "{where_} resolves to {why} ({address}), where the host does not send the client secret (the \
             operator names that address in `token_url` or `allow_http`, or the host in `private_hosts`)"
        ),
        Refusal::Unresolved(error) => format!("{where_} cannot be resolved: {error}"),
    }
}

/// A failed exchange with the token endpoint, in words.
fn failure(error: &wasmtime_wasi_http::Error) -> String {
    use wasmtime_wasi_http::Error as E;
    match error {
        E::Connect(io) => io.kind().to_string(),
        E::ConnectionTimeout => "the connection timed out".into(),
        E::ConnectionReadTimeout => "it did not answer in time".into(),
        E::HttpResponseBodySize(_) => format!("its answer is over {} KiB", MAX_TOKEN_ANSWER >> 10),
        other => format!("{other:?}"),
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
