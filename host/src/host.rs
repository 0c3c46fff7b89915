//! The [`Host`]: the one place the stages are wired together.
//!
//! [`HostBuilder::build`] composes the configuration into the stages'
//! settings and connects them: the [Wasm runtime](crate::runtime) and the
//! saved-list backend behind the [invocation seam](crate::invoke), the
//! [reloader](crate::reload) that scans the folders and publishes catalog
//! snapshots, and what every [`Session`] shares. Everything else the host
//! offers is a short delegation to one of them.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::Value;

use crate::audit::{AuditLog, AuditRecord};
use crate::catalog::{Catalog, Category, DatabaseSource, Embedded, Rejection, Status};
use crate::config::{self, Config};
use crate::disclosure::policy::{Policy, PolicySettings};
use crate::disclosure::search::{Ranker, SearchCache};
use crate::disclosure::tokens::TokenReport;
use crate::error::{Error, Result};
use crate::invoke::{self, Answer, Backend, Backends, Call, Caller};
use crate::load::{LoadStats, Manifest, Plugin};
use crate::reload::watch::Watcher;
use crate::reload::{Folders, Reloader};
use crate::runtime::WasmRuntime;
use crate::sandbox::sql::{Database, DatabaseSettings};
use crate::session::{Services, Session, SessionState};
use crate::telemetry::Metrics;
use crate::upstream::{UpstreamStatus, Upstreams};

mod files;
mod pulling;
mod readings;

pub use files::{Checked, Packaged};

/// Builds a [`Host`]. Nothing is compiled by `build`: it creates the engine
/// and reads the stubs of the plugins.
#[derive(Debug, Default)]
pub struct HostBuilder {
    config: Config,
    embedded: Vec<Embedded>,
    cache_dir: Option<Option<PathBuf>>,
    keep_bytes: bool,
    demo: bool,
}

/// How long start-up waits for a database's schema (Tier 1 lists its tables).
const SCHEMA_WAIT: std::time::Duration = std::time::Duration::from_secs(3);

impl HostBuilder {
    /// Also serve the bundled demo database (`chinook`, SQLite, read-only),
    /// unless the configuration says `demo = false`.
    pub fn demo_databases(mut self) -> Self {
        self.demo = true;
        self
    }

    /// Use this configuration (limits, plugin settings, folders).
    pub fn config(mut self, config: Config) -> Self {
        self.config = config;
        self
    }

    /// Serve the `*.wasm` plugins of `dir`.
    pub fn plugins_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.config.plugins_dir = Some(dir.into());
        self
    }

    /// Serve the Agent Skills in `dir`.
    pub fn skills_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.config.skills_dir = Some(dir.into());
        self
    }

    /// Serve the saved MCP `tools/list` results in `dir` (read-only).
    pub fn mcp_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.config.mcp_dir = Some(dir.into());
        self
    }

    /// Serve a plugin embedded in the program.
    pub fn embedded(mut self, file_name: &'static str, bytes: &'static [u8]) -> Self {
        self.embedded.push((file_name, bytes));
        self
    }

    /// Serve the first-party plugins bundled with Quiver.
    #[cfg(feature = "bundled")]
    pub fn bundled(mut self) -> Self {
        self.embedded.extend(quiver_bundled::PLUGINS.iter().map(|p| (p.file_name, p.bytes)));
        self
    }

    /// Keep compiled components in `dir` (`None`: no cache). The default is
    /// the config's `cache_dir`, else [`config::default_cache_dir`].
    pub fn cache_dir(mut self, dir: Option<PathBuf>) -> Self {
        self.cache_dir = Some(dir);
        self
    }

    /// Keep each folder plugin's bytes in memory from the first scan (as
    /// [`Host::watch`] does from when it starts), so that a replaced file
    /// can never take away a version the catalog serves.
    pub fn keep_plugin_bytes(mut self) -> Self {
        self.keep_bytes = true;
        self
    }

    /// Create the engine and scan the plugins.
    pub fn build(self) -> Result<Host> {
        let config = self.config;
        config.validate()?;
        let cache_dir = match self.cache_dir {
            Some(dir) => dir,
            None => match &config.cache_dir {
                Some(dir) if dir.as_os_str().is_empty() => None,
                Some(dir) => Some(dir.clone()),
                None => config::default_cache_dir(),
            },
        };
        // A resource that cannot be set up fails alone: it is rejected,
        // with its reason, and the rest serve.
        let mut failed: Vec<Rejection> = Vec::new();
        let mut fail = |section: String, error: Error| failed.push(Rejection { origin: section, error });
        let mut databases = Vec::new();
        let mut secrets = Vec::new();
        let traced = config.audit.params == crate::audit::Params::Traced;
        for (name, settings) in config.each_database() {
            let opened = settings.and_then(|mut settings| {
                secrets.extend(settings.password.clone());
                settings.trace_text = traced;
                open_database(settings)
            });
            match opened {
                Ok(source) => databases.push(source),
                Err(error) => fail(format!("[databases.{name}]"), error),
            }
        }
        if self.demo && config.demo != Some(false) {
            databases.extend(demo_databases(cache_dir.as_deref(), traced)?);
        }
        let mut connectors = Vec::new();
        for (name, source) in config.each_connector() {
            match source {
                Ok(source) => connectors.push(source),
                Err(error) => fail(format!("[connectors.{name}]"), error),
            }
        }
        secrets.extend(connectors.iter().flat_map(|c| c.settings.secrets().cloned()));
        let mut specs = Vec::new();
        for (name, spec) in config.each_server() {
            match spec {
                Ok(spec) => specs.extend(spec),
                Err(error) => fail(format!("[mcp_servers.{name}]"), error),
            }
        }
        let upstreams = Arc::new(Upstreams::new(specs, cache_dir.as_deref()));
        secrets.extend(upstreams.secrets().cloned());
        let analyzer = config.search.analyzer(cache_dir.as_deref());
        // With a cache folder, even with no entry: its store can be collected.
        let pulls = (!config.oci.is_empty() || cache_dir.is_some()).then(|| {
            let store = cache_dir.as_ref().map(|dir| crate::load::oci::Store::new(dir.join("oci")));
            let lock = crate::load::oci::OciLock::read(&config.oci_lock_path());
            Arc::new(crate::load::oci::Pulls::new(&config.oci, lock, store, config.max_plugin_bytes()))
        });
        secrets.extend(pulls.iter().flat_map(|p| p.secrets()).map(crate::sandbox::secrets::Secret::new));
        let runtime = Arc::new(WasmRuntime::new(&config.engine, cache_dir, &config.cache)?);
        let folders = Folders {
            embedded: self.embedded,
            plugins: config.plugins_dir.clone(),
            skills: config.skills_dir.clone(),
            mcp: config.mcp_dir.clone(),
            adapter: bundled_adapter("sql.wasm"),
            openapi: bundled_adapter("openapi.wasm"),
            databases,
            connectors,
            live: upstreams.live_servers(),
            failed,
            max_plugin_bytes: Some(config.max_plugin_bytes()),
            oci: pulls.clone(),
        };
        let reloader = Arc::new(Reloader::start(folders, config.plugin_settings(), runtime.clone(), self.keep_bytes)?);
        let weak = Arc::downgrade(&reloader);
        upstreams.on_change(move || {
            let (Some(reloader), Ok(runtime)) = (weak.upgrade(), tokio::runtime::Handle::try_current()) else { return };
            runtime.spawn(async move {
                if let Err(error) = reloader.reload().await {
                    tracing::warn!(%error, "cannot publish the MCP servers' new tool lists");
                }
            });
        });
        upstreams.list_in_background();
        if let Some(pulls) = &pulls {
            pulling::start(pulls, &reloader);
        }
        let redaction = crate::sandbox::secrets::Redaction::new(&secrets);
        // Kept in memory whether or not a sink is configured: the
        // dashboard's live calls and health read it.
        let audit = Some(Arc::new(AuditLog::new(config.audit.sink()?, secrets)));
        let metrics = Arc::new(Metrics::new(&config.metrics));
        let services = Arc::new(Services {
            live: reloader.live().clone(),
            backend: Backends::new(runtime.clone(), upstreams.clone(), audit)
                .with_metrics(metrics.clone())
                .with_params(config.audit.params, redaction),
            selector: config.selector.build(analyzer.clone())?,
            search: SearchCache::new(analyzer),
            tables: Default::default(),
        });
        let inner = Inner {
            services,
            reloader,
            runtime,
            upstreams,
            disclosure: config.disclosure,
            agents: config.agents,
            auth: config.auth,
            sessions: config.sessions,
            metrics,
        };
        let host = Host { inner: Arc::new(inner) };
        host.inner.metrics.read_from(readings::Readable::new(&host.inner, config.metrics.tier1_tokens));
        Ok(host)
    }
}

/// Open a configured database and read its schema for Tier 1.
fn open_database(settings: DatabaseSettings) -> Result<DatabaseSource> {
    let adapter = settings.adapter.clone();
    let database = Database::open(settings)?;
    database.introspect_blocking(SCHEMA_WAIT);
    Ok(DatabaseSource { database, adapter })
}

/// A bundled generic plugin served behind configured resources (the
/// database adapter, the OpenAPI connector), when the bundled plugins are
/// built in.
fn bundled_adapter(file_name: &str) -> Option<Embedded> {
    #[cfg(feature = "bundled")]
    {
        quiver_bundled::ADAPTERS.iter().find(|a| a.file_name == file_name).map(|a| (a.file_name, a.bytes))
    }
    #[cfg(not(feature = "bundled"))]
    {
        let _ = file_name;
        None
    }
}

/// The bundled demo databases, built once as SQLite files in `cache_dir`
/// (else the temporary folder).
fn demo_databases(cache_dir: Option<&Path>, trace_text: bool) -> Result<Vec<DatabaseSource>> {
    #[cfg(feature = "bundled")]
    {
        let dir = cache_dir.map_or_else(|| std::env::temp_dir().join("quiver"), Path::to_owned).join("demo");
        let mut sources = Vec::new();
        for demo in quiver_bundled::DEMOS {
            let at = format!("the bundled demo database `{}`", demo.name);
            let path = crate::sandbox::sql::materialize(demo.name, demo.sql, &dir)
                .map_err(|e| Error::Io { path: dir.display().to_string(), message: format!("{at}: {e}") })?;
            let mut raw: crate::sandbox::sql::RawDatabase = toml::from_str(&format!("url = \"\"\n{}", demo.settings))
                .map_err(|e| Error::internal(at.clone(), e))?;
            raw.url = format!("sqlite:{}", path.display());
            let settings = DatabaseSettings::resolve(demo.name, &raw, &dir)?;
            sources.push(open_database(DatabaseSettings { trace_text, ..settings })?);
        }
        Ok(sources)
    }
    #[cfg(not(feature = "bundled"))]
    {
        let _ = (cache_dir, trace_text);
        Ok(Vec::new())
    }
}

/// A plugin host: a catalog of plugins and the engine that runs them.
/// Cheap to clone; clones share everything.
#[derive(Clone)]
pub struct Host {
    inner: Arc<Inner>,
}

struct Inner {
    services: Arc<Services>,
    reloader: Arc<Reloader>,
    runtime: Arc<WasmRuntime>,
    upstreams: Arc<Upstreams>,
    /// The policy layers below the environment (see [`Policy::resolve`]).
    disclosure: PolicySettings,
    agents: BTreeMap<String, PolicySettings>,
    auth: crate::auth::AuthSettings,
    sessions: crate::config::SessionsSettings,
    metrics: Arc<Metrics>,
}

impl Host {
    /// Start building a host.
    pub fn builder() -> HostBuilder {
        HostBuilder::default()
    }

    /// The current catalog snapshot.
    pub fn catalog(&self) -> Arc<Catalog> {
        self.inner.services.live.current()
    }

    /// Every catalog snapshot published from now on: wait on it
    /// (`changed`, `wait_for`) instead of polling [`catalog`](Self::catalog).
    /// Its [`version`](Catalog::version) tells whether the tools changed.
    pub fn subscribe(&self) -> tokio::sync::watch::Receiver<Arc<Catalog>> {
        self.inner.services.live.subscribe()
    }

    /// Receivers of [`subscribe`](Self::subscribe) alive now: each MCP
    /// session's list-change forwarder, each watcher an embedder holds.
    pub fn subscribers(&self) -> usize {
        self.inner.services.live.subscribers()
    }

    /// Once every source on its way (a component being pulled from a
    /// registry) has its first outcome published: served, or failed with why.
    pub async fn settled(&self) {
        self.inner.services.live.settled().await
    }

    /// What the host serves and what it refused.
    pub fn status(&self) -> Status {
        let mut status = self.catalog().status();
        status.oci = self.inner.reloader.folders().oci.as_ref().map(|p| p.status()).unwrap_or_default();
        status
    }

    /// The latest `limit` audited calls, newest last (only those of
    /// `resource`, if given), of the last [`KEPT`](crate::audit::KEPT)
    /// kept in memory.
    pub fn audit(&self, limit: usize, resource: Option<&str>) -> Vec<AuditRecord> {
        self.inner.services.backend.audit().map(|log| log.recent(limit, resource)).unwrap_or_default()
    }

    /// The audit log (kept in memory, and written where `[audit]` says).
    pub fn audit_log(&self) -> Option<&AuditLog> {
        self.inner.services.backend.audit()
    }

    /// Remove from the OCI store every artifact no `[[oci]]` entry is
    /// pinned to now (`quiver oci gc`).
    pub fn collect_oci_store(&self) -> Result<crate::load::oci::store::Collected> {
        let Some(pulls) = self.inner.reloader.folders().oci.clone() else { return Ok(Default::default()) };
        pulls.collect().map_err(|message| Error::Io { path: "[[oci]]".into(), message })
    }

    /// The `[sessions]` table of the config file (read by `serve --http`).
    pub fn sessions_settings(&self) -> &crate::config::SessionsSettings {
        &self.inner.sessions
    }

    /// The `[auth]` table of the config file (read by `serve --http`).
    pub fn auth_settings(&self) -> &crate::auth::AuthSettings {
        &self.inner.auth
    }

    /// The agent profiles configured (`[agents.NAME]`), by name.
    pub fn agents(&self) -> impl Iterator<Item = &str> {
        self.inner.agents.keys().map(String::as_str)
    }

    /// What each of the latest reloads changed, oldest first (the start
    /// among them while it is kept).
    pub fn reloads(&self) -> Vec<crate::reload::Reload> {
        self.inner.reloader.timeline()
    }

    /// Rescan the folders and publish a new catalog snapshot if anything
    /// changed (see [`reload`](crate::reload)). Returns the snapshot now served.
    pub async fn reload(&self) -> Result<Arc<Catalog>> {
        self.inner.reloader.reload().await
    }

    /// Watch the plugins, skills and MCP folders and reload on every
    /// change until the returned [`Watcher`] is dropped. Call it from
    /// within a tokio runtime (reloads run on it).
    pub fn watch(&self) -> Result<Watcher> {
        Watcher::start(self.inner.reloader.clone())
    }

    /// What each configured upstream MCP server is doing now (connected,
    /// its process, how many times it was started).
    pub fn upstream_status(&self) -> Vec<UpstreamStatus> {
        self.inner.upstreams.status()
    }

    /// Close every upstream connection and stop every upstream process
    /// (they are also stopped when the host is dropped).
    pub async fn shutdown_upstreams(&self) {
        self.inner.upstreams.shutdown().await
    }

    /// Its metrics (see [`telemetry`]): [`Metrics::encode`] is what
    /// `GET /metrics` answers.
    pub fn metrics(&self) -> &Arc<Metrics> {
        &self.inner.metrics
    }

    /// Counters of compilations and cache hits.
    pub fn load_stats(&self) -> &LoadStats {
        self.inner.runtime.stats()
    }

    /// The disclosure policy for `agent` (its profile, the environment, the
    /// config's defaults).
    pub fn policy(&self, agent: Option<&str>) -> Result<Policy> {
        Policy::resolve(&self.inner.disclosure, &self.inner.agents, agent, &|var| std::env::var(var).ok())
    }

    /// Start a session for `agent` (its profile in the config file), or
    /// with no profile. The environment is read now.
    pub fn session(&self, agent: Option<&str>) -> Result<Session> {
        let state = SessionState { agent: agent.map(str::to_owned), ..Default::default() };
        Ok(Session::new(self.inner.services.clone(), Arc::new(self.policy(agent)?), state, false))
    }

    /// A session for a stateless face (MCP, REST), where the tool list
    /// never changes: every tool `agent`'s policy allows is callable by its
    /// name, and `request_tools` / `search_tools` only return schemas.
    /// Clone it for each request: the policy is resolved once.
    pub fn open_session(&self, agent: Option<&str>) -> Result<Session> {
        let state = SessionState { agent: agent.map(str::to_owned), ..Default::default() };
        Ok(Session::new(self.inner.services.clone(), Arc::new(self.policy(agent)?), state, true))
    }

    /// Resume a session from its saved state.
    pub fn resume(&self, state: SessionState) -> Result<Session> {
        let policy = self.policy(state.agent.as_deref())?;
        Ok(Session::new(self.inner.services.clone(), Arc::new(policy), state, false))
    }

    fn plugin(&self, catalog: &Catalog, name: &str) -> Result<Arc<Plugin>> {
        let known = || catalog.names();
        catalog.get(name).cloned().ok_or_else(|| Error::UnknownPlugin { plugin: name.to_owned(), known: known() })
    }

    /// The full manifest (Tier 2) of `plugin`, compiling it on first use.
    pub async fn describe(&self, plugin: &str) -> Result<Manifest> {
        let plugin = self.plugin(&self.catalog(), plugin)?;
        Ok(self.inner.runtime.prepare(&plugin).await?.manifest.clone())
    }

    /// Call `action` of `plugin` with `input`, a JSON object as text. See
    /// [`call_json`](Self::call_json).
    pub async fn call(&self, plugin: &str, action: &str, input: &str) -> Result<Value> {
        let input: Value = serde_json::from_str(input).map_err(|e| Error::InputNotJson {
            plugin: plugin.to_owned(),
            action: action.to_owned(),
            reason: e.to_string(),
        })?;
        self.call_json(plugin, action, &input).await
    }

    /// Call `action` of `plugin` (or of an upstream MCP server, whose
    /// whole `CallToolResult` is the value) with `input`: checked against
    /// the action's schema before the plugin sees it, then run in a fresh
    /// instance under the plugin's limits.
    pub async fn call_json(&self, plugin: &str, action: &str, input: &Value) -> Result<Value> {
        Ok(self.call_as(&Caller::operator(), plugin, action, input.clone()).await?.result?.into_json())
    }

    /// Call `action` of `plugin` (a plugin, or an upstream MCP server:
    /// a tool its live server lists now is found even when this snapshot
    /// does not list it yet) with `input` for `caller`, and answer with
    /// the typed output and the facts of the call; an error when there is
    /// no such tool.
    pub async fn call_as(&self, caller: &Caller, plugin: &str, action: &str, input: Value) -> Result<Answer> {
        let mut catalog = self.catalog();
        let backend = &self.inner.services.backend;
        let mut tool = invoke::tool_of(backend, &catalog, plugin, action).await;
        // A plugin still on its way (being pulled): wait for it, as a call joins a compile.
        if tool.as_ref().is_err_and(|e| e.kind() == crate::error::ErrorKind::UnknownPlugin)
            && self.inner.services.live.arriving() > 0
        {
            let _ = tokio::time::timeout(crate::catalog::ARRIVAL_WAIT, self.settled()).await;
            catalog = self.catalog();
            tool = invoke::tool_of(backend, &catalog, plugin, action).await;
        }
        let tool = tool?;
        Ok(backend.call(Call { catalog: &catalog, tool: &tool, input, caller, progress: None }).await)
    }

    /// Load every plugin of the catalog now (filling the compile cache);
    /// `progress` is told of each one as it finishes.
    pub async fn preload(&self, mut progress: impl FnMut(&Plugin, &Result<()>)) {
        for plugin in self.catalog().plugins() {
            let result = self.inner.runtime.prepare(plugin).await.map(|_| ());
            progress(plugin, &result);
        }
    }

    /// Rank every tool and skill for `query`, as `search_tools` does, for
    /// `agent` (see [`Session::search`]).
    pub fn search(
        &self,
        query: &str,
        limit: usize,
        agent: Option<&str>,
    ) -> Result<Vec<(String, Category, String, f32)>> {
        Ok(self.session(agent)?.search(query, limit))
    }

    /// [`search`](Self::search) with equivalent tools in one place, as
    /// `search_tools` answers (see [`Session::search_collapsed`]).
    pub fn search_collapsed(
        &self,
        query: &str,
        limit: usize,
        agent: Option<&str>,
    ) -> Result<Vec<(String, Vec<String>)>> {
        Ok(self.session(agent)?.search_collapsed(query, limit))
    }

    /// Which ranking search answers with, and the embedding model's id
    /// when it is the hybrid one.
    pub fn ranker(&self) -> (Ranker, Option<String>) {
        let analyzer = self.inner.services.search.analyzer();
        (analyzer.ranker(), analyzer.model().map(|model| model.id().to_owned()))
    }

    /// What the catalog costs in prompt tokens in each mode, for `agent`
    /// (see [`Session::token_report`]).
    pub async fn token_report(&self, agent: Option<&str>) -> Result<TokenReport> {
        Ok(self.session(agent)?.token_report().await)
    }
}
