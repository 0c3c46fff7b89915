//! The SQL capability: the grant (the database a plugin instance may
//! query), its linking, and a call's state.

use std::sync::Arc;
use std::time::Instant;

use wasmtime::component::{HasSelf, Linker};

use crate::contract::Access;
use crate::contract::database::quiver::plugin::sql;
use crate::contract::wit;

use super::database::{Database, Tally};

/// Add the `sql` import to `linker` (database adapters only); `state`
/// finds the call's [`SqlState`].
pub(crate) fn link<T: Send + 'static>(
    linker: &mut Linker<T>,
    state: fn(&mut T) -> &mut SqlState,
) -> wasmtime::Result<()> {
    sql::add_to_linker::<T, HasSelf<SqlState>>(linker, state)
}

/// The database an adapter instance may reach, if any.
#[derive(Debug, Clone, Default)]
pub struct SqlGrant(Option<Arc<Database>>);

impl SqlGrant {
    /// Reach `database`.
    pub fn new(database: Arc<Database>) -> SqlGrant {
        SqlGrant(Some(database))
    }

    /// The database, if one is granted.
    pub fn database(&self) -> Option<&Arc<Database>> {
        self.0.as_ref()
    }
}

impl PartialEq for SqlGrant {
    fn eq(&self, other: &SqlGrant) -> bool {
        match (&self.0, &other.0) {
            (Some(a), Some(b)) => Arc::ptr_eq(a, b),
            (None, None) => true,
            _ => false,
        }
    }
}

/// The `sql` capability's per-call state.
#[derive(Debug)]
pub(crate) struct SqlState {
    plugin: Arc<str>,
    grant: SqlGrant,
    /// The highest access the calling agent has here.
    ceiling: Access,
    deadline: Instant,
    tally: Tally,
}

impl SqlState {
    pub(crate) fn new(plugin: Arc<str>, grant: &SqlGrant, ceiling: Access, deadline: Instant) -> SqlState {
        SqlState { plugin, grant: grant.clone(), ceiling, deadline, tally: Tally::default() }
    }

    /// The next call of a kept instance: its `deadline`, a fresh tally.
    pub(crate) fn rearm(&mut self, deadline: Instant) {
        self.deadline = deadline;
        self.tally = Tally::default();
    }

    /// What this call's statements met so far.
    pub(crate) fn tally(&self) -> Tally {
        self.tally
    }

    fn database(&self) -> Result<&Arc<Database>, wit::Error> {
        self.grant.database().ok_or_else(|| {
            wit::Error::Unavailable(format!(
                "no database is configured for `{}`; add a [databases.{}] section",
                self.plugin, self.plugin
            ))
        })
    }
}

impl sql::Host for SqlState {
    async fn query(
        &mut self,
        statement: String,
        params: Vec<sql::Value>,
    ) -> wasmtime::Result<Result<sql::Rows, wit::Error>> {
        let database = match self.database() {
            Ok(database) => database.clone(),
            Err(error) => return Ok(Err(error)),
        };
        Ok(database.run(&statement, params, self.ceiling, self.deadline, true, &mut self.tally).await.map(|outcome| {
            match outcome {
                super::engine::Outcome::Rows(rows) => rows,
                super::engine::Outcome::Changed(n) => sql::Rows {
                    columns: vec!["changed".into()],
                    rows: vec![vec![sql::Value::Integer(n as i64)]],
                    truncated: false,
                },
            }
        }))
    }

    async fn execute(
        &mut self,
        statement: String,
        params: Vec<sql::Value>,
    ) -> wasmtime::Result<Result<u64, wit::Error>> {
        let database = match self.database() {
            Ok(database) => database.clone(),
            Err(error) => return Ok(Err(error)),
        };
        Ok(database.run(&statement, params, self.ceiling, self.deadline, false, &mut self.tally).await.map(|outcome| {
            match outcome {
                super::engine::Outcome::Changed(n) => n,
                super::engine::Outcome::Rows(rows) => rows.rows.len() as u64,
            }
        }))
    }

    async fn tables(&mut self) -> wasmtime::Result<Result<Vec<sql::TableInfo>, wit::Error>> {
        let database = match self.database() {
            Ok(database) => database,
            Err(error) => return Ok(Err(error)),
        };
        Ok(database.tables().await.map(|tables| tables.as_ref().clone()))
    }

    async fn dialect(&mut self) -> wasmtime::Result<String> {
        Ok(self.grant.database().map_or("none", |d| d.dialect().as_str()).to_owned())
    }
}
