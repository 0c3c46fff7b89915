//! A connector instance: a `[connectors.NAME]` section as written, then
//! resolved into the plugin it runs and its settings over that plugin's
//! own. Each capability builds its part of the grant (the `http`
//! capability from the section's HTTP keys, `config` from its values);
//! this module only composes them, with the instance's access ceiling,
//! answer budget and time limit.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::settings::PluginSettings;
use crate::contract::Access;
use crate::error::{Error, Result};
use crate::sandbox::http::{HttpGrant, HttpSection, RawAuth};

/// The default answer budget, in KiB (about 4,000 tokens).
pub const DEFAULT_ANSWER_KB: u64 = 16;

/// A `[connectors.NAME]` section as written.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawConnector {
    /// The connector plugin this instance runs (a plugin of this host).
    pub plugin: Option<String>,
    /// An OpenAPI document (JSON or YAML, relative to the config file)
    /// served by the bundled generic connector, with no code.
    pub openapi: Option<PathBuf>,
    /// OpenAPI: only operations with one of these tags.
    #[serde(default)]
    pub tags: Vec<String>,
    /// OpenAPI: no operation with one of these tags.
    #[serde(default)]
    pub exclude_tags: Vec<String>,
    /// OpenAPI: only these operations (`operationId` or action name).
    #[serde(default)]
    pub operations: Vec<String>,
    /// OpenAPI: not these operations.
    #[serde(default)]
    pub exclude_operations: Vec<String>,
    /// OpenAPI: levels that replace the method's (`GET` read, `POST`,
    /// `PUT`, `PATCH` write, `DELETE` admin), by operation.
    #[serde(default)]
    pub operation_access: BTreeMap<String, Access>,
    /// The API's base URL; its origin is allowed and gets the credential.
    pub base_url: String,
    /// More destinations the connector may reach (never with the credential).
    #[serde(default)]
    pub allow_http: Vec<String>,
    /// Host names (of `base_url` or `allow_http`) that may resolve to
    /// loopback or private addresses: internal APIs reached by name.
    /// Metadata addresses stay refused.
    #[serde(default)]
    pub private_hosts: Vec<String>,
    /// The credentials the host adds on requests to `base_url`'s origin:
    /// one table, or a list of them (one per scheme the API uses).
    #[serde(default, deserialize_with = "one_or_many")]
    pub auth: Vec<RawAuth>,
    /// The highest access any agent may use here (default `read`).
    pub access: Option<Access>,
    /// Longest a call may take, in ms (default: `[limits]`).
    pub timeout_ms: Option<u64>,
    /// Longest a connection may take, in ms (default 10,000).
    pub connect_timeout_ms: Option<u64>,
    /// Longest wait for the first byte of a response, and between two
    /// bytes, in ms (default 30,000).
    pub response_timeout_ms: Option<u64>,
    /// Largest response body, in KiB (default 16,384).
    pub max_response_kb: Option<u64>,
    /// Send the caller's W3C `baggage` on to this API (default false: it
    /// can carry user data; `traceparent` and `tracestate` always go).
    #[serde(default)]
    pub baggage: bool,
    /// Request headers the connector's plugin may set besides the standard
    /// content headers (an OpenAPI document's header parameters are added
    /// to these); never one the host sets itself (credentials, routing,
    /// trace context).
    #[serde(default)]
    pub allow_headers: Vec<String>,
    /// Largest answer a model gets, in KiB of JSON (default 16): longer
    /// arrays and strings are cut, with notes on what was left out.
    pub max_answer_kb: Option<u64>,
    /// More values for the plugin's `config` import (never credentials).
    #[serde(default)]
    pub config: BTreeMap<String, String>,
}

/// `auth = { ... }` or `auth = [{ ... }, { ... }]`, as a list.
fn one_or_many<'de, D: serde::Deserializer<'de>>(deserializer: D) -> std::result::Result<Vec<RawAuth>, D::Error> {
    struct Visitor;
    impl<'de> serde::de::Visitor<'de> for Visitor {
        type Value = Vec<RawAuth>;
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("a credential table or a list of them")
        }
        fn visit_map<A: serde::de::MapAccess<'de>>(self, map: A) -> std::result::Result<Self::Value, A::Error> {
            RawAuth::deserialize(serde::de::value::MapAccessDeserializer::new(map)).map(|auth| vec![auth])
        }
        fn visit_seq<A: serde::de::SeqAccess<'de>>(self, seq: A) -> std::result::Result<Self::Value, A::Error> {
            Vec::<RawAuth>::deserialize(serde::de::value::SeqAccessDeserializer::new(seq))
        }
    }
    deserializer.deserialize_any(Visitor)
}

/// The plugin that serves every `openapi` connector.
pub const OPENAPI_PLUGIN: &str = "openapi";

impl RawConnector {
    /// The first key set that only an `openapi` section may have.
    fn openapi_only_key(&self) -> Option<&'static str> {
        [
            ("tags", self.tags.is_empty()),
            ("exclude_tags", self.exclude_tags.is_empty()),
            ("operations", self.operations.is_empty()),
            ("exclude_operations", self.exclude_operations.is_empty()),
            ("operation_access", self.operation_access.is_empty()),
        ]
        .into_iter()
        .find(|(_, empty)| !empty)
        .map(|(key, _)| key)
    }
}

/// One connector instance, resolved.
#[derive(Debug, Clone, PartialEq)]
pub struct ConnectorSettings {
    /// The name agents see.
    pub name: String,
    /// The plugin it runs.
    pub plugin: String,
    /// Where it may send requests, and what the host adds.
    pub grant: HttpGrant,
    /// The highest access any agent may use.
    pub access: Access,
    /// Longest a call may take, when set here.
    pub timeout_ms: Option<u64>,
    /// The largest answer, in bytes of JSON.
    pub answer_budget: usize,
    /// Values of its `config` import: `base_url` and the section's `config`.
    pub config: BTreeMap<String, String>,
}

impl ConnectorSettings {
    /// Its credentials' secrets, for the audit log to redact.
    pub fn secrets(&self) -> impl Iterator<Item = &crate::sandbox::secrets::Secret> {
        self.grant.secrets()
    }

    /// Resolve `[connectors.NAME]`; files are relative to `base`.
    pub fn resolve(name: &str, raw: &RawConnector, base: &Path) -> Result<ConnectorSettings> {
        let section = format!("[connectors.{name}]");
        let fail = |message: String| Error::config(section.clone(), message);
        let plugin = match (&raw.plugin, &raw.openapi) {
            (Some(plugin), None) => {
                if let Some(key) = raw.openapi_only_key() {
                    return Err(fail(format!("`{key}` selects operations of an `openapi` document")));
                }
                plugin.clone()
            }
            (None, Some(_)) => OPENAPI_PLUGIN.to_owned(),
            _ => {
                return Err(fail(
                    "give exactly one of `plugin` (a connector plugin of this host) and `openapi` (a document)".into(),
                ));
            }
        };
        let http = HttpSection {
            base_url: &raw.base_url,
            allow_http: &raw.allow_http,
            private_hosts: &raw.private_hosts,
            auth: &raw.auth,
            connect_timeout_ms: raw.connect_timeout_ms,
            response_timeout_ms: raw.response_timeout_ms,
            max_response_kb: raw.max_response_kb,
            baggage: raw.baggage,
            allow_headers: &raw.allow_headers,
        };
        let grant = HttpGrant::resolve(&section, http, base)?;
        let positive = |value: Option<u64>, key: &str| match value {
            Some(0) => Err(fail(format!("{key} must be at least 1"))),
            other => Ok(other),
        };
        let mut config = raw.config.clone();
        if config.contains_key("base_url") {
            return Err(fail("config: `base_url` is set by the section's own `base_url`".into()));
        }
        config.insert("base_url".into(), raw.base_url.trim_end_matches('/').to_owned());
        Ok(ConnectorSettings {
            name: name.to_owned(),
            plugin,
            grant,
            access: raw.access.unwrap_or(Access::Read),
            timeout_ms: positive(raw.timeout_ms, "timeout_ms")?,
            answer_budget: positive(raw.max_answer_kb, "max_answer_kb")?
                .map_or(DEFAULT_ANSWER_KB, |kb| kb)
                .saturating_mul(1024) as usize,
            config,
        })
    }

    /// This instance's settings over `plugin`'s (the plugin it runs): its
    /// HTTP grant, its `config` values over the plugin's, its access
    /// ceiling, answer budget and time limit.
    pub fn over(&self, plugin: &PluginSettings) -> PluginSettings {
        let mut settings = plugin.clone();
        settings.grants.config = plugin.grants.config.overlaid(&self.config);
        settings.grants.http = self.grant.clone();
        settings.access = Some(self.access);
        settings.answer_budget = Some(self.answer_budget);
        if let Some(timeout_ms) = self.timeout_ms {
            settings.grants.limits.timeout_ms = timeout_ms;
        }
        settings
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resolve(text: &str) -> Result<ConnectorSettings> {
        let raw: RawConnector = toml::from_str(text).unwrap();
        ConnectorSettings::resolve("books", &raw, Path::new("."))
    }

    #[test]
    fn a_section_resolves_to_a_grant_with_its_origin_allowed() {
        let settings =
            resolve("plugin = \"rest\"\nbase_url = \"http://127.0.0.1:8080/v1/\"\nmax_response_kb = 4").unwrap();
        assert_eq!(settings.access, Access::Read);
        assert_eq!(settings.config["base_url"], "http://127.0.0.1:8080/v1");
        let over = settings.over(&PluginSettings::default());
        assert_eq!((over.access, over.answer_budget), (Some(Access::Read), Some(16 * 1024)));
        assert_eq!(over.grants.config.get("base_url"), Some("http://127.0.0.1:8080/v1"));
        assert_eq!(over.grants.http, settings.grant);
        assert!(settings.grant.entry_for(&"http://127.0.0.1:8080/v1/books".parse().unwrap()).is_some());
        assert_eq!(settings.grant.max_response_bytes, 4096);
        assert!(settings.grant.credentials().is_empty());
    }

    #[test]
    fn several_credentials_each_have_their_place() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("t"), "token").unwrap();
        let resolve = |text: &str| {
            let raw: RawConnector = toml::from_str(text).unwrap();
            ConnectorSettings::resolve("pets", &raw, dir.path())
        };
        let two = resolve(
            "plugin = \"p\"\nbase_url = \"http://h\"\nauth = [{ kind = \"bearer\", token_file = \"t\" }, \
             { kind = \"api_key\", header = \"api_key\", key_file = \"t\" }]",
        )
        .unwrap();
        assert_eq!(two.grant.credentials().len(), 2);
        assert_eq!(two.secrets().count(), 2);
        let clash = resolve(
            "plugin = \"p\"\nbase_url = \"http://h\"\nauth = [{ kind = \"bearer\", token_file = \"t\" }, \
             { kind = \"basic\", username = \"u\", password_file = \"t\" }]",
        );
        let error = clash.unwrap_err().to_string();
        assert!(error.contains("two credentials go in the `authorization` header"), "{error}");
    }

    #[test]
    fn private_hosts_may_name_the_operators_token_endpoint() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("s"), "client-secret").unwrap();
        let resolve = |token_url: &str| {
            let text = format!(
                "plugin = \"p\"\nbase_url = \"https://api.example.com\"\nprivate_hosts = [\"sso.internal\"]\n\
                 auth = {{ kind = \"oauth2\", token_url = \"{token_url}\", client_id = \"c\", client_secret_file = \"s\" }}"
            );
            ConnectorSettings::resolve("books", &toml::from_str(&text).unwrap(), dir.path())
        };
        assert!(resolve("https://sso.internal/token").is_ok());
        let error = resolve("https://sso.example.com/token").unwrap_err().to_string();
        assert!(error.contains("private_hosts: `sso.internal`"), "{error}");
    }

    #[test]
    fn mistakes_name_the_section_and_the_key() {
        for (text, expected) in [
            ("base_url = \"http://127.0.0.1:1\"", "plugin"),
            ("plugin = \"p\"\nbase_url = \"ftp://x\"", "base_url"),
            ("plugin = \"p\"\nbase_url = \"http://h\"\nallow_http = [\"ftp://y\"]", "allow_http"),
            ("plugin = \"p\"\nbase_url = \"http://h\"\nmax_response_kb = 0", "max_response_kb"),
            ("plugin = \"p\"\nbase_url = \"http://h\"\nprivate_hosts = [\"other\"]", "private_hosts"),
            ("openapi = \"a.json\"\nplugin = \"p\"\nbase_url = \"http://h\"", "exactly one of"),
            ("plugin = \"p\"\nbase_url = \"http://h\"\ntags = [\"t\"]", "`tags` selects"),
            (
                "plugin = \"p\"\nbase_url = \"http://h\"\nauth = { kind = \"bearer\", token_env = \"QUIVER_TEST_UNSET_TOKEN\" }",
                "QUIVER_TEST_UNSET_TOKEN",
            ),
        ] {
            let error = resolve(text).unwrap_err().to_string();
            assert!(error.contains("[connectors.books]") && error.contains(expected), "{text}: {error}");
        }
    }
}
