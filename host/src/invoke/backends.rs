//! The [`Backend`] trait, the caller a call is made for, and the backends
//! of a host routed by resource.

use crate::sandbox::http::{self, Exchanges};
use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use serde_json::Value;

use crate::audit::{self, AuditLog, AuditRecord};
use crate::catalog::{Catalog, ToolEntry, ToolRecord};
use crate::contract::Access;
use crate::error::{Error, Result};

/// Who a call is made for: the agent, and the highest access it is
/// granted on each resource (a plugin instance, a database, an MCP server).
/// The seam refuses an action above the grant before anything runs, and
/// passes the grant down (a database adapter's statements are held to it).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Caller {
    /// The agent profile, if any.
    pub agent: Option<String>,
    /// Grants by resource name; `*` applies to every other resource.
    pub access: Arc<BTreeMap<String, Access>>,
}

impl Caller {
    /// The operator itself (the library, the CLI): no agent, every resource
    /// at the level it is configured with.
    pub fn operator() -> Caller {
        Caller::default()
    }

    /// The highest access granted on `resource`.
    pub fn ceiling(&self, resource: &str) -> Access {
        self.access.get(resource).or_else(|| self.access.get("*")).copied().unwrap_or(Access::Admin)
    }
}

/// A boxed future, as the backend trait returns them (object-safe).
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// What runs the tools of some kind of resource.
pub trait Backend: Send + Sync {
    /// The full record of every tool of `origin` in `catalog`, in order,
    /// loading whatever it must first. Records come from the very resource
    /// version in `catalog`, never from a later snapshot.
    fn definitions<'a>(&'a self, catalog: &'a Catalog, origin: &'a str) -> BoxFuture<'a, Result<Vec<ToolRecord>>>;

    /// Run `tool`, an entry of `catalog`, with `input` (checked against
    /// its schema first) for `caller`, and return its output.
    fn call<'a>(
        &'a self,
        catalog: &'a Catalog,
        tool: &'a ToolEntry,
        input: Value,
        caller: &'a Caller,
    ) -> BoxFuture<'a, Result<Value>>;
}

/// Routes plugins and upstream servers to their backends, refuses what a
/// caller's grant does not cover, and audits every call.
#[derive(Clone)]
pub struct Backends {
    plugins: Arc<dyn Backend>,
    upstream: Arc<dyn Backend>,
    audit: Option<Arc<AuditLog>>,
}

impl Backends {
    /// Plugins run on `plugins`; upstream MCP servers on `upstream`; calls
    /// are recorded in `audit`, if given.
    pub fn new(plugins: Arc<dyn Backend>, upstream: Arc<dyn Backend>, audit: Option<Arc<AuditLog>>) -> Backends {
        Backends { plugins, upstream, audit }
    }

    /// The audit log, if one is kept.
    pub fn audit(&self) -> Option<&AuditLog> {
        self.audit.as_deref()
    }

    async fn checked_call(&self, catalog: &Catalog, tool: &ToolEntry, input: Value, caller: &Caller) -> Result<Value> {
        let settings = catalog.get(&tool.origin).map(|p| p.settings());
        if let Some(allowed) = settings.and_then(|s| s.access)
            && tool.access > allowed
        {
            return Err(Error::AboveCeiling {
                resource: tool.origin.clone(),
                action: tool.action.clone(),
                needed: tool.access,
                allowed,
            });
        }
        let granted = caller.ceiling(&tool.origin);
        if tool.access > granted {
            return Err(Error::Denied {
                resource: tool.origin.clone(),
                action: tool.action.clone(),
                needed: tool.access,
                granted,
                agent: caller.agent.clone(),
            });
        }
        let mut answer = self.of(catalog, &tool.origin).call(catalog, tool, input, caller).await?;
        if let Some(budget) = settings.and_then(|s| s.answer_budget) {
            super::fit::fit(&mut answer, budget);
        }
        Ok(answer)
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

    /// Refuse an action above the caller's grant, else run it; audit it.
    fn call<'a>(
        &'a self,
        catalog: &'a Catalog,
        tool: &'a ToolEntry,
        input: Value,
        caller: &'a Caller,
    ) -> BoxFuture<'a, Result<Value>> {
        Box::pin(async move {
            let Some(audit) = &self.audit else { return self.checked_call(catalog, tool, input, caller).await };
            let (time, started) = (audit::now(), std::time::Instant::now());
            let (bytes_in, params) = (input.to_string().len(), audit.redact(&input));
            let exchanges = Arc::new(Exchanges::default());
            let result = http::recording(exchanges.clone(), self.checked_call(catalog, tool, input, caller)).await;
            audit.record(AuditRecord {
                time,
                agent: caller.agent.clone(),
                resource: tool.origin.clone(),
                action: tool.action.clone(),
                access: tool.access,
                outcome: audit::outcome(&result),
                duration_ms: started.elapsed().as_secs_f64() * 1e3,
                bytes_in,
                bytes_out: result.as_ref().map_or(0, |v| v.to_string().len()),
                http_statuses: exchanges.statuses(),
                params,
            });
            result
        })
    }
}
