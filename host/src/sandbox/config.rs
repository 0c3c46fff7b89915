//! The `config` capability: the operator's settings for a plugin, read
//! through the `config` import.
//!
//! Grant: [`ConfigGrant`], the `config = { ... }` table of the plugin's
//! settings. Per-call state: the same values, shared. The values are plain
//! text that the guest reads, so they are for settings (units, regions,
//! page sizes), never for credentials: a [`Secret`](super::secrets::Secret)
//! cannot be turned into a config value (it has no `Display` and no
//! accessor outside the host).

use std::collections::BTreeMap;
use std::sync::Arc;

use wasmtime::component::{HasSelf, Linker};

use crate::contract::tool::quiver::plugin::config;

/// Add the `config` import to `linker`; `state` finds the call's grant.
pub(crate) fn link<T: 'static>(linker: &mut Linker<T>, state: fn(&mut T) -> &mut ConfigGrant) -> wasmtime::Result<()> {
    config::add_to_linker::<T, HasSelf<ConfigGrant>>(linker, state)
}

/// The values a plugin may read, by key.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ConfigGrant(Arc<BTreeMap<String, String>>);

impl ConfigGrant {
    /// Grant exactly `values`.
    pub fn new(values: BTreeMap<String, String>) -> ConfigGrant {
        ConfigGrant(Arc::new(values))
    }

    /// These values with `over`'s taking their place and adding to them.
    pub fn overlaid(&self, over: &BTreeMap<String, String>) -> ConfigGrant {
        let mut values = self.0.as_ref().clone();
        values.extend(over.iter().map(|(k, v)| (k.clone(), v.clone())));
        ConfigGrant::new(values)
    }

    /// The value of `key`, if granted.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).map(String::as_str)
    }

    /// Every granted key and value, sorted by key.
    pub fn entries(&self) -> impl Iterator<Item = (&str, &str)> {
        self.0.iter().map(|(k, v)| (k.as_str(), v.as_str()))
    }
}

impl config::Host for ConfigGrant {
    fn get(&mut self, key: String) -> wasmtime::Result<Option<String>> {
        Ok(ConfigGrant::get(self, &key).map(str::to_owned))
    }

    fn entries(&mut self) -> wasmtime::Result<Vec<(String, String)>> {
        Ok(ConfigGrant::entries(self).map(|(k, v)| (k.to_owned(), v.to_owned())).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_guest_reads_only_what_was_granted() {
        let mut grant = ConfigGrant::new([("units".to_owned(), "metric".to_owned())].into());
        assert_eq!(config::Host::get(&mut grant, "units".into()).unwrap().as_deref(), Some("metric"));
        assert_eq!(config::Host::get(&mut grant, "HOME".into()).unwrap(), None);
        assert_eq!(config::Host::entries(&mut grant).unwrap(), [("units".to_owned(), "metric".to_owned())]);
        let mut nothing = ConfigGrant::default();
        assert!(config::Host::entries(&mut nothing).unwrap().is_empty());
    }
}
