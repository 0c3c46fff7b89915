//! What every meta-tool is made of: the [`MetaTool`] trait a meta-tool's
//! file implements, the [`Offered`] face sessions use (derived from it by
//! [`Meta`]), and the helpers the implementations share.

use std::collections::BTreeSet;
use std::marker::PhantomData;
use std::sync::Arc;

use schemars::JsonSchema;
use schemars::generate::SchemaSettings;
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::fold::{self, Fit};
pub(crate) use super::line::first_names;
use super::line::{self, Line};
use crate::catalog::{Catalog, Category, ToolEntry};
use crate::disclosure::formats::ToolDef;
use crate::disclosure::policy::Policy;
use crate::disclosure::search::SearchCache;
use crate::disclosure::tables::ListedTables;
use crate::error::{Error, Result};
use crate::invoke::progress::Sink;
use crate::invoke::{Backend, BoxFuture, Call, Caller, Facts, Output};

/// What a meta-tool's definition depends on.
pub(crate) struct View<'a> {
    pub catalog: &'a Catalog,
    pub policy: &'a Policy,
    /// Built-in tools that are not resident this turn (what `request_tools` offers).
    pub registry: &'a [&'a ToolEntry],
    /// The tables database adapters listed.
    pub tables: &'a ListedTables,
    /// How each section fits the prompt budget.
    pub fit: Arc<Fit>,
}

/// What a meta-tool call may use and change.
pub(crate) struct CallContext<'a> {
    pub catalog: &'a Catalog,
    pub policy: &'a Policy,
    /// Where full definitions and results come from.
    pub backend: &'a dyn Backend,
    /// Who the calls are made for.
    pub caller: &'a Caller,
    /// The search index of each catalog version.
    pub search: &'a SearchCache,
    /// The tables database adapters listed (`list_tables` notes them).
    pub tables: &'a ListedTables,
    /// Tools this session may call directly; `request_tools` and
    /// `search_tools` add to it.
    pub unlocked: &'a mut BTreeSet<String>,
    /// Other names of tools it unlocked: callable, not listed (see
    /// [`SessionState::equivalents`](crate::disclosure::turn::SessionState::equivalents)).
    pub equivalents: &'a mut BTreeSet<String>,
    /// Where the progress of the tools it calls goes, if a face asked.
    pub progress: Option<Sink>,
    /// The facts of every tool call it made, in order.
    pub calls: &'a mut Vec<Facts>,
}

impl CallContext<'_> {
    /// Call `tool` with `input` through the backend, for this context's
    /// caller, keeping the facts of the call.
    pub(crate) async fn call(&mut self, tool: &ToolEntry, input: Value) -> Result<Output> {
        let call = Call { catalog: self.catalog, tool, input, caller: self.caller, progress: self.progress.clone() };
        let answer = self.backend.call(call).await;
        self.calls.push(answer.facts);
        answer.result
    }
}

/// The future of a meta-tool call.
pub(crate) type CallFuture<'a> = BoxFuture<'a, Result<Output>>;

/// One meta-tool, as its file declares it.
pub(crate) trait MetaTool: Sync + 'static {
    /// Its arguments; the schema models see is derived from this type.
    type Args: DeserializeOwned + JsonSchema;
    /// Its name.
    const NAME: &'static str;
    /// The category it discloses (and the per-agent filter that applies).
    const CATEGORY: Category;
    /// The heading of its Tier-1 section, e.g. `Connectors`.
    const SECTION: &'static str;
    /// What it does: the first part of its description.
    const PURPOSE: &'static str;
    /// The label of the stub list in its description, e.g. `Connectors`.
    const LABEL: &'static str;
    /// The argument that names a resource: its schema gets the `enum` of
    /// [`choices`](Self::choices) (unless its lines are folded).
    const CHOICE: Option<&'static str>;
    /// What one of its lines names, e.g. `server`, when folded lines are counted.
    const NOUN: &'static str;

    /// The Tier-1 lines: one per resource it discloses.
    fn lines(view: &View<'_>) -> Vec<Line>;

    /// The valid values of the [`CHOICE`](Self::CHOICE) argument.
    fn choices(view: &View<'_>) -> Vec<String>;

    /// Whether it is offered: the agent may see its category, the
    /// category is shown progressively, and there is something to show.
    fn offered(view: &View<'_>) -> bool {
        view.policy.allows(Self::CATEGORY) && view.policy.progressive(Self::CATEGORY) && !Self::lines(view).is_empty()
    }

    /// Whether a call is accepted (by default: when it is offered).
    fn callable(view: &View<'_>) -> bool {
        Self::offered(view)
    }

    /// Text that replaces the section in the system prompt (inline modes).
    fn inline(_view: &View<'_>) -> Option<String> {
        None
    }

    /// A line after every section, when it is offered.
    const FOOTER: Option<&'static str> = None;

    /// Run it with parsed arguments.
    fn run<'a>(cx: CallContext<'a>, args: Self::Args) -> CallFuture<'a>;
}

/// What sessions, Tier 1 and token accounting use of every meta-tool.
pub(crate) trait Offered: Sync {
    /// Its name.
    fn name(&self) -> &'static str;
    /// The category it discloses.
    fn category(&self) -> Category;
    /// Its Tier-1 lines, whether offered or not.
    fn lines(&self, view: &View<'_>) -> Vec<Line>;
    /// Its Tier-1 lines as shown: folded as the view's fit says.
    fn shown(&self, view: &View<'_>) -> Vec<Line>;
    /// Its Tier-1 section (heading, lines) when offered.
    fn section(&self, view: &View<'_>) -> Option<(String, Vec<Line>)>;
    /// Text for the system prompt in an inline mode.
    fn inline(&self, view: &View<'_>) -> Option<String>;
    /// A line after every section, when offered.
    fn footer(&self, view: &View<'_>) -> Option<&'static str>;
    /// Its definition; `None` when it is not offered.
    fn definition(&self, view: &View<'_>) -> Option<ToolDef>;
    /// Whether a call is accepted now.
    fn callable(&self, view: &View<'_>) -> bool;
    /// Parse `args` and run it.
    fn call<'a>(&'a self, cx: CallContext<'a>, args: Value) -> CallFuture<'a>;
}

/// The [`Offered`] face of a [`MetaTool`].
pub(crate) struct Meta<M>(pub(crate) PhantomData<fn() -> M>);

impl<M: MetaTool> Offered for Meta<M> {
    fn name(&self) -> &'static str {
        M::NAME
    }

    fn category(&self) -> Category {
        M::CATEGORY
    }

    fn lines(&self, view: &View<'_>) -> Vec<Line> {
        M::lines(view)
    }

    fn shown(&self, view: &View<'_>) -> Vec<Line> {
        fold::fold(M::lines(view), view.fit.shape(M::NAME), M::NOUN).0
    }

    fn section(&self, view: &View<'_>) -> Option<(String, Vec<Line>)> {
        if !M::offered(view) {
            return None;
        }
        let (lines, note) = fold::fold(M::lines(view), view.fit.shape(M::NAME), M::NOUN);
        let note = note.map(|note| format!(": {note}")).unwrap_or_default();
        Some((format!("{} ({}){note}", M::SECTION, M::NAME), lines))
    }

    fn inline(&self, view: &View<'_>) -> Option<String> {
        M::inline(view)
    }

    fn footer(&self, view: &View<'_>) -> Option<&'static str> {
        M::FOOTER.filter(|_| M::offered(view))
    }

    fn definition(&self, view: &View<'_>) -> Option<ToolDef> {
        if !M::offered(view) {
            return None;
        }
        let shape = view.fit.shape(M::NAME);
        let (lines, note) = fold::fold(M::lines(view), shape, M::NOUN);
        let description = match (lines.is_empty(), note) {
            (true, None) => M::PURPOSE.to_owned(),
            (true, Some(note)) => format!("{}\n{} ({note}).", M::PURPOSE, M::LABEL),
            (false, None) => format!("{}\n{}:\n{}", M::PURPOSE, M::LABEL, line::joined(&lines)),
            (false, Some(note)) => format!("{}\n{} ({note}):\n{}", M::PURPOSE, M::LABEL, line::joined(&lines)),
        };
        // Folded: the names are too many to list, in the text or the schema.
        let choices = if shape == fold::Shape::Full { M::choices(view) } else { Vec::new() };
        let enums: Vec<(&str, &[String])> = M::CHOICE.map(|c| (c, choices.as_slice())).into_iter().collect();
        Some(ToolDef {
            name: M::NAME.to_owned(),
            description,
            input_schema: args_schema::<M::Args>(&enums),
            output_schema: None,
            category: M::CATEGORY,
            access: None,
            meta: true,
        })
    }

    fn callable(&self, view: &View<'_>) -> bool {
        M::callable(view)
    }

    fn call<'a>(&'a self, cx: CallContext<'a>, args: Value) -> CallFuture<'a> {
        match parse_args::<M::Args>(M::NAME, args) {
            Ok(args) => M::run(cx, args),
            Err(error) => Box::pin(async move { Err(error) }),
        }
    }
}

/// The schema of `T` as a model should see it, with `enum` set on the named
/// properties (or their array items) when the lists are not empty.
pub(crate) fn args_schema<T: JsonSchema>(enums: &[(&str, &[String])]) -> Value {
    let settings = SchemaSettings::draft2020_12().with(|s| s.inline_subschemas = true);
    let mut schema = settings.into_generator().into_root_schema_for::<T>().to_value();
    tidy(&mut schema);
    if let Some(root) = schema.as_object_mut() {
        root.remove("$schema");
        root.remove("title");
        root.remove("description");
    }
    for (property, values) in enums {
        if values.is_empty() {
            continue;
        }
        let Some(target) = schema.get_mut("properties").and_then(|p| p.get_mut(*property)) else { continue };
        let target = if target.get("type") == Some(&Value::from("array")) { &mut target["items"] } else { target };
        target["enum"] = values.iter().map(|v| Value::from(v.as_str())).collect();
    }
    schema
}

/// Optional fields: `["string", "null"]` becomes `"string"` and a `null`
/// default disappears (the field can simply be left out). Fewer tokens, and
/// some providers reject type arrays.
fn tidy(schema: &mut Value) {
    match schema {
        Value::Object(map) => {
            if let Some(Value::Array(types)) = map.get("type")
                && types.len() == 2
                && types.contains(&Value::from("null"))
            {
                let other = types.iter().find(|t| *t != &Value::from("null")).cloned().unwrap_or(Value::Null);
                map.insert("type".into(), other);
            }
            if let Some(Value::Array(any)) = map.get("anyOf")
                && any.len() == 2
                && let Some(i) = any.iter().position(|s| s.get("type") == Some(&Value::from("null")))
            {
                let kept = any[1 - i].clone();
                map.remove("anyOf");
                if let Value::Object(kept) = kept {
                    for (k, v) in kept {
                        map.entry(k).or_insert(v);
                    }
                }
            }
            if map.get("default") == Some(&Value::Null) {
                map.remove("default");
            }
            for value in map.values_mut() {
                tidy(value);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(tidy),
        _ => {}
    }
}

/// Parse a meta-tool's arguments, with a message a model can act on.
fn parse_args<T: DeserializeOwned>(tool: &str, args: Value) -> Result<T> {
    let mut args = if args.is_null() { Value::Object(Default::default()) } else { args };
    // Every meta-tool argument is optional or required, never `null` by
    // meaning: a `null` one (as OpenAI's strict mode sends) is not given.
    if let Value::Object(members) = &mut args {
        members.retain(|_, value| !value.is_null());
    }
    serde_json::from_value(args)
        .map_err(|e| Error::InvalidArguments { tool: tool.to_owned(), reason: format!("{e}; see the tool's schema") })
}

/// Names an error lists at most (a large API has a thousand actions).
const LISTED_NAMES: usize = 20;

/// Longest reason a Tier-1 line gives for a resource that is failing.
const FAILING_REASON_BYTES: usize = 240;

/// The Tier-1 lines of the configured resources of `section` (`databases`,
/// `connectors`, `mcp_servers`) that could not be set up: each is named,
/// marked failing, with why, so a model knows it exists and will not work.
pub(crate) fn failing_lines(view: &View<'_>, section: &str) -> Vec<Line> {
    view.catalog
        .failing(section)
        .filter(|(name, _)| view.policy.authorized(name))
        .map(|(name, error)| {
            let reason = crate::catalog::shown::shown_bytes(&error.to_string(), FAILING_REASON_BYTES);
            Line::described(name, name, &format!("failing, not available now ({reason})"))
        })
        .collect()
}

/// What a resource meta-tool reaches: its own name, what it calls one
/// resource, and the configuration section those resources come from.
pub(crate) struct Reach {
    pub tool: &'static str,
    pub what: &'static str,
    pub section: &'static str,
}

/// `found`, or the error for a resource called `name` that is not among
/// `known`; for a resource of `reach`'s section that is configured and
/// failing, its rejection.
pub(crate) fn named_or_failing<T>(
    cx: &CallContext<'_>,
    reach: &Reach,
    name: &str,
    found: Option<T>,
    known: impl IntoIterator<Item = String>,
) -> Result<T> {
    // A rejection is told only for the kind this meta-tool reaches (a
    // profile without databases asking `mcp` for one learns nothing of
    // it), and only to a caller who may see the resource.
    let section = reach.section;
    let own = format!("[{section}.{name}]");
    let rejection = cx
        .catalog
        .rejection_of(name)
        .filter(|r| (r.origin == own || r.origin.ends_with(".wasm")) && cx.policy.authorized(name));
    match (found, rejection) {
        (Some(found), _) => Ok(found),
        (None, Some(rejection)) => Err(Error::Rejected {
            plugin: name.to_owned(),
            origin: crate::catalog::shown::shown(&rejection.origin),
            reason: crate::catalog::shown::shown(&rejection.error.to_string()),
        }),
        (None, None) => named(reach.tool, reach.what, name, None, known),
    }
}

/// `found`, or the error for a `what` called `name` that is not among `known`.
pub(crate) fn named<T>(
    tool: &str,
    what: &str,
    name: &str,
    found: Option<T>,
    known: impl IntoIterator<Item = String>,
) -> Result<T> {
    found.ok_or_else(|| {
        let known: Vec<String> = known.into_iter().collect();
        let listed = match known.len() {
            0 => "none".to_owned(),
            n if n > LISTED_NAMES => format!("{}, … ({n} in all)", known[..LISTED_NAMES].join(", ")),
            _ => known.join(", "),
        };
        Error::InvalidArguments { tool: tool.to_owned(), reason: format!("no {what} `{name}`; {what}s: {listed}") }
    })
}

/// A required argument that is missing for this subcommand.
pub(crate) fn missing(tool: &str, argument: &str, subcommand: &str) -> Error {
    Error::InvalidArguments { tool: tool.to_owned(), reason: format!("`{subcommand}` needs `{argument}`") }
}

/// JSON of plain data (structs of strings, numbers and values).
pub(crate) fn to_value(data: impl serde::Serialize) -> Value {
    serde_json::to_value(data).expect("plain data serializes")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(serde::Deserialize, JsonSchema)]
    #[allow(dead_code)]
    struct Args {
        /// Which one.
        name: String,
        /// Optional.
        file: Option<String>,
        /// Several.
        names: Vec<String>,
    }

    #[test]
    fn schemas_are_typed_tidy_and_carry_enums() {
        let names = vec!["a".to_owned(), "b".to_owned()];
        let schema = args_schema::<Args>(&[("name", &names), ("names", &names)]);
        assert_eq!(schema["properties"]["name"]["enum"], serde_json::json!(["a", "b"]));
        assert_eq!(schema["properties"]["names"]["items"]["enum"], serde_json::json!(["a", "b"]));
        assert_eq!(schema["properties"]["file"]["type"], "string");
        assert!(schema.get("$schema").is_none() && schema.get("title").is_none());
        assert_eq!(schema["required"], serde_json::json!(["name", "names"]));
        // An empty list of names adds no enum (a model could not satisfy it).
        let schema = args_schema::<Args>(&[("name", &[])]);
        assert!(schema["properties"]["name"].get("enum").is_none());
    }

    #[test]
    fn first_names_counts_the_rest() {
        assert_eq!(first_names(["a", "b"].into_iter(), 3), "a, b");
        assert_eq!(first_names(["a", "b", "c", "d"].into_iter(), 2), "a, b, … (4)");
    }
}
