//! `request_tools(tool_names)`: load built-in tools that are not resident;
//! their definitions come back as the result and they become callable.

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use super::line::Line;
use super::tool::{CallContext, CallFuture, MetaTool, View, to_value};
use crate::catalog::{Category, SUMMARY_CHARS};
use crate::contract::one_line;
use crate::disclosure::formats::ToolDef;
use crate::error::{Error, Result};
use crate::invoke::{Output, definition};

pub(crate) struct RequestTools;

/// Most tools one call may load.
const MAX_TOOLS: usize = 20;

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct Args {
    /// The tools to load, by name.
    tool_names: Vec<String>,
}

impl MetaTool for RequestTools {
    type Args = Args;
    const NAME: &'static str = "request_tools";
    const CATEGORY: Category = Category::Builtin;
    const SECTION: &'static str = "More built-in tools";
    const PURPOSE: &'static str = "Load built-in tools by name: their full definitions are returned and you can \
                                   call them directly from then on.";
    const LABEL: &'static str = "Available";
    const NOUN: &'static str = "tool";
    const CHOICE: Option<&'static str> = Some("tool_names");

    /// The compact catalog of the tools not resident.
    fn lines(view: &View<'_>) -> Vec<Line> {
        view.registry
            .iter()
            .map(|r| {
                // Folded, tools group by their plugin's first declared
                // category, else by their plugin.
                let plugin = view.catalog.get(&r.origin);
                let group = plugin.and_then(|p| p.stub().categories.first().cloned()).unwrap_or(r.origin.clone());
                Line::described(&r.origin, &r.name, &one_line(&r.summary, SUMMARY_CHARS)).in_group(group)
            })
            .collect()
    }

    fn choices(view: &View<'_>) -> Vec<String> {
        view.registry.iter().map(|r| r.name.clone()).collect()
    }

    /// It may also be asked for a tool that is already resident.
    fn callable(view: &View<'_>) -> bool {
        view.policy.allows(Category::Builtin)
    }

    fn run<'a>(cx: CallContext<'a>, args: Args) -> CallFuture<'a> {
        Box::pin(async move {
            if args.tool_names.is_empty() || args.tool_names.len() > MAX_TOOLS {
                return Err(Error::InvalidArguments {
                    tool: Self::NAME.into(),
                    reason: format!("give 1 to {MAX_TOOLS} tool names"),
                });
            }
            let mut definitions = Vec::new();
            let mut unknown = Vec::new();
            for name in &args.tool_names {
                match cx
                    .catalog
                    .tool(name)
                    .filter(|e| e.category == Category::Builtin && cx.policy.shows(cx.catalog, e.category, &e.origin))
                {
                    Some(entry) => definitions.push(full(&cx, entry).await?),
                    None => unknown.push(name.clone()),
                }
            }
            if !unknown.is_empty() {
                return Err(Error::InvalidArguments {
                    tool: Self::NAME.into(),
                    reason: format!("no built-in tool named {}; use search_tools to find tools", unknown.join(", ")),
                });
            }
            cx.unlocked.extend(args.tool_names);
            Ok(Output::Json(Value::Array(definitions)))
        })
    }
}

/// The full MCP definition of `entry` (loading its plugin), as JSON.
pub(crate) async fn full(cx: &CallContext<'_>, entry: &crate::catalog::ToolEntry) -> Result<Value> {
    let record = definition(cx.backend, cx.catalog, entry).await?;
    let def = ToolDef::of(&record).ok_or_else(|| Error::internal("request_tools", "a definition without a schema"))?;
    Ok(to_value(def.to_mcp()))
}
