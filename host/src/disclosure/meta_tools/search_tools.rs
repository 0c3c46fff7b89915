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
            let found: Vec<Entry> = index
                .search(&args.query, args.limit as usize, |e| cx.policy.shows(cx.catalog, e.category, &e.origin))
                .into_iter()
                .map(|(e, _)| e.clone())
                .collect();
            let mut hits = Vec::with_capacity(found.len());
            for entry in found {
                hits.push(hit(&cx, &entry, args.detail).await?);
                if entry.category != Category::Skill {
                    cx.unlocked.insert(entry.name);
                }
            }
            Ok(Output::Json(to_value(hits)))
        })
    }
}

async fn hit(cx: &CallContext<'_>, found: &Entry, detail: Detail) -> Result<Hit> {
    let (name, category) = (found.name.as_str(), found.category);
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
            format!("{arg}{optional}: {}", type_of(resolved(schema, property)))
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

/// A property's type in a word: its `type`, its few allowed values, or
/// `any`.
fn type_of(property: &Value) -> String {
    let values: Vec<&Value> = match (&property["enum"], &property["oneOf"]) {
        (Value::Array(values), _) => values.iter().collect(),
        (_, Value::Array(branches)) => branches.iter().filter_map(|b| b.get("const")).collect(),
        _ => Vec::new(),
    };
    if !values.is_empty() && values.len() <= 6 {
        return values.iter().map(|v| v.to_string()).collect::<Vec<_>>().join("|");
    }
    match &property["type"] {
        Value::String(kind) => kind.clone(),
        Value::Array(kinds) => kinds.iter().filter_map(Value::as_str).collect::<Vec<_>>().join("|"),
        _ => "any".to_owned(),
    }
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
    }
}
