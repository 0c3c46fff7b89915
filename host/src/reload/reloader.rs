//! The reloader: the folders it scans, the snapshot it publishes, one
//! reload at a time.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use crate::catalog::{Catalog, ConnectorSource, DatabaseSource, Embedded, Live, LiveServer, Rejection, Sources};
use crate::error::Result;
use crate::load::SettingsResolver;
use crate::load::oci::{Pulled, Pulls};
use crate::runtime::WasmRuntime;

/// Where the catalog's resources come from, owned.
#[derive(Debug, Clone, Default)]
pub struct Folders {
    /// Plugins embedded in the program.
    pub embedded: Vec<Embedded>,
    /// Folder of `*.wasm` plugins.
    pub plugins: Option<PathBuf>,
    /// Folder of skill folders.
    pub skills: Option<PathBuf>,
    /// Folder of saved MCP `tools/list` results.
    pub mcp: Option<PathBuf>,
    /// The generic database adapter.
    pub adapter: Option<Embedded>,
    /// The generic OpenAPI connector.
    pub openapi: Option<Embedded>,
    /// The configured databases.
    pub databases: Vec<DatabaseSource>,
    /// The configured connector instances.
    pub connectors: Vec<ConnectorSource>,
    /// The configured live MCP servers.
    pub live: Vec<LiveServer>,
    /// The configured resources that could not be set up, with why.
    pub failed: Vec<Rejection>,
    /// Largest plugin file read; `None`: the default.
    pub max_plugin_bytes: Option<u64>,
    /// The configured OCI artifacts.
    pub oci: Option<Arc<Pulls>>,
}

/// What the OCI store adds to a scan: the stored components, and every
/// failure with the artifacts that cannot be served.
struct FromStore {
    pulled: Vec<Pulled>,
    failed: Vec<Rejection>,
}

impl Folders {
    fn store_view(&self) -> FromStore {
        let mut failed = self.failed.clone();
        let Some(pulls) = &self.oci else { return FromStore { pulled: Vec::new(), failed } };
        failed.extend(pulls.failures().into_iter().map(|(origin, error)| Rejection { origin, error }));
        FromStore { pulled: pulls.ready(), failed }
    }

    fn sources<'a>(&'a self, store: &'a FromStore) -> Sources<'a> {
        Sources {
            pulled: &store.pulled,
            embedded: &self.embedded,
            adapter: self.adapter,
            openapi: self.openapi,
            databases: &self.databases,
            connectors: &self.connectors,
            plugins_dir: self.plugins.as_deref(),
            skills_dir: self.skills.as_deref(),
            mcp_dir: self.mcp.as_deref(),
            live: &self.live,
            failed: &store.failed,
            max_plugin_bytes: self.max_plugin_bytes,
        }
    }

    /// The folders a watcher follows: (folder, recursive).
    pub fn watched(&self) -> Vec<(PathBuf, bool)> {
        [(&self.plugins, false), (&self.skills, true), (&self.mcp, false)]
            .into_iter()
            .filter_map(|(dir, recursive)| dir.clone().map(|d| (d, recursive)))
            .collect()
    }
}

/// Rescans the sources and publishes the next catalog snapshot.
pub struct Reloader {
    live: Arc<Live>,
    runtime: Arc<WasmRuntime>,
    folders: Folders,
    settings: SettingsResolver,
    /// Whether scans keep folder plugins' bytes (see [`Origin`](crate::load::Origin)).
    keep_bytes: AtomicBool,
    /// Held by the one reload running.
    running: tokio::sync::Mutex<()>,
    /// Compiles plugins that appear, in the background.
    arrivals: super::arrivals::Arrivals,
    /// Rescans so far (for the metrics).
    reloads: AtomicU64,
    /// What the latest snapshots changed.
    timeline: super::timeline::Timeline,
}

impl Reloader {
    /// Scan `folders` once and serve the result from a new [`Live`].
    pub fn start(
        folders: Folders,
        settings: SettingsResolver,
        runtime: Arc<WasmRuntime>,
        keep_bytes: bool,
    ) -> Result<Reloader> {
        let mut first = Catalog::scan(&folders.sources(&folders.store_view()), &settings, None, keep_bytes)?;
        first.number_first();
        tracing::info!(plugins = first.len(), rejected = first.rejected().len(), "catalog ready");
        let timeline = super::timeline::Timeline::default();
        timeline.published(&first, None);
        Ok(Reloader {
            timeline,
            live: Arc::new(Live::new(first)),
            arrivals: super::arrivals::Arrivals::new(runtime.clone()),
            runtime,
            folders,
            settings,
            keep_bytes: AtomicBool::new(keep_bytes),
            running: tokio::sync::Mutex::new(()),
            reloads: AtomicU64::new(0),
        })
    }

    /// The snapshots it publishes.
    pub fn live(&self) -> &Arc<Live> {
        &self.live
    }

    /// How it resolves each plugin's settings.
    pub fn settings(&self) -> &SettingsResolver {
        &self.settings
    }

    /// The folders it scans.
    pub fn folders(&self) -> &Folders {
        &self.folders
    }

    /// From now on, keep folder plugins' bytes (the next reload reads the
    /// unchanged ones that lack them into the plugins already served).
    pub fn keep_plugin_bytes(&self) {
        self.keep_bytes.store(true, Ordering::Relaxed);
    }

    /// What each of the latest published snapshots changed, oldest first.
    pub fn timeline(&self) -> Vec<super::Reload> {
        self.timeline.entries()
    }

    /// How many rescans ran since start.
    pub fn reloads(&self) -> u64 {
        self.reloads.load(Ordering::Relaxed)
    }

    /// Rescan the folders and publish a new snapshot if anything changed.
    /// Files that did not change are not read again and keep their
    /// prepared form; replacements are validated before the swap. Returns
    /// the snapshot now served.
    pub async fn reload(&self) -> Result<Arc<Catalog>> {
        let _one_at_a_time = self.running.lock().await;
        self.reloads.fetch_add(1, Ordering::Relaxed);
        let old = self.live.current();
        let keep_bytes = self.keep_bytes.load(Ordering::Relaxed);
        let store = self.folders.store_view();
        let fresh = Catalog::scan(&self.folders.sources(&store), &self.settings, Some(&old), keep_bytes)?;
        let mut next = super::reconcile::reconcile(&old, fresh, &self.runtime).await;
        if next.serves_the_same_as(&old) && next.same_status_as(&old) {
            return Ok(old);
        }
        next.number_after(&old);
        let next = Arc::new(next);
        self.live.publish(next.clone());
        self.arrivals.prepare_new(&old, &next);
        self.timeline.published(&next, Some(&old));
        for change in next.changes_from(&old) {
            tracing::info!(%change, "plugin");
        }
        tracing::info!(
            version = next.version(),
            revision = next.revision(),
            plugins = next.len(),
            rejected = next.rejected().len(),
            stale = next.stale().count(),
            "catalog reloaded"
        );
        Ok(next)
    }
}
