//! ③ The catalog: an immutable snapshot of everything the host serves.
//!
//! Five kinds of resource behind one [`ToolRecord`]: built-in tools,
//! connectors and database adapters (plugins), tools of MCP servers (from
//! saved `tools/list` results) and Agent Skills. A scan reads stubs and
//! front matter only, never compiles.
//!
//! Plugins come from the embedded set (if enabled) and the plugins folder;
//! a folder plugin with the name of an embedded one replaces it, two folder
//! plugins with one name keep the first (by file name) and reject the
//! second. Whatever is not valid is kept as a [`Rejection`] so operators
//! can see why.
//!
//! A rescan ([`Catalog::scan`] with the previous snapshot) reads only what
//! changed; [`reload`] decides what replaces what.

pub mod mcp;
pub mod names;
mod record;
pub mod reload;
pub mod skill;

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::{Arc, OnceLock};

pub use mcp::McpServer;
pub use record::{Category, SUMMARY_CHARS, ToolRecord};
pub use skill::Skill;

use crate::config::{Config, RawPluginSettings};
use crate::load::{FileStamp, Origin, Plugin, Stub};
use crate::{Error, ErrorKind, Result};

/// A file that is not served, and why.
#[derive(Debug, Clone)]
pub struct Rejection {
    /// The file (or bundled name).
    pub origin: String,
    /// Why it was rejected.
    pub error: Error,
}

/// A plugin served by its last good version because its newer file failed.
#[derive(Debug, Clone)]
pub struct Stale {
    /// The newer file.
    pub origin: String,
    /// Why the newer file does not replace the version being served.
    pub error: Error,
    /// The newer version, when its stub was valid (kept so that an
    /// unchanged file is not compiled again just to fail again).
    candidate: Option<Arc<Plugin>>,
}

/// What the host serves at one moment.
#[derive(Debug, Default)]
pub struct Catalog {
    version: u64,
    plugins: BTreeMap<String, Arc<Plugin>>,
    skills: BTreeMap<String, Skill>,
    mcp: BTreeMap<String, McpServer>,
    rejected: Vec<Rejection>,
    /// Plugins served by their last good version, by name.
    stale: BTreeMap<String, Stale>,
    /// Model-facing names of every (origin, action), assigned once.
    names: OnceLock<Names>,
    /// Discovery levels 1 and 2, built once.
    listing: OnceLock<Vec<Listing>>,
}

/// A tool as discovery levels 1 and 2 show it: known from stubs and tool
/// lists alone, so it is computed once per catalog version.
#[derive(Debug, Clone, PartialEq, serde::Serialize, schemars::JsonSchema)]
pub struct Listing {
    /// Name shown to models.
    pub name: String,
    /// The plugin or MCP server it belongs to.
    pub origin: String,
    /// Its category.
    pub category: Category,
    /// One line, at most 120 characters.
    pub summary: String,
}

/// Model-facing names, both ways.
#[derive(Debug, Default)]
struct Names {
    by_id: BTreeMap<(String, String), String>,
    by_name: std::collections::HashMap<String, (String, String)>,
}

/// An embedded plugin: a file name and its bytes.
pub type Embedded = (&'static str, &'static [u8]);

/// Where a catalog's resources come from.
#[derive(Debug, Clone, Copy, Default)]
pub struct Sources<'a> {
    /// Plugins embedded in the program.
    pub embedded: &'a [Embedded],
    /// Folder of `*.wasm` plugins.
    pub plugins_dir: Option<&'a Path>,
    /// Folder of skill folders.
    pub skills_dir: Option<&'a Path>,
    /// Folder of saved MCP `tools/list` results.
    pub mcp_dir: Option<&'a Path>,
}

impl Catalog {
    /// Scan every source: plugin stubs, skill front matter, MCP tool lists.
    ///
    /// With the `previous` snapshot it is a rescan: a plugin file whose
    /// stamp (and settings file's) did not change is not read again, and
    /// keeps its compiled form; a folder that vanished is an empty one.
    /// `keep_bytes` keeps each folder plugin's bytes in memory (see
    /// [`Origin`]); an unchanged plugin without them is read again to get them.
    pub fn scan(
        version: u64,
        sources: &Sources<'_>,
        config: &Config,
        previous: Option<&Catalog>,
        keep_bytes: bool,
    ) -> Result<Catalog> {
        let mut catalog = Catalog { version, ..Default::default() };
        let present = |dir: &Path| previous.is_none() || dir.is_dir();
        for (file_name, bytes) in sources.embedded {
            let reused = previous.and_then(|p| {
                p.plugins
                    .values()
                    .find(|plugin| matches!(plugin.origin(), Origin::Embedded { file_name: f, .. } if f == file_name))
            });
            match reused {
                Some(plugin) => catalog.insert(plugin.clone(), false),
                None => catalog.add(Origin::Embedded { file_name, bytes }, config, None, false, true),
            }
        }
        if let Some(dir) = sources.skills_dir.filter(|d| present(d)) {
            for skill_dir in skill::skill_dirs(dir)? {
                match Skill::load(&skill_dir) {
                    Ok(skill) => {
                        catalog.skills.insert(skill.name.clone(), skill);
                    }
                    Err(error) => {
                        tracing::warn!(%error, "skill rejected");
                        catalog.rejected.push(Rejection { origin: skill_dir.display().to_string(), error });
                    }
                }
            }
        }
        if let Some(dir) = sources.mcp_dir.filter(|d| present(d)) {
            for file in mcp::list_files(dir)? {
                match McpServer::load(&file) {
                    Ok(server) => {
                        catalog.mcp.insert(server.name.clone(), server);
                    }
                    Err(error) => catalog.rejected.push(Rejection { origin: file.display().to_string(), error }),
                }
            }
        }
        if let Some(folder) = sources.plugins_dir.filter(|d| present(d)) {
            for path in plugin_files(folder)? {
                catalog.add_file(&path, config, previous, keep_bytes);
            }
        }
        Ok(catalog)
    }

    /// Add the plugin file at `path` (and its settings file `NAME.toml`).
    fn add_file(&mut self, path: &Path, config: &Config, previous: Option<&Catalog>, keep_bytes: bool) {
        let reject = |catalog: &mut Catalog, error: Error| {
            tracing::warn!(path = %path.display(), %error, "plugin rejected");
            catalog.rejected.push(Rejection { origin: path.display().to_string(), error });
        };
        let sidecar_path = path.with_extension("toml");
        let sidecar = FileStamp::of(&sidecar_path).ok();
        let stamp = match FileStamp::of(path) {
            Ok(stamp) => stamp,
            Err(error) => return reject(self, error),
        };
        if let Some(known) = previous.and_then(|p| p.version_of(path, stamp, sidecar))
            && (!keep_bytes || known.origin().holds_bytes() || known.is_loaded())
        {
            return self.insert(known, true);
        }
        let origin = match Origin::file(path) {
            Ok(Origin::File { path, stamp, bytes, .. }) => Origin::File { path, stamp, sidecar, bytes },
            Ok(embedded) => embedded,
            Err(error) => return reject(self, error),
        };
        let settings = match sidecar.map(|_| RawPluginSettings::load(&sidecar_path)).transpose() {
            Ok(settings) => settings,
            Err(error) => return reject(self, error),
        };
        self.add(origin, config, settings.as_ref(), true, keep_bytes);
    }

    /// The plugin (served, or a failed candidate) that was read from
    /// `path` when it had these stamps.
    fn version_of(&self, path: &Path, stamp: FileStamp, sidecar: Option<FileStamp>) -> Option<Arc<Plugin>> {
        let candidates = self.stale.values().filter_map(|s| s.candidate.as_ref());
        self.plugins.values().chain(candidates).find_map(|plugin| match plugin.origin() {
            Origin::File { path: p, stamp: s, sidecar: c, .. } if p == path && *s == stamp && *c == sidecar => {
                Some(plugin.clone())
            }
            _ => None,
        })
    }

    fn add(
        &mut self,
        origin: Origin,
        config: &Config,
        sidecar: Option<&RawPluginSettings>,
        from_folder: bool,
        keep_bytes: bool,
    ) {
        let stub = match origin.bytes().and_then(|bytes| Stub::read(&bytes, &origin.to_string())) {
            Ok(stub) => stub,
            Err(error) => {
                tracing::warn!(%origin, %error, "plugin rejected");
                self.rejected.push(Rejection { origin: origin.to_string(), error });
                return;
            }
        };
        let origin = if keep_bytes { origin } else { origin.without_bytes() };
        let settings = match config.settings_with(&stub.name, sidecar) {
            Ok(settings) => settings,
            Err(error) => {
                self.rejected.push(Rejection { origin: origin.to_string(), error });
                return;
            }
        };
        self.insert(Arc::new(Plugin::new(stub, origin, settings)), from_folder);
    }

    /// Serve `plugin` unless its name is taken (a folder plugin may take
    /// the name of an embedded one).
    fn insert(&mut self, plugin: Arc<Plugin>, from_folder: bool) {
        if let Some(existing) = self.plugins.get(plugin.name()) {
            let replaces_embedded = from_folder && matches!(existing.origin(), Origin::Embedded { .. });
            if !replaces_embedded {
                let error = Error::DuplicateName {
                    name: plugin.name().to_owned(),
                    origin: plugin.origin().to_string(),
                    first: existing.origin().to_string(),
                };
                tracing::warn!(%error, "plugin rejected");
                self.rejected.push(Rejection { origin: plugin.origin().to_string(), error });
                return;
            }
            tracing::info!(plugin = %plugin.name(), origin = %plugin.origin(), "folder plugin replaces the bundled one");
        }
        self.plugins.insert(plugin.name().to_owned(), plugin);
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

    /// Plugins served by their last good version because a newer file
    /// failed: (name, why), sorted by name.
    pub fn stale(&self) -> impl Iterator<Item = (&str, &Stale)> {
        self.stale.iter().map(|(name, stale)| (name.as_str(), stale))
    }

    /// The names of all plugins, sorted.
    pub fn names(&self) -> Vec<String> {
        self.plugins.keys().cloned().collect()
    }

    /// The skills, sorted by name.
    pub fn skills(&self) -> impl Iterator<Item = &Skill> {
        self.skills.values()
    }

    /// The skill called `name`.
    pub fn skill(&self, name: &str) -> Option<&Skill> {
        self.skills.get(name)
    }

    /// The MCP servers, sorted by name.
    pub fn mcp_servers(&self) -> impl Iterator<Item = &McpServer> {
        self.mcp.values()
    }

    /// The MCP server called `name`.
    pub fn mcp_server(&self, name: &str) -> Option<&McpServer> {
        self.mcp.get(name)
    }

    /// The plugins of one kind, sorted by name.
    pub fn plugins_of(&self, kind: crate::contract::Kind) -> impl Iterator<Item = &Arc<Plugin>> {
        self.plugins.values().filter(move |p| p.stub().kind == kind)
    }

    fn names_table(&self) -> &BTreeMap<(String, String), String> {
        &self.name_maps().by_id
    }

    fn name_maps(&self) -> &Names {
        self.names.get_or_init(|| {
            let mut ids: Vec<Vec<String>> = Vec::new();
            for plugin in self.plugins.values() {
                for action in plugin.stub().action_names() {
                    ids.push(vec![plugin.name().to_owned(), action.to_owned()]);
                }
            }
            for server in self.mcp.values() {
                for tool in &server.tools {
                    ids.push(vec![server.name.clone(), tool.name.clone()]);
                }
            }
            let assigned = names::assign(&ids);
            let by_id: BTreeMap<(String, String), String> =
                ids.into_iter().map(|id| (id[0].clone(), id[1].clone())).zip(assigned).collect();
            let by_name = by_id.iter().map(|(id, name)| (name.clone(), id.clone())).collect();
            Names { by_id, by_name }
        })
    }

    /// The model-facing name of `action` of `origin` (a plugin or MCP server).
    pub fn model_name(&self, origin: &str, action: &str) -> Option<&str> {
        self.names_table().get(&(origin.to_owned(), action.to_owned())).map(String::as_str)
    }

    /// Every action of every plugin and every tool of every MCP server as
    /// a tool record: plugins first (sorted, actions in their order), then
    /// servers. Plugin schemas are present once the plugin is loaded.
    pub fn tools(&self) -> Vec<ToolRecord> {
        let table = self.names_table();
        let name = |origin: &str, action: &str| table[&(origin.to_owned(), action.to_owned())].clone();
        let mut records: Vec<ToolRecord> =
            self.plugins.values().flat_map(|p| ToolRecord::of_plugin(p, |a| name(p.name(), a))).collect();
        for server in self.mcp.values() {
            records.extend(server.tools.iter().map(|t| ToolRecord::of_mcp(server, t, name(&server.name, &t.name))));
        }
        records
    }

    /// Every tool's name, origin, category and summary, in the order of
    /// [`tools`](Self::tools); computed on first use, then borrowed.
    pub fn listing(&self) -> &[Listing] {
        self.listing.get_or_init(|| {
            self.tools()
                .into_iter()
                .map(|r| Listing { name: r.name, origin: r.origin, category: r.category, summary: r.summary })
                .collect()
        })
    }

    /// The record whose model-facing name is `name`.
    pub fn tool(&self, name: &str) -> Option<ToolRecord> {
        let (origin, action) = self.name_maps().by_name.get(name)?;
        if let Some(plugin) = self.plugins.get(origin) {
            return ToolRecord::of_plugin(plugin, |a| self.names_table()[&(origin.clone(), a.to_owned())].clone())
                .into_iter()
                .find(|r| &r.action == action);
        }
        let server = self.mcp.get(origin)?;
        server.tool(action).map(|t| ToolRecord::of_mcp(server, t, name.to_owned()))
    }
}

/// Whether a rejection can be answered by keeping the previous version
/// (the file is broken), rather than being about the catalog as a whole.
fn is_validation_failure(error: &Error) -> bool {
    error.kind() != ErrorKind::DuplicateName
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
