//! The tables database adapters listed, kept for Tier 1.
//!
//! A configured database's tables are read by the host itself (the
//! sandbox's `sql` capability keeps them). An adapter that reaches its
//! database some other way is only known by what its `list_tables`
//! answered: the `database` meta-tool notes the names here, per plugin
//! version, and Tier 1 shows them from then on. Nothing is written into
//! the loaded plugin.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError, Weak};

use crate::load::Plugin;

/// What one adapter version listed: the version, and the names.
type Listed = (Weak<Plugin>, Arc<[String]>);

/// The table names each adapter last listed, by plugin version.
#[derive(Debug, Default)]
pub struct ListedTables(Mutex<HashMap<String, Listed>>);

impl ListedTables {
    /// What `plugin` (this very version) last listed, if it did.
    pub fn of(&self, plugin: &Arc<Plugin>) -> Option<Arc<[String]>> {
        let listed = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        // The weak reference keeps the version's allocation, so its
        // address names it: another version is another address.
        listed.get(plugin.name()).filter(|(of, _)| Weak::as_ptr(of) == Arc::as_ptr(plugin)).map(|(_, t)| t.clone())
    }

    /// Note that `plugin` listed `tables`.
    pub fn note(&self, plugin: &Arc<Plugin>, tables: Vec<String>) {
        let mut listed = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        listed.insert(plugin.name().to_owned(), (Arc::downgrade(plugin), tables.into()));
    }
}
