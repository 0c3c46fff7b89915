//! The configured upstream servers as one [`Backend`]: their tools in the
//! catalog, calls routed to each, status for operators.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use schemars::JsonSchema;
use serde::Serialize;
use serde_json::Value;

use super::check::Checks;
use super::server::{OnChange, Server};
use super::spec::ServerSpec;
use crate::catalog::{Catalog, LiveServer, ToolEntry, ToolRecord, names};
use crate::error::{Error, Result};
use crate::invoke::{Answer, Backend, BoxFuture, Call, Facts, Output};

/// Servers listed at once in the background.
const BACKGROUND_STARTS: usize = 4;

/// The upstream MCP servers: configured live ones and saved lists.
#[derive(Default)]
pub struct Upstreams {
    servers: BTreeMap<String, Arc<Server>>,
    on_change: OnChange,
    /// Arguments checked before they are sent.
    checks: Checks,
}

/// What an operator sees of one live server.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct UpstreamStatus {
    /// Its name.
    pub name: String,
    /// Where it is reached.
    pub endpoint: String,
    /// Whether a connection is open now.
    pub connected: bool,
    /// Its process id, when a stdio server is running.
    pub pid: Option<u32>,
    /// Connections opened since start (processes spawned, for stdio).
    pub starts: u64,
    /// Connections and requests that failed since start.
    pub failures: u64,
}

impl Upstreams {
    /// The servers of `specs`, their tools read from the caches under
    /// `cache_dir` (`<cache_dir>/mcp/`); nothing is started.
    pub fn new(specs: Vec<ServerSpec>, cache_dir: Option<&Path>) -> Upstreams {
        let on_change = OnChange::default();
        let dir = cache_dir.map(|d| d.join("mcp"));
        let servers = specs
            .into_iter()
            .map(|spec| (spec.name.clone(), Server::new(spec, dir.as_deref(), on_change.clone())))
            .collect();
        Upstreams { servers, on_change, checks: Checks::default() }
    }

    /// The live servers, as the catalog scan reads them.
    pub fn live_servers(&self) -> Vec<LiveServer> {
        self.servers
            .values()
            .map(|s| LiveServer {
                name: s.spec.name.clone(),
                description: s.spec.description.clone(),
                listing: s.listing.clone(),
            })
            .collect()
    }

    /// Call `hook` whenever what the catalog shows of a server changes
    /// (its tools, its purpose, whether it is failing). Set once.
    pub fn on_change(&self, hook: impl Fn() + Send + Sync + 'static) {
        let _ = self.on_change.set(Box::new(hook));
    }

    /// List every server never listed, in the background on the current
    /// tokio runtime (none: nothing happens). Tier 1 shows them as not
    /// listed yet until then.
    pub fn list_in_background(&self) {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else { return };
        // A few at a time: twenty servers starting at once would take the
        // machine from whatever else starts with Quiver.
        let slots = Arc::new(tokio::sync::Semaphore::new(BACKGROUND_STARTS));
        for server in self.servers.values().filter(|s| !s.is_listed()) {
            let (server, slots) = (server.clone(), slots.clone());
            runtime.spawn(async move {
                let Ok(_slot) = slots.acquire().await else { return };
                if let Err(error) = server.connection().await {
                    tracing::warn!(%error, "cannot list the MCP server's tools");
                }
            });
        }
    }

    /// What each live server is doing now.
    pub fn status(&self) -> Vec<UpstreamStatus> {
        self.servers
            .values()
            .map(|s| {
                let (connected, pid) = s.connected();
                UpstreamStatus {
                    name: s.spec.name.clone(),
                    endpoint: s.spec.endpoint(),
                    connected,
                    pid,
                    starts: s.starts.load(Ordering::Relaxed),
                    failures: s.failures.load(Ordering::Relaxed),
                }
            })
            .collect()
    }

    /// The secret values the servers were given (for redaction).
    pub fn secrets(&self) -> impl Iterator<Item = &crate::sandbox::secrets::Secret> {
        self.servers.values().flat_map(|s| s.spec.secrets.iter())
    }

    /// Close every connection (stdio servers are stopped).
    pub async fn shutdown(&self) {
        for server in self.servers.values() {
            server.close().await;
        }
    }

    /// Records of `origin`'s tools from what the server lists now (live),
    /// named as `catalog` names them where it knows them.
    async fn live_definitions(&self, server: &Server, catalog: &Catalog, origin: &str) -> Result<Vec<ToolRecord>> {
        server.connection().await?;
        let listing = server.listing.read().unwrap_or_else(|e| e.into_inner()).clone();
        let shown = crate::catalog::UpstreamServer {
            name: origin.to_owned(),
            tools: Vec::new(),
            origin: Default::default(),
            purpose: None,
            state: crate::catalog::ServerState::Listed,
            live: true,
        };
        let known = catalog.tools_of(origin);
        Ok(listing
            .tools
            .unwrap_or_default()
            .iter()
            .map(|tool| {
                let name = known
                    .iter()
                    .find(|e| e.action == tool.name)
                    .map_or_else(|| names::model_name(&[origin, &tool.name]), |e| e.name.clone());
                ToolRecord::of_upstream(&ToolEntry::of_upstream(&shown, tool, name), tool)
            })
            .collect())
    }
}

impl Backend for Upstreams {
    /// The definitions `catalog` holds (a saved list, or a live server's
    /// last listing: cached, and refreshed on every connection and on
    /// `list_changed`), so listing tools or exports never start a server;
    /// a live server never listed is connected and listed first.
    fn definitions<'a>(&'a self, catalog: &'a Catalog, origin: &'a str) -> BoxFuture<'a, Result<Vec<ToolRecord>>> {
        Box::pin(async move {
            let known = || catalog.mcp_servers().map(|s| s.name.clone()).collect();
            let shown = catalog
                .mcp_server(origin)
                .ok_or_else(|| Error::UnknownPlugin { plugin: origin.to_owned(), known: known() })?;
            let unlisted = self
                .servers
                .get(origin)
                .filter(|s| shown.live && (!s.is_listed() || shown.state == crate::catalog::ServerState::NotListedYet));
            match unlisted {
                Some(server) => self.live_definitions(server, catalog, origin).await,
                None => Ok(catalog.tools_of(origin).iter().filter_map(|e| catalog.record(e)).collect()),
            }
        })
    }

    fn call<'a>(&'a self, call: Call<'a>) -> BoxFuture<'a, Answer> {
        Box::pin(async move {
            let (catalog, tool) = (call.catalog, call.tool);
            let mut facts = Facts::starting(tool, call.caller.agent.as_deref());
            let Some(server) = self.servers.get(&tool.origin) else {
                let error = Error::NotCallable {
                    name: tool.name.clone(),
                    reason: "its server is a saved tools/list (read-only); there is no live connection to it".into(),
                };
                return Answer { result: Err(error), facts };
            };
            facts.server = Some(server.spec.name.clone());
            // Optional arguments given as `null` mean "not given" here as for
            // plugins (see `load::drop_null_optionals`); then the arguments
            // must fit the schema the server listed.
            let mut input = call.input;
            let listed = catalog.mcp_server(&tool.origin).and_then(|s| s.tool(&tool.action));
            if let Some(listed) = listed {
                crate::load::drop_null_optionals(&listed.input_schema, &mut input);
                let errors = self.checks.violations(&server.spec.name, &tool.action, &listed.input_schema, &input);
                if !errors.is_empty() {
                    let error = Error::InputSchema { plugin: tool.origin.clone(), action: tool.action.clone(), errors };
                    return Answer { result: Err(error), facts };
                }
            }
            let arguments = match input {
                Value::Object(arguments) => arguments,
                Value::Null => Default::default(),
                other => {
                    let error = Error::InputSchema {
                        plugin: tool.origin.clone(),
                        action: tool.action.clone(),
                        errors: vec![format!("the arguments are {other}, not a JSON object")],
                    };
                    return Answer { result: Err(error), facts };
                }
            };
            let result = server.call(&tool.action, arguments, call.progress).await;
            Answer { result: result.map(|r| Output::Upstream(Box::new(r))), facts }
        })
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::catalog::Sources;
    use crate::invoke::Caller;
    use crate::load::SettingsResolver;

    #[tokio::test]
    async fn a_saved_lists_tools_are_listed_but_never_called() {
        let dir = tempfile::tempdir().unwrap();
        let list = json!([{"name": "search", "description": "Search.", "inputSchema": {"type": "object"}}]);
        std::fs::write(dir.path().join("saved.json"), list.to_string()).unwrap();
        let sources = Sources { mcp_dir: Some(dir.path()), ..Sources::default() };
        let catalog = Catalog::scan(&sources, &SettingsResolver::default(), None, false).unwrap();
        let upstreams = Upstreams::default();
        let records = upstreams.definitions(&catalog, "saved").await.unwrap();
        assert_eq!(records.iter().map(|r| r.name.as_str()).collect::<Vec<_>>(), ["saved__search"]);
        let tool = catalog.tool("saved__search").unwrap();
        let call = Call { catalog: &catalog, tool, input: json!({}), caller: &Caller::operator(), progress: None };
        let answer = upstreams.call(call).await;
        assert!(matches!(answer.result, Err(Error::NotCallable { .. })), "{:?}", answer.result);
        assert_eq!((answer.facts.server, answer.facts.resource.as_str()), (None, "saved"));
    }
}
