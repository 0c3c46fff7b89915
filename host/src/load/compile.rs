//! Compiling: a plugin's bytes to a `Component`, from the `.cwasm` cache
//! when it holds a valid entry, else with Cranelift on a blocking thread.
//!
//! A compile is a detached task shared by everyone waiting for the same
//! bytes: a request that gives up (cancelled, timed out) does not throw
//! the work away, the next one joins it, and it fills the cache either way.
//! At most one compile per core runs at once; others wait their turn.
//!
//! A component that asks for pre-initialisation (it exports the contract's
//! `INIT_EXPORT`) has that function run once before its compile for good,
//! through the [`Initializer`] the runtime gives (it owns the sandbox); the
//! compiled snapshot is cached under the component's own bytes, so the
//! initialisation runs once per component and cache, not per call.

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use bytes::Bytes;

use sha2::{Digest, Sha256};
use tokio::sync::watch;
use wasmtime::Engine;
use wasmtime::component::Component;

use super::cache::{ArtifactCache, Source};
use super::plugin::Plugin;
use crate::error::{Error, Result};
use crate::sandbox::limits::Limits;

/// The outcome of a compile in flight, once it is known.
type Outcome = Option<std::result::Result<Component, String>>;

/// Counters of the expensive steps, for tests, logs and benchmarks.
#[derive(Debug, Default)]
pub struct LoadStats {
    compiled: AtomicU64,
    cache_hits: AtomicU64,
    initialized: AtomicU64,
    instantiated: AtomicU64,
    reused: AtomicU64,
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

    /// Components whose init export ran (pre-initialisation), each before
    /// its compile or its packaging.
    pub fn initialized(&self) -> u64 {
        self.initialized.load(Ordering::Relaxed)
    }

    /// Instances made for guest calls (one per call, but for calls that
    /// ran in a kept instance).
    pub fn instantiated(&self) -> u64 {
        self.instantiated.load(Ordering::Relaxed)
    }

    /// Guest calls that ran in the instance the same caller's last call
    /// left (plugins with `instances = "per-caller"`).
    pub fn reused(&self) -> u64 {
        self.reused.load(Ordering::Relaxed)
    }

    pub(crate) fn count_initialized(&self) {
        self.initialized.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn count_instantiated(&self) {
        self.instantiated.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn count_reused(&self) {
        self.reused.fetch_add(1, Ordering::Relaxed);
    }
}

/// Runs a component's own initialisation and returns the component with
/// the state it left: the seam through which the runtime, which owns the
/// sandbox, pre-initialises components before the compiler compiles them.
pub(crate) trait Initializer: Send + Sync {
    /// Whether `wasm` asks to be initialised (read from its exports; no
    /// compile).
    fn wants(&self, wasm: &[u8]) -> bool;

    /// `wasm` after its initialisation ran once, in the sandbox under
    /// `limits`; the error says why it could not (named for `plugin`).
    fn initialize(&self, plugin: &str, limits: Limits, wasm: Bytes) -> InitFuture;
}

/// What [`Initializer::initialize`] returns.
pub(crate) type InitFuture = Pin<Box<dyn Future<Output = std::result::Result<Vec<u8>, String>> + Send>>;

/// One compile to run: the bytes, and what their initialisation needs.
struct Job {
    engine: Engine,
    cache: ArtifactCache,
    initializer: Arc<dyn Initializer>,
    bytes: Bytes,
    name: String,
    limits: Limits,
}

impl Job {
    /// From the cache, else (initialised if it asks to be, then) compiled
    /// and cached under its own bytes. Holds a compile slot throughout.
    async fn run(self, slots: Arc<tokio::sync::Semaphore>) -> std::result::Result<(Component, Source), String> {
        let _slot = slots.acquire_owned().await.map_err(|_| "the host is shutting down".to_owned())?;
        let (engine, cache, bytes) = (self.engine.clone(), self.cache.clone(), self.bytes.clone());
        if let Some(component) = blocking(move || Ok(cache.load(&engine, &bytes))).await? {
            return Ok((component, Source::CacheHit));
        }
        let (code, source) = if self.initializer.wants(&self.bytes) {
            let code = self.initializer.initialize(&self.name, self.limits, self.bytes.clone()).await?;
            (Bytes::from(code), Source::Initialized)
        } else {
            (self.bytes.clone(), Source::Compiled)
        };
        let Job { engine, cache, bytes, .. } = self;
        let component = blocking(move || cache.compile(&engine, &bytes, &code).map_err(|e| format!("{e:#}"))).await?;
        Ok((component, source))
    }
}

/// Run CPU-bound `work` on a blocking thread.
async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> std::result::Result<T, String> + Send + 'static,
) -> std::result::Result<T, String> {
    tokio::task::spawn_blocking(work).await.unwrap_or_else(|e| Err(format!("the compile task failed: {e}")))
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
    /// What pre-initialises components that ask for it.
    initializer: Arc<dyn Initializer>,
}

impl Compiler {
    pub(crate) fn new(engine: Engine, cache: ArtifactCache, initializer: Arc<dyn Initializer>) -> Compiler {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        Compiler {
            engine,
            cache,
            stats: Arc::default(),
            in_flight: Arc::default(),
            slots: Arc::new(tokio::sync::Semaphore::new(cores)),
            initializer,
        }
    }

    /// Join the compile of `bytes` in flight, or start it as a detached
    /// task that outlives its callers and fills the cache.
    fn shared(&self, bytes: Bytes, name: &str, limits: Limits) -> watch::Receiver<Outcome> {
        let digest: [u8; 32] = Sha256::digest(&bytes).into();
        let mut in_flight = self.in_flight.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(running) = in_flight.get(&digest) {
            return running.clone();
        }
        let (done, outcome) = watch::channel(None);
        in_flight.insert(digest, outcome.clone());
        let job = Job {
            engine: self.engine.clone(),
            cache: self.cache.clone(),
            initializer: self.initializer.clone(),
            bytes,
            name: name.to_owned(),
            limits,
        };
        let (registry, stats, slots, name) =
            (self.in_flight.clone(), self.stats.clone(), self.slots.clone(), name.to_owned());
        // The span of the first caller that asked (concurrent ones wait for it).
        let span = crate::telemetry::spans::compile(&name);
        let job = tracing::Instrument::instrument(
            async move {
                let result = job.run(slots).await;
                if let Ok((_, source)) = &result {
                    tracing::Span::current().record("quiver.cache.hit", matches!(source, Source::CacheHit));
                }
                result
            },
            span,
        );
        tokio::spawn(async move {
            let started = std::time::Instant::now();
            let result = job.await;
            let result = result.map(|(component, source)| {
                let counter = match source {
                    Source::Compiled => &stats.compiled,
                    Source::Initialized => {
                        stats.count_initialized();
                        &stats.compiled
                    }
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
        let bytes = plugin.origin().bytes()?;
        // The file must still be the version scanned: the same stub, or for
        // a plain component (no stub) the same bytes.
        let changed = || -> Result<bool> {
            Ok(match (plugin.derived(), plugin.origin().digest()) {
                (Some(_), Some(digest)) => super::origin::digest(&bytes) != *digest,
                _ => super::stub::read(&bytes, &plugin.origin().to_string())? != *plugin.stub(),
            })
        };
        if !plugin.origin().holds_bytes() && changed()? {
            return Err(Error::Io {
                path: plugin.origin().to_string(),
                message: "the file changed since it was scanned; a reload will pick up the new version".into(),
            });
        }
        self.compile_bytes(bytes, plugin).await
    }

    /// The compiled form of `bytes`, code of `plugin` (initialised first
    /// if they ask to be, and the cache holds no compiled form of them).
    pub(crate) async fn compile_bytes(&self, bytes: Bytes, plugin: &Plugin) -> Result<Component> {
        let mut outcome = self.shared(bytes, plugin.name(), plugin.settings().grants.limits);
        let outcome = outcome.wait_for(Option::is_some).await.map_err(|e| Error::internal("compile task", e))?;
        match outcome.as_ref().expect("waited for") {
            Ok(component) => Ok(component.clone()),
            Err(message) => Err(Error::Compile {
                plugin: plugin.name().to_owned(),
                origin: plugin.origin().to_string(),
                message: message.clone(),
            }),
        }
    }
}
