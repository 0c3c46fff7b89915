//! ⑤ The invocation seam: between a session and whatever runs a tool.
//!
//! A [`Backend`] gives the full definitions (Tier 2) of a resource's tools
//! and runs them; sessions and meta-tools see only this trait, never the
//! engine behind it. [`Backends`] routes each resource to the backend of
//! its kind:
//!
//! | resource | backend |
//! |---|---|
//! | plugins (tools, connectors, database adapters) | [`runtime::WasmRuntime`](crate::runtime::WasmRuntime): a fresh sandboxed instance per call |
//! | upstream MCP servers | [`SavedLists`]: definitions from saved `tools/list` results; not callable |
//!
//! Values stay `serde_json::Value` from the caller to the backend; each
//! backend checks the input against the tool's schema before it runs.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use serde_json::Value;

use crate::catalog::{Catalog, ToolEntry, ToolRecord};
use crate::error::{Error, Result};

/// A boxed future, as the backend trait returns them (object-safe).
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// What runs the tools of some kind of resource.
pub trait Backend: Send + Sync {
    /// The full record of every tool of `origin` in `catalog`, in order,
    /// loading whatever it must first. Records come from the very resource
    /// version in `catalog`, never from a later snapshot.
    fn definitions<'a>(&'a self, catalog: &'a Catalog, origin: &'a str) -> BoxFuture<'a, Result<Vec<ToolRecord>>>;

    /// Run `tool`, an entry of `catalog`, with `input` (checked against
    /// its schema first), and return its output.
    fn call<'a>(&'a self, catalog: &'a Catalog, tool: &'a ToolEntry, input: Value) -> BoxFuture<'a, Result<Value>>;
}

/// Routes plugins and upstream servers to their backends.
#[derive(Clone)]
pub struct Backends {
    plugins: Arc<dyn Backend>,
    upstream: Arc<dyn Backend>,
}

impl Backends {
    /// Plugins run on `plugins`; upstream MCP servers on `upstream`.
    pub fn new(plugins: Arc<dyn Backend>, upstream: Arc<dyn Backend>) -> Backends {
        Backends { plugins, upstream }
    }

    fn of(&self, catalog: &Catalog, origin: &str) -> &dyn Backend {
        if catalog.get(origin).is_none() && catalog.mcp_server(origin).is_some() {
            self.upstream.as_ref()
        } else {
            self.plugins.as_ref()
        }
    }
}

/// The full record of `tool`, an entry of `catalog`, from `backend`.
pub async fn definition(backend: &dyn Backend, catalog: &Catalog, tool: &ToolEntry) -> Result<ToolRecord> {
    let records = backend.definitions(catalog, &tool.origin).await?;
    records.into_iter().find(|r| r.name == tool.name).ok_or_else(|| Error::UnknownTool {
        name: tool.name.clone(),
        hint: format!("`{}` no longer declares it", tool.origin),
    })
}

impl Backend for Backends {
    fn definitions<'a>(&'a self, catalog: &'a Catalog, origin: &'a str) -> BoxFuture<'a, Result<Vec<ToolRecord>>> {
        self.of(catalog, origin).definitions(catalog, origin)
    }

    fn call<'a>(&'a self, catalog: &'a Catalog, tool: &'a ToolEntry, input: Value) -> BoxFuture<'a, Result<Value>> {
        self.of(catalog, &tool.origin).call(catalog, tool, input)
    }
}

/// Upstream MCP servers known from saved `tools/list` results: their
/// definitions are in the catalog, and there is no connection to call them.
#[derive(Debug, Default, Clone, Copy)]
pub struct SavedLists;

impl Backend for SavedLists {
    fn definitions<'a>(&'a self, catalog: &'a Catalog, origin: &'a str) -> BoxFuture<'a, Result<Vec<ToolRecord>>> {
        Box::pin(async move {
            let server = catalog.mcp_server(origin).ok_or_else(|| Error::UnknownPlugin {
                plugin: origin.to_owned(),
                known: catalog.mcp_servers().map(|s| s.name.clone()).collect(),
            })?;
            Ok(catalog.tools_of(&server.name).iter().filter_map(|e| catalog.record(e)).collect())
        })
    }

    fn call<'a>(&'a self, _: &'a Catalog, tool: &'a ToolEntry, _: Value) -> BoxFuture<'a, Result<Value>> {
        Box::pin(async move {
            Err(Error::NotCallable {
                name: tool.name.clone(),
                reason: "its server is a saved tools/list (read-only); there is no live connection to it".into(),
            })
        })
    }
}
