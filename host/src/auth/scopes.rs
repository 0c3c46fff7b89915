//! The one scope grammar a token speaks to Quiver in, and what a token's
//! scopes grant:
//!
//! * `quiver:RESOURCE:LEVEL`: up to `LEVEL` (`read` < `write` < `admin`)
//!   on the resource (a plugin instance, a database, an MCP server) named
//!   `RESOURCE`, or on every resource for `*`. A level grants the ones
//!   below it.
//! * `quiver:tool:NAME`: the one tool of that model-facing name, at the
//!   access it declares.
//! * `quiver:metrics:read`: `GET /metrics` (only this scope: `*` names
//!   resources, not the server's own figures).
//!
//! Every other scope (`openid`, a provider's own) grants nothing here and
//! is ignored; a `quiver:` scope that does not parse is ignored too (and
//! counted, so a typo shows in [`Grants::unreadable`]). What is granted is
//! an allow-list: a resource no scope names is out of reach.

use std::collections::{BTreeMap, BTreeSet};

use crate::contract::Access;

/// The prefix of every scope Quiver reads.
pub const PREFIX: &str = "quiver:";

/// The scope that lets a token read `/metrics`.
pub const METRICS: &str = "quiver:metrics:read";

/// What one token's scopes grant.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Grants {
    /// The highest level per named resource.
    resources: BTreeMap<String, Access>,
    /// The level `quiver:*:LEVEL` grants on every resource.
    every: Option<Access>,
    /// Tools granted one by one, by model-facing name.
    tools: BTreeSet<String>,
    /// The `quiver:` scopes that did not parse.
    unreadable: Vec<String>,
    /// The token's scopes as sent (for a step-up challenge).
    sent: Vec<String>,
}

/// One `quiver:` scope.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Scope {
    /// `quiver:RESOURCE:LEVEL` (`*` for every resource).
    Resource(String, Access),
    /// `quiver:tool:NAME`.
    Tool(String),
}

impl Scope {
    /// Read one scope; `None` when it is not a `quiver:` scope or does not
    /// parse.
    pub fn parse(scope: &str) -> Option<Scope> {
        let rest = scope.strip_prefix(PREFIX)?;
        let (head, tail) = rest.split_once(':')?;
        let name_ok = |s: &str| {
            !s.is_empty() && s.len() <= 128 && s.bytes().all(|b| b.is_ascii_alphanumeric() || b"_-.".contains(&b))
        };
        if head == "tool" {
            return name_ok(tail).then(|| Scope::Tool(tail.to_owned()));
        }
        let level = Access::parse(tail)?;
        (head == "*" || name_ok(head)).then(|| Scope::Resource(head.to_owned(), level))
    }

    /// The scope as written.
    pub fn text(&self) -> String {
        match self {
            Scope::Resource(resource, level) => format!("{PREFIX}{resource}:{level}"),
            Scope::Tool(name) => format!("{PREFIX}tool:{name}"),
        }
    }
}

impl Grants {
    /// What `scopes` (each one scope, as split from a `scope` string or
    /// a `scp` array) grant.
    pub fn from_scopes<'a>(scopes: impl IntoIterator<Item = &'a str>) -> Grants {
        let mut grants = Grants::default();
        for scope in scopes {
            let scope = scope.trim();
            if scope.is_empty() || grants.sent.len() >= 256 {
                continue;
            }
            grants.sent.push(scope.to_owned());
            match Scope::parse(scope) {
                Some(Scope::Resource(resource, level)) if resource == "*" => {
                    grants.every = grants.every.max(Some(level));
                }
                Some(Scope::Resource(resource, level)) => {
                    let kept = grants.resources.entry(resource).or_insert(level);
                    *kept = (*kept).max(level);
                }
                Some(Scope::Tool(name)) => {
                    grants.tools.insert(name);
                }
                None if scope.starts_with(PREFIX) => grants.unreadable.push(scope.to_owned()),
                None => {}
            }
        }
        grants
    }

    /// The highest level granted on `resource`, if any.
    pub fn level(&self, resource: &str) -> Option<Access> {
        self.resources.get(resource).copied().max(self.every)
    }

    /// Whether the tool `name` of `resource`, which needs `needed`, may run.
    pub fn allows(&self, name: &str, resource: &str, needed: Access) -> bool {
        self.tools.contains(name) || self.level(resource).is_some_and(|level| level >= needed)
    }

    /// The level `resource` may be used at by the tool `name` that needs
    /// `needed`: the resource's level, raised to `needed` when the tool is
    /// granted by name; `None` when nothing is granted.
    pub fn level_for(&self, name: &str, resource: &str, needed: Access) -> Option<Access> {
        let by_name = self.tools.contains(name).then_some(needed);
        self.level(resource).max(by_name)
    }

    /// Whether any scope names `resource`: a level on it (or on every
    /// resource), or one of its tools by name (`RESOURCE__ACTION`).
    pub fn names(&self, resource: &str) -> bool {
        self.level(resource).is_some()
            || self.tools.iter().any(|t| t.strip_prefix(resource).is_some_and(|rest| rest.starts_with("__")))
    }

    /// Whether `/metrics` may be read: only by the scope that names it
    /// (`quiver:*:LEVEL` is for resources).
    pub fn metrics(&self) -> bool {
        self.resources.contains_key("metrics")
    }

    /// Whether these are an operator's: `quiver:*:admin`, which shows
    /// every principal's calls (the dashboard's live and health pages,
    /// `/v1/audit`), not only its own.
    pub fn operator(&self) -> bool {
        self.every == Some(Access::Admin)
    }

    /// The scope that would let the tool `name` of `resource` run.
    pub fn needed(resource: &str, needed: Access) -> String {
        Scope::Resource(resource.to_owned(), needed).text()
    }

    /// The scopes as sent, with `more` added: what a client asks for to
    /// step up (RFC 6750's `scope` in a challenge lists all it needs).
    pub fn stepped_up(&self, more: &str) -> String {
        let mut scopes: Vec<&str> = self.sent.iter().map(String::as_str).collect();
        if !scopes.contains(&more) {
            scopes.push(more);
        }
        scopes.join(" ")
    }

    /// The `quiver:` scopes that did not parse.
    pub fn unreadable(&self) -> &[String] {
        &self.unreadable
    }

    /// The scopes as sent.
    pub fn sent(&self) -> &[String] {
        &self.sent
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_grammar_reads_resources_levels_and_tools() {
        assert_eq!(Scope::parse("quiver:chinook:read"), Some(Scope::Resource("chinook".into(), Access::Read)));
        assert_eq!(Scope::parse("quiver:*:write"), Some(Scope::Resource("*".into(), Access::Write)));
        assert_eq!(Scope::parse("quiver:tool:calc__evaluate"), Some(Scope::Tool("calc__evaluate".into())));
        for not in
            ["openid", "quiver:chinook", "quiver:chinook:owner", "quiver::read", "quiver:a b:read", "quiver:tool:"]
        {
            assert_eq!(Scope::parse(not), None, "{not}");
        }
    }

    #[test]
    fn a_level_grants_the_ones_below_and_nothing_else() {
        let grants =
            Grants::from_scopes("openid quiver:chinook:write quiver:tool:calc__evaluate quiver:x:y".split(' '));
        assert!(grants.allows("chinook__query", "chinook", Access::Read));
        assert!(grants.allows("chinook__insert", "chinook", Access::Write));
        assert!(!grants.allows("chinook__drop", "chinook", Access::Admin));
        assert!(!grants.allows("notes__add", "notes", Access::Read));
        assert!(grants.allows("calc__evaluate", "calc", Access::Admin));
        assert_eq!(grants.level_for("calc__evaluate", "calc", Access::Read), Some(Access::Read));
        assert_eq!(grants.level_for("other", "calc", Access::Read), None);
        assert_eq!(grants.unreadable(), ["quiver:x:y"]);
        assert!(!grants.metrics());
        let every = Grants::from_scopes(["quiver:*:read", "quiver:notes:admin"]);
        assert_eq!(every.level("anything"), Some(Access::Read));
        assert_eq!(every.level("notes"), Some(Access::Admin));
        assert!(!every.metrics());
        assert!(Grants::from_scopes([METRICS]).metrics());
        assert!(Grants::from_scopes(["quiver:*:admin"]).operator());
        assert!(!every.operator() && !Grants::from_scopes(["quiver:notes:admin"]).operator());
    }

    #[test]
    fn a_step_up_asks_for_what_was_sent_and_what_is_needed() {
        let grants = Grants::from_scopes(["quiver:chinook:read"]);
        let needed = Grants::needed("chinook", Access::Write);
        assert_eq!(grants.stepped_up(&needed), "quiver:chinook:read quiver:chinook:write");
    }
}
