//! One catalog snapshot: what the host serves at one moment, with every
//! tool's entry and model-facing name computed once.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, OnceLock};

use super::mcp::UpstreamServer;
use super::names;
use super::record::{Category, ToolEntry, ToolRecord};
use super::skill::Skill;
use crate::contract::Kind;
use crate::error::Error;
use crate::load::Plugin;

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
    pub(crate) candidate: Option<Arc<Plugin>>,
}

/// What the host serves at one moment.
#[derive(Debug, Default)]
pub struct Catalog {
    version: u64,
    revision: u64,
    pub(super) plugins: BTreeMap<String, Arc<Plugin>>,
    pub(super) skills: BTreeMap<String, Skill>,
    pub(super) mcp: BTreeMap<String, UpstreamServer>,
    pub(super) rejected: Vec<Rejection>,
    /// Plugins served by their last good version, by name.
    pub(super) stale: BTreeMap<String, Stale>,
    /// Every tool's entry and model-facing name, built once.
    index: OnceLock<Index>,
}

/// The tools of a snapshot, in order, with their names both ways.
#[derive(Debug, Default)]
struct Index {
    entries: Vec<ToolEntry>,
    by_name: HashMap<String, usize>,
    by_id: HashMap<(String, String), usize>,
    /// Each origin's tools are contiguous: their range in `entries`.
    by_origin: HashMap<String, std::ops::Range<usize>>,
}

impl Catalog {
    /// The version of what it serves: the same tools and contents, the
    /// same version.
    pub fn version(&self) -> u64 {
        self.version
    }

    /// Grows with every published snapshot, including those that changed
    /// only the status ([`rejected`](Self::rejected), [`stale`](Self::stale)).
    pub fn revision(&self) -> u64 {
        self.revision
    }

    /// Number it as the first snapshot served.
    pub(crate) fn number_first(&mut self) {
        (self.version, self.revision) = (1, 1);
    }

    /// Number it: the same served contents as `previous` keep its version.
    pub(crate) fn number_after(&mut self, previous: &Catalog) {
        self.version = if self.serves_the_same_as(previous) { previous.version } else { previous.version + 1 };
        self.revision = previous.revision + 1;
    }

    /// Whether `self` and `other` serve the same things (plugin versions,
    /// skills, upstream servers).
    pub(crate) fn serves_the_same_as(&self, other: &Catalog) -> bool {
        self.plugins.len() == other.plugins.len()
            && self.plugins.iter().zip(&other.plugins).all(|((na, a), (nb, b))| na == nb && Arc::ptr_eq(a, b))
            && self.skills == other.skills
            && self.mcp == other.mcp
    }

    /// Whether `self` and `other` report the same rejections and stale plugins.
    pub(crate) fn same_status_as(&self, other: &Catalog) -> bool {
        let rejected = self.rejected.len() == other.rejected.len()
            && self
                .rejected
                .iter()
                .zip(&other.rejected)
                .all(|(x, y)| x.origin == y.origin && x.error.to_string() == y.error.to_string());
        rejected
            && self.stale.len() == other.stale.len()
            && self.stale.iter().zip(&other.stale).all(|((na, x), (nb, y))| {
                na == nb && x.origin == y.origin && x.error.to_string() == y.error.to_string()
            })
    }

    /// The plugins, sorted by name.
    pub fn plugins(&self) -> impl Iterator<Item = &Arc<Plugin>> {
        self.plugins.values()
    }

    /// The plugin called `name`.
    pub fn get(&self, name: &str) -> Option<&Arc<Plugin>> {
        self.plugins.get(name)
    }

    /// The plugins of one kind, sorted by name.
    pub fn plugins_of(&self, kind: Kind) -> impl Iterator<Item = &Arc<Plugin>> {
        self.plugins.values().filter(move |p| p.stub().kind == kind)
    }

    /// Number of plugins.
    pub fn len(&self) -> usize {
        self.plugins.len()
    }

    /// Whether it serves no plugin.
    pub fn is_empty(&self) -> bool {
        self.plugins.is_empty()
    }

    /// The names of all plugins, sorted.
    pub fn names(&self) -> Vec<String> {
        self.plugins.keys().cloned().collect()
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

    /// The skills, sorted by name.
    pub fn skills(&self) -> impl Iterator<Item = &Skill> {
        self.skills.values()
    }

    /// The skill called `name`.
    pub fn skill(&self, name: &str) -> Option<&Skill> {
        self.skills.get(name)
    }

    /// The upstream MCP servers, sorted by name.
    pub fn mcp_servers(&self) -> impl Iterator<Item = &UpstreamServer> {
        self.mcp.values()
    }

    /// The upstream MCP server called `name`.
    pub fn mcp_server(&self, name: &str) -> Option<&UpstreamServer> {
        self.mcp.get(name)
    }

    fn index(&self) -> &Index {
        self.index.get_or_init(|| {
            let mut ids: Vec<Vec<String>> = Vec::new();
            for plugin in self.plugins.values() {
                ids.extend(plugin.stub().action_names().map(|a| vec![plugin.name().to_owned(), a.to_owned()]));
            }
            for server in self.mcp.values() {
                ids.extend(server.tools.iter().map(|t| vec![server.name.clone(), t.name.clone()]));
            }
            let mut assigned = names::assign(&ids).into_iter();
            let mut entries = Vec::with_capacity(ids.len());
            for plugin in self.plugins.values() {
                entries.extend(ToolEntry::of_plugin(plugin, |_| assigned.next().expect("a name per id")));
            }
            for server in self.mcp.values() {
                for tool in &server.tools {
                    entries.push(ToolEntry::of_upstream(server, tool, assigned.next().expect("a name per id")));
                }
            }
            let by_name = entries.iter().enumerate().map(|(i, e)| (e.name.clone(), i)).collect();
            let by_id = entries.iter().enumerate().map(|(i, e)| ((e.origin.clone(), e.action.clone()), i)).collect();
            let mut by_origin: HashMap<String, std::ops::Range<usize>> = HashMap::new();
            for (i, e) in entries.iter().enumerate() {
                by_origin.entry(e.origin.clone()).or_insert(i..i).end = i + 1;
            }
            Index { entries, by_name, by_id, by_origin }
        })
    }

    /// Every action of every plugin and every tool of every upstream server,
    /// plugins first (sorted, actions in their order), then servers.
    /// Computed once per snapshot, then borrowed.
    pub fn tools(&self) -> &[ToolEntry] {
        &self.index().entries
    }

    /// The tools of `origin` (a plugin or upstream server), in order.
    pub fn tools_of(&self, origin: &str) -> &[ToolEntry] {
        let index = self.index();
        index.by_origin.get(origin).map_or(&[], |range| &index.entries[range.clone()])
    }

    /// The tool whose model-facing name is `name`.
    pub fn tool(&self, name: &str) -> Option<&ToolEntry> {
        let index = self.index();
        index.by_name.get(name).map(|&i| &index.entries[i])
    }

    /// The model-facing name of `action` of `origin` (a plugin or MCP server).
    pub fn model_name(&self, origin: &str, action: &str) -> Option<&str> {
        let index = self.index();
        index.by_id.get(&(origin.to_owned(), action.to_owned())).map(|&i| index.entries[i].name.as_str())
    }

    /// The entry of `action` of plugin (or upstream server) `origin`; an
    /// error listing what exists otherwise.
    pub fn action(&self, origin: &str, action: &str) -> crate::error::Result<&ToolEntry> {
        let tools = self.tools_of(origin);
        if tools.is_empty() {
            if let Some(rejection) = self.rejection_of(origin) {
                return Err(Error::Rejected {
                    plugin: origin.to_owned(),
                    origin: super::shown::shown(&rejection.origin),
                    reason: super::shown::shown(&rejection.error.to_string()),
                });
            }
            let mut known = self.names();
            known.extend(self.mcp.keys().cloned());
            return Err(Error::UnknownPlugin { plugin: origin.to_owned(), known });
        }
        tools.iter().find(|t| t.action == action).ok_or_else(|| Error::UnknownAction {
            plugin: origin.to_owned(),
            action: action.to_owned(),
            known: tools.iter().map(|t| t.action.clone()).collect(),
        })
    }

    /// The configured resources of a section kind (`databases`,
    /// `connectors`, `mcp_servers`) that are not served, by name, with why.
    pub fn failing<'a>(&'a self, section: &'a str) -> impl Iterator<Item = (&'a str, &'a Error)> + 'a {
        self.rejected.iter().filter_map(move |r| {
            let name = r.origin.strip_prefix('[')?.strip_suffix(']')?.strip_prefix(section)?.strip_prefix('.')?;
            Some((name, &r.error))
        })
    }

    /// The rejection of what would have been served as `name`: a plugin
    /// file `name.wasm`, or the `[databases.name]` / `[connectors.name]` /
    /// `[mcp_servers.name]` section.
    pub(crate) fn rejection_of(&self, name: &str) -> Option<&Rejection> {
        let sections = [format!("[databases.{name}]"), format!("[connectors.{name}]"), format!("[mcp_servers.{name}]")];
        self.rejected.iter().find(|r| {
            sections.contains(&r.origin)
                || (r.origin.ends_with(".wasm")
                    && std::path::Path::new(&r.origin).file_stem().is_some_and(|stem| stem == name))
        })
    }

    /// The full record of `entry`, if its schema is known without loading
    /// anything: a saved MCP tool, or an action of a prepared plugin.
    pub fn record(&self, entry: &ToolEntry) -> Option<ToolRecord> {
        match entry.category {
            Category::Mcp => Some(ToolRecord::of_upstream(entry, self.mcp.get(&entry.origin)?.tool(&entry.action)?)),
            _ => ToolRecord::of_action(entry, self.plugins.get(&entry.origin)?.manifest()?),
        }
    }

    /// The record of built-in `entry` as known without compiling anything
    /// (its plugin's manifest section, else its stub), the same before and
    /// after its plugin is prepared: what the prompt budget charges.
    pub fn listed_record(&self, entry: &ToolEntry) -> ToolRecord {
        self.plugins
            .get(&entry.origin)
            .and_then(|p| p.listed_manifest())
            .and_then(|manifest| ToolRecord::of_action(entry, manifest))
            .unwrap_or_else(|| ToolRecord::of_entry(entry))
    }

    // What reload changes in a fresh snapshot before it is published.

    pub(crate) fn plugin_names(&self) -> impl Iterator<Item = &String> {
        self.plugins.keys()
    }

    pub(crate) fn serve(&mut self, plugin: Arc<Plugin>) {
        self.plugins.insert(plugin.name().to_owned(), plugin);
    }

    pub(crate) fn withdraw(&mut self, name: &str) -> Option<Arc<Plugin>> {
        self.plugins.remove(name)
    }

    pub(crate) fn take_rejected(&mut self) -> Vec<Rejection> {
        std::mem::take(&mut self.rejected)
    }

    pub(crate) fn reject(&mut self, rejection: Rejection) {
        self.rejected.push(rejection);
    }

    pub(crate) fn mark_stale(&mut self, name: &str, stale: Stale) {
        self.stale.insert(name.to_owned(), stale);
    }
}
