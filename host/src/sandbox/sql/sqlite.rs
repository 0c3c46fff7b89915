//! The SQLite backend (rusqlite, with SQLite bundled).
//!
//! Read access opens the file read-only (`SQLITE_OPEN_READ_ONLY`) and sets
//! `PRAGMA query_only`, so the engine itself refuses writes. Every agent's
//! statement runs under an authorizer (SQLite asks it about every table and
//! column a statement reads, every function it calls) made from the
//! policy's own lists: it reads only visible tables and columns (and the
//! allowed table-valued functions), calls only allowed functions, and
//! never runs `PRAGMA`, `ATTACH` or transaction control, whatever the
//! parser let through. A progress handler interrupts a statement past its
//! deadline. Connections are pooled per mode; each statement runs on a
//! blocking thread.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rusqlite::hooks::{AuthAction, AuthContext, Authorization};
use rusqlite::limits::Limit;
use rusqlite::types::ValueRef;
use rusqlite::{Connection, OpenFlags};

use super::engine::{Collector, Failure, Guard, Outcome, RawColumn, RawSchema, RawTable, Run};
use super::policy::{Effect, Hidden};
use crate::contract::database::quiver::plugin::sql::Value;

/// Connections kept per mode.
const POOL: usize = 4;

/// A SQLite database file.
pub(crate) struct Sqlite {
    path: PathBuf,
    /// Idle connections: (writable, connection).
    idle: Mutex<Vec<(bool, Connection)>>,
    hidden: Arc<Hidden>,
}

impl Sqlite {
    pub(crate) fn new(path: PathBuf, hidden: Hidden) -> Sqlite {
        Sqlite { path, idle: Mutex::new(Vec::new()), hidden: Arc::new(hidden) }
    }

    fn open(&self, writable: bool) -> Result<Connection, Failure> {
        let flags = if writable { OpenFlags::SQLITE_OPEN_READ_WRITE } else { OpenFlags::SQLITE_OPEN_READ_ONLY }
            | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let unavailable =
            |e: rusqlite::Error| Failure::Unavailable(format!("cannot open {}: {e}", self.path.display()));
        let connection = Connection::open_with_flags(&self.path, flags).map_err(unavailable)?;
        if !writable {
            connection.pragma_update(None, "query_only", true).map_err(unavailable)?;
        }
        // The policy's bound on compound queries, told to the engine too.
        let compound = i32::try_from(super::policy::MAX_COMPOUND).unwrap_or(i32::MAX);
        let _ = connection.set_limit(Limit::SQLITE_LIMIT_COMPOUND_SELECT, compound);
        Ok(connection)
    }

    fn take(&self, writable: bool) -> Result<Connection, Failure> {
        let mut idle = self.idle.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        match idle.iter().position(|(w, _)| *w == writable) {
            Some(i) => Ok(idle.swap_remove(i).1),
            None => {
                drop(idle);
                self.open(writable)
            }
        }
    }

    fn give_back(&self, writable: bool, connection: Connection) {
        let mut idle = self.idle.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if idle.iter().filter(|(w, _)| *w == writable).count() < POOL {
            idle.push((writable, connection));
        }
    }

    /// Run one statement that passed the policy, on a thread of its own
    /// ([`super::stack`]): SQLite recurses in C over the statement's tree
    /// and blocks until the statement ends.
    pub(crate) async fn run(
        self: &Arc<Self>,
        statement: &str,
        params: Vec<Value>,
        run: Run,
    ) -> Result<Outcome, Failure> {
        let this = self.clone();
        let statement = statement.to_owned();
        super::stack::on_own_stack(move || this.run_here(&statement, params, run))
            .await
            .map_err(Failure::Unavailable)?
    }

    fn run_here(&self, statement: &str, params: Vec<Value>, run: Run) -> Result<Outcome, Failure> {
        let mut connection = self.take(run.writable)?;
        let limit = run.deadline.saturating_duration_since(Instant::now());
        let deadline = run.deadline;
        let _ = connection.progress_handler(1_000, Some(move || Instant::now() >= deadline));
        // No string or blob may grow past the result cap, not even in the
        // middle of a statement (`zeroblob(1e9)`).
        let _ = connection.set_limit(Limit::SQLITE_LIMIT_LENGTH, i32::try_from(run.max_bytes).unwrap_or(i32::MAX));
        // The engine's own check of this statement, from the policy's lists.
        let (hidden, guard, effect) = (self.hidden.clone(), run.guard.clone(), run.effect);
        let writable = run.writable;
        if let Err(e) = connection
            .authorizer(Some(move |context: AuthContext<'_>| authorize(&hidden, &guard, writable, effect, &context)))
        {
            return Err(Failure::Unavailable(format!("cannot set the authorizer: {e}")));
        }
        let max_bytes = run.max_bytes;
        let outcome =
            execute(&connection, statement, params, &run).unwrap_or_else(|e| Err(failure(e, limit, max_bytes)));
        let _ = connection.progress_handler(0, None::<fn() -> bool>);
        // A connection that failed mid-statement is not reused.
        if outcome.is_ok() {
            self.give_back(run.writable, connection);
        }
        outcome
    }

    /// The tables and views, read without any agent's restrictions.
    pub(crate) async fn introspect(self: &Arc<Self>) -> Result<RawSchema, Failure> {
        let this = self.clone();
        tokio::task::spawn_blocking(move || this.introspect_blocking())
            .await
            .map_err(|e| Failure::Unavailable(format!("the schema's thread failed: {e}")))?
    }

    pub(crate) fn introspect_blocking(&self) -> Result<RawSchema, Failure> {
        let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let connection = Connection::open_with_flags(&self.path, flags)
            .map_err(|e| Failure::Unavailable(format!("cannot open {}: {e}", self.path.display())))?;
        let tables = schema(&connection).map_err(|e| Failure::Unavailable(format!("cannot read the schema: {e}")))?;
        Ok(RawSchema { name: "main".into(), tables, readable_hidden: None })
    }
}

/// A SQLite file built from `sql` in `dir`, named after `name` and the
/// SQL's digest: built once (in a temporary file, then renamed into place),
/// then reused.
pub fn materialize(name: &str, sql: &str, dir: &std::path::Path) -> std::io::Result<PathBuf> {
    use sha2::{Digest, Sha256};
    let digest = hex::encode(&Sha256::digest(sql.as_bytes())[..6]);
    let path = dir.join(format!("{name}-{digest}.db"));
    if path.is_file() {
        return Ok(path);
    }
    std::fs::create_dir_all(dir)?;
    let temporary = dir.join(format!(".{name}-{digest}.{}.tmp", std::process::id()));
    let built = (|| {
        let connection = Connection::open(&temporary).map_err(std::io::Error::other)?;
        connection.execute_batch(&format!("BEGIN;\n{sql}\nCOMMIT;")).map_err(std::io::Error::other)?;
        drop(connection);
        std::fs::rename(&temporary, &path)
    })();
    if built.is_err() {
        let _ = std::fs::remove_file(&temporary);
    }
    built.map(|()| path)
}

/// What SQLite's authorizer answers for an agent's statement: an
/// allow-list, as the policy's. Reads of visible columns of visible tables
/// (and SQLite's row id), of an allowed table-valued function, or of no
/// column at all (`count(*)`, a CTE's rows) of a table that is not hidden;
/// calls of allowed functions; rows written where writing is granted; DDL of
/// tables, views and indexes (with the schema table updates SQLite makes for
/// it) where the statement is DDL. Nothing else.
fn authorize(
    hidden: &Hidden,
    guard: &Guard,
    writable: bool,
    effect: Effect,
    context: &AuthContext<'_>,
) -> Authorization {
    let system = |table: &str| table.to_ascii_lowercase().starts_with("sqlite_");
    let ddl = writable && effect == Effect::Admin;
    // The schema table, which SQLite itself reads and writes for DDL.
    let schema_table =
        |table: &str| ddl && ["sqlite_master", "sqlite_schema"].iter().any(|t| table.eq_ignore_ascii_case(t));
    let writes = |table: &str| (writable && !system(table) && !hidden.table(table)) || schema_table(table);
    let allowed = match context.action {
        AuthAction::Select | AuthAction::Recursive => true,
        AuthAction::Read { table_name, column_name } => {
            let row_id = ["rowid", "oid", "_rowid_"].iter().any(|r| column_name.eq_ignore_ascii_case(r));
            let plain = !system(table_name) && !hidden.table(table_name) && !hidden.column(table_name, column_name);
            guard.functions.allows_table(&sqlparser::ast::Ident::new(table_name))
                || schema_table(table_name)
                || (plain && column_name.is_empty())
                || (plain && row_id && guard.visible.table(table_name))
                || (plain && guard.visible.column(table_name, column_name))
        }
        AuthAction::Function { function_name } => guard.functions.allows_name(function_name),
        AuthAction::Insert { table_name } | AuthAction::Delete { table_name } => writes(table_name),
        AuthAction::Update { table_name, column_name } => writes(table_name) && !hidden.column(table_name, column_name),
        AuthAction::CreateTable { .. }
        | AuthAction::CreateIndex { .. }
        | AuthAction::CreateView { .. }
        | AuthAction::DropTable { .. }
        | AuthAction::DropIndex { .. }
        | AuthAction::DropView { .. }
        | AuthAction::AlterTable { .. }
        | AuthAction::Reindex { .. } => ddl,
        _ => false,
    };
    if allowed { Authorization::Allow } else { Authorization::Deny }
}

/// Run `sql`; the outer error is the engine's, the inner one the caps'.
fn execute(
    connection: &Connection,
    sql: &str,
    params: Vec<Value>,
    run: &Run,
) -> rusqlite::Result<Result<Outcome, Failure>> {
    let mut statement = connection.prepare(sql)?;
    let params: Vec<rusqlite::types::Value> = params.into_iter().map(to_sqlite).collect();
    // A statement with no result columns (DML without RETURNING) says how
    // many rows it changed.
    if !run.rows || statement.column_count() == 0 {
        return Ok(Ok(Outcome::Changed(statement.execute(rusqlite::params_from_iter(params))? as u64)));
    }
    let columns: Vec<String> = statement.column_names().map(str::to_owned).collect();
    let width = columns.len();
    let mut rows = statement.query(rusqlite::params_from_iter(params))?;
    let mut collector = Collector::new(run);
    while collector.wants_more()
        && let Some(row) = rows.next()?
    {
        let values = (0..width).map(|i| row.get_ref(i).map(from_sqlite)).collect::<rusqlite::Result<_>>()?;
        if let Err(failure) = collector.push(values) {
            return Ok(Err(failure));
        }
    }
    Ok(Ok(Outcome::Rows(collector.finish(columns))))
}

fn failure(error: rusqlite::Error, limit: Duration, max_bytes: usize) -> Failure {
    use rusqlite::ErrorCode;
    match error.sqlite_error_code() {
        Some(ErrorCode::OperationInterrupted) => Failure::Timeout(limit),
        Some(ErrorCode::TooBig) => Failure::Statement(format!(
            "a value would be larger than the result cap of {} KiB; select less of it (substr, length)",
            max_bytes / 1024
        )),
        Some(ErrorCode::ReadOnly) => Failure::ReadOnly(error.to_string()),
        Some(ErrorCode::AuthorizationForStatementDenied) => Failure::ReadOnly(format!("not authorized: {error}")),
        Some(
            ErrorCode::CannotOpen | ErrorCode::NotADatabase | ErrorCode::DatabaseCorrupt | ErrorCode::SystemIoFailure,
        ) => Failure::Unavailable(error.to_string()),
        _ => Failure::Statement(error.to_string()),
    }
}

fn to_sqlite(value: Value) -> rusqlite::types::Value {
    use rusqlite::types::Value as V;
    match value {
        Value::Null => V::Null,
        Value::Integer(i) => V::Integer(i),
        Value::Real(f) => V::Real(f),
        Value::Text(s) => V::Text(s),
        Value::Blob(b) => V::Blob(b),
    }
}

fn from_sqlite(value: ValueRef<'_>) -> Value {
    match value {
        ValueRef::Null => Value::Null,
        ValueRef::Integer(i) => Value::Integer(i),
        ValueRef::Real(f) => Value::Real(f),
        ValueRef::Text(t) => Value::Text(String::from_utf8_lossy(t).into_owned()),
        ValueRef::Blob(b) => Value::Blob(b.to_vec()),
    }
}

/// Tables and views with their columns, keys and (where `ANALYZE` ran)
/// row estimates.
fn schema(connection: &Connection) -> rusqlite::Result<Vec<RawTable>> {
    let mut names = connection.prepare(
        "SELECT name, type = 'view' FROM sqlite_schema WHERE type IN ('table', 'view') \
         AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' ORDER BY name",
    )?;
    let names: Vec<(String, bool)> =
        names.query_map([], |row| Ok((row.get(0)?, row.get(1)?)))?.collect::<rusqlite::Result<_>>()?;
    let has_stats: bool = connection
        .query_row("SELECT count(*) FROM sqlite_schema WHERE name = 'sqlite_stat1'", [], |row| row.get::<_, i64>(0))
        .map(|n| n > 0)?;
    let mut tables = Vec::with_capacity(names.len());
    for (name, view) in names {
        let mut keys = connection.prepare("SELECT \"from\", \"table\", \"to\" FROM pragma_foreign_key_list(?1)")?;
        let keys: Vec<(String, String, Option<String>)> = keys
            .query_map([&name], |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)))?
            .collect::<rusqlite::Result<_>>()?;
        let mut info = connection
            .prepare("SELECT name, type, \"notnull\", pk, dflt_value FROM pragma_table_info(?1) ORDER BY cid")?;
        let mut primary: Vec<(i64, String)> = Vec::new();
        let columns = info
            .query_map([&name], |row| {
                let column: String = row.get(0)?;
                let pk: i64 = row.get(3)?;
                Ok((column, row.get::<_, String>(1)?, row.get::<_, i64>(2)? != 0, pk, row.get(4)?))
            })?
            .collect::<rusqlite::Result<Vec<_>>>()?
            .into_iter()
            .map(|(column, data_type, not_null, pk, default)| {
                if pk > 0 {
                    primary.push((pk, column.clone()));
                }
                let references = keys
                    .iter()
                    .find(|(from, ..)| *from == column)
                    .map(|(_, table, to)| format!("{table}.{}", to.clone().unwrap_or_else(|| "rowid".into())));
                RawColumn {
                    name: column,
                    data_type,
                    nullable: !not_null && pk == 0,
                    comment: String::new(),
                    references,
                    default,
                }
            })
            .collect();
        primary.sort();
        let row_estimate = if has_stats {
            connection
                .query_row(
                    "SELECT stat FROM sqlite_stat1 WHERE tbl = ?1 AND idx IS NULL OR tbl = ?1 LIMIT 1",
                    [&name],
                    |row| row.get::<_, String>(0),
                )
                .ok()
                .and_then(|stat| stat.split_whitespace().next().and_then(|n| n.parse().ok()))
        } else {
            None
        };
        let unique = unique(connection, &name)?;
        tables.push(RawTable {
            name,
            comment: String::new(),
            columns,
            primary_key: primary.into_iter().map(|(_, c)| c).collect(),
            row_estimate,
            view,
            unique,
        });
    }
    Ok(tables)
}

/// The column sets `table`'s unique indexes hold unique: constraints and
/// `CREATE UNIQUE INDEX`, not the primary key, not partial indexes (unique
/// over some rows only) and not indexes on expressions.
fn unique(connection: &Connection, table: &str) -> rusqlite::Result<Vec<Vec<String>>> {
    let mut indexes = connection
        .prepare("SELECT name FROM pragma_index_list(?1) WHERE \"unique\" AND origin <> 'pk' AND NOT partial")?;
    let indexes: Vec<String> = indexes.query_map([table], |row| row.get(0))?.collect::<rusqlite::Result<_>>()?;
    let mut columns = connection.prepare("SELECT name FROM pragma_index_info(?1) ORDER BY seqno")?;
    let mut sets = Vec::new();
    for index in indexes {
        let names: Vec<Option<String>> =
            columns.query_map([&index], |row| row.get(0))?.collect::<rusqlite::Result<_>>()?;
        if let Some(names) = names.into_iter().collect::<Option<Vec<String>>>() {
            sets.push(names);
        }
    }
    sets.sort();
    Ok(sets)
}

/// The engine's own layers, each without the policy in front of it.
#[cfg(test)]
mod tests {
    use super::*;
    use crate::contract::Access;
    use crate::sandbox::sql::policy::{Dialect, Functions, Visible};

    fn database() -> (tempfile::TempDir, Arc<Sqlite>) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.db");
        let connection = Connection::open(&path).unwrap();
        connection
            .execute_batch(
                "CREATE TABLE genre (id INTEGER PRIMARY KEY, name TEXT);
                 INSERT INTO genre VALUES (1, 'Rock'), (2, 'Jazz');
                 CREATE TABLE secrets (id INTEGER PRIMARY KEY, key TEXT);
                 CREATE TABLE staff (id INTEGER PRIMARY KEY, name TEXT, salary INTEGER);
                 CREATE TABLE unlisted (x TEXT);",
            )
            .unwrap();
        let hidden = Hidden::parse(&["secrets".into(), "staff.salary".into()]).unwrap();
        (dir, Arc::new(Sqlite::new(path, hidden)))
    }

    fn run(writable: bool) -> Run {
        let hidden = Hidden::parse(&["secrets".into(), "staff.salary".into()]).unwrap();
        let tables =
            [("genre", vec!["id", "name"]), ("secrets", vec!["id", "key"]), ("staff", vec!["id", "name", "salary"])];
        let visible = Visible::new("main", tables, &hidden);
        let access = if writable { Access::Admin } else { Access::Read };
        Run {
            effect: Effect::Read,
            writable,
            rows: true,
            deadline: Instant::now() + Duration::from_secs(5),
            call_bound: false,
            row_limit: 10,
            max_bytes: 4096,
            guard: Guard {
                visible: Arc::new(visible),
                functions: Arc::new(Functions::new(Dialect::Sqlite, access, &[])),
            },
        }
    }

    async fn refused(sqlite: &Arc<Sqlite>, sql: &str) -> String {
        match sqlite.run(sql, Vec::new(), run(false)).await {
            Err(Failure::ReadOnly(message) | Failure::Statement(message)) => message,
            other => panic!("`{sql}` was not refused by the engine: {other:?}"),
        }
    }

    #[tokio::test]
    async fn a_read_connection_refuses_writes_whatever_reaches_it() {
        let (_dir, sqlite) = database();
        for sql in
            ["DELETE FROM genre", "INSERT INTO genre VALUES (3, 'Pop')", "DROP TABLE genre", "CREATE TABLE t (x)"]
        {
            refused(&sqlite, sql).await;
        }
        let Ok(Outcome::Rows(rows)) = sqlite.run("SELECT count(*) FROM genre", Vec::new(), run(false)).await else {
            panic!("a read runs")
        };
        assert_eq!(rows.rows, vec![vec![Value::Integer(2)]]);
    }

    #[tokio::test]
    async fn the_authorizer_refuses_what_the_policy_would() {
        let (_dir, sqlite) = database();
        for sql in [
            "SELECT * FROM secrets",
            "SELECT salary FROM staff",
            "SELECT * FROM staff",
            "SELECT name FROM sqlite_master",
            "PRAGMA table_info(secrets)",
            "ATTACH DATABASE ':memory:' AS other",
            "SELECT load_extension('x')",
            "SELECT sqlite_version()",
            "SELECT * FROM pragma_table_info('staff')",
            // A table the schema the policy read does not have.
            "SELECT x FROM unlisted",
        ] {
            let message = refused(&sqlite, sql).await;
            assert!(message.contains("not authorized") || message.contains("no such function"), "{sql}: {message}");
        }
        assert!(sqlite.run("SELECT id, name FROM staff", Vec::new(), run(false)).await.is_ok());
        let cte = "WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM r WHERE i < 3) SELECT count(*) FROM r";
        assert!(sqlite.run(cte, Vec::new(), run(false)).await.is_ok());
        assert!(sqlite.run("SELECT value FROM json_each('[1]'), genre", Vec::new(), run(false)).await.is_ok());
    }

    #[tokio::test]
    async fn ddl_runs_at_admin_with_the_schema_table_writes_sqlite_makes() {
        let (_dir, sqlite) = database();
        let mut admin = run(true);
        admin.effect = Effect::Admin;
        for sql in [
            "CREATE TABLE t (a INTEGER)",
            "ALTER TABLE genre ADD COLUMN rank INTEGER",
            "CREATE INDEX genre_name ON genre (name)",
            "CREATE VIEW v AS SELECT name FROM genre",
            "DROP VIEW v",
            "DROP TABLE t",
        ] {
            let outcome = sqlite.run(sql, Vec::new(), admin.clone()).await;
            assert!(outcome.is_ok(), "{sql}: {outcome:?}");
        }
        // The same statement as DML is not DDL: refused by the engine.
        let mut write = run(true);
        write.effect = Effect::Write;
        assert!(sqlite.run("CREATE TABLE u (a INTEGER)", Vec::new(), write).await.is_err());
    }

    #[tokio::test]
    async fn limits_hold_in_the_engine() {
        let (_dir, sqlite) = database();
        let forever = "WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM r) SELECT count(*) FROM r";
        let mut short = run(false);
        short.deadline = Instant::now() + Duration::from_millis(100);
        let outcome = sqlite.run(forever, Vec::new(), short).await;
        assert!(matches!(outcome, Err(Failure::Timeout(_))), "{outcome:?}");
        let big = sqlite.run("SELECT zeroblob(1000000)", Vec::new(), run(false)).await;
        assert!(matches!(&big, Err(Failure::Statement(m)) if m.contains("result cap of 4 KiB")), "{big:?}");
        let many = "WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM r) SELECT i FROM r";
        let Ok(Outcome::Rows(rows)) = sqlite.run(many, Vec::new(), run(false)).await else { panic!("rows") };
        assert_eq!((rows.rows.len(), rows.truncated), (10, true));
    }
}
