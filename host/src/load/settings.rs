//! A plugin's settings: as the operator wrote them (a `[plugins.NAME]`
//! section, or `NAME.toml` beside `NAME.wasm`), then resolved into the
//! sandbox's grants.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::error::{Error, Result};
use crate::sandbox::config::ConfigGrant;
use crate::sandbox::http::HttpGrant;
use crate::sandbox::limits::Limits;
use crate::sandbox::{Grants, WasiGrant};

/// One plugin's settings as written; unset limits fall back to `[limits]`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawPluginSettings {
    /// Overrides `limits.timeout_ms`.
    pub timeout_ms: Option<u64>,
    /// Overrides `limits.memory_mb`.
    pub memory_mb: Option<u64>,
    /// Overrides `limits.max_output_kb`.
    pub max_output_kb: Option<u64>,
    /// Overrides `limits.max_log_kb`.
    pub max_log_kb: Option<u64>,
    /// Values the plugin reads through its `config` import (plain text the
    /// plugin can read: settings, never credentials). Numbers and booleans
    /// are taken as their text (`per_page = 50` is `"50"`).
    #[serde(default, deserialize_with = "config_values")]
    pub config: BTreeMap<String, String>,
    /// Destinations a connector may send HTTP requests to, e.g.
    /// `https://api.github.com` or `http://127.0.0.1:8080`.
    #[serde(default)]
    pub allow_http: Vec<String>,
    /// Folders it may read, never write: the path it sees each at → the
    /// folder on this machine (`folders = { "/data" = "/srv/reports" }`).
    #[serde(default)]
    pub folders: BTreeMap<String, PathBuf>,
    /// Compile it when it is added or replaced, not on first use.
    pub preload: Option<bool>,
    /// Whether its calls each run in a fresh instance (the default) or a
    /// caller's calls share one: see [`Instances`]. Only the
    /// configuration file sets it, never a file shipped with the plugin.
    pub instances: Option<Instances>,
}

/// How a plugin's calls get their instance.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Instances {
    /// Each call runs in a fresh instance: nothing persists between calls.
    #[default]
    PerCall,
    /// A call that ended cleanly leaves its instance for the next call of
    /// the same caller (agent profile, token principal and access level)
    /// to the same version of the plugin: what the plugin keeps in memory
    /// is seen by that caller's later calls, never by another caller's. For
    /// plugins whose instantiation costs more than their work (Python,
    /// JavaScript). A trap, timeout, memory overrun or HTTP request drops
    /// the instance (see `runtime::kept`).
    PerCaller,
}

/// A `config` table: text values, with numbers and booleans written as
/// text; a table or an array is refused, naming the key.
fn config_values<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> std::result::Result<BTreeMap<String, String>, D::Error> {
    use serde::Deserialize as _;
    let raw = BTreeMap::<String, toml::Value>::deserialize(deserializer)?;
    raw.into_iter()
        .map(|(key, value)| match value {
            toml::Value::String(text) => Ok((key, text)),
            toml::Value::Integer(n) => Ok((key, n.to_string())),
            toml::Value::Float(x) => Ok((key, x.to_string())),
            toml::Value::Boolean(b) => Ok((key, b.to_string())),
            other => Err(serde::de::Error::custom(format!(
                "config values are text (numbers and booleans are taken as text); `{key}` is {}",
                other.type_str()
            ))),
        })
        .collect()
}

impl RawPluginSettings {
    /// Read a plugin's settings file (`NAME.toml` beside `NAME.wasm`).
    pub fn load(path: &Path) -> Result<RawPluginSettings> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| Error::Io { path: path.display().to_string(), message: e.to_string() })?;
        toml::from_str(&text).map_err(|e| Error::config(path.display().to_string(), e.to_string()))
    }

    /// These settings with every value `over` sets taking its place.
    fn overlaid(&self, over: &RawPluginSettings) -> RawPluginSettings {
        let mut config = self.config.clone();
        config.extend(over.config.iter().map(|(k, v)| (k.clone(), v.clone())));
        RawPluginSettings {
            timeout_ms: over.timeout_ms.or(self.timeout_ms),
            memory_mb: over.memory_mb.or(self.memory_mb),
            max_output_kb: over.max_output_kb.or(self.max_output_kb),
            max_log_kb: over.max_log_kb.or(self.max_log_kb),
            config,
            allow_http: if over.allow_http.is_empty() { self.allow_http.clone() } else { over.allow_http.clone() },
            folders: if over.folders.is_empty() { self.folders.clone() } else { over.folders.clone() },
            preload: over.preload.or(self.preload),
            instances: over.instances.or(self.instances),
        }
    }
}

/// One plugin's resolved settings.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PluginSettings {
    /// What its calls may reach and use.
    pub grants: Grants,
    /// Whether to compile it as soon as it is added or replaced.
    pub preload: bool,
    /// Whether its calls run in fresh instances or a caller's share one.
    pub instances: Instances,
    /// The highest access any caller may use on it (a connector
    /// instance's `access`); `None`: its actions' own levels only.
    pub access: Option<crate::contract::Access>,
    /// The largest answer in bytes of JSON; a larger one is shortened with
    /// notes on what was cut (a connector instance's `max_answer_kb`).
    pub answer_budget: Option<usize>,
}

/// Resolves each plugin's settings: its settings file over its
/// `[plugins.NAME]` section over the `[limits]` defaults.
#[derive(Debug, Clone, Default)]
pub struct SettingsResolver {
    /// The `[limits]` defaults.
    pub defaults: Limits,
    /// The most memory any plugin may be given, in MiB.
    pub max_memory_mb: u64,
    /// The `[plugins.NAME]` sections.
    pub plugins: BTreeMap<String, RawPluginSettings>,
}

impl SettingsResolver {
    /// Check the defaults and every `[plugins.NAME]` section.
    pub fn validate(&self) -> Result<()> {
        check_limits("[limits]", &self.defaults, self.max_memory_mb)?;
        for name in self.plugins.keys() {
            self.resolve(name, None)?;
        }
        Ok(())
    }

    /// The resolved settings of plugin `name`, with its settings file (if
    /// any) over its `[plugins.NAME]` section.
    pub fn resolve(&self, name: &str, sidecar: Option<&RawPluginSettings>) -> Result<PluginSettings> {
        let overlaid;
        let raw = match (self.plugins.get(name), sidecar) {
            (None, None) => {
                return Ok(PluginSettings { grants: self.grants_of_defaults(), ..PluginSettings::default() });
            }
            (Some(raw), None) => raw,
            (_, Some(over)) if !over.folders.is_empty() => {
                return Err(Error::config(
                    format!("{name}.toml"),
                    "folders may be granted only in the configuration file ([plugins.NAME] folders), never by a file \
                     shipped beside the plugin",
                ));
            }
            (_, Some(over)) if over.instances.is_some() => {
                return Err(Error::config(
                    format!("{name}.toml"),
                    "whether calls share an instance is set only in the configuration file ([plugins.NAME] \
                     instances), never by a file shipped beside the plugin",
                ));
            }
            (None, Some(over)) => over,
            (Some(raw), Some(over)) => {
                overlaid = raw.overlaid(over);
                &overlaid
            }
        };
        let section = format!("[plugins.{name}]");
        let limits = Limits {
            timeout_ms: raw.timeout_ms.unwrap_or(self.defaults.timeout_ms),
            memory_mb: raw.memory_mb.unwrap_or(self.defaults.memory_mb),
            max_output_kb: raw.max_output_kb.unwrap_or(self.defaults.max_output_kb),
            max_log_kb: raw.max_log_kb.unwrap_or(self.defaults.max_log_kb),
        };
        check_limits(&section, &limits, self.max_memory_mb)?;
        let http = HttpGrant::parse(&raw.allow_http)
            .map_err(|e| Error::config(section.clone(), format!("allow_http: {e}")))?;
        let folders = raw
            .folders
            .iter()
            .map(|(guest, host)| {
                folder(guest, host).map_err(|e| Error::config(section.clone(), format!("folders: {e}")))
            })
            .collect::<Result<_>>()?;
        let wasi = WasiGrant { folders, environment: Vec::new() };
        let grants = Grants { limits, config: ConfigGrant::new(raw.config.clone()), http, wasi, ..Grants::default() };
        Ok(PluginSettings {
            grants,
            preload: raw.preload.unwrap_or(false),
            instances: raw.instances.unwrap_or_default(),
            access: None,
            answer_budget: None,
        })
    }

    fn grants_of_defaults(&self) -> Grants {
        Grants { limits: self.defaults, ..Grants::default() }
    }
}

/// A granted folder: the guest path absolute, the host folder an
/// existing directory, made absolute (the configuration made a relative
/// one its file's neighbour; a `NAME.toml` cannot grant folders).
fn folder(guest: &str, host: &Path) -> std::result::Result<(PathBuf, String), String> {
    if !guest.starts_with('/') || guest.split('/').any(|part| part == "..") {
        return Err(format!("`{guest}`: the path a plugin sees must be absolute, with no `..`"));
    }
    let absolute = std::fs::canonicalize(host).map_err(|e| format!("`{guest}` = `{}`: {e}", host.display()))?;
    if !absolute.is_dir() {
        return Err(format!("`{guest}` = `{}`: not a folder", host.display()));
    }
    Ok((absolute, guest.to_owned()))
}

fn check_limits(section: &str, limits: &Limits, max_memory_mb: u64) -> Result<()> {
    let problem = if limits.timeout_ms == 0 {
        "timeout_ms must be at least 1".to_owned()
    } else if limits.memory_mb == 0 || limits.memory_mb > max_memory_mb {
        format!("memory_mb must be between 1 and engine.max_memory_mb ({max_memory_mb})")
    } else if limits.max_output_kb == 0 {
        "max_output_kb must be at least 1".to_owned()
    } else {
        return Ok(());
    };
    Err(Error::config(section, problem))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resolver(toml_text: &str) -> SettingsResolver {
        SettingsResolver {
            defaults: Limits { timeout_ms: 100, ..Limits::default() },
            max_memory_mb: 1024,
            plugins: toml::from_str(toml_text).unwrap(),
        }
    }

    #[test]
    fn plugin_settings_fall_back_to_defaults() {
        let resolver = resolver(
            "[web]\nmemory_mb = 128\nallow_http = [\"https://api.example.com\"]\nconfig = { key = \"value\" }\n",
        );
        resolver.validate().unwrap();
        let web = resolver.resolve("web", None).unwrap();
        assert_eq!(web.grants.limits.timeout_ms, 100);
        assert_eq!(web.grants.limits.memory_mb, 128);
        assert_eq!(web.grants.config.get("key"), Some("value"));
        assert_eq!(web.grants.http.allowed().len(), 1);
        assert_eq!(resolver.resolve("other", None).unwrap().grants.limits.memory_mb, 64);
    }

    #[test]
    fn config_numbers_and_booleans_are_text_and_tables_are_refused() {
        let resolver = resolver("[web]\nconfig = { per_page = 50, ratio = 0.5, verbose = true, name = \"x\" }\n");
        let web = resolver.resolve("web", None).unwrap();
        let values: Vec<_> = ["per_page", "ratio", "verbose", "name"].map(|k| web.grants.config.get(k)).into();
        assert_eq!(values, [Some("50"), Some("0.5"), Some("true"), Some("x")]);
        let error = toml::from_str::<BTreeMap<String, RawPluginSettings>>("[web]\nconfig = { list = [1] }\n")
            .unwrap_err()
            .to_string();
        assert!(error.contains("config values are text") && error.contains("`list` is array"), "{error}");
    }

    #[test]
    fn a_settings_file_overrides_the_section() {
        let resolver = resolver("[web]\nmemory_mb = 128\nconfig = { a = \"1\", b = \"2\" }\n");
        let sidecar: RawPluginSettings = toml::from_str("timeout_ms = 9\nconfig = { b = \"3\" }").unwrap();
        let web = resolver.resolve("web", Some(&sidecar)).unwrap();
        assert_eq!((web.grants.limits.timeout_ms, web.grants.limits.memory_mb), (9, 128));
        assert_eq!((web.grants.config.get("a"), web.grants.config.get("b")), (Some("1"), Some("3")));
    }

    #[test]
    fn granted_folders_are_checked_when_read() {
        let here = std::env::current_dir().unwrap();
        let ok = resolver(&format!("[web]\nfolders = {{ \"/data\" = {:?} }}", here.display().to_string()));
        let web = ok.resolve("web", None).unwrap();
        assert_eq!(web.grants.wasi.folders, [(std::fs::canonicalize(&here).unwrap(), "/data".to_owned())]);
        for (folders, says) in [
            ("{ \"data\" = \".\" }", "must be absolute"),
            ("{ \"/a/../b\" = \".\" }", "no `..`"),
            ("{ \"/data\" = \"/no/such/folder\" }", "/no/such/folder"),
            ("{ \"/data\" = \"Cargo.toml\" }", "not a folder"),
        ] {
            let error = resolver(&format!("[web]\nfolders = {folders}")).validate().unwrap_err().to_string();
            assert!(error.contains("[plugins.web]") && error.contains(says), "{folders}: {error}");
        }
    }

    #[test]
    fn only_the_configuration_grants_folders_or_shared_instances() {
        for setting in ["folders = { \"/home\" = \"/\" }", "instances = \"per-caller\""] {
            let sidecar: RawPluginSettings = toml::from_str(setting).unwrap();
            let error = resolver("").resolve("web", Some(&sidecar)).unwrap_err().to_string();
            assert!(error.contains("web.toml") && error.contains("only in the configuration file"), "{error}");
        }
        let web = resolver("[web]\ninstances = \"per-caller\"").resolve("web", None).unwrap();
        assert_eq!(
            (web.instances, resolver("").resolve("web", None).unwrap().instances),
            (Instances::PerCaller, Instances::PerCall)
        );
        let error = toml::from_str::<BTreeMap<String, RawPluginSettings>>("[web]\ninstances = \"shared\"").unwrap_err();
        assert!(error.to_string().contains("per-call"), "{error}");
    }

    #[test]
    fn rejects_bad_values_with_the_section() {
        let error = resolver("[web]\nallow_http = [\"ftp://x\"]").validate().unwrap_err();
        assert!(error.to_string().contains("[plugins.web]"), "{error}");
        let error = resolver("[web]\nmemory_mb = 0").validate().unwrap_err();
        assert!(error.to_string().contains("memory_mb"), "{error}");
    }
}
