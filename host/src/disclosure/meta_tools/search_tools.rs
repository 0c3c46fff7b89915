//! `search_tools(query, detail, limit)`: rank every tool and skill by what
//! it does, at three levels of detail. Tools it returns become callable.

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

/// Default and largest number of results.
const DEFAULT_LIMIT: u32 = 5;
const MAX_LIMIT: u32 = 20;

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
    query: String,
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
}

impl MetaTool for SearchTools {
    type Args = Args;
    const NAME: &'static str = "search_tools";
    const CATEGORY: Category = Category::Builtin;
    const SECTION: &'static str = "Search";
    const PURPOSE: &'static str = "Search all tools and skills by what they do. Tools found can be called directly \
                                   from then on; skills are read with read_skill.";
    const LABEL: &'static str = "";
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

    fn run<'a>(cx: CallContext<'a>, args: Args) -> CallFuture<'a> {
        Box::pin(async move {
            if args.query.trim().is_empty() || !(1..=MAX_LIMIT).contains(&args.limit) {
                return Err(Error::InvalidArguments {
                    tool: Self::NAME.into(),
                    reason: format!("give a non-empty `query` and a `limit` from 1 to {MAX_LIMIT}"),
                });
            }
            let index = cx.search.index(cx.catalog);
            let shown = |e: &Entry| cx.policy.shows(cx.catalog, e.category, &e.origin);
            let mut found: Vec<Entry> =
                index.search(&args.query, args.limit as usize, shown).into_iter().map(|(e, _)| e.clone()).collect();
            // Never a bare `[]`: the nearest there is, marked weak.
            let weak = found.is_empty();
            if weak {
                found =
                    index.weak(&args.query, args.limit as usize, shown).into_iter().map(|(e, _)| e.clone()).collect();
            }
            let mut hits = Vec::with_capacity(found.len());
            for entry in found {
                let mut one = hit(&cx, &entry, args.detail).await?;
                one.weak = weak;
                hits.push(one);
                if entry.category != Category::Skill && !entry.resource {
                    cx.unlocked.insert(entry.name);
                }
            }
            Ok(Output::Json(to_value(hits)))
        })
    }
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
