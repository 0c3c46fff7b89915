//! Disclosure policy: which kinds are shown progressively, which flat, and
//! how many built-in tools stay resident.
//!
//! Each setting comes from, in order of priority: the agent's profile in the
//! config file (`[agents.NAME]`), then the environment (`SKILL_TOOL_MODE`,
//! `CONNECTOR_TOOL_MODE`, `DATABASE_TOOL_MODE`, `MCP_TOOL_MODE`,
//! `REACT_TOOL_SELECTION_THRESHOLD`, `REACT_TOOL_SELECTION_MAX`), then the
//! config's `[disclosure]` table, then the defaults. An unknown value is a
//! configuration error naming where it came from.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use crate::catalog::{Catalog, Category};
use crate::contract::Access;
use crate::error::{Error, Result};
use crate::invoke::Caller;
use crate::load::Plugin;

/// How skills are shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SkillMode {
    /// Names and descriptions; bodies through `read_skill`.
    Progressive,
    /// Full bodies in the system prompt.
    Inline,
}

/// How connectors, databases and MCP servers are shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ListMode {
    /// Stubs in a meta-tool; schemas on request.
    Progressive,
    /// Every action as a tool of its own, with its full schema.
    Legacy,
}

/// Settings one layer (the `[disclosure]` table or an agent profile) may set.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PolicySettings {
    /// `progressive` or `inline`.
    pub skill_tool_mode: Option<SkillMode>,
    /// `progressive` or `legacy`.
    pub connector_tool_mode: Option<ListMode>,
    /// `progressive` or `legacy`.
    pub database_tool_mode: Option<ListMode>,
    /// `progressive` or `legacy`.
    pub mcp_tool_mode: Option<ListMode>,
    /// Categories this agent may see (default: all).
    pub categories: Option<Vec<Category>>,
    /// Only plugins that declare one of these categories (`math`, `text`,
    /// … as the plugin's manifest says); skills and MCP servers declare
    /// none and are not affected (default: every plugin).
    pub plugin_categories: Option<Vec<String>>,
    /// Above this many built-in tools, only the most relevant stay resident.
    pub selection_threshold: Option<usize>,
    /// How many built-in tools stay resident when selecting.
    pub selection_max: Option<usize>,
    /// Built-in tools that are always resident, by model-facing name.
    pub pinned: Option<Vec<String>>,
    /// The highest access this agent may use, per resource (a plugin, a
    /// database, an MCP server); `*` for every other one. Unlisted:
    /// whatever the resource itself allows.
    pub access: Option<BTreeMap<String, Access>>,
    /// With an OAuth access token, list and describe only the resources
    /// its scopes name (default false: everything the profile sees is
    /// listed, and what the token does not cover is refused when called).
    pub hide_unauthorized: Option<bool>,
    /// The most o200k tokens the progressive prompt may cost (every offered
    /// meta-tool's definition, the instructions, the pinned tools); Tier 1
    /// is folded to fit (see [`crate::disclosure::budget`]); 0: no budget.
    pub prompt_tokens: Option<usize>,
}

/// The resolved policy of one session.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Policy {
    /// The agent profile used, if any.
    pub agent: Option<String>,
    /// Skills mode.
    pub skills: SkillMode,
    /// Connectors mode.
    pub connectors: ListMode,
    /// Databases mode.
    pub databases: ListMode,
    /// MCP servers mode.
    pub mcp: ListMode,
    /// Categories the agent may see.
    pub categories: BTreeSet<Category>,
    /// When set, only plugins that declare one of these categories.
    pub plugin_categories: Option<BTreeSet<String>>,
    /// Selection threshold for built-in tools.
    pub selection_threshold: usize,
    /// Resident built-in tools when selecting.
    pub selection_max: usize,
    /// Always-resident built-in tools.
    pub pinned: BTreeSet<String>,
    /// Who calls are made for: the agent and its access grants.
    #[serde(skip)]
    pub caller: Caller,
    /// Whether, with an access token, only what its scopes name is shown.
    pub hide_unauthorized: bool,
    /// The prompt's token budget (0: none).
    pub prompt_tokens: usize,
}

/// Default `REACT_TOOL_SELECTION_THRESHOLD`.
pub const DEFAULT_THRESHOLD: usize = 12;
/// Default `prompt_tokens`: the progressive prompt's budget.
pub const DEFAULT_PROMPT_TOKENS: usize = 2000;
/// Default `REACT_TOOL_SELECTION_MAX`.
pub const DEFAULT_MAX: usize = 6;

impl Policy {
    /// Resolve the policy for `agent` (None: no profile) from the config
    /// layers and the environment read through `env`.
    pub fn resolve(
        defaults: &PolicySettings,
        agents: &BTreeMap<String, PolicySettings>,
        agent: Option<&str>,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Policy> {
        let profile = match agent {
            Some(name) => Some(agents.get(name).ok_or_else(|| {
                let known: Vec<&str> = agents.keys().map(String::as_str).collect();
                Error::config("--agent", format!("no agent profile `{name}` (profiles: {})", known.join(", ")))
            })?),
            None => None,
        };
        let env_setting = |var: &str| -> Result<Option<serde_json::Value>> {
            Ok(env(var).filter(|v| !v.is_empty()).map(|v| serde_json::Value::String(v.trim().to_lowercase())))
        };
        fn pick<T: Mode>(
            var: &str,
            profile: Option<T>,
            env: Option<serde_json::Value>,
            defaults: Option<T>,
            fallback: T,
        ) -> Result<T> {
            if let Some(v) = profile {
                return Ok(v);
            }
            if let Some(raw) = env {
                return serde_json::from_value(raw.clone())
                    .map_err(|_| Error::config(format!("{var}={raw}"), format!("expected {}", T::EXPECTED)));
            }
            Ok(defaults.unwrap_or(fallback))
        }
        let number = |var: &str, profile: Option<usize>, defaults: Option<usize>, fallback: usize| -> Result<usize> {
            if let Some(v) = profile {
                return Ok(v);
            }
            if let Some(raw) = env(var).filter(|v| !v.is_empty()) {
                return raw
                    .trim()
                    .parse()
                    .map_err(|_| Error::config(format!("{var}={raw}"), "expected a non-negative integer"));
            }
            Ok(defaults.unwrap_or(fallback))
        };
        let p = profile.cloned().unwrap_or_default();
        let policy = Policy {
            agent: agent.map(str::to_owned),
            skills: pick(
                "SKILL_TOOL_MODE",
                p.skill_tool_mode,
                env_setting("SKILL_TOOL_MODE")?,
                defaults.skill_tool_mode,
                SkillMode::Progressive,
            )?,
            connectors: pick(
                "CONNECTOR_TOOL_MODE",
                p.connector_tool_mode,
                env_setting("CONNECTOR_TOOL_MODE")?,
                defaults.connector_tool_mode,
                ListMode::Progressive,
            )?,
            databases: pick(
                "DATABASE_TOOL_MODE",
                p.database_tool_mode,
                env_setting("DATABASE_TOOL_MODE")?,
                defaults.database_tool_mode,
                ListMode::Progressive,
            )?,
            mcp: pick(
                "MCP_TOOL_MODE",
                p.mcp_tool_mode,
                env_setting("MCP_TOOL_MODE")?,
                defaults.mcp_tool_mode,
                ListMode::Progressive,
            )?,
            categories: p
                .categories
                .or_else(|| defaults.categories.clone())
                .map(|c| c.into_iter().collect())
                .unwrap_or_else(Category::all),
            plugin_categories: p
                .plugin_categories
                .or_else(|| defaults.plugin_categories.clone())
                .map(|c| c.into_iter().collect()),
            selection_threshold: number(
                "REACT_TOOL_SELECTION_THRESHOLD",
                p.selection_threshold,
                defaults.selection_threshold,
                DEFAULT_THRESHOLD,
            )?,
            selection_max: number("REACT_TOOL_SELECTION_MAX", p.selection_max, defaults.selection_max, DEFAULT_MAX)?,
            pinned: p.pinned.or_else(|| defaults.pinned.clone()).unwrap_or_default().into_iter().collect(),
            hide_unauthorized: p.hide_unauthorized.or(defaults.hide_unauthorized).unwrap_or(false),
            prompt_tokens: p.prompt_tokens.or(defaults.prompt_tokens).unwrap_or(DEFAULT_PROMPT_TOKENS),
            caller: Caller {
                agent: agent.map(str::to_owned),
                access: std::sync::Arc::new(p.access.or_else(|| defaults.access.clone()).unwrap_or_default()),
                token: None,
            },
        };
        Ok(policy)
    }

    /// Whether the agent may see `category`.
    pub fn allows(&self, category: Category) -> bool {
        self.categories.contains(&category)
    }

    /// Whether the agent may see `plugin`: its kind is allowed and it
    /// declares one of `plugin_categories` (when those are set).
    pub fn shows_plugin(&self, plugin: &Plugin) -> bool {
        let stub = plugin.stub();
        self.allows(stub.kind.into())
            && self.plugin_categories.as_ref().is_none_or(|wanted| stub.categories.iter().any(|c| wanted.contains(c)))
            && self.authorized(plugin.name())
    }

    /// Whether `resource` is shown to this caller's access token: always,
    /// unless the profile hides what the token's scopes do not name.
    pub fn authorized(&self, resource: &str) -> bool {
        !self.hide_unauthorized || self.caller.scopes().is_none_or(|scopes| scopes.names(resource))
    }

    /// Whether the agent may see a tool of `category` from `origin` in
    /// `catalog`: its category is allowed and, for a plugin's tool, so is
    /// the plugin.
    pub fn shows(&self, catalog: &Catalog, category: Category, origin: &str) -> bool {
        self.allows(category)
            && match category {
                Category::Builtin | Category::Connector | Category::Database => {
                    (self.plugin_categories.is_none() && self.authorized(origin))
                        || catalog.get(origin).is_some_and(|p| self.shows_plugin(p))
                }
                Category::Mcp => self.authorized(origin),
                Category::Skill => true,
            }
    }

    /// Whether `category` is disclosed through its meta-tool (progressive
    /// mode; built-in tools always are, beyond the resident ones).
    pub fn progressive(&self, category: Category) -> bool {
        match category {
            Category::Builtin => true,
            Category::Skill => self.skills == SkillMode::Progressive,
            Category::Connector | Category::Database | Category::Mcp => {
                self.list_mode(category) == ListMode::Progressive
            }
        }
    }

    /// Whether each action of `category` is a tool of its own (legacy mode).
    pub fn flattens(&self, category: Category) -> bool {
        self.list_mode(category) == ListMode::Legacy
    }

    fn list_mode(&self, category: Category) -> ListMode {
        match category {
            Category::Connector => self.connectors,
            Category::Database => self.databases,
            Category::Mcp => self.mcp,
            Category::Builtin | Category::Skill => ListMode::Progressive,
        }
    }
}

/// A mode setting: its values, for error messages.
trait Mode: serde::de::DeserializeOwned + Copy {
    const EXPECTED: &'static str;
}

impl Mode for SkillMode {
    const EXPECTED: &'static str = "progressive or inline";
}

impl Mode for ListMode {
    const EXPECTED: &'static str = "progressive or legacy";
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(vars: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let vars: Vec<(String, String)> = vars.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        move |key| vars.iter().find(|(k, _)| k == key).map(|(_, v)| v.clone())
    }

    fn agents(toml_text: &str) -> BTreeMap<String, PolicySettings> {
        toml::from_str(toml_text).unwrap()
    }

    #[test]
    fn agent_beats_env_beats_config_beats_default() {
        let defaults = PolicySettings { mcp_tool_mode: Some(ListMode::Legacy), ..Default::default() };
        let profiles = agents("[coder]\nskill_tool_mode = \"inline\"\nselection_max = 3\n");
        let vars = env(&[("SKILL_TOOL_MODE", "progressive"), ("CONNECTOR_TOOL_MODE", "LEGACY")]);
        let none = Policy::resolve(&defaults, &profiles, None, &vars).unwrap();
        assert_eq!(none.skills, SkillMode::Progressive);
        assert_eq!(none.connectors, ListMode::Legacy);
        assert_eq!(none.mcp, ListMode::Legacy);
        assert_eq!(none.databases, ListMode::Progressive);
        assert_eq!(none.selection_threshold, DEFAULT_THRESHOLD);
        let coder = Policy::resolve(&defaults, &profiles, Some("coder"), &vars).unwrap();
        assert_eq!(coder.skills, SkillMode::Inline);
        assert_eq!(coder.selection_max, 3);
        assert_eq!(coder.categories, Category::all());
    }

    #[test]
    fn access_grants_come_from_the_profile() {
        let profiles = agents("[reader]\naccess = { chinook = \"read\", \"*\" = \"write\" }\n");
        let reader = Policy::resolve(&PolicySettings::default(), &profiles, Some("reader"), &env(&[])).unwrap();
        assert_eq!(reader.caller.ceiling("chinook"), Access::Read);
        assert_eq!(reader.caller.ceiling("other"), Access::Write);
        assert_eq!(reader.caller.agent.as_deref(), Some("reader"));
        let anyone = Policy::resolve(&PolicySettings::default(), &profiles, None, &env(&[])).unwrap();
        assert_eq!(anyone.caller.ceiling("chinook"), Access::Admin);
    }

    #[test]
    fn unknown_values_are_clear_errors() {
        let defaults = PolicySettings::default();
        let error = Policy::resolve(&defaults, &BTreeMap::new(), None, &env(&[("MCP_TOOL_MODE", "lazy")])).unwrap_err();
        assert_eq!(error.to_string(), "configuration: MCP_TOOL_MODE=\"lazy\": expected progressive or legacy");
        let error =
            Policy::resolve(&defaults, &BTreeMap::new(), None, &env(&[("REACT_TOOL_SELECTION_MAX", "x")])).unwrap_err();
        assert!(error.to_string().contains("REACT_TOOL_SELECTION_MAX=x"), "{error}");
        let error = Policy::resolve(&defaults, &BTreeMap::new(), Some("nobody"), &env(&[])).unwrap_err();
        assert!(error.to_string().contains("no agent profile `nobody`"), "{error}");
        assert!(toml::from_str::<PolicySettings>("skill_tool_mode = \"legacy\"").is_err());
        assert!(toml::from_str::<PolicySettings>("colour = 1").is_err());
    }
}
