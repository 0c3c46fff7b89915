//! The issuer's metadata (RFC 8414, else OpenID Connect discovery), and
//! opaque tokens checked by introspection (RFC 7662) when the operator
//! gives Quiver client credentials for it. An introspection answer is held
//! to the rules a JWT is: active, from the issuer (when it says), for this
//! server (its `aud` must name it), within its lifetime.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use serde_json::{Map, Value};

use super::keys::fetch;
use super::tokens::{self, Claims, Rejected, Rules};

/// What Quiver reads of the issuer's metadata.
#[derive(Debug, Clone, serde::Deserialize)]
pub struct Metadata {
    /// The issuer it is about (must be the one configured).
    pub issuer: String,
    /// Where its signing keys are.
    pub jwks_uri: Option<String>,
    /// Its introspection endpoint.
    pub introspection_endpoint: Option<String>,
    /// Its authorization endpoint (the dashboard's sign-in).
    pub authorization_endpoint: Option<String>,
    /// Its token endpoint.
    pub token_endpoint: Option<String>,
}

/// The well-known URLs of `issuer`'s metadata, in the order tried: RFC
/// 8414's (inserted before the issuer's path), then OpenID Connect's
/// (appended to it).
pub fn metadata_urls(issuer: &str) -> Vec<String> {
    let trimmed = issuer.trim_end_matches('/');
    let (origin, path) = match trimmed.find("://").map(|i| i + 3) {
        Some(start) => match trimmed[start..].find('/') {
            Some(slash) => trimmed.split_at(start + slash),
            None => (trimmed, ""),
        },
        None => (trimmed, ""),
    };
    vec![
        format!("{origin}/.well-known/oauth-authorization-server{path}"),
        format!("{trimmed}/.well-known/openid-configuration"),
    ]
}

/// Read `issuer`'s metadata from the first of its well-known URLs that
/// answers; it must name the same issuer (RFC 8414 §3.3).
pub async fn discover(client: &reqwest::Client, issuer: &str) -> Result<Metadata, String> {
    let mut reasons = Vec::new();
    for url in metadata_urls(issuer) {
        match fetch(client, &url).await {
            Ok(bytes) => {
                let metadata: Metadata = serde_json::from_slice(&bytes)
                    .map_err(|e| format!("{url} is not authorization server metadata: {e}"))?;
                if metadata.issuer.trim_end_matches('/') != issuer.trim_end_matches('/') {
                    return Err(format!("{url} is about issuer `{}`, not `{issuer}`", metadata.issuer));
                }
                return Ok(metadata);
            }
            Err(reason) => reasons.push(reason),
        }
    }
    Err(format!("cannot read the issuer's metadata: {}", reasons.join("; ")))
}

/// Introspection with the client credentials Quiver was given. An
/// accepted answer is kept for `keep_for` (never past the token's own
/// `exp`), by the SHA-256 of the token (the token itself is not kept), so
/// a client's requests do not each cost one to the issuer; a refusal is
/// not kept.
pub struct Introspection {
    url: String,
    client_id: String,
    secret: zeroize::Zeroizing<String>,
    client: reqwest::Client,
    keep_for: Duration,
    kept: Mutex<HashMap<[u8; 32], (Claims, Instant)>>,
}

/// Introspection answers kept at once; past it the expired go, then the
/// ones closest to expiring.
pub const MAX_KEPT: usize = 4096;

impl Introspection {
    /// Introspect at `url` as `client_id` with `secret`, keeping an
    /// accepted answer for `keep_for` (zero: never).
    pub fn new(
        url: String,
        client_id: String,
        secret: String,
        client: reqwest::Client,
        keep_for: Duration,
    ) -> Introspection {
        let secret = zeroize::Zeroizing::new(secret);
        Introspection { url, client_id, secret, client, keep_for, kept: Mutex::new(HashMap::new()) }
    }

    /// What the issuer says of `token` (or said within `keep_for`), held
    /// to `rules`.
    pub async fn check(&self, token: &str, rules: &Rules) -> Result<Claims, Rejected> {
        let digest: [u8; 32] = ring::digest::digest(&ring::digest::SHA256, token.as_bytes())
            .as_ref()
            .try_into()
            .map_err(|_| Rejected::Unavailable)?;
        let now = Instant::now();
        if let Some((claims, until)) = self.kept.lock().unwrap_or_else(PoisonError::into_inner).get(&digest)
            && *until > now
        {
            return Ok(claims.clone());
        }
        let claims = self.ask(token, rules).await?;
        if !self.keep_for.is_zero() {
            let unix = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
            let left = Duration::from_secs(claims.expires.saturating_sub(unix));
            let mut kept = self.kept.lock().unwrap_or_else(PoisonError::into_inner);
            if kept.len() >= MAX_KEPT {
                kept.retain(|_, (_, until)| *until > now);
            }
            if kept.len() >= MAX_KEPT
                && let Some(soonest) = kept.iter().min_by_key(|(_, (_, until))| *until).map(|(k, _)| *k)
            {
                kept.remove(&soonest);
            }
            if let Some(until) = now.checked_add(self.keep_for.min(left)) {
                kept.insert(digest, (claims.clone(), until));
            }
        }
        Ok(claims)
    }

    async fn ask(&self, token: &str, rules: &Rules) -> Result<Claims, Rejected> {
        let response = self
            .client
            .post(&self.url)
            .basic_auth(&self.client_id, Some(self.secret.as_str()))
            .form(&[("token", token), ("token_type_hint", "access_token")])
            .send()
            .await
            .map_err(|e| {
                tracing::warn!(url = %self.url, reason = %e.without_url(), "cannot introspect a token");
                Rejected::Unavailable
            })?;
        if !response.status().is_success() {
            tracing::warn!(url = %self.url, status = %response.status(), "the introspection endpoint refused Quiver");
            return Err(Rejected::Unavailable);
        }
        let answer: Map<String, Value> = response.json().await.map_err(|_| Rejected::Unavailable)?;
        judge(&answer, rules)
    }
}

/// An introspection answer held to `rules`.
pub fn judge(answer: &Map<String, Value>, rules: &Rules) -> Result<Claims, Rejected> {
    if answer.get("active") != Some(&Value::Bool(true)) {
        return Err(Rejected::Inactive);
    }
    if answer.get("iss").is_some_and(|iss| iss.as_str() != Some(rules.issuer.as_str())) {
        return Err(Rejected::Issuer);
    }
    let for_us = match answer.get("aud") {
        Some(Value::String(aud)) => *aud == rules.audience,
        Some(Value::Array(auds)) => auds.iter().any(|a| a.as_str() == Some(rules.audience.as_str())),
        _ => false,
    };
    if !for_us {
        return Err(Rejected::Audience);
    }
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
    if answer.get("exp").and_then(Value::as_u64).is_some_and(|exp| exp + rules.leeway < now) {
        return Err(Rejected::Expired);
    }
    if answer.get("nbf").and_then(Value::as_u64).is_some_and(|nbf| nbf > now + rules.leeway) {
        return Err(Rejected::NotYetValid);
    }
    tokens::claims(answer, &rules.agent_claim)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metadata_is_looked_for_where_both_specs_put_it() {
        assert_eq!(
            metadata_urls("https://login.example.com"),
            [
                "https://login.example.com/.well-known/oauth-authorization-server",
                "https://login.example.com/.well-known/openid-configuration"
            ]
        );
        assert_eq!(
            metadata_urls("https://login.example.com/tenant/1/"),
            [
                "https://login.example.com/.well-known/oauth-authorization-server/tenant/1",
                "https://login.example.com/tenant/1/.well-known/openid-configuration"
            ]
        );
    }

    #[test]
    fn an_introspection_answer_must_be_active_and_for_this_server() {
        let rules = Rules {
            issuer: "https://i".into(),
            audience: "https://q/mcp".into(),
            leeway: 0,
            agent_claim: "sub".into(),
        };
        let answer = |v: Value| judge(v.as_object().unwrap(), &rules);
        assert_eq!(answer(serde_json::json!({"active": false})), Err(Rejected::Inactive));
        assert_eq!(answer(serde_json::json!({"active": true, "sub": "a"})), Err(Rejected::Audience));
        assert_eq!(
            answer(serde_json::json!({"active": true, "sub": "a", "aud": "https://q/mcp", "iss": "https://x"})),
            Err(Rejected::Issuer)
        );
        assert_eq!(
            answer(serde_json::json!({"active": true, "sub": "a", "aud": "https://q/mcp", "exp": 1})),
            Err(Rejected::Expired)
        );
        let claims = answer(
            serde_json::json!({"active": true, "sub": "a", "aud": ["x", "https://q/mcp"], "scope": "quiver:db:read"}),
        )
        .unwrap();
        assert_eq!(claims.subject, "a");
        assert!(claims.grants.allows("db__query", "db", quiver_contract::Access::Read));
    }
}
