//! What a snapshot serves and what it refused, for operators.

use schemars::JsonSchema;
use serde::Serialize;

use super::snapshot::Catalog;

/// What the host serves and what it refused.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Status {
    /// The catalog version (changes with what is served).
    pub version: u64,
    /// Changes with every published snapshot, status included.
    pub revision: u64,
    /// Plugins served: name and origin.
    pub plugins: Vec<(String, String)>,
    /// Files not served: origin and why.
    pub rejected: Vec<(String, String)>,
    /// Plugins served by their last good version: name and why the newer file failed.
    pub stale: Vec<(String, String)>,
}

impl Catalog {
    /// Its status: what it serves, what it refused, what went stale.
    pub fn status(&self) -> Status {
        Status {
            version: self.version(),
            revision: self.revision(),
            plugins: self.plugins().map(|p| (p.name().to_owned(), p.origin().to_string())).collect(),
            rejected: self.rejected().iter().map(|r| (r.origin.clone(), r.error.to_string())).collect(),
            stale: self.stale().map(|(name, s)| (name.to_owned(), format!("{}: {}", s.origin, s.error))).collect(),
        }
    }
}
