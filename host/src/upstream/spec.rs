//! A configured upstream server: the `mcpServers` entry users already have
//! (Claude Desktop, Cursor), read unchanged, plus Quiver's own keys.
//!
//! ```json
//! {"mcpServers": {
//!   "files": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/srv"]},
//!   "ledger": {"url": "https://ledger.example/mcp", "headers": {"Authorization": "Bearer ${env:LEDGER_TOKEN}"}}
//! }}
//! ```
//!
//! Header and environment values may name secrets, `${env:NAME}` or
//! `${file:PATH}`, resolved once at start-up; the values are secrets from
//! then on (redacted from the audit log and from server stderr in the log).
//! A stdio server's environment is the configured `env` over a short list
//! of the host's variables (`PATH`, `HOME`, locale): never the host's
//! whole environment, which holds other servers' credentials.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::error::{Error, Result};
use crate::sandbox::secrets::Secret;

/// One `mcpServers` entry as written.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RawServer {
    /// The program of a stdio server.
    pub command: Option<String>,
    /// Its arguments.
    #[serde(default)]
    pub args: Vec<String>,
    /// Environment variables it gets (values may be secret references).
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// Its working directory.
    pub cwd: Option<PathBuf>,
    /// The endpoint of a streamable HTTP server.
    pub url: Option<String>,
    /// Headers sent with every request (values may be secret references).
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// `stdio`, `http` or `streamable-http` (other clients' key; inferred
    /// when absent).
    #[serde(rename = "type")]
    pub transport: Option<String>,
    /// What it is for, in one line (shown in Tier 1).
    pub description: Option<String>,
    /// Whether to leave it out.
    pub disabled: Option<bool>,
    /// Seconds one call may take (default 60).
    pub timeout: Option<f64>,
    /// Seconds without calls before a connection is closed (default 300).
    pub idle_timeout: Option<f64>,
    /// Most KiB of one result a model gets (default [`DEFAULT_ANSWER_KB`]);
    /// a larger one is cut to fit, with notes on what was left out.
    pub max_answer_kb: Option<u64>,
    /// Keys other clients use (`alwaysAllow`, `autoApprove`, ...): ignored.
    #[serde(flatten, skip_serializing)]
    pub other: BTreeMap<String, serde_json::Value>,
}

/// A file in the shape other clients use: `{"mcpServers": {...}}`.
#[derive(Debug, Deserialize)]
struct ServersFile {
    #[serde(rename = "mcpServers", alias = "mcp_servers", alias = "servers")]
    servers: BTreeMap<String, RawServer>,
}

/// Read an `mcpServers` JSON file (`--mcp-config`).
pub fn read_file(path: &Path) -> Result<BTreeMap<String, RawServer>> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| Error::Io { path: path.display().to_string(), message: e.to_string() })?;
    let file: ServersFile = serde_json::from_str(&text).map_err(|e| {
        Error::config(
            path.display().to_string(),
            format!("not an `mcpServers` file ({{\"mcpServers\": {{...}}}}): {e}"),
        )
    })?;
    Ok(file.servers)
}

/// How to reach a server.
#[derive(Debug, Clone, PartialEq)]
pub enum Launch {
    /// Spawn a program and speak MCP on its stdin/stdout.
    Stdio {
        /// The program.
        command: String,
        /// Its arguments.
        args: Vec<String>,
        /// Its environment (resolved).
        env: BTreeMap<String, String>,
        /// Its working directory.
        cwd: Option<PathBuf>,
    },
    /// Streamable HTTP at a URL.
    Http {
        /// The endpoint.
        url: String,
        /// Headers (resolved).
        headers: BTreeMap<String, String>,
    },
}

/// A configured server, resolved.
#[derive(Debug, Clone)]
pub struct ServerSpec {
    /// Its name (the model sees it).
    pub name: String,
    /// How to reach it.
    pub launch: Launch,
    /// The operator's description.
    pub description: Option<String>,
    /// Longest a call may take.
    pub call_timeout: Duration,
    /// Idle time after which the connection is closed.
    pub idle_timeout: Duration,
    /// Most bytes of one result (its JSON) passed on.
    pub answer_budget: usize,
    /// A digest of the entry as written: its disk cache is valid while this
    /// does not change (secret values are not part of it, their names are).
    pub key: String,
    /// The secret values it was given, to keep out of logs.
    pub secrets: Vec<Secret>,
}

/// Default longest call.
const CALL_TIMEOUT: Duration = Duration::from_secs(60);
/// Default idle time before a connection is closed.
const IDLE_TIMEOUT: Duration = Duration::from_secs(300);
/// Default answer budget of an upstream server, in KiB: four times a
/// connector's (tool results of MCP servers are often file contents or
/// pages), and below what MCP clients themselves cut at (Claude Code: 25,000
/// tokens).
pub const DEFAULT_ANSWER_KB: u64 = 64;
/// Largest answer budget that may be configured, in KiB (rmcp's own limit
/// on one message is 16 MiB).
const MAX_ANSWER_KB: u64 = 16 << 10;

impl ServerSpec {
    /// Resolve `raw`, the entry called `name`; relative paths (`cwd`,
    /// `${file:...}`) against `base`. `None`: it is disabled.
    pub fn resolve(name: &str, raw: &RawServer, base: &Path) -> Result<Option<ServerSpec>> {
        let at = format!("[mcp_servers.{name}]");
        let bad = |message: String| Error::config(at.clone(), message);
        if raw.disabled == Some(true) {
            return Ok(None);
        }
        if !crate::catalog::names::is_valid(name) || name.contains(crate::contract::NAME_SEPARATOR) {
            return Err(bad("a server name is 1-64 letters, digits, `_` or `-`, without `__`".into()));
        }
        if !raw.other.is_empty() {
            let keys: Vec<&str> = raw.other.keys().map(String::as_str).collect();
            tracing::info!(server = name, keys = ?keys, "ignoring keys Quiver does not use");
        }
        let mut secrets = Vec::new();
        let mut resolve_all = |values: &BTreeMap<String, String>, what: &str| -> Result<BTreeMap<String, String>> {
            values
                .iter()
                .map(|(k, v)| {
                    let value = interpolate(v, base, &format!("{at} {what} `{k}`"), &mut secrets)?;
                    Ok((k.clone(), value))
                })
                .collect()
        };
        let transport = raw.transport.as_deref().map(str::to_ascii_lowercase);
        let launch = match (&raw.command, &raw.url, transport.as_deref()) {
            (_, _, Some("sse")) => {
                return Err(bad("the HTTP+SSE transport is deprecated and not supported; use streamable HTTP".into()));
            }
            (Some(command), None, None | Some("stdio")) => Launch::Stdio {
                command: command.clone(),
                args: raw.args.clone(),
                env: resolve_all(&raw.env, "env")?,
                cwd: raw.cwd.as_ref().map(|c| base.join(c)),
            },
            (None, Some(url), None | Some("http" | "streamable-http" | "streamablehttp")) => {
                let parsed: http::Uri = url.parse().map_err(|e| bad(format!("url `{url}`: {e}")))?;
                if !matches!(parsed.scheme_str(), Some("http" | "https")) {
                    return Err(bad(format!("url `{url}`: only http and https are supported")));
                }
                Launch::Http { url: url.clone(), headers: resolve_all(&raw.headers, "header")? }
            }
            (Some(_), Some(_), _) => return Err(bad("give either `command` (stdio) or `url` (HTTP), not both".into())),
            (None, None, _) => return Err(bad("give `command` (a stdio server) or `url` (streamable HTTP)".into())),
            (_, _, Some(other)) => return Err(bad(format!("`type = \"{other}\"` does not fit the entry"))),
        };
        let seconds = |value: Option<f64>, key: &str, default: Duration| match value {
            None => Ok(default),
            Some(s) if s.is_finite() && s > 0.0 && s <= 86_400.0 => Ok(Duration::from_secs_f64(s)),
            Some(s) => Err(bad(format!("`{key}` is {s}; give seconds between 0 and 86400"))),
        };
        let key = {
            let mut keyed = raw.clone();
            (keyed.description, keyed.timeout, keyed.idle_timeout, keyed.max_answer_kb) = (None, None, None, None);
            let text = serde_json::to_string(&keyed).map_err(|e| Error::internal("mcp server key", e))?;
            hex::encode(&Sha256::digest(text.as_bytes())[..8])
        };
        Ok(Some(ServerSpec {
            name: name.to_owned(),
            launch,
            description: raw.description.as_deref().map(|d| crate::contract::one_line(d, 200)),
            call_timeout: seconds(raw.timeout, "timeout", CALL_TIMEOUT)?,
            idle_timeout: seconds(raw.idle_timeout, "idle_timeout", IDLE_TIMEOUT)?,
            answer_budget: match raw.max_answer_kb {
                None => (DEFAULT_ANSWER_KB << 10) as usize,
                Some(kb) if (1..=MAX_ANSWER_KB).contains(&kb) => (kb << 10) as usize,
                Some(kb) => {
                    return Err(bad(format!("`max_answer_kb` is {kb}; give KiB between 1 and {MAX_ANSWER_KB}")));
                }
            },
            key,
            secrets,
        }))
    }

    /// Where it is described in logs and errors.
    pub fn endpoint(&self) -> String {
        match &self.launch {
            Launch::Stdio { command, .. } => format!("`{command}` (stdio)"),
            Launch::Http { url, .. } => format!("{url} (streamable HTTP)"),
        }
    }
}

/// `value` with every `${env:NAME}` and `${file:PATH}` replaced; the
/// values put in are pushed to `secrets`. `at` names the value in errors.
fn interpolate(value: &str, base: &Path, at: &str, secrets: &mut Vec<Secret>) -> Result<String> {
    let mut out = String::with_capacity(value.len());
    let mut rest = value;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let end = after.find('}').ok_or_else(|| Error::config(at, "a `${` without its `}`"))?;
        let reference = &after[..end];
        let secret = match reference.split_once(':') {
            Some(("env", var)) => Secret::from_env(var, at)?,
            Some(("file", path)) => Secret::from_file(&base.join(path), at)?,
            _ => {
                let message = format!("`${{{reference}}}`: use `${{env:NAME}}` or `${{file:PATH}}`");
                return Err(Error::config(at, message));
            }
        };
        out.push_str(secret.expose());
        if !secret.expose().is_empty() {
            secrets.push(secret);
        }
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(json: &str) -> RawServer {
        serde_json::from_str(json).unwrap()
    }

    #[test]
    fn reads_the_shape_other_clients_write() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("token"), "s3cret\n").unwrap();
        let stdio =
            raw(r#"{"command": "npx", "args": ["-y", "x"], "env": {"TOKEN": "${file:token}"}, "alwaysAllow": []}"#);
        let spec = ServerSpec::resolve("files", &stdio, dir.path()).unwrap().unwrap();
        let Launch::Stdio { env, .. } = &spec.launch else { panic!("{spec:?}") };
        assert_eq!(env["TOKEN"], "s3cret");
        assert_eq!(spec.secrets, [Secret::new("s3cret".into())]);
        assert_eq!(spec.call_timeout, CALL_TIMEOUT);

        let http = raw(r#"{"url": "http://127.0.0.1:1/mcp", "headers": {"X-Key": "k-${file:token}"}, "timeout": 2}"#);
        let spec = ServerSpec::resolve("ledger", &http, dir.path()).unwrap().unwrap();
        assert!(matches!(&spec.launch, Launch::Http { headers, .. } if headers["X-Key"] == "k-s3cret"));
        assert_eq!(spec.call_timeout, Duration::from_secs(2));
        assert!(
            ServerSpec::resolve("off", &raw(r#"{"command": "x", "disabled": true}"#), dir.path()).unwrap().is_none()
        );
    }

    #[test]
    fn the_cache_key_follows_the_entry_not_its_secrets_or_description() {
        let base = Path::new(".");
        let key = |json: &str| ServerSpec::resolve("s", &raw(json), base).unwrap().unwrap().key;
        let plain = key(r#"{"command": "a"}"#);
        assert_eq!(plain, key(r#"{"command": "a", "description": "x", "timeout": 5, "max_answer_kb": 8}"#));
        assert_ne!(plain, key(r#"{"command": "a", "args": ["b"]}"#));
    }

    #[test]
    fn refuses_what_cannot_work_with_where_it_is() {
        let base = Path::new(".");
        for (json, says) in [
            (r#"{}"#, "give `command`"),
            (r#"{"command": "a", "url": "http://x"}"#, "not both"),
            (r#"{"url": "http://x", "type": "sse"}"#, "deprecated"),
            (r#"{"url": "ftp://x"}"#, "http and https"),
            (r#"{"command": "a", "env": {"K": "${env:QUIVER_TEST_UNSET_VARIABLE}"}}"#, "is not set"),
            (r#"{"command": "a", "env": {"K": "${vault:x}"}}"#, "use `${env:NAME}`"),
            (r#"{"command": "a", "timeout": -1}"#, "`timeout`"),
            (r#"{"command": "a", "max_answer_kb": 0}"#, "`max_answer_kb`"),
        ] {
            let error = ServerSpec::resolve("s", &raw(json), base).unwrap_err().to_string();
            assert!(error.contains("[mcp_servers.s]") && error.contains(says), "{json}: {error}");
        }
        let error = ServerSpec::resolve("a.b", &raw(r#"{"command": "a"}"#), base).unwrap_err();
        assert!(error.to_string().contains("server name"), "{error}");
    }
}
