//! The `quiver:manifest` section: a plugin's full manifest (schemas
//! included) as JSON, which a host serves before it compiles the plugin and
//! checks against `describe()` when it does. `quiver package` writes it;
//! the SDK computes it natively (see its `__quiver_manifest` module), so a
//! build that embeds a plugin can write it too.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::kinds::{Access, Kind};

/// The format of the `quiver:manifest` section this contract defines.
pub const MANIFEST_FORMAT: u32 = 1;

/// A manifest as the section carries it: what `describe()` returns, with
/// the schemas parsed (not yet checked by the contract's rules).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ManifestSection {
    /// Section format version ([`MANIFEST_FORMAT`]).
    pub format: u32,
    /// Plugin name.
    pub name: String,
    /// Plugin version.
    pub version: String,
    /// Which world it targets.
    pub kind: Kind,
    /// One line, at most 120 characters.
    pub description: String,
    /// Tags for search and per-agent filters.
    #[serde(default)]
    pub categories: Vec<String>,
    /// The actions, in the author's order.
    pub actions: Vec<ActionSection>,
}

/// One action of a [`ManifestSection`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ActionSection {
    /// Action name.
    pub name: String,
    /// What it does; the first paragraph is its summary.
    pub description: String,
    /// JSON Schema of its input (an object).
    pub input_schema: Value,
    /// JSON Schema of its output, when typed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<Value>,
    /// What calling it may change.
    pub access: Access,
}
