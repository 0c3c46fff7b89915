//! `search_tools(query | queries, detail, limit)`: rank every tool and
//! skill by what it does, at three levels of detail, for one need or for
//! several at once (ranked per need, answered per need). Equivalent tools
//! (one tool several servers serve) take one place, naming the others.
//! Tools it returns become callable.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::line::Line;
use super::tool::{CallContext, CallFuture, MetaTool, View, to_value};
use crate::catalog::Category;
use crate::disclosure::reach::{Reach, reach};
use crate::disclosure::search::Entry;
use crate::error::{Error, Result};
use crate::invoke::Output;

pub(crate) struct SearchTools;

/// Default and largest number of results (per need).
const DEFAULT_LIMIT: u32 = 5;
const MAX_LIMIT: u32 = 20;

/// Most needs one call may search.
const MAX_NEEDS: usize = 5;

/// Equivalents a hit names at most.
const NAMED_EQUIVALENTS: usize = 5;

/// How much of each result to return.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Detail {
    /// Names only.
    Names,
    /// Name, kind and one line.
    #[default]
    Summary,
    /// Everything, with the input schema.
    Full,
}

fn default_limit() -> u32 {
    DEFAULT_LIMIT
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct Args {
    /// What you want to do, in a few words.
    query: Option<String>,
    /// Instead of `query`: up to 5 needs of one task, a few words each; results come back per need.
    queries: Option<Vec<String>>,
    /// `names`, `summary` (name, kind, one line) or `full` (with the input schema).
    #[serde(default)]
    detail: Detail,
    /// How many results (1-20).
    #[serde(default = "default_limit")]
    #[schemars(range(min = 1, max = 20))]
    limit: u32,
}

#[derive(Serialize)]
struct Hit {
    name: String,
    kind: Category,
    #[serde(skip_serializing_if = "Option::is_none")]
    summary: Option<String>,
    /// How to use it: call directly, or through which meta-tool.
    #[serde(skip_serializing_if = "Option::is_none")]
    usage: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    definition: Option<Value>,
    /// Nothing passed the relevance cut, and this is only the nearest
    /// there is (or a resource there is): check it before using it.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    weak: bool,
    /// The same tool under other names (other servers serving it): the
    /// first few, callable as well.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    also_as: Vec<String>,
    /// How many other names it has in all, when more than `also_as` lists.
    #[serde(skip_serializing_if = "Option::is_none")]
    also_count: Option<usize>,
}

/// The hits of one need, when several were asked for.
#[derive(Serialize)]
struct Need {
    query: String,
    hits: Vec<Hit>,
}

impl MetaTool for SearchTools {
    type Args = Args;
    const NAME: &'static str = "search_tools";
    const CATEGORY: Category = Category::Builtin;
    const SECTION: &'static str = "Search";
    const PURPOSE: &'static str = "Search all tools and skills by what they do; for a task with several steps, give \
                                   `queries`, one per step. Tools found can be called directly from then on; skills \
                                   are read with read_skill.";
    const LABEL: &'static str = "";
    const NOUN: &'static str = "tool";
    const CHOICE: Option<&'static str> = None;
    const FOOTER: Option<&'static str> = Some("search_tools finds any tool or skill by what it does.");

    /// It has no section of its own: it searches everything.
    fn lines(_view: &View<'_>) -> Vec<Line> {
        Vec::new()
    }

    fn choices(_view: &View<'_>) -> Vec<String> {
        Vec::new()
    }

    /// Offered when there is more than a resident set's worth to search.
    fn offered(view: &View<'_>) -> bool {
        let tools =
            view.catalog.tools().iter().filter(|r| view.policy.shows(view.catalog, r.category, &r.origin)).count()
                + if view.policy.allows(Category::Skill) { view.catalog.skills().count() } else { 0 };
        tools > view.policy.selection_threshold
    }

    /// Search works on any catalog size.
    fn callable(_view: &View<'_>) -> bool {
        true
    }

    fn run<'a>(mut cx: CallContext<'a>, args: Args) -> CallFuture<'a> {
        Box::pin(async move {
            let needs: Vec<String> = match (args.query, args.queries) {
                (Some(query), None) => vec![query],
                (None, Some(queries)) => queries,
                _ => Vec::new(),
            };
            let several = needs.len() > 1;
            if needs.is_empty()
                || needs.len() > MAX_NEEDS
                || needs.iter().any(|q| q.trim().is_empty())
                || !(1..=MAX_LIMIT).contains(&args.limit)
            {
                return Err(Error::InvalidArguments {
                    tool: Self::NAME.into(),
                    reason: format!(
                        "give a non-empty `query`, or `queries` (1 to {MAX_NEEDS} non-empty needs), and a `limit` \
                         from 1 to {MAX_LIMIT}"
                    ),
                });
            }
            let mut answers = Vec::with_capacity(needs.len());
            for query in needs {
                let hits = need(&mut cx, &query, args.detail, args.limit as usize).await?;
                answers.push(Need { query, hits });
            }
            Ok(Output::Json(if several { to_value(answers) } else { to_value(answers.remove(0).hits) }))
        })
    }
}

/// The hits of one query, equivalents collapsed; never a bare `[]`: the
/// nearest there is, marked weak. Tools found become callable and are
/// listed from then on; their equivalents become callable by name only.
async fn need(cx: &mut CallContext<'_>, query: &str, detail: Detail, limit: usize) -> Result<Vec<Hit>> {
    let index = cx.search.index(cx.catalog);
    let (catalog, policy) = (cx.catalog, cx.policy);
    let shown = |e: &Entry| policy.shows(catalog, e.category, &e.origin);
    let mut found: Vec<(Entry, Vec<String>)> = index
        .search_collapsed(query, limit, shown)
        .into_iter()
        .map(|hit| (hit.entry.clone(), hit.equivalents.iter().map(|e| e.name.clone()).collect()))
        .collect();
    let weak = found.is_empty();
    if weak {
        found = index.weak(query, limit, shown).into_iter().map(|(e, _)| (e.clone(), Vec::new())).collect();
    }
    let mut hits = Vec::with_capacity(found.len());
    for (entry, equivalents) in found {
        let mut one = hit(cx, &entry, detail).await?;
        one.weak = weak;
        if entry.category != Category::Skill && !entry.resource {
            cx.unlocked.insert(entry.name);
            // Only the names the answer gives: a model calls what it was told.
            cx.equivalents.extend(equivalents.iter().take(NAMED_EQUIVALENTS).cloned());
        }
        if equivalents.len() > NAMED_EQUIVALENTS {
            one.also_count = Some(equivalents.len());
        }
        one.also_as = equivalents.into_iter().take(NAMED_EQUIVALENTS).collect();
        hits.push(one);
    }
    Ok(hits)
}

/// How a model reaches a resource it found: the meta-tool call that shows
/// what it holds (in a progressive mode), or its tools (in legacy mode).
fn resource_usage(cx: &CallContext<'_>, found: &Entry) -> String {
    let name = &found.name;
    if !cx.policy.progressive(found.category) {
        return format!("its tools are in your tool list as `{name}{}…`", crate::contract::NAME_SEPARATOR);
    }
    match found.category {
        Category::Database => format!("database(subcommand: \"list_tables\", database: \"{name}\")"),
        Category::Connector => format!("connector(subcommand: \"discover\", connector: \"{name}\")"),
        _ => format!("mcp(subcommand: \"discover\", server: \"{name}\")"),
    }
}

async fn hit(cx: &CallContext<'_>, found: &Entry, detail: Detail) -> Result<Hit> {
    let (name, category) = (found.name.as_str(), found.category);
    if found.resource {
        let usage = resource_usage(cx, found);
        return Ok(Hit {
            name: name.to_owned(),
            kind: category,
            summary: (detail != Detail::Names).then(|| found.summary.clone()),
            usage: (detail != Detail::Names).then_some(usage),
            definition: None,
            weak: false,
            also_as: Vec::new(),
            also_count: None,
        });
    }
    let entry = cx.catalog.tool(name);
    // The arguments, when known without loading anything (a loaded
    // plugin, an MCP tool), so that a first call can be right; else where
    // to get them.
    let schema =
        entry.filter(|_| detail == Detail::Summary).and_then(|e| cx.catalog.record(e)).and_then(|r| r.input_schema);
    let usage = match (reach(cx.catalog, category, &found.origin), schema) {
        (Reach::Skill, _) => format!("read_skill(name: \"{name}\")"),
        (Reach::Saved, _) => "read-only entry: see it with the mcp tool's discover".to_owned(),
        (Reach::Direct, Some(schema)) if detail == Detail::Summary => {
            format!("call it directly: {}", signature(name, &schema))
        }
        (Reach::Direct, _) if detail == Detail::Summary => {
            "call it directly; its arguments: search_tools with detail \"full\", or request_tools".to_owned()
        }
        (Reach::Direct, _) => "call it directly".to_owned(),
    };
    let definition = match (detail, entry) {
        (Detail::Full, Some(entry)) => Some(super::request_tools::full(cx, entry).await?),
        _ => None,
    };
    Ok(Hit {
        name: name.to_owned(),
        kind: category,
        summary: (detail != Detail::Names).then(|| found.summary.clone()),
        usage: (detail != Detail::Names).then_some(usage),
        definition,
        weak: false,
        also_as: Vec::new(),
        also_count: None,
    })
}

/// `name(arg: type, optional?: type, ...)` from an input schema: the
/// arguments a first call needs, in a few tokens.
fn signature(name: &str, schema: &Value) -> String {
    let required: Vec<&str> = schema["required"].as_array().into_iter().flatten().filter_map(Value::as_str).collect();
    let arguments: Vec<String> = schema["properties"]
        .as_object()
        .into_iter()
        .flatten()
        .map(|(arg, property)| {
            let optional = if required.contains(&arg.as_str()) { "" } else { "?" };
            format!("{arg}{optional}: {}", type_of(schema, property, 0))
        })
        .collect();
    format!("{name}({})", arguments.join(", "))
}

/// `property`, or what its local `$ref` (`#/$defs/...`) points at.
fn resolved<'a>(root: &'a Value, property: &'a Value) -> &'a Value {
    property["$ref"]
        .as_str()
        .and_then(|r| r.strip_prefix('#'))
        .and_then(|pointer| root.pointer(pointer))
        .unwrap_or(property)
}

/// Most constants a type lists as literals.
const LISTED_VALUES: usize = 6;

/// A property's type in a word: its `type`; its few allowed values (an
/// `enum`, or a union of `const`s, as schemars writes a documented Rust
/// enum); the types of a union (`anyOf` / `oneOf`, an optional value's
/// `null` included); the one schema of an `allOf`; else `any`. Local
/// `$ref`s are followed, a few deep.
fn type_of(root: &Value, property: &Value, depth: usize) -> String {
    let property = resolved(root, property);
    if depth > 4 {
        return "any".to_owned();
    }
    let constants = constants(root, property);
    if !constants.is_empty() && constants.len() <= LISTED_VALUES {
        return constants.iter().map(|v| v.to_string()).collect::<Vec<_>>().join("|");
    }
    if let Value::Array(kinds) = &property["type"] {
        return kinds.iter().filter_map(Value::as_str).collect::<Vec<_>>().join("|");
    }
    if let Value::String(kind) = &property["type"] {
        return kind.clone();
    }
    let branches = ["anyOf", "oneOf"].iter().find_map(|k| property[*k].as_array());
    if let Some(branches) = branches {
        let mut kinds: Vec<String> = Vec::new();
        for kind in branches.iter().map(|b| type_of(root, b, depth + 1)) {
            if !kinds.contains(&kind) {
                kinds.push(kind);
            }
        }
        if !kinds.is_empty() && !kinds.iter().any(|k| k == "any") {
            return kinds.join("|");
        }
    }
    match property["allOf"].as_array().map(Vec::as_slice) {
        Some([one]) => type_of(root, one, depth + 1),
        _ => "any".to_owned(),
    }
}

/// The values `property` allows, when it allows only a few constants.
fn constants<'a>(root: &'a Value, property: &'a Value) -> Vec<&'a Value> {
    if let Value::Array(values) = &property["enum"] {
        return values.iter().collect();
    }
    let Some(branches) = ["oneOf", "anyOf"].iter().find_map(|k| property[*k].as_array()) else { return Vec::new() };
    let values: Option<Vec<&Value>> = branches.iter().map(|b| resolved(root, b).get("const")).collect();
    values.unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    #[test]
    fn a_signature_names_each_argument_and_its_type() {
        let schema = json!({
            "type": "object",
            "properties": {
                "data": {"type": "string"},
                "algorithm": {"$ref": "#/$defs/Algorithm"},
                "hmac_key": {"type": ["string", "null"]},
                "extra": {}
            },
            "required": ["data", "algorithm"],
            "$defs": {"Algorithm": {"oneOf": [{"const": "sha256"}, {"const": "md5"}]}}
        });
        assert_eq!(
            super::signature("codec__hash", &schema),
            "codec__hash(data: string, algorithm: \"sha256\"|\"md5\", hmac_key?: string|null, extra?: any)"
        );
        // Documented enums as schemars writes them, inline or optional, and unions.
        let schema = json!({
            "type": "object",
            "properties": {
                "unit": {"oneOf": [{"type": "string", "const": "km", "description": "Kilometres."}, {"type": "string", "const": "mi", "description": "Miles."}]},
                "round": {"anyOf": [{"$ref": "#/$defs/Round"}, {"type": "null"}]},
                "value": {"anyOf": [{"type": "number"}, {"type": "string"}]},
                "wrapped": {"allOf": [{"$ref": "#/$defs/Round"}]}
            },
            "required": ["unit"],
            "$defs": {"Round": {"oneOf": [{"const": "up", "description": "Up."}, {"const": "down", "description": "Down."}]}}
        });
        assert_eq!(
            super::signature("units__convert", &schema),
            "units__convert(unit: \"km\"|\"mi\", round?: \"up\"|\"down\"|null, value?: number|string, wrapped?: \"up\"|\"down\")"
        );
    }
}
