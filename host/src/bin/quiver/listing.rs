//! `quiver list` and `quiver describe`: what is served, by the name it is
//! served under (a database or a connector instance under its own name,
//! not its adapter's), with its kind. Nothing is compiled and no MCP
//! server is started: a server's tools come from its last listing.

use std::process::ExitCode;

use quiver::catalog::{Catalog, Category, ServerState, printable};
use quiver::{Error, Host, Result};
use serde::Serialize;
use serde_json::json;

use crate::output::print_json;

/// One thing served, as `list` shows it.
#[derive(Serialize)]
struct Served {
    name: String,
    /// `tool`, `connector`, `database`, `mcp` or `skill`.
    kind: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    version: Option<String>,
    /// Its tools or actions, and (for an MCP server) what is known of them.
    tools: String,
    description: String,
    origin: String,
}

/// Everything `catalog` serves, plugins (and instances) first, then MCP
/// servers, then skills, each sorted by name.
fn served(catalog: &Catalog) -> Vec<Served> {
    let mut rows = Vec::new();
    for plugin in catalog.plugins() {
        let stub = plugin.stub();
        let database = plugin.settings().grants.sql.database();
        let description =
            database.and_then(|d| d.settings().description.clone()).unwrap_or_else(|| stub.description.clone());
        rows.push(Served {
            name: plugin.name().to_owned(),
            kind: stub.kind.as_str(),
            version: Some(stub.version.clone()),
            tools: count(stub.actions.len(), "action"),
            description,
            origin: plugin.origin().to_string(),
        });
    }
    for server in catalog.mcp_servers() {
        let tools = match (&server.state, server.live) {
            (_, false) => format!("{} (saved list)", count(server.tools.len(), "tool")),
            (ServerState::NotListedYet, _) => "not listed yet".to_owned(),
            (ServerState::Failing(_), _) => format!("{}, failing", count(server.tools.len(), "tool")),
            (ServerState::Listed, _) => count(server.tools.len(), "tool"),
        };
        rows.push(Served {
            name: server.name.clone(),
            kind: "mcp",
            version: None,
            tools,
            description: server.purpose.clone().unwrap_or_default(),
            origin: server.origin_text(),
        });
    }
    for skill in catalog.skills() {
        rows.push(Served {
            name: skill.name.clone(),
            kind: "skill",
            version: None,
            tools: String::new(),
            description: skill.description.clone(),
            origin: skill.dir.display().to_string(),
        });
    }
    rows
}

fn count(n: usize, what: &str) -> String {
    if n == 1 { format!("1 {what}") } else { format!("{n} {what}s") }
}

/// `quiver list`: every served name, its kind, and what was refused.
pub(crate) fn list(host: &Host, json: bool) -> Result<ExitCode> {
    let catalog = host.catalog();
    let rows = served(&catalog);
    if json {
        let rejected: Vec<_> = catalog
            .rejected()
            .iter()
            .map(|r| json!({ "origin": r.origin, "error": r.error.to_string(), "fix": r.error.remedy() }))
            .collect();
        let stale: Vec<_> = catalog
            .stale()
            .map(|(name, s)| json!({ "plugin": name, "origin": s.origin, "error": s.error.to_string() }))
            .collect();
        print_json(&json!({ "served": rows, "rejected": rejected, "stale": stale }));
    } else {
        for row in &rows {
            // What a file or a server says about itself is escaped: it cannot drive the terminal.
            println!(
                "{:<16} {:<9} {:<8} {:>12}  {}",
                row.name,
                row.kind,
                printable(row.version.as_deref().unwrap_or("-")),
                printable(&row.tools),
                printable(&row.description)
            );
        }
        for rejection in catalog.rejected() {
            println!("rejected: {}", printable(&rejection.error.to_string()));
        }
        for (name, stale) in catalog.stale() {
            let why = printable(&format!("{}: {}", stale.origin, stale.error));
            println!("stale: {name} serves its last good version; {why}");
        }
    }
    tracing::info!(compiled = host.load_stats().compiled(), "list done");
    Ok(ExitCode::SUCCESS)
}

/// `quiver describe NAME [ACTION]`: a plugin's (or instance's) manifest,
/// compiling it if it must; a tool's definition by the name models see; an
/// MCP server's tools as last listed; a skill's description and files.
pub(crate) async fn describe(
    host: &Host,
    agent: Option<&str>,
    name: String,
    action: Option<String>,
) -> Result<ExitCode> {
    let catalog = host.catalog();
    let policy = agent.map(|agent| host.policy(Some(agent))).transpose()?;
    let allows = |category| policy.as_ref().is_none_or(|p| p.allows(category));
    if catalog.get(&name).is_none() && action.is_none() {
        if let Some(server) = catalog.mcp_server(&name).filter(|_| allows(Category::Mcp)) {
            let listed = !matches!(server.state, ServerState::NotListedYet);
            print_json(&json!({ "server": server.name, "live": server.live, "listed": listed, "tools": server.tools }));
            return Ok(ExitCode::SUCCESS);
        }
        if let Some(skill) = catalog.skill(&name).filter(|_| allows(Category::Skill)) {
            print_json(&json!({ "skill": skill.name, "description": skill.description, "files": skill.files() }));
            return Ok(ExitCode::SUCCESS);
        }
        // An MCP server's tool, by the name a model sees: as last listed.
        if let Some(record) =
            catalog.tool(&name).filter(|t| t.category == Category::Mcp).and_then(|t| catalog.record(t))
            && allows(Category::Mcp)
        {
            print_json(&record);
            return Ok(ExitCode::SUCCESS);
        }
    }
    // `describe calc__evaluate`: the name a model sees.
    let (plugin, action) = match (action, catalog.tool(&name)) {
        (None, Some(tool)) if catalog.get(&name).is_none() => (tool.origin.clone(), Some(tool.action.clone())),
        (action, _) => (name, action),
    };
    // An agent sees only what its profile shows (as `call` does).
    if let Some(policy) = &policy
        && catalog.get(&plugin).is_some_and(|p| !policy.shows_plugin(p))
    {
        let known = catalog.plugins().filter(|p| policy.shows_plugin(p)).map(|p| p.name().to_owned());
        return Err(Error::UnknownPlugin { plugin, known: known.collect() });
    }
    let manifest = host.describe(&plugin).await?;
    match action {
        None => print_json(&manifest),
        Some(action) => match manifest.action(&action) {
            Some(spec) => print_json(spec),
            None => {
                let known = manifest.actions.iter().map(|a| a.name.clone()).collect();
                return Err(Error::UnknownAction { plugin, action, known });
            }
        },
    }
    Ok(ExitCode::SUCCESS)
}
