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

use super::engine::{Failure, Guard, Outcome, RawSchema, Run};
use super::policy::{self, Dialect, Functions, Policy, Visible, Why};
use super::settings::{DatabaseSettings, Location};
use super::snapshot::{Privileges, Snapshot, TableShape};
use super::{postgres, sqlite};
use crate::contract::database::quiver::plugin::sql::{TableInfo, Value};
use crate::contract::wit;
use crate::contract::{Access, Shape, sanitize_cut};
use crate::error::Result;
use crate::sandbox::secrets::Redaction;
use crate::telemetry::spans;

/// How long the schema is trusted before it is read again.
const SCHEMA_TTL: Duration = Duration::from_secs(60);

/// A statement naming a table or column the schema does not have reads the
/// schema again first, if it was read at least this long ago.
const REREAD_AFTER: Duration = Duration::from_secs(1);

enum Engine {
    Sqlite(Arc<sqlite::Sqlite>),
    Postgres(Box<postgres::Postgres>),
}

/// The schema last read, with when.
#[derive(Default)]
struct Schema {
    snapshot: Option<Snapshot>,
    /// Why the last reading failed, if it did.
    error: Option<String>,
    /// Whether the connection's role can read what is hidden (PostgreSQL).
    privileges: Privileges,
}

/// One configured database.
pub struct Database {
    settings: DatabaseSettings,
    engine: Engine,
    schema: Mutex<Schema>,
    /// What statements may call, per access level (read, write, admin).
    functions: [Arc<Functions>; 3],
}

impl std::fmt::Debug for Database {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Database").field("name", &self.settings.name).field("access", &self.settings.access).finish()
    }
}

/// What one call's statements met: how many it sent, and how many were
/// refused (by the SQL policy, or by the database's read-only guard).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Tally {
    pub(crate) statements: u32,
    pub(crate) refused: u32,
}

/// What the host last read of a database's tables.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TableNames {
    /// The names of the tables it exposes, sorted.
    Read(Vec<String>),
    /// The schema was not read yet.
    NotRead,
    /// Reading the schema failed, and why.
    Failed(String),
}

impl Database {
    /// Prepare the connections of `settings` (nothing is connected yet).
    pub fn open(settings: DatabaseSettings) -> Result<Arc<Database>> {
        let engine = match &settings.location {
            Location::Sqlite(path) => {
                // Connections never create the file: a missing one is a
                // mistake in the configuration, said now with its whole path.
                if !path.is_file() {
                    let path = std::path::absolute(path).unwrap_or_else(|_| path.clone());
                    let message = format!("url: the SQLite file {} does not exist (or is not a file)", path.display());
                    return Err(crate::error::Error::config(format!("[databases.{}]", settings.name), message));
                }
                Engine::Sqlite(Arc::new(sqlite::Sqlite::new(path.clone(), settings.hidden.clone())))
            }
            Location::Postgres(url) => Engine::Postgres(Box::new(postgres::Postgres::new(&settings, url)?)),
        };
        let dialect = settings.location.dialect();
        let functions = Access::ALL.map(|access| Arc::new(Functions::new(dialect, access, &settings.allow_functions)));
        let privileges = if dialect == Dialect::Sqlite { Privileges::NotApplicable } else { Privileges::NotCheckedYet };
        let schema = Mutex::new(Schema { privileges, ..Schema::default() });
        Ok(Arc::new(Database { settings, engine, schema, functions }))
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

    /// Whether the role the host connects as can read what the operator
    /// hid (PostgreSQL; checked with the first reading of the schema).
    pub fn privileges(&self) -> Privileges {
        self.lock().privileges.clone()
    }

    fn functions(&self, access: Access) -> Arc<Functions> {
        self.functions[Access::ALL.iter().position(|a| *a == access).unwrap_or(0)].clone()
    }

    /// Check `statement` for a caller with `access` against the schema;
    /// a name the schema does not know reads the schema again (once, if it
    /// was read a while ago) before it is refused. The check runs on a
    /// stack of its own ([`super::stack`]).
    async fn check(
        self: &Arc<Self>,
        access: Access,
        statement: &str,
    ) -> std::result::Result<(policy::Effect, Arc<Visible>), wit::Error> {
        let mut snapshot = self.snapshot(false).await?;
        let statement: Arc<str> = statement.into();
        loop {
            let (this, sql, visible) = (self.clone(), statement.clone(), snapshot.visible.clone());
            let checked = super::stack::on_own_stack(move || {
                let functions = this.functions(access);
                let hidden = &this.settings.hidden;
                let policy =
                    Policy { dialect: this.dialect(), access, hidden, visible: &visible, functions: &functions };
                policy::check(&policy, &sql)
            })
            .await
            .map_err(|e| wit::Error::Unavailable(format!("{}: {e}", self.settings.name)))?;
            match checked {
                Ok(effect) => return Ok((effect, snapshot.visible.clone())),
                Err(refusal) if refusal.why == Why::Unknown && snapshot.at.elapsed() >= REREAD_AFTER => {
                    snapshot = self.snapshot(true).await?;
                }
                // Only what needs more access is a denial (the caller must
                // not try again); the rest can be rewritten, as the hint says.
                Err(refusal) if refusal.why == Why::Access => return Err(wit::Error::Denied(refusal.to_string())),
                Err(refusal) => return Err(wit::Error::InvalidInput(refusal.to_string())),
            }
        }
    }

    /// Run `statement` with `params` for a caller whose access here is at
    /// most `ceiling`, by `deadline`: through the policy, then the backend.
    pub(crate) async fn run(
        self: &Arc<Self>,
        statement: &str,
        params: Vec<Value>,
        ceiling: Access,
        deadline: Instant,
        rows: bool,
        tally: &mut Tally,
    ) -> std::result::Result<Outcome, wit::Error> {
        let access = self.settings.access.min(ceiling);
        let span = crate::telemetry::spans::sql(self.dialect().as_str(), &self.settings.name);
        tally.statements += 1;
        if self.settings.trace_text && !span.is_disabled() {
            let redacted = Redaction::new(self.settings.password.iter()).scrub(statement).into_owned();
            spans::sql_text(&span, &sanitize_cut(&redacted, Shape::Lines, spans::MAX_TEXT));
        }
        let (effect, visible) = match self.check(access, statement).await {
            Ok(checked) => checked,
            Err(refusal) => {
                crate::telemetry::spans::sql_ended(&span, None, Err("refused"));
                tally.refused += 1;
                return Err(refusal);
            }
        };
        // The policy let it through: its first word is the statement's
        // keyword (never its text, which can hold values).
        crate::telemetry::spans::sql_ended(&span, Some(statement), Ok(None));
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
            guard: Guard { visible, functions: self.functions(access) },
        };
        let outcome = tracing::Instrument::instrument(
            async {
                match &self.engine {
                    Engine::Sqlite(engine) => engine.run(statement, params, run).await,
                    Engine::Postgres(engine) => engine.run(statement, params, run).await,
                }
            },
            span.clone(),
        )
        .await;
        crate::telemetry::spans::sql_ended(
            &span,
            None,
            match &outcome {
                Ok(Outcome::Rows(rows)) => Ok(Some(rows.rows.len() as u64)),
                Ok(Outcome::Changed(n)) => Ok(Some(*n)),
                Err(Failure::Timeout(_)) => Err("timeout"),
                Err(_) => Err("failed"),
            },
        );
        tally.refused += u32::from(matches!(outcome, Err(Failure::ReadOnly(_))));
        if outcome.is_ok() && effect == policy::Effect::Admin {
            // The schema changed: read it again before the next statement.
            self.expire();
        }
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
        Ok(self.snapshot(false).await?.tables)
    }

    /// The schema as last read, or read now if it is older than
    /// [`SCHEMA_TTL`] (or `fresh` is asked for).
    async fn snapshot(&self, fresh: bool) -> std::result::Result<Snapshot, wit::Error> {
        if let Some(snapshot) = &self.lock().snapshot
            && !fresh
            && snapshot.at.elapsed() < SCHEMA_TTL
        {
            return Ok(snapshot.clone());
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

    fn remember(&self, raw: std::result::Result<RawSchema, Failure>) -> std::result::Result<Snapshot, Failure> {
        let mut schema = self.lock();
        match raw {
            Ok(raw) => {
                if let Some(readable) = &raw.readable_hidden
                    && schema.privileges == Privileges::NotCheckedYet
                {
                    schema.privileges = Privileges::checked(readable);
                    if !readable.is_empty() {
                        tracing::warn!(
                            database = %self.settings.name,
                            readable = %readable.join(", "),
                            "the role Quiver connects as can read what the configuration hides; only the policy \
                             keeps it hidden: grant that role column privileges (docs/src/security.md, column privileges)"
                        );
                    }
                }
                let snapshot = Snapshot::new(&self.settings, raw);
                *schema =
                    Schema { snapshot: Some(snapshot.clone()), error: None, privileges: schema.privileges.clone() };
                Ok(snapshot)
            }
            Err(failure) => {
                schema.error = Some(format!("{:?}", failure));
                Err(failure)
            }
        }
    }

    /// Have the next statement read the schema again.
    fn expire(&self) {
        if let Some(snapshot) = &mut self.lock().snapshot {
            snapshot.at = Instant::now().checked_sub(SCHEMA_TTL).unwrap_or(snapshot.at);
        }
    }

    /// The names of the tables it exposes, as last read (never reading now).
    pub fn table_names(&self) -> TableNames {
        let schema = self.lock();
        match (&schema.snapshot, &schema.error) {
            (Some(snapshot), _) => TableNames::Read(snapshot.tables.iter().map(|t| t.name.clone()).collect()),
            (None, Some(error)) => TableNames::Failed(error.clone()),
            (None, None) => TableNames::NotRead,
        }
    }

    /// What the host read of `table` beyond the adapter's contract (a view,
    /// unique sets, defaults), as last read (never reading now); `None` for
    /// a table it does not show.
    pub fn shape(&self, table: &str) -> Option<TableShape> {
        let schema = self.lock();
        let shapes = &schema.snapshot.as_ref()?.shapes;
        shapes
            .get(table)
            .or_else(|| shapes.iter().find(|(name, _)| name.eq_ignore_ascii_case(table)).map(|(_, s)| s))
            .cloned()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Schema> {
        self.schema.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}
