//! The [`Host`]: the only place the stages are wired together.

use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};

use crate::catalog::{Catalog, Category, Embedded, Sources};
use crate::config::{self, Config};
use crate::disclosure::meta_tools::View;
use crate::disclosure::policy::Policy;
use crate::disclosure::search::SearchIndex;
use crate::disclosure::select::Selector;
use crate::disclosure::tokens::{self, TokenReport};
use crate::load::{LoadStats, Loader, Manifest, Origin, Plugin, Stub};
use crate::sandbox::limits;
use crate::{Error, Result, runtime};

/// Builds a [`Host`]. Nothing is compiled by `build`: it creates the engine
/// and reads the stubs of the plugins.
#[derive(Debug, Default)]
pub struct HostBuilder {
    config: Config,
    embedded: Vec<Embedded>,
    cache_dir: Option<Option<PathBuf>>,
    keep_bytes: bool,
}

impl HostBuilder {
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
        self.config.validate()?;
        let cache_dir = match self.cache_dir {
            Some(dir) => dir,
            None => match &self.config.cache_dir {
                Some(dir) if dir.as_os_str().is_empty() => None,
                Some(dir) => Some(dir.clone()),
                None => config::default_cache_dir(),
            },
        };
        let engine = limits::engine(&self.config.engine).map_err(|e| Error::Internal(format!("engine: {e:#}")))?;
        let loader = Loader::new(engine, cache_dir, self.config.engine.max_concurrency as usize)?;
        let selector = self.config.selector.build()?;
        let catalog = Catalog::scan(1, &sources(&self.embedded, &self.config), &self.config, None, self.keep_bytes)?;
        tracing::info!(plugins = catalog.len(), rejected = catalog.rejected().len(), "catalog ready");
        Ok(Host {
            inner: Arc::new(Inner {
                loader,
                selector,
                search: std::sync::Mutex::new(None),
                catalog: RwLock::new(Arc::new(catalog)),
                versions: tokio::sync::watch::Sender::new(1),
                keep_bytes: std::sync::atomic::AtomicBool::new(self.keep_bytes),
                reloading: tokio::sync::Mutex::new(()),
                embedded: self.embedded,
                config: self.config,
            }),
        })
    }
}

/// A plugin host: a catalog of plugins and the engine that runs them.
/// Cheap to clone; clones share everything.
#[derive(Clone)]
pub struct Host {
    inner: Arc<Inner>,
}

struct Inner {
    loader: Loader,
    selector: Box<dyn Selector>,
    /// The search index of the latest catalog version searched.
    search: std::sync::Mutex<Option<(u64, Arc<SearchIndex>)>>,
    catalog: RwLock<Arc<Catalog>>,
    /// The version of the catalog last published.
    versions: tokio::sync::watch::Sender<u64>,
    /// Held by the one reload running.
    reloading: tokio::sync::Mutex<()>,
    /// Whether scans keep folder plugins' bytes (see [`Origin`]).
    keep_bytes: std::sync::atomic::AtomicBool,
    embedded: Vec<Embedded>,
    config: Config,
}

impl Host {
    /// Start building a host.
    pub fn builder() -> HostBuilder {
        HostBuilder::default()
    }

    /// The current catalog snapshot.
    pub fn catalog(&self) -> Arc<Catalog> {
        self.inner.catalog.read().expect("catalog lock").clone()
    }

    /// Rescan the folders and publish a new catalog version if anything
    /// changed (see [`reload`](crate::catalog::reload) for what replaces
    /// what). Files that did not change are not read again and keep their
    /// compiled form; replacements are validated before the swap. Returns
    /// the catalog now served.
    pub async fn reload(&self) -> Result<Arc<Catalog>> {
        let _one_at_a_time = self.inner.reloading.lock().await;
        let old = self.catalog();
        let sources = sources(&self.inner.embedded, &self.inner.config);
        let keep_bytes = self.inner.keep_bytes.load(std::sync::atomic::Ordering::Relaxed);
        let fresh = Catalog::scan(old.version() + 1, &sources, &self.inner.config, Some(&old), keep_bytes)?;
        let next = crate::catalog::reload::reconcile(&old, fresh, &self.inner.loader).await;
        if crate::catalog::reload::same_contents(&old, &next) {
            return Ok(old);
        }
        let next = Arc::new(next);
        *self.inner.catalog.write().expect("catalog lock") = next.clone();
        self.inner.versions.send_replace(next.version());
        tracing::info!(
            version = next.version(),
            plugins = next.len(),
            rejected = next.rejected().len(),
            stale = next.stale().count(),
            "catalog reloaded"
        );
        Ok(next)
    }

    /// From now on, keep folder plugins' bytes (the next reload reads the
    /// unchanged ones that lack them).
    pub(crate) fn keep_plugin_bytes(&self) {
        self.inner.keep_bytes.store(true, std::sync::atomic::Ordering::Relaxed);
    }

    /// The folders a watcher follows: (folder, recursive).
    pub(crate) fn watched_folders(&self) -> Vec<(PathBuf, bool)> {
        let config = &self.inner.config;
        [(&config.plugins_dir, false), (&config.skills_dir, true), (&config.mcp_dir, false)]
            .into_iter()
            .filter_map(|(dir, recursive)| dir.clone().map(|d| (d, recursive)))
            .collect()
    }

    /// The catalog version, as it changes: wait on it (`changed`,
    /// `wait_for`) instead of polling [`catalog`](Self::catalog).
    pub fn subscribe(&self) -> tokio::sync::watch::Receiver<u64> {
        self.inner.versions.subscribe()
    }

    /// Counters of compilations and cache hits.
    pub fn load_stats(&self) -> &LoadStats {
        &self.inner.loader.stats
    }

    fn plugin(&self, name: &str) -> Result<Arc<Plugin>> {
        let catalog = self.catalog();
        catalog
            .get(name)
            .cloned()
            .ok_or_else(|| Error::UnknownPlugin { plugin: name.to_owned(), known: catalog.names() })
    }

    /// The full manifest (Tier 2) of `plugin`, compiling it on first use.
    pub async fn describe(&self, plugin: &str) -> Result<Manifest> {
        let plugin = self.plugin(plugin)?;
        Ok(self.inner.loader.load(&plugin).await?.manifest.clone())
    }

    /// Call `action` of `plugin` with `input`, a JSON object as text.
    ///
    /// The input is checked against the action's schema before the plugin
    /// sees it; the call runs in a fresh instance under the plugin's limits.
    pub async fn call(&self, plugin: &str, action: &str, input: &str) -> Result<serde_json::Value> {
        let plugin = self.plugin(plugin)?;
        if !plugin.stub().action_names().any(|a| a == action) {
            return Err(Error::UnknownAction {
                plugin: plugin.name().to_owned(),
                action: action.to_owned(),
                known: plugin.stub().action_names().map(str::to_owned).collect(),
            });
        }
        let loaded = self.inner.loader.load(&plugin).await?;
        let spec = loaded.manifest.action(action).ok_or_else(|| Error::Internal("stub checked".into()))?;
        let value: serde_json::Value = serde_json::from_str(input).map_err(|e| Error::InputNotJson {
            plugin: plugin.name().to_owned(),
            action: action.to_owned(),
            reason: e.to_string(),
        })?;
        if !value.is_object() {
            return Err(Error::InputNotJson {
                plugin: plugin.name().to_owned(),
                action: action.to_owned(),
                reason: format!("got {}", json_type(&value)),
            });
        }
        let errors: Vec<String> = spec
            .validator
            .iter_errors(&value)
            .take(8)
            .map(|e| {
                let at = e.instance_path().to_string();
                if at.is_empty() { e.to_string() } else { format!("at {at}: {e}") }
            })
            .collect();
        if !errors.is_empty() {
            return Err(Error::InputSchema { plugin: plugin.name().to_owned(), action: action.to_owned(), errors });
        }
        let _permit = self.inner.loader.permit().await?;
        runtime::invoke(&self.inner.loader.engine, &loaded.pre, &plugin, action, input).await
    }

    /// Like [`call`](Self::call), with the input as a JSON value.
    pub async fn call_json(&self, plugin: &str, action: &str, input: &serde_json::Value) -> Result<serde_json::Value> {
        self.call(plugin, action, &input.to_string()).await
    }

    /// Load every plugin of the catalog now (filling the compile cache);
    /// `progress` is told of each one as it finishes.
    pub async fn preload(&self, mut progress: impl FnMut(&Plugin, &Result<()>)) {
        for plugin in self.catalog().plugins() {
            let result = self.inner.loader.load(plugin).await.map(|_| ());
            progress(plugin, &result);
        }
    }

    /// Fully validate the plugin file at `path` (stub, world, compile,
    /// `describe()`, manifest against stub) without adding it to the catalog.
    pub async fn check(&self, path: &Path) -> Result<Manifest> {
        let origin = Origin::file(path)?;
        let stub = Stub::read(&origin.bytes()?, &origin.to_string())?;
        let settings = self.inner.config.settings_for(&stub.name)?;
        let plugin = Plugin::new(stub, origin, settings);
        Ok(self.inner.loader.load(&plugin).await?.manifest.clone())
    }
}

impl Host {
    /// The disclosure policy for `agent` (its profile, the environment, the
    /// config's defaults).
    pub fn policy(&self, agent: Option<&str>) -> Result<Policy> {
        let config = &self.inner.config;
        Policy::resolve(&config.disclosure, &config.agents, agent, &|var| std::env::var(var).ok())
    }

    pub(crate) fn selector(&self) -> &dyn Selector {
        self.inner.selector.as_ref()
    }

    /// The search index of `catalog`, built once per catalog version.
    pub(crate) fn search_index(&self, catalog: &Catalog) -> Arc<SearchIndex> {
        let mut cached = self.inner.search.lock().expect("search index lock");
        if let Some((version, index)) = cached.as_ref()
            && *version == catalog.version()
        {
            return index.clone();
        }
        let index = Arc::new(SearchIndex::for_catalog(catalog));
        *cached = Some((catalog.version(), index.clone()));
        index
    }

    /// Rank every tool and skill for `query`, as `search_tools` does (no
    /// session needed): (name, category, summary, score), best first.
    pub fn search(
        &self,
        query: &str,
        limit: usize,
        agent: Option<&str>,
    ) -> Result<Vec<(String, Category, String, f32)>> {
        let policy = self.policy(agent)?;
        let catalog = self.catalog();
        let index = self.search_index(&catalog);
        Ok(index
            .search(query, limit, |e| policy.allows(e.category))
            .into_iter()
            .map(|(e, score)| (e.name.clone(), e.category, e.summary.clone(), score))
            .collect())
    }

    /// What the catalog costs in prompt tokens in each mode, for `agent`.
    /// Loads every plugin (the full cost needs their schemas).
    pub async fn token_report(&self, agent: Option<&str>) -> Result<TokenReport> {
        let policy = self.policy(agent)?;
        self.preload(|_, _| {}).await;
        let catalog = self.catalog();
        let records: Vec<_> = catalog.tools().into_iter().filter(|r| policy.allows(r.category)).collect();
        let registry: Vec<_> = records.iter().filter(|r| r.category == Category::Builtin).cloned().collect();
        let view = View { catalog: &catalog, policy: &policy, registry: &registry };
        Ok(tokens::report(&view, &records))
    }
}

fn sources<'a>(embedded: &'a [Embedded], config: &'a Config) -> Sources<'a> {
    Sources {
        embedded,
        plugins_dir: config.plugins_dir.as_deref(),
        skills_dir: config.skills_dir.as_deref(),
        mcp_dir: config.mcp_dir.as_deref(),
    }
}

fn json_type(value: &serde_json::Value) -> &'static str {
    match value {
        serde_json::Value::Null => "null",
        serde_json::Value::Bool(_) => "a boolean",
        serde_json::Value::Number(_) => "a number",
        serde_json::Value::String(_) => "a string",
        serde_json::Value::Array(_) => "an array",
        serde_json::Value::Object(_) => "an object",
    }
}
