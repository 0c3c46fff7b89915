//! Read-only configuration the operator set for this plugin.

/// The value of `key`, if the operator set one.
pub fn get(key: &str) -> Option<String> {
    crate::wit::quiver::plugin::config::get(key)
}

/// All configured keys and values, sorted by key.
pub fn entries() -> Vec<(String, String)> {
    crate::wit::quiver::plugin::config::entries()
}
