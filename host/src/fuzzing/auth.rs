//! The OAuth parsers: an access token as a client sends it, and the
//! issuer's key set as its JWKS URL answers.
//!
//! The tokens are checked against one fixed EC P-256 key
//! (`access_token_key.der`, PKCS#8, made for the fuzzer and nothing else;
//! `fuzz/seeds.py` signs its seed tokens with it), so that the fuzzer
//! starts from tokens that verify and mutates their claims, header and
//! signature.

use std::sync::OnceLock;

use base64::Engine as _;
use ring::signature::KeyPair as _;

use crate::auth::keys::KeySet;
use crate::auth::scopes::{Grants, Scope};
use crate::auth::tokens::{self, Rules};

/// The fixed key's private half (PKCS#8 DER).
pub const ACCESS_TOKEN_KEY: &[u8] = include_bytes!("access_token_key.der");
/// The `kid` the seeds' key is published under.
pub const KID: &str = "fuzz";
/// The issuer the seeds are from.
pub const ISSUER: &str = "https://issuer.fuzz";
/// The audience the seeds are for.
pub const AUDIENCE: &str = "https://quiver.fuzz/mcp";

/// The key set publishing the fixed key, as a JWKS document.
pub fn jwks_document() -> String {
    let rng = ring::rand::SystemRandom::new();
    let pair = ring::signature::EcdsaKeyPair::from_pkcs8(
        &ring::signature::ECDSA_P256_SHA256_FIXED_SIGNING,
        ACCESS_TOKEN_KEY,
        &rng,
    )
    .expect("the fuzzer's key reads");
    let point = pair.public_key().as_ref();
    let b64 = |bytes: &[u8]| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes);
    serde_json::json!({"keys": [{
        "kty": "EC", "crv": "P-256", "kid": KID, "alg": "ES256", "use": "sig",
        "x": b64(&point[1..33]), "y": b64(&point[33..65]),
    }]})
    .to_string()
}

fn keys() -> &'static KeySet {
    static KEYS: OnceLock<KeySet> = OnceLock::new();
    KEYS.get_or_init(|| KeySet::parse(jwks_document().as_bytes()).expect("the fuzzer's key set reads"))
}

fn rules() -> Rules {
    Rules { issuer: ISSUER.into(), audience: AUDIENCE.into(), leeway: 30, agent_claim: "sub".into() }
}

/// `data` is a token (its first line) and then scope strings, one per
/// line. The token's check never panics, and one it accepts is one the
/// fixed key signed, for this audience, from this issuer (checked again
/// here from the claims). Every
/// scope the grammar reads writes back as the same text.
pub fn access_token(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let mut lines = text.split('\n');
    let token = lines.next().unwrap_or_default();
    // A refusal is one of the fixed sentences: nothing of the token is in
    // it (`Rejected::description` is `&'static str`), so there is nothing
    // to check of one beyond not panicking. (A substring check was a false
    // alarm: "en is not a JWT" is part of a sentence.)
    if let Ok(claims) = tokens::verify(token, keys(), &rules()) {
        let payload = token.split('.').nth(1).expect("an accepted token has a payload");
        let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(payload).expect("base64url");
        let payload: serde_json::Value = serde_json::from_slice(&bytes).expect("a JSON payload");
        assert_eq!(payload["iss"], ISSUER, "{payload}");
        let aud = &payload["aud"];
        assert!(aud == AUDIENCE || aud.as_array().is_some_and(|a| a.iter().any(|v| v == AUDIENCE)), "{payload}");
        assert!(!claims.subject.is_empty());
    }
    for scope in lines {
        if let Some(parsed) = Scope::parse(scope) {
            assert_eq!(parsed.text(), scope, "a scope reads back as written");
        }
    }
    let grants = Grants::from_scopes(text.split(['\n', ' ']));
    assert!(grants.sent().len() <= 256);
}

/// `data` is a JWKS document. Reading it never panics; every key kept
/// verifies only algorithms its type allows, never an HMAC or `none`.
pub fn jwks(data: &[u8]) {
    let Ok(set) = KeySet::parse(data) else { return };
    for kid in ["", KID, "k1", "0"] {
        if let Some(key) = set.find(Some(kid)) {
            assert!(!key.algorithms.is_empty());
            use jsonwebtoken::Algorithm as A;
            assert!(!key.algorithms.iter().any(|a| matches!(a, A::HS256 | A::HS384 | A::HS512)), "{kid}");
        }
    }
}

/// `data` is what the dashboard's sign-in reads from outside: a status
/// byte, then the token endpoint's answer up to the first newline, then a
/// `Cookie` header up to the next, then a redirect path. None of it
/// panics; an answer taken has a non-empty token; a refusal names a code
/// RFC 6749 defines (or `other`) and a description with no control
/// characters; a state found in the cookies is 43 base64url characters;
/// a redirect path allowed is a plain absolute path.
pub fn sign_in(data: &[u8]) {
    use crate::auth::browser::{SignInError, answer, redirect_path_allowed, refusal_code};
    let Some((&status, rest)) = data.split_first() else { return };
    let mut parts = rest.splitn(3, |&b| b == b'\n');
    let (body, cookie, path) = (parts.next().unwrap_or_default(), parts.next(), parts.next());
    match answer(200 + u16::from(status % 4) * 100, body) {
        Ok(exchanged) => assert!(!exchanged.access_token.is_empty()),
        Err(SignInError::Refused { error, description }) => {
            assert_eq!(refusal_code(&error), error, "only known codes are shown");
            assert!(description.is_none_or(|d| !d.chars().any(char::is_control)), "a description is sanitised");
        }
        Err(_) => {}
    }
    if let Some(cookie) = cookie.and_then(|c| axum::http::HeaderValue::from_bytes(c).ok()) {
        let mut headers = axum::http::HeaderMap::new();
        headers.insert(axum::http::header::COOKIE, cookie);
        if let Some(state) = crate::faces::dashboard::signin::state_of(&headers) {
            assert!(state.len() == 43 && state.bytes().all(|b| b.is_ascii_alphanumeric() || b"-_".contains(&b)));
        }
    }
    if let Some(path) = path.and_then(|p| std::str::from_utf8(p).ok())
        && redirect_path_allowed(path)
    {
        assert!(path.starts_with('/') && !path.contains("//") && !path.split('/').any(|s| s == ".."), "{path:?}");
        assert!(path.parse::<axum::http::uri::PathAndQuery>().is_ok_and(|p| p.query().is_none()), "{path:?}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::tokens::Rejected;

    fn sign(header: serde_json::Value, claims: serde_json::Value) -> String {
        let key = jsonwebtoken::EncodingKey::from_ec_der(ACCESS_TOKEN_KEY);
        let mut h = jsonwebtoken::Header::new(jsonwebtoken::Algorithm::ES256);
        h.kid = header["kid"].as_str().map(str::to_owned);
        jsonwebtoken::encode(&h, &claims, &key).unwrap()
    }

    fn claims(aud: &str, exp: u64) -> serde_json::Value {
        serde_json::json!({"iss": ISSUER, "aud": aud, "sub": "s", "exp": exp, "scope": "quiver:db:read"})
    }

    #[test]
    fn the_fixed_key_signs_tokens_that_verify_and_only_those() {
        let good = sign(serde_json::json!({"kid": KID}), claims(AUDIENCE, 4_102_444_800));
        let accepted = tokens::verify(&good, keys(), &rules()).unwrap();
        assert_eq!(accepted.subject, "s");
        assert!(accepted.grants.allows("db__q", "db", crate::contract::Access::Read));
        access_token(good.as_bytes());
        let other = sign(serde_json::json!({"kid": KID}), claims("https://elsewhere/mcp", 4_102_444_800));
        assert_eq!(tokens::verify(&other, keys(), &rules()), Err(Rejected::Audience));
        let old = sign(serde_json::json!({"kid": KID}), claims(AUDIENCE, 1_000_000));
        assert_eq!(tokens::verify(&old, keys(), &rules()), Err(Rejected::Expired));
        let unnamed = sign(serde_json::json!({}), claims(AUDIENCE, 4_102_444_800));
        assert!(tokens::verify(&unnamed, keys(), &rules()).is_ok(), "the only key serves a token naming none");
        let elsewhere = sign(serde_json::json!({"kid": "other"}), claims(AUDIENCE, 4_102_444_800));
        assert_eq!(tokens::verify(&elsewhere, keys(), &rules()), Err(Rejected::UnknownKey));
        let (signed, _) = good.rsplit_once('.').unwrap();
        let none = format!("{}.{}.", b64(r#"{"alg":"none","kid":"fuzz"}"#), signed.split('.').nth(1).unwrap());
        assert_eq!(tokens::verify(&none, keys(), &rules()), Err(Rejected::Algorithm));
        let hs = format!("{}.{}.c2ln", b64(r#"{"alg":"HS256","kid":"fuzz"}"#), signed.split('.').nth(1).unwrap());
        assert_eq!(tokens::verify(&hs, keys(), &rules()), Err(Rejected::Algorithm));
        assert_eq!(tokens::verify("opaque", keys(), &rules()), Err(Rejected::Malformed));
    }

    /// A seed `fuzz/seeds.py` signed (Python's `cryptography`, RFC 6979):
    /// another implementation's ES256 verifies here.
    #[test]
    fn a_seed_signed_elsewhere_verifies() {
        let seed = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../fuzz/corpus/access_token/seed-594b7092b2b75b23"
        ))
        .unwrap();
        let token = seed.lines().next().unwrap();
        let claims = tokens::verify(token, keys(), &rules()).unwrap();
        assert_eq!(claims.subject, "agent-1");
    }

    fn b64(text: &str) -> String {
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(text)
    }
}
