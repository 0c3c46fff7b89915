//! Compiling: a plugin's bytes to a `Component`, from the `.cwasm` cache
//! when it holds a valid entry, else with Cranelift on a blocking thread.
//!
//! A compile is a detached task shared by everyone waiting for the same
//! bytes: a request that gives up (cancelled, timed out) does not throw
//! the work away, the next one joins it, and it fills the cache either way.
//! At most one compile per core runs at once; others wait their turn.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use sha2::{Digest, Sha256};
use tokio::sync::watch;
use wasmtime::Engine;
use wasmtime::component::Component;

use super::cache::{ArtifactCache, Source};
use super::plugin::Plugin;
use crate::error::{Error, Result};

/// The outcome of a compile in flight, once it is known.
type Outcome = Option<std::result::Result<Component, String>>;

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
    pub(crate) stats: Arc<LoadStats>,
    /// Compiles in flight, by the digest of their bytes.
    in_flight: Arc<Mutex<HashMap<[u8; 32], watch::Receiver<Outcome>>>>,
    /// One permit per core: compiles beyond that wait.
    slots: Arc<tokio::sync::Semaphore>,
}

impl Compiler {
    pub(crate) fn new(engine: Engine, cache: ArtifactCache) -> Compiler {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        Compiler {
            engine,
            cache,
            stats: Arc::default(),
            in_flight: Arc::default(),
            slots: Arc::new(tokio::sync::Semaphore::new(cores)),
        }
    }

    /// Join the compile of `bytes` in flight, or start it as a detached
    /// task that outlives its callers and fills the cache.
    fn shared(&self, bytes: bytes::Bytes, name: &str) -> watch::Receiver<Outcome> {
        let digest: [u8; 32] = Sha256::digest(&bytes).into();
        let mut in_flight = self.in_flight.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(running) = in_flight.get(&digest) {
            return running.clone();
        }
        let (done, outcome) = watch::channel(None);
        in_flight.insert(digest, outcome.clone());
        let (engine, cache, stats, slots) =
            (self.engine.clone(), self.cache.clone(), self.stats.clone(), self.slots.clone());
        let (registry, name) = (self.in_flight.clone(), name.to_owned());
        tokio::spawn(async move {
            let started = std::time::Instant::now();
            let result = match slots.acquire_owned().await {
                Ok(slot) => tokio::task::spawn_blocking(move || {
                    let _slot = slot;
                    cache.load_or_compile(&engine, &bytes).map_err(|e| format!("{e:#}"))
                })
                .await
                .unwrap_or_else(|e| Err(format!("the compile task failed: {e}"))),
                Err(_) => Err("the host is shutting down".to_owned()),
            };
            let result = result.map(|(component, source)| {
                let counter = match source {
                    Source::Compiled => &stats.compiled,
                    Source::CacheHit => &stats.cache_hits,
                };
                counter.fetch_add(1, Ordering::Relaxed);
                let elapsed_ms = started.elapsed().as_millis() as u64;
                tracing::info!(plugin = name, ?source, elapsed_ms, "plugin compiled");
                component
            });
            registry.lock().unwrap_or_else(|e| e.into_inner()).remove(&digest);
            let _ = done.send(Some(result));
        });
        outcome
    }

    /// Keep `component` in the cache as the compiled form of `wasm`
    /// (the same code with other custom sections); a failure only logs.
    pub(crate) fn store(&self, wasm: &[u8], component: &Component) {
        if let Err(error) = self.cache.store(wasm, component) {
            tracing::warn!(error = %error, "cannot write the compile cache; continuing without it");
        }
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
        let mut outcome = self.shared(bytes, plugin.name());
        let outcome = outcome.wait_for(Option::is_some).await.map_err(|e| Error::internal("compile task", e))?;
        match outcome.as_ref().expect("waited for") {
            Ok(component) => Ok(component.clone()),
            Err(message) => Err(Error::Compile {
                plugin: plugin.name().to_owned(),
                origin: origin.clone(),
                message: message.clone(),
            }),
        }
    }
}
