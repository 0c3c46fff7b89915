//! Credentials the host adds to a connector's requests: bearer token, API
//! key (header or query parameter), HTTP basic. The guest never holds
//! them: they come from the environment or a file into a [`Secret`], are
//! added in the `wasi:http` hook only on requests to the connector's own
//! origin, and the headers that carry them are ones the guest may not set
//! at all (see [`Credential::forbids`]).

use std::path::Path;

use http::HeaderName;
use http::header::{AUTHORIZATION, COOKIE, HOST, PROXY_AUTHORIZATION};
use serde::Deserialize;

use super::oauth2::ClientCredentials;
use crate::error::{Error, Result};
use crate::sandbox::secrets::Secret;

/// The `auth` table of a `[connectors.NAME]` section, as written.
#[derive(Debug, Clone, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum RawAuth {
    /// `Authorization: Bearer TOKEN`.
    Bearer {
        /// Environment variable holding the token.
        token_env: Option<String>,
        /// File holding the token (relative to the config file).
        token_file: Option<String>,
    },
    /// An API key in a header (`header = "X-API-Key"`), a query
    /// parameter (`query = "api_key"`) or a cookie (`cookie = "session"`).
    /// An OpenAPI connector may leave all three out: its document's
    /// `apiKey` scheme says where the key goes.
    ApiKey {
        /// The header that carries the key.
        header: Option<String>,
        /// The query parameter that carries the key.
        query: Option<String>,
        /// The cookie that carries the key.
        cookie: Option<String>,
        /// For an OpenAPI connector: the document's `apiKey` security
        /// scheme to follow, when it declares several.
        scheme: Option<String>,
        /// Environment variable holding the key.
        key_env: Option<String>,
        /// File holding the key.
        key_file: Option<String>,
    },
    /// OAuth2 client credentials: the host gets a bearer token from
    /// `token_url` with the client id and secret (HTTP basic), keeps it
    /// until shortly before it expires, and asks again.
    Oauth2 {
        /// The token endpoint (an OpenAPI connector may take it from its
        /// document's `clientCredentials` flow).
        token_url: Option<String>,
        /// For an OpenAPI connector: the document's `oauth2` security
        /// scheme whose token URL to use, when it declares several.
        scheme: Option<String>,
        /// The client id (not a secret).
        client_id: String,
        /// Environment variable holding the client secret.
        client_secret_env: Option<String>,
        /// File holding the client secret.
        client_secret_file: Option<String>,
        /// The scope to ask for, if any.
        scope: Option<String>,
        /// Set by the OpenAPI importer when `token_url` comes from the
        /// document (never from the config file): outside text, so the
        /// host asks it for tokens only if the allow-list has its origin.
        #[serde(skip)]
        token_url_from_document: bool,
    },
    /// `Authorization: Basic base64(username:password)`.
    Basic {
        /// The user name (not a secret).
        username: String,
        /// Environment variable holding the password.
        password_env: Option<String>,
        /// File holding the password.
        password_file: Option<String>,
    },
}

/// A credential, resolved: where it goes, what is sent, and the secret as
/// the operator keeps it (for the audit log to redact).
#[derive(Debug, PartialEq)]
pub struct Credential {
    carrier: Carrier,
    value: Source,
    secret: Secret,
}

/// Where the value sent comes from.
#[derive(Debug, PartialEq)]
enum Source {
    Fixed(Secret),
    OAuth2(Box<ClientCredentials>),
}

/// Why a credential could not be added.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum NotApplied {
    /// The guest's request is in the credential's way: it set what carries
    /// the credential (the text says what, for the guest and the model).
    Refused(String),
    /// The credential is not available now (the token endpoint failed).
    Unavailable(String),
}

/// What carries a credential.
#[derive(Debug, PartialEq)]
enum Carrier {
    Header(HeaderName),
    Query(String),
}

impl Credential {
    /// Resolve `raw` for the connector in `section`; paths are relative to
    /// `base`. A missing secret is an error naming the section and the
    /// variable or file.
    pub fn resolve(raw: &RawAuth, section: &str, base: &Path) -> Result<Credential> {
        let secret = |env: &Option<String>, file: &Option<String>, what: &str| match (env, file) {
            (Some(var), None) => Secret::from_env(var, section),
            (None, Some(file)) => Secret::from_file(&base.join(file), section),
            _ => Err(Error::config(section, format!("auth: give exactly one of `{what}_env` and `{what}_file`"))),
        };
        Ok(match raw {
            RawAuth::Bearer { token_env, token_file } => {
                let token = secret(token_env, token_file, "token")?;
                let value = Source::Fixed(Secret::new(format!("Bearer {}", token.expose())));
                Credential { carrier: Carrier::Header(AUTHORIZATION), value, secret: token }
            }
            RawAuth::ApiKey { header, query, cookie, key_env, key_file, .. } => {
                let key = secret(key_env, key_file, "key")?;
                match (header, query, cookie) {
                    (Some(header), None, None) => {
                        let name = HeaderName::try_from(header.as_str())
                            .map_err(|e| Error::config(section, format!("auth.header `{header}`: {e}")))?;
                        Credential { carrier: Carrier::Header(name), value: Source::Fixed(key.clone()), secret: key }
                    }
                    (None, Some(query), None) if !query.is_empty() => {
                        let value = Source::Fixed(key.clone());
                        Credential { carrier: Carrier::Query(query.clone()), value, secret: key }
                    }
                    (None, None, Some(cookie)) if http::HeaderName::try_from(cookie.as_str()).is_ok() => {
                        let value = Source::Fixed(Secret::new(format!("{cookie}={}", key.expose())));
                        Credential { carrier: Carrier::Header(COOKIE), value, secret: key }
                    }
                    _ => {
                        return Err(Error::config(
                            section,
                            "auth: an api_key goes in one `header`, `query` parameter or `cookie`",
                        ));
                    }
                }
            }
            RawAuth::Basic { username, password_env, password_file } => {
                use base64::Engine as _;
                let password = secret(password_env, password_file, "password")?;
                let pair = zeroize::Zeroizing::new(format!("{username}:{}", password.expose()));
                let encoded = base64::engine::general_purpose::STANDARD.encode(pair.as_bytes());
                let value = Source::Fixed(Secret::new(format!("Basic {encoded}")));
                Credential { carrier: Carrier::Header(AUTHORIZATION), value, secret: password }
            }
            RawAuth::Oauth2 {
                token_url,
                client_id,
                client_secret_env,
                client_secret_file,
                scope,
                token_url_from_document,
                ..
            } => {
                let Some(token_url) = token_url else {
                    return Err(Error::config(section, "auth: an oauth2 credential needs its `token_url`"));
                };
                let client_secret = secret(client_secret_env, client_secret_file, "client_secret")?;
                let client = ClientCredentials::new(
                    section,
                    token_url,
                    *token_url_from_document,
                    client_id,
                    client_secret.clone(),
                    scope.clone(),
                )?;
                Credential {
                    carrier: Carrier::Header(AUTHORIZATION),
                    value: Source::OAuth2(Box::new(client)),
                    secret: client_secret,
                }
            }
        })
        .and_then(|credential| credential.check(section))
    }

    fn check(self, section: &str) -> Result<Credential> {
        if let (Carrier::Header(_), Source::Fixed(value)) = (&self.carrier, &self.value)
            && http::HeaderValue::from_str(value.expose()).is_err()
        {
            return Err(Error::config(section, "auth: the secret is not a valid header value"));
        }
        Ok(self)
    }

    /// The secret as the operator keeps it (the token, key or password),
    /// for the audit log to redact wherever it appears.
    pub(crate) fn secret(&self) -> &Secret {
        &self.secret
    }

    /// Headers a guest may never set on a connector: what carries
    /// credentials or decides where a request goes, in any spelling a
    /// server may read as that header ([`same_name`]: `x_api_key` is
    /// `X-API-Key` to a CGI-style server). A guest that sets one gets the
    /// `forbidden` header error; the host sets them itself.
    pub(crate) fn forbids(credentials: &[std::sync::Arc<Credential>], name: &HeaderName) -> bool {
        let own = credentials.iter().filter_map(|c| match &c.carrier {
            Carrier::Header(own) => Some(own),
            Carrier::Query(_) => None,
        });
        [AUTHORIZATION, PROXY_AUTHORIZATION, COOKIE, HOST]
            .iter()
            .chain(own)
            .any(|n| same_name(n.as_str(), name.as_str()))
            || wasmtime_wasi_http::DEFAULT_FORBIDDEN_HEADERS.contains(name)
    }

    /// Where it goes, as an operator would name it (`the authorization
    /// header`, `the query parameter api_key`).
    pub(crate) fn place(&self) -> String {
        match &self.carrier {
            Carrier::Header(name) => format!("the `{name}` header"),
            Carrier::Query(name) => format!("the query parameter `{name}`"),
        }
    }

    /// The OAuth2 client of this credential, if it is one.
    pub(crate) fn oauth2(&self) -> Option<&ClientCredentials> {
        match &self.value {
            Source::OAuth2(client) => Some(client),
            Source::Fixed(_) => None,
        }
    }

    /// The value it sends, when it is fixed (not an OAuth2 client's token,
    /// which is asked for when a request needs it: see `token`).
    pub(crate) fn fixed(&self) -> Option<&Secret> {
        match &self.value {
            Source::Fixed(value) => Some(value),
            Source::OAuth2(_) => None,
        }
    }

    /// The forms of this credential a response may echo back, for the
    /// host to redact: the secret as the operator keeps it; what was sent
    /// (`sent`, or the fixed value), for `Authorization` without its
    /// scheme (the token, `base64(user:password)`); a query key as the URL
    /// carries it (percent-encoded); and each as a JSON string spells it.
    pub(crate) fn echoed_forms(&self, sent: Option<&Secret>) -> Vec<Secret> {
        let mut forms = vec![self.secret.expose().to_owned()];
        let sent = match (sent, &self.value) {
            (Some(sent), _) | (None, Source::Fixed(sent)) => Some(sent.expose()),
            (None, Source::OAuth2(_)) => None,
        };
        match (&self.carrier, sent) {
            (Carrier::Header(name), Some(sent)) if *name == AUTHORIZATION => {
                forms.push(sent.split_once(' ').map_or(sent, |(_, credential)| credential).to_owned());
            }
            (Carrier::Query(_), _) => {
                forms.push(percent_encoding::utf8_percent_encode(self.secret.expose(), QUERY).to_string());
            }
            _ => {}
        }
        let json: Vec<String> = forms
            .iter()
            .filter_map(|form| serde_json::to_string(form).ok())
            .map(|quoted| quoted[1..quoted.len() - 1].to_owned())
            .collect();
        forms.extend(json);
        forms.sort_unstable();
        forms.dedup();
        forms.into_iter().map(Secret::new).collect()
    }

    /// Add the credential, whose value now is `value`, to `request`. A
    /// query parameter the guest already set under the credential's name is
    /// refused, not overwritten silently.
    pub(crate) fn apply<B>(
        &self,
        value: &Secret,
        request: &mut http::Request<B>,
    ) -> std::result::Result<(), NotApplied> {
        let invalid = || NotApplied::Unavailable(format!("the credential for {} is not valid there", self.place()));
        match &self.carrier {
            Carrier::Header(name) => {
                let mut value = http::HeaderValue::from_str(value.expose()).map_err(|_| invalid())?;
                value.set_sensitive(true);
                request.headers_mut().insert(name.clone(), value);
            }
            Carrier::Query(name) => {
                let uri = request.uri();
                let query = uri.query().unwrap_or("");
                // What a guest may send: any parameter whose name is not
                // the credential's, as a server may read names. Pairs are
                // split on `;` as well as `&` (some servers do).
                let taken = query.split(['&', ';']).any(|pair| same_name(pair.split('=').next().unwrap_or(""), name));
                if taken {
                    return Err(NotApplied::Refused(format!(
                        "the query parameter `{name}` carries the connector's credential, which the host adds \
                         itself; send the request without it (in any spelling: case, `-`, `_` or `.`, `[]`, \
                         percent-encoding)"
                    )));
                }
                let encode = |s: &str| percent_encoding::utf8_percent_encode(s, QUERY).to_string();
                let pair = format!("{}={}", encode(name), encode(value.expose()));
                let path = uri.path();
                let path_and_query =
                    if query.is_empty() { format!("{path}?{pair}") } else { format!("{path}?{query}&{pair}") };
                let mut parts = uri.clone().into_parts();
                parts.path_and_query = Some(path_and_query.parse().map_err(|_| invalid())?);
                *request.uri_mut() = http::Uri::from_parts(parts).map_err(|_| invalid())?;
            }
        }
        Ok(())
    }
}

/// Whether a server may read `a` and `b` as one name (of a query
/// parameter or a header): the same once each is percent-decoded (as often
/// as it decodes: a proxy may decode once more), cut at its first `[`
/// (`api_key[]` is `api_key` to PHP and Rails) and reduced to its letters
/// and digits, lower-cased (`API-Key`, `api_key`, `api.key`, `apikey`).
/// Names with no letter or digit are compared decoded.
pub(crate) fn same_name(a: &str, b: &str) -> bool {
    let (a, b) = (decoded(a), decoded(b));
    match (skeleton(&a), skeleton(&b)) {
        (x, y) if x.is_empty() || y.is_empty() => a == b,
        (x, y) => x == y,
    }
}

/// `name` percent-decoded until it no longer changes (at most 4 times).
fn decoded(name: &str) -> String {
    let mut name = name.to_owned();
    for _ in 0..4 {
        let once = percent_encoding::percent_decode_str(&name).decode_utf8_lossy().into_owned();
        if once == name {
            break;
        }
        name = once;
    }
    name
}

/// The letters and digits of `name` before its first `[`, lower-cased.
fn skeleton(name: &str) -> String {
    name.split('[').next().unwrap_or("").chars().filter(|c| c.is_alphanumeric()).flat_map(char::to_lowercase).collect()
}

/// What a query component must escape.
const QUERY: &percent_encoding::AsciiSet =
    &percent_encoding::NON_ALPHANUMERIC.remove(b'-').remove(b'_').remove(b'.').remove(b'~');

#[cfg(test)]
mod tests {
    use super::*;

    fn auth(toml_text: &str) -> RawAuth {
        #[derive(Deserialize)]
        struct Wrapper {
            auth: RawAuth,
        }
        toml::from_str::<Wrapper>(toml_text).unwrap().auth
    }

    #[test]
    fn every_kind_resolves_and_applies() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("key"), "k&y=1\n").unwrap();
        std::fs::write(dir.path().join("pw"), "open sesame").unwrap();
        std::fs::write(dir.path().join("token"), "t0ken").unwrap();
        let apply = |raw: &str, uri: &str| {
            let credential = Credential::resolve(&auth(raw), "[connectors.x]", dir.path()).unwrap();
            let mut request = http::Request::builder().uri(uri).body(()).unwrap();
            let Source::Fixed(value) = &credential.value else { unreachable!() };
            credential.apply(value, &mut request).map(|()| request)
        };
        let request = apply(r#"auth = { kind = "bearer", token_file = "token" }"#, "http://h/a").unwrap();
        assert_eq!(request.headers()["authorization"], "Bearer t0ken");
        assert!(request.headers()["authorization"].is_sensitive());
        let request =
            apply(r#"auth = { kind = "basic", username = "ann", password_file = "pw" }"#, "http://h/a").unwrap();
        assert_eq!(request.headers()["authorization"], "Basic YW5uOm9wZW4gc2VzYW1l");
        let request =
            apply(r#"auth = { kind = "api_key", header = "X-API-Key", key_file = "key" }"#, "http://h/a").unwrap();
        assert_eq!(request.headers()["x-api-key"], "k&y=1");
        let query = r#"auth = { kind = "api_key", query = "api_key", key_file = "key" }"#;
        assert_eq!(apply(query, "http://h/a?q=1").unwrap().uri(), "http://h/a?q=1&api_key=k%26y%3D1");
        assert_eq!(apply(query, "http://h/a").unwrap().uri(), "http://h/a?api_key=k%26y%3D1");
        for taken in [
            "api_key=mine",
            "a=1;api_key=mine",
            "api_key[]=mine",
            "API_KEY=mine",
            "api-key=mine",
            "apikey=mine",
            "api%5Fkey=mine",
            "api%255Fkey=mine",
            "api+key=mine",
        ] {
            match apply(query, &format!("http://h/a?{taken}")) {
                Err(NotApplied::Refused(why)) => assert!(why.contains("`api_key`"), "{taken}: {why}"),
                other => panic!("{taken}: {other:?}"),
            }
        }
        for free in ["q=api_key", "api_keys=1", "my_api_key=1", "a=1;b=2"] {
            assert!(apply(query, &format!("http://h/a?{free}")).is_ok(), "{free}");
        }
        let cookie = r#"auth = { kind = "api_key", cookie = "session", key_file = "token" }"#;
        assert_eq!(apply(cookie, "http://h/a").unwrap().headers()["cookie"], "session=t0ken");
    }

    #[test]
    fn missing_or_ambiguous_secrets_name_what_is_missing() {
        let dir = tempfile::tempdir().unwrap();
        let raw = auth(r#"auth = { kind = "bearer", token_env = "QUIVER_TEST_UNSET_BOOKS_TOKEN" }"#);
        let error = Credential::resolve(&raw, "[connectors.books]", dir.path()).unwrap_err().to_string();
        assert!(error.contains("QUIVER_TEST_UNSET_BOOKS_TOKEN") && error.contains("[connectors.books]"), "{error}");
        let raw = auth(r#"auth = { kind = "bearer" }"#);
        let error = Credential::resolve(&raw, "[connectors.books]", dir.path()).unwrap_err().to_string();
        assert!(error.contains("token_env"), "{error}");
        let raw = auth(r#"auth = { kind = "api_key", key_file = "nope" }"#);
        let error = Credential::resolve(&raw, "[connectors.books]", dir.path()).unwrap_err().to_string();
        assert!(error.contains("nope"), "{error}");
        let typo = r#"auth = { kind = "bearer", token_envv = "X" }"#;
        #[derive(Deserialize, Debug)]
        #[allow(dead_code)]
        struct Wrapper {
            auth: RawAuth,
        }
        assert!(toml::from_str::<Wrapper>(typo).is_err());
    }

    #[test]
    fn headers_a_server_may_read_as_a_credential_header_are_forbidden() {
        let key = std::sync::Arc::new(Credential {
            carrier: Carrier::Header(HeaderName::from_static("x-api-key")),
            value: Source::Fixed(Secret::new("k3y-value".into())),
            secret: Secret::new("k3y-value".into()),
        });
        let forbids =
            |name: &str| Credential::forbids(std::slice::from_ref(&key), &HeaderName::try_from(name).unwrap());
        for name in ["x-api-key", "X_API_KEY", "x.api.key", "xapikey", "authorization", "proxy_authorization", "cookie"]
        {
            assert!(forbids(name), "{name}");
        }
        for name in ["x-api-keys", "accept", "x-request-id", "content-type"] {
            assert!(!forbids(name), "{name}");
        }
    }

    #[test]
    fn the_forms_a_response_may_echo_are_known() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("pw"), "open \"sesame\"").unwrap();
        std::fs::write(dir.path().join("key"), "k&y=1").unwrap();
        let forms = |raw: &str| {
            let credential = Credential::resolve(&auth(raw), "[connectors.x]", dir.path()).unwrap();
            let mut forms: Vec<String> = credential.echoed_forms(None).iter().map(|s| s.expose().to_owned()).collect();
            forms.sort();
            forms
        };
        // base64("ann:open \"sesame\"") is what an echo of the header shows.
        assert_eq!(
            forms(r#"auth = { kind = "basic", username = "ann", password_file = "pw" }"#),
            ["YW5uOm9wZW4gInNlc2FtZSI=", "open \"sesame\"", "open \\\"sesame\\\""]
        );
        assert_eq!(
            forms(r#"auth = { kind = "api_key", query = "api_key", key_file = "key" }"#),
            ["k%26y%3D1", "k&y=1"]
        );
    }

    #[test]
    fn a_credential_never_prints() {
        let credential = Credential {
            carrier: Carrier::Header(AUTHORIZATION),
            value: Source::Fixed(Secret::new("Bearer hunter2".into())),
            secret: Secret::new("hunter2".into()),
        };
        assert!(!format!("{credential:?}").contains("hunter2"));
    }
}
