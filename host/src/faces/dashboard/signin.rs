//! Dashboard sign-ins: a browser cannot send the bearer header, so in
//! token mode a form exchanges the token for a session cookie (HttpOnly,
//! SameSite=Strict), and in OAuth mode the authorization server's sign-in
//! ends in one ([`issuer`](super::issuer)), which then carries the
//! principal the access token named. Each sign-in has a CSRF token that
//! every request changing something must carry in a header
//! ([`CSRF_HEADER`]). Sign-ins expire; they are kept in memory (capped
//! in number), or in the Redis replicas share ([`kept`](super::kept)).
//!
//! [`CSRF_HEADER`]: crate::faces::guard::CSRF_HEADER

use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::http::HeaderMap;
use axum::http::header;
use ring::rand::{SecureRandom, SystemRandom};

use zeroize::Zeroizing;

use super::kept::{Entry, Kept};
use crate::auth;
use crate::faces::shared::Redis;
use crate::sandbox::secrets::constant_time_eq;

/// The cookie's name.
pub const COOKIE: &str = "quiver_session";

/// The cookie binding an OAuth sign-in under way to its browser (its `state`).
pub const STATE_COOKIE: &str = "quiver_sign_in_state";

/// How long a sign-in lasts.
pub const LASTS: Duration = Duration::from_secs(12 * 60 * 60);

/// One signed-in browser.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignedIn {
    /// The token its state-changing requests carry.
    pub csrf: String,
    /// Its session id (the cookie's value).
    id: String,
    /// Who signed in through the authorization server (OAuth mode); none:
    /// the operator (the token's holder, or anyone on an open loopback server).
    pub principal: Option<auth::Principal>,
}

/// Why a sign-in could not be read or kept: the shared store cannot answer
/// (or, never in practice, the system's randomness failed).
pub type Unkept = String;

/// The sign-ins of one server.
pub struct SignIns {
    /// The token a sign-in must present; none: signing in needs nothing.
    token: Option<String>,
    /// No token signs in (OAuth mode: the authorization server does).
    closed: bool,
    /// Whether the cookie is marked `Secure` (served off loopback, behind TLS).
    secure: bool,
    kept: Kept,
    random: SystemRandom,
}

impl SignIns {
    /// Sign-ins against `token`; cookies marked `Secure` when `secure`.
    pub fn new(token: Option<String>, secure: bool) -> SignIns {
        let kept = Kept::Local(std::sync::Mutex::default());
        SignIns { token, closed: false, secure, kept, random: SystemRandom::new() }
    }

    /// Sign-ins no token opens (OAuth mode).
    pub fn closed(secure: bool) -> SignIns {
        SignIns { closed: true, ..SignIns::new(None, secure) }
    }

    /// The same, kept in `redis` (shared by the replicas) when given.
    pub fn shared(self, redis: Option<Arc<Redis>>) -> SignIns {
        match redis {
            Some(redis) => SignIns { kept: Kept::Shared(redis), ..self },
            None => self,
        }
    }

    /// Whether signing in needs the token (or cannot be done here).
    pub fn token_mode(&self) -> bool {
        self.token.is_some() || self.closed
    }

    /// A new sign-in if `presented` is the token (or none is needed): its
    /// `Set-Cookie` value; none for another token.
    pub async fn sign_in(&self, presented: &str) -> Result<Option<String>, Unkept> {
        if self.closed {
            return Ok(None);
        }
        if let Some(token) = &self.token
            && !constant_time_eq(presented.as_bytes(), token.as_bytes())
        {
            return Ok(None);
        }
        self.open(None, LASTS).await.map(Some)
    }

    /// A new sign-in of `principal` (checked by the authorization server's
    /// sign-in) for at most `lasts`: its `Set-Cookie` value.
    pub async fn sign_in_as(&self, principal: auth::Principal, lasts: Duration) -> Result<String, Unkept> {
        self.open(Some(principal), lasts.min(LASTS)).await
    }

    async fn open(&self, principal: Option<auth::Principal>, lasts: Duration) -> Result<String, Unkept> {
        let (id, csrf) = (self.random_hex()?, self.random_hex()?);
        self.kept.put(&id, Entry { csrf, principal }, lasts).await?;
        Ok(format!("{COOKIE}={id}; Path=/; HttpOnly; SameSite=Strict; Max-Age={}{}", lasts.as_secs(), self.secure()))
    }

    fn secure(&self) -> &'static str {
        if self.secure { "; Secure" } else { "" }
    }

    /// The cookie binding the sign-in `state` to this browser, sent back
    /// only to `path` (the redirect path). `SameSite=Lax`: the browser
    /// comes back from the issuer's site, a top-level navigation.
    pub fn state_cookie(&self, state: &str, path: &str, lasts: Duration) -> String {
        format!(
            "{STATE_COOKIE}={state}; Path={path}; HttpOnly; SameSite=Lax; Max-Age={}{}",
            lasts.as_secs(),
            self.secure()
        )
    }

    /// The `Set-Cookie` value that clears the state cookie at `path`.
    pub fn state_cleared(&self, path: &str) -> String {
        format!("{STATE_COOKIE}=; Path={path}; HttpOnly; SameSite=Lax; Max-Age=0{}", self.secure())
    }

    /// Keep the PKCE `verifier` of the sign-in begun with `state` until
    /// the browser comes back (through any replica), at most `lasts`.
    pub async fn begin(&self, state: &str, verifier: &str, lasts: Duration) -> Result<(), Unkept> {
        self.kept.begin(state, verifier, lasts).await
    }

    /// The verifier of the sign-in begun with `state`, spent (a `state`
    /// finishes one sign-in at most); none for a `state` not begun here,
    /// spent, or expired.
    pub async fn finish(&self, state: &str) -> Result<Option<Zeroizing<String>>, Unkept> {
        self.kept.take(state).await
    }

    /// End the sign-in of `headers`' cookie, if any: the `Set-Cookie`
    /// value that clears it.
    pub async fn sign_out(&self, headers: &HeaderMap) -> Result<String, Unkept> {
        if let Some(id) = cookie(headers) {
            self.kept.remove(id).await?;
        }
        Ok(format!("{COOKIE}=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0"))
    }

    /// Whether `signed` is still signed in (not signed out, not expired);
    /// not when that cannot be read.
    pub async fn holds(&self, signed: &SignedIn) -> bool {
        self.kept.get(&signed.id).await.is_ok_and(|found| found.is_some())
    }

    /// When `signed` ends, unless signed out before.
    pub async fn until(&self, signed: &SignedIn) -> Option<Instant> {
        self.kept.get(&signed.id).await.ok().flatten().map(|(_, until)| until)
    }

    /// The live sign-in whose cookie `headers` carry.
    pub async fn of(&self, headers: &HeaderMap) -> Result<Option<SignedIn>, Unkept> {
        let Some(id) = cookie(headers) else { return Ok(None) };
        let found = self.kept.get(id).await?;
        Ok(found.map(|(entry, _)| SignedIn { csrf: entry.csrf, id: id.to_owned(), principal: entry.principal }))
    }

    fn random_hex(&self) -> Result<String, Unkept> {
        let mut bytes = [0u8; 32];
        self.random.fill(&mut bytes).map_err(|_| "the system's randomness failed".to_owned())?;
        Ok(hex::encode(bytes))
    }
}

/// The session id in `headers`' `Cookie`s.
fn cookie(headers: &HeaderMap) -> Option<&str> {
    named(headers, COOKIE).filter(|v| v.len() == 64 && v.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// The sign-in `state` in `headers`' `Cookie`s (43 base64url characters).
pub fn state_of(headers: &HeaderMap) -> Option<&str> {
    named(headers, STATE_COOKIE)
        .filter(|v| v.len() == 43 && v.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_'))
}

fn named<'a>(headers: &'a HeaderMap, wanted: &str) -> Option<&'a str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(name, _)| *name == wanted)
        .map(|(_, value)| value)
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

    #[tokio::test]
    async fn only_the_token_signs_in_and_the_cookie_is_closed_to_scripts_and_other_sites() {
        let sign_ins = SignIns::new(Some("s3cret".into()), false);
        assert!(sign_ins.sign_in("wrong").await.unwrap().is_none());
        assert!(sign_ins.sign_in("s3cret2").await.unwrap().is_none());
        let set = sign_ins.sign_in("s3cret").await.unwrap().unwrap();
        assert!(set.contains("; HttpOnly") && set.contains("; SameSite=Strict") && !set.contains("Secure"), "{set}");
        let headers = with_cookie(&set);
        let signed = sign_ins.of(&headers).await.unwrap().expect("signed in");
        assert_eq!(signed.csrf.len(), 64);
        assert_ne!(signed.csrf, signed.id, "the CSRF token is not the cookie");
        assert!(sign_ins.sign_out(&headers).await.unwrap().contains("Max-Age=0"));
        assert!(sign_ins.of(&headers).await.unwrap().is_none(), "signed out");
        let secure = SignIns::new(Some("t".into()), true).sign_in("t").await.unwrap().unwrap();
        assert!(secure.ends_with("; Secure"), "{secure}");
    }

    #[tokio::test]
    async fn a_state_finishes_one_sign_in() {
        let sign_ins = SignIns::closed(false);
        assert_eq!(sign_ins.finish("made-up").await.unwrap(), None);
        sign_ins.begin("state", "verifier", Duration::from_secs(60)).await.unwrap();
        assert_eq!(sign_ins.finish("state").await.unwrap().as_deref().map(String::as_str), Some("verifier"));
        assert_eq!(sign_ins.finish("state").await.unwrap(), None, "spent");
        sign_ins.begin("brief", "verifier", Duration::ZERO).await.unwrap();
        assert_eq!(sign_ins.finish("brief").await.unwrap(), None, "expired");
    }

    #[tokio::test]
    async fn an_issuer_sign_in_carries_its_principal_and_ends_with_its_token() {
        let sign_ins = SignIns::closed(false);
        assert!(sign_ins.sign_in("").await.unwrap().is_none(), "no token opens an OAuth server's dashboard");
        let principal = auth::Principal {
            subject: "ada".into(),
            client_id: Some("dash".into()),
            agent: None,
            grants: std::sync::Arc::new(auth::scopes::Grants::from_scopes(["quiver:*:read"])),
            expires: u64::MAX,
        };
        let set = sign_ins.sign_in_as(principal.clone(), Duration::from_secs(300)).await.unwrap();
        assert!(set.ends_with("Max-Age=300"), "{set}");
        assert_eq!(sign_ins.of(&with_cookie(&set)).await.unwrap().unwrap().principal, Some(principal.clone()));
        let capped = sign_ins.sign_in_as(principal, Duration::from_secs(10 * LASTS.as_secs())).await.unwrap();
        assert!(capped.ends_with(&format!("Max-Age={}", LASTS.as_secs())), "{capped}");
        let state = "a".repeat(43);
        let bound = sign_ins.state_cookie(&state, "/ui/sign-in/callback", Duration::from_secs(600));
        assert!(bound.contains("SameSite=Lax") && bound.contains("Path=/ui/sign-in/callback"), "{bound}");
        assert_eq!(state_of(&with_cookie(&bound)), Some(state.as_str()));
        assert_eq!(state_of(&with_cookie("quiver_sign_in_state=short")), None);
    }

    #[tokio::test]
    async fn a_made_up_cookie_is_no_one() {
        let sign_ins = SignIns::new(None, false);
        let mut headers = HeaderMap::new();
        headers.insert(header::COOKIE, format!("{COOKIE}={}", "a".repeat(64)).parse().unwrap());
        assert!(sign_ins.of(&headers).await.unwrap().is_none());
        headers.insert(header::COOKIE, format!("{COOKIE}=../../x").parse().unwrap());
        assert!(sign_ins.of(&headers).await.unwrap().is_none());
    }
}
