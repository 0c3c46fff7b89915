//! Compiling: a plugin's bytes to a `Component`, from the `.cwasm` cache
//! when it holds a valid entry, else with Cranelift on a blocking thread.

use std::sync::atomic::{AtomicU64, Ordering};

use wasmtime::Engine;
use wasmtime::component::Component;

use super::cache::{ArtifactCache, Source};
use super::plugin::Plugin;
use crate::error::{Error, Result};

/// Counters of the expensive steps, for tests, logs and benchmarks.
#[derive(Debug, Default)]
pub struct LoadStats {
    compiled: AtomicU64,
    cache_hits: AtomicU64,
}

impl LoadStats {
    /// Components compiled by Cranelift.
    pub fn compiled(&self) -> u64 {
        self.compiled.load(Ordering::Relaxed)
    }

    /// Components loaded from the `.cwasm` cache.
    pub fn cache_hits(&self) -> u64 {
        self.cache_hits.load(Ordering::Relaxed)
    }
}

/// Compiles plugins for one engine, through one cache.
pub(crate) struct Compiler {
    engine: Engine,
    cache: ArtifactCache,
    pub(crate) stats: LoadStats,
}

impl Compiler {
    pub(crate) fn new(engine: Engine, cache: ArtifactCache) -> Compiler {
        Compiler { engine, cache, stats: LoadStats::default() }
    }

    /// The compiled form of `plugin`: of the bytes the scan read and
    /// advertised, or of the file as long as it is unchanged (checked by
    /// stamp, and by stub). CPU-bound work runs on a blocking thread.
    pub(crate) async fn compile(&self, plugin: &Plugin) -> Result<Component> {
        let origin = plugin.origin().to_string();
        let bytes = plugin.origin().bytes()?;
        if !plugin.origin().holds_bytes() && super::stub::read(&bytes, &origin)? != *plugin.stub() {
            return Err(Error::Io {
                path: origin,
                message: "the file changed since it was scanned; a reload will pick up the new version".into(),
            });
        }
        let engine = self.engine.clone();
        let cache = self.cache.clone();
        let started = std::time::Instant::now();
        let (component, source) = tokio::task::spawn_blocking(move || cache.load_or_compile(&engine, &bytes))
            .await
            .map_err(|e| Error::internal("compile task", e))?
            .map_err(|e| Error::Compile {
                plugin: plugin.name().to_owned(),
                origin: origin.clone(),
                message: format!("{e:#}"),
            })?;
        let counter = match source {
            Source::Compiled => &self.stats.compiled,
            Source::CacheHit => &self.stats.cache_hits,
        };
        counter.fetch_add(1, Ordering::Relaxed);
        tracing::info!(
            plugin = plugin.name(),
            ?source,
            elapsed_ms = started.elapsed().as_millis() as u64,
            "plugin compiled"
        );
        Ok(component)
    }
}
