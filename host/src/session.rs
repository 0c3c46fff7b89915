//! ⑤a Sessions: how an embedder drives one conversation.
//!
//! ```no_run
//! # async fn demo(host: quiver::Host) -> anyhow::Result<()> {
//! let mut session = host.session(None)?;
//! let system = session.system_prompt();            // Tier 1
//! let turn = session.tools_for_turn("what is 6 * 7?").await;
//! let tools = turn.openai();                        // or .mcp(), .anthropic()
//! // ... send `system` and `tools` to the model; when it calls a tool:
//! let outcome = session.call("calc__evaluate", serde_json::json!({"expression": "6 * 7"})).await;
//! assert!(!outcome.is_error);
//! let saved = serde_json::to_string(session.state())?;   // resume later with host.resume(...)
//! # Ok(()) }
//! ```
//!
//! A session is cheap (nothing is compiled to create one) and independent
//! of others. Its state is what the model has unlocked so far; it
//! serializes, so a conversation can resume in another process.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::catalog::{Catalog, Category, ToolRecord};
use crate::contract::Kind;
use crate::disclosure::formats::ToolDef;
use crate::disclosure::meta_tools::{self, CallContext, View};
use crate::disclosure::policy::{ListMode, Policy, SkillMode};
use crate::{Error, Host, Result};

/// What survives between turns and across processes.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionState {
    /// The agent profile, if any.
    pub agent: Option<String>,
    /// Tools the model unlocked with `request_tools` or `search_tools`.
    pub unlocked: BTreeSet<String>,
    /// Built-in tools resident in the last turn.
    pub resident: BTreeSet<String>,
}

/// One conversation with a model.
pub struct Session {
    host: Host,
    policy: Policy,
    state: SessionState,
    /// Every tool the policy allows is callable by name (stateless faces).
    open: bool,
}

/// The tools for one model request.
#[derive(Debug, Clone)]
pub struct Turn {
    /// Meta-tools first, then resident and unlocked tools, then flattened ones.
    pub tools: Vec<ToolDef>,
}

impl Turn {
    /// As MCP `Tool` objects.
    pub fn mcp(&self) -> Vec<Value> {
        self.tools.iter().map(|t| serde_json::to_value(t.to_mcp()).expect("serializes")).collect()
    }

    /// As OpenAI function tools.
    pub fn openai(&self) -> Vec<Value> {
        self.tools.iter().map(|t| serde_json::to_value(t.to_openai()).expect("serializes")).collect()
    }

    /// As Anthropic tools (none deferred: the meta-tools disclose the rest).
    pub fn anthropic(&self) -> Vec<Value> {
        self.tools.iter().map(|t| serde_json::to_value(t.to_anthropic(false)).expect("serializes")).collect()
    }

    /// The names offered, in order.
    pub fn names(&self) -> Vec<&str> {
        self.tools.iter().map(|t| t.name.as_str()).collect()
    }
}

/// The result of a tool call, as the model should see it.
#[derive(Debug, Clone)]
pub struct CallOutcome {
    /// Text for the model: the output as JSON (a string output as is), or
    /// the error and how to fix it.
    pub text: String,
    /// The output, when the call succeeded.
    pub value: Option<Value>,
    /// Whether the call failed.
    pub is_error: bool,
    /// The error, when the call failed.
    pub error: Option<Error>,
}

impl CallOutcome {
    fn from_result(result: Result<Value>) -> CallOutcome {
        match result {
            Ok(value) => CallOutcome {
                text: match &value {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                },
                value: Some(value),
                is_error: false,
                error: None,
            },
            Err(error) => CallOutcome {
                text: match error.remedy() {
                    Some(remedy) => format!("{error}. Fix: {remedy}"),
                    None => error.to_string(),
                },
                value: None,
                is_error: true,
                error: Some(error),
            },
        }
    }
}

impl Session {
    pub(crate) fn new(host: Host, policy: Policy, state: SessionState) -> Session {
        Session { host, policy, state, open: false }
    }

    /// The resolved disclosure policy.
    pub fn policy(&self) -> &Policy {
        &self.policy
    }

    /// The state to save to resume this conversation later.
    pub fn state(&self) -> &SessionState {
        &self.state
    }

    fn builtins(&self, catalog: &Catalog) -> Vec<ToolRecord> {
        if !self.policy.allows(Category::Builtin) {
            return Vec::new();
        }
        catalog.tools().into_iter().filter(|r| r.category == Category::Builtin).collect()
    }

    /// Built-in tools not resident and not unlocked: what `request_tools` lists.
    fn registry(&self, builtins: Vec<ToolRecord>) -> Vec<ToolRecord> {
        builtins
            .into_iter()
            .filter(|r| !self.state.resident.contains(&r.name) && !self.state.unlocked.contains(&r.name))
            .collect()
    }

    /// Which built-in tools are resident when no selection has run: all of
    /// them under the threshold, else the pinned ones.
    fn default_resident(&self, builtins: &[ToolRecord]) -> BTreeSet<String> {
        if builtins.len() <= self.policy.selection_threshold {
            builtins.iter().map(|r| r.name.clone()).collect()
        } else {
            builtins.iter().filter(|r| self.policy.pinned.contains(&r.name)).map(|r| r.name.clone()).collect()
        }
    }

    /// The tool definitions for the next model request, given the user's
    /// latest message (used to pick resident built-in tools when there are
    /// more than the threshold). Never fails: a tool whose plugin cannot be
    /// loaded is left out and logged, a failing selector means all
    /// built-in tools stay resident.
    pub async fn tools_for_turn(&mut self, user_query: &str) -> Turn {
        self.assemble(Some(user_query)).await
    }

    /// The tool definitions when there is no user message to select by
    /// (an MCP `tools/list`): meta-tools, every built-in tool under the
    /// threshold (else the pinned ones), flattened tools. It changes only
    /// with the catalog, never with what was called.
    pub async fn listed_tools(&mut self) -> Turn {
        self.assemble(None).await
    }

    async fn assemble(&mut self, user_query: Option<&str>) -> Turn {
        let catalog = self.host.catalog();
        let builtins = self.builtins(&catalog);
        self.state.resident = if builtins.len() <= self.policy.selection_threshold {
            builtins.iter().map(|r| r.name.clone()).collect()
        } else if let Some(user_query) = user_query {
            let selected = match self.host.selector().select(user_query, &builtins, self.policy.selection_max).await {
                Ok(names) => names,
                Err(reason) => {
                    tracing::warn!(%reason, "tool selector failed; offering every built-in tool this turn");
                    builtins.iter().map(|r| r.name.clone()).collect()
                }
            };
            let mut resident: BTreeSet<String> = selected.into_iter().collect();
            resident.extend(self.default_resident(&builtins));
            resident
        } else {
            self.default_resident(&builtins)
        };
        let registry = self.registry(builtins);
        let view = View { catalog: &catalog, policy: &self.policy, registry: &registry };
        let mut tools: Vec<ToolDef> = meta_tools::ALL.iter().filter_map(|m| m.definition(&view)).collect();

        let mut direct: BTreeSet<String> = self.state.resident.clone();
        if user_query.is_some() {
            direct.extend(self.state.unlocked.iter().cloned());
        }
        for name in &direct {
            match self.definition(&catalog, name).await {
                Ok(Some(def)) => tools.push(def),
                Ok(None) => {}
                Err(error) => tracing::warn!(tool = %name, %error, "tool left out of this turn"),
            }
        }
        for def in self.flattened(&catalog).await {
            if !tools.iter().any(|t| t.name == def.name) {
                tools.push(def);
            }
        }
        Turn { tools }
    }

    /// The definition of a directly callable tool (loading its plugin);
    /// `None` for tools that cannot be called (read-only MCP entries).
    async fn definition(&self, catalog: &Catalog, name: &str) -> Result<Option<ToolDef>> {
        let Some(record) = catalog.tool(name) else { return Ok(None) };
        if record.category == Category::Mcp {
            return Ok(None);
        }
        self.host.describe(&record.origin).await?;
        Ok(self.host.catalog().tool(name).and_then(|r| r.to_def()))
    }

    /// Tools of the kinds in legacy mode, each action a tool of its own.
    async fn flattened(&self, catalog: &Catalog) -> Vec<ToolDef> {
        let mut defs = Vec::new();
        let modes = [
            (Kind::Connector, Category::Connector, self.policy.connectors),
            (Kind::Database, Category::Database, self.policy.databases),
        ];
        for (kind, category, mode) in modes {
            if mode != ListMode::Legacy || !self.policy.allows(category) {
                continue;
            }
            for plugin in catalog.plugins_of(kind) {
                if let Err(error) = self.host.describe(plugin.name()).await {
                    tracing::warn!(plugin = plugin.name(), %error, "plugin left out of this turn");
                }
            }
        }
        let catalog = self.host.catalog();
        for record in catalog.tools() {
            let legacy = match record.category {
                Category::Connector => self.policy.connectors == ListMode::Legacy,
                Category::Database => self.policy.databases == ListMode::Legacy,
                Category::Mcp => self.policy.mcp == ListMode::Legacy,
                _ => false,
            };
            if legacy && self.policy.allows(record.category) {
                defs.extend(record.to_def());
            }
        }
        defs
    }

    /// The Tier-1 text: what exists, in one short block per kind, and (in
    /// inline mode) the skills' full instructions. It depends only on the
    /// catalog and the policy, not on the turn (its built-in section lists
    /// every tool that is not pinned, resident or not), so it stays
    /// byte-identical across turns and provider prompt caches keep hitting.
    pub fn system_prompt(&self) -> String {
        let catalog = self.host.catalog();
        let registry: Vec<ToolRecord> =
            self.builtins(&catalog).into_iter().filter(|r| !self.policy.pinned.contains(&r.name)).collect();
        let view = View { catalog: &catalog, policy: &self.policy, registry: &registry };
        crate::disclosure::tier1::render(&view, &self.policy)
    }

    /// Whether `name` may be called directly in this session.
    fn is_callable(&self, catalog: &Catalog, record: &ToolRecord) -> bool {
        let name = &record.name;
        if self.open || self.state.unlocked.contains(name) || self.policy.pinned.contains(name) {
            return true;
        }
        match record.category {
            Category::Builtin => {
                let builtins = self.builtins(catalog);
                let resident = if self.state.resident.is_empty() {
                    self.default_resident(&builtins)
                } else {
                    self.state.resident.clone()
                };
                resident.contains(name)
            }
            Category::Connector => self.policy.connectors == ListMode::Legacy,
            Category::Database => self.policy.databases == ListMode::Legacy,
            Category::Mcp => self.policy.mcp == ListMode::Legacy,
            Category::Skill => false,
        }
    }

    /// Call a meta-tool or a directly callable tool, and return what the
    /// model sees. Unlocking tools (`request_tools`, `search_tools`)
    /// changes this session's state.
    pub async fn call(&mut self, name: &str, args: Value) -> CallOutcome {
        let result = self.dispatch(name, args).await;
        CallOutcome::from_result(result)
    }

    async fn dispatch(&mut self, name: &str, args: Value) -> Result<Value> {
        let catalog = self.host.catalog();
        if let Some(meta) = meta_tools::find(name) {
            let builtins = self.builtins(&catalog);
            let registry = self.registry(builtins);
            let offered = meta.definition(&View { catalog: &catalog, policy: &self.policy, registry: &registry });
            // `request_tools` may be asked for a tool that is already
            // resident, and search works on any catalog size.
            if offered.is_some() || name == "request_tools" || name == "search_tools" {
                let cx = CallContext {
                    host: &self.host,
                    catalog: &catalog,
                    policy: &self.policy,
                    unlocked: &mut self.state.unlocked,
                };
                return meta.call(cx, args).await;
            }
        }
        let Some(record) = catalog.tool(name).filter(|r| self.policy.allows(r.category)) else {
            return Err(Error::UnknownTool { name: name.to_owned(), hint: self.offered_hint(&catalog) });
        };
        if !self.is_callable(&catalog, &record) {
            let hint = match record.category {
                Category::Builtin => "load it first with request_tools (or find it with search_tools)",
                Category::Connector => "run it with the connector tool (`execute`), or unlock it with search_tools",
                Category::Database => "use it through the database tool",
                Category::Mcp | Category::Skill => "use it through the mcp tool",
            };
            return Err(Error::UnknownTool { name: name.to_owned(), hint: format!("it is not active; {hint}") });
        }
        if record.category == Category::Mcp {
            return Err(Error::NotCallable {
                name: name.to_owned(),
                reason: "its server is a saved tools/list (read-only); there is no live connection to it".into(),
            });
        }
        let input = if args.is_null() { Value::Object(Default::default()) } else { args };
        self.host.call_json(&record.origin, &record.action, &input).await
    }

    fn offered_hint(&self, catalog: &Catalog) -> String {
        let builtins = self.builtins(catalog);
        let registry = self.registry(builtins);
        let view = View { catalog, policy: &self.policy, registry: &registry };
        let metas: Vec<&str> =
            meta_tools::ALL.iter().filter(|m| m.definition(&view).is_some()).map(|m| m.name()).collect();
        if metas.is_empty() {
            "call one of the tools you were given".to_owned()
        } else {
            format!("find tools with: {}", metas.join(", "))
        }
    }
}

impl Host {
    /// Start a session for `agent` (its profile in the config file), or
    /// with no profile. The environment is read now.
    pub fn session(&self, agent: Option<&str>) -> Result<Session> {
        let policy = self.policy(agent)?;
        Ok(Session::new(self.clone(), policy, SessionState { agent: agent.map(str::to_owned), ..Default::default() }))
    }

    /// A session for a stateless face (MCP, REST), where the tool list
    /// never changes: every tool `agent`'s policy allows is callable by its
    /// name, and `request_tools` / `search_tools` only return schemas.
    pub fn open_session(&self, agent: Option<&str>) -> Result<Session> {
        let mut session = self.session(agent)?;
        session.open = true;
        Ok(session)
    }

    /// Resume a session from its saved state.
    pub fn resume(&self, state: SessionState) -> Result<Session> {
        let policy = self.policy(state.agent.as_deref())?;
        Ok(Session::new(self.clone(), policy, state))
    }
}

/// Whether a skill mode shows bodies in the prompt.
pub(crate) fn inline_skills(policy: &Policy) -> bool {
    policy.skills == SkillMode::Inline && policy.allows(Category::Skill)
}
