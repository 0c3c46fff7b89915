//! `mcp(subcommand, server, tool?, parameters?)`: discover the tools of an
//! upstream MCP server, or call one.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::line::Line;
use super::tool::{
    CallContext, CallFuture, MetaTool, Reach, View, failing_lines, first_names, missing, named, named_or_failing,
    to_value,
};
use crate::catalog::{Category, ServerState};
use crate::error::Error;
use crate::invoke::{Output, tool_of};

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

impl Mcp {
    /// The `[mcp_servers.NAME]` resources this meta-tool reaches.
    const REACH: Reach = Reach { tool: <Self as MetaTool>::NAME, what: "server", section: "mcp_servers" };
}

impl MetaTool for Mcp {
    type Args = Args;
    const NAME: &'static str = "mcp";
    const CATEGORY: Category = Category::Mcp;
    const SECTION: &'static str = "MCP servers";
    const PURPOSE: &'static str = "Use the tools of MCP servers. `discover` returns a server's tools with their \
                                   input schemas; `call` runs `tool` with `parameters`.";
    const LABEL: &'static str = "Servers";
    const NOUN: &'static str = "server";
    const CHOICE: Option<&'static str> = Some("server");

    /// Name, purpose, tool count, first tool names; or that its tools are
    /// not listed yet, or that it is failing.
    fn lines(view: &View<'_>) -> Vec<Line> {
        view.catalog
            .mcp_servers()
            .filter(|s| view.policy.authorized(&s.name))
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
                Line::new(&s.name, &s.name, format!("{purpose} ({tools}){failing}"))
            })
            .chain(failing_lines(view, Self::REACH.section))
            .collect()
    }

    fn choices(view: &View<'_>) -> Vec<String> {
        view.catalog.mcp_servers().filter(|s| view.policy.authorized(&s.name)).map(|s| s.name.clone()).collect()
    }

    fn run<'a>(mut cx: CallContext<'a>, args: Args) -> CallFuture<'a> {
        Box::pin(async move {
            let (catalog, policy) = (cx.catalog, cx.policy);
            // Only the servers this caller may see exist for it.
            let servers = || catalog.mcp_servers().filter(|s| policy.authorized(&s.name)).map(|s| s.name.clone());
            let found = catalog.mcp_server(&args.server).filter(|s| policy.authorized(&s.name));
            let server = named_or_failing(&cx, &Self::REACH, &args.server, found, servers())?;
            match args.subcommand {
                // The backend's definitions: a cached listing; a live server
                // never listed is connected and listed first.
                Subcommand::Discover => {
                    let records = cx.backend.definitions(catalog, &server.name).await?;
                    if let Some(name) = &args.tool {
                        let known = || records.iter().map(|r| r.action.clone());
                        let found = records.iter().find(|r| &r.action == name || &r.name == name);
                        named(Self::NAME, "tool", name, found, known())?;
                    }
                    let tools: Vec<DiscoveredTool> = records
                        .into_iter()
                        .filter(|r| args.tool.as_ref().is_none_or(|name| &r.action == name || &r.name == name))
                        .map(|r| DiscoveredTool {
                            name: r.action,
                            description: r.description,
                            input_schema: r.input_schema.unwrap_or_default(),
                        })
                        .collect();
                    Ok(Output::Json(to_value(tools)))
                }
                Subcommand::Call => {
                    let name = args.tool.ok_or_else(|| missing(Self::NAME, "tool", "call"))?;
                    let tool = match tool_of(cx.backend, catalog, &server.name, &name).await {
                        Ok(tool) => tool,
                        Err(Error::UnknownAction { known, .. }) => {
                            return named(Self::NAME, "tool", &name, None, known);
                        }
                        Err(other) => return Err(other),
                    };
                    cx.call(&tool, Value::Object(args.parameters.unwrap_or_default())).await
                }
            }
        })
    }
}
