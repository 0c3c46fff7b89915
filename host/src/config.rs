//! The configuration file (`quiver.toml`): raw as written, then resolved.
//!
//! ```toml
//! plugins_dir = "plugins"        # relative to this file
//! cache_dir = "/var/cache/quiver" # compiled components; "" disables the cache
//! bundled = true                  # also serve the first-party plugins
//!
//! [limits]                        # defaults for every plugin
//! timeout_ms = 5000
//! memory_mb = 64
//! max_output_kb = 1024
//! max_log_kb = 64
//!
//! [engine]
//! max_concurrency = 64
//!
//! [plugins.weather]               # one plugin's settings (or weather.toml
//! timeout_ms = 15000              # beside weather.wasm, without the header)
//! allow_http = ["https://api.weather.example"]
//! config = { units = "metric" }
//!
//! [disclosure]                    # below env vars and agent profiles
//! mcp_tool_mode = "progressive"   # or "legacy"
//! selection_threshold = 12
//! pinned = ["calc__evaluate"]
//!
//! [agents.coder]                  # one agent's profile (highest priority)
//! skill_tool_mode = "inline"
//! categories = ["builtin", "skill"]
//!
//! [selector]                      # "bm25" (default) or an OpenAI-compatible LLM
//! kind = "llm"
//! url = "http://127.0.0.1:8080/v1/chat/completions"
//! model = "small-model"
//! api_key_env = "SELECTOR_API_KEY"
//! ```

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::Deserialize;

use crate::disclosure::policy::PolicySettings;
use crate::disclosure::select::SelectorConfig;
use crate::sandbox::http::AllowedHost;
use crate::sandbox::limits::{EngineSettings, Limits};
use crate::{Error, Result};

/// The configuration file as written.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// Folder of `*.wasm` plugins.
    pub plugins_dir: Option<PathBuf>,
    /// Folder of the compile cache; an empty string disables it.
    pub cache_dir: Option<PathBuf>,
    /// Whether to serve the bundled first-party plugins (default true).
    pub bundled: Option<bool>,
    /// Folder of Agent Skills (one folder per skill, each with a `SKILL.md`).
    pub skills_dir: Option<PathBuf>,
    /// Folder of saved MCP `tools/list` results (`<server>.json`), served
    /// as read-only catalog entries.
    pub mcp_dir: Option<PathBuf>,
    /// Disclosure defaults (below the environment and agent profiles).
    #[serde(default)]
    pub disclosure: PolicySettings,
    /// Per-agent profiles, by agent name.
    #[serde(default)]
    pub agents: BTreeMap<String, PolicySettings>,
    /// How built-in tools are selected when there are too many.
    #[serde(default)]
    pub selector: SelectorConfig,
    /// Default limits of every plugin.
    #[serde(default)]
    pub limits: Limits,
    /// Settings of the shared engine.
    #[serde(default)]
    pub engine: EngineSettings,
    /// Settings per plugin name.
    #[serde(default)]
    pub plugins: BTreeMap<String, RawPluginSettings>,
}

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
    /// Values the plugin reads through its `config` import.
    #[serde(default)]
    pub config: BTreeMap<String, String>,
    /// Destinations a connector may send HTTP requests to, e.g.
    /// `https://api.github.com` or `http://127.0.0.1:8080`.
    #[serde(default)]
    pub allow_http: Vec<String>,
    /// Compile it when it is added or replaced, not on first use.
    pub preload: Option<bool>,
}

impl RawPluginSettings {
    /// Read a plugin's settings file (`NAME.toml` beside `NAME.wasm`).
    pub fn load(path: &Path) -> Result<RawPluginSettings> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| Error::Io { path: path.display().to_string(), message: e.to_string() })?;
        toml::from_str(&text).map_err(|e| Error::Config(format!("{}: {e}", path.display())))
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
            preload: over.preload.or(self.preload),
        }
    }
}

/// One plugin's resolved settings.
#[derive(Debug, Clone, Default)]
pub struct PluginSettings {
    /// Its limits.
    pub limits: Limits,
    /// Its configuration values.
    pub config: Arc<BTreeMap<String, String>>,
    /// Where it may send HTTP requests.
    pub allow_http: Arc<[AllowedHost]>,
    /// Whether to compile it as soon as it is added or replaced.
    pub preload: bool,
}

impl Config {
    /// Read a config file; relative paths in it are resolved against its folder.
    pub fn load(path: &Path) -> Result<Config> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| Error::Io { path: path.display().to_string(), message: e.to_string() })?;
        Config::parse(&text, path.parent().unwrap_or(Path::new("."))).map_err(|e| match e {
            Error::Config(message) => Error::Config(format!("{}: {message}", path.display())),
            other => other,
        })
    }

    /// Parse config text; relative paths are resolved against `base`.
    pub fn parse(text: &str, base: &Path) -> Result<Config> {
        let mut config: Config = toml::from_str(text).map_err(|e| Error::Config(e.to_string()))?;
        for dir in [&mut config.plugins_dir, &mut config.cache_dir, &mut config.skills_dir, &mut config.mcp_dir]
            .into_iter()
            .flatten()
        {
            if !dir.as_os_str().is_empty() && dir.is_relative() {
                *dir = base.join(&*dir);
            }
        }
        config.validate()?;
        Ok(config)
    }

    /// Check what serde cannot: limits in range, allow-list entries parse.
    pub fn validate(&self) -> Result<()> {
        check_limits("[limits]", &self.limits, self.engine.max_memory_mb)?;
        if self.engine.max_concurrency == 0 {
            return Err(Error::Config("engine.max_concurrency must be at least 1".into()));
        }
        for name in self.plugins.keys() {
            self.settings_for(name)?;
        }
        self.selector.validate()?;
        Ok(())
    }

    /// The resolved settings of plugin `name`.
    pub fn settings_for(&self, name: &str) -> Result<PluginSettings> {
        self.settings_with(name, None)
    }

    /// The resolved settings of plugin `name`, with its settings file (if
    /// any) over its `[plugins.NAME]` section.
    pub fn settings_with(&self, name: &str, sidecar: Option<&RawPluginSettings>) -> Result<PluginSettings> {
        let overlaid;
        let raw = match (self.plugins.get(name), sidecar) {
            (None, None) => return Ok(PluginSettings { limits: self.limits, ..Default::default() }),
            (Some(raw), None) => raw,
            (None, Some(over)) => over,
            (Some(raw), Some(over)) => {
                overlaid = raw.overlaid(over);
                &overlaid
            }
        };
        let limits = Limits {
            timeout_ms: raw.timeout_ms.unwrap_or(self.limits.timeout_ms),
            memory_mb: raw.memory_mb.unwrap_or(self.limits.memory_mb),
            max_output_kb: raw.max_output_kb.unwrap_or(self.limits.max_output_kb),
            max_log_kb: raw.max_log_kb.unwrap_or(self.limits.max_log_kb),
        };
        check_limits(&format!("[plugins.{name}]"), &limits, self.engine.max_memory_mb)?;
        let allow_http = raw
            .allow_http
            .iter()
            .map(|entry| entry.parse().map_err(|e| Error::Config(format!("[plugins.{name}] allow_http: {e}"))))
            .collect::<Result<Vec<AllowedHost>>>()?;
        Ok(PluginSettings {
            limits,
            config: Arc::new(raw.config.clone()),
            allow_http: allow_http.into(),
            preload: raw.preload.unwrap_or(false),
        })
    }
}

fn check_limits(section: &str, limits: &Limits, max_memory_mb: u64) -> Result<()> {
    let problem = if limits.timeout_ms == 0 {
        Some("timeout_ms must be at least 1".to_owned())
    } else if limits.memory_mb == 0 || limits.memory_mb > max_memory_mb {
        Some(format!("memory_mb must be between 1 and engine.max_memory_mb ({max_memory_mb})"))
    } else if limits.max_output_kb == 0 {
        Some("max_output_kb must be at least 1".to_owned())
    } else {
        None
    };
    match problem {
        Some(p) => Err(Error::Config(format!("{section}: {p}"))),
        None => Ok(()),
    }
}

/// The default compile-cache folder: `$QUIVER_CACHE_DIR`, else
/// `$XDG_CACHE_HOME/quiver`, else `~/.cache/quiver`.
pub fn default_cache_dir() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("QUIVER_CACHE_DIR") {
        return (!dir.is_empty()).then(|| PathBuf::from(dir));
    }
    if let Some(dir) = std::env::var_os("XDG_CACHE_HOME").filter(|d| !d.is_empty()) {
        return Some(PathBuf::from(dir).join("quiver"));
    }
    std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".cache").join("quiver"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plugin_settings_fall_back_to_defaults() {
        let config: Config = toml::from_str(
            r#"
            [limits]
            timeout_ms = 100
            [plugins.web]
            memory_mb = 128
            allow_http = ["https://api.example.com"]
            config = { key = "value" }
            "#,
        )
        .unwrap();
        config.validate().unwrap();
        let web = config.settings_for("web").unwrap();
        assert_eq!(web.limits.timeout_ms, 100);
        assert_eq!(web.limits.memory_mb, 128);
        assert_eq!(web.config.get("key").map(String::as_str), Some("value"));
        assert_eq!(web.allow_http.len(), 1);
        assert_eq!(config.settings_for("other").unwrap().limits.memory_mb, 64);
    }

    #[test]
    fn rejects_bad_values_with_the_section() {
        let bad: Config = toml::from_str("[plugins.web]\nallow_http = [\"ftp://x\"]").unwrap();
        assert!(bad.validate().unwrap_err().to_string().contains("[plugins.web]"));
        let bad: Config = toml::from_str("[limits]\nmemory_mb = 0").unwrap();
        assert!(bad.validate().is_err());
        assert!(toml::from_str::<Config>("unknown = 1").is_err());
    }
}
