//! Linking: one linker per plugin kind, and the checks that turn "this
//! component does not fit" into a clear error before instantiation.

use wasmtime::Engine;
use wasmtime::component::{Component, HasSelf, Linker};

use crate::contract::{Kind, database, tool};
use crate::load::Stub;
use crate::runtime::StoreData;
use crate::{Error, Result};

/// The imports each kind may use, as linkers. Everything gets WASI p2 (with
/// nothing granted in its context) and the Quiver `log`/`config` imports;
/// connectors add `wasi:http`, database adapters add `sql`.
pub(crate) struct Linkers {
    tool: Linker<StoreData>,
    connector: Linker<StoreData>,
    database: Linker<StoreData>,
}

impl Linkers {
    pub(crate) fn new(engine: &Engine) -> wasmtime::Result<Linkers> {
        let mut tool = Linker::new(engine);
        wasmtime_wasi::p2::add_to_linker_async(&mut tool)?;
        tool::Tool::add_to_linker::<StoreData, HasSelf<StoreData>>(&mut tool, |s| s)?;
        let mut connector = tool.clone();
        wasmtime_wasi_http::p2::add_only_http_to_linker_async(&mut connector)?;
        let mut database = tool.clone();
        database::quiver::plugin::sql::add_to_linker::<StoreData, HasSelf<StoreData>>(&mut database, |s| s)?;
        Ok(Linkers { tool, connector, database })
    }

    /// Check `component` against the world of the stub's kind and prepare it
    /// for fast instantiation.
    pub(crate) fn instantiate_pre(
        &self,
        engine: &Engine,
        component: &Component,
        stub: &Stub,
        origin: &str,
    ) -> Result<tool::ToolPre<StoreData>> {
        let wrong = |reason: String| Error::WrongWorld {
            plugin: stub.name.clone(),
            origin: origin.to_owned(),
            world: stub.kind.world().to_owned(),
            reason,
        };
        let ty = component.component_type();
        let exports: Vec<String> = ty.exports(engine).map(|(name, _)| name.to_owned()).collect();
        let mut required = vec!["quiver:plugin/plugin@0.1"];
        if stub.kind == Kind::Database {
            required.push("quiver:plugin/database@0.1");
        }
        for interface in required {
            if !exports.iter().any(|e| e.starts_with(interface)) {
                return Err(wrong(format!(
                    "it does not export `{interface}.x` (it exports: {})",
                    list_or_nothing(&exports)
                )));
            }
        }
        for (name, _) in ty.imports(engine) {
            if let Some(problem) = import_problem(stub.kind, name) {
                return Err(wrong(problem));
            }
        }
        let linker = match stub.kind {
            Kind::Tool => &self.tool,
            Kind::Connector => &self.connector,
            Kind::Database => &self.database,
        };
        let pre = linker.instantiate_pre(component).map_err(|e| wrong(format!("{e:#}")))?;
        tool::ToolPre::new(pre).map_err(|e| wrong(format!("{e:#}")))
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

fn list_or_nothing(items: &[String]) -> String {
    if items.is_empty() { "nothing".into() } else { items.join(", ") }
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
