//! What kind a plugin is, and what an action may change.

use serde::{Deserialize, Serialize};

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

#[cfg(test)]
mod tests {
    use super::*;

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
