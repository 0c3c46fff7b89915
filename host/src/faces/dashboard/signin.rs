//! Dashboard sign-ins: a browser cannot send the bearer header, so in
//! token mode a form exchanges the token for a session cookie (HttpOnly,
//! SameSite=Strict), and each sign-in has a CSRF token that every request
//! changing something must carry in a header ([`CSRF_HEADER`]). Sign-ins
//! live in memory, expire, and are capped in number.
//!
//! [`CSRF_HEADER`]: crate::faces::guard::CSRF_HEADER

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use axum::http::HeaderMap;
use axum::http::header;
use ring::rand::{SecureRandom, SystemRandom};

use crate::sandbox::secrets::constant_time_eq;

/// The cookie's name.
pub const COOKIE: &str = "quiver_session";

/// How long a sign-in lasts.
pub const LASTS: Duration = Duration::from_secs(12 * 60 * 60);

/// Sign-ins kept at once; past it the oldest is ended.
pub const MAX: usize = 1024;

/// One signed-in browser.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignedIn {
    /// The token its state-changing requests carry.
    pub csrf: String,
    /// Its session id (the cookie's value).
    id: String,
}

struct Kept {
    csrf: String,
    until: Instant,
}

/// The sign-ins of one server.
pub struct SignIns {
    /// The token a sign-in must present; none: signing in needs nothing.
    token: Option<String>,
    /// No token signs in (OAuth mode: the authorization server does).
    closed: bool,
    /// Whether the cookie is marked `Secure` (served off loopback, behind TLS).
    secure: bool,
    kept: Mutex<HashMap<String, Kept>>,
    random: SystemRandom,
}

impl SignIns {
    /// Sign-ins against `token`; cookies marked `Secure` when `secure`.
    pub fn new(token: Option<String>, secure: bool) -> SignIns {
        SignIns { token, closed: false, secure, kept: Mutex::new(HashMap::new()), random: SystemRandom::new() }
    }

    /// Sign-ins no token opens (OAuth mode).
    pub fn closed(secure: bool) -> SignIns {
        SignIns { closed: true, ..SignIns::new(None, secure) }
    }

    /// Whether signing in needs the token (or cannot be done here).
    pub fn token_mode(&self) -> bool {
        self.token.is_some() || self.closed
    }

    /// A new sign-in if `presented` is the token (or none is needed): its
    /// `Set-Cookie` value.
    pub fn sign_in(&self, presented: &str) -> Option<String> {
        if self.closed {
            return None;
        }
        if let Some(token) = &self.token
            && !constant_time_eq(presented.as_bytes(), token.as_bytes())
        {
            return None;
        }
        let (id, csrf) = (self.random_hex()?, self.random_hex()?);
        let mut kept = self.kept.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let now = Instant::now();
        kept.retain(|_, k| k.until > now);
        if kept.len() >= MAX
            && let Some(oldest) = kept.iter().min_by_key(|(_, k)| k.until).map(|(id, _)| id.clone())
        {
            kept.remove(&oldest);
        }
        kept.insert(id.clone(), Kept { csrf, until: now + LASTS });
        let secure = if self.secure { "; Secure" } else { "" };
        Some(format!("{COOKIE}={id}; Path=/; HttpOnly; SameSite=Strict; Max-Age={}{secure}", LASTS.as_secs()))
    }

    /// End the sign-in of `headers`' cookie, if any: the `Set-Cookie`
    /// value that clears it.
    pub fn sign_out(&self, headers: &HeaderMap) -> String {
        if let Some(id) = cookie(headers) {
            self.kept.lock().unwrap_or_else(std::sync::PoisonError::into_inner).remove(id);
        }
        format!("{COOKIE}=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0")
    }

    /// The live sign-in whose cookie `headers` carry.
    pub fn of(&self, headers: &HeaderMap) -> Option<SignedIn> {
        let id = cookie(headers)?;
        let kept = self.kept.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let found = kept.get(id).filter(|k| k.until > Instant::now())?;
        Some(SignedIn { csrf: found.csrf.clone(), id: id.to_owned() })
    }

    fn random_hex(&self) -> Option<String> {
        let mut bytes = [0u8; 32];
        self.random.fill(&mut bytes).ok()?;
        Some(hex::encode(bytes))
    }
}

/// The session id in `headers`' `Cookie`s.
fn cookie(headers: &HeaderMap) -> Option<&str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(name, _)| *name == COOKIE)
        .map(|(_, value)| value)
        .filter(|v| v.len() == 64 && v.bytes().all(|b| b.is_ascii_hexdigit()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with_cookie(set_cookie: &str) -> HeaderMap {
        let pair = set_cookie.split(';').next().unwrap();
        let mut headers = HeaderMap::new();
        headers.insert(header::COOKIE, format!("other=1; {pair}").parse().unwrap());
        headers
    }

    #[test]
    fn only_the_token_signs_in_and_the_cookie_is_closed_to_scripts_and_other_sites() {
        let sign_ins = SignIns::new(Some("s3cret".into()), false);
        assert!(sign_ins.sign_in("wrong").is_none());
        assert!(sign_ins.sign_in("s3cret2").is_none());
        let set = sign_ins.sign_in("s3cret").unwrap();
        assert!(set.contains("; HttpOnly") && set.contains("; SameSite=Strict") && !set.contains("Secure"), "{set}");
        let headers = with_cookie(&set);
        let signed = sign_ins.of(&headers).expect("signed in");
        assert_eq!(signed.csrf.len(), 64);
        assert_ne!(signed.csrf, signed.id, "the CSRF token is not the cookie");
        assert!(sign_ins.sign_out(&headers).contains("Max-Age=0"));
        assert!(sign_ins.of(&headers).is_none(), "signed out");
        assert!(SignIns::new(Some("t".into()), true).sign_in("t").unwrap().ends_with("; Secure"));
    }

    #[test]
    fn a_made_up_cookie_is_no_one() {
        let sign_ins = SignIns::new(None, false);
        let mut headers = HeaderMap::new();
        headers.insert(header::COOKIE, format!("{COOKIE}={}", "a".repeat(64)).parse().unwrap());
        assert!(sign_ins.of(&headers).is_none());
        headers.insert(header::COOKIE, format!("{COOKIE}=../../x").parse().unwrap());
        assert!(sign_ins.of(&headers).is_none());
    }
}
