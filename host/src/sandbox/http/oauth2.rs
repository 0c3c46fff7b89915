//! OAuth2 client credentials (RFC 6749 §4.4): the host asks the token
//! endpoint for an access token with the connector's client id and secret,
//! keeps it until shortly before it expires, and asks again. The token
//! endpoint is the host's own traffic, never the guest's: the guest sees
//! neither the client secret nor the token.

use std::time::{Duration, Instant};

use serde::Deserialize;

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

/// One connector's client credentials and its cached token.
#[derive(Debug)]
pub struct ClientCredentials {
    token_url: String,
    client_id: String,
    client_secret: Secret,
    scope: Option<String>,
    client: reqwest::Client,
    cached: tokio::sync::Mutex<Option<(Secret, Instant)>>,
}

impl PartialEq for ClientCredentials {
    fn eq(&self, other: &Self) -> bool {
        (&self.token_url, &self.client_id, &self.client_secret, &self.scope)
            == (&other.token_url, &other.client_id, &other.client_secret, &other.scope)
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
    /// Client credentials for the connector in `section`.
    pub fn new(
        section: &str,
        token_url: &str,
        client_id: &str,
        client_secret: Secret,
        scope: Option<String>,
    ) -> Result<ClientCredentials> {
        let url: http::Uri =
            token_url.parse().map_err(|e| Error::config(section, format!("auth.token_url `{token_url}`: {e}")))?;
        if !matches!(url.scheme_str(), Some("http" | "https")) || url.host().is_none() {
            return Err(Error::config(section, format!("auth.token_url `{token_url}` is not an http(s) URL")));
        }
        let _ = rustls::crypto::ring::default_provider().install_default();
        let client = reqwest::Client::builder()
            .timeout(TOKEN_TIMEOUT)
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| Error::config(section, format!("cannot build the token client: {e}")))?;
        Ok(ClientCredentials {
            token_url: token_url.to_owned(),
            client_id: client_id.to_owned(),
            client_secret,
            scope,
            client,
            cached: tokio::sync::Mutex::new(None),
        })
    }

    /// `Bearer TOKEN`, from the cache or a fresh token. The error says what
    /// went wrong with the token endpoint, without any secret.
    pub(crate) async fn authorization(&self) -> std::result::Result<Secret, String> {
        let mut cached = self.cached.lock().await;
        if let Some((token, expires)) = cached.as_ref()
            && Instant::now() + REFRESH_MARGIN < *expires
        {
            return Ok(Secret::new(format!("Bearer {}", token.expose())));
        }
        let asked = Instant::now();
        let (token, lifetime) = self.fetch().await?;
        let header = Secret::new(format!("Bearer {}", token.expose()));
        *cached = Some((token, asked.checked_add(lifetime).unwrap_or(asked)));
        Ok(header)
    }

    async fn fetch(&self) -> std::result::Result<(Secret, Duration), String> {
        use percent_encoding::{NON_ALPHANUMERIC, utf8_percent_encode};
        let mut form = String::from("grant_type=client_credentials");
        if let Some(scope) = &self.scope {
            form.push_str("&scope=");
            form.push_str(&utf8_percent_encode(scope, NON_ALPHANUMERIC).to_string());
        }
        let where_ = format!("the OAuth2 token endpoint {}", self.token_url);
        let answer = self
            .client
            .post(&self.token_url)
            .basic_auth(&self.client_id, Some(self.client_secret.expose()))
            .header(http::header::CONTENT_TYPE, "application/x-www-form-urlencoded")
            .header(http::header::ACCEPT, "application/json")
            .body(form)
            .send()
            .await
            .map_err(|e| format!("{where_} cannot be reached: {}", e.without_url()))?;
        let status = answer.status();
        if !status.is_success() {
            return Err(format!("{where_} refused the client credentials (status {})", status.as_u16()));
        }
        let body = answer.bytes().await.map_err(|e| format!("{where_} did not answer in full: {}", e.without_url()))?;
        let token: TokenAnswer = serde_json::from_slice(&body)
            .map_err(|_| format!("{where_} did not answer with a token (RFC 6749 §5.1)"))?;
        if token.token_type.as_deref().is_some_and(|t| !t.eq_ignore_ascii_case("bearer")) {
            return Err(format!("{where_} gave a token that is not a bearer token"));
        }
        Ok((Secret::new(token.access_token), lifetime(token.expires_in.as_ref())))
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
