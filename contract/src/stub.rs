//! The stub: a plugin's Tier-1 metadata, as JSON in the `quiver:stub`
//! custom section. The SDK writes it with [`Stub::to_json`]; the host reads
//! it with [`Stub::from_json`]. Both go through [`Stub::validate`].

use serde::{Deserialize, Serialize};

use crate::kinds::{Access, Kind};
use crate::limits::MAX_ACTIONS;
use crate::rules::{action_name_problem, category_problem, plugin_name_problem, summary_problem, version_problem};
use crate::version::{CONTRACT, STUB_FORMAT, contract_compatible};

/// Tier-1 metadata of a plugin: enough to list it, not enough to call it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Stub {
    /// Stub format version ([`STUB_FORMAT`]).
    pub format: u32,
    /// The WIT package the plugin was built against, e.g. `quiver:plugin@0.1.0`.
    pub contract: String,
    /// Plugin name, unique in a catalog.
    pub name: String,
    /// Plugin version.
    pub version: String,
    /// Which world it targets.
    pub kind: Kind,
    /// One line, at most 120 characters.
    pub description: String,
    /// Tags for search and per-agent filters.
    #[serde(default)]
    pub categories: Vec<String>,
    /// The actions, in the author's order.
    pub actions: Vec<StubAction>,
    /// Whether it is a component with no Quiver contract, served as it
    /// is: each action is one of its exported functions, and the host
    /// checks this stub against its types, not against `describe()`.
    /// `quiver package` writes it for such a component; absent means false.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub plain: bool,
}

/// One action as the stub lists it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StubAction {
    /// Action name.
    pub name: String,
    /// One-line summary, at most 120 characters.
    pub summary: String,
    /// What calling it may change.
    pub access: Access,
}

impl Stub {
    /// A stub of the current format and contract.
    pub fn new(name: &str, version: &str, kind: Kind, description: &str) -> Stub {
        Stub {
            format: STUB_FORMAT,
            contract: CONTRACT.to_owned(),
            name: name.to_owned(),
            version: version.to_owned(),
            kind,
            description: description.to_owned(),
            categories: Vec::new(),
            actions: Vec::new(),
            plain: false,
        }
    }

    /// Parse and validate the JSON of a stub section; the error says why not.
    pub fn from_json(bytes: &[u8]) -> Result<Stub, String> {
        let stub: Stub = serde_json::from_slice(bytes).map_err(|e| format!("not the expected JSON: {e}"))?;
        stub.validate()?;
        Ok(stub)
    }

    /// The JSON of the stub section.
    pub fn to_json(&self) -> Vec<u8> {
        serde_json::to_vec(self).expect("a stub always serializes")
    }

    /// Check every rule; the first broken one is the error.
    pub fn validate(&self) -> Result<(), String> {
        if self.format != STUB_FORMAT {
            return Err(format!("stub format {} is not supported (this host reads {STUB_FORMAT})", self.format));
        }
        if !contract_compatible(&self.contract) {
            return Err(format!("built against contract `{}`, this host implements `{CONTRACT}`", self.contract));
        }
        if let Some(p) = plugin_name_problem(&self.name) {
            return Err(p);
        }
        if let Some(p) = version_problem(&self.version) {
            return Err(p);
        }
        if let Some(p) = summary_problem(&format!("plugin `{}`", self.name), &self.description) {
            return Err(p);
        }
        if self.plain && self.kind != Kind::Tool {
            return Err(format!("a component served as it is is a tool, not a {}", self.kind));
        }
        for c in &self.categories {
            if let Some(p) = category_problem(c) {
                return Err(p);
            }
        }
        if self.actions.is_empty() || self.actions.len() > MAX_ACTIONS {
            return Err(format!("declares {} actions; a plugin has 1 to {MAX_ACTIONS}", self.actions.len()));
        }
        let mut seen = std::collections::BTreeSet::new();
        for a in &self.actions {
            if let Some(p) = action_name_problem(&a.name) {
                return Err(p);
            }
            if !seen.insert(a.name.as_str()) {
                return Err(format!("action `{}` is declared twice", a.name));
            }
            if let Some(p) = summary_problem(&format!("action `{}`", a.name), &a.summary) {
                return Err(p);
            }
        }
        Ok(())
    }

    /// The names of the actions, in order.
    pub fn action_names(&self) -> impl Iterator<Item = &str> {
        self.actions.iter().map(|a| a.name.as_str())
    }

    /// The action called `name`.
    pub fn action(&self, name: &str) -> Option<&StubAction> {
        self.actions.iter().find(|a| a.name == name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn calc() -> Stub {
        let mut stub = Stub::new("calc", "1.0.0", Kind::Tool, "Math");
        stub.categories.push("math".into());
        stub.actions.push(StubAction { name: "eval".into(), summary: "Evaluate".into(), access: Access::Read });
        stub
    }

    #[test]
    fn a_stub_round_trips_through_its_json() {
        let stub = calc();
        assert_eq!(Stub::from_json(&stub.to_json()).unwrap(), stub);
    }

    #[test]
    fn only_a_plain_stub_says_so() {
        let json = String::from_utf8(calc().to_json()).unwrap();
        assert!(!json.contains("plain"), "{json}");
        let plain = Stub { plain: true, ..calc() };
        let json = plain.to_json();
        assert!(String::from_utf8_lossy(&json).contains(r#""plain":true"#));
        assert!(Stub::from_json(&json).unwrap().plain);
    }

    #[test]
    fn every_rule_is_checked() {
        let broken: [fn(&mut Stub); 10] = [
            |s| {
                s.plain = true;
                s.kind = Kind::Database;
            },
            |s| s.version = "1.0\u{1b}[2J".into(),
            |s| s.actions[0].summary = "Evaluate\u{1b}[31m".into(),
            |s| s.format = 2,
            |s| s.contract = "quiver:plugin@0.2.0".into(),
            |s| s.name = "Calc!".into(),
            |s| s.description = "a\nb".into(),
            |s| s.categories = vec!["Bad Tag".into()],
            |s| s.actions.clear(),
            |s| {
                let again = s.actions[0].clone();
                s.actions.push(again)
            },
        ];
        for (i, breaks) in broken.iter().enumerate() {
            let mut stub = calc();
            breaks(&mut stub);
            assert!(stub.validate().is_err(), "rule {i}");
        }
    }
}
