//! The [`Host`]: the only place the stages are wired together.

use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};

use crate::catalog::{Catalog, Embedded};
use crate::config::{self, Config};
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
        let catalog = Catalog::scan(1, &self.embedded, self.config.plugins_dir.as_deref(), &self.config)?;
        tracing::info!(plugins = catalog.len(), rejected = catalog.rejected().len(), "catalog ready");
        Ok(Host {
            inner: Arc::new(Inner {
                loader,
                catalog: RwLock::new(Arc::new(catalog)),
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
    catalog: RwLock<Arc<Catalog>>,
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

    /// Re-read the stubs of every plugin and publish a new catalog version.
    /// Plugins whose file did not change keep their compiled form.
    pub fn rescan(&self) -> Result<Arc<Catalog>> {
        let old = self.catalog();
        let mut fresh = Catalog::scan(
            old.version() + 1,
            &self.inner.embedded,
            self.inner.config.plugins_dir.as_deref(),
            &self.inner.config,
        )?;
        fresh.keep_loaded_from(&old);
        let fresh = Arc::new(fresh);
        *self.inner.catalog.write().expect("catalog lock") = fresh.clone();
        Ok(fresh)
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
        let bytes = origin.bytes()?;
        let stub = Stub::read(&bytes, &origin.to_string())?;
        let settings = self.inner.config.settings_for(&stub.name)?;
        let plugin = Plugin::new(stub, origin, settings);
        Ok(self.inner.loader.load(&plugin).await?.manifest.clone())
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
