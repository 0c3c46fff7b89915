//! The rules of a turn, read over one catalog snapshot, the policy and
//! what a session has unlocked: which built-in tools are resident, which
//! tools a model may call by name, what each model request is offered,
//! and how a tool it may not call yet is reached. A
//! [`Session`](crate::session::Session) keeps the state; these rules
//! decide with it.

use std::collections::BTreeSet;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::budget::{self, Fit};
use super::formats::{OpenAiSchema, ToolDef};
use super::meta_tools::{self, Offered, View, call_tool};
use super::policy::Policy;
use super::reach::not_active;
use super::select::Selector;
use super::tables::ListedTables;
use super::tier1;
use super::tokens::origins;
use crate::catalog::{Catalog, Category, ToolEntry, ToolRecord};
use crate::error::{Error, Result};
use crate::invoke::{Backend, definition};

/// What survives between turns and across processes.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionState {
    /// The agent profile, if any.
    pub agent: Option<String>,
    /// Tools the model unlocked with `request_tools` or `search_tools`.
    pub unlocked: BTreeSet<String>,
    /// The other names `search_tools` gave for tools it unlocked (the same
    /// tool other servers serve, its `also_as`): callable by name, but not
    /// listed each turn, so a tool in twelve places costs one definition.
    #[serde(default)]
    pub equivalents: BTreeSet<String>,
    /// Built-in tools resident in the last turn.
    pub resident: BTreeSet<String>,
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

/// The rules over one catalog snapshot, a policy and a session's state.
pub(crate) struct Rules<'a> {
    pub catalog: &'a Catalog,
    pub policy: &'a Policy,
    pub state: &'a SessionState,
    /// Every tool the policy allows is callable by name (stateless faces).
    pub open: bool,
    pub tables: &'a ListedTables,
}

impl<'a> Rules<'a> {
    /// The built-in tools the policy allows.
    pub(crate) fn builtins(&self) -> Vec<&'a ToolEntry> {
        if !self.policy.allows(Category::Builtin) {
            return Vec::new();
        }
        let catalog = self.catalog;
        catalog
            .tools()
            .iter()
            .filter(|r| r.category == Category::Builtin && self.policy.shows(catalog, r.category, &r.origin))
            .collect()
    }

    /// Built-in tools not resident and not unlocked: what `request_tools` lists.
    fn registry(&self, builtins: &[&'a ToolEntry]) -> Vec<&'a ToolEntry> {
        let state = self.state;
        builtins
            .iter()
            .copied()
            .filter(|r| !state.resident.contains(&r.name) && !state.unlocked.contains(&r.name))
            .collect()
    }

    /// Which built-in tools are resident when no selection has run: all of
    /// them under the threshold, else the pinned ones.
    fn default_resident(&self, builtins: &[&ToolEntry]) -> BTreeSet<String> {
        let all = builtins.len() <= self.policy.selection_threshold;
        builtins.iter().filter(|r| all || self.policy.pinned.contains(&r.name)).map(|r| r.name.clone()).collect()
    }

    /// What the meta-tools show, with `registry` as what `request_tools`
    /// offers, folded as `fit` says.
    fn view<'v>(&'v self, registry: &'v [&'a ToolEntry], fit: Arc<Fit>) -> View<'v> {
        View { catalog: self.catalog, policy: self.policy, registry, tables: self.tables, fit }
    }

    /// How Tier 1 fits the prompt budget: computed over the built-in tools
    /// Tier 1 lists (not this turn's registry), so the fold does not change
    /// from turn to turn.
    pub(crate) fn fit(&self) -> Arc<Fit> {
        if self.policy.prompt_tokens == 0 {
            return Fit::unbounded();
        }
        let listed = self.listed_builtins();
        let pinned: Vec<String> = self
            .builtins()
            .into_iter()
            .filter(|e| self.policy.pinned.contains(&e.name))
            .map(|e| {
                let record = self.catalog.listed_record(e);
                if record.input_schema.is_none() {
                    unsized_pin(&e.origin);
                }
                super::tokens::flat(&record).sent()
            })
            .collect();
        budget::fit(&self.view(&listed, Fit::unbounded()), &pinned)
    }

    /// The built-in tools Tier 1 lists: every one that is not pinned,
    /// resident or not, so the text does not change from turn to turn.
    fn listed_builtins(&self) -> Vec<&'a ToolEntry> {
        self.builtins().into_iter().filter(|r| !self.policy.pinned.contains(&r.name)).collect()
    }

    /// The Tier-1 text (see [`tier1::render`]).
    pub(crate) fn tier1(&self) -> String {
        tier1::render(&self.view(&self.listed_builtins(), self.fit()))
    }

    /// The instructions beside the meta-tools (see [`tier1::instructions`]).
    pub(crate) fn instructions(&self) -> String {
        tier1::instructions(&self.view(&self.listed_builtins(), Fit::unbounded()))
    }

    /// Run `f` on the view of this turn (what `request_tools` offers: the
    /// built-in tools neither resident nor unlocked), folded to fit.
    pub(crate) fn with_view<T>(&self, f: impl FnOnce(&View<'_>) -> T) -> T {
        let builtins = self.builtins();
        f(&self.view(&self.registry(&builtins), self.fit()))
    }

    /// [`with_view`](Self::with_view) for what does not depend on how
    /// sections are folded (whether a meta-tool is offered or callable).
    fn with_unfolded_view<T>(&self, f: impl FnOnce(&View<'_>) -> T) -> T {
        let builtins = self.builtins();
        f(&self.view(&self.registry(&builtins), Fit::unbounded()))
    }

    /// The view token accounting reads: every built-in tool in the
    /// registry, folded as Tier 1 is.
    pub(crate) fn with_full_view<T>(&self, f: impl FnOnce(&View<'_>) -> T) -> T {
        f(&self.view(&self.builtins(), self.fit()))
    }

    /// The tool called `name`, if the policy lets this session see it.
    pub(crate) fn visible(&self, name: &str) -> Option<&'a ToolEntry> {
        self.catalog.tool(name).filter(|e| self.policy.shows(self.catalog, e.category, &e.origin))
    }

    /// Whether the meta-tool `meta` accepts a call now.
    pub(crate) fn accepts(&self, meta: &dyn Offered) -> bool {
        self.with_unfolded_view(|view| meta.callable(view))
    }

    /// Whether `entry` may be called by its name in this session.
    pub(crate) fn is_callable(&self, entry: &ToolEntry) -> bool {
        let (name, state) = (&entry.name, self.state);
        if self.open
            || state.unlocked.contains(name)
            || state.equivalents.contains(name)
            || self.policy.pinned.contains(name)
        {
            return true;
        }
        match entry.category {
            Category::Builtin if state.resident.is_empty() => self.default_resident(&self.builtins()).contains(name),
            Category::Builtin => state.resident.contains(name),
            Category::Skill => false,
            flat => self.policy.flattens(flat),
        }
    }

    /// The error for a call of `entry`, which this session may see but
    /// not call by name yet, saying how to reach it.
    pub(crate) fn not_callable(&self, entry: &ToolEntry) -> Error {
        let hint = not_active(entry.category);
        Error::UnknownTool { name: entry.name.clone(), hint: format!("it is not active; {hint}") }
    }

    /// The meta-tools offered now, by name.
    fn offered(&self) -> Vec<&'static str> {
        self.with_unfolded_view(|view| {
            meta_tools::ALL.iter().filter(|m| m.definition(view).is_some()).map(|m| m.name()).collect()
        })
    }

    /// Where a model finds tools, after the names closest to `name` it
    /// may have meant.
    fn where_to_look(&self, name: &str) -> String {
        let metas = self.offered();
        let known = self.catalog.tools().iter().filter(|e| self.policy.shows(self.catalog, e.category, &e.origin));
        let closest = closest(name, known.map(|e| e.name.as_str()).chain(metas.iter().copied()));
        let look = if metas.is_empty() {
            "call one of the tools you were given".to_owned()
        } else {
            format!("find tools with: {}", metas.join(", "))
        };
        match closest.as_slice() {
            [] => look,
            names => format!(
                "did you mean {}? Else {look}",
                names.iter().map(|n| format!("`{n}`")).collect::<Vec<_>>().join(" or ")
            ),
        }
    }

    /// The error for a call of `name`, which this session does not know:
    /// the names it may have meant, and where to find tools.
    pub(crate) fn unknown(&self, name: &str) -> Error {
        Error::UnknownTool { name: name.to_owned(), hint: self.where_to_look(name) }
    }

    /// The error for a `call_tool` of `name`, which this session does not
    /// know: the same words, as an error of `call_tool`'s arguments (a
    /// result the model reads, not a protocol error that ends a client's
    /// session).
    pub(crate) fn unknown_inner(&self, name: &str) -> Error {
        let reason = format!("no tool `{name}` in this session: {}", self.where_to_look(name));
        Error::InvalidArguments { tool: call_tool::CALL_TOOL.to_owned(), reason }
    }

    /// The resources whose tools this session may see and `wanted` keeps,
    /// each once, in catalog order.
    pub(crate) fn origins(&self, wanted: impl Fn(&ToolEntry) -> bool) -> Vec<&'a str> {
        let catalog = self.catalog;
        let shown = catalog.tools().iter().filter(|e| self.policy.shows(catalog, e.category, &e.origin) && wanted(e));
        origins(shown.map(|e| e.origin.as_str()))
    }
}

/// How alike two names must be (Jaro-Winkler, 0 to 1) to be suggested.
const ALIKE: f64 = 0.85;

/// Up to three of `known` that `name` may have meant, the closest first:
/// alike as a whole, or alike to the action part of a `plugin__action`
/// name (`evaluate` for `calc__evaluate`), case aside.
fn closest<'a>(name: &str, known: impl Iterator<Item = &'a str>) -> Vec<&'a str> {
    let wanted = name.to_lowercase();
    let score = |candidate: &str| {
        let candidate = candidate.to_lowercase();
        let action = candidate.rsplit(crate::contract::NAME_SEPARATOR).next().unwrap_or(&candidate).to_owned();
        strsim::jaro_winkler(&wanted, &candidate).max(strsim::jaro_winkler(&wanted, &action))
    };
    let mut scored: Vec<(f64, &str)> =
        known.map(|candidate| (score(candidate), candidate)).filter(|(s, _)| *s >= ALIKE).collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(b.1)));
    scored.dedup_by(|a, b| a.1 == b.1);
    scored.into_iter().take(3).map(|(_, candidate)| candidate).collect()
}

/// The full records of the tools of each of `origins`, one resource at a
/// time (loading what it must), with what failed.
pub(crate) async fn records<'o>(
    backend: &dyn Backend,
    catalog: &Catalog,
    origins: Vec<&'o str>,
) -> Vec<(&'o str, Result<Vec<ToolRecord>>)> {
    let mut all = Vec::with_capacity(origins.len());
    for origin in origins {
        all.push((origin, backend.definitions(catalog, origin).await));
    }
    all
}

/// The built-in tools resident this turn: the default set, or when there
/// are more than the threshold and a user message to select by, what
/// `selector` picks for it (every one, when it fails) and the pinned ones.
pub(crate) async fn resident(rules: &Rules<'_>, selector: &dyn Selector, query: Option<&str>) -> BTreeSet<String> {
    let builtins = rules.builtins();
    let Some(query) = query.filter(|_| builtins.len() > rules.policy.selection_threshold) else {
        return rules.default_resident(&builtins);
    };
    // What is known of each: the full record once its plugin is loaded.
    let candidates: Vec<ToolRecord> =
        builtins.iter().map(|e| rules.catalog.record(e).unwrap_or_else(|| ToolRecord::of_entry(e))).collect();
    let mut resident: BTreeSet<String> = match selector.select(query, &candidates, rules.policy.selection_max).await {
        Ok(names) => names.into_iter().collect(),
        Err(reason) => {
            tracing::warn!(%reason, "tool selector failed; offering every built-in tool this turn");
            builtins.iter().map(|r| r.name.clone()).collect()
        }
    };
    resident.extend(rules.default_resident(&builtins));
    resident
}

/// The tools of a turn with these rules: the meta-tools offered, the
/// resident (and, with a user message, the unlocked) built-in tools, the
/// flattened tools of legacy modes, and for a listing (no user message)
/// `call_tool`. Never fails: a tool whose plugin cannot be loaded is left
/// out and logged.
pub(crate) async fn tools(rules: &Rules<'_>, backend: &dyn Backend, user_query: bool) -> Turn {
    let catalog = rules.catalog;
    let mut tools: Vec<ToolDef> =
        rules.with_view(|view| meta_tools::ALL.iter().filter_map(|m| m.definition(view)).collect());
    let mut direct: BTreeSet<&String> = rules.state.resident.iter().collect();
    if user_query {
        direct.extend(rules.state.unlocked.iter());
    }
    for entry in direct.into_iter().filter_map(|name| catalog.tool(name)) {
        if entry.category == Category::Mcp {
            continue;
        }
        match definition(backend, catalog, entry).await.map(|r| ToolDef::of(&r)) {
            Ok(Some(def)) => tools.push(def),
            Ok(None) => tracing::warn!(tool = %entry.name, "tool left out of this turn: no input schema"),
            Err(error) => tracing::warn!(tool = %entry.name, %error, "tool left out of this turn"),
        }
    }
    // Legacy modes: every action of those kinds, one origin at a time.
    let flat = rules.origins(|e| rules.policy.flattens(e.category));
    for (origin, records) in records(backend, catalog, flat).await {
        match records {
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
    if !user_query {
        tools.push(call_tool::definition());
    }
    Turn { tools }
}

/// Say once per plugin that a pinned tool is charged by its stub alone: its
/// plugin has no manifest section, so its schema is known only once it is
/// compiled, and charging it then would change the fit (and Tier 1) from
/// one moment to the next.
fn unsized_pin(plugin: &str) {
    static TOLD: std::sync::Mutex<BTreeSet<String>> = std::sync::Mutex::new(BTreeSet::new());
    if TOLD.lock().unwrap_or_else(|e| e.into_inner()).insert(plugin.to_owned()) {
        tracing::warn!(
            plugin,
            "a pinned tool's schema is not known without compiling its plugin, so the prompt budget charges its \
             stub alone; `quiver package` writes the manifest section that lets it be charged in full"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::closest;

    #[test]
    fn the_names_a_model_may_have_meant_come_first() {
        let known = ["calc__evaluate", "datetime__add", "text__regex_replace", "search_tools"];
        assert_eq!(closest("calc_evaluate", known.into_iter()), ["calc__evaluate"]);
        assert_eq!(closest("evaluate", known.into_iter()), ["calc__evaluate"]);
        assert_eq!(closest("Search_Tool", known.into_iter()), ["search_tools"]);
        assert!(closest("sha256", known.into_iter()).is_empty());
    }
}
