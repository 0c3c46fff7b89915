//! Upstream MCP servers as catalog entries, from saved `tools/list` results.
//!
//! (Upstream: a server Quiver is a client of. Quiver's own MCP server is
//! [`faces::mcp`](crate::faces::mcp).) A folder of `<server>.json` files,
//! each the `tools` array a server returned (or an object with a `tools`
//! field), becomes one read-only server per file: searchable, countable and
//! discoverable through the `mcp` meta-tool, but not callable (no client
//! connection is made). `_meta` and `icons` are dropped, as a client would
//! drop them before showing tools to a model.

use std::path::{Path, PathBuf};

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
    /// Its name (the file stem).
    pub name: String,
    /// Its tools, in the order the server listed them.
    pub tools: Vec<UpstreamTool>,
    /// Where it was read from.
    pub origin: PathBuf,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum ToolsList {
    Bare(Vec<Value>),
    Result { tools: Vec<Value> },
}

impl UpstreamTool {
    /// Its access level, from its annotations and MCP's defaults (a tool is
    /// not read-only and is destructive unless it says otherwise).
    pub fn access(&self) -> Access {
        let hint = |key: &str| self.annotations.as_ref().and_then(|a| a.get(key)).and_then(Value::as_bool);
        if hint("readOnlyHint") == Some(true) {
            Access::Read
        } else if hint("destructiveHint") == Some(false) {
            Access::Write
        } else {
            Access::Admin
        }
    }
}

impl UpstreamServer {
    /// Read one saved `tools/list` result.
    pub fn load(path: &Path) -> Result<UpstreamServer> {
        let invalid = |reason: String| Error::InvalidMcpList { path: path.display().to_string(), reason };
        let text = std::fs::read_to_string(path)
            .map_err(|e| Error::Io { path: path.display().to_string(), message: e.to_string() })?;
        let list: ToolsList = serde_json::from_str(&text).map_err(|e| {
            invalid(format!("not a tools/list result (a JSON array of tools, or {{\"tools\": [...]}}): {e}"))
        })?;
        let raw = match list {
            ToolsList::Bare(tools) | ToolsList::Result { tools } => tools,
        };
        let mut tools = Vec::with_capacity(raw.len());
        for (i, mut tool) in raw.into_iter().enumerate() {
            if let Some(object) = tool.as_object_mut() {
                object.remove("_meta");
                object.remove("icons");
            }
            let tool: UpstreamTool = serde_json::from_value(tool).map_err(|e| invalid(format!("tool #{i}: {e}")))?;
            if !tool.input_schema.is_object() {
                return Err(invalid(format!("tool #{i}: its inputSchema is not a JSON object")));
            }
            tools.push(tool);
        }
        let name = path.file_stem().and_then(|s| s.to_str()).unwrap_or("server").to_owned();
        Ok(UpstreamServer { name, tools, origin: path.to_owned() })
    }

    /// The tool called `name`.
    pub fn tool(&self, name: &str) -> Option<&UpstreamTool> {
        self.tools.iter().find(|t| t.name == name)
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
        let server = UpstreamServer::load(&path).unwrap();
        assert_eq!(server.name, "time");
        assert_eq!(server.tools[0].name, "now");
        let shown = serde_json::to_value(&server.tools[0]).unwrap();
        assert!(shown.get("_meta").is_none() && shown.get("icons").is_none());

        std::fs::write(&path, r#"{"tools":[{"name":"a","inputSchema":{}}]}"#).unwrap();
        assert_eq!(UpstreamServer::load(&path).unwrap().tools.len(), 1);
        std::fs::write(&path, r#"[{"name":"a","inputSchema":1}]"#).unwrap();
        assert_eq!(UpstreamServer::load(&path).unwrap_err().kind(), crate::error::ErrorKind::InvalidMcpList);
        std::fs::write(&path, r#"{"not":"a list"}"#).unwrap();
        assert_eq!(UpstreamServer::load(&path).unwrap_err().kind(), crate::error::ErrorKind::InvalidMcpList);
    }
}
