//! Upstream MCP servers as catalog entries.
//!
//! (Upstream: a server Quiver is a client of. Quiver's own MCP server is
//! [`faces::mcp`](crate::faces::mcp).) Two sources:
//!
//! - a folder of saved `tools/list` results (`<server>.json`, the `tools`
//!   array or an object with a `tools` field): one read-only server per
//!   file, searchable, countable and discoverable, not callable;
//! - configured live servers ([`LiveServer`]): their [`Listing`] is what
//!   [`upstream`](crate::upstream) last learnt from the server (or its disk
//!   cache), so a snapshot never waits on a connection.
//!
//! `_meta` and `icons` are dropped, as a client would drop them before
//! showing tools to a model.

use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::contract::Access;
use crate::error::{Error, Result};

/// One tool of an upstream MCP server, as a client shows it to a model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UpstreamTool {
    /// Its name on the server.
    pub name: String,
    /// Its description (may be long).
    #[serde(default)]
    pub description: String,
    /// Its input schema.
    pub input_schema: Value,
    /// Optional behaviour hints (`readOnlyHint`, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Value>,
    /// Optional display title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Optional output schema.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<Value>,
}

/// An upstream server and its tools.
#[derive(Debug, Clone, PartialEq)]
pub struct UpstreamServer {
    /// Its name (the file stem, or the configured name).
    pub name: String,
    /// Its tools, in the order the server listed them.
    pub tools: Vec<UpstreamTool>,
    /// Where it was read from (the file, or `[mcp_servers.NAME]`).
    pub origin: PathBuf,
    /// What it is for, in one line: the operator's description, else the
    /// server's own.
    pub purpose: Option<String>,
    /// Whether its tools are known, and whether it is failing.
    pub state: ServerState,
    /// Whether it is a live, callable server (else a saved list).
    pub live: bool,
}

/// What is known of a server's tools.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case", tag = "state", content = "reason")]
pub enum ServerState {
    /// Its tools were listed (now or in an earlier run).
    Listed,
    /// Not listed yet: it is being listed in the background.
    NotListedYet,
    /// It failed to start or crashed several times in a row.
    Failing(String),
}

/// A configured live server, as the catalog scan sees it.
#[derive(Debug, Clone)]
pub struct LiveServer {
    /// Its name.
    pub name: String,
    /// The operator's one-line description, if any.
    pub description: Option<String>,
    /// What is known of it; updated by [`upstream`](crate::upstream).
    pub listing: Arc<RwLock<Listing>>,
}

/// What was last learnt from a live server: its tools and what it says it
/// is for (both cached on disk), and whether it is failing (not cached).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Listing {
    /// Its tools; `None`: never listed.
    pub tools: Option<Vec<UpstreamTool>>,
    /// Its `serverInfo` description, else the first sentence of its `instructions`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub purpose: Option<String>,
    /// Why it is failing, if it is.
    #[serde(skip)]
    pub failure: Option<String>,
}

impl LiveServer {
    /// The server as a snapshot serves it now.
    pub fn snapshot(&self) -> UpstreamServer {
        let listing = self.listing.read().unwrap_or_else(|e| e.into_inner()).clone();
        let state = match (&listing.failure, &listing.tools) {
            (Some(reason), _) => ServerState::Failing(reason.clone()),
            (None, Some(_)) => ServerState::Listed,
            (None, None) => ServerState::NotListedYet,
        };
        UpstreamServer {
            name: self.name.clone(),
            tools: listing.tools.unwrap_or_default(),
            origin: PathBuf::from(format!("[mcp_servers.{}]", self.name)),
            purpose: self.description.clone().or(listing.purpose),
            state,
            live: true,
        }
    }
}

/// Tools of one server read from a list or a cache; `_meta` and `icons`
/// dropped. A tool that is not a tool (no name, an input schema that is not
/// an object) is left out, and said why in the second list, so one bad
/// entry never takes its server's other tools with it.
pub fn parse_tools(raw: Vec<Value>) -> (Vec<UpstreamTool>, Vec<String>) {
    let (mut tools, mut problems) = (Vec::with_capacity(raw.len()), Vec::new());
    for (i, mut tool) in raw.into_iter().enumerate() {
        if let Some(object) = tool.as_object_mut() {
            object.remove("_meta");
            object.remove("icons");
        }
        match serde_json::from_value::<UpstreamTool>(tool) {
            Ok(tool) if tool.input_schema.is_object() => tools.push(tool),
            Ok(tool) => problems.push(format!("tool #{i} `{}`: its inputSchema is not a JSON object", tool.name)),
            Err(e) => problems.push(format!("tool #{i}: {e}")),
        }
    }
    (tools, problems)
}

#[derive(Deserialize)]
#[serde(untagged)]
enum ToolsList {
    Bare(Vec<Value>),
    Result { tools: Vec<Value> },
}

impl UpstreamTool {
    /// Its access level from its annotations: `readOnlyHint` is read,
    /// `destructiveHint` is admin, anything else is write. (Annotations are
    /// the server's word, not a guarantee: the operator's grants decide.)
    pub fn access(&self) -> Access {
        let hint = |key: &str| self.annotations.as_ref().and_then(|a| a.get(key)).and_then(Value::as_bool);
        if hint("readOnlyHint") == Some(true) {
            Access::Read
        } else if hint("destructiveHint") == Some(true) {
            Access::Admin
        } else {
            Access::Write
        }
    }
}

impl UpstreamServer {
    /// Read one saved `tools/list` result: the server, and what was wrong
    /// with the tools left out of it.
    pub fn load(path: &Path) -> Result<(UpstreamServer, Vec<String>)> {
        let invalid = |reason: String| Error::InvalidMcpList { path: path.display().to_string(), reason };
        let text = std::fs::read_to_string(path)
            .map_err(|e| Error::Io { path: path.display().to_string(), message: e.to_string() })?;
        let list: ToolsList = serde_json::from_str(&text).map_err(|e| {
            invalid(format!("not a tools/list result (a JSON array of tools, or {{\"tools\": [...]}}): {e}"))
        })?;
        let raw = match list {
            ToolsList::Bare(tools) | ToolsList::Result { tools } => tools,
        };
        let (tools, problems) = parse_tools(raw);
        let name = path.file_stem().and_then(|s| s.to_str()).unwrap_or("server").to_owned();
        let server = UpstreamServer {
            name,
            tools,
            origin: path.to_owned(),
            purpose: None,
            state: ServerState::Listed,
            live: false,
        };
        Ok((server, problems))
    }

    /// The tool called `name`.
    pub fn tool(&self, name: &str) -> Option<&UpstreamTool> {
        self.tools.iter().find(|t| t.name == name)
    }

    /// The operator's name for where it comes from.
    pub fn origin_text(&self) -> String {
        self.origin.display().to_string()
    }
}

/// The `*.json` files of `dir`, sorted.
pub fn list_files(dir: &Path) -> Result<Vec<PathBuf>> {
    let entries =
        std::fs::read_dir(dir).map_err(|e| Error::Io { path: dir.display().to_string(), message: e.to_string() })?;
    let mut files: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "json") && p.is_file())
        .filter(|p| !p.file_name().is_some_and(|n| n.to_string_lossy().starts_with('.')))
        .collect();
    files.sort();
    Ok(files)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_a_tools_list_and_strips_client_only_fields() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("time.json");
        std::fs::write(
            &path,
            r#"[{"name":"now","description":"Current time","inputSchema":{"type":"object"},"_meta":{"x":1},"icons":[{"src":"data:"}]}]"#,
        )
        .unwrap();
        let (server, problems) = UpstreamServer::load(&path).unwrap();
        assert!(problems.is_empty(), "{problems:?}");
        assert_eq!(server.name, "time");
        assert_eq!(server.tools[0].name, "now");
        let shown = serde_json::to_value(&server.tools[0]).unwrap();
        assert!(shown.get("_meta").is_none() && shown.get("icons").is_none());

        std::fs::write(&path, r#"{"tools":[{"name":"a","inputSchema":{}}]}"#).unwrap();
        assert_eq!(UpstreamServer::load(&path).unwrap().0.tools.len(), 1);
        // One bad tool is left out, and said why; the others stay.
        std::fs::write(
            &path,
            r#"[{"name":"a","inputSchema":1},{"description":"no name"},{"name":"b","inputSchema":{}}]"#,
        )
        .unwrap();
        let (server, problems) = UpstreamServer::load(&path).unwrap();
        assert_eq!(server.tools.iter().map(|t| t.name.as_str()).collect::<Vec<_>>(), ["b"]);
        assert!(problems[0].contains("`a`: its inputSchema is not a JSON object"), "{problems:?}");
        assert!(problems[1].contains("tool #1") && problems[1].contains("name"), "{problems:?}");
        std::fs::write(&path, r#"{"not":"a list"}"#).unwrap();
        assert_eq!(UpstreamServer::load(&path).unwrap_err().kind(), crate::error::ErrorKind::InvalidMcpList);
    }
}
