//! The OAuth resource server's face: its Protected Resource Metadata (RFC
//! 9728) at `/.well-known/oauth-protected-resource` and at the
//! path-inserted location for `/mcp`, readable from any origin (a
//! browser-based client reads it before it has a token); the
//! `WWW-Authenticate` challenge every refusal carries; and the 403 a
//! `tools/call` of a tool above the token's scopes gets before it reaches
//! rmcp.

use std::sync::Arc;

use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;

use super::envelope::ErrorReply;
use crate::auth::scopes::Grants;
use crate::auth::tokens::Rejected;
use crate::auth::{self, Authenticator};

/// Where the resource metadata documents are.
pub const WELL_KNOWN: &str = "/.well-known/oauth-protected-resource";

/// RFC 9728's document.
#[derive(serde::Serialize)]
struct ResourceMetadata<'a> {
    resource: &'a str,
    authorization_servers: [&'a str; 1],
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    scopes_supported: &'a [String],
    bearer_methods_supported: [&'static str; 1],
    resource_name: &'static str,
}

/// The metadata routes, in OAuth mode (none otherwise: there is nothing
/// to discover).
pub fn router(auth: &Arc<Authenticator>) -> axum::Router {
    if auth.oauth().is_none() {
        return axum::Router::new();
    }
    let serve = {
        let auth = auth.clone();
        move |method: Method| {
            let auth = auth.clone();
            async move { metadata(&auth, method) }
        }
    };
    axum::Router::new()
        .route(WELL_KNOWN, get(serve.clone()).options(serve.clone()))
        .route(&format!("{WELL_KNOWN}/mcp"), get(serve.clone()).options(serve))
}

fn metadata(auth: &Authenticator, method: Method) -> Response {
    let Some(oauth) = auth.oauth() else { return StatusCode::NOT_FOUND.into_response() };
    let cors = [
        (header::ACCESS_CONTROL_ALLOW_ORIGIN, HeaderValue::from_static("*")),
        (header::ACCESS_CONTROL_ALLOW_METHODS, HeaderValue::from_static("GET, OPTIONS")),
        (header::ACCESS_CONTROL_ALLOW_HEADERS, HeaderValue::from_static("mcp-protocol-version")),
    ];
    if method == Method::OPTIONS {
        return (StatusCode::NO_CONTENT, cors).into_response();
    }
    let document = ResourceMetadata {
        resource: &oauth.resource,
        authorization_servers: [&oauth.issuer],
        scopes_supported: &oauth.scopes_supported,
        bearer_methods_supported: ["header"],
        resource_name: "Quiver",
    };
    (cors, axum::Json(document)).into_response()
}

/// The URL of the metadata of `resource` (RFC 9728 §3.1: the well-known
/// path inserted between the origin and the resource's path).
pub fn metadata_url(resource: &str) -> String {
    let start = resource.find("://").map_or(0, |i| i + 3);
    match resource[start..].find('/') {
        Some(slash) => {
            let (origin, path) = resource.split_at(start + slash);
            format!("{origin}{WELL_KNOWN}{}", path.trim_end_matches('/'))
        }
        None => format!("{resource}{WELL_KNOWN}"),
    }
}

/// A `WWW-Authenticate` value: where the metadata is, the scopes to ask
/// for (`scope`, else those supported), and the error when a token was
/// sent and refused (`rejected`) or lacks a scope (`scope` given).
pub fn challenge(oauth: &auth::Oauth, rejected: Option<Rejected>, scope: Option<&str>) -> String {
    let mut value = format!("Bearer resource_metadata=\"{}\"", metadata_url(&oauth.resource));
    let scopes = scope.map(str::to_owned).unwrap_or_else(|| oauth.scopes_supported.join(" "));
    if !scopes.is_empty() {
        value.push_str(&format!(", scope=\"{}\"", scopes.replace(['"', '\\'], "")));
    }
    match (rejected, scope) {
        (_, Some(_)) => value.push_str(", error=\"insufficient_scope\""),
        (Some(Rejected::Missing), None) | (None, None) => {}
        (Some(rejected), None) => {
            value.push_str(&format!(", error=\"invalid_token\", error_description=\"{}\"", rejected.description()))
        }
    }
    value
}

/// The answer to a `tools/call` (JSON-RPC `id`) of a tool the token's
/// `grants` do not cover, `needed` the scope that would: HTTP 403 with the
/// step-up challenge, and a JSON-RPC error a client can show.
pub fn insufficient_scope(
    oauth: &auth::Oauth,
    grants: &Grants,
    needed: &str,
    id: Option<&serde_json::value::RawValue>,
) -> Response {
    let challenge = challenge(oauth, None, Some(&grants.stepped_up(needed)));
    let challenge = HeaderValue::from_str(&challenge).unwrap_or(HeaderValue::from_static("Bearer"));
    let text =
        format!("insufficient_scope: this call needs the scope `{needed}`, which the access token does not carry");
    let reply = axum::Json(ErrorReply::new(id, -32003, &text));
    (StatusCode::FORBIDDEN, [(header::WWW_AUTHENTICATE, challenge)], reply).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_metadata_sits_before_the_resource_path() {
        assert_eq!(
            metadata_url("https://q.example.com/mcp"),
            "https://q.example.com/.well-known/oauth-protected-resource/mcp"
        );
        assert_eq!(metadata_url("http://127.0.0.1:8080"), "http://127.0.0.1:8080/.well-known/oauth-protected-resource");
    }
}
