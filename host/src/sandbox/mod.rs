//! ② Sandbox: what a guest may reach, and how much it may use.
//!
//! Nothing is granted by default. Each capability is one module that owns
//! its whole lifecycle: how it is linked, what the operator grants, the
//! state of one call, and the host side of its imports.
//!
//! | capability | module | linked for | grant | denial |
//! |---|---|---|---|---|
//! | WASI p2 baseline | [`wasi`] | every kind | none: no files, env, sockets | WASI error codes |
//! | `log` (+ stdout/stderr) | [`log`] | every kind | `max_log_kb` | output dropped past the budget |
//! | `config` | [`config`] | every kind | [`ConfigGrant`](config::ConfigGrant) | `none` for any other key |
//! | `wasi:http` | [`http`] | connectors | [`HttpGrant`](http::HttpGrant) | `HTTP-request-denied` |
//! | `sql` | [`sql`] | database adapters | (no backend yet) | `unavailable` |
//!
//! [`limits`] holds the engine and the per-call CPU, memory and output
//! limits; [`secrets`] the credentials type the host keeps out of guests.
//! [`Linkers`] builds one linker per kind from the capabilities and checks
//! a component against its kind's world before it is instantiated.

pub mod config;
pub mod http;
pub mod limits;
pub(crate) mod log;
pub mod secrets;
pub(crate) mod sql;
pub(crate) mod wasi;

use std::sync::Arc;
use std::time::Instant;

use wasmtime::component::{Component, HasSelf, Linker, ResourceTable};
use wasmtime::{Engine, Store, UpdateDeadline};

use crate::contract::tool::ToolPre;
use crate::contract::{Kind, wit};
use crate::{Error, Result};

/// What the operator grants one plugin, per capability.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Grants {
    /// CPU, memory, output and log limits of each call.
    pub limits: limits::Limits,
    /// Values its `config` import reads.
    pub config: config::ConfigGrant,
    /// Where it may send HTTP requests (connectors).
    pub http: http::HttpGrant,
}

/// Most resources (streams, requests, fields...) one call may hold at once.
const MAX_RESOURCES: usize = 4096;

/// The `T` of `Store<T>`: the per-call state of every capability.
pub(crate) struct GuestState {
    table: ResourceTable,
    wasi: wasmtime_wasi::WasiCtx,
    log: log::LogState,
    config: config::ConfigGrant,
    http: http::HttpState,
    sql: sql::SqlState,
    limiter: limits::Limiter,
}

/// How a call ended, as far as the sandbox saw it.
#[derive(Debug, Default)]
pub(crate) struct Ending {
    /// The panic message or last stderr line the guest left.
    pub(crate) last: log::Last,
    /// Whether a memory tried to grow past the cap.
    pub(crate) memory_hit: bool,
}

impl GuestState {
    fn new(plugin: &str, grants: &Grants) -> GuestState {
        let plugin: Arc<str> = Arc::from(plugin);
        let log = log::LogState::new(plugin.clone(), grants.limits.log_bytes());
        let mut table = ResourceTable::new();
        table.set_max_capacity(MAX_RESOURCES);
        GuestState {
            table,
            wasi: wasi::context(&log),
            log,
            config: grants.config.clone(),
            http: http::HttpState::new(&grants.http),
            sql: sql::SqlState::new(plugin),
            limiter: limits::Limiter::new(&grants.limits),
        }
    }

    /// Flush the guest's log and say how the call ended. Call once.
    pub(crate) fn finish(&mut self) -> Ending {
        Ending { last: self.log.finish(), memory_hit: self.limiter.memory_hit }
    }
}

/// A fresh store for one call of `plugin`, under its grants: a memory cap
/// and a deadline (epoch interruption) from its limits.
pub(crate) fn store(engine: &Engine, plugin: &str, grants: &Grants) -> Store<GuestState> {
    let mut store = Store::new(engine, GuestState::new(plugin, grants));
    store.limiter(|state| &mut state.limiter);
    let deadline = Instant::now() + grants.limits.timeout();
    store.set_epoch_deadline(1);
    store.epoch_deadline_callback(move |_| {
        Ok(if Instant::now() >= deadline { UpdateDeadline::Interrupt } else { UpdateDeadline::Yield(1) })
    });
    store
}

/// One linker per plugin kind, each with exactly the capabilities of its
/// world: tools get the baseline, `log` and `config`; connectors add
/// `wasi:http`; database adapters add `sql`.
pub(crate) struct Linkers {
    tool: Linker<GuestState>,
    connector: Linker<GuestState>,
    database: Linker<GuestState>,
}

impl Linkers {
    pub(crate) fn new(engine: &Engine) -> Result<Linkers> {
        let setup = |e: wasmtime::Error| Error::internal("linker setup", format!("{e:#}"));
        let mut tool = Linker::new(engine);
        wasi::link(&mut tool).map_err(setup)?;
        wit::add_to_linker::<GuestState, HasSelf<GuestState>>(&mut tool, |state| state).map_err(setup)?;
        log::link(&mut tool).map_err(setup)?;
        config::link(&mut tool).map_err(setup)?;
        let mut connector = tool.clone();
        http::link(&mut connector).map_err(setup)?;
        let mut database = tool.clone();
        sql::link(&mut database).map_err(setup)?;
        Ok(Linkers { tool, connector, database })
    }

    /// Check `component` against the world of `kind` and prepare it for
    /// fast instantiation. Errors name `plugin` and `origin`.
    pub(crate) fn instantiate_pre(
        &self,
        engine: &Engine,
        component: &Component,
        kind: Kind,
        plugin: &str,
        origin: &str,
    ) -> Result<ToolPre<GuestState>> {
        let wrong = |reason: String| Error::WrongWorld {
            plugin: plugin.to_owned(),
            origin: origin.to_owned(),
            world: kind.world().to_owned(),
            reason,
        };
        let ty = component.component_type();
        let exports: Vec<String> = ty.exports(engine).map(|(name, _)| name.to_owned()).collect();
        let mut required = vec!["quiver:plugin/plugin@0.1"];
        if kind == Kind::Database {
            required.push("quiver:plugin/database@0.1");
        }
        for interface in required {
            if !exports.iter().any(|e| e.starts_with(interface)) {
                let exported = if exports.is_empty() { "nothing".to_owned() } else { exports.join(", ") };
                return Err(wrong(format!("it does not export `{interface}.x` (it exports: {exported})")));
            }
        }
        for (name, _) in ty.imports(engine) {
            if let Some(problem) = import_problem(kind, name) {
                return Err(wrong(problem));
            }
        }
        let linker = match kind {
            Kind::Tool => &self.tool,
            Kind::Connector => &self.connector,
            Kind::Database => &self.database,
        };
        let pre = linker.instantiate_pre(component).map_err(|e| wrong(format!("{e:#}")))?;
        ToolPre::new(pre).map_err(|e| wrong(format!("{e:#}")))
    }
}

/// Why a plugin of `kind` may not import `name`, if it may not.
fn import_problem(kind: Kind, name: &str) -> Option<String> {
    let (package, _) = name.split_once('/').unwrap_or((name, ""));
    let allowed = match package {
        "wasi:http" => kind == Kind::Connector,
        "quiver:plugin" if name.starts_with("quiver:plugin/sql@") => kind == Kind::Database,
        "quiver:plugin" => true,
        p if p.starts_with("wasi:") => true,
        _ => return Some(format!("it imports `{name}`, which Quiver does not provide")),
    };
    (!allowed).then(|| {
        let who = if package == "wasi:http" { "connectors" } else { "database adapters" };
        format!("it imports `{name}`, which only {who} may use, but its stub says kind `{kind}`")
    })
}

/// The types interface has no functions; its host trait is empty.
impl wit::Host for GuestState {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn imports_follow_the_kind() {
        assert!(import_problem(Kind::Tool, "wasi:cli/stdout@0.2.6").is_none());
        assert!(import_problem(Kind::Tool, "quiver:plugin/log@0.1.0").is_none());
        assert!(import_problem(Kind::Tool, "wasi:http/outgoing-handler@0.2.12").is_some());
        assert!(import_problem(Kind::Connector, "wasi:http/outgoing-handler@0.2.12").is_none());
        assert!(import_problem(Kind::Connector, "quiver:plugin/sql@0.1.0").is_some());
        assert!(import_problem(Kind::Database, "quiver:plugin/sql@0.1.0").is_none());
        assert!(import_problem(Kind::Tool, "acme:secret/keys").is_some());
    }

    #[test]
    fn resource_tables_are_bounded() {
        let state = GuestState::new("p", &Grants::default());
        assert_eq!(state.table.max_capacity(), MAX_RESOURCES);
    }
}
