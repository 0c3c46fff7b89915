//! ⑦ Sessions: how an embedder (and every face) drives one conversation.
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
//! A session is cheap (nothing is compiled to create one, and cloning one
//! shares its resolved policy) and independent of others. Its state is
//! what the model has unlocked so far; it serializes, so a conversation
//! can resume in another process. Each operation works on the catalog
//! snapshot current when it starts, from its first lookup to its last.

use std::collections::BTreeSet;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::catalog::{Catalog, Category, Live, ToolEntry, ToolRecord};
use crate::disclosure::failures;
use crate::disclosure::formats::{OpenAiSchema, ToolDef};
use crate::disclosure::meta_tools::{self, CallContext, View};
use crate::disclosure::policy::Policy;
use crate::disclosure::search::SearchCache;
use crate::disclosure::select::Selector;
use crate::disclosure::tier1;
use crate::disclosure::tokens::{self, TokenReport};
use crate::error::{Error, Result};
use crate::invoke::{Backend, Backends, definition};

/// What every session of a host shares.
pub(crate) struct Services {
    pub(crate) live: Arc<Live>,
    pub(crate) backend: Backends,
    pub(crate) selector: Box<dyn Selector>,
    pub(crate) search: SearchCache,
}

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
#[derive(Clone)]
pub struct Session {
    services: Arc<Services>,
    policy: Arc<Policy>,
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
        self.tools.iter().map(|t| meta_tools::to_value(t.to_mcp())).collect()
    }

    /// As OpenAI Chat Completions function tools.
    pub fn openai(&self) -> Vec<Value> {
        self.tools.iter().map(|t| meta_tools::to_value(t.to_openai(OpenAiSchema::Exact))).collect()
    }

    /// As OpenAI Chat Completions function tools in strict mode, where
    /// their schemas allow it (see [`crate::disclosure::strict`]).
    pub fn openai_strict(&self) -> Vec<Value> {
        self.tools.iter().map(|t| meta_tools::to_value(t.to_openai(OpenAiSchema::Strict))).collect()
    }

    /// As Anthropic tools (none deferred: the meta-tools disclose the rest).
    pub fn anthropic(&self) -> Vec<Value> {
        self.tools.iter().map(|t| meta_tools::to_value(t.to_anthropic(false))).collect()
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
    /// An upstream MCP server's `CallToolResult`, verbatim (every content
    /// block, `structuredContent`, `isError`), when the call went to one.
    pub upstream: Option<Value>,
}

impl CallOutcome {
    /// The outcome of `result`, a failure worded for the model with the
    /// tool names of `catalog`.
    fn from_result(result: Result<Value>, catalog: &Catalog) -> CallOutcome {
        match result {
            Ok(value) => CallOutcome {
                text: match &value {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                },
                value: Some(value),
                is_error: false,
                error: None,
                upstream: None,
            },
            Err(error) => CallOutcome {
                text: failures::explain(&error, catalog),
                value: None,
                is_error: true,
                error: Some(error),
                upstream: None,
            },
        }
    }

    /// The outcome of a call an upstream MCP server answered with
    /// `result` (its `CallToolResult`): its text blocks are the text, its
    /// `structuredContent` the value, its `isError` whether it failed.
    fn from_upstream(result: Result<Value>, catalog: &Catalog) -> CallOutcome {
        let Ok(result) = result else { return CallOutcome::from_result(result, catalog) };
        let blocks = result.get("content").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
        let texts: Vec<&str> = blocks
            .iter()
            .filter(|b| b.get("type").and_then(Value::as_str) == Some("text"))
            .filter_map(|b| b.get("text").and_then(Value::as_str))
            .collect();
        let text =
            if texts.is_empty() && !blocks.is_empty() { Value::from(blocks).to_string() } else { texts.join("\n") };
        CallOutcome {
            text,
            value: result.get("structuredContent").cloned(),
            is_error: result.get("isError").and_then(Value::as_bool).unwrap_or(false),
            error: None,
            upstream: Some(result),
        }
    }
}

/// What a policy lets a listing show: its categories, and the plugins'
/// declared categories when it narrows those.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scope {
    categories: Vec<Category>,
    plugin_categories: Option<BTreeSet<String>>,
}

/// The tools a session may see in one catalog snapshot (discovery levels
/// 1 and 2), without loading anything.
pub struct Listing {
    catalog: Arc<Catalog>,
    policy: Arc<Policy>,
}

impl Listing {
    /// The catalog version it lists.
    pub fn version(&self) -> u64 {
        self.catalog.version()
    }

    /// The tools the policy allows, in catalog order.
    pub fn tools(&self) -> impl Iterator<Item = &ToolEntry> {
        self.catalog.tools().iter().filter(|e| self.policy.shows(&self.catalog, e.category, &e.origin))
    }

    /// What the policy allows (what, with the version, decides what is
    /// listed).
    pub fn scope(&self) -> Scope {
        Scope {
            categories: self.policy.categories.iter().copied().collect(),
            plugin_categories: self.policy.plugin_categories.clone(),
        }
    }
}

impl Session {
    pub(crate) fn new(services: Arc<Services>, policy: Arc<Policy>, state: SessionState, open: bool) -> Session {
        Session { services, policy, state, open }
    }

    /// The resolved disclosure policy.
    pub fn policy(&self) -> &Policy {
        &self.policy
    }

    /// The state to save to resume this conversation later.
    pub fn state(&self) -> &SessionState {
        &self.state
    }

    /// The version of the current catalog (the tool list changes with it).
    pub fn version(&self) -> u64 {
        self.services.live.current().version()
    }

    /// What this session may see of the current catalog.
    pub fn listing(&self) -> Listing {
        Listing { catalog: self.services.live.current(), policy: self.policy.clone() }
    }

    /// The built-in tools the policy allows.
    fn builtins<'c>(&self, catalog: &'c Catalog) -> Vec<&'c ToolEntry> {
        if !self.policy.allows(Category::Builtin) {
            return Vec::new();
        }
        catalog
            .tools()
            .iter()
            .filter(|r| r.category == Category::Builtin && self.policy.shows(catalog, r.category, &r.origin))
            .collect()
    }

    /// Built-in tools not resident and not unlocked: what `request_tools` lists.
    fn registry<'c>(&self, builtins: &[&'c ToolEntry]) -> Vec<&'c ToolEntry> {
        builtins
            .iter()
            .copied()
            .filter(|r| !self.state.resident.contains(&r.name) && !self.state.unlocked.contains(&r.name))
            .collect()
    }

    /// Which built-in tools are resident when no selection has run: all of
    /// them under the threshold, else the pinned ones.
    fn default_resident(&self, builtins: &[&ToolEntry]) -> BTreeSet<String> {
        let all = builtins.len() <= self.policy.selection_threshold;
        builtins.iter().filter(|r| all || self.policy.pinned.contains(&r.name)).map(|r| r.name.clone()).collect()
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
        let catalog = self.services.live.current();
        let builtins = self.builtins(&catalog);
        self.state.resident = match user_query {
            Some(query) if builtins.len() > self.policy.selection_threshold => {
                let max = self.policy.selection_max;
                // What is known of each: the full record once its plugin is loaded.
                let candidates: Vec<ToolRecord> =
                    builtins.iter().map(|e| catalog.record(e).unwrap_or_else(|| ToolRecord::of_entry(e))).collect();
                let mut resident: BTreeSet<String> = match self.services.selector.select(query, &candidates, max).await
                {
                    Ok(names) => names.into_iter().collect(),
                    Err(reason) => {
                        tracing::warn!(%reason, "tool selector failed; offering every built-in tool this turn");
                        builtins.iter().map(|r| r.name.clone()).collect()
                    }
                };
                resident.extend(self.default_resident(&builtins));
                resident
            }
            _ => self.default_resident(&builtins),
        };
        let registry = self.registry(&builtins);
        let view = View { catalog: &catalog, policy: &self.policy, registry: &registry };
        let mut tools: Vec<ToolDef> = meta_tools::ALL.iter().filter_map(|m| m.definition(&view)).collect();

        let mut direct: BTreeSet<&String> = self.state.resident.iter().collect();
        if user_query.is_some() {
            direct.extend(self.state.unlocked.iter());
        }
        for entry in direct.into_iter().filter_map(|name| catalog.tool(name)) {
            if entry.category != Category::Mcp {
                self.push_definition(&catalog, entry, &mut tools).await;
            }
        }
        // Legacy modes: every action of those kinds, one origin at a time.
        let mut origins: Vec<&str> = catalog
            .tools()
            .iter()
            .filter(|e| self.policy.flattens(e.category) && self.policy.shows(&catalog, e.category, &e.origin))
            .map(|e| e.origin.as_str())
            .collect();
        origins.dedup();
        for origin in origins {
            match self.services.backend.definitions(&catalog, origin).await {
                Ok(records) => {
                    for def in records.iter().filter_map(ToolDef::of) {
                        if !tools.iter().any(|t| t.name == def.name) {
                            tools.push(def);
                        }
                    }
                }
                Err(error) => tracing::warn!(%origin, %error, "tools left out of this turn"),
            }
        }
        Turn { tools }
    }

    /// Add the definition of `entry` to `tools` (loading its plugin), or
    /// log why it is left out.
    async fn push_definition(&self, catalog: &Catalog, entry: &ToolEntry, tools: &mut Vec<ToolDef>) {
        match definition(&self.services.backend, catalog, entry).await.map(|r| ToolDef::of(&r)) {
            Ok(Some(def)) => tools.push(def),
            Ok(None) => tracing::warn!(tool = %entry.name, "tool left out of this turn: no input schema"),
            Err(error) => tracing::warn!(tool = %entry.name, %error, "tool left out of this turn"),
        }
    }

    /// The Tier-1 text: what exists, in one short block per kind, and (in
    /// inline mode) the skills' full instructions. It depends only on the
    /// catalog and the policy, not on the turn (its built-in section lists
    /// every tool that is not pinned, resident or not), so it stays
    /// byte-identical across turns and provider prompt caches keep hitting.
    pub fn system_prompt(&self) -> String {
        let catalog = self.services.live.current();
        let registry: Vec<&ToolEntry> =
            self.builtins(&catalog).into_iter().filter(|r| !self.policy.pinned.contains(&r.name)).collect();
        tier1::render(&View { catalog: &catalog, policy: &self.policy, registry: &registry })
    }

    /// What goes beside the meta-tools (MCP `instructions`): the Tier-1
    /// text without the stub lists, which the meta-tools' descriptions
    /// already carry. Use it instead of [`system_prompt`](Self::system_prompt)
    /// when the model also gets the tools of [`tools_for_turn`](Self::tools_for_turn).
    pub fn instructions(&self) -> String {
        let catalog = self.services.live.current();
        let registry: Vec<&ToolEntry> =
            self.builtins(&catalog).into_iter().filter(|r| !self.policy.pinned.contains(&r.name)).collect();
        tier1::instructions(&View { catalog: &catalog, policy: &self.policy, registry: &registry })
    }

    /// The full definition of the tool called `name` (discovery level 3),
    /// loading its plugin; an error if this session may not see it.
    pub async fn definition(&self, name: &str) -> Result<ToolDef> {
        let catalog = self.services.live.current();
        let Some(entry) = catalog.tool(name).filter(|e| self.policy.shows(&catalog, e.category, &e.origin)) else {
            return Err(Error::UnknownTool { name: name.to_owned(), hint: "list the tools first".into() });
        };
        let record = definition(&self.services.backend, &catalog, entry).await?;
        ToolDef::of(&record).ok_or_else(|| Error::internal("session", format!("`{name}` has no input schema")))
    }

    /// The full definition of every callable tool this session may see, in
    /// catalog order (loading every plugin; live MCP servers' tools from
    /// their listings, saved lists left out); tools whose plugin fails to
    /// load are left out and logged.
    pub async fn definitions(&self) -> Vec<ToolDef> {
        let catalog = self.services.live.current();
        let mut defs = Vec::new();
        let callable =
            |e: &ToolEntry| e.category != Category::Mcp || catalog.mcp_server(&e.origin).is_some_and(|s| s.live);
        let mut origins: Vec<&str> = catalog
            .tools()
            .iter()
            .filter(|e| self.policy.shows(&catalog, e.category, &e.origin) && callable(e))
            .map(|e| e.origin.as_str())
            .collect();
        origins.dedup();
        for origin in origins {
            match self.services.backend.definitions(&catalog, origin).await {
                Ok(records) => defs.extend(records.iter().filter_map(ToolDef::of)),
                Err(error) => tracing::warn!(%origin, %error, "left out of the definitions"),
            }
        }
        defs
    }

    /// Rank every tool and skill this session may see for `query`, as
    /// `search_tools` does (unlocking nothing): (name, category, summary,
    /// score), best first.
    pub fn search(&self, query: &str, limit: usize) -> Vec<(String, Category, String, f32)> {
        let catalog = self.services.live.current();
        let index = self.services.search.index(&catalog);
        index
            .search(query, limit, |e| self.policy.shows(&catalog, e.category, &e.origin))
            .into_iter()
            .map(|(e, score)| (e.name.clone(), e.category, e.summary.clone(), score))
            .collect()
    }

    /// What the catalog costs this session in prompt tokens in each mode.
    /// Loads every plugin (the full cost needs their schemas); a plugin that
    /// fails to load counts with its stub only (a lower bound).
    pub async fn token_report(&self) -> TokenReport {
        let catalog = self.services.live.current();
        let backend = &self.services.backend;
        let mut records: Vec<ToolRecord> = Vec::new();
        let mut origins: Vec<&str> = catalog
            .tools()
            .iter()
            .filter(|e| self.policy.shows(&catalog, e.category, &e.origin))
            .map(|e| e.origin.as_str())
            .collect();
        origins.dedup();
        for origin in origins {
            match backend.definitions(&catalog, origin).await {
                Ok(full) => records.extend(full),
                Err(_) => records.extend(catalog.tools_of(origin).iter().map(ToolRecord::of_entry)),
            }
        }
        let registry = self.builtins(&catalog);
        tokens::report(&View { catalog: &catalog, policy: &self.policy, registry: &registry }, &records)
    }

    /// Whether `entry` may be called directly in this session.
    fn is_callable(&self, catalog: &Catalog, entry: &ToolEntry) -> bool {
        let name = &entry.name;
        if self.open || self.state.unlocked.contains(name) || self.policy.pinned.contains(name) {
            return true;
        }
        match entry.category {
            Category::Builtin if self.state.resident.is_empty() => {
                self.default_resident(&self.builtins(catalog)).contains(name)
            }
            Category::Builtin => self.state.resident.contains(name),
            Category::Skill => false,
            flat => self.policy.flattens(flat),
        }
    }

    /// Call a meta-tool or a directly callable tool, and return what the
    /// model sees. Unlocking tools (`request_tools`, `search_tools`)
    /// changes this session's state.
    pub async fn call(&mut self, name: &str, args: Value) -> CallOutcome {
        let upstream = self.goes_upstream(name, &args);
        let result = self.dispatch(name, args).await;
        let catalog = self.services.live.current();
        if upstream { CallOutcome::from_upstream(result, &catalog) } else { CallOutcome::from_result(result, &catalog) }
    }

    /// Whether calling `name` with `args` runs a tool of an upstream MCP
    /// server (directly, or through the `mcp` meta-tool's `call`).
    fn goes_upstream(&self, name: &str, args: &Value) -> bool {
        if meta_tools::find(name).is_some() {
            return name == "mcp" && args.get("subcommand").and_then(Value::as_str) == Some("call");
        }
        self.services.live.current().tool(name).is_some_and(|e| e.category == Category::Mcp)
    }

    async fn dispatch(&mut self, name: &str, args: Value) -> Result<Value> {
        let catalog = self.services.live.current();
        if let Some(meta) = meta_tools::find(name) {
            let builtins = self.builtins(&catalog);
            let registry = self.registry(&builtins);
            if meta.callable(&View { catalog: &catalog, policy: &self.policy, registry: &registry }) {
                let cx = CallContext {
                    catalog: &catalog,
                    policy: &self.policy,
                    backend: &self.services.backend,
                    caller: &self.policy.caller,
                    search: &self.services.search,
                    unlocked: &mut self.state.unlocked,
                };
                return meta.call(cx, args).await;
            }
        }
        let Some(entry) = catalog.tool(name).filter(|r| self.policy.shows(&catalog, r.category, &r.origin)) else {
            return Err(Error::UnknownTool { name: name.to_owned(), hint: self.offered_hint(&catalog) });
        };
        if !self.is_callable(&catalog, entry) {
            let hint = match entry.category {
                Category::Builtin => "load it first with request_tools (or find it with search_tools)",
                Category::Connector => "run it with the connector tool (`execute`), or unlock it with search_tools",
                Category::Database => "use it through the database tool",
                Category::Mcp | Category::Skill => "use it through the mcp tool",
            };
            return Err(Error::UnknownTool { name: name.to_owned(), hint: format!("it is not active; {hint}") });
        }
        let input = if args.is_null() { Value::Object(Default::default()) } else { args };
        self.services.backend.call(&catalog, entry, input, &self.policy.caller).await
    }

    fn offered_hint(&self, catalog: &Catalog) -> String {
        let builtins = self.builtins(catalog);
        let registry = self.registry(&builtins);
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
