//! ② Loading: stub (no compile) → cache → compile → checked manifest.
//!
//! [`Plugin`] is what a scan produces: the stub, where it was read from
//! (and, on a watched host, the bytes themselves), and the settings.
//! Nothing is compiled until the first call or `describe`, when
//! [`Loader::load`] compiles those bytes (or loads the cached artifact), checks the component against its kind's world, calls
//! `describe()` once and checks the manifest against the stub. The result is
//! kept per plugin version, so later calls only instantiate.

pub mod cache;
mod compile;
mod manifest;
pub mod stub;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::SystemTime;

use tokio::sync::OnceCell;
use wasmtime::Engine;

pub use manifest::{ActionSpec, Manifest};
pub use stub::{Stub, StubAction};

use crate::config::PluginSettings;
use crate::contract::tool::ToolPre;
use crate::runtime::StoreData;
use crate::{Error, Result};

/// A file's identity as a scan saw it: size, modification time and (on
/// Unix) inode, so that a file renamed into place is always a new one. A
/// changed stamp means the file must be read again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileStamp {
    /// Size in bytes.
    pub len: u64,
    /// Modification time, where the file system keeps one.
    pub modified: Option<SystemTime>,
    /// Inode number (0 off Unix).
    pub inode: u64,
}

impl FileStamp {
    /// The current stamp of the file at `path`.
    pub fn of(path: &Path) -> Result<FileStamp> {
        let meta = std::fs::metadata(path).map_err(|e| io_error(path, e))?;
        #[cfg(unix)]
        let inode = std::os::unix::fs::MetadataExt::ino(&meta);
        #[cfg(not(unix))]
        let inode = 0;
        Ok(FileStamp { len: meta.len(), modified: meta.modified().ok(), inode })
    }
}

fn io_error(path: &Path, e: std::io::Error) -> Error {
    Error::Io { path: path.display().to_string(), message: e.to_string() }
}

/// Where a plugin's bytes come from.
///
/// A watched host keeps each folder plugin's bytes as the scan read them:
/// what the catalog advertised is exactly what is compiled later, and a
/// file replaced by a broken one never affects the version in the catalog
/// (hot reload relies on this to keep the last good version serving, even
/// one never called). The cost is memory equal to the folder's plugins, so
/// a host that does not watch (a one-shot CLI command) reads the file
/// again when it first loads the plugin, and refuses it if it changed.
#[derive(Debug, Clone)]
pub enum Origin {
    /// A file in the plugins folder, as it was when scanned.
    File {
        /// Its path.
        path: PathBuf,
        /// Its stamp when read.
        stamp: FileStamp,
        /// The stamp of its settings file (`NAME.toml` beside it), if any.
        sidecar: Option<FileStamp>,
        /// Its bytes as read, when kept.
        bytes: Option<bytes::Bytes>,
    },
    /// A plugin embedded in the binary.
    Embedded {
        /// The file name it would have in a folder.
        file_name: &'static str,
        /// Its bytes.
        bytes: &'static [u8],
    },
}

impl std::fmt::Display for Origin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Origin::File { path, .. } => write!(f, "{}", path.display()),
            Origin::Embedded { file_name, .. } => write!(f, "bundled:{file_name}"),
        }
    }
}

impl Origin {
    /// Its bytes: the kept ones, else the file read again (an error if it
    /// no longer has the stamp the scan saw).
    pub fn bytes(&self) -> Result<bytes::Bytes> {
        match self {
            Origin::File { bytes: Some(bytes), .. } => Ok(bytes.clone()),
            Origin::File { path, stamp, bytes: None, .. } => {
                let changed = || Error::Io {
                    path: path.display().to_string(),
                    message: "the file changed since it was scanned; a reload will pick up the new version".into(),
                };
                if FileStamp::of(path)? != *stamp {
                    return Err(changed());
                }
                let bytes = std::fs::read(path).map_err(|e| io_error(path, e))?;
                if FileStamp::of(path)? != *stamp {
                    return Err(changed());
                }
                Ok(bytes.into())
            }
            Origin::Embedded { bytes, .. } => Ok(bytes::Bytes::from_static(bytes)),
        }
    }

    /// Whether its bytes are at hand without reading a file.
    pub fn holds_bytes(&self) -> bool {
        !matches!(self, Origin::File { bytes: None, .. })
    }

    /// The same origin, without its kept bytes.
    pub fn without_bytes(self) -> Origin {
        match self {
            Origin::File { path, stamp, sidecar, .. } => Origin::File { path, stamp, sidecar, bytes: None },
            embedded => embedded,
        }
    }

    /// Read the file at `path` whole. A file that changes while it is read
    /// (a writer still copying) is an error; the next scan tries again.
    pub fn file(path: &Path) -> Result<Origin> {
        let stamp = FileStamp::of(path)?;
        let bytes = std::fs::read(path).map_err(|e| io_error(path, e))?;
        if FileStamp::of(path)? != stamp || bytes.len() as u64 != stamp.len {
            return Err(Error::Io {
                path: path.display().to_string(),
                message: "the file changed while it was read (still being written?)".into(),
            });
        }
        Ok(Origin::File { path: path.to_owned(), stamp, sidecar: None, bytes: Some(bytes.into()) })
    }

    /// The file's path, for a folder plugin.
    pub fn path(&self) -> Option<&Path> {
        match self {
            Origin::File { path, .. } => Some(path),
            Origin::Embedded { .. } => None,
        }
    }

    /// Whether `self` and `other` are the same file (or embedded plugin),
    /// unchanged, with the same settings file.
    pub fn same_as(&self, other: &Origin) -> bool {
        match (self, other) {
            (
                Origin::File { path: a, stamp: sa, sidecar: ca, .. },
                Origin::File { path: b, stamp: sb, sidecar: cb, .. },
            ) => a == b && sa == sb && ca == cb,
            (Origin::Embedded { file_name: a, .. }, Origin::Embedded { file_name: b, .. }) => a == b,
            _ => false,
        }
    }
}

/// One plugin of a catalog: its stub, its origin, its settings, and (after
/// first use) its compiled form. Immutable apart from that lazy cell; a new
/// version of the file is a new `Plugin`.
pub struct Plugin {
    stub: Stub,
    origin: Origin,
    settings: PluginSettings,
    loaded: OnceCell<Result<Arc<Loaded>>>,
    /// For database adapters: the table names last listed.
    tables: std::sync::RwLock<Option<Arc<[String]>>>,
}

impl std::fmt::Debug for Plugin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Plugin")
            .field("name", &self.stub.name)
            .field("origin", &self.origin)
            .field("loaded", &self.is_loaded())
            .finish()
    }
}

impl Plugin {
    /// A plugin with a stub already read from its bytes.
    pub fn new(stub: Stub, origin: Origin, settings: PluginSettings) -> Plugin {
        Plugin { stub, origin, settings, loaded: OnceCell::new(), tables: Default::default() }
    }

    /// Its Tier-1 stub.
    pub fn stub(&self) -> &Stub {
        &self.stub
    }

    /// Its name.
    pub fn name(&self) -> &str {
        &self.stub.name
    }

    /// Where it comes from.
    pub fn origin(&self) -> &Origin {
        &self.origin
    }

    /// Its settings.
    pub fn settings(&self) -> &PluginSettings {
        &self.settings
    }

    /// Whether it has been compiled and described.
    pub fn is_loaded(&self) -> bool {
        matches!(self.loaded.get(), Some(Ok(_)))
    }

    /// For a database adapter: its tables, once they have been listed.
    pub fn tables(&self) -> Option<Arc<[String]>> {
        self.tables.read().expect("tables lock").clone()
    }

    /// Remember the tables a database adapter listed (shown in Tier 1).
    pub fn remember_tables(&self, tables: Vec<String>) {
        *self.tables.write().expect("tables lock") = Some(tables.into());
    }

    /// Its manifest, if it has been loaded.
    pub fn manifest(&self) -> Option<&Manifest> {
        match self.loaded.get() {
            Some(Ok(loaded)) => Some(&loaded.manifest),
            _ => None,
        }
    }
}

/// A compiled, checked plugin version, ready to instantiate.
pub(crate) struct Loaded {
    pub(crate) pre: ToolPre<StoreData>,
    pub(crate) manifest: Manifest,
}

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

/// Compiles and checks plugins; shared by every catalog version.
pub(crate) struct Loader {
    pub(crate) engine: Engine,
    /// One permit per instance slot of the engine's pool: every
    /// instantiation (calls and `describe()` checks) holds one.
    pub(crate) permits: tokio::sync::Semaphore,
    linkers: compile::Linkers,
    cache: cache::ArtifactCache,
    pub(crate) stats: LoadStats,
}

impl Loader {
    pub(crate) fn new(engine: Engine, cache_dir: Option<PathBuf>, max_concurrency: usize) -> Result<Loader> {
        let linkers = compile::Linkers::new(&engine).map_err(|e| Error::Internal(format!("linker setup: {e:#}")))?;
        let cache = cache::ArtifactCache::new(&engine, cache_dir);
        let permits = tokio::sync::Semaphore::new(max_concurrency);
        Ok(Loader { engine, permits, linkers, cache, stats: LoadStats::default() })
    }

    /// Wait for a free instance slot.
    pub(crate) async fn permit(&self) -> Result<tokio::sync::SemaphorePermit<'_>> {
        self.permits.acquire().await.map_err(|_| Error::Internal("the host is shutting down".into()))
    }

    /// The compiled form of `plugin`, loading it on first use. Concurrent
    /// first calls share one load; a failure is remembered for this version.
    pub(crate) async fn load(&self, plugin: &Plugin) -> Result<Arc<Loaded>> {
        plugin.loaded.get_or_init(|| self.load_uncached(plugin)).await.clone()
    }

    async fn load_uncached(&self, plugin: &Plugin) -> Result<Arc<Loaded>> {
        let origin = plugin.origin.to_string();
        // The bytes the scan read and advertised, or the file as long as it
        // is unchanged (checked by stamp, and by stub).
        let bytes = plugin.origin.bytes()?;
        if !plugin.origin.holds_bytes() && Stub::read(&bytes, &origin)? != plugin.stub {
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
            .map_err(|e| Error::Internal(format!("compile task: {e}")))?
            .map_err(|e| Error::Compile {
                plugin: plugin.name().to_owned(),
                origin: origin.clone(),
                message: format!("{e:#}"),
            })?;
        match source {
            cache::Source::Compiled => self.stats.compiled.fetch_add(1, Ordering::Relaxed),
            cache::Source::CacheHit => self.stats.cache_hits.fetch_add(1, Ordering::Relaxed),
        };
        tracing::info!(
            plugin = plugin.name(),
            ?source,
            elapsed_ms = started.elapsed().as_millis() as u64,
            "plugin compiled"
        );
        let pre = self.linkers.instantiate_pre(&self.engine, &component, &plugin.stub, &origin)?;
        let manifest = {
            let _permit = self.permit().await?;
            crate::runtime::describe(&self.engine, &pre, plugin).await?
        };
        manifest.check_against(&plugin.stub, &origin)?;
        Ok(Arc::new(Loaded { pre, manifest }))
    }
}
