//! `request_tools(tool_names)`: load built-in tools that are not resident;
//! their definitions come back as the result and they become callable.

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use super::{CallContext, CallFuture, MetaTool, View, definition, parse_args};
use crate::catalog::Category;
use crate::disclosure::formats::{ToolDef, one_line};
use crate::{Error, Result};

pub(crate) struct RequestTools;

const NAME: &str = "request_tools";

/// Characters of a built-in tool's description in the compact catalog.
pub(crate) const COMPACT_CHARS: usize = 80;

/// Most tools one call may load.
const MAX_TOOLS: usize = 20;

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Args {
    /// The tools to load, by name.
    tool_names: Vec<String>,
}

/// The Tier-1 lines: the compact catalog of tools not resident.
pub(crate) fn stub_lines(view: &View<'_>) -> Vec<String> {
    view.registry.iter().map(|r| format!("- {}: {}", r.name, one_line(&r.summary, COMPACT_CHARS))).collect()
}

impl MetaTool for RequestTools {
    fn name(&self) -> &'static str {
        NAME
    }

    fn definition(&self, view: &View<'_>) -> Option<ToolDef> {
        if view.registry.is_empty() || !view.policy.allows(Category::Builtin) {
            return None;
        }
        let names: Vec<String> = view.registry.iter().map(|r| r.name.clone()).collect();
        let description = format!(
            "Load built-in tools by name: their full definitions are returned and you can call them directly \
             from then on.\nAvailable:\n{}",
            stub_lines(view).join("\n")
        );
        Some(definition::<Args>(NAME, description, Category::Builtin, &[("tool_names", &names)]))
    }

    fn call<'a>(&'a self, cx: CallContext<'a>, args: Value) -> CallFuture<'a> {
        Box::pin(async move {
            let args: Args = parse_args(NAME, args)?;
            if args.tool_names.is_empty() || args.tool_names.len() > MAX_TOOLS {
                return Err(Error::InvalidArguments {
                    tool: NAME.into(),
                    reason: format!("give 1 to {MAX_TOOLS} tool names"),
                });
            }
            let mut definitions = Vec::new();
            let mut unknown = Vec::new();
            for name in &args.tool_names {
                match cx.catalog.tool(name).filter(|r| r.category == Category::Builtin) {
                    Some(record) if cx.policy.allows(Category::Builtin) => {
                        definitions.push(load(&cx, &record.origin, &record.action, name).await?);
                    }
                    _ => unknown.push(name.clone()),
                }
            }
            if !unknown.is_empty() {
                return Err(Error::InvalidArguments {
                    tool: NAME.into(),
                    reason: format!("no built-in tool named {}; use search_tools to find tools", unknown.join(", ")),
                });
            }
            for name in &args.tool_names {
                cx.unlocked.insert(name.clone());
            }
            Ok(Value::Array(definitions))
        })
    }
}

/// The definition of `action` of `plugin` (loading it), as a JSON object.
pub(crate) async fn load(cx: &CallContext<'_>, plugin: &str, action: &str, name: &str) -> Result<Value> {
    let manifest = cx.host.describe(plugin).await?;
    let spec = manifest.action(action).ok_or_else(|| Error::Internal(format!("{plugin} lost action {action}")))?;
    let def = ToolDef {
        name: name.to_owned(),
        description: spec.description.clone(),
        input_schema: crate::disclosure::formats::model_schema(spec.input_schema.clone()),
        category: manifest.kind.into(),
        access: Some(spec.access),
        meta: false,
    };
    Ok(serde_json::to_value(def.to_mcp()).expect("plain data serializes"))
}
