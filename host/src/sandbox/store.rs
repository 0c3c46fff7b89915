//! The state of one call's `Store`: one field per capability, plus the
//! resource table they share, built from a plugin's grants.

use std::sync::Arc;
use std::time::Instant;

use wasmtime::component::ResourceTable;
use wasmtime::{Engine, Store, UpdateDeadline};
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};
use wasmtime_wasi_http::{WasiHttpCtxView, WasiHttpView};

use super::config::ConfigGrant;
use super::grants::Grants;
use super::http::HttpState;
use super::limits::Limiter;
use super::log::{Last, LogState};
use super::sql::SqlState;
use crate::contract::{Access, wit};
use crate::telemetry::Usage;

/// Most resources (streams, requests, fields...) one call may hold at once.
const MAX_RESOURCES: usize = 4096;

/// The `T` of `Store<T>`: the per-call state of every capability.
pub(crate) struct GuestState {
    table: ResourceTable,
    wasi: WasiCtx,
    pub(crate) log: LogState,
    pub(crate) config: ConfigGrant,
    http: HttpState,
    pub(crate) sql: SqlState,
    limiter: Limiter,
    /// When this call's time is up (epoch interruption checks it).
    deadline: Instant,
}

/// How a call ended, as far as the sandbox saw it.
#[derive(Debug, Default)]
pub(crate) struct Ending {
    /// The panic message or last stderr line the guest left.
    pub(crate) last: Last,
    /// Whether a memory tried to grow past the cap.
    pub(crate) memory_hit: bool,
    /// The statuses of the HTTP responses it received, in order.
    pub(crate) http_statuses: Vec<u16>,
    /// What else it did through its capabilities.
    pub(crate) usage: Usage,
    /// Whether the store may serve another call of the same caller: no
    /// memory grew past the cap, and no HTTP request was ever sent (one
    /// may still be running on its own task).
    pub(crate) reusable: bool,
}

impl GuestState {
    fn new(plugin: &str, grants: &Grants, ceiling: Access, deadline: Instant) -> GuestState {
        let plugin: Arc<str> = Arc::from(plugin);
        let log = LogState::new(plugin.clone(), grants.limits.log_bytes());
        let mut table = ResourceTable::new();
        table.set_max_capacity(MAX_RESOURCES);
        GuestState {
            table,
            wasi: super::wasi::context(&log, &grants.wasi),
            log,
            config: grants.config.clone(),
            http: HttpState::new(&grants.http),
            sql: SqlState::new(plugin, &grants.sql, ceiling, deadline),
            limiter: Limiter::new(&grants.limits),
            deadline,
        }
    }

    /// Ready this state, which served a call that ended cleanly, for the
    /// next call under the same grants: fresh budgets and tallies, and
    /// `deadline`. What the guest holds (its memory, its resources) stays.
    fn rearm(&mut self, grants: &Grants, deadline: Instant) {
        self.log.rearm(grants.limits.log_bytes());
        self.sql.rearm(deadline);
        self.limiter = Limiter::new(&grants.limits);
        self.deadline = deadline;
    }

    /// Flush the guest's log and say how the call ended. Call once.
    pub(crate) fn finish(&mut self) -> Ending {
        let (http_statuses, egress_refused) = self.http.tally();
        let sql = self.sql.tally();
        Ending {
            last: self.log.finish(),
            memory_hit: self.limiter.memory_hit,
            http_statuses,
            usage: Usage { egress_refused, sql_statements: sql.statements, sql_refused: sql.refused },
            reusable: !self.limiter.memory_hit && !self.http.sent(),
        }
    }
}

/// A fresh store for one call of `plugin`, under its grants: a memory cap
/// and a `deadline` (epoch interruption). `ceiling` is the highest access
/// the caller has to what the plugin reaches.
pub(crate) fn store(
    engine: &Engine,
    plugin: &str,
    grants: &Grants,
    ceiling: Access,
    deadline: Instant,
) -> Store<GuestState> {
    let mut store = Store::new(engine, GuestState::new(plugin, grants, ceiling, deadline));
    store.limiter(|state| &mut state.limiter);
    store.set_epoch_deadline(1);
    store.epoch_deadline_callback(|store| {
        let over = Instant::now() >= store.data().deadline;
        Ok(if over { UpdateDeadline::Interrupt } else { UpdateDeadline::Yield(1) })
    });
    store
}

/// `store`, kept from a call of the same caller that ended cleanly
/// (see [`kept`](crate::runtime)), ready for the next one by `deadline`.
pub(crate) fn rearm(store: &mut Store<GuestState>, grants: &Grants, deadline: Instant) {
    store.data_mut().rearm(grants, deadline);
    store.set_epoch_deadline(1);
}

impl WasiView for GuestState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView { ctx: &mut self.wasi, table: &mut self.table }
    }
}

impl WasiHttpView for GuestState {
    fn http(&mut self) -> WasiHttpCtxView<'_> {
        self.http.view(&mut self.table)
    }
}

/// The types interface has no functions; its host trait is empty.
impl wit::Host for GuestState {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resource_tables_are_bounded() {
        let state = GuestState::new("p", &Grants::default(), Access::Read, Instant::now());
        assert_eq!(state.table.max_capacity(), MAX_RESOURCES);
    }
}
