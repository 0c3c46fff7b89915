//! `mcp(subcommand, server, tool?, parameters?)`: discover the tools of an
//! upstream MCP server, or call one.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::tool::{CallContext, CallFuture, MetaTool, View, first_names, missing, named, to_value};
use crate::catalog::{Category, ServerState, ToolEntry};

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

    /// Name, purpose, tool count, first tool names; or that its tools are
    /// not listed yet, or that it is failing.
    fn lines(view: &View<'_>) -> Vec<String> {
        view.catalog
            .mcp_servers()
            .map(|s| {
                let purpose = s.purpose.as_deref().map(|p| format!(": {p}")).unwrap_or_default();
                let tools = match &s.state {
                    ServerState::NotListedYet => "tools not listed yet".to_owned(),
                    ServerState::Failing(_) if s.tools.is_empty() => "tools unknown".to_owned(),
                    _ => {
                        let names = first_names(s.tools.iter().map(|t| t.name.as_str()), SHOWN_TOOLS);
                        format!("{} tools: {names}", s.tools.len())
                    }
                };
                let failing = match &s.state {
                    ServerState::Failing(_) => " (failing now: calls may fail)",
                    _ => "",
                };
                format!("- {}{purpose} ({tools}){failing}", s.name)
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
            // Discover asks the backend for the definitions (a cached
            // listing; a live server never listed is connected and listed
            // first); so does a call of a tool this snapshot does not know
            // yet (a server never listed, or whose list changed).
            let listed = cx.catalog.tools_of(&server.name);
            let known = |name: &str| listed.iter().any(|t| t.action == name || t.name == name);
            let ask = matches!(args.subcommand, Subcommand::Discover)
                || (server.live && args.tool.as_deref().is_none_or(|name| !known(name)));
            let records = match ask {
                true => cx.backend.definitions(cx.catalog, &server.name).await?,
                false => Vec::new(),
            };
            let fresh: Vec<ToolEntry> = match ask {
                true => records.iter().map(ToolEntry::of_record).collect(),
                false => listed.to_vec(),
            };
            let tool = match &args.tool {
                Some(name) => {
                    let known = || fresh.iter().map(|t| t.action.clone());
                    let found = fresh.iter().find(|t| &t.action == name || &t.name == name);
                    Some(named(Self::NAME, "tool", name, found, known())?)
                }
                None => None,
            };
            match args.subcommand {
                Subcommand::Discover => {
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
