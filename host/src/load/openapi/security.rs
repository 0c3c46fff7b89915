//! A document's `securitySchemes` → the host-held credential kinds.
//!
//! The operator says which kind of credential the connector holds and
//! where its secret is kept; the document fills in what it already says:
//! where an `apiKey` goes (header, query parameter or cookie, and its
//! name) and the token URL of an `oauth2` client-credentials flow (marked
//! as the document's: the host sends the client secret there only if the
//! connector's allow-list has its origin). Bearer tokens serve `http
//! bearer`, `oauth2` (any flow: a token obtained elsewhere) and
//! `openIdConnect` schemes; `basic` serves `http basic`.

use oas3::spec::SecurityScheme;

use super::connector::Api;
use crate::error::{Error, Result};
use crate::sandbox::http::RawAuth;

impl Api {
    /// Fill in what `auth` leaves to the document. An ambiguous or missing
    /// scheme is an error naming the section and the document's schemes.
    pub fn complete_auth(&self, auth: &mut RawAuth, section: &str) -> Result<()> {
        match auth {
            RawAuth::ApiKey { header, query, cookie, scheme, .. }
                if header.is_none() && query.is_none() && cookie.is_none() =>
            {
                let (name, found) =
                    self.scheme(scheme.as_deref(), "apiKey", section, |s| matches!(s, SecurityScheme::ApiKey { .. }))?;
                let SecurityScheme::ApiKey { name: key, location, .. } = found else { unreachable!() };
                match location.as_str() {
                    "header" => *header = Some(key.clone()),
                    "query" => *query = Some(key.clone()),
                    "cookie" => *cookie = Some(key.clone()),
                    other => {
                        return Err(Error::config(
                            section,
                            format!("auth: the document's scheme `{name}` puts its key in `{other}`"),
                        ));
                    }
                }
            }
            RawAuth::Oauth2 { token_url, scheme, token_url_from_document, .. } if token_url.is_none() => {
                let (_, found) = self.scheme(
                    scheme.as_deref(),
                    "oauth2 client-credentials",
                    section,
                    |s| matches!(s, SecurityScheme::OAuth2 { flows, .. } if flows.client_credentials.is_some()),
                )?;
                if let SecurityScheme::OAuth2 { flows, .. } = found
                    && let Some(flow) = &flows.client_credentials
                {
                    // Outside text: asked only if the allow-list has it.
                    *token_url = Some(flow.token_url.to_string());
                    *token_url_from_document = true;
                }
            }
            RawAuth::Bearer { .. } | RawAuth::Basic { .. } => {
                let fits = |s: &SecurityScheme| match (&*auth, s) {
                    (RawAuth::Bearer { .. }, SecurityScheme::Http { scheme, .. }) => {
                        scheme.eq_ignore_ascii_case("bearer")
                    }
                    (RawAuth::Bearer { .. }, SecurityScheme::OAuth2 { .. } | SecurityScheme::OpenIdConnect { .. }) => {
                        true
                    }
                    (RawAuth::Basic { .. }, SecurityScheme::Http { scheme, .. }) => {
                        scheme.eq_ignore_ascii_case("basic")
                    }
                    _ => false,
                };
                if !self.schemes.is_empty() && !self.schemes.values().any(fits) {
                    tracing::warn!(%section, schemes = %self.scheme_list(), "no security scheme of the document takes this kind of credential");
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// The scheme named `wanted`, else the only one that `fits`.
    fn scheme(
        &self,
        wanted: Option<&str>,
        what: &str,
        section: &str,
        fits: impl Fn(&SecurityScheme) -> bool,
    ) -> Result<(&str, &SecurityScheme)> {
        let fail = |message: String| Error::config(section, format!("auth: {message}"));
        if let Some(wanted) = wanted {
            return match self.schemes.get_key_value(wanted) {
                Some((name, scheme)) if fits(scheme) => Ok((name, scheme)),
                Some(_) => Err(fail(format!("the document's scheme `{wanted}` is not an {what} scheme"))),
                None => Err(fail(format!("the document has no scheme `{wanted}`; it has: {}", self.scheme_list()))),
            };
        }
        let mut fitting = self.schemes.iter().filter(|(_, s)| fits(s));
        match (fitting.next(), fitting.next()) {
            (Some((name, scheme)), None) => Ok((name, scheme)),
            (None, _) => Err(fail(format!(
                "the document declares no {what} scheme (it has: {}); say where the credential goes",
                self.scheme_list()
            ))),
            (Some(_), Some(_)) => Err(fail(format!(
                "the document declares several {what} schemes ({}); pick one with `scheme`",
                self.scheme_list()
            ))),
        }
    }

    /// `name (kind)`, for each scheme of the document.
    pub fn scheme_list(&self) -> String {
        if self.schemes.is_empty() {
            return "none".into();
        }
        let kind = |s: &SecurityScheme| match s {
            SecurityScheme::ApiKey { name, location, .. } => format!("apiKey in {location} `{name}`"),
            SecurityScheme::Http { scheme, .. } => format!("http {scheme}"),
            SecurityScheme::OAuth2 { .. } => "oauth2".into(),
            SecurityScheme::OpenIdConnect { .. } => "openIdConnect".into(),
            SecurityScheme::MutualTls { .. } => "mutualTLS".into(),
        };
        // The document's words: through the sanitiser, on one line.
        let list = self.schemes.iter().map(|(name, s)| format!("`{name}` ({})", kind(s))).collect::<Vec<_>>();
        crate::contract::sanitize_cut(&list.join(", "), crate::contract::Shape::Line, 1024)
    }
}
