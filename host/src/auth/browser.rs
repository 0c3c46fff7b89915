//! A person's sign-in through the authorization server, for the
//! dashboard: the authorization code flow with PKCE (RFC 7636, S256),
//! Quiver the client (`dashboard_client_id`). Quiver sends the browser to
//! the issuer's authorization endpoint with a fresh `state` and code
//! challenge, and the issuer sends it back to the redirect URI with a
//! code; Quiver trades the code and its verifier for an access token at
//! the token endpoint and checks that token as it checks any other
//! ([`Oauth::authenticate`](super::Oauth::authenticate)). The access token
//! is dropped once checked: the sign-in keeps its principal, never the
//! token. Both requests name this server as the `resource` (RFC 8707), so
//! the token is issued for it alone.
//!
//! The face keeps each `state`'s verifier until the browser comes back
//! (through any replica), spends it once, lets it expire, and binds the
//! `state` to the browser that asked for it by a cookie, so no one can
//! sign another person's browser in as themselves.

use std::time::Duration;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use ring::rand::{SecureRandom, SystemRandom};
use zeroize::Zeroizing;

use super::introspect::Metadata;
use super::settings::{AuthSettings, DEFAULT_REDIRECT_PATH};
use crate::error::{Error, Result};

/// How long a browser has to come back from the issuer.
pub const PENDING_FOR: Duration = Duration::from_secs(10 * 60);

/// The largest token endpoint answer read.
const MAX_ANSWER_BYTES: usize = 64 * 1024;

/// The dashboard's client at the authorization server.
pub struct BrowserSignIn {
    client_id: String,
    secret: Option<Zeroizing<String>>,
    /// The redirect URI registered at the issuer: `resource`'s origin and
    /// the redirect path.
    redirect_uri: String,
    redirect_path: String,
    /// `host[:port]` of the redirect URI, where the browser must be.
    authority: String,
    origin: String,
    authorization_endpoint: String,
    token_endpoint: String,
    scope: String,
    resource: String,
    client: reqwest::Client,
    random: SystemRandom,
}

/// A sign-in begun: where to send the browser, and the `state` to bind to it.
pub struct Started {
    /// The authorization request's URL.
    pub location: String,
    /// The `state` it carries (the face binds it to the browser).
    pub state: String,
    /// The PKCE verifier the face keeps by `state` until the browser comes back.
    pub verifier: Zeroizing<String>,
}

/// What the token endpoint gave.
pub struct Exchanged {
    /// The access token, to check and drop.
    pub access_token: Zeroizing<String>,
    /// Its lifetime in seconds, when the issuer said.
    pub expires_in: Option<u64>,
}

/// Why a sign-in did not finish.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SignInError {
    /// The `state` is not one this server gave, was used, or expired.
    #[error("this sign-in was not started here, was already used, or took over ten minutes: start again")]
    UnknownState,
    /// The browser came back without a code.
    #[error("the authorization server sent no code back")]
    NoCode,
    /// The issuer said no (its `error` code, and its description shown safely).
    #[error("the authorization server refused the sign-in: {error}{}", description.as_deref().map(|d| format!(" ({d})")).unwrap_or_default())]
    Refused {
        /// The OAuth error code (`other` for one RFC 6749 does not define).
        error: String,
        /// What the issuer said of it, sanitised.
        description: Option<String>,
    },
    /// The token endpoint could not be reached or answered nonsense.
    #[error("the authorization server's token endpoint failed: {0}")]
    Exchange(String),
    /// The access token it gave is not one this server accepts.
    #[error("the authorization server's access token is not one this server accepts: {}", .0.description())]
    Token(super::tokens::Rejected),
    /// Where the sign-ins under way are kept (the replicas' Redis) cannot answer.
    #[error("the sign-in cannot be finished now (the session store cannot answer): start again in a moment")]
    Unkept(String),
}

impl SignInError {
    /// The reason's label, for the log and the metrics.
    pub fn label(&self) -> &'static str {
        match self {
            SignInError::UnknownState => "sign_in_state",
            SignInError::NoCode => "sign_in_no_code",
            SignInError::Refused { .. } => "sign_in_refused",
            SignInError::Exchange(_) => "sign_in_exchange",
            SignInError::Token(_) => "sign_in_token",
            SignInError::Unkept(_) => "sign_in_unkept",
        }
    }
}

impl BrowserSignIn {
    /// The dashboard's client as `settings` describe it, at the endpoints
    /// `metadata` names, for `resource`; `None` without a
    /// `dashboard_client_id`.
    pub fn new(
        settings: &AuthSettings,
        metadata: Option<&Metadata>,
        resource: &str,
        client: reqwest::Client,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Option<BrowserSignIn>> {
        let at = |field: &str| format!("[auth] {field}");
        let Some(client_id) = settings.dashboard_client_id.clone() else { return Ok(None) };
        let secret = match &settings.dashboard_client_secret_env {
            None => None,
            Some(var) => Some(Zeroizing::new(
                env(var)
                    .filter(|s| !s.is_empty())
                    .ok_or_else(|| Error::config(at("dashboard_client_secret_env"), format!("`{var}` is not set")))?,
            )),
        };
        let endpoint = |name: &str, found: Option<&String>| {
            found.cloned().ok_or_else(|| {
                Error::config(
                    at("issuer"),
                    format!("the issuer's metadata names no `{name}`: the dashboard signs in there"),
                )
            })
        };
        let authorization_endpoint =
            endpoint("authorization_endpoint", metadata.and_then(|m| m.authorization_endpoint.as_ref()))?;
        let token_endpoint = endpoint("token_endpoint", metadata.and_then(|m| m.token_endpoint.as_ref()))?;
        let redirect_path = settings.dashboard_redirect_path.clone().unwrap_or_else(|| DEFAULT_REDIRECT_PATH.into());
        if !redirect_path_allowed(&redirect_path) {
            return Err(Error::config(
                at("dashboard_redirect_path"),
                format!(
                    "`{}` is not a plain absolute path (letters, digits, `-._~` and single `/`)",
                    crate::catalog::shown::shown(&redirect_path)
                ),
            ));
        }
        let url = reqwest::Url::parse(resource)
            .ok()
            .filter(|u| matches!(u.scheme(), "http" | "https") && u.host_str().is_some_and(|h| !h.is_empty()))
            .ok_or_else(|| {
                Error::config(
                    at("resource"),
                    "not an http(s) URL with a host: the dashboard's redirect URI is on its origin",
                )
            })?;
        let host = url.host_str().unwrap_or_default();
        let authority = match url.port() {
            Some(port) => format!("{host}:{port}"),
            None => host.to_owned(),
        };
        let origin = url.origin().ascii_serialization();
        let scope = settings.dashboard_scopes.clone().unwrap_or_else(|| settings.scopes_supported.clone()).join(" ");
        Ok(Some(BrowserSignIn {
            client_id,
            secret,
            redirect_uri: format!("{origin}{redirect_path}"),
            redirect_path,
            authority,
            origin,
            authorization_endpoint,
            token_endpoint,
            scope,
            resource: resource.to_owned(),
            client,
            random: SystemRandom::new(),
        }))
    }

    /// The path the issuer sends the browser back to.
    pub fn redirect_path(&self) -> &str {
        &self.redirect_path
    }

    /// `host[:port]` the browser must be at for the sign-in's cookies to
    /// come back with it.
    pub fn authority(&self) -> &str {
        &self.authority
    }

    /// `scheme://host[:port]` of the redirect URI.
    pub fn origin(&self) -> &str {
        &self.origin
    }

    /// Begin a sign-in: a new `state` and verifier; `None` only if the
    /// system's randomness fails.
    pub fn start(&self) -> Option<Started> {
        let state = self.random_text()?;
        let verifier = Zeroizing::new(self.random_text()?);
        let challenge = URL_SAFE_NO_PAD.encode(ring::digest::digest(&ring::digest::SHA256, verifier.as_bytes()));
        let mut query = vec![
            ("response_type", "code"),
            ("client_id", self.client_id.as_str()),
            ("redirect_uri", self.redirect_uri.as_str()),
            ("state", state.as_str()),
            ("code_challenge", challenge.as_str()),
            ("code_challenge_method", "S256"),
            ("resource", self.resource.as_str()),
        ];
        if !self.scope.is_empty() {
            query.push(("scope", self.scope.as_str()));
        }
        let location = reqwest::Url::parse_with_params(&self.authorization_endpoint, &query).ok()?.to_string();
        Some(Started { location, state, verifier })
    }

    /// Finish the sign-in begun with `verifier` with `code`: the access
    /// token the issuer trades them for.
    pub async fn exchange(&self, verifier: &str, code: &str) -> std::result::Result<Exchanged, SignInError> {
        let mut form = vec![
            ("grant_type", "authorization_code"),
            ("code", code),
            ("redirect_uri", self.redirect_uri.as_str()),
            ("code_verifier", verifier),
            ("resource", self.resource.as_str()),
        ];
        let mut request = self.client.post(&self.token_endpoint);
        match &self.secret {
            Some(secret) => request = request.basic_auth(&self.client_id, Some(secret.as_str())),
            None => form.push(("client_id", self.client_id.as_str())),
        }
        let failed = |e: reqwest::Error| SignInError::Exchange(e.without_url().to_string());
        let mut response = request.form(&form).send().await.map_err(failed)?;
        let status = response.status();
        let mut body = Vec::new();
        while let Some(chunk) = response.chunk().await.map_err(failed)? {
            if body.len() + chunk.len() > MAX_ANSWER_BYTES {
                return Err(SignInError::Exchange(format!("the answer is over {MAX_ANSWER_BYTES} bytes")));
            }
            body.extend_from_slice(&chunk);
        }
        answer(status.as_u16(), &body)
    }

    fn random_text(&self) -> Option<String> {
        let mut bytes = [0u8; 32];
        self.random.fill(&mut bytes).ok()?;
        Some(URL_SAFE_NO_PAD.encode(bytes))
    }
}

/// The token endpoint's answer (RFC 6749 §5.1), or its error (§5.2).
#[derive(serde::Deserialize)]
struct TokenAnswer {
    access_token: Option<String>,
    token_type: Option<String>,
    /// A number by the RFC; some issuers send a string.
    expires_in: Option<serde_json::Value>,
    error: Option<String>,
    error_description: Option<String>,
}

/// What the token endpoint's `status` and `body` say.
pub fn answer(status: u16, body: &[u8]) -> std::result::Result<Exchanged, SignInError> {
    let answer: TokenAnswer = serde_json::from_slice(body)
        .map_err(|_| SignInError::Exchange(format!("HTTP {status} without a JSON token answer")))?;
    if let Some(error) = answer.error {
        return Err(SignInError::Refused {
            error: refusal_code(&error),
            description: answer.error_description.map(|d| crate::catalog::shown::shown(&d)),
        });
    }
    if !(200..300).contains(&status) {
        return Err(SignInError::Exchange(format!("HTTP {status}")));
    }
    if !answer.token_type.is_some_and(|t| t.eq_ignore_ascii_case("bearer")) {
        return Err(SignInError::Exchange("the token is not a bearer token".into()));
    }
    let access_token = answer
        .access_token
        .filter(|t| !t.is_empty())
        .ok_or_else(|| SignInError::Exchange("the answer has no access_token".into()))?;
    let expires_in = answer.expires_in.and_then(|e| e.as_u64().or_else(|| e.as_str().and_then(|s| s.parse().ok())));
    Ok(Exchanged { access_token: Zeroizing::new(access_token), expires_in })
}

/// An OAuth error code as shown: the codes RFC 6749 defines pass, any
/// other is `other`.
pub fn refusal_code(code: &str) -> String {
    const KNOWN: &[&str] = &[
        "invalid_request",
        "unauthorized_client",
        "access_denied",
        "unsupported_response_type",
        "invalid_scope",
        "server_error",
        "temporarily_unavailable",
        "invalid_client",
        "invalid_grant",
        "unsupported_grant_type",
        "invalid_target",
        "login_required",
        "consent_required",
        "interaction_required",
    ];
    KNOWN.iter().find(|k| **k == code).map_or("other", |k| k).to_owned()
}

/// A redirect path is `/` then segments of letters, digits and `-._~`,
/// none of them `.` or `..`.
pub fn redirect_path_allowed(path: &str) -> bool {
    path.len() <= 200
        && path.strip_prefix('/').is_some_and(|rest| {
            rest.split('/').all(|segment| {
                !segment.is_empty()
                    && segment != "."
                    && segment != ".."
                    && segment.bytes().all(|b| b.is_ascii_alphanumeric() || b"-._~".contains(&b))
            })
        })
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;

    fn metadata() -> Metadata {
        serde_json::from_str(
            r#"{"issuer":"https://login.example.com","authorization_endpoint":"https://login.example.com/authorize",
                "token_endpoint":"https://login.example.com/token"}"#,
        )
        .unwrap()
    }

    fn made(toml: &str) -> Result<Option<BrowserSignIn>> {
        let settings: AuthSettings = toml::from_str(toml).unwrap();
        let env = |var: &str| (var == "DASH_SECRET").then(|| "s3cret".to_owned());
        BrowserSignIn::new(
            &settings,
            Some(&metadata()),
            "https://quiver.example.com:8443/mcp",
            crate::auth::client().unwrap(),
            &env,
        )
    }

    #[test]
    fn the_authorization_request_carries_pkce_state_and_the_resource() {
        assert!(made("").unwrap().is_none(), "no client id: no sign-in");
        let sign_in = made("dashboard_client_id = \"dash\"\nscopes_supported = [\"quiver:*:read\"]").unwrap().unwrap();
        assert_eq!(sign_in.authority(), "quiver.example.com:8443");
        let started = sign_in.start().unwrap();
        let url = reqwest::Url::parse(&started.location).unwrap();
        let query: HashMap<_, _> = url.query_pairs().into_owned().collect();
        assert_eq!(url.path(), "/authorize");
        assert_eq!(query["response_type"], "code");
        assert_eq!(query["client_id"], "dash");
        assert_eq!(query["redirect_uri"], "https://quiver.example.com:8443/ui/sign-in/callback");
        assert_eq!(query["state"], started.state);
        assert_eq!(query["code_challenge_method"], "S256");
        assert_eq!(query["resource"], "https://quiver.example.com:8443/mcp");
        assert_eq!(query["scope"], "quiver:*:read");
        let verifier = started.verifier.clone();
        assert!((43..=128).contains(&verifier.len()), "RFC 7636 §4.1");
        let expected = URL_SAFE_NO_PAD.encode(ring::digest::digest(&ring::digest::SHA256, verifier.as_bytes()));
        assert_eq!(query["code_challenge"], expected);
        assert_ne!(sign_in.start().unwrap().state, started.state, "a new state each time");
    }

    #[test]
    fn settings_are_checked_and_a_missing_secret_is_named() {
        let error = made("dashboard_client_id = \"d\"\ndashboard_client_secret_env = \"NOPE\"").err().unwrap();
        assert!(error.to_string().contains("`NOPE` is not set"), "{error}");
        assert!(made("dashboard_client_id = \"d\"\ndashboard_client_secret_env = \"DASH_SECRET\"").unwrap().is_some());
        for bad in ["ui/cb", "/ui//cb", "/ui/../v1", "/ui/cb?x=1", "/ui/<b>", "/ui/./cb", "/"] {
            let toml = format!("dashboard_client_id = \"d\"\ndashboard_redirect_path = \"{bad}\"");
            let error = made(&toml).err().unwrap_or_else(|| panic!("{bad} was taken"));
            assert!(error.to_string().contains("dashboard_redirect_path"), "{error}");
        }
        let custom =
            made("dashboard_client_id = \"d\"\ndashboard_redirect_path = \"/auth/callback\"").unwrap().unwrap();
        assert_eq!(custom.redirect_uri, "https://quiver.example.com:8443/auth/callback");
        let settings: AuthSettings = toml::from_str("dashboard_client_id = \"d\"").unwrap();
        let error = BrowserSignIn::new(&settings, None, "https://q/mcp", crate::auth::client().unwrap(), &|_| None)
            .err()
            .unwrap();
        assert!(error.to_string().contains("authorization_endpoint"), "{error}");
        for resource in ["urn:quiver", "file:///mcp", "not a url"] {
            let client = crate::auth::client().unwrap();
            let error = BrowserSignIn::new(&settings, Some(&metadata()), resource, client, &|_| None).err().unwrap();
            assert!(error.to_string().contains("[auth] resource"), "{resource}: {error}");
        }
    }

    #[test]
    fn token_answers_are_read_as_rfc_6749_says() {
        let ok = answer(200, br#"{"access_token":"abc","token_type":"Bearer","expires_in":300}"#).unwrap();
        assert_eq!((ok.access_token.as_str(), ok.expires_in), ("abc", Some(300)));
        let said = answer(200, br#"{"access_token":"a","token_type":"bearer","expires_in":"60"}"#).unwrap();
        assert_eq!(said.expires_in, Some(60), "a string is read too");
        let odd = answer(200, br#"{"access_token":"a","token_type":"bearer","expires_in":1.5}"#).unwrap();
        assert_eq!(odd.expires_in, None, "what cannot be read is left out");
        let none = answer(200, br#"{"token_type":"Bearer"}"#).err().unwrap();
        assert!(none.to_string().contains("no access_token"), "{none}");
        let refused =
            answer(400, br#"{"error":"invalid_grant","error_description":"code \u001b[31mused"}"#).err().unwrap();
        let text = refused.to_string();
        assert!(text.contains("invalid_grant") && !text.contains('\u{1b}'), "{text}");
        let odd = answer(400, br#"{"error":"<script>"}"#).err().unwrap();
        assert_eq!(odd, SignInError::Refused { error: "other".into(), description: None });
        assert!(matches!(answer(200, br#"{"access_token":"a","token_type":"mac"}"#), Err(SignInError::Exchange(_))));
        assert!(matches!(answer(502, b"<html>"), Err(SignInError::Exchange(_))));
    }
}
