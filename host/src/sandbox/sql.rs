//! The `sql` capability: database adapters send statements to the host,
//! which holds the connections.
//!
//! Grant: none yet; no database backend is wired in, so every statement is
//! answered with the typed WIT error `unavailable`, which the adapter can
//! report (denial is data, never a trap). The backends (SQLite, PostgreSQL)
//! and the statement policy land here, one module per backend.

use std::sync::Arc;

use wasmtime::component::{HasSelf, Linker};

use crate::contract::database::quiver::plugin::sql;
use crate::contract::wit;

/// Add the `sql` import to `linker` (database adapters only); `state`
/// finds the call's [`SqlState`].
pub(crate) fn link<T: Send + 'static>(
    linker: &mut Linker<T>,
    state: fn(&mut T) -> &mut SqlState,
) -> wasmtime::Result<()> {
    sql::add_to_linker::<T, HasSelf<SqlState>>(linker, state)
}

/// The `sql` capability's per-call state.
#[derive(Debug)]
pub(crate) struct SqlState {
    plugin: Arc<str>,
}

impl SqlState {
    pub(crate) fn new(plugin: Arc<str>) -> SqlState {
        SqlState { plugin }
    }

    fn unavailable(&self) -> wit::Error {
        wit::Error::Unavailable(format!("no database is configured for plugin `{}`", self.plugin))
    }
}

impl sql::Host for SqlState {
    async fn query(
        &mut self,
        _statement: String,
        _params: Vec<sql::Value>,
    ) -> wasmtime::Result<Result<sql::Rows, wit::Error>> {
        Ok(Err(self.unavailable()))
    }

    async fn execute(
        &mut self,
        _statement: String,
        _params: Vec<sql::Value>,
    ) -> wasmtime::Result<Result<u64, wit::Error>> {
        Ok(Err(self.unavailable()))
    }
}
