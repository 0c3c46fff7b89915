//! One linker per plugin kind, composed from the capabilities, and the
//! checks that turn "this component does not fit its world" into a clear
//! error before instantiation.

use wasmtime::Engine;
use wasmtime::component::{Component, HasSelf, Linker};

use super::store::GuestState;
use super::{config, http, log, sql, wasi};
use crate::contract::tool::ToolPre;
use crate::contract::{Kind, wit};
use crate::error::{Error, Result};

/// One linker per plugin kind, each with exactly the capabilities of its
/// world: tools get the WASI baseline, `log` and `config`; connectors add
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
        log::link(&mut tool, |state: &mut GuestState| &mut state.log).map_err(setup)?;
        config::link(&mut tool, |state: &mut GuestState| &mut state.config).map_err(setup)?;
        let mut connector = tool.clone();
        http::link(&mut connector).map_err(setup)?;
        let mut database = tool.clone();
        sql::link(&mut database, |state: &mut GuestState| &mut state.sql).map_err(setup)?;
        Ok(Linkers { tool, connector, database })
    }

    /// The kind a component without a stub looks like from its exports
    /// and imports: a database adapter exports `database`, a connector
    /// imports `wasi:http`, anything else is a tool. Its `describe()` has
    /// the last word (see `WasmRuntime::describe_unpackaged`).
    pub(crate) fn kind_of(engine: &Engine, component: &Component) -> Kind {
        let ty = component.component_type();
        if ty.exports(engine).any(|(name, _)| name.starts_with("quiver:plugin/database@")) {
            Kind::Database
        } else if ty.imports(engine).any(|(name, _)| name.starts_with("wasi:http/")) {
            Kind::Connector
        } else {
            Kind::Tool
        }
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

impl Linkers {
    /// Link `component`, a plain component (no Quiver contract), and
    /// prepare it for fast instantiation: with the tools' capabilities, and
    /// `wasi:http` when it imports it (the plugin's HTTP grant then decides
    /// what it may reach; by default nothing). An import Quiver does not
    /// provide makes it unloadable, named in the error.
    pub(crate) fn plain_pre(
        &self,
        engine: &Engine,
        component: &Component,
        plugin: &str,
        origin: &str,
    ) -> Result<wasmtime::component::InstancePre<GuestState>> {
        let wrong = |reason: String| Error::WrongWorld {
            plugin: plugin.to_owned(),
            origin: origin.to_owned(),
            world: "any component whose imports are WASI 0.2's".to_owned(),
            reason,
        };
        let ty = component.component_type();
        let mut http = false;
        for (name, _) in ty.imports(engine) {
            if !name.starts_with("wasi:") {
                return Err(wrong(format!("it imports `{name}`, which Quiver does not provide")));
            }
            http |= name.starts_with("wasi:http/");
        }
        let linker = if http { &self.connector } else { &self.tool };
        linker.instantiate_pre(component).map_err(|e| wrong(format!("{e:#}")))
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
}
