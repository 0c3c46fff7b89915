//! The issuer's signing keys: a JWKS document read into keys by `kid`,
//! each pinned to the algorithms its type allows, and kept fresh.
//!
//! Only public keys that sign are kept: RSA (`RS*`, `PS*`), EC P-256 and
//! P-384 (`ES256`, `ES384`) and Ed25519 (`EdDSA`). A symmetric (`oct`) key
//! is never one: a token signed with an HMAC would need a secret shared
//! with every client, and accepting one is how HS/RS confusion starts. A
//! key marked for encryption (`use: enc`), one whose `alg` its type
//! cannot have, and one that does not parse are left out, each with the
//! reason kept for the log; the others still serve.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use jsonwebtoken::jwk::{AlgorithmParameters, EllipticCurve, Jwk, PublicKeyUse};
use jsonwebtoken::{Algorithm, DecodingKey};

/// Largest JWKS or metadata document read, in bytes.
pub const MAX_DOCUMENT_BYTES: usize = 256 * 1024;
/// Most keys kept from one JWKS.
const MAX_KEYS: usize = 64;

/// One verifying key and the algorithms it may verify.
#[derive(Clone)]
pub struct Key {
    /// The key.
    pub key: DecodingKey,
    /// The algorithms a token signed with it may name.
    pub algorithms: Vec<Algorithm>,
}

/// The keys of one JWKS document, by `kid` (`""` for a key without one).
#[derive(Clone, Default)]
pub struct KeySet {
    keys: HashMap<String, Key>,
    /// Why keys of the document were left out.
    pub skipped: Vec<String>,
}

impl KeySet {
    /// Read a JWKS document (`{"keys": [...]}`). An error only when it is
    /// not one at all; keys that cannot serve are skipped with a reason.
    pub fn parse(bytes: &[u8]) -> Result<KeySet, String> {
        #[derive(serde::Deserialize)]
        struct Document {
            keys: Vec<serde_json::Value>,
        }
        if bytes.len() > MAX_DOCUMENT_BYTES {
            return Err(format!("the key set is over {MAX_DOCUMENT_BYTES} bytes"));
        }
        let document: Document =
            serde_json::from_slice(bytes).map_err(|e| format!("not a JWKS document ({{\"keys\": [...]}}): {e}"))?;
        let mut set = KeySet::default();
        for (index, value) in document.keys.into_iter().enumerate().take(MAX_KEYS) {
            match key(value) {
                Ok((kid, key)) => {
                    set.keys.insert(kid, key);
                }
                Err(reason) => set.skipped.push(format!("key {index}: {reason}")),
            }
        }
        Ok(set)
    }

    /// The key a token's header names: by `kid`, or the only key when the
    /// token names none.
    pub fn find(&self, kid: Option<&str>) -> Option<&Key> {
        match kid {
            Some(kid) => self.keys.get(kid),
            None if self.keys.len() == 1 => self.keys.values().next(),
            None => None,
        }
    }

    /// How many keys serve.
    pub fn len(&self) -> usize {
        self.keys.len()
    }

    /// Whether no key serves.
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }
}

/// One key of a JWKS, or why it cannot verify tokens.
fn key(value: serde_json::Value) -> Result<(String, Key), String> {
    let jwk: Jwk = serde_json::from_value(value).map_err(|e| format!("not a key Quiver reads: {e}"))?;
    if matches!(jwk.common.public_key_use, Some(PublicKeyUse::Encryption)) {
        return Err("marked for encryption (`use: enc`)".to_owned());
    }
    let allowed: Vec<Algorithm> = match &jwk.algorithm {
        AlgorithmParameters::RSA(_) => vec![
            Algorithm::RS256,
            Algorithm::RS384,
            Algorithm::RS512,
            Algorithm::PS256,
            Algorithm::PS384,
            Algorithm::PS512,
        ],
        AlgorithmParameters::EllipticCurve(ec) => match ec.curve {
            EllipticCurve::P256 => vec![Algorithm::ES256],
            EllipticCurve::P384 => vec![Algorithm::ES384],
            _ => return Err("an EC curve other than P-256 and P-384".to_owned()),
        },
        AlgorithmParameters::OctetKeyPair(okp) if okp.curve == EllipticCurve::Ed25519 => vec![Algorithm::EdDSA],
        AlgorithmParameters::OctetKeyPair(_) => return Err("an OKP curve other than Ed25519".to_owned()),
        AlgorithmParameters::OctetKey(_) => return Err("a symmetric key (`oct`): never trusted".to_owned()),
    };
    // A key that names its algorithm verifies only that one.
    let algorithms = match jwk.common.key_algorithm {
        Some(named) => {
            let named = named.to_string();
            let Some(algorithm) = allowed.iter().copied().find(|a| format!("{a:?}") == named) else {
                return Err(format!("`alg` {named} does not fit the key's type"));
            };
            vec![algorithm]
        }
        None => allowed,
    };
    let key = DecodingKey::from_jwk(&jwk).map_err(|e| format!("unreadable key material: {e}"))?;
    Ok((jwk.common.key_id.unwrap_or_default(), Key { key, algorithms }))
}

/// Where the keys come from, and the last set read: fetched at first
/// need, again when a token names a key not in it (at most once per
/// `refresh` interval, so made-up `kid`s cannot make Quiver hammer the
/// issuer).
pub struct Keys {
    source: Source,
    refresh: Duration,
    set: RwLock<Arc<KeySet>>,
    /// When the keys were last fetched (a fetch in flight holds it).
    fetched: tokio::sync::Mutex<Option<Instant>>,
    client: reqwest::Client,
    /// The last reason a fetch failed (logged; a token checked meanwhile
    /// is refused as `unavailable` when no key is known).
    pub last_error: Mutex<Option<String>>,
}

/// Where the JWKS is.
pub enum Source {
    /// A URL the operator gave, or the issuer's metadata named.
    Url(String),
}

impl Keys {
    /// Keys fetched from `source`, refreshed at most every `refresh`.
    pub fn new(source: Source, refresh: Duration, client: reqwest::Client) -> Keys {
        Keys {
            source,
            refresh,
            set: RwLock::new(Arc::new(KeySet::default())),
            fetched: tokio::sync::Mutex::new(None),
            client,
            last_error: Mutex::new(None),
        }
    }

    /// The keys as last read.
    pub fn current(&self) -> Arc<KeySet> {
        self.set.read().unwrap_or_else(std::sync::PoisonError::into_inner).clone()
    }

    /// The keys, fetched again when `kid` is not among them and the last
    /// fetch is older than the refresh interval (or there was none).
    pub async fn with(&self, kid: Option<&str>) -> Arc<KeySet> {
        let current = self.current();
        if current.find(kid).is_some() {
            return current;
        }
        let mut fetched = self.fetched.lock().await;
        // Another request may have fetched them while this one waited.
        let current = self.current();
        if current.find(kid).is_some() || fetched.is_some_and(|at| at.elapsed() < self.refresh) {
            return current;
        }
        *fetched = Some(Instant::now());
        match self.fetch().await {
            Ok(set) => {
                for reason in &set.skipped {
                    let reason = crate::catalog::shown::shown(reason);
                    tracing::warn!(%reason, "a key of the issuer's key set is not used");
                }
                let set = Arc::new(set);
                *self.set.write().unwrap_or_else(std::sync::PoisonError::into_inner) = set.clone();
                *self.last_error.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = None;
                set
            }
            Err(reason) => {
                tracing::warn!(reason = %crate::catalog::shown::shown(&reason), "cannot fetch the issuer's keys");
                *self.last_error.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = Some(reason);
                current
            }
        }
    }

    async fn fetch(&self) -> Result<KeySet, String> {
        let Source::Url(url) = &self.source;
        KeySet::parse(&fetch(&self.client, url).await?)
    }
}

/// GET `url`, at most [`MAX_DOCUMENT_BYTES`] of a 200 answer.
pub async fn fetch(client: &reqwest::Client, url: &str) -> Result<Vec<u8>, String> {
    let mut response = client.get(url).send().await.map_err(|e| format!("GET {url}: {e}"))?;
    if !response.status().is_success() {
        return Err(format!("GET {url}: HTTP {}", response.status()));
    }
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(|e| format!("GET {url}: {e}"))? {
        if body.len() + chunk.len() > MAX_DOCUMENT_BYTES {
            return Err(format!("GET {url}: the answer is over {MAX_DOCUMENT_BYTES} bytes"));
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

#[cfg(test)]
mod tests {
    use super::*;

    const RSA: &str = r#"{"kty":"RSA","kid":"r1","n":"sXchDaQebHnPiGvyDOAT4saGEUetSyo9MKLOoWFsueri23bOdgWp4Dy1WlUzewbgBHod5pcM9H95GQRV3JDXboIRROSBigeC5yjU1hGzHHyXss8UDprecbAYxknTcQkhslANGRUZmdTOQ5qTRsLAt6BTYuyvVRdhS8exSZEy_c4gs_7svlJJQ4H9_NxsiIoLwAEk7-Q3UXERGYw_75IDrGA84-lA_-Ct4eTlXHBIY2EaV7t7LjJaynVJCpkv4LKjTTAumiGUIuQhrNhZLuF_RJLqHpM2kgWFLU7-VTdL1VbC2tejvcI2BlMkEpk1BzBZI0KQB0GaDWFLN-aEAw3vRw","e":"AQAB"}"#;

    #[test]
    fn keys_are_pinned_to_their_type() {
        let set = KeySet::parse(format!(r#"{{"keys":[{RSA}]}}"#).as_bytes()).unwrap();
        let key = set.find(Some("r1")).unwrap();
        assert!(key.algorithms.contains(&Algorithm::RS256));
        assert!(!key.algorithms.iter().any(|a| matches!(a, Algorithm::HS256 | Algorithm::HS384 | Algorithm::HS512)));
        assert!(set.find(Some("other")).is_none());
        assert!(set.find(None).is_some(), "the only key serves a token without a kid");
    }

    #[test]
    fn symmetric_encrypting_and_mismatched_keys_are_skipped() {
        let oct = r#"{"kty":"oct","kid":"s","k":"c2VjcmV0"}"#;
        let enc = RSA.replace(r#""kid":"r1""#, r#""kid":"e","use":"enc""#);
        let mismatched = RSA.replace(r#""kid":"r1""#, r#""kid":"m","alg":"ES256""#);
        let document = format!(r#"{{"keys":[{oct},{enc},{mismatched},{{"kty":"nope"}},{RSA}]}}"#);
        let set = KeySet::parse(document.as_bytes()).unwrap();
        assert_eq!(set.len(), 1);
        assert_eq!(set.skipped.len(), 4, "{:?}", set.skipped);
        assert!(set.skipped[0].contains("symmetric"), "{:?}", set.skipped);
        assert!(KeySet::parse(b"[]").is_err());
        assert!(KeySet::parse(b"{\"keys\":{}}").is_err());
    }
}
