//! Scanning the sources into a snapshot: plugin stubs, skill front matter,
//! saved MCP tool lists. Nothing is compiled.
//!
//! Plugins come from the embedded set (if enabled) and the plugins folder;
//! a folder plugin with the name of an embedded one replaces it, two folder
//! plugins with one name keep the first (by file name) and reject the
//! second. A rescan (with the previous snapshot) reads only what changed.

use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::configured::{ConnectorSource, DatabaseSource};
use super::mcp::{self, LiveServer, UpstreamServer};
use super::names;
use super::skill::{self, Skill};
use super::snapshot::{Catalog, Rejection};
use crate::contract::NAME_SEPARATOR;
use crate::error::{Error, Result};
use crate::load::oci::Pulled;
use crate::load::plain;
use crate::load::{Beside, FileStamp, Origin, Plugin, RawPluginSettings, SettingsResolver, stub};

/// An embedded plugin: a file name and its bytes.
pub type Embedded = (&'static str, &'static [u8]);

/// Where a catalog's resources come from.
#[derive(Debug, Clone, Copy, Default)]
pub struct Sources<'a> {
    /// Plugins embedded in the program.
    pub embedded: &'a [Embedded],
    /// The generic database adapter, for databases that name none.
    pub adapter: Option<Embedded>,
    /// The generic OpenAPI connector, for `openapi` connectors.
    pub openapi: Option<Embedded>,
    /// The configured databases.
    pub databases: &'a [DatabaseSource],
    /// The configured connector instances.
    pub connectors: &'a [ConnectorSource],
    /// Folder of `*.wasm` plugins.
    pub plugins_dir: Option<&'a Path>,
    /// Folder of skill folders.
    pub skills_dir: Option<&'a Path>,
    /// Folder of saved MCP `tools/list` results.
    pub mcp_dir: Option<&'a Path>,
    /// The configured live MCP servers.
    pub live: &'a [LiveServer],
    /// The configured resources that could not be set up, with why:
    /// reported with the rejections, each failing alone.
    pub failed: &'a [Rejection],
    /// Components pulled from OCI registries, listed like folder plugins.
    pub pulled: &'a [Pulled],
    /// Largest plugin file read; `None`: [`MAX_PLUGIN_BYTES`](crate::load::MAX_PLUGIN_BYTES).
    pub max_plugin_bytes: Option<u64>,
}

impl Catalog {
    /// Scan every source: plugin stubs, skill front matter, MCP tool lists;
    /// each plugin's settings are resolved by `settings`.
    ///
    /// With the `previous` snapshot it is a rescan: a plugin file whose
    /// stamp (and settings file's) did not change is not read again, and
    /// keeps its prepared form; a folder that vanished is an empty one.
    /// `keep_bytes` keeps each folder plugin's bytes in memory (see
    /// [`Origin`]); an unchanged plugin without them reads them now.
    pub fn scan(
        sources: &Sources<'_>,
        settings: &SettingsResolver,
        previous: Option<&Catalog>,
        keep_bytes: bool,
    ) -> Result<Catalog> {
        let mut catalog = Catalog::default();
        let present = |dir: &Path| previous.is_none() || dir.is_dir();
        for (file_name, bytes) in sources.embedded {
            // Instances (a database's adapter, an OpenAPI connector) share
            // their plugin's origin: only the plugin itself is this file.
            let reused = previous.and_then(|p| {
                p.plugins.values().find(|plugin| {
                    !plugin.is_instance()
                        && matches!(plugin.origin(), Origin::Embedded { file_name: f, .. } if f == file_name)
                })
            });
            match reused {
                Some(plugin) => catalog.insert(plugin.clone(), false),
                None => catalog.add(Origin::Embedded { file_name, bytes }, settings, None, false, true),
            }
        }
        if let Some(dir) = sources.skills_dir.filter(|d| present(d)) {
            for skill_dir in skill::skill_dirs(dir)? {
                match Skill::load(&skill_dir) {
                    Ok(skill) => {
                        catalog.skills.insert(skill.name.clone(), skill);
                    }
                    Err(error) => catalog.refuse(skill_dir.display().to_string(), error),
                }
            }
        }
        if let Some(dir) = sources.mcp_dir.filter(|d| present(d)) {
            for file in mcp::list_files(dir)? {
                match UpstreamServer::load(&file) {
                    Ok((server, problems)) if server.tools.is_empty() && !problems.is_empty() => {
                        let reason = format!("no usable tool; {}", problems.join("; "));
                        catalog.refuse(
                            file.display().to_string(),
                            Error::InvalidMcpList { path: file.display().to_string(), reason },
                        );
                    }
                    Ok((server, problems)) => {
                        for problem in problems {
                            let reason = format!("left out {problem}");
                            let error = Error::InvalidMcpList { path: file.display().to_string(), reason };
                            catalog.refuse(format!("{}: {}", file.display(), server.name), error);
                        }
                        catalog.mcp.insert(server.name.clone(), server);
                    }
                    Err(error) => catalog.refuse(file.display().to_string(), error),
                }
            }
        }
        for live in sources.live {
            let server = live.snapshot();
            for problem in live.left_out() {
                let error = Error::Upstream {
                    server: server.name.clone(),
                    fault: crate::error::UpstreamFault::Protocol,
                    message: format!("left out {problem}"),
                };
                catalog.refuse(server.origin_text(), error);
            }
            if let Some(saved) = catalog.mcp.remove(&server.name) {
                let (origin, first) = (saved.origin_text(), server.origin_text());
                catalog.refuse(origin.clone(), Error::DuplicateName { name: server.name.clone(), origin, first });
            }
            catalog.mcp.insert(server.name.clone(), server);
        }
        if let Some(folder) = sources.plugins_dir.filter(|d| present(d)) {
            for path in plugin_files(folder)? {
                let max_bytes = sources.max_plugin_bytes.unwrap_or(crate::load::MAX_PLUGIN_BYTES);
                catalog.add_file(&path, settings, previous, keep_bytes, max_bytes, None);
            }
        }
        for pulled in sources.pulled {
            let max_bytes = sources.max_plugin_bytes.unwrap_or(crate::load::MAX_PLUGIN_BYTES);
            catalog.add_file(&pulled.path, settings, previous, keep_bytes, max_bytes, Some(pulled));
        }
        for source in sources.databases {
            catalog.add_database(source, sources.adapter, settings, previous);
        }
        for connector in sources.connectors {
            catalog.add_connector(connector, sources.openapi, settings, previous);
        }
        for failed in sources.failed {
            catalog.refuse(failed.origin.clone(), failed.error.clone());
        }
        catalog.refuse_shadowed_servers();
        catalog.refuse_colliding_tools();
        catalog.log_rejections(previous);
        Ok(catalog)
    }

    /// An MCP server named like a plugin (or a configured resource) would
    /// put two tools under one model-facing name (`calc__evaluate`): the
    /// server is refused, reported, and the plugin keeps its names.
    fn refuse_shadowed_servers(&mut self) {
        let shadowed: Vec<String> = self.mcp.keys().filter(|name| self.plugins.contains_key(*name)).cloned().collect();
        for name in shadowed {
            let Some(server) = self.mcp.remove(&name) else { continue };
            let origin = server.origin.display().to_string();
            let first = self.plugins[&name].origin().to_string();
            self.refuse(origin.clone(), Error::DuplicateName { name, origin, first });
        }
    }

    /// A model-facing name belongs to the first tool that has it, by kind:
    /// a plugin's tools always keep theirs, then an MCP tool whose name
    /// needed no cleaning, then one that did (`create.customer` becomes
    /// `create_customer`). A tool whose name is taken is left out and
    /// reported, never served under a changed name and never the cause of
    /// a rename of a tool already served.
    fn refuse_colliding_tools(&mut self) {
        let mut taken: HashMap<String, String> = HashMap::new();
        for plugin in self.plugins.values() {
            for action in plugin.stub().action_names() {
                let owner = format!("plugin `{}`'s action `{action}`", plugin.name());
                taken.insert(names::model_name(&[plugin.name(), action]), owner);
            }
        }
        let mut left_out: Vec<(String, usize, String, String)> = Vec::new();
        for verbatim in [true, false] {
            for server in self.mcp.values() {
                for (i, tool) in server.tools.iter().enumerate() {
                    let name = names::model_name(&[&server.name, &tool.name]);
                    if (name == format!("{}{NAME_SEPARATOR}{}", server.name, tool.name)) != verbatim {
                        continue;
                    }
                    match taken.entry(name) {
                        Entry::Occupied(first) => {
                            left_out.push((server.name.clone(), i, first.key().clone(), first.get().clone()))
                        }
                        Entry::Vacant(free) => {
                            free.insert(format!("MCP server `{}`'s tool `{}`", server.name, tool.name));
                        }
                    }
                }
            }
        }
        // Highest index first, so the indices of a server's other tools hold.
        left_out.sort_by(|a, b| (&a.0, b.1).cmp(&(&b.0, a.1)));
        for (server_name, i, name, first) in left_out {
            let Some(server) = self.mcp.get_mut(&server_name) else { continue };
            let tool = server.tools.remove(i);
            let origin = format!("{}: {}", server.origin_text(), tool.name);
            let what = format!("MCP server `{server_name}`'s tool `{}`", tool.name);
            self.refuse(origin, Error::DuplicateName { name, origin: what, first });
        }
    }

    pub(super) fn refuse(&mut self, origin: String, error: Error) {
        self.rejected.push(Rejection { origin, error });
    }

    /// Log each rejection once: those `previous` already had (same origin,
    /// same reason) are not repeated on every rescan. Both are cut to a
    /// length a log line can carry.
    fn log_rejections(&self, previous: Option<&Catalog>) {
        for rejection in &self.rejected {
            let reason = rejection.error.to_string();
            let known = previous.is_some_and(|p| {
                p.rejected.iter().any(|r| r.origin == rejection.origin && r.error.to_string() == reason)
            });
            let (origin, reason) = (super::shown::shown(&rejection.origin), super::shown::shown(&reason));
            if known {
                tracing::debug!(%origin, %reason, "still rejected");
            } else {
                tracing::warn!(%origin, %reason, "rejected");
            }
        }
    }

    /// Add the plugin file at `path` (and its settings file `NAME.toml`).
    pub(super) fn add_file(
        &mut self,
        path: &Path,
        settings: &SettingsResolver,
        previous: Option<&Catalog>,
        keep_bytes: bool,
        max_bytes: u64,
        pinned: Option<&Pulled>,
    ) {
        let origin = path.display().to_string();
        // A pulled component is served only with the digest its manifest names.
        let unpinned = |digest: Option<&[u8; 32]>| pinned.is_some_and(|p| digest != Some(&p.digest));
        let sidecar_path = path.with_extension("toml");
        let beside = Beside::of(path);
        let stamp = match FileStamp::of(path) {
            Ok(stamp) => stamp,
            Err(error) => return self.refuse(origin, error),
        };
        // The same file version as before keeps its plugin (and what it
        // compiled); a watched host reads the bytes it lacks into it.
        if let Some(known) = previous.and_then(|p| p.version_of(path, stamp, beside))
            && (!keep_bytes || known.is_loaded() || known.keep_bytes())
            && !unpinned(known.origin().digest())
        {
            return self.insert(known, true);
        }
        let origin = match Origin::file(path, beside, max_bytes) {
            Ok(origin) => origin,
            Err(error) => return self.refuse(origin, error),
        };
        if let Some(pulled) = pinned.filter(|_| unpinned(origin.digest())) {
            let message = "the stored component does not have the digest its manifest names: not served".to_owned();
            return self.refuse(pulled.section.clone(), Error::Io { path: path.display().to_string(), message });
        }
        let sidecar = match beside.settings.map(|_| RawPluginSettings::load(&sidecar_path)).transpose() {
            Ok(sidecar) => sidecar,
            Err(error) => return self.refuse(path.display().to_string(), error),
        };
        // The same bytes and the same settings as a version already served
        // (the file rewritten as it was: `touch`, `cp -p`, a sync tool):
        // that version, not a new one. Its stamp stays the first one, so
        // each rescan reads such a file again.
        if let Some(known) = previous.and_then(|p| p.same_bytes(path, origin.digest()))
            // A component without a stub is also what its `.wit` and
            // policy file beside it say: one of them changed, read it again.
            && (!known.is_plain()
                || known.origin().beside().is_some_and(|b| (b.wit, b.policy) == (beside.wit, beside.policy)))
            && settings
                .resolve(&known.stub().name, sidecar.as_ref())
                .map(|s| if known.is_plain() { Plugin::plain_settings(s) } else { s })
                .is_ok_and(|s| &s == known.settings())
        {
            if keep_bytes && let Ok(bytes) = origin.bytes() {
                known.origin().keep(bytes);
            }
            return self.insert(known, true);
        }
        self.add(origin, settings, sidecar.as_ref(), true, keep_bytes);
    }

    /// The plugin (served, or a failed candidate) read from `path` with
    /// bytes of SHA-256 `digest`.
    fn same_bytes(&self, path: &Path, digest: Option<&[u8; 32]>) -> Option<Arc<Plugin>> {
        let digest = digest?;
        let candidates = self.stale.values().filter_map(|s| s.candidate.as_ref());
        self.plugins.values().chain(candidates).find(|p| !p.is_instance() && p.origin().holds(path, digest)).cloned()
    }

    /// The plugin (served, or a failed candidate) that was read from
    /// `path` when it had these stamps: entries are keyed by origin and
    /// instance, and the file is the plugin, never one of the connector
    /// instances that share its origin.
    fn version_of(&self, path: &Path, stamp: FileStamp, beside: Beside) -> Option<Arc<Plugin>> {
        let candidates = self.stale.values().filter_map(|s| s.candidate.as_ref());
        self.plugins
            .values()
            .chain(candidates)
            .find(|p| !p.is_instance() && p.origin().is_file_version(path, stamp, beside))
            .cloned()
    }

    fn add(
        &mut self,
        origin: Origin,
        settings: &SettingsResolver,
        sidecar: Option<&RawPluginSettings>,
        from_folder: bool,
        keep_bytes: bool,
    ) {
        let bytes = match origin.bytes() {
            Ok(bytes) => bytes,
            Err(error) => return self.refuse(origin.to_string(), error),
        };
        let (stub, declared) = match stub::read_sections(&bytes, &origin.to_string()) {
            Ok(read) => read,
            Err(Error::MissingStub { .. }) => {
                return self.add_plain(origin, &bytes, settings, sidecar, from_folder, keep_bytes);
            }
            Err(error) => return self.refuse(origin.to_string(), error),
        };
        let origin = if keep_bytes { origin } else { origin.without_bytes() };
        match settings.resolve(&stub.name, sidecar) {
            Ok(settings) => {
                let plugin = Plugin::new(stub, origin, settings).with_declared(declared);
                self.insert(Arc::new(plugin), from_folder)
            }
            Err(error) => self.refuse(origin.to_string(), error),
        }
    }

    /// Add a component without a stub: a plain component (see
    /// [`plain::load`]), unless it implements Quiver's contract.
    fn add_plain(
        &mut self,
        origin: Origin,
        bytes: &[u8],
        settings: &SettingsResolver,
        sidecar: Option<&RawPluginSettings>,
        from_folder: bool,
        keep_bytes: bool,
    ) {
        let shown = origin.to_string();
        let made = plain::load(&origin, bytes).and_then(|(name, plain, manifest)| {
            let settings = settings.resolve(&name, sidecar)?;
            let origin = if keep_bytes { origin } else { origin.without_bytes() };
            Plugin::plain(plain, manifest, origin, settings)
        });
        match made {
            Ok(plugin) => self.insert(Arc::new(plugin), from_folder),
            Err(error) => self.refuse(shown, error),
        }
    }

    /// Serve `plugin` unless its name is taken (a folder plugin may take
    /// the name of an embedded one).
    pub(super) fn insert(&mut self, plugin: Arc<Plugin>, from_folder: bool) {
        if let Some(existing) = self.plugins.get(plugin.name()) {
            if !(from_folder && existing.origin().is_embedded()) {
                let error = Error::DuplicateName {
                    name: plugin.name().to_owned(),
                    origin: plugin.origin().to_string(),
                    first: existing.origin().to_string(),
                };
                return self.refuse(plugin.origin().to_string(), error);
            }
            tracing::info!(plugin = %plugin.name(), origin = %plugin.origin(), "folder plugin replaces the bundled one");
        }
        self.plugins.insert(plugin.name().to_owned(), plugin);
    }
}

/// The `*.wasm` entries of `folder`, sorted; hidden and temporary files
/// are skipped. Entries that are not regular files are listed too: reading
/// them is refused, and the refusal is reported.
fn plugin_files(folder: &Path) -> Result<Vec<PathBuf>> {
    let entries = std::fs::read_dir(folder)
        .map_err(|e| Error::Io { path: folder.display().to_string(), message: e.to_string() })?;
    let mut files: Vec<_> = entries
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| {
            let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
            !name.starts_with('.') && name.ends_with(".wasm")
        })
        .collect();
    files.sort();
    Ok(files)
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use super::*;

    /// Log lines written while `f` runs on this thread.
    fn logged(f: impl FnOnce()) -> String {
        #[derive(Clone, Default)]
        struct Lines(Arc<Mutex<Vec<u8>>>);
        impl std::io::Write for Lines {
            fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
                self.0.lock().unwrap().extend_from_slice(bytes);
                Ok(bytes.len())
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        let lines = Lines::default();
        let writer = lines.clone();
        let subscriber = tracing_subscriber::fmt().with_writer(move || writer.clone()).with_ansi(false).finish();
        tracing::subscriber::with_default(subscriber, || {
            // tracing caches each callsite's interest for the whole process
            // (see `sandbox::log`'s tests): ask again with this subscriber.
            tracing::callsite::rebuild_interest_cache();
            f()
        });
        String::from_utf8(lines.0.lock().unwrap().clone()).unwrap()
    }

    #[test]
    fn a_rejection_is_logged_once_and_never_whole() {
        let dir = tempfile::tempdir().unwrap();
        let (plugins, mcp) = (dir.path().join("plugins"), dir.path().join("mcp"));
        std::fs::create_dir_all(&plugins).unwrap();
        std::fs::create_dir_all(&mcp).unwrap();
        std::fs::write(plugins.join("notes.wasm"), "not wasm").unwrap();
        std::fs::write(plugins.join("evil\nWARN forged line.wasm"), "not wasm").unwrap();
        let huge = "x".repeat(1 << 20);
        std::fs::write(mcp.join("big.json"), format!(r#"[{{"name": "a", "inputSchema": "{huge}"}}]"#)).unwrap();
        let sources = Sources { plugins_dir: Some(&plugins), mcp_dir: Some(&mcp), ..Sources::default() };
        let settings = SettingsResolver { max_memory_mb: 1024, ..SettingsResolver::default() };
        let mut first = None;
        let log = logged(|| first = Some(Catalog::scan(&sources, &settings, None, false).unwrap()));
        let first = first.unwrap();
        assert_eq!(log.matches("rejected").count(), 3, "{log}");
        assert!(
            !log.contains("\nWARN forged") && log.contains("evil\\nWARN forged"),
            "a file name forged a line: {log}"
        );
        assert!(log.len() < 4096, "the log echoes the file: {} bytes", log.len());
        assert!(first.status().rejected.iter().all(|r| r.reason.len() < 1024));
        let log = logged(|| drop(Catalog::scan(&sources, &settings, Some(&first), false).unwrap()));
        assert!(!log.contains("WARN"), "a rescan repeats the rejections: {log}");
    }
}
