//! One configured database: its connections (one backend module per
//! engine), its policy, its limits and its schema as the host exposes it.
//!
//! A statement passes three independent layers: the [policy](super::policy)
//! (parsed, checked against the access granted), the database's own
//! read-only mode for read access (a read-only SQLite connection with
//! `query_only`; a `READ ONLY` PostgreSQL transaction), and the host's
//! limits (statement timeout, at most `row_limit` rows read, a cap on the
//! result's bytes, cancellation when the call's deadline passes).

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::engine::{Failure, Outcome, RawTable, Run};
use super::policy::{self, Dialect};
use super::settings::{DatabaseSettings, Location};
use super::{postgres, sqlite};
use crate::contract::Access;
use crate::contract::database::quiver::plugin::sql::{ColumnInfo, TableInfo, Value};
use crate::contract::wit;
use crate::error::Result;

/// How long the schema is trusted before it is read again.
const SCHEMA_TTL: Duration = Duration::from_secs(60);

/// Table names shown per database in Tier 1.
pub const SHOWN_TABLES: usize = 10;

enum Engine {
    Sqlite(Arc<sqlite::Sqlite>),
    Postgres(postgres::Postgres),
}

/// The schema last read, with when.
#[derive(Default)]
struct Schema {
    tables: Option<(Instant, Arc<Vec<TableInfo>>)>,
    /// Why the last reading failed, if it did.
    error: Option<String>,
}

/// One configured database.
pub struct Database {
    settings: DatabaseSettings,
    engine: Engine,
    schema: Mutex<Schema>,
}

impl std::fmt::Debug for Database {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Database").field("name", &self.settings.name).field("access", &self.settings.access).finish()
    }
}

/// What Tier 1 says of a database's tables.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TableList {
    /// The table names, sorted.
    Known(Vec<String>),
    /// Not read yet.
    Unknown,
    /// Reading them failed, and why.
    Failed(String),
}

impl Database {
    /// Prepare the connections of `settings` (nothing is connected yet).
    pub fn open(settings: DatabaseSettings) -> Result<Arc<Database>> {
        let engine = match &settings.location {
            Location::Sqlite(path) => {
                Engine::Sqlite(Arc::new(sqlite::Sqlite::new(path.clone(), settings.hidden.clone())))
            }
            Location::Postgres(url) => Engine::Postgres(postgres::Postgres::new(&settings, url)?),
        };
        Ok(Arc::new(Database { settings, engine, schema: Mutex::default() }))
    }

    /// Its settings.
    pub fn settings(&self) -> &DatabaseSettings {
        &self.settings
    }

    /// Its name.
    pub fn name(&self) -> &str {
        &self.settings.name
    }

    /// The dialect of its connection.
    pub fn dialect(&self) -> Dialect {
        self.settings.location.dialect()
    }

    /// Run `statement` with `params` for a caller whose access here is at
    /// most `ceiling`, by `deadline`: through the policy, then the backend.
    pub(crate) async fn run(
        &self,
        statement: &str,
        params: Vec<Value>,
        ceiling: Access,
        deadline: Instant,
        rows: bool,
    ) -> std::result::Result<Outcome, wit::Error> {
        let access = self.settings.access.min(ceiling);
        let effect = policy::check(self.dialect(), access, &self.settings.hidden, statement).map_err(|refusal| {
            if refusal.malformed {
                wit::Error::InvalidInput(refusal.to_string())
            } else {
                wit::Error::Denied(refusal.to_string())
            }
        })?;
        let timeout = Instant::now() + self.settings.statement_timeout;
        // Which limit ends the statement: its own timeout, or the call's.
        let call_bound = deadline < timeout;
        let deadline = deadline.min(timeout);
        if deadline <= Instant::now() {
            return Err(wit::Error::Unavailable("the call has no time left to run a statement".into()));
        }
        let run = Run {
            effect,
            writable: access > Access::Read,
            rows,
            deadline,
            call_bound,
            row_limit: self.settings.row_limit,
            max_bytes: self.settings.max_result_bytes,
        };
        let outcome = match &self.engine {
            Engine::Sqlite(engine) => engine.run(statement, params, run).await,
            Engine::Postgres(engine) => engine.run(statement, params, run).await,
        };
        outcome.map_err(|failure| match failure {
            Failure::Timeout(left) if call_bound => wit::Error::Unavailable(format!(
                "{}: the call's time ran out after {} ms, and the statement was cancelled; narrow it (filter, \
                 aggregate, LIMIT)",
                self.settings.name,
                left.as_millis()
            )),
            Failure::Timeout(_) => self.error(Failure::Timeout(self.settings.statement_timeout)),
            other => self.error(other),
        })
    }

    fn error(&self, failure: Failure) -> wit::Error {
        let name = &self.settings.name;
        match failure {
            Failure::Statement(message) => wit::Error::InvalidInput(format!("{name}: {message}")),
            Failure::ReadOnly(message) => {
                wit::Error::Denied(format!("{name} is read-only for this access ({message}); send a query"))
            }
            Failure::Timeout(limit) => wit::Error::Unavailable(format!(
                "{name}: the statement ran past its limit of {} ms and was cancelled; narrow it (filter, \
                 aggregate, LIMIT)",
                limit.as_millis()
            )),
            Failure::Unavailable(message) => wit::Error::Unavailable(format!("{name}: {message}")),
        }
    }

    /// The tables the host exposes: hidden ones left out, the operator's
    /// descriptions (else the database's comments) filled in. Read again
    /// once [`SCHEMA_TTL`] has passed.
    pub async fn tables(&self) -> std::result::Result<Arc<Vec<TableInfo>>, wit::Error> {
        if let Some((at, tables)) = &self.lock().tables
            && at.elapsed() < SCHEMA_TTL
        {
            return Ok(tables.clone());
        }
        let raw = match &self.engine {
            Engine::Sqlite(engine) => engine.introspect().await,
            Engine::Postgres(engine) => engine.introspect().await,
        };
        self.remember(raw).map_err(|failure| self.error(failure))
    }

    /// Read the schema now, blocking this thread at most `limit` (for Tier 1
    /// at start-up, outside any runtime's worker).
    pub fn introspect_blocking(&self, limit: Duration) {
        let raw = match &self.engine {
            Engine::Sqlite(engine) => engine.introspect_blocking(),
            Engine::Postgres(engine) => engine.introspect_blocking(limit),
        };
        if let Err(failure) = self.remember(raw) {
            tracing::warn!(database = %self.settings.name, error = ?failure, "cannot read the schema");
        }
    }

    fn remember(
        &self,
        raw: std::result::Result<Vec<RawTable>, Failure>,
    ) -> std::result::Result<Arc<Vec<TableInfo>>, Failure> {
        let mut schema = self.lock();
        match raw {
            Ok(raw) => {
                let tables = Arc::new(self.expose(raw));
                *schema = Schema { tables: Some((Instant::now(), tables.clone())), error: None };
                Ok(tables)
            }
            Err(failure) => {
                schema.error = Some(format!("{:?}", failure));
                Err(failure)
            }
        }
    }

    /// What Tier 1 shows of the tables, from what was last read.
    pub fn table_list(&self) -> TableList {
        let schema = self.lock();
        match (&schema.tables, &schema.error) {
            (Some((_, tables)), _) => TableList::Known(tables.iter().map(|t| t.name.clone()).collect()),
            (None, Some(error)) => TableList::Failed(error.clone()),
            (None, None) => TableList::Unknown,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Schema> {
        self.schema.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Apply what is hidden and what the operator wrote.
    fn expose(&self, raw: Vec<RawTable>) -> Vec<TableInfo> {
        let settings = &self.settings;
        let hidden = &settings.hidden;
        let mut tables: Vec<TableInfo> = raw
            .into_iter()
            .filter(|t| !hidden.table(&t.name))
            .map(|t| {
                let columns: Vec<ColumnInfo> = t
                    .columns
                    .into_iter()
                    .filter(|c| !hidden.column(&t.name, &c.name))
                    .map(|c| ColumnInfo {
                        description: settings.column_note(&t.name, &c.name).map(str::to_owned).unwrap_or(c.comment),
                        references: c.references.filter(|r| {
                            let (table, column) = r.split_once('.').unwrap_or((r, ""));
                            !hidden.table(table) && !hidden.column(table, column)
                        }),
                        name: c.name,
                        data_type: c.data_type,
                        nullable: c.nullable,
                    })
                    .collect();
                TableInfo {
                    description: settings.table_note(&t.name).map(str::to_owned).unwrap_or(t.comment),
                    primary_key: t.primary_key.into_iter().filter(|k| columns.iter().any(|c| &c.name == k)).collect(),
                    columns,
                    row_estimate: t.row_estimate,
                    name: t.name,
                }
            })
            .collect();
        tables.sort_by(|a, b| a.name.cmp(&b.name));
        tables
    }
}
