//! `mcp(subcommand, server, tool?, parameters?)`: discover the tools of an
//! MCP server, or call one.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::{CallContext, CallFuture, MetaTool, View, definition, first_names, missing, parse_args, unknown};
use crate::Error;
use crate::catalog::Category;
use crate::disclosure::formats::{ToolDef, model_schema};
use crate::disclosure::policy::ListMode;

pub(crate) struct Mcp;

const NAME: &str = "mcp";

/// Tool names listed per server in Tier 1.
const SHOWN_TOOLS: usize = 3;

#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
enum Subcommand {
    /// The server's tools with their input schemas.
    Discover,
    /// Call one tool.
    Call,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Args {
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
struct DiscoveredTool<'a> {
    name: &'a str,
    description: &'a str,
    input_schema: Value,
}

/// The Tier-1 lines: name, tool count, first tool names.
pub(crate) fn stub_lines(view: &View<'_>) -> Vec<String> {
    view.catalog
        .mcp_servers()
        .map(|s| {
            let names: Vec<&str> = s.tools.iter().map(|t| t.name.as_str()).collect();
            format!("- {} ({} tools): {}", s.name, s.tools.len(), first_names(names.into_iter(), SHOWN_TOOLS))
        })
        .collect()
}

impl MetaTool for Mcp {
    fn name(&self) -> &'static str {
        NAME
    }

    fn definition(&self, view: &View<'_>) -> Option<ToolDef> {
        let offered = view.policy.allows(Category::Mcp) && view.policy.mcp == ListMode::Progressive;
        let lines = stub_lines(view);
        if !offered || lines.is_empty() {
            return None;
        }
        let names: Vec<String> = view.catalog.mcp_servers().map(|s| s.name.clone()).collect();
        let description = format!(
            "Use the tools of MCP servers. `discover` returns a server's tools with their input schemas; `call` \
             runs `tool` with `parameters`.\nServers:\n{}",
            lines.join("\n")
        );
        Some(definition::<Args>(NAME, description, Category::Mcp, &[("server", &names)]))
    }

    fn call<'a>(&'a self, cx: CallContext<'a>, args: Value) -> CallFuture<'a> {
        Box::pin(async move {
            let args: Args = parse_args(NAME, args)?;
            let server =
                cx.catalog.mcp_server(&args.server).filter(|_| cx.policy.allows(Category::Mcp)).ok_or_else(|| {
                    unknown(NAME, "server", &args.server, cx.catalog.mcp_servers().map(|s| s.name.clone()))
                })?;
            let tool = match &args.tool {
                Some(name) => Some(
                    server
                        .tool(name)
                        .ok_or_else(|| unknown(NAME, "tool", name, server.tools.iter().map(|t| t.name.clone())))?,
                ),
                None => None,
            };
            match args.subcommand {
                Subcommand::Discover => {
                    let tools: Vec<DiscoveredTool<'_>> = server
                        .tools
                        .iter()
                        .filter(|t| tool.is_none_or(|one| one.name == t.name))
                        .map(|t| DiscoveredTool {
                            name: &t.name,
                            description: &t.description,
                            input_schema: model_schema(t.input_schema.clone()),
                        })
                        .collect();
                    Ok(serde_json::to_value(tools).expect("plain data serializes"))
                }
                Subcommand::Call => {
                    let tool = tool.ok_or_else(|| missing(NAME, "tool", "call"))?;
                    let _ = args.parameters;
                    Err(Error::NotCallable {
                        name: format!("{}/{}", server.name, tool.name),
                        reason: "this server is a saved tools/list (read-only); there is no live connection to it"
                            .into(),
                    })
                }
            }
        })
    }
}
