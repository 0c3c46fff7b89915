//! `mcp(subcommand, server, tool?, parameters?)`: discover the tools of an
//! upstream MCP server, or call one.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::tool::{CallContext, CallFuture, MetaTool, View, first_names, missing, named, to_value};
use crate::catalog::Category;

pub(crate) struct Mcp;

/// Tool names listed per server in Tier 1.
const SHOWN_TOOLS: usize = 3;

#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Subcommand {
    /// The server's tools with their input schemas.
    Discover,
    /// Call one tool.
    Call,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct Args {
    /// `discover` returns the server's tools with their input schemas (only `tool`, if given); `call` runs `tool`.
    subcommand: Subcommand,
    /// The MCP server.
    server: String,
    /// The tool: for `call`, and optionally for `discover`.
    tool: Option<String>,
    /// For `call`: the tool's arguments, an object matching its schema.
    parameters: Option<Map<String, Value>>,
}

#[derive(Serialize)]
struct DiscoveredTool {
    name: String,
    description: String,
    input_schema: Value,
}

impl MetaTool for Mcp {
    type Args = Args;
    const NAME: &'static str = "mcp";
    const CATEGORY: Category = Category::Mcp;
    const SECTION: &'static str = "MCP servers";
    const PURPOSE: &'static str = "Use the tools of MCP servers. `discover` returns a server's tools with their \
                                   input schemas; `call` runs `tool` with `parameters`.";
    const LABEL: &'static str = "Servers";
    const CHOICE: Option<&'static str> = Some("server");

    /// Name, tool count, first tool names.
    fn lines(view: &View<'_>) -> Vec<String> {
        view.catalog
            .mcp_servers()
            .map(|s| {
                let names = first_names(s.tools.iter().map(|t| t.name.as_str()), SHOWN_TOOLS);
                format!("- {} ({} tools): {names}", s.name, s.tools.len())
            })
            .collect()
    }

    fn choices(view: &View<'_>) -> Vec<String> {
        view.catalog.mcp_servers().map(|s| s.name.clone()).collect()
    }

    fn run<'a>(cx: CallContext<'a>, args: Args) -> CallFuture<'a> {
        Box::pin(async move {
            let servers = || cx.catalog.mcp_servers().map(|s| s.name.clone());
            let server = named(Self::NAME, "server", &args.server, cx.catalog.mcp_server(&args.server), servers())?;
            let tools = cx.catalog.tools_of(&server.name);
            let tool = match &args.tool {
                Some(name) => {
                    let known = || tools.iter().map(|t| t.action.clone());
                    Some(named(Self::NAME, "tool", name, tools.iter().find(|t| &t.action == name), known())?)
                }
                None => None,
            };
            match args.subcommand {
                Subcommand::Discover => {
                    let records = cx.backend.definitions(cx.catalog, &server.name).await?;
                    let tools: Vec<DiscoveredTool> = records
                        .into_iter()
                        .filter(|r| tool.is_none_or(|one| one.action == r.action))
                        .map(|r| DiscoveredTool {
                            name: r.action,
                            description: r.description,
                            input_schema: r.input_schema.unwrap_or_default(),
                        })
                        .collect();
                    Ok(to_value(tools))
                }
                Subcommand::Call => {
                    let tool = tool.ok_or_else(|| missing(Self::NAME, "tool", "call"))?;
                    cx.backend
                        .call(cx.catalog, tool, Value::Object(args.parameters.unwrap_or_default()), cx.caller)
                        .await
                }
            }
        })
    }
}
