//! The configuration file (`quiver.toml`), composed into each stage's own
//! settings: the sandbox's limits and engine settings, the plugins'
//! settings resolver, the disclosure policy layers, the selector. Read by
//! the wiring ([`Host`](crate::host::Host)) and the CLI, no one else.
//!
//! ```toml
//! plugins_dir = "plugins"        # relative to this file
//! cache_dir = "/var/cache/quiver" # compiled components; "" disables the cache
//! bundled = true                  # also serve the first-party plugins
//! max_plugin_mb = 256             # a larger `*.wasm` is refused
//!
//! [limits]                        # defaults for every plugin
//! timeout_ms = 5000
//! memory_mb = 64
//! max_output_kb = 1024
//! max_log_kb = 64
//!
//! [[oci]]                         # a plugin from a registry, by digest
//! ref = "ghcr.io/acme/weather@sha256:…"
//!
//! [engine]
//! max_concurrency = 64
//! max_queue = 256
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
//! [search]                        # "hybrid" (BM25 + embeddings, default) or "bm25"
//! ranker = "hybrid"
//!
//! [selector]                      # "rank" (default: as search ranks) or an OpenAI-compatible LLM
//! kind = "llm"
//! url = "http://127.0.0.1:8080/v1/chat/completions"
//! model = "small-model"
//! api_key_env = "SELECTOR_API_KEY"
//! ```

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::auth::AuthSettings;
use crate::catalog::ConnectorSource;
use crate::disclosure::policy::PolicySettings;
use crate::disclosure::search::settings::SearchSettings;
use crate::disclosure::select::SelectorConfig;
use crate::error::{Error, Result};
use crate::load::openapi::{Api, Selection};
use crate::load::{ConnectorSettings, PluginSettings, RawConnector, RawPluginSettings, SettingsResolver};
use crate::sandbox::limits::{EngineSettings, Limits};

/// Most instance slots of either kind (running calls, kept instances): the
/// pool reserves address space for each.
const MAX_SLOTS: u32 = 4096;
use crate::sandbox::sql::{DatabaseSettings, RawDatabase};
use crate::telemetry::{MetricsSettings, TelemetrySettings};
use crate::upstream::{self, RawServer, ServerSpec};

/// The `[audit]` table.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AuditSettings {
    /// Append one JSON line per call to this file (relative to the config
    /// file). Off when unset.
    pub path: Option<PathBuf>,
    /// Or write the lines to a standard stream, for a cluster's log
    /// collector: `stdout` (when serving HTTP only: anywhere else stdout
    /// carries MCP or results, and the lines go to stderr), or `stderr`.
    pub stream: Option<AuditStream>,
    /// Where a call's arguments are kept: `none`, `audit` (the default:
    /// in the audit log, redacted) or `traced` (also on spans, with
    /// results and SQL text).
    #[serde(default)]
    pub params: crate::audit::Params,
}

impl AuditSettings {
    /// Where the lines go: the file, or the stream; both is an error.
    pub fn sink(&self) -> Result<Option<crate::audit::AuditSink>> {
        use crate::audit::AuditSink;
        Ok(match (&self.path, self.stream) {
            (Some(_), Some(_)) => {
                return Err(Error::config("audit", "set `path` or `stream`, not both".to_owned()));
            }
            (Some(path), None) => Some(AuditSink::File(path.clone())),
            (None, Some(AuditStream::Stdout)) => Some(AuditSink::Stdout),
            (None, Some(AuditStream::Stderr)) => Some(AuditSink::Stderr),
            (None, None) => None,
        })
    }
}

/// A standard stream the audit log writes to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AuditStream {
    /// Standard output.
    Stdout,
    /// Standard error.
    Stderr,
}

/// How long a shared MCP session lives after its last request, unless
/// `[sessions] idle_seconds` says otherwise.
pub const DEFAULT_SESSION_IDLE_SECONDS: u64 = 3600;

/// The `[sessions]` table.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SessionsSettings {
    /// Where sessions are shared: `redis://HOST:PORT[/DB]` (no password in
    /// it: see `password_env`). Unset: each replica keeps its own.
    pub redis: Option<String>,
    /// The environment variable holding Redis's password, if it asks for one.
    pub password_env: Option<String>,
    /// How long a session lives after its last request (default 3600).
    pub idle_seconds: Option<u64>,
}

/// The configuration file as written.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// Folder of `*.wasm` plugins.
    pub plugins_dir: Option<PathBuf>,
    /// Folder of the compile cache; an empty string disables it.
    pub cache_dir: Option<PathBuf>,
    /// Compiled components shared between hosts: a read-only folder and
    /// the key its entries are signed with.
    #[serde(default)]
    pub cache: crate::load::cache::CacheSettings,
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
    /// How tools are ranked by what they do.
    #[serde(default)]
    pub search: SearchSettings,
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
    /// Databases, by the name agents see them under.
    #[serde(default)]
    pub databases: BTreeMap<String, RawDatabase>,
    /// Connector instances, by the name agents see them under.
    #[serde(default)]
    pub connectors: BTreeMap<String, RawConnector>,
    /// Live upstream MCP servers, by name: the `mcpServers` entries other
    /// clients use (`command`/`args`/`env`/`cwd`, or `url`/`headers`).
    #[serde(default, alias = "mcpServers")]
    pub mcp_servers: BTreeMap<String, RawServer>,
    /// Whether to serve the bundled demo database (default: with the
    /// bundled plugins).
    pub demo: Option<bool>,
    /// Largest plugin file read, in MiB (default 256); a larger `*.wasm`
    /// is refused, and reported in the status.
    pub max_plugin_mb: Option<u64>,
    /// The audit log.
    #[serde(default)]
    pub audit: AuditSettings,
    /// Who may use the HTTP face (`serve --http`).
    #[serde(default)]
    pub auth: AuthSettings,
    /// Prometheus metrics.
    #[serde(default)]
    pub metrics: MetricsSettings,
    /// OpenTelemetry traces (the `OTEL_*` environment wins over it).
    #[serde(default)]
    pub telemetry: TelemetrySettings,
    /// Where 2025-11-25 MCP sessions are shared by replicas (Redis).
    #[serde(default)]
    pub sessions: SessionsSettings,
    /// Plugins pulled from OCI registries, by digest (or by a tag the lock
    /// file pins).
    #[serde(default)]
    pub oci: Vec<crate::load::oci::RawOci>,
    /// The lock file `quiver oci resolve` writes (default `quiver.lock`
    /// beside this file).
    pub oci_lock: Option<PathBuf>,
    /// The folder relative paths are resolved against (the config file's).
    #[serde(skip)]
    pub base: Option<PathBuf>,
}

impl Config {
    /// Read a config file; relative paths in it are resolved against its folder.
    pub fn load(path: &Path) -> Result<Config> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| Error::Io { path: path.display().to_string(), message: e.to_string() })?;
        Config::parse(&text, path.parent().unwrap_or(Path::new("."))).map_err(|e| match e {
            Error::Config { at, message } => Error::config(format!("{} {at}", path.display()), message),
            other => other,
        })
    }

    /// Parse config text; relative paths are resolved against `base`.
    pub fn parse(text: &str, base: &Path) -> Result<Config> {
        let mut config: Config = toml::from_str(text).map_err(|e| Error::config("the file", e.to_string()))?;
        config.base = Some(base.to_owned());
        for dir in [
            &mut config.plugins_dir,
            &mut config.cache_dir,
            &mut config.skills_dir,
            &mut config.mcp_dir,
            &mut config.audit.path,
            &mut config.search.model,
            &mut config.search.rerank_model,
            &mut config.cache.shared,
            &mut config.cache.key_file,
            &mut config.oci_lock,
        ]
        .into_iter()
        .flatten()
        .chain(config.oci.iter_mut().flat_map(|oci| [oci.docker_config.as_mut(), oci.key.as_mut()]).flatten())
        .chain(config.plugins.values_mut().flat_map(|plugin| plugin.folders.values_mut()))
        {
            if !dir.as_os_str().is_empty() && dir.is_relative() {
                *dir = base.join(&*dir);
            }
        }
        config.validate()?;
        Ok(config)
    }

    /// Check what serde cannot: limits in range, allow-list entries parse,
    /// the selector has what it needs.
    pub fn validate(&self) -> Result<()> {
        if self.engine.max_concurrency == 0 {
            return Err(Error::config("[engine]", "max_concurrency must be at least 1"));
        }
        if self.engine.max_concurrency > MAX_SLOTS || self.engine.max_kept_instances > MAX_SLOTS {
            return Err(Error::config(
                "[engine]",
                format!("max_concurrency and max_kept_instances are at most {MAX_SLOTS}"),
            ));
        }
        if let Some(problem) = self.cache.problem() {
            return Err(Error::config("[cache]", problem));
        }
        if self.max_plugin_mb == Some(0) {
            return Err(Error::config("max_plugin_mb", "must be at least 1"));
        }
        for oci in &self.oci {
            oci.parsed()?;
        }
        self.plugin_settings().validate()?;
        self.search.validate().map_err(|message| Error::config("[search] rerank_model", message))?;
        self.selector.validate()
    }

    /// The largest plugin file read, in bytes.
    pub fn max_plugin_bytes(&self) -> u64 {
        self.max_plugin_mb.map_or(crate::load::MAX_PLUGIN_BYTES, |mb| mb.saturating_mul(1 << 20))
    }

    /// Where `quiver oci resolve` writes the digest of each tag.
    pub fn oci_lock_path(&self) -> PathBuf {
        self.oci_lock.clone().unwrap_or_else(|| self.base().join(crate::load::oci::LOCK_FILE))
    }

    /// The resolver of every plugin's settings: its settings file over its
    /// `[plugins.NAME]` section over `[limits]`.
    pub fn plugin_settings(&self) -> SettingsResolver {
        SettingsResolver {
            defaults: self.limits,
            max_memory_mb: self.engine.max_memory_mb,
            plugins: self.plugins.clone(),
        }
    }

    /// The resolved settings of every `[databases.NAME]` section: URLs
    /// parsed, passwords read from where they are kept; the first that
    /// cannot be resolved is the error.
    pub fn database_settings(&self) -> Result<Vec<DatabaseSettings>> {
        self.each_database().into_iter().map(|(_, settings)| settings).collect()
    }

    /// Each `[databases.NAME]` section by name, resolved or why not: a
    /// section that cannot be resolved fails alone.
    pub fn each_database(&self) -> Vec<(String, Result<DatabaseSettings>)> {
        let base = self.base();
        self.databases.iter().map(|(name, raw)| (name.clone(), DatabaseSettings::resolve(name, raw, &base))).collect()
    }

    /// Every `[connectors.NAME]` section, resolved: credentials read from
    /// where they are kept, OpenAPI documents parsed and their operations
    /// selected; the first that cannot be resolved is the error.
    pub fn connector_sources(&self) -> Result<Vec<ConnectorSource>> {
        self.each_connector().into_iter().map(|(_, source)| source).collect()
    }

    /// Each `[connectors.NAME]` section by name, resolved or why not: a
    /// section that cannot be resolved fails alone.
    pub fn each_connector(&self) -> Vec<(String, Result<ConnectorSource>)> {
        let base = self.base();
        self.connectors.iter().map(|(name, raw)| (name.clone(), connector_source(name, raw, &base))).collect()
    }

    /// Every enabled `[mcp_servers.NAME]` entry, resolved: secret
    /// references read, paths against the config file's folder; the first
    /// that cannot be resolved is the error.
    pub fn server_specs(&self) -> Result<Vec<ServerSpec>> {
        let each = self.each_server().into_iter().map(|(_, spec)| spec);
        Ok(each.collect::<Result<Vec<Option<ServerSpec>>>>()?.into_iter().flatten().collect())
    }

    /// Each `[mcp_servers.NAME]` entry by name, resolved (`None`: disabled)
    /// or why not: an entry that cannot be resolved fails alone.
    pub fn each_server(&self) -> Vec<(String, Result<Option<ServerSpec>>)> {
        let base = self.base();
        self.mcp_servers.iter().map(|(name, raw)| (name.clone(), ServerSpec::resolve(name, raw, &base))).collect()
    }

    /// The folder relative paths are resolved against.
    fn base(&self) -> PathBuf {
        self.base.clone().unwrap_or_else(|| PathBuf::from("."))
    }

    /// Add the servers of an `mcpServers` JSON file (`--mcp-config`); its
    /// relative paths are resolved against its folder. A name already
    /// configured is an error.
    pub fn add_mcp_config(&mut self, path: &Path) -> Result<()> {
        let folder = path.parent().unwrap_or(Path::new("."));
        for (name, mut raw) in upstream::spec::read_file(path)? {
            if self.mcp_servers.contains_key(&name) {
                let message = format!("server `{name}` is also configured in the config file");
                return Err(Error::config(path.display().to_string(), message));
            }
            if let Some(cwd) = raw.cwd.as_mut().filter(|c| c.is_relative()) {
                *cwd = folder.join(&*cwd);
            }
            self.mcp_servers.insert(name, raw);
        }
        Ok(())
    }

    /// The resolved settings of plugin `name` (without a settings file).
    pub fn settings_for(&self, name: &str) -> Result<PluginSettings> {
        self.plugin_settings().resolve(name, None)
    }
}

/// `[connectors.NAME]` resolved: its OpenAPI document read and its
/// operations selected, when it has one.
fn connector_source(name: &str, raw: &RawConnector, base: &Path) -> Result<ConnectorSource> {
    let section = format!("[connectors.{name}]");
    let (raw, openapi) = match &raw.openapi {
        Some(document) if raw.plugin.is_none() => {
            let api =
                Api::open(&base.join(document)).map_err(|e| Error::config(section.clone(), format!("openapi: {e}")))?;
            let selection = Selection {
                tags: raw.tags.clone(),
                exclude_tags: raw.exclude_tags.clone(),
                operations: raw.operations.clone(),
                exclude_operations: raw.exclude_operations.clone(),
                access: raw.operation_access.clone(),
            };
            let connector = api.select(&selection, &section)?;
            let mut raw = raw.clone();
            for auth in &mut raw.auth {
                api.complete_auth(auth, &section)?;
            }
            // The document's header parameters are headers its guest sends.
            raw.allow_headers.extend(connector.header_names());
            (std::borrow::Cow::Owned(raw), Some(connector))
        }
        _ => (std::borrow::Cow::Borrowed(raw), None),
    };
    Ok(ConnectorSource { settings: ConnectorSettings::resolve(name, &raw, base)?, openapi })
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

    /// A granted folder written relative is the config file's neighbour,
    /// like every other path in it, not the working directory's.
    #[test]
    fn granted_folders_are_relative_to_the_config_file() {
        let base = tempfile::tempdir().unwrap();
        std::fs::create_dir(base.path().join("reports")).unwrap();
        let config = Config::parse("[plugins.web]\nfolders = { \"/data\" = \"reports\" }\n", base.path()).unwrap();
        let web = config.settings_for("web").unwrap();
        let reports = std::fs::canonicalize(base.path().join("reports")).unwrap();
        assert_eq!(web.grants.wasi.folders, [(reports, "/data".to_owned())]);
    }

    #[test]
    fn sections_compose_into_the_stages_settings() {
        let config = Config::parse(
            "plugins_dir = \"plugins\"\n[limits]\ntimeout_ms = 100\n[plugins.web]\nmemory_mb = 128\n",
            Path::new("/srv/quiver"),
        )
        .unwrap();
        assert_eq!(config.plugins_dir.as_deref(), Some(Path::new("/srv/quiver/plugins")));
        let web = config.settings_for("web").unwrap();
        assert_eq!((web.grants.limits.timeout_ms, web.grants.limits.memory_mb), (100, 128));
    }

    #[test]
    fn rejects_bad_values_with_where_they_are() {
        let error = Config::parse("[plugins.web]\nallow_http = [\"ftp://x\"]", Path::new(".")).unwrap_err();
        assert!(error.to_string().contains("[plugins.web]"), "{error}");
        let error = Config::parse("[engine]\nmax_concurrency = 0", Path::new(".")).unwrap_err();
        assert!(error.to_string().contains("[engine]"), "{error}");
        let error = Config::parse("[engine]\nmax_kept_instances = 100000", Path::new(".")).unwrap_err();
        assert!(error.to_string().contains("at most 4096"), "{error}");
        assert!(Config::parse("unknown = 1", Path::new(".")).is_err());
    }
}
