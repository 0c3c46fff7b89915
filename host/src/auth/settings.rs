//! The `[auth]` table: who may use the HTTP face, as the operator writes it.
//!
//! ```toml
//! [auth]
//! mode = "oauth"                                  # none | token | oauth
//! issuer = "https://login.example.com"
//! resource = "https://quiver.example.com/mcp"     # this server's /mcp, as clients reach it
//! scopes_supported = ["quiver:chinook:read", "quiver:chinook:write"]
//!
//! [auth.subjects]                                 # a principal → an agent profile
//! "svc-reporting" = "analyst"
//! [auth.scopes]                                   # else a scope it holds → a profile
//! "quiver:chinook:write" = "editor"
//! ```
//!
//! The dashboard signs a person in through the same issuer when
//! `dashboard_client_id` names the client it was registered as.

use std::collections::BTreeMap;

use serde::Deserialize;

/// How requests to the HTTP face prove who they are from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// Nobody is asked (only on a loopback bind).
    None,
    /// One static bearer token (`--token`, `QUIVER_TOKEN`, or `token_env`).
    Token,
    /// OAuth 2.1 access tokens from `issuer`, for `resource`.
    Oauth,
}

/// The `[auth]` table as written.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AuthSettings {
    /// Default: `none` on a loopback bind, `token` off it.
    pub mode: Option<Mode>,
    /// Token mode: the environment variable holding the token (`--token`
    /// and `QUIVER_TOKEN` win over it).
    pub token_env: Option<String>,
    /// OAuth: the authorization server's issuer identifier (the `iss` of
    /// its tokens; its metadata is found from it).
    pub issuer: Option<String>,
    /// OAuth: this server's `/mcp` URL as clients reach it (required off
    /// loopback: behind a load balancer it cannot be guessed).
    pub resource: Option<String>,
    /// OAuth: the `aud` tokens must carry (default: `resource`).
    pub audience: Option<String>,
    /// OAuth: where the issuer's keys are (default: its metadata's `jwks_uri`).
    pub jwks_url: Option<String>,
    /// OAuth: the scopes published in the resource metadata.
    #[serde(default)]
    pub scopes_supported: Vec<String>,
    /// OAuth: the claim naming the principal (default `sub`).
    pub agent_claim: Option<String>,
    /// OAuth: principal (the `agent_claim` value) → agent profile.
    #[serde(default)]
    pub subjects: BTreeMap<String, String>,
    /// OAuth: scope → agent profile, for a principal `subjects` does not
    /// name (the first scope in this table's order the token holds).
    #[serde(default)]
    pub scopes: BTreeMap<String, String>,
    /// OAuth: least seconds between two fetches of the keys when a token
    /// names a key not known (default 60; 0 for tests).
    pub jwks_refresh_seconds: Option<u64>,
    /// OAuth: seconds of clock difference allowed on `exp` and `nbf`
    /// (default 30).
    pub leeway_seconds: Option<u64>,
    /// OAuth: the client id Quiver introspects opaque tokens as (RFC 7662);
    /// without it an opaque token is refused.
    pub introspection_client_id: Option<String>,
    /// OAuth: the environment variable holding that client's secret.
    pub introspection_secret_env: Option<String>,
    /// OAuth: the introspection endpoint (default: the issuer metadata's).
    pub introspection_url: Option<String>,
    /// OAuth: seconds an accepted introspection answer is kept (default
    /// 60, at most a day, never past the token's `exp`; 0: ask every
    /// time). A token
    /// revoked at the issuer is accepted until its answer goes.
    pub introspection_cache_seconds: Option<u64>,
    /// OAuth: the client the dashboard signs its user in as (authorization
    /// code with PKCE); without it the dashboard takes no sign-in in
    /// OAuth mode. Registered at the issuer with the redirect URI below.
    pub dashboard_client_id: Option<String>,
    /// OAuth: the environment variable holding that client's secret, when
    /// the issuer registered it as a confidential client (default: a
    /// public client, PKCE alone).
    pub dashboard_client_secret_env: Option<String>,
    /// OAuth: the path the issuer sends the browser back to (default
    /// `/ui/sign-in/callback`), on the origin of `resource`.
    pub dashboard_redirect_path: Option<String>,
    /// OAuth: the scopes the dashboard asks for (default:
    /// `scopes_supported`).
    pub dashboard_scopes: Option<Vec<String>>,
}

/// Default `dashboard_redirect_path`.
pub const DEFAULT_REDIRECT_PATH: &str = "/ui/sign-in/callback";

/// Default `jwks_refresh_seconds`.
pub const DEFAULT_REFRESH_SECONDS: u64 = 60;
/// Default `leeway_seconds`.
pub const DEFAULT_LEEWAY_SECONDS: u64 = 30;
/// Default `introspection_cache_seconds`.
pub const DEFAULT_INTROSPECTION_CACHE_SECONDS: u64 = 60;
/// The most `introspection_cache_seconds` is taken as (a day).
pub const MAX_INTROSPECTION_CACHE_SECONDS: u64 = 24 * 60 * 60;
/// Default `agent_claim`.
pub const DEFAULT_AGENT_CLAIM: &str = "sub";
