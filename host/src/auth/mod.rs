//! Who may use the HTTP face, and what they may call: the `[auth]` modes
//! (none, one static token, OAuth 2.1 access tokens), the one scope
//! grammar (`quiver:RESOURCE:LEVEL`, `quiver:tool:NAME`), and the
//! principal a token names, mapped to an agent profile.
//!
//! A request's principal is decided once, by the HTTP guard, with
//! [`Authenticator::authenticate`]; the profile's grants intersected with
//! the token's scopes then travel with every call the request makes
//! ([`crate::invoke::Caller`]), so a meta-tool's target is held to the
//! same scopes as a tool called by name.

pub mod browser;
pub mod introspect;
pub mod keys;
pub mod scopes;
pub mod settings;
pub mod tokens;

use std::sync::Arc;
use std::time::Duration;

use self::introspect::Introspection;
use self::keys::{Keys, Source};
use self::scopes::Grants;
pub use self::settings::{AuthSettings, Mode};
use self::tokens::{Rejected, Rules};
use crate::error::{Error, Result};
use crate::sandbox::secrets::constant_time_eq;

/// Who a request is from, once its token was checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Principal {
    /// The `agent_claim` of the token (by default `sub`).
    pub subject: String,
    /// The OAuth client the token was issued to, if it says.
    pub client_id: Option<String>,
    /// The agent profile it maps to (`[auth.subjects]`, `[auth.scopes]`).
    pub agent: Option<String>,
    /// What its scopes grant.
    pub grants: Arc<Grants>,
    /// When its token expires (seconds since the epoch; `u64::MAX` when
    /// an introspection answer does not say).
    pub expires: u64,
}

impl Principal {
    /// What names this principal across requests (its subject and client):
    /// an MCP session it opened is bound to it.
    pub fn key(&self) -> String {
        format!("{}\u{0}{}", self.subject, self.client_id.as_deref().unwrap_or_default())
    }

    /// How long its token still holds, from now.
    pub fn left(&self) -> std::time::Duration {
        let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
        std::time::Duration::from_secs(self.expires.saturating_sub(now))
    }

    /// Whether this principal may see the audited call `record`: its own
    /// (same subject and client), or any with the operator's scope.
    pub fn sees(&self, record: &crate::audit::AuditRecord) -> bool {
        self.grants.operator()
            || record.principal.as_deref() == Some(self.subject.as_str()) && record.client_id == self.client_id
    }
}

/// How the HTTP face checks who a request is from.
pub enum Authenticator {
    /// Nobody is asked.
    None,
    /// One static bearer token.
    Token(String),
    /// OAuth 2.1 access tokens.
    Oauth(Box<Oauth>),
}

/// The OAuth resource server's state: the rules, the issuer's keys and,
/// when configured, introspection.
pub struct Oauth {
    rules: Rules,
    /// The resource this server is (`resource` in its metadata).
    pub resource: String,
    /// The issuer, published as the authorization server.
    pub issuer: String,
    /// The scopes published in the resource metadata.
    pub scopes_supported: Vec<String>,
    keys: Keys,
    introspection: Option<Introspection>,
    subjects: std::collections::BTreeMap<String, String>,
    scope_profiles: std::collections::BTreeMap<String, String>,
    /// The dashboard's sign-in through the issuer, when configured.
    browser: Option<browser::BrowserSignIn>,
}

/// Where the HTTP face listens, which decides the defaults.
pub struct Bind {
    /// A loopback address.
    pub loopback: bool,
    /// `http://ADDR/mcp`, the resource when none is configured on a
    /// loopback bind; `None` when the port is not known yet (port 0).
    pub local_resource: Option<String>,
}

impl std::fmt::Debug for Authenticator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the token.
        f.write_str(match self {
            Authenticator::None => "Authenticator::None",
            Authenticator::Token(_) => "Authenticator::Token",
            Authenticator::Oauth(_) => "Authenticator::Oauth",
        })
    }
}

impl Authenticator {
    /// Token mode with `token`, or nobody asked without one.
    pub fn token(token: Option<String>) -> Authenticator {
        match token.filter(|t| !t.is_empty()) {
            Some(token) => Authenticator::Token(token),
            None => Authenticator::None,
        }
    }

    /// The authenticator `settings` describe, with `token` (from `--token`
    /// or `QUIVER_TOKEN`, which win over `token_env`) and `env` to read
    /// the environment. The issuer's metadata is read now when the keys'
    /// URL must be discovered.
    pub async fn new(
        settings: &AuthSettings,
        token: Option<String>,
        bind: &Bind,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Authenticator> {
        let at = |field: &str| format!("[auth] {field}");
        let token = token.or_else(|| settings.token_env.as_deref().and_then(env)).filter(|t| !t.is_empty());
        let mode = settings.mode.unwrap_or(match (&token, bind.loopback) {
            (Some(_), _) | (None, false) => Mode::Token,
            (None, true) => Mode::None,
        });
        match mode {
            Mode::None if !bind.loopback => Err(Error::config(
                at("mode"),
                "`none` is only for a loopback bind: set `token` or `oauth` to serve off loopback",
            )),
            Mode::None => Ok(Authenticator::None),
            Mode::Token => match token {
                Some(token) => Ok(Authenticator::Token(token)),
                None => Err(Error::config(
                    at("mode"),
                    "token mode needs a token: pass --token, set QUIVER_TOKEN, or name a variable in `token_env`",
                )),
            },
            Mode::Oauth => Ok(Authenticator::Oauth(Box::new(Oauth::new(settings, bind, env).await?))),
        }
    }

    /// Who sent `presented` (the bearer token of a request, if any).
    pub async fn authenticate(&self, presented: Option<&str>) -> std::result::Result<Option<Principal>, Rejected> {
        match self {
            Authenticator::None => Ok(None),
            Authenticator::Token(token) => match presented {
                Some(p) if constant_time_eq(p.as_bytes(), token.as_bytes()) => Ok(None),
                Some(_) => Err(Rejected::Mismatch),
                None => Err(Rejected::Missing),
            },
            Authenticator::Oauth(oauth) => oauth.authenticate(presented.ok_or(Rejected::Missing)?).await.map(Some),
        }
    }

    /// Whether a token is asked for at all.
    pub fn required(&self) -> bool {
        !matches!(self, Authenticator::None)
    }

    /// The OAuth state, in OAuth mode.
    pub fn oauth(&self) -> Option<&Oauth> {
        match self {
            Authenticator::Oauth(oauth) => Some(oauth),
            _ => None,
        }
    }
}

impl Oauth {
    async fn new(settings: &AuthSettings, bind: &Bind, env: &dyn Fn(&str) -> Option<String>) -> Result<Oauth> {
        let at = |field: &str| format!("[auth] {field}");
        let issuer = settings
            .issuer
            .clone()
            .ok_or_else(|| Error::config(at("issuer"), "OAuth mode needs the authorization server's issuer"))?;
        let resource = match (&settings.resource, bind.loopback) {
            (Some(resource), _) => resource.clone(),
            (None, true) if bind.local_resource.is_some() => bind.local_resource.clone().unwrap_or_default(),
            (None, true) => {
                return Err(Error::config(
                    at("resource"),
                    "with port 0 the server's URL is not known before it listens: set this server's /mcp URL",
                ));
            }
            (None, false) => {
                return Err(Error::config(
                    at("resource"),
                    "off loopback, OAuth mode needs this server's public /mcp URL (clients and tokens name it)",
                ));
            }
        };
        let client = client()?;
        // The metadata is read only for what the operator did not give.
        let needed = settings.jwks_url.is_none()
            || settings.dashboard_client_id.is_some()
            || (settings.introspection_client_id.is_some() && settings.introspection_url.is_none());
        let metadata = match needed {
            true => Some(introspect::discover(&client, &issuer).await.map_err(|e| Error::config(at("issuer"), e))?),
            false => None,
        };
        let jwks_url = settings
            .jwks_url
            .clone()
            .or_else(|| metadata.as_ref().and_then(|m| m.jwks_uri.clone()))
            .ok_or_else(|| Error::config(at("jwks_url"), "the issuer's metadata names no `jwks_uri`: set it"))?;
        let introspection = match &settings.introspection_client_id {
            None => None,
            Some(client_id) => {
                let secret_env = settings.introspection_secret_env.as_deref().ok_or_else(|| {
                    Error::config(at("introspection_secret_env"), "introspection needs the client's secret")
                })?;
                let secret = env(secret_env).filter(|s| !s.is_empty()).ok_or_else(|| {
                    Error::config(at("introspection_secret_env"), format!("`{secret_env}` is not set"))
                })?;
                let url = settings
                    .introspection_url
                    .clone()
                    .or_else(|| metadata.as_ref().and_then(|m| m.introspection_endpoint.clone()))
                    .ok_or_else(|| {
                        Error::config(at("introspection_url"), "the issuer's metadata names no introspection endpoint")
                    })?;
                let keep_for = Duration::from_secs(
                    settings
                        .introspection_cache_seconds
                        .unwrap_or(settings::DEFAULT_INTROSPECTION_CACHE_SECONDS)
                        .min(settings::MAX_INTROSPECTION_CACHE_SECONDS),
                );
                Some(Introspection::new(url, client_id.clone(), secret, client.clone(), keep_for))
            }
        };
        let refresh = Duration::from_secs(settings.jwks_refresh_seconds.unwrap_or(settings::DEFAULT_REFRESH_SECONDS));
        let rules = Rules {
            issuer: issuer.clone(),
            audience: settings.audience.clone().unwrap_or_else(|| resource.clone()),
            leeway: settings.leeway_seconds.unwrap_or(settings::DEFAULT_LEEWAY_SECONDS),
            agent_claim: settings.agent_claim.clone().unwrap_or_else(|| settings::DEFAULT_AGENT_CLAIM.to_owned()),
        };
        let browser = browser::BrowserSignIn::new(settings, metadata.as_ref(), &resource, client.clone(), env)?;
        Ok(Oauth {
            rules,
            resource,
            issuer,
            scopes_supported: settings.scopes_supported.clone(),
            keys: Keys::new(Source::Url(jwks_url), refresh, client),
            introspection,
            subjects: settings.subjects.clone(),
            scope_profiles: settings.scopes.clone(),
            browser,
        })
    }

    /// The dashboard's sign-in through the issuer, when configured.
    pub fn browser(&self) -> Option<&browser::BrowserSignIn> {
        self.browser.as_ref()
    }

    /// Check `token`: a JWT against the issuer's keys (fetched again when
    /// it names a key not known), an opaque token by introspection when
    /// configured.
    pub async fn authenticate(&self, token: &str) -> std::result::Result<Principal, Rejected> {
        let claims = match tokens::key_id(token) {
            Ok(kid) => {
                let keys = self.keys.with(kid.as_deref()).await;
                if keys.is_empty() && self.keys.last_error.lock().is_ok_and(|e| e.is_some()) {
                    return Err(Rejected::Unavailable);
                }
                tokens::verify(token, &keys, &self.rules)?
            }
            Err(Rejected::Malformed) => match &self.introspection {
                Some(introspection) => introspection.check(token, &self.rules).await?,
                None => return Err(Rejected::Opaque),
            },
            Err(other) => return Err(other),
        };
        if !claims.grants.unreadable().is_empty() {
            let unreadable = crate::catalog::shown::shown(&claims.grants.unreadable().join(" "));
            let subject = crate::catalog::shown::shown(&claims.subject);
            tracing::debug!(%subject, %unreadable, "a token carries quiver: scopes this server does not read");
        }
        let agent = self.subjects.get(&claims.subject).cloned().or_else(|| {
            self.scope_profiles
                .iter()
                .find(|(scope, _)| claims.grants.sent().iter().any(|s| s == *scope))
                .map(|(_, agent)| agent.clone())
        });
        Ok(Principal {
            subject: claims.subject,
            client_id: claims.client_id,
            agent,
            grants: Arc::new(claims.grants),
            expires: claims.expires,
        })
    }

    /// The agent profiles the mapping names (checked at start).
    pub fn profiles(&self) -> impl Iterator<Item = &str> {
        self.subjects.values().chain(self.scope_profiles.values()).map(String::as_str)
    }
}

/// The HTTP client for the issuer: rustls with ring, a timeout.
fn client() -> Result<reqwest::Client> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder()
        .timeout(Duration::from_secs(10))
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .map_err(|e| Error::config("[auth]", format!("cannot build the HTTP client: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn made(toml: &str, token: Option<&str>, loopback: bool) -> Result<Authenticator> {
        let settings: AuthSettings = toml::from_str(toml).unwrap();
        let bind = Bind { loopback, local_resource: loopback.then(|| "http://127.0.0.1:8080/mcp".to_owned()) };
        let env = |var: &str| (var == "MY_TOKEN").then(|| "from-env".to_owned());
        Authenticator::new(&settings, token.map(str::to_owned), &bind, &env).await
    }

    #[tokio::test]
    async fn the_defaults_follow_the_bind_and_refusals_name_the_fix() {
        assert!(matches!(made("", None, true).await, Ok(Authenticator::None)));
        assert!(matches!(made("", Some("t"), true).await, Ok(Authenticator::Token(t)) if t == "t"));
        let from_env = made("token_env = \"MY_TOKEN\"", None, false).await;
        assert!(matches!(from_env, Ok(Authenticator::Token(t)) if t == "from-env"));
        let cli_wins = made("token_env = \"MY_TOKEN\"", Some("cli"), false).await;
        assert!(matches!(cli_wins, Ok(Authenticator::Token(t)) if t == "cli"));
        let error = made("", None, false).await.unwrap_err().to_string();
        assert!(error.contains("[auth] mode") && error.contains("--token"), "{error}");
        let error = made("mode = \"none\"", None, false).await.unwrap_err().to_string();
        assert!(error.contains("only for a loopback bind"), "{error}");
        let error = made("mode = \"oauth\"", None, true).await.unwrap_err().to_string();
        assert!(error.contains("[auth] issuer"), "{error}");
        let error = made("mode = \"oauth\"\nissuer = \"https://i\"", None, false).await.unwrap_err().to_string();
        assert!(error.contains("[auth] resource"), "{error}");
        let settings: AuthSettings = toml::from_str("mode = \"oauth\"\nissuer = \"https://i\"").unwrap();
        let port0 = Bind { loopback: true, local_resource: None };
        let error = Authenticator::new(&settings, None, &port0, &|_| None).await.unwrap_err().to_string();
        assert!(error.contains("port 0"), "{error}");
        assert!(toml::from_str::<AuthSettings>("colour = 1").is_err(), "unknown keys are refused");
    }
}
