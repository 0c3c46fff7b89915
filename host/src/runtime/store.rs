//! The data of one call's `Store`, and the host side of the plugin imports.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use wasmtime::component::ResourceTable;
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};
use wasmtime_wasi_http::{WasiHttpCtx, WasiHttpCtxView, WasiHttpView};

use crate::contract::database::quiver::plugin::sql;
use crate::contract::tool::quiver::plugin::{config, log, types};
use crate::sandbox::http::HttpPolicy;
use crate::sandbox::limits::Limiter;
use crate::sandbox::wasi::GuestLog;

/// The `T` of `Store<T>`: everything one call of one plugin may touch.
pub(crate) struct StoreData {
    pub(crate) wasi: WasiCtx,
    pub(crate) http: WasiHttpCtx,
    pub(crate) http_policy: HttpPolicy,
    pub(crate) table: ResourceTable,
    pub(crate) limiter: Limiter,
    pub(crate) log: Arc<Mutex<GuestLog>>,
    pub(crate) config: Arc<BTreeMap<String, String>>,
}

impl WasiView for StoreData {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView { ctx: &mut self.wasi, table: &mut self.table }
    }
}

impl WasiHttpView for StoreData {
    fn http(&mut self) -> WasiHttpCtxView<'_> {
        WasiHttpCtxView { ctx: &mut self.http, table: &mut self.table, hooks: &mut self.http_policy }
    }
}

impl types::Host for StoreData {}

/// Field the SDK's panic hook sets on the log record of a panic.
const PANIC_FIELD: &str = "quiver.panic";

impl log::Host for StoreData {
    fn log(&mut self, level: log::Level, message: String, fields: Vec<(String, String)>) -> wasmtime::Result<()> {
        let mut guest = self.log.lock().expect("guest log lock");
        if fields.iter().any(|(k, v)| k == PANIC_FIELD && v == "true") {
            let location = fields.iter().find(|(k, _)| k == "location").map(|(_, v)| v.as_str());
            guest.panic = Some(match location {
                Some(l) if !l.is_empty() => format!("panicked at {l}: {message}"),
                _ => format!("panicked: {message}"),
            });
        }
        let size = message.len() + fields.iter().map(|(k, v)| k.len() + v.len()).sum::<usize>();
        if !guest.charge(size) {
            return Ok(());
        }
        let plugin = guest.plugin();
        let fields = fields.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(" ");
        match level {
            log::Level::Trace => tracing::trace!(target: "quiver::guest", plugin, fields, "{message}"),
            log::Level::Debug => tracing::debug!(target: "quiver::guest", plugin, fields, "{message}"),
            log::Level::Info => tracing::info!(target: "quiver::guest", plugin, fields, "{message}"),
            log::Level::Warn => tracing::warn!(target: "quiver::guest", plugin, fields, "{message}"),
            log::Level::Error => tracing::error!(target: "quiver::guest", plugin, fields, "{message}"),
        }
        Ok(())
    }
}

impl config::Host for StoreData {
    fn get(&mut self, key: String) -> wasmtime::Result<Option<String>> {
        Ok(self.config.get(&key).cloned())
    }

    fn entries(&mut self) -> wasmtime::Result<Vec<(String, String)>> {
        Ok(self.config.iter().map(|(k, v)| (k.clone(), v.clone())).collect())
    }
}

/// The `sql` capability. No database backend is wired in yet, so every
/// statement is answered with a typed `unavailable` error the adapter can
/// report; the backends arrive with the database issue.
impl sql::Host for StoreData {
    async fn query(
        &mut self,
        _statement: String,
        _params: Vec<sql::Value>,
    ) -> wasmtime::Result<Result<sql::Rows, types::Error>> {
        Ok(Err(self.no_database()))
    }

    async fn execute(
        &mut self,
        _statement: String,
        _params: Vec<sql::Value>,
    ) -> wasmtime::Result<Result<u64, types::Error>> {
        Ok(Err(self.no_database()))
    }
}

impl StoreData {
    fn no_database(&self) -> types::Error {
        let plugin = self.log.lock().expect("guest log lock").plugin().to_owned();
        types::Error::Unavailable(format!("no database is configured for plugin `{plugin}`"))
    }
}
