//! What one snapshot changed from the one before it, plugin by plugin,
//! for the log of a reload: an operator reads that 0.2.0 replaced 0.1.0.

use std::sync::Arc;

use super::snapshot::Catalog;

/// One plugin's change between two snapshots.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PluginChange {
    /// Newly served.
    Added {
        /// Its name.
        name: String,
        /// Its version.
        version: String,
        /// Where it was read from.
        origin: String,
    },
    /// Served from another file, build or settings.
    Replaced {
        /// Its name.
        name: String,
        /// The version served before.
        from: String,
        /// The version served now.
        to: String,
        /// Where the new one was read from.
        origin: String,
    },
    /// No longer served.
    Removed {
        /// Its name.
        name: String,
        /// The version that was served.
        version: String,
    },
}

impl std::fmt::Display for PluginChange {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let shown = super::shown::shown;
        match self {
            PluginChange::Added { name, version, origin } => {
                write!(f, "added `{name}` {} from {}", shown(version), shown(origin))
            }
            PluginChange::Replaced { name, from, to, origin } => {
                write!(f, "replaced `{name}` {} → {} from {}", shown(from), shown(to), shown(origin))
            }
            PluginChange::Removed { name, version } => write!(f, "removed `{name}` {}", shown(version)),
        }
    }
}

impl Catalog {
    /// How its plugins differ from `old`'s, by name.
    pub fn changes_from(&self, old: &Catalog) -> Vec<PluginChange> {
        let mut changes = Vec::new();
        for plugin in self.plugins() {
            let (name, version) = (plugin.name().to_owned(), plugin.stub().version.clone());
            let origin = plugin.origin().to_string();
            match old.get(&name) {
                None => changes.push(PluginChange::Added { name, version, origin }),
                Some(before)
                    if !Arc::ptr_eq(before, plugin)
                        && (!before.origin().same_as(plugin.origin()) || before.settings() != plugin.settings()) =>
                {
                    let from = before.stub().version.clone();
                    changes.push(PluginChange::Replaced { name, from, to: version, origin });
                }
                Some(_) => {}
            }
        }
        for plugin in old.plugins().filter(|p| self.get(p.name()).is_none()) {
            changes
                .push(PluginChange::Removed { name: plugin.name().to_owned(), version: plugin.stub().version.clone() });
        }
        changes
    }
}
