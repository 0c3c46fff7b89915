//! What a component asks to be granted: a Wassette-style policy file
//! shipped beside it (`NAME.policy.yaml` beside `NAME.wasm`).
//!
//! A request, never a grant. Only the configuration grants (`[plugins.NAME]`:
//! `folders`, `allow_http`, `config`); the request is shown to the
//! operator next to what the configuration gives (`quiver check`,
//! `/v1/status`), so a component's needs are read before it is trusted
//! with them.
//!
//! The subset read, each entry checked against what it may be:
//! `permissions.storage.allow[].uri` (`fs://PATH`, with `access` of
//! `read` and `write`), `permissions.network.allow[].host` (a host name,
//! `*.` in front for its subdomains) and
//! `permissions.environment.allow[].key` (a variable's name). Everything
//! else (`deny` lists, `cidr` ranges, other sections, an entry that is
//! not what it should be) is named in [`Requests::unread`]. A file that
//! is not YAML of that shape is a [`Requests::problem`], never a refused
//! component.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::Serialize;
use serde::de::{Deserialize, IgnoredAny};

use crate::contract::{Shape, sanitize_cut};
use crate::sandbox::Grants;

/// Largest policy file read.
pub const MAX_POLICY_BYTES: u64 = 64 << 10;
/// Most entries read from one file; the rest are unread.
pub const MAX_REQUESTS: usize = 128;
/// Most unread parts named; the rest are counted.
pub const MAX_UNREAD: usize = 32;
/// Longest text kept of one entry (a path, a host, a name).
const MAX_TEXT: usize = 256;

/// What a policy file asks for.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Requests {
    /// The file's name.
    pub file: String,
    pub asks: Vec<Ask>,
    /// The parts of the file not read, each named with why.
    pub unread: Vec<String>,
    /// Why the file could not be read at all, when it could not.
    pub problem: Option<String>,
}

/// One thing asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ask {
    /// A path to read (and, if `write`, to write: never granted).
    Storage { path: String, write: bool },
    /// HTTP to a host (`*.example.com`: any of its subdomains).
    Network { host: String },
    /// An environment variable.
    Environment { key: String },
}

/// What the file says, as far as it is read.
#[derive(serde::Deserialize, Default)]
#[serde(default)]
struct PolicyFile {
    version: Option<IgnoredAny>,
    description: Option<IgnoredAny>,
    permissions: Permissions,
    #[serde(flatten)]
    rest: BTreeMap<String, IgnoredAny>,
}

#[derive(serde::Deserialize, Default)]
#[serde(default)]
struct Permissions {
    storage: Section<StorageRule>,
    network: Section<NetworkRule>,
    environment: Section<EnvironmentRule>,
    #[serde(flatten)]
    rest: BTreeMap<String, IgnoredAny>,
}

#[derive(serde::Deserialize)]
#[serde(default, bound(deserialize = "T: serde::de::DeserializeOwned"))]
struct Section<T> {
    allow: Vec<Entry<T>>,
    #[serde(flatten)]
    rest: BTreeMap<String, IgnoredAny>,
}

impl<T> Default for Section<T> {
    fn default() -> Self {
        Section { allow: Vec::new(), rest: BTreeMap::new() }
    }
}

/// An entry of an `allow` list: the rule, or why it is not one.
enum Entry<T> {
    Rule(T),
    NotRead,
}

impl<'de, T: serde::de::DeserializeOwned> Deserialize<'de> for Entry<T> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = serde_json::Value::deserialize(deserializer)?;
        Ok(serde_json::from_value(value).map(Entry::Rule).unwrap_or(Entry::NotRead))
    }
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct StorageRule {
    uri: String,
    #[serde(default)]
    access: Vec<String>,
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct NetworkRule {
    host: String,
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct EnvironmentRule {
    key: String,
}

impl Requests {
    /// Read the policy file `text` (see the module for the subset).
    pub fn parse(text: &str) -> Requests {
        let mut options = serde_saphyr::Options::default();
        // An error names where, never what: the text could be anything a
        // link made it (the reader refuses links out of the folder too).
        options.with_snippet = false;
        let mut budget = serde_saphyr::Budget::default();
        budget.max_depth = 16;
        budget.max_nodes = 20_000;
        budget.max_documents = 1;
        budget.max_aliases = 0;
        budget.max_anchors = 0;
        options.budget = Some(budget);
        let file: PolicyFile = match serde_saphyr::from_str_with_options(text, options) {
            Ok(file) => file,
            Err(e) => {
                let at =
                    e.location().map(|l| format!(" (line {}, column {})", l.line(), l.column())).unwrap_or_default();
                let problem = format!("not YAML of a policy file's shape{at}");
                return Requests { problem: Some(problem), ..Requests::default() };
            }
        };
        let _ = (file.version, file.description);
        let mut read = Requests::default();
        let named = |at: &str, key: &str| sanitize_cut(&format!("{at}{key}"), Shape::Line, MAX_TEXT);
        read.unread.extend(file.rest.keys().map(|k| named("", k)));
        let p = file.permissions;
        read.unread.extend(p.rest.keys().map(|k| named("permissions.", k)));
        read.unread.extend(p.storage.rest.keys().map(|k| named("permissions.storage.", k)));
        read.unread.extend(p.network.rest.keys().map(|k| named("permissions.network.", k)));
        read.unread.extend(p.environment.rest.keys().map(|k| named("permissions.environment.", k)));
        for (i, entry) in p.storage.allow.into_iter().enumerate() {
            let at = format!("permissions.storage.allow[{i}]");
            match entry {
                Entry::Rule(rule) => read.add(at, storage(&rule)),
                Entry::NotRead => read.add(at, Err("not a `uri` with an `access` list")),
            }
        }
        for (i, entry) in p.network.allow.into_iter().enumerate() {
            let at = format!("permissions.network.allow[{i}]");
            match entry {
                Entry::Rule(rule) => read.add(at, network(&rule.host)),
                Entry::NotRead => {
                    read.add(at, Err("not a `host` (address ranges are not granted: HTTP is granted by destination)"))
                }
            }
        }
        for (i, entry) in p.environment.allow.into_iter().enumerate() {
            let at = format!("permissions.environment.allow[{i}]");
            match entry {
                Entry::Rule(rule) => read.add(at, environment(&rule.key)),
                Entry::NotRead => read.add(at, Err("not a `key`")),
            }
        }
        if read.unread.len() > MAX_UNREAD {
            let more = read.unread.len() - MAX_UNREAD;
            read.unread.truncate(MAX_UNREAD);
            read.unread.push(format!("and {more} more"));
        }
        read
    }

    fn add(&mut self, at: String, ask: Result<Ask, &str>) {
        match ask {
            Ok(_) if self.asks.len() >= MAX_REQUESTS => self.unread.push(format!("{at}: past {MAX_REQUESTS} entries")),
            Ok(ask) if !self.asks.contains(&ask) => self.asks.push(ask),
            Ok(_) => {}
            Err(why) => self.unread.push(format!("{at}: {why}")),
        }
    }

    /// What is asked next to what `grants` give of it; `http` says
    /// whether the component can use HTTP at all (it imports `wasi:http`).
    pub fn status(&self, grants: &Grants, http: bool) -> RequestsStatus {
        RequestsStatus {
            file: self.file.clone(),
            asks: self.against(grants, http),
            unread: self.unread.clone(),
            problem: self.problem.clone(),
        }
    }

    fn against(&self, grants: &Grants, http: bool) -> Vec<AskStatus> {
        self.asks
            .iter()
            .map(|ask| {
                let (kind, what, write, granted): (_, _, _, Vec<String>) = match ask {
                    Ask::Storage { path, write } => {
                        let folders = grants.wasi.folders.iter().map(|(_, guest)| guest);
                        (AskKind::Storage, path, *write, folders.filter(|guest| within(path, guest)).cloned().collect())
                    }
                    Ask::Network { host } => {
                        let allowed = grants.http.allowed().iter().filter(|a| http && host_matches(host, a.host()));
                        (AskKind::Network, host, false, allowed.map(|a| a.to_string()).collect())
                    }
                    Ask::Environment { key } => {
                        let set = grants.wasi.environment.iter().filter(|(k, _)| k == key);
                        (AskKind::Environment, key, false, set.map(|(k, _)| k.clone()).collect())
                    }
                };
                let complete = !granted.is_empty() && !write && !what.starts_with("*.");
                AskStatus { kind, what: what.clone(), write, granted, complete }
            })
            .collect()
    }
}

/// `fs://PATH` with `read` and maybe `write` access; a trailing `/**` or
/// `/*` is the folder itself.
fn storage(rule: &StorageRule) -> Result<Ask, &'static str> {
    let path = rule.uri.strip_prefix("fs://").ok_or("a storage `uri` starts with `fs://`")?;
    let path = path.strip_suffix("/**").or_else(|| path.strip_suffix("/*")).unwrap_or(path);
    // `fs:///**` asks for everything: the root, shown as such.
    let path = if path.is_empty() { "/" } else { path };
    let path = if path.len() > 1 { path.trim_end_matches('/') } else { path };
    if !path.starts_with('/') || path.split('/').any(|part| part == "..") {
        return Err("a storage path is absolute with no `..` (the component sees no working folder)");
    }
    // Letters, digits and `/._-~+@` only: a path is shown, and quoted in
    // the setting `quiver check` suggests, where a quote or a brace would
    // write a grant of its own.
    let allowed = |c: char| c.is_ascii_alphanumeric() || "/._-~+@".contains(c);
    if !path.chars().all(allowed) || path.len() > MAX_TEXT {
        return Err("a storage path is letters, digits and `/._-~+@`, at most 256 bytes");
    }
    let mut write = false;
    for access in &rule.access {
        match access.as_str() {
            "read" => {}
            "write" => write = true,
            _ => return Err("`access` lists `read` and `write` only"),
        }
    }
    Ok(Ask::Storage { path: path.to_owned(), write })
}

/// A host name of letters, digits, `-` and `.`, maybe with `*.` in front.
fn network(host: &str) -> Result<Ask, &'static str> {
    let name = host.strip_prefix("*.").unwrap_or(host);
    let valid = !name.is_empty()
        && name.len() <= 253
        && name.split('.').all(|label| {
            !label.is_empty() && label.len() <= 63 && label.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
        });
    if !valid {
        return Err("a `host` is a host name (`*.` in front for its subdomains)");
    }
    Ok(Ask::Network { host: host.to_ascii_lowercase() })
}

/// A variable name: a letter or `_`, then letters, digits and `_`.
fn environment(key: &str) -> Result<Ask, &'static str> {
    let mut chars = key.chars();
    let valid = chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
        && key.len() <= MAX_TEXT;
    if !valid {
        return Err("a `key` is a variable's name (letters, digits and `_`)");
    }
    Ok(Ask::Environment { key: key.to_owned() })
}

/// Whether `path` is `folder` or inside it.
fn within(path: &str, folder: &str) -> bool {
    let folder = folder.trim_end_matches('/');
    path == folder || folder.is_empty() || path.strip_prefix(folder).is_some_and(|rest| rest.starts_with('/'))
}

/// Whether the granted host `granted` is what `asked` names.
fn host_matches(asked: &str, granted: &str) -> bool {
    match asked.strip_prefix("*.") {
        Some(domain) => {
            granted.len() > domain.len() + 1
                && granted.to_ascii_lowercase().ends_with(domain)
                && granted.as_bytes()[granted.len() - domain.len() - 1] == b'.'
        }
        None => granted.eq_ignore_ascii_case(asked),
    }
}

/// What a component's policy file asks for, and what the configuration
/// grants of it.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct RequestsStatus {
    /// The policy file.
    pub file: String,
    /// Each thing asked for.
    pub asks: Vec<AskStatus>,
    /// The parts of the file not read, with why.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub unread: Vec<String>,
    /// Why the file could not be read, when it could not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub problem: Option<String>,
}

/// One thing asked for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct AskStatus {
    /// What kind of thing it is.
    pub kind: AskKind,
    /// A path as the component would see it, a host name, a variable's name.
    pub what: String,
    /// Whether it asks to write too (never granted: folders are read-only).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub write: bool,
    /// What the configuration grants of it: the folder that holds the
    /// path (as the component sees it), the HTTP destinations, the
    /// variable. Empty: not granted.
    pub granted: Vec<String>,
    /// Whether that is all it asks for. Not when it asks to write (a
    /// folder is only ever read), nor for a wildcard host (`allow_http`
    /// names hosts, so some subdomain is always left out).
    pub complete: bool,
}

/// What kind of thing is asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum AskKind {
    /// A path to read (a folder the configuration opens).
    Storage,
    /// HTTP to a host (the configuration's `allow_http`).
    Network,
    /// An environment variable (the configuration's `config`).
    Environment,
}

impl std::fmt::Display for AskKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            AskKind::Storage => "storage",
            AskKind::Network => "network",
            AskKind::Environment => "environment",
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::contract::sanitize;
    use crate::sandbox::WasiGrant;
    use crate::sandbox::http::HttpGrant;

    const WASSETTE: &str = r#"
version: "1.0"
description: "Reads notes, fetches pages"
permissions:
  storage:
    allow:
      - uri: "fs:///data/notes/**"
        access: ["read"]
      - uri: "fs:///scratch"
        access: ["read", "write"]
    deny:
      - uri: "fs:///etc/**"
  network:
    allow:
      - host: "api.github.com"
      - host: "*.example.com"
      - cidr: "10.0.0.0/8"
  environment:
    allow:
      - key: "API_KEY"
      - key: "GREETING"
  runtime:
    docker: {}
"#;

    #[test]
    fn the_wassette_subset_is_read_and_the_rest_named() {
        let read = Requests::parse(WASSETTE);
        assert_eq!(read.problem, None);
        assert_eq!(
            read.asks,
            [
                Ask::Storage { path: "/data/notes".into(), write: false },
                Ask::Storage { path: "/scratch".into(), write: true },
                Ask::Network { host: "api.github.com".into() },
                Ask::Network { host: "*.example.com".into() },
                Ask::Environment { key: "API_KEY".into() },
                Ask::Environment { key: "GREETING".into() },
            ]
        );
        assert_eq!(
            read.unread,
            [
                "permissions.runtime",
                "permissions.storage.deny",
                "permissions.network.allow[2]: not a `host` (address ranges are not granted: HTTP is granted by \
                 destination)",
            ]
        );
    }

    #[test]
    fn only_what_may_be_asked_is_read() {
        let text = r#"
permissions:
  storage:
    allow:
      - uri: "fs://workspace/**"
      - uri: "fs:///data/../etc"
      - uri: "https://example.com"
      - uri: "fs:///ok"
        access: ["execute"]
      - uri: "fs:///bidi/\u202Eevil"
      - uri: 'fs:///x" = "/", "/y'
      - uri: "fs:///**"
  network:
    allow:
      - host: "evil.com/path"
      - host: "a..b"
      - host: "EXAMPLE.org"
  environment:
    allow:
      - key: "1BAD"
      - key: "A=B"
      - { key: "OK", extra: 1 }
"#;
        let read = Requests::parse(text);
        let asks = [Ask::Storage { path: "/".into(), write: false }, Ask::Network { host: "example.org".into() }];
        assert_eq!(read.asks, asks, "{:?}", read.unread);
        // A quote would write a grant of its own into the suggested setting.
        assert!(
            read.unread.contains(
                &"permissions.storage.allow[5]: a storage path is letters, digits and `/._-~+@`, at most 256 bytes"
                    .to_owned()
            ),
            "{:?}",
            read.unread
        );
        assert_eq!(read.unread.len(), 11, "{:?}", read.unread);
        assert!(read.unread.iter().all(|u| sanitize(u, Shape::Line) == u.as_str()), "{:?}", read.unread);
    }

    #[test]
    fn what_is_not_a_policy_is_a_problem_never_a_panic() {
        for text in [
            "- a list",
            "permissions: 3",
            "a: &x [1]\nb: *x",
            &"[".repeat(100),
            "---\na: 1\n---\nb: 2",
            "permissions:\n  storage:\n    allow: 5",
        ] {
            let read = Requests::parse(text);
            assert!(
                read.problem.as_deref().is_some_and(|p| p.starts_with("not YAML of a policy file's shape")),
                "{text:?}: {read:?}"
            );
            assert!(read.asks.is_empty());
        }
        // An error says where, never what the file holds (it may be
        // anything: a secret, a host's own file).
        let read = Requests::parse("permissions: \"API_TOKEN=s3cr3t\"\n");
        assert!(!read.problem.as_deref().unwrap().contains("s3cr3t"), "{read:?}");
        // Many unread keys are counted, not listed.
        let many: String = (0..500).map(|i| format!("k{i}: 1\n")).collect();
        let read = Requests::parse(&many);
        assert_eq!(read.unread.len(), MAX_UNREAD + 1);
        assert_eq!(read.unread.last().unwrap(), &format!("and {} more", 500 - MAX_UNREAD));
    }

    #[test]
    fn each_ask_is_shown_with_what_the_configuration_grants() {
        let read = Requests::parse(WASSETTE);
        let grants = Grants {
            wasi: WasiGrant {
                folders: vec![("/srv/data".into(), "/data".into()), ("/srv/scratch".into(), "/scratch".into())],
                environment: vec![("GREETING".into(), "hi".into())],
            },
            http: HttpGrant::parse(&["https://api.github.com".into(), "https://docs.example.com".into()]).unwrap(),
            ..Grants::default()
        };
        let granted =
            |status: &RequestsStatus| -> Vec<Vec<String>> { status.asks.iter().map(|a| a.granted.clone()).collect() };
        let with_http = read.status(&grants, true);
        assert_eq!(
            granted(&with_http),
            [
                vec!["/data".to_owned()],
                vec!["/scratch".to_owned()],
                vec!["https://api.github.com:443".to_owned()],
                vec!["https://docs.example.com:443".to_owned()],
                vec![],
                vec!["GREETING".to_owned()],
            ]
        );
        assert!(with_http.asks[1].write);
        // Read access to a folder asked to be written, and one subdomain of
        // a wildcard, are not all that was asked for.
        let complete: Vec<bool> = with_http.asks.iter().map(|a| a.complete).collect();
        assert_eq!(complete, [true, false, true, false, false, true]);
        // A component that does not import wasi:http has no use for a destination.
        let without = read.status(&grants, false);
        assert!(without.asks[2].granted.is_empty() && without.asks[3].granted.is_empty());
        assert!(!host_matches("*.example.com", "example.com") && !host_matches("*.example.com", "badexample.com"));
        assert!(!within("/data-other", "/data") && within("/data/x", "/data/"));
    }
}
