//! One access token checked: a JWT signed by one of the issuer's keys
//! (the algorithm the token names must be one its key allows), from the
//! issuer, for this server (RFC 8707: `aud` names this resource, no
//! other), within its lifetime; then read into who it is from and what
//! it grants. A pure function of the token, the keys and the rules, so
//! that it can be fuzzed on its own. The token itself goes nowhere: not
//! in a reason, a log line or a principal.

use jsonwebtoken::{Validation, decode, decode_header};
use serde_json::{Map, Value};

use super::keys::KeySet;
use super::scopes::Grants;

/// What a token must say to be accepted.
#[derive(Debug, Clone)]
pub struct Rules {
    /// The `iss` required.
    pub issuer: String,
    /// The `aud` required (one of a token's audiences).
    pub audience: String,
    /// Seconds of clock difference allowed on `exp` and `nbf`.
    pub leeway: u64,
    /// The claim naming the principal.
    pub agent_claim: String,
}

/// What an accepted token says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Claims {
    /// The principal: the `agent_claim` claim (by default `sub`).
    pub subject: String,
    /// The client it was issued to (`client_id`, else `azp`), if named.
    pub client_id: Option<String>,
    /// What its scopes (`scope`, a string, or `scp`, an array) grant.
    pub grants: Grants,
    /// When it expires (seconds since the epoch).
    pub expires: u64,
}

/// Why a token was refused: a label for the metrics and the log, and a
/// sentence for the client (neither quotes the token).
#[derive(Debug, Clone, Copy, PartialEq, Eq, strum::IntoStaticStr)]
#[strum(serialize_all = "snake_case")]
pub enum Rejected {
    /// No `Authorization: Bearer` header (or an empty one).
    Missing,
    /// Not three base64url parts with a JSON header Quiver reads.
    Malformed,
    /// Not a JWT, and no introspection is configured.
    Opaque,
    /// The header names `none`, an HMAC or another algorithm its key does
    /// not allow.
    Algorithm,
    /// No key of the issuer has its `kid`, even after fetching them again.
    UnknownKey,
    /// The signature does not verify.
    Signature,
    /// Another issuer.
    Issuer,
    /// Not for this server.
    Audience,
    /// Past `exp`.
    Expired,
    /// Before `nbf`.
    NotYetValid,
    /// A claim required (`exp`, `iss`, `aud`, the principal) is missing or
    /// of the wrong type.
    Claims,
    /// Introspection says it is not active.
    Inactive,
    /// The issuer's keys or introspection could not be reached.
    Unavailable,
    /// The token mode's token did not match.
    Mismatch,
}

impl Rejected {
    /// The metric label and log reason.
    pub fn label(self) -> &'static str {
        self.into()
    }

    /// What the client is told (RFC 6750 `error_description`).
    pub fn description(self) -> &'static str {
        match self {
            Rejected::Missing => "a bearer token is required",
            Rejected::Malformed => "the token is not a JWT",
            Rejected::Opaque => "the token is not a JWT, and this server does not introspect opaque tokens",
            Rejected::Algorithm => "the token's algorithm is not one its key allows",
            Rejected::UnknownKey => "the token is signed with a key the issuer does not publish",
            Rejected::Signature => "the token's signature does not verify",
            Rejected::Issuer => "the token is from another issuer",
            Rejected::Audience => "the token is not for this server",
            Rejected::Expired => "the token has expired",
            Rejected::NotYetValid => "the token is not valid yet",
            Rejected::Claims => "the token lacks a claim this server requires",
            Rejected::Inactive => "the token is not active",
            Rejected::Unavailable => "the authorization server cannot be reached; retry later",
            Rejected::Mismatch => "the bearer token is not this server's",
        }
    }
}

/// The `kid` a token's header names, once it reads as a JWT header whose
/// algorithm Quiver knows (`none` is not one).
pub fn key_id(token: &str) -> Result<Option<String>, Rejected> {
    if token.split('.').count() != 3 {
        return Err(Rejected::Malformed);
    }
    let header = decode_header(token).map_err(|e| match e.kind() {
        jsonwebtoken::errors::ErrorKind::Json(_) if header_names_an_algorithm(token) => Rejected::Algorithm,
        _ => Rejected::Malformed,
    })?;
    Ok(header.kid)
}

/// Whether the header reads as JSON with a string `alg` (an algorithm
/// Quiver does not know, like `none`, rather than no header at all).
fn header_names_an_algorithm(token: &str) -> bool {
    use base64::Engine as _;
    let Some(part) = token.split('.').next() else { return false };
    let Ok(bytes) = base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(part) else { return false };
    serde_json::from_slice::<Map<String, Value>>(&bytes).is_ok_and(|h| h.get("alg").is_some_and(Value::is_string))
}

/// Check `token` against `keys` and `rules`.
pub fn verify(token: &str, keys: &KeySet, rules: &Rules) -> Result<Claims, Rejected> {
    let kid = key_id(token)?;
    let key = keys.find(kid.as_deref()).ok_or(Rejected::UnknownKey)?;
    let header = decode_header(token).map_err(|_| Rejected::Malformed)?;
    if !key.algorithms.contains(&header.alg) {
        return Err(Rejected::Algorithm);
    }
    let mut validation = Validation::new(header.alg);
    validation.algorithms = key.algorithms.clone();
    validation.leeway = rules.leeway;
    validation.validate_nbf = true;
    validation.set_issuer(&[&rules.issuer]);
    validation.set_audience(&[&rules.audience]);
    validation.set_required_spec_claims(&["exp", "iss", "aud"]);
    let data = decode::<Map<String, Value>>(token, &key.key, &validation).map_err(|e| {
        use jsonwebtoken::errors::ErrorKind as K;
        match e.kind() {
            K::InvalidSignature | K::Crypto(_) => Rejected::Signature,
            K::InvalidAlgorithm | K::InvalidAlgorithmName => Rejected::Algorithm,
            K::InvalidIssuer => Rejected::Issuer,
            K::InvalidAudience => Rejected::Audience,
            K::ExpiredSignature => Rejected::Expired,
            K::ImmatureSignature => Rejected::NotYetValid,
            K::MissingRequiredClaim(_) | K::Json(_) => Rejected::Claims,
            _ => Rejected::Malformed,
        }
    })?;
    claims(&data.claims, &rules.agent_claim)
}

/// Who a token's (or an introspection answer's) claims name, and what
/// they grant.
pub fn claims(claims: &Map<String, Value>, agent_claim: &str) -> Result<Claims, Rejected> {
    let text = |name: &str| claims.get(name).and_then(Value::as_str).filter(|s| !s.is_empty());
    let subject = text(agent_claim).ok_or(Rejected::Claims)?.to_owned();
    let client_id = text("client_id").or_else(|| text("azp")).map(str::to_owned);
    let mut scopes: Vec<&str> = text("scope").map(|s| s.split(' ').collect()).unwrap_or_default();
    match claims.get("scp") {
        Some(Value::Array(items)) => scopes.extend(items.iter().filter_map(Value::as_str)),
        Some(Value::String(items)) => scopes.extend(items.split(' ')),
        _ => {}
    }
    let expires = claims.get("exp").and_then(Value::as_u64).unwrap_or(u64::MAX);
    Ok(Claims { subject, client_id, grants: Grants::from_scopes(scopes), expires })
}
