//! ① The WIT contract: host bindings of the `quiver:plugin` package.
//!
//! Generated code lives only here. Each world the host calls into gets one
//! `bindgen!`; interfaces they share are generated once and reused with
//! `with:`.

#![allow(missing_docs, clippy::all)]

use serde::{Deserialize, Serialize};

/// The version of the WIT package this host implements.
pub const CONTRACT: &str = "quiver:plugin@0.1.0";

/// Bindings of the `tool` world. Every plugin exports its `plugin`
/// interface, so these also call connectors and database adapters.
pub(crate) mod tool {
    wasmtime::component::bindgen!({
        path: "../wit",
        world: "quiver:plugin/tool",
        imports: { default: trappable },
        exports: { default: async },
    });
}

/// Bindings of the `database-adapter` world: the `sql` import.
pub(crate) mod database {
    wasmtime::component::bindgen!({
        path: "../wit",
        world: "quiver:plugin/database-adapter",
        imports: { default: async | trappable },
        exports: { default: async },
        with: {
            "quiver:plugin/types": super::tool::quiver::plugin::types,
            "quiver:plugin/log": super::tool::quiver::plugin::log,
            "quiver:plugin/config": super::tool::quiver::plugin::config,
        },
    });
}

pub(crate) use tool::quiver::plugin::types as wit;

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
}

impl std::fmt::Display for Kind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What calling an action may change.
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
    /// Lower-case name, as in stubs and manifests.
    pub fn as_str(self) -> &'static str {
        match self {
            Access::Read => "read",
            Access::Write => "write",
            Access::Admin => "admin",
        }
    }
}

impl From<wit::Kind> for Kind {
    fn from(kind: wit::Kind) -> Self {
        match kind {
            wit::Kind::Tool => Kind::Tool,
            wit::Kind::Connector => Kind::Connector,
            wit::Kind::Database => Kind::Database,
        }
    }
}

impl From<wit::Access> for Access {
    fn from(access: wit::Access) -> Self {
        match access {
            wit::Access::Read => Access::Read,
            wit::Access::Write => Access::Write,
            wit::Access::Admin => Access::Admin,
        }
    }
}

/// Split the plugin's typed error into its kind and message.
pub(crate) fn guest_error(error: wit::Error) -> (crate::GuestErrorKind, String) {
    use crate::GuestErrorKind as K;
    match error {
        wit::Error::InvalidInput(m) => (K::InvalidInput, m),
        wit::Error::NotFound(m) => (K::NotFound, m),
        wit::Error::Denied(m) => (K::Denied, m),
        wit::Error::Unavailable(m) => (K::Unavailable, m),
        wit::Error::Failed(m) => (K::Failed, m),
    }
}

/// Longest one-line description of a plugin or action summary.
pub const MAX_SUMMARY_CHARS: usize = 120;

/// Why `name` is not a valid plugin name (`[a-z][a-z0-9-]*`, at most 30
/// characters, no `--`, no trailing `-`), or `None` if it is.
pub fn plugin_name_problem(name: &str) -> Option<String> {
    let ok = (1..=30).contains(&name.len())
        && name.starts_with(|c: char| c.is_ascii_lowercase())
        && name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        && !name.ends_with('-')
        && !name.contains("--");
    (!ok).then(|| {
        format!("plugin name `{name}` must be 1-30 characters of a-z, 0-9 and single `-`, starting with a letter")
    })
}

/// Why `name` is not a valid action name (`[a-z][a-z0-9_]*`, at most 32
/// characters, no `__`), or `None` if it is.
pub fn action_name_problem(name: &str) -> Option<String> {
    let ok = (1..=32).contains(&name.len())
        && name.starts_with(|c: char| c.is_ascii_lowercase())
        && name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
        && !name.contains("__");
    (!ok).then(|| {
        format!("action name `{name}` must be 1-32 characters of a-z, 0-9 and single `_`, starting with a letter")
    })
}

/// Why `category` is not a valid category (1-32 characters of `a-z0-9-`).
pub fn category_problem(category: &str) -> Option<String> {
    let ok = (1..=32).contains(&category.len())
        && category.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
    (!ok).then(|| format!("category `{category}` must be 1-32 characters of a-z, 0-9 and -"))
}

/// Why `text` is not a valid one-line description, or `None` if it is.
pub fn summary_problem(what: &str, text: &str) -> Option<String> {
    if text.trim().is_empty() {
        Some(format!("{what} has an empty description"))
    } else if text.contains('\n') {
        Some(format!("{what}: the one-line description contains a line break"))
    } else if text.chars().count() > MAX_SUMMARY_CHARS {
        Some(format!(
            "{what}: the one-line description is {} characters, over {MAX_SUMMARY_CHARS}",
            text.chars().count()
        ))
    } else {
        None
    }
}

/// The one-line summary of a description: its first paragraph on one line.
/// This is how the SDK derives stub summaries from doc comments.
pub fn summary_of(description: &str) -> String {
    description.trim().lines().take_while(|l| !l.trim().is_empty()).map(str::trim).collect::<Vec<_>>().join(" ")
}
