//! The rules of the `quiver:plugin` contract, in one place.
//!
//! The WIT package (`wit/`) says what a plugin exports and imports; this
//! crate says what the host and the SDK both check about the *values* a
//! plugin declares: the contract identifier, the stub section's name and
//! format, the naming rules and the limits. The host validates stubs and
//! manifests with these functions, and the SDK's `#[plugin]` macro
//! refuses, at compile time, what the host would reject at load time: one
//! source, so the two can never disagree.
//!
//! It has no WebAssembly runtime dependency (the SDK's proc-macro uses it).

mod manifest;
pub mod openapi;
mod rules;
mod stub;
pub mod text;

pub use manifest::{ActionSection, MANIFEST_FORMAT, ManifestSection};
pub use rules::{
    MAX_VERSION, action_name_problem, category_problem, one_line, plugin_name_problem, summary_of, summary_problem,
    version_problem,
};
pub use stub::{Stub, StubAction};
pub use text::{MAX_OUTSIDE_NAME, Shape, outside_name_problem, sanitize, sanitize_cut};

use serde::{Deserialize, Serialize};

/// The WIT package and version this contract describes.
pub const CONTRACT: &str = "quiver:plugin@0.1.1";

/// Name of the custom section that carries a plugin's Tier-1 stub.
pub const STUB_SECTION: &str = "quiver:stub";

/// The stub format written by the SDK and read by the host.
pub const STUB_FORMAT: u32 = 1;

/// The custom section holding a plugin's full manifest (schemas included)
/// as JSON, written by `quiver package`: what the host serves before it
/// compiles the plugin, checked against `describe()` when it does.
pub const MANIFEST_SECTION: &str = "quiver:manifest";

/// The component export a plugin may add to have its start-up work done
/// once, when it is packaged or first compiled, instead of in every
/// instance: the host runs it in the sandbox with no grants and snapshots
/// the state it leaves (the name is the Wizer convention's).
pub const INIT_EXPORT: &str = "wizer-initialize";

/// The custom section that marks a component as already initialised (its
/// [`INIT_EXPORT`] ran and its state is the snapshot): never run again.
pub const INITIALIZED_SECTION: &str = "quiver:initialized";

/// Longest plugin name.
pub const MAX_PLUGIN_NAME: usize = 30;

/// Longest action name.
pub const MAX_ACTION_NAME: usize = 32;

/// Longest category tag.
pub const MAX_CATEGORY: usize = 32;

/// Longest one-line description of a plugin, and of an action's summary
/// (the first paragraph of its description).
pub const MAX_SUMMARY_CHARS: usize = 120;

/// The most actions one plugin may declare.
pub const MAX_ACTIONS: usize = 256;

/// Longest name a model is shown (providers accept `[A-Za-z0-9_-]{1,64}`).
pub const MAX_TOOL_NAME: usize = 64;

/// What joins a plugin name and an action name into a model-facing tool
/// name (`calc__evaluate`). Plugin and action names cannot contain it, so
/// the split is unambiguous, and `30 + 2 + 32` fits [`MAX_TOOL_NAME`].
pub const NAME_SEPARATOR: &str = "__";

/// How the host begins the `internal-error` text of a connector request it
/// refuses because the guest set, itself, what carries a credential the
/// host adds (the API key's query parameter, in any spelling). The SDK
/// reports such a refusal as `denied`, with the rest of the text, which
/// names the parameter.
pub const CREDENTIAL_REFUSAL: &str = "credential refused: ";

/// How the host begins the `internal-error` text of a connector request it
/// refuses because the guest set a header that is not on the connector's
/// allow-list (the standard content headers and those its API declares).
/// The SDK reports it as `denied`, with the rest of the text, which names
/// the header.
pub const HEADER_REFUSAL: &str = "header refused: ";

/// What kind of plugin this is; decides its world and its meta-tool.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    /// A built-in tool: pure computation.
    Tool,
    /// An API connector: HTTP through the host.
    Connector,
    /// A database adapter: SQL through the host.
    Database,
}

impl Kind {
    /// Every kind.
    pub const ALL: [Kind; 3] = [Kind::Tool, Kind::Connector, Kind::Database];

    /// The WIT world a plugin of this kind targets.
    pub fn world(self) -> &'static str {
        match self {
            Kind::Tool => "quiver:plugin/tool",
            Kind::Connector => "quiver:plugin/connector",
            Kind::Database => "quiver:plugin/database-adapter",
        }
    }

    /// Lower-case name, as in stubs and manifests.
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Tool => "tool",
            Kind::Connector => "connector",
            Kind::Database => "database",
        }
    }

    /// The kind called `name` (`tool`, `connector`, `database`).
    pub fn parse(name: &str) -> Option<Kind> {
        Kind::ALL.into_iter().find(|k| k.as_str() == name)
    }
}

impl std::fmt::Display for Kind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What calling an action may change. Ordered: `Read < Write < Admin`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Access {
    /// Reads or computes; idempotent.
    Read,
    /// Creates or updates data outside the call.
    Write,
    /// Destructive or privileged.
    Admin,
}

impl Access {
    /// Every level, lowest first.
    pub const ALL: [Access; 3] = [Access::Read, Access::Write, Access::Admin];

    /// Lower-case name, as in stubs and manifests.
    pub fn as_str(self) -> &'static str {
        match self {
            Access::Read => "read",
            Access::Write => "write",
            Access::Admin => "admin",
        }
    }

    /// The level called `name` (`read`, `write`, `admin`).
    pub fn parse(name: &str) -> Option<Access> {
        Access::ALL.into_iter().find(|a| a.as_str() == name)
    }
}

impl std::fmt::Display for Access {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Whether a plugin built against `contract` runs on this contract: the
/// same package and, for 0.x versions, the same minor version.
pub fn contract_compatible(contract: &str) -> bool {
    let prefix = |c: &str| c.rsplit_once('.').map(|(prefix, _)| prefix.to_owned());
    prefix(contract).is_some_and(|p| Some(p) == prefix(CONTRACT))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_longest_names_fit_a_tool_name() {
        assert!(MAX_PLUGIN_NAME + NAME_SEPARATOR.len() + MAX_ACTION_NAME <= MAX_TOOL_NAME);
    }

    /// The WIT files are the other place the contract's version is
    /// written (their syntax needs it literally): they say [`CONTRACT`].
    #[test]
    fn the_wit_package_is_this_contract() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../wit");
        for file in ["types.wit", "worlds.wit"] {
            let text = std::fs::read_to_string(dir.join(file)).unwrap();
            let package = text.lines().find_map(|l| l.trim().strip_prefix("package ")).unwrap();
            assert_eq!(package.trim_end_matches(';'), CONTRACT, "{file}");
        }
    }

    #[test]
    fn contract_versions_match_on_minor() {
        // 0.1.1 added `tables` and `dialect` to the `sql` import: plugins
        // built against 0.1.0 run unchanged.
        assert!(contract_compatible("quiver:plugin@0.1.0"));
        assert!(contract_compatible("quiver:plugin@0.1.1"));
        assert!(contract_compatible("quiver:plugin@0.1.7"));
        assert!(!contract_compatible("quiver:plugin@0.2.0"));
        assert!(!contract_compatible("other:plugin@0.1.0"));
    }

    #[test]
    fn kinds_and_levels_round_trip() {
        for kind in Kind::ALL {
            assert_eq!(Kind::parse(kind.as_str()), Some(kind));
        }
        for access in Access::ALL {
            assert_eq!(Access::parse(access.as_str()), Some(access));
        }
        assert!(Access::Read < Access::Write && Access::Write < Access::Admin);
    }
}
