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

use rmcp::model::CallToolResult;
use serde_json::Value;

use crate::catalog::{Catalog, Category, Live, ToolEntry, ToolRecord};
use crate::disclosure::budget::Fit;
use crate::disclosure::failures;
use crate::disclosure::footprint::Footprint;
use crate::disclosure::formats::ToolDef;
use crate::disclosure::meta_tools::{self, CALL_TOOL, CallContext, call_tool};
use crate::disclosure::policy::Policy;
use crate::disclosure::search::{Explained, Ranker, SearchCache};
use crate::disclosure::select::Selector;
use crate::disclosure::tables::ListedTables;
use crate::disclosure::tokens::{self, TokenReport};
use crate::disclosure::turn::{self, Rules};
pub use crate::disclosure::turn::{SessionState, Turn};
use crate::error::{Error, Result};
use crate::invoke::progress::Sink;
use crate::invoke::{Backend, Backends, Call, Facts, Output, definition};

/// What every session of a host shares.
pub(crate) struct Services {
    pub(crate) live: Arc<Live>,
    pub(crate) backend: Backends,
    pub(crate) selector: Box<dyn Selector>,
    pub(crate) search: SearchCache,
    pub(crate) tables: ListedTables,
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

/// The result of a tool call, as the model should see it, with the tool's
/// typed output and the facts of the calls it made.
#[derive(Debug)]
pub struct CallOutcome {
    /// Text for the model: the output (a JSON output as JSON, a string as
    /// is, an upstream result's text blocks), or the error and how to fix it.
    pub text: String,
    /// Whether the call failed (an error, or an upstream result with `isError`).
    pub is_error: bool,
    /// The error, when the call failed before the tool answered.
    pub error: Option<Error>,
    /// The tool's output, when it answered: a plugin's (or meta-tool's)
    /// JSON, or an upstream MCP server's `CallToolResult`, verbatim.
    pub output: Option<Output>,
    /// The facts of each tool call it made through the backend, in order:
    /// one for a direct call, those a meta-tool made for it.
    pub calls: Vec<Facts>,
}

impl CallOutcome {
    /// The outcome of `result`, a failure worded for the model with the
    /// tool names of `catalog`.
    fn new(result: Result<Output>, calls: Vec<Facts>, catalog: &Catalog, via: Option<&str>) -> CallOutcome {
        match result {
            Ok(output) => CallOutcome {
                text: output.text(),
                is_error: output.is_error(),
                error: None,
                output: Some(output),
                calls,
            },
            Err(error) => CallOutcome {
                text: failures::explain(&error, catalog, via),
                is_error: true,
                error: Some(error),
                output: None,
                calls,
            },
        }
    }

    /// The output as a value: a plugin's JSON, or an upstream result's
    /// `structuredContent`.
    pub fn value(&self) -> Option<&Value> {
        self.output.as_ref().and_then(Output::value)
    }

    /// The upstream result, when an MCP server answered.
    pub fn upstream(&self) -> Option<&CallToolResult> {
        self.output.as_ref().and_then(Output::upstream)
    }
}

/// What a policy lets a listing show: its categories, and the plugins'
/// declared categories when it narrows those.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scope {
    categories: Vec<Category>,
    plugin_categories: Option<BTreeSet<String>>,
    /// The access token's scopes, when the profile hides what they do
    /// not name.
    token_scopes: Option<Vec<String>>,
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
            token_scopes: self
                .policy
                .hide_unauthorized
                .then(|| self.policy.caller.scopes().map(|g| g.sent().to_vec()))
                .flatten(),
        }
    }
}

impl Session {
    /// This session with every call made for an access token's principal:
    /// held to its scopes (besides the profile's grants), and audited
    /// under its subject and client.
    pub fn for_token(&self, token: Arc<crate::auth::Principal>) -> Session {
        let mut policy = (*self.policy).clone();
        policy.caller.token = Some(token);
        Session { policy: Arc::new(policy), ..self.clone() }
    }

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

    /// The turn rules over `catalog` with this session's state.
    fn rules<'a>(&'a self, catalog: &'a Catalog) -> Rules<'a> {
        Rules { catalog, policy: &self.policy, state: &self.state, open: self.open, tables: &self.services.tables }
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
    /// threshold (else the pinned ones), flattened tools, and `call_tool`
    /// (for clients that only call what they were listed). It changes only
    /// with the catalog, never with what was called.
    pub async fn listed_tools(&mut self) -> Turn {
        self.assemble(None).await
    }

    async fn assemble(&mut self, user_query: Option<&str>) -> Turn {
        let catalog = self.services.live.current();
        let resident = turn::resident(&self.rules(&catalog), self.services.selector.as_ref(), user_query).await;
        self.state.resident = resident;
        turn::tools(&self.rules(&catalog), &self.services.backend, user_query.is_some()).await
    }

    /// The Tier-1 text: what exists, in one short block per kind, and (in
    /// inline mode) the skills' full instructions. It depends only on the
    /// catalog and the policy, not on the turn (its built-in section lists
    /// every tool that is not pinned, resident or not), so it stays
    /// byte-identical across turns and provider prompt caches keep hitting.
    pub fn system_prompt(&self) -> String {
        self.rules(&self.services.live.current()).tier1()
    }

    /// How this session's Tier 1 fits its prompt budget (see
    /// [`crate::disclosure::budget`]): what the prompt costs, which
    /// sections were folded, and any overrun.
    pub fn prompt_fit(&self) -> Arc<Fit> {
        self.rules(&self.services.live.current()).fit()
    }

    /// What goes beside the meta-tools (MCP `instructions`): the Tier-1
    /// text without the stub lists, which the meta-tools' descriptions
    /// already carry. Use it instead of [`system_prompt`](Self::system_prompt)
    /// when the model also gets the tools of [`tools_for_turn`](Self::tools_for_turn).
    pub fn instructions(&self) -> String {
        self.rules(&self.services.live.current()).instructions()
    }

    /// The full definition of the tool called `name` (discovery level 3),
    /// loading its plugin; an error if this session may not see it.
    pub async fn definition(&self, name: &str) -> Result<ToolDef> {
        let catalog = self.services.live.current();
        let Some(entry) = self.rules(&catalog).visible(name) else {
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
        let callable =
            |e: &ToolEntry| e.category != Category::Mcp || catalog.mcp_server(&e.origin).is_some_and(|s| s.live);
        let origins = self.rules(&catalog).origins(callable);
        let mut defs = Vec::new();
        for (origin, records) in turn::records(&self.services.backend, &catalog, origins).await {
            match records {
                Ok(records) => defs.extend(records.iter().filter_map(ToolDef::of)),
                Err(error) => tracing::warn!(%origin, %error, "left out of the definitions"),
            }
        }
        defs
    }

    /// Rank every tool and skill this session may see for `query`, as
    /// `search_tools` does, equivalent tools in one place (unlocking
    /// nothing): each hit's name, then the names of its equivalents.
    pub fn search_collapsed(&self, query: &str, limit: usize) -> Vec<(String, Vec<String>)> {
        let catalog = self.services.live.current();
        let index = self.services.search.index(&catalog);
        index
            .search_collapsed(query, limit, |e| self.policy.shows(&catalog, e.category, &e.origin))
            .into_iter()
            .map(|hit| (hit.entry.name.clone(), hit.equivalents.iter().map(|e| e.name.clone()).collect()))
            .collect()
    }

    /// Rank every tool and skill this session may see for `query`, each
    /// equivalent apart (unlocking nothing): (name, category, summary,
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

    /// [`search`](Self::search) with each hit's rank in each arm before
    /// they were fused, and the ranking that ran.
    pub fn explain_search(&self, query: &str, limit: usize) -> (Ranker, Vec<Explained>) {
        let catalog = self.services.live.current();
        let index = self.services.search.index(&catalog);
        (index.ranker(), index.explain(query, limit, |e| self.policy.shows(&catalog, e.category, &e.origin)))
    }

    /// What this session's context costs a model (see [`Footprint`]),
    /// loading nothing: a tool whose schema is not known without loading
    /// its plugin counts as not known. With `load`, every plugin is loaded
    /// and every live server listed first.
    pub async fn footprint(&self, load: bool) -> Footprint {
        let catalog = self.services.live.current();
        let rules = self.rules(&catalog);
        let origins = rules.origins(|_| true);
        let stubs = |origin: &str| -> Vec<(ToolRecord, bool)> {
            catalog.tools_of(origin).iter().map(|e| (ToolRecord::of_entry(e), false)).collect()
        };
        let mut records: Vec<(ToolRecord, bool)> = Vec::new();
        if load {
            for (origin, full) in turn::records(&self.services.backend, &catalog, origins).await {
                match full {
                    Ok(full) => records.extend(full.into_iter().map(|r| (r, true))),
                    Err(_) => records.extend(stubs(origin)),
                }
            }
        } else {
            for entry in origins.iter().flat_map(|origin| catalog.tools_of(origin)) {
                records.push(match catalog.record(entry) {
                    Some(record) if ToolDef::of(&record).is_some() => (record, true),
                    _ => (ToolRecord::of_entry(entry), false),
                });
            }
        }
        let plain: Vec<ToolRecord> = records.iter().map(|(r, _)| r.clone()).collect();
        let report = rules.with_full_view(|view| tokens::report(view, &plain));
        Footprint::of(rules.tier1(), report, &records, load)
    }

    /// What the catalog costs this session in prompt tokens in each mode.
    /// Loads every plugin (the full cost needs their schemas); a plugin that
    /// fails to load counts with its stub only (a lower bound).
    pub async fn token_report(&self) -> TokenReport {
        let catalog = self.services.live.current();
        let rules = self.rules(&catalog);
        let mut records: Vec<ToolRecord> = Vec::new();
        for (origin, full) in turn::records(&self.services.backend, &catalog, rules.origins(|_| true)).await {
            match full {
                Ok(full) => records.extend(full),
                Err(_) => records.extend(catalog.tools_of(origin).iter().map(ToolRecord::of_entry)),
            }
        }
        rules.with_full_view(|view| tokens::report(view, &records))
    }

    /// What this session's tools cost flat (o200k), for those whose schema
    /// is known without loading anything, and how many are not known yet:
    /// the full-cost side of the metrics' footprint (it loads nothing).
    pub fn known_full_cost(&self) -> (usize, usize) {
        let catalog = self.services.live.current();
        let rules = self.rules(&catalog);
        tokens::known_full(&catalog, &rules.origins(|_| true))
    }

    /// Call a meta-tool or a directly callable tool, and return what the
    /// model sees. Unlocking tools (`request_tools`, `search_tools`)
    /// changes this session's state.
    pub async fn call(&mut self, name: &str, args: Value) -> CallOutcome {
        self.call_reporting(name, args, None).await
    }

    /// [`call`](Self::call), with the progress the tool reports (an
    /// upstream server's) sent to `progress`.
    pub async fn call_reporting(&mut self, name: &str, args: Value, progress: Option<Sink>) -> CallOutcome {
        // One snapshot for the whole call, from the first lookup to the wording of its failure.
        let mut catalog = self.services.live.current();
        let started = std::time::Instant::now();
        let mut calls = Vec::new();
        // A name not known yet may be a plugin still on its way (pulled
        // from a registry): the call waits for it, as a call joins a compile.
        let again = (self.services.live.arriving() > 0).then(|| (args.clone(), progress.clone()));
        let mut result = self.dispatch(&catalog, name, args, progress, &mut calls).await;
        if let (Some((args, progress)), Err(error)) = (again, &result)
            && matches!(error.kind(), crate::error::ErrorKind::UnknownTool | crate::error::ErrorKind::UnknownPlugin)
        {
            let _ = tokio::time::timeout(crate::catalog::ARRIVAL_WAIT, self.services.live.settled()).await;
            catalog = self.services.live.current();
            calls.clear();
            result = self.dispatch(&catalog, name, args, progress, &mut calls).await;
        }
        // One line per call for whoever runs the service (never its
        // arguments); its fields are only made when the line is written.
        tracing::info!(
            target: "quiver::calls",
            tool = %crate::catalog::shown::shown(name),
            via = %calls.iter().map(|f| f.tool.as_str()).filter(|t| *t != name).collect::<Vec<_>>().join(","),
            agent = %self.policy.agent.as_deref().unwrap_or("-"),
            principal = %self.policy.caller.token.as_deref().map_or("-".into(), |t| crate::catalog::shown::shown(&t.subject)),
            outcome = %crate::invoke::outcome(&result),
            ms = started.elapsed().as_secs_f64() * 1e3,
            trace_id = %crate::telemetry::spans::TraceId,
            "call"
        );
        // A meta-tool's own calls are named as the model reached them.
        let via = meta_tools::find(name).map(|m| m.name());
        CallOutcome::new(result, calls, &catalog, via)
    }

    async fn dispatch(
        &mut self,
        catalog: &Catalog,
        name: &str,
        args: Value,
        progress: Option<Sink>,
        calls: &mut Vec<Facts>,
    ) -> Result<Output> {
        let ((name, args), inner) = match name {
            CALL_TOOL => (call_tool::unwrap(args)?, true),
            name => ((name.to_owned(), args), false),
        };
        if let Some(meta) = meta_tools::find(&name)
            && self.rules(catalog).accepts(meta)
        {
            let services = &self.services;
            let cx = CallContext {
                catalog,
                policy: &self.policy,
                backend: &services.backend,
                caller: &self.policy.caller,
                search: &services.search,
                tables: &services.tables,
                unlocked: &mut self.state.unlocked,
                equivalents: &mut self.state.equivalents,
                progress,
                calls,
            };
            return meta.call(cx, args).await;
        }
        let rules = self.rules(catalog);
        let Some(entry) = rules.visible(&name) else {
            return Err(if inner { rules.unknown_inner(&name) } else { rules.unknown(&name) });
        };
        if !rules.is_callable(entry) {
            return Err(rules.not_callable(entry));
        }
        let input = if args.is_null() { Value::Object(Default::default()) } else { args };
        let call = Call { catalog, tool: entry, input, caller: &self.policy.caller, progress };
        let answer = self.services.backend.call(call).await;
        calls.push(answer.facts);
        answer.result
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use rmcp::model::ContentBlock;
    use serde_json::json;

    use super::*;
    use crate::contract::{Access, Kind};
    use crate::disclosure::policy::PolicySettings;
    use crate::disclosure::search::analyzer::Analyzer;
    use crate::disclosure::select::SelectorConfig;
    use crate::invoke::testing::{Fake, catalog, plugin};
    use crate::load::PluginSettings;

    /// A session over `plugins`, its calls answered by `fake`; `open`: as
    /// the stateless faces open one.
    fn session(plugins: Vec<Arc<crate::load::Plugin>>, fake: Arc<Fake>, open: bool) -> Session {
        let analyzer = Arc::new(Analyzer::bm25());
        let services = Services {
            live: Arc::new(Live::new(catalog(plugins))),
            backend: Backends::new(fake, Arc::new(Fake::default()), None),
            selector: SelectorConfig::default().build(analyzer.clone()).unwrap(),
            search: SearchCache::new(analyzer),
            tables: ListedTables::default(),
        };
        let env = |_: &str| None;
        let policy = Policy::resolve(&PolicySettings::default(), &BTreeMap::new(), None, &env).unwrap();
        Session::new(Arc::new(services), Arc::new(policy), SessionState::default(), open)
    }

    fn tools() -> Vec<Arc<crate::load::Plugin>> {
        let settings = PluginSettings::default;
        vec![
            plugin("calc", Kind::Tool, &[("evaluate", Access::Read)], settings()),
            plugin("api", Kind::Connector, &[("get", Access::Read)], settings()),
        ]
    }

    #[tokio::test]
    async fn a_direct_call_carries_the_typed_output_and_its_facts() {
        let fake = Arc::new(Fake::answering(vec![Ok(Output::Json(json!({"value": 4})))]));
        let outcome = session(tools(), fake.clone(), false).call("calc__evaluate", json!({"expression": "2+2"})).await;
        assert!(!outcome.is_error, "{}", outcome.text);
        assert_eq!(outcome.text, r#"{"value":4}"#);
        assert_eq!(outcome.value(), Some(&json!({"value": 4})));
        assert_eq!(outcome.calls.len(), 1);
        assert_eq!(outcome.calls[0].tool, "calc__evaluate");
        // No arguments at all is an empty object.
        session(tools(), fake.clone(), false).call("calc__evaluate", Value::Null).await;
        assert_eq!(fake.received()[1].1, json!({}));
    }

    #[tokio::test]
    async fn an_upstream_result_is_told_apart_by_its_type_not_its_name() {
        let mut result = CallToolResult::error(vec![ContentBlock::text("no such file")]);
        result.structured_content = Some(json!({"path": "/x"}));
        let fake = Arc::new(Fake::answering(vec![Ok(Output::Upstream(Box::new(result)))]));
        let outcome = session(tools(), fake, false).call("calc__evaluate", json!({})).await;
        // Whoever answered with a `CallToolResult` is an upstream server.
        assert!(outcome.is_error && outcome.error.is_none(), "{outcome:?}");
        assert_eq!(outcome.text, "no such file");
        assert_eq!(outcome.value(), Some(&json!({"path": "/x"})));
        assert_eq!(outcome.upstream().unwrap().is_error, Some(true));
    }

    #[tokio::test]
    async fn call_tool_names_the_tool_and_a_meta_tool_reports_its_calls() {
        let fake = Arc::new(Fake::default());
        let mut session = session(tools(), fake.clone(), false);
        let outcome =
            session.call(CALL_TOOL, json!({"name": "calc__evaluate", "arguments": {"expression": "1"}})).await;
        assert!(!outcome.is_error, "{}", outcome.text);
        assert_eq!(fake.received(), [("calc__evaluate".to_owned(), json!({"expression": "1"}))]);
        let outcome = session.call(CALL_TOOL, json!({"tool": "calc__evaluate"})).await;
        assert_eq!(outcome.error.map(|e| e.kind()), Some(crate::ErrorKind::InvalidArguments));
        // An unknown name inside call_tool is a result the model reads (a
        // protocol error would end some clients' sessions), with the name
        // it may have meant; at the top level it stays an unknown tool.
        let outcome = session.call(CALL_TOOL, json!({"name": "calc_evaluate"})).await;
        assert_eq!(outcome.error.as_ref().map(|e| e.kind()), Some(crate::ErrorKind::InvalidArguments));
        assert!(outcome.text.contains("did you mean `calc__evaluate`?"), "{}", outcome.text);
        let outcome = session.call("calc_evaluate", json!({})).await;
        assert_eq!(outcome.error.as_ref().map(|e| e.kind()), Some(crate::ErrorKind::UnknownTool));
        assert!(outcome.text.contains("did you mean `calc__evaluate`?"), "{}", outcome.text);

        // The connector is reached through its meta-tool, whose calls are reported.
        let args = json!({"subcommand": "execute", "connector": "api", "action": "get", "parameters": {"id": 7}});
        let outcome = session.call("connector", args).await;
        assert!(!outcome.is_error, "{}", outcome.text);
        assert_eq!(outcome.calls.iter().map(|f| f.tool.as_str()).collect::<Vec<_>>(), ["api__get"]);
    }

    #[tokio::test]
    async fn what_cannot_be_called_says_how_to_reach_it() {
        let fake = Arc::new(Fake::default());
        let mut session = session(tools(), fake.clone(), false);
        let hidden = session.call("api__get", json!({})).await;
        assert!(hidden.text.contains("connector tool"), "{}", hidden.text);
        let unknown = session.call("nope", json!({})).await;
        assert!(unknown.text.contains("find tools with"), "{}", unknown.text);
        assert!(fake.received().is_empty());
        // A face's open session calls any tool it may see by name.
        let mut open = self::session(tools(), fake.clone(), true);
        assert!(!open.call("api__get", json!({})).await.is_error);
    }

    #[tokio::test]
    async fn the_listing_ends_with_call_tool_and_a_turn_does_not() {
        let mut session = session(tools(), Arc::new(Fake::default()), false);
        let listed = session.listed_tools().await;
        assert_eq!(listed.names().last(), Some(&CALL_TOOL));
        assert!(listed.names().contains(&"calc__evaluate") && listed.names().contains(&"connector"));
        let turn = session.tools_for_turn("add two numbers").await;
        assert!(!turn.names().contains(&CALL_TOOL), "{:?}", turn.names());
        assert!(session.system_prompt().contains("- api: The api plugin. Actions: get"));
    }
}
