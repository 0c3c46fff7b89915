//! What a snapshot serves and what it refused, for operators.

use schemars::JsonSchema;
use serde::Serialize;

use super::mcp::ServerState;
use super::shown::shown;
use super::snapshot::Catalog;
use crate::load::Plugin;
use crate::load::plain::request::RequestsStatus;
use crate::sandbox::sql::Privileges;

/// What the host serves and what it refused.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Status {
    /// The catalog version (changes with what is served).
    pub version: u64,
    /// Changes with every published snapshot, status included.
    pub revision: u64,
    /// Plugins served (configured databases and connectors among them).
    pub plugins: Vec<PluginStatus>,
    /// Files (and configuration sections) not served, and why.
    pub rejected: Vec<RejectedStatus>,
    /// Upstream MCP servers: whether their tools are known, whether they are failing.
    pub mcp_servers: Vec<ServerStatus>,
    /// Plugins from OCI registries (`[[oci]]`): stored, being pulled, or failed.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub oci: Vec<crate::load::oci::OciStatus>,
}

/// One plugin in the status.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct PluginStatus {
    /// The name its tools are under.
    pub name: String,
    /// `tool`, `connector` or `database`.
    pub kind: String,
    /// The version its stub declares.
    pub version: String,
    /// Its file, or `bundled:FILE`.
    pub origin: String,
    /// The categories it declares.
    pub categories: Vec<String>,
    /// `serving`, or `stale`: a newer file failed and this version is
    /// still served (`reason` says why).
    pub state: &'static str,
    /// Why a newer file does not replace it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Whether it is compiled and checked (plugins load on first use).
    pub compiled: bool,
    /// The SHA-256 of its file as read (hex); none for a plugin bundled in
    /// the binary, which is the binary's own.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub digest: Option<String>,
    /// The highest access any caller may use on it: its `access` setting
    /// (`read`, `write` or `admin`; a database's, `read` by default); none
    /// when nothing caps it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub access: Option<String>,
    /// For a database: whether the role the host connects as can read what
    /// the operator hid (the database's own privileges, the second layer
    /// behind the SQL policy).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub privileges: Option<Privileges>,
    /// For a component served as it is (no stub): its exports not
    /// served, with why.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub skipped: Vec<SkippedExport>,
    /// For a component that ships a policy file: what it asks for, next
    /// to what the configuration grants (a request is never a grant).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub requests: Option<RequestsStatus>,
}

/// An export of a component that is not served as a tool.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct SkippedExport {
    /// The export (`interface#function`, or the function's name).
    pub export: String,
    /// Why it is not served.
    pub reason: String,
}

/// A file or section that is not served.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct RejectedStatus {
    /// The file, or the configuration section.
    pub origin: String,
    /// Why it is not served.
    pub reason: String,
}

/// One upstream MCP server in the status.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ServerStatus {
    /// Its name.
    pub name: String,
    /// Whether it is a live server (else a saved tool list).
    pub live: bool,
    /// Its tools, as last listed.
    pub tools: usize,
    /// Listed, not listed yet, or failing (and why).
    #[serde(flatten)]
    pub state: ServerState,
}

impl Catalog {
    /// Its status: what it serves, what it refused, what went stale.
    pub fn status(&self) -> Status {
        Status {
            version: self.version(),
            revision: self.revision(),
            plugins: self
                .plugins()
                .map(|p| {
                    let stub = p.stub();
                    let stale = self.stale().find(|(name, _)| *name == p.name()).map(|(_, s)| s);
                    PluginStatus {
                        name: p.name().to_owned(),
                        kind: stub.kind.to_string(),
                        version: shown(&stub.version),
                        origin: shown(&p.origin().to_string()),
                        categories: stub.categories.iter().map(|c| shown(c)).collect(),
                        state: if stale.is_some() { "stale" } else { "serving" },
                        reason: stale.map(|s| shown(&format!("{}: {}", s.origin, s.error))),
                        compiled: p.is_loaded(),
                        digest: p.origin().digest().map(hex::encode),
                        access: p
                            .settings()
                            .access
                            .or_else(|| p.settings().grants.sql.database().map(|d| d.settings().access))
                            .map(|a| a.to_string()),
                        privileges: p.settings().grants.sql.database().map(|d| d.privileges()),
                        skipped: skipped_of(p),
                        requests: requests_of(p),
                    }
                })
                .collect(),
            rejected: self
                .rejected()
                .iter()
                .map(|r| RejectedStatus { origin: shown(&r.origin), reason: shown(&r.error.to_string()) })
                .collect(),
            mcp_servers: self
                .mcp_servers()
                .map(|s| ServerStatus {
                    name: s.name.clone(),
                    live: s.live,
                    tools: s.tools.len(),
                    state: match &s.state {
                        ServerState::Failing(reason) => ServerState::Failing(shown(reason)),
                        other => other.clone(),
                    },
                })
                .collect(),
            // The host adds the registries' pulls (the snapshot does not hold them).
            oci: Vec::new(),
        }
    }
}

/// The exports of a component served as it is that are not served.
pub(crate) fn skipped_of(plugin: &Plugin) -> Vec<SkippedExport> {
    let skipped = plugin.exports().map(|plain| plain.skipped.as_slice()).unwrap_or_default();
    skipped.iter().map(|(export, reason)| SkippedExport { export: shown(export), reason: shown(reason) }).collect()
}

/// What the policy file of a component served as it is asks for, next to
/// what its settings grant.
pub(crate) fn requests_of(plugin: &Plugin) -> Option<RequestsStatus> {
    // A plain component's actions are `write` exactly when it imports
    // `wasi:http` (see `Plain::manifest`).
    let http = plugin.stub().actions.iter().any(|a| a.access == crate::contract::Access::Write);
    Some(plugin.requests()?.status(&plugin.settings().grants, http))
}
