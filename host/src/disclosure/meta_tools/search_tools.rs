//! `search_tools(query, detail, limit)`: rank every tool and skill by what
//! it does, at three levels of detail. Tools it returns become callable.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{CallContext, CallFuture, MetaTool, View, definition, parse_args};
use crate::catalog::Category;
use crate::disclosure::formats::ToolDef;
use crate::{Error, Result};

pub(crate) struct SearchTools;

const NAME: &str = "search_tools";

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
struct Args {
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
    fn name(&self) -> &'static str {
        NAME
    }

    fn definition(&self, view: &View<'_>) -> Option<ToolDef> {
        // Offered when there is more than a resident set's worth to search.
        let tools = view.catalog.tools().into_iter().filter(|r| view.policy.allows(r.category)).count()
            + if view.policy.allows(Category::Skill) { view.catalog.skills().count() } else { 0 };
        if tools <= view.policy.selection_threshold {
            return None;
        }
        let description = "Search all tools and skills by what they do. Tools found can be called directly \
                           from then on; skills are read with read_skill."
            .to_owned();
        Some(definition::<Args>(NAME, description, Category::Builtin, &[]))
    }

    fn call<'a>(&'a self, cx: CallContext<'a>, args: Value) -> CallFuture<'a> {
        Box::pin(async move {
            let args: Args = parse_args(NAME, args)?;
            if args.query.trim().is_empty() || !(1..=MAX_LIMIT).contains(&args.limit) {
                return Err(Error::InvalidArguments {
                    tool: NAME.into(),
                    reason: format!("give a non-empty `query` and a `limit` from 1 to {MAX_LIMIT}"),
                });
            }
            let index = cx.host.search_index(cx.catalog);
            let found: Vec<(String, Category, String)> = index
                .search(&args.query, args.limit as usize, |e| cx.policy.allows(e.category))
                .into_iter()
                .map(|(e, _)| (e.name.clone(), e.category, e.summary.clone()))
                .collect();
            let mut hits = Vec::with_capacity(found.len());
            for (name, category, summary) in found {
                hits.push(hit(&cx, &name, category, summary, args.detail).await?);
                if category != Category::Skill {
                    cx.unlocked.insert(name);
                }
            }
            Ok(serde_json::to_value(hits).expect("plain data serializes"))
        })
    }
}

async fn hit(cx: &CallContext<'_>, name: &str, category: Category, summary: String, detail: Detail) -> Result<Hit> {
    let usage = match category {
        Category::Skill => format!("read_skill(name: \"{name}\")"),
        Category::Mcp => "read-only entry: see it with the mcp tool's discover".to_owned(),
        _ => "call it directly".to_owned(),
    };
    let definition = match (detail, category) {
        (Detail::Full, Category::Skill) | (Detail::Names | Detail::Summary, _) => None,
        (Detail::Full, Category::Mcp) => cx
            .catalog
            .tool(name)
            .and_then(|r| r.to_def())
            .map(|d| serde_json::to_value(d.to_mcp()).expect("plain data serializes")),
        (Detail::Full, _) => match cx.catalog.tool(name) {
            Some(record) => Some(super::request_tools::load(cx, &record.origin, &record.action, name).await?),
            None => None,
        },
    };
    Ok(Hit {
        name: name.to_owned(),
        kind: category,
        summary: (detail != Detail::Names).then_some(summary),
        usage: (detail != Detail::Names).then_some(usage),
        definition,
    })
}
