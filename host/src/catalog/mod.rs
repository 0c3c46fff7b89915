//! ③ The catalog: an immutable snapshot of every plugin the host serves.
//!
//! A scan reads stubs only. Built from the embedded plugins (if enabled) and
//! the plugins folder; a folder plugin with the name of an embedded one
//! replaces it, two folder plugins with one name keep the first (by file
//! name) and reject the second. Files that are not valid plugins are kept
//! as [`Rejection`]s so operators can see why.

mod record;

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

pub use record::{Category, ToolRecord};

use crate::config::Config;
use crate::load::{Origin, Plugin, Stub};
use crate::{Error, Result};

/// A file that is not served, and why.
#[derive(Debug, Clone)]
pub struct Rejection {
    /// The file (or bundled name).
    pub origin: String,
    /// Why it was rejected.
    pub error: Error,
}

/// What the host serves at one moment.
#[derive(Debug, Default)]
pub struct Catalog {
    version: u64,
    plugins: BTreeMap<String, Arc<Plugin>>,
    rejected: Vec<Rejection>,
}

/// An embedded plugin: a file name and its bytes.
pub type Embedded = (&'static str, &'static [u8]);

impl Catalog {
    /// Scan `embedded` plugins and the `folder`, reading stubs only.
    pub fn scan(version: u64, embedded: &[Embedded], folder: Option<&Path>, config: &Config) -> Result<Catalog> {
        let mut catalog = Catalog { version, ..Default::default() };
        for (file_name, bytes) in embedded {
            catalog.add(bytes, Origin::Embedded { file_name, bytes }, config, false);
        }
        if let Some(folder) = folder {
            for path in plugin_files(folder)? {
                let origin = match Origin::file(&path) {
                    Ok(origin) => origin,
                    Err(error) => {
                        catalog.rejected.push(Rejection { origin: path.display().to_string(), error });
                        continue;
                    }
                };
                match origin.bytes() {
                    Ok(bytes) => catalog.add(&bytes, origin, config, true),
                    Err(error) => catalog.rejected.push(Rejection { origin: origin.to_string(), error }),
                }
            }
        }
        Ok(catalog)
    }

    fn add(&mut self, bytes: &[u8], origin: Origin, config: &Config, from_folder: bool) {
        let stub = match Stub::read(bytes, &origin.to_string()) {
            Ok(stub) => stub,
            Err(error) => {
                tracing::warn!(%origin, %error, "plugin rejected");
                self.rejected.push(Rejection { origin: origin.to_string(), error });
                return;
            }
        };
        let settings = match config.settings_for(&stub.name) {
            Ok(settings) => settings,
            Err(error) => {
                self.rejected.push(Rejection { origin: origin.to_string(), error });
                return;
            }
        };
        if let Some(existing) = self.plugins.get(&stub.name) {
            let replaces_embedded = from_folder && matches!(existing.origin(), Origin::Embedded { .. });
            if !replaces_embedded {
                let error = Error::DuplicateName {
                    name: stub.name.clone(),
                    origin: origin.to_string(),
                    first: existing.origin().to_string(),
                };
                tracing::warn!(%error, "plugin rejected");
                self.rejected.push(Rejection { origin: origin.to_string(), error });
                return;
            }
            tracing::info!(plugin = %stub.name, %origin, "folder plugin replaces the bundled one");
        }
        self.plugins.insert(stub.name.clone(), Arc::new(Plugin::new(stub, origin, settings)));
    }

    /// Reuse the plugins of `old` whose file and stub did not change, so
    /// they keep their compiled form across a rescan.
    pub(crate) fn keep_loaded_from(&mut self, old: &Catalog) {
        for (name, plugin) in self.plugins.iter_mut() {
            if let Some(previous) = old.plugins.get(name)
                && previous.same_version_as(plugin)
            {
                *plugin = previous.clone();
            }
        }
    }

    /// The version of this snapshot; it grows with every change.
    pub fn version(&self) -> u64 {
        self.version
    }

    /// The plugins, sorted by name.
    pub fn plugins(&self) -> impl Iterator<Item = &Arc<Plugin>> {
        self.plugins.values()
    }

    /// The plugin called `name`.
    pub fn get(&self, name: &str) -> Option<&Arc<Plugin>> {
        self.plugins.get(name)
    }

    /// Number of plugins.
    pub fn len(&self) -> usize {
        self.plugins.len()
    }

    /// Whether it serves no plugin.
    pub fn is_empty(&self) -> bool {
        self.plugins.is_empty()
    }

    /// Files that are not served, and why.
    pub fn rejected(&self) -> &[Rejection] {
        &self.rejected
    }

    /// The names of all plugins, sorted.
    pub fn names(&self) -> Vec<String> {
        self.plugins.keys().cloned().collect()
    }

    /// Every action of every plugin as a tool record, sorted by plugin then
    /// in each plugin's order. Schemas are present only for loaded plugins.
    pub fn tools(&self) -> Vec<ToolRecord> {
        self.plugins.values().flat_map(|p| ToolRecord::of_plugin(p)).collect()
    }
}

/// The `*.wasm` files of `folder`, sorted; hidden and temporary files are skipped.
fn plugin_files(folder: &Path) -> Result<Vec<std::path::PathBuf>> {
    let entries = std::fs::read_dir(folder)
        .map_err(|e| Error::Io { path: folder.display().to_string(), message: e.to_string() })?;
    let mut files: Vec<_> = entries
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| {
            let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
            !name.starts_with('.') && name.ends_with(".wasm") && p.is_file()
        })
        .collect();
    files.sort();
    Ok(files)
}
