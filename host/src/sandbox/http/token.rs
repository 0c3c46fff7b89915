//! Asking an OAuth2 token endpoint for a token ([`ClientCredentials`]):
//! through the connector's egress guard, to the address it checked, within
//! a time and size limit; cached until shortly before it expires.

use std::time::{Duration, Instant};

use http_body_util::BodyExt;

use super::grant::HttpGrant;
use super::guard::{self, Refusal, Resolve};
use super::oauth2::{ClientCredentials, MAX_TOKEN_ANSWER, REFRESH_MARGIN, TOKEN_TIMEOUT, TokenAnswer, lifetime};
use super::send;
use crate::sandbox::secrets::Secret;

/// `Bearer TOKEN`, from the cache or a fresh token asked for through
/// `grant`'s guard. The error says what went wrong with the token
/// endpoint, without any secret.
pub(crate) async fn authorization(
    client: &ClientCredentials,
    grant: &HttpGrant,
    resolver: &dyn Resolve,
) -> std::result::Result<Secret, String> {
    let mut cached = client.cached.lock().await;
    if let Some((token, refresh)) = cached.as_ref()
        && Instant::now() < *refresh
    {
        return Ok(Secret::new(format!("Bearer {}", token.expose())));
    }
    let asked = Instant::now();
    let where_ = format!("the OAuth2 token endpoint {}", client.shown);
    let (token, lifetime) = match tokio::time::timeout(TOKEN_TIMEOUT, fetch(client, grant, resolver, &where_)).await {
        Ok(fetched) => fetched?,
        Err(_) => return Err(format!("{where_} did not answer within {} s", TOKEN_TIMEOUT.as_secs())),
    };
    let header = Secret::new(format!("Bearer {}", token.expose()));
    // Asked again a margin before it expires: 30 s, or half its life when
    // it lives less than a minute (a short-lived token is still reused).
    let margin = REFRESH_MARGIN.min(lifetime / 2);
    *cached = Some((token, asked.checked_add(lifetime - margin).unwrap_or(asked)));
    Ok(header)
}

async fn fetch(
    client: &ClientCredentials,
    grant: &HttpGrant,
    resolver: &dyn Resolve,
    where_: &str,
) -> std::result::Result<(Secret, Duration), String> {
    let addresses = guard::token_destination(grant, client.operator_origin.as_ref(), &client.token_url, resolver)
        .await
        .map_err(|refusal| {
            tracing::warn!(token_url = %client.shown, ?refusal, "token request refused");
            refused(where_, &refusal)
        })?;
    let limits = send::Limits {
        connect: grant.connect_timeout.min(TOKEN_TIMEOUT),
        first_byte: grant.byte_timeout.min(TOKEN_TIMEOUT),
        between_bytes: grant.byte_timeout.min(TOKEN_TIMEOUT),
        max_body: MAX_TOKEN_ANSWER,
    };
    let (answer, driver) = send::send(client.request()?, &addresses, limits)
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
    let token: TokenAnswer =
        serde_json::from_slice(&body).map_err(|_| format!("{where_} did not answer with a token (RFC 6749 §5.1)"))?;
    if token.token_type.as_deref().is_some_and(|t| !t.eq_ignore_ascii_case("bearer")) {
        return Err(format!("{where_} gave a token that is not a bearer token"));
    }
    if http::HeaderValue::from_str(&format!("Bearer {}", token.access_token)).is_err() {
        return Err(format!("{where_} gave a token that cannot be sent in a header"));
    }
    Ok((Secret::new(token.access_token), lifetime(token.expires_in.as_ref())))
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
