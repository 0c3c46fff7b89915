//! `quiver call`: as the operator, or, with `--agent`, through that
//! agent's session, as every face calls.

use std::io::Read as _;

use quiver::{Error, Host, Result};
use serde_json::Value;

/// The input `quiver call` was given: a JSON object as text (default
/// `{}`), `-` for standard input, `@FILE` for a file's content.
pub(crate) fn input(given: Option<&str>) -> Result<String> {
    match given {
        None => Ok("{}".to_owned()),
        Some("-") => {
            let mut text = String::new();
            std::io::stdin()
                .read_to_string(&mut text)
                .map_err(|e| Error::Io { path: "standard input".into(), message: e.to_string() })?;
            Ok(text)
        }
        Some(file) if file.starts_with('@') => std::fs::read_to_string(&file[1..])
            .map_err(|e| Error::Io { path: file[1..].to_owned(), message: e.to_string() }),
        Some(text) => Ok(text.to_owned()),
    }
}

/// Call as the operator: every plugin and action, at each resource's own
/// access ceiling (no agent's profile applies).
pub(crate) async fn as_operator(host: &Host, plugin: &str, action: Option<&str>, input: &str) -> Result<Value> {
    match action {
        Some(action) => host.call(plugin, action, input).await,
        None => {
            let catalog = host.catalog();
            let tool = catalog.tool(plugin).ok_or_else(|| Error::UnknownTool {
                name: plugin.to_owned(),
                hint: "give PLUGIN ACTION, or a tool name `quiver list` shows".into(),
            })?;
            host.call(&tool.origin, &tool.action, input).await
        }
    }
}

/// Call for `agent` through its session (an open one, as the MCP and REST
/// faces use): its profile's categories, grants and access ceilings apply,
/// and a refusal is the typed error a face gives. `plugin` with no
/// `action` is a name a model sees (`calc__evaluate`, or a meta-tool).
pub(crate) async fn as_agent(
    host: &Host,
    agent: &str,
    plugin: &str,
    action: Option<&str>,
    input: &str,
) -> Result<Value> {
    let arguments: Value = serde_json::from_str(input).map_err(|e| Error::InputNotJson {
        plugin: plugin.to_owned(),
        action: action.unwrap_or_default().to_owned(),
        reason: e.to_string(),
    })?;
    let mut session = host.open_session(Some(agent))?;
    let catalog = host.catalog();
    let outcome = match action {
        None => session.call(plugin, arguments).await,
        Some(action) => match catalog.action(plugin, action) {
            Ok(entry) => session.call(&entry.name, arguments).await,
            // A live server's tool this snapshot does not list: through
            // the `mcp` tool, as a model calls it.
            Err(_) if catalog.mcp_server(plugin).is_some() => {
                let call = serde_json::json!({
                    "subcommand": "call", "server": plugin, "tool": action, "parameters": arguments
                });
                session.call("mcp", call).await
            }
            Err(error) => return Err(error),
        },
    };
    match outcome.error {
        Some(error) => Err(error),
        // What the operator's call prints: an upstream's whole result, or the output.
        None => Ok(outcome.output.map_or(Value::Null, quiver::invoke::Output::into_json)),
    }
}
