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
            rejected: self.rejected().iter().map(|r| (shown(&r.origin), shown(&r.error.to_string()))).collect(),
            stale: self
                .stale()
                .map(|(name, s)| (name.to_owned(), shown(&format!("{}: {}", s.origin, s.error))))
                .collect(),
        }
    }
}

/// Longest text of one status entry or log field about a file: what a
/// hostile file says about itself is never echoed whole.
const SHOWN_BYTES: usize = 512;

/// `text` cut to [`SHOWN_BYTES`] at a character boundary, with a note.
pub(crate) fn shown(text: &str) -> String {
    if text.len() <= SHOWN_BYTES {
        return text.to_owned();
    }
    let mut end = SHOWN_BYTES;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}… ({} more bytes)", &text[..end], text.len() - end)
}
