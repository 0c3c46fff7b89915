//! The disk cache of each server's tool list and purpose, so that Tier 1
//! needs no connection: `<cache>/mcp/<server>-<key>.json`, where the key is
//! a digest of the server's entry (a changed entry is a different file).
//! A cache that cannot be read is treated as absent: the server is listed
//! again.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::spec::ServerSpec;
use crate::catalog::{Listing, mcp::parse_tools};

/// Largest cache file read back.
const MAX_CACHE_BYTES: u64 = 16 << 20;

#[derive(Serialize)]
struct Written<'a> {
    server: &'a str,
    tools: &'a [crate::catalog::UpstreamTool],
    #[serde(skip_serializing_if = "Option::is_none")]
    purpose: Option<&'a str>,
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    left_out: &'a [String],
}

#[derive(Deserialize)]
struct Read {
    tools: Vec<Value>,
    purpose: Option<String>,
    #[serde(default)]
    left_out: Vec<String>,
}

/// The cache file of `spec` under `dir`.
pub(crate) fn path(dir: &Path, spec: &ServerSpec) -> PathBuf {
    dir.join(format!("{}-{}.json", spec.name, spec.key))
}

/// The cached listing at `path`, if there is a readable one.
pub(crate) fn read(path: &Path) -> Option<Listing> {
    let size = std::fs::metadata(path).ok()?.len();
    if size > MAX_CACHE_BYTES {
        tracing::warn!(path = %path.display(), size, "ignoring an MCP tool-list cache over 16 MiB");
        return None;
    }
    let text = std::fs::read_to_string(path).ok()?;
    let parsed = serde_json::from_str::<Read>(&text).map_err(|e| e.to_string());
    match parsed.and_then(|read| match parse_tools(read.tools) {
        (tools, problems) if problems.is_empty() => Ok((tools, read.purpose, read.left_out)),
        (_, problems) => Err(problems.join("; ")),
    }) {
        Ok((tools, purpose, left_out)) => Some(Listing {
            tools: Some(tools),
            purpose: purpose.map(|p| crate::contract::one_line(&p, 200)),
            failure: None,
            left_out: left_out.iter().map(|p| crate::catalog::shown::shown(p)).collect(),
        }),
        Err(reason) => {
            tracing::warn!(path = %path.display(), %reason, "ignoring an unreadable MCP tool-list cache");
            None
        }
    }
}

/// Write `listing` to `path` (through a temporary file, so a reader never
/// sees half of it). A failure is logged: the cache is an optimisation.
pub(crate) fn write(path: &Path, server: &str, listing: &Listing) {
    let Some(tools) = &listing.tools else { return };
    let written = Written { server, tools, purpose: listing.purpose.as_deref(), left_out: &listing.left_out };
    let result = (|| -> std::io::Result<()> {
        std::fs::create_dir_all(path.parent().unwrap_or(Path::new(".")))?;
        let temporary = path.with_extension(format!("json.{}.tmp", std::process::id()));
        std::fs::write(&temporary, serde_json::to_vec(&written)?)?;
        std::fs::rename(&temporary, path)
    })();
    if let Err(error) = result {
        tracing::warn!(path = %path.display(), %error, "cannot write the MCP tool-list cache");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::UpstreamTool;

    #[test]
    fn a_written_listing_reads_back_and_a_broken_one_is_absent() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("mcp").join("s-01.json");
        let tool = UpstreamTool {
            name: "echo".into(),
            description: "Echo".into(),
            input_schema: serde_json::json!({"type": "object"}),
            annotations: None,
            title: None,
            output_schema: None,
        };
        let listing = Listing {
            tools: Some(vec![tool]),
            purpose: Some("Echoes.".into()),
            failure: None,
            left_out: vec!["tool #1: the name is empty".into()],
        };
        write(&file, "s", &listing);
        assert_eq!(read(&file), Some(listing));
        std::fs::write(&file, "{not json").unwrap();
        assert_eq!(read(&file), None);
        assert_eq!(read(&dir.path().join("absent.json")), None);
    }
}
