//! The PostgreSQL backend (tokio-postgres, pooled by deadpool-postgres).
//!
//! Every statement runs in a transaction of its own: `READ ONLY` for read
//! access (the server itself refuses writes), rolled back after a read. It
//! takes two round trips, as a plain query on the native driver does. Rows
//! are read as they stream in, at most `row_limit + 1`: a query that would
//! return 10⁹ rows returns as soon as the limit is known to be passed, and
//! the server is told to stop (a cancel request) on a connection that is
//! then dropped. Past the call's deadline the statement is cancelled the
//! same way. A lost connection is an `unavailable` error; the pool replaces
//! it on the next call.

use std::time::{Duration, Instant};

use deadpool_postgres::{Manager, ManagerConfig, Pool, RecyclingMethod, Runtime, Timeouts};
use futures_util::{FutureExt, TryStreamExt};
use tokio_postgres::error::SqlState;
use tokio_postgres::types::{FromSql, IsNull, ToSql, Type, to_sql_checked};

use super::engine::{Collector, Failure, Outcome, RawColumn, RawSchema, RawTable, Run};
use super::policy::{Effect, Hidden};
use super::settings::DatabaseSettings;
use super::wire::Wire;
use crate::contract::database::quiver::plugin::sql::Value;
use crate::error::{Error, Result};

/// Connections kept open per database.
const POOL: usize = 4;
/// Longest wait to connect.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// A PostgreSQL database.
pub(crate) struct Postgres {
    pool: Pool,
    /// Opens the bounded connections, and those of cancel requests.
    wire: Wire,
    /// Where the server is (for cancel requests).
    config: tokio_postgres::Config,
    /// What the operator hid: the first reading of the schema asks whether
    /// the role can read it anyway.
    hidden: Hidden,
}

impl Postgres {
    pub(crate) fn new(settings: &DatabaseSettings, url: &str) -> Result<Postgres> {
        let section = format!("[databases.{}]", settings.name);
        let mut config: tokio_postgres::Config =
            url.parse().map_err(|e| Error::config(section.clone(), format!("url: {e}")))?;
        if let Some(password) = &settings.password {
            config.password(password.expose());
        }
        // The configured statement timeout holds on every connection; a
        // statement sets its own (`SET LOCAL`) only when the call's deadline
        // is nearer.
        let timeout = settings.statement_timeout;
        config
            .connect_timeout(CONNECT_TIMEOUT)
            .application_name("quiver")
            // The SQL parser reads strings as the standard says (`'\''` is
            // not an escape): the server must read them the same way.
            .options(format!("-c statement_timeout={} -c standard_conforming_strings=on", timeout.as_millis()));
        // `Clean`: before a pooled connection is used again, whatever a
        // statement left in the session is reset (`CLOSE ALL`, `RESET ALL`,
        // `UNLISTEN *`, advisory locks released, temporary tables and
        // sequence state discarded); a connection that breaks mid-call is
        // never returned to the pool.
        let tls = super::tls::connector(&section, settings.ca_file.as_deref())?;
        // Every connection's stream refuses a message over the result cap.
        let wire = Wire::new(tls, settings.max_result_bytes);
        let manager = Manager::from_connect(
            config.clone(),
            wire.clone(),
            ManagerConfig { recycling_method: RecyclingMethod::Clean },
        );
        let pool = Pool::builder(manager)
            .max_size(POOL)
            .runtime(Runtime::Tokio1)
            .build()
            .map_err(|e| Error::config(section, format!("cannot make the connection pool: {e}")))?;
        Ok(Postgres { pool, wire, config, hidden: settings.hidden.clone() })
    }

    async fn client(&self, deadline: Instant) -> std::result::Result<deadpool_postgres::Object, Failure> {
        let wait = deadline.saturating_duration_since(Instant::now()).min(CONNECT_TIMEOUT);
        let timeouts = Timeouts { wait: Some(wait), create: Some(wait), recycle: Some(wait) };
        self.pool
            .timeout_get(&timeouts)
            .await
            .map_err(|e| Failure::Unavailable(format!("cannot connect: {}", chain(&e))))
    }

    /// Run one statement that passed the policy.
    pub(crate) async fn run(&self, sql: &str, params: Vec<Value>, run: Run) -> std::result::Result<Outcome, Failure> {
        let client = self.client(run.deadline).await?;
        let limit = run.deadline.saturating_duration_since(Instant::now());
        let mut settled = true;
        let effect = run.effect;
        let overflows = self.wire.overflows();
        let work = statement(&client, sql, params, run, limit, &mut settled);
        let result = tokio::time::timeout(limit + Duration::from_millis(100), work).await;
        match result {
            Ok(result) if settled && !matches!(result, Err(Failure::Unavailable(_))) => {
                // Reads, failures and writes whose COMMIT did not run end
                // rolled back. The ROLLBACK is sent, not awaited: the
                // connection's next statement queues behind it.
                if result.is_err() || effect == Effect::Read {
                    let _ = client.batch_execute("ROLLBACK").now_or_never();
                }
                result
            }
            Ok(result) => {
                // A message over the cap closed the connection: say so.
                let result = match result {
                    Err(Failure::Unavailable(_)) if self.wire.overflows() > overflows => {
                        Err(Failure::Statement(format!("{}; select less of it (substr, length)", self.wire.refusal())))
                    }
                    other => other,
                };
                // A lost connection, or a result left unread (more rows
                // than the limit): the server may still be sending rows.
                // Stop it and never reuse the connection.
                if !settled {
                    let (cancel, wire, config) = (client.cancel_token(), self.wire.clone(), self.config.clone());
                    tokio::spawn(async move { wire.cancel(&config, cancel).await });
                }
                let _ = deadpool_postgres::Object::take(client);
                result
            }
            Err(_elapsed) => {
                // The server may still be running it: cancel it (in the
                // background: the call's time is up), and drop the
                // connection, whose transaction was cut mid-way.
                let (cancel, wire, config) = (client.cancel_token(), self.wire.clone(), self.config.clone());
                tokio::spawn(async move { wire.cancel(&config, cancel).await });
                let _ = deadpool_postgres::Object::take(client);
                Err(Failure::Timeout(limit))
            }
        }
    }

    /// Tables and views of the current schema, with columns, keys,
    /// comments and the planner's row estimates.
    pub(crate) async fn introspect(&self) -> std::result::Result<RawSchema, Failure> {
        let client = self.client(Instant::now() + CONNECT_TIMEOUT).await?;
        let mut schema = schema(&client).await.map_err(|e| failure(&e, CONNECT_TIMEOUT))?;
        schema.readable_hidden =
            Some(readable_hidden(&client, &self.hidden).await.map_err(|e| failure(&e, CONNECT_TIMEOUT))?);
        Ok(schema)
    }

    /// [`introspect`](Self::introspect) from a thread that is not a runtime's
    /// worker, waiting at most `limit`.
    pub(crate) fn introspect_blocking(&self, limit: Duration) -> std::result::Result<RawSchema, Failure> {
        let (pool, wire, config, hidden) =
            (self.pool.clone(), self.wire.clone(), self.config.clone(), self.hidden.clone());
        let reader = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build();
            let runtime = runtime.map_err(|e| Failure::Unavailable(format!("cannot start a runtime: {e}")))?;
            let this = Postgres { pool, wire, config, hidden };
            let result = runtime.block_on(async { tokio::time::timeout(limit, this.introspect()).await });
            // Connections made on this runtime die with it: do not pool them.
            this.pool.retain(|_, _| false);
            result.unwrap_or(Err(Failure::Timeout(limit)))
        });
        reader.join().unwrap_or_else(|_| Err(Failure::Unavailable("the schema's thread panicked".into())))
    }
}

/// The error's own message and its causes, on one line.
fn chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        // Wrappers often repeat their cause's message: say it once.
        let cause_text = cause.to_string();
        if !text.contains(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    text
}

fn failure(error: &tokio_postgres::Error, limit: Duration) -> Failure {
    if error.is_closed() {
        return Failure::Unavailable(format!("the connection was lost: {}", chain(error)));
    }
    let Some(db) = error.as_db_error() else {
        return Failure::Unavailable(chain(error));
    };
    let message = format!("{} ({})", db.message(), db.code().code());
    match *db.code() {
        SqlState::QUERY_CANCELED => Failure::Timeout(limit),
        SqlState::READ_ONLY_SQL_TRANSACTION => Failure::ReadOnly(message),
        SqlState::ADMIN_SHUTDOWN | SqlState::CRASH_SHUTDOWN | SqlState::CANNOT_CONNECT_NOW => {
            Failure::Unavailable(message)
        }
        _ => Failure::Statement(message),
    }
}

/// Run `sql` in a transaction of its own, in two round trips: `BEGIN`
/// (with the statement's own timeout when the call's deadline is nearer)
/// travels with the statement's `Parse`, then `Bind`/`Execute` streams the
/// rows. A read stops reading at the row or byte cap and leaves `settled`
/// false (the server is still sending); a write drains its `RETURNING` rows
/// so that it commits whole.
async fn statement(
    client: &tokio_postgres::Client,
    sql: &str,
    params: Vec<Value>,
    run: Run,
    limit: Duration,
    settled: &mut bool,
) -> std::result::Result<Outcome, Failure> {
    let db = |error: tokio_postgres::Error| failure(&error, limit);
    let mut begin = String::from(if run.writable { "BEGIN READ WRITE" } else { "BEGIN READ ONLY" });
    if run.call_bound {
        begin.push_str(&format!("; SET LOCAL statement_timeout = {}", limit.as_millis().max(1)));
    }
    let (began, prepared) = futures_util::join!(client.batch_execute(&begin), client.prepare(sql));
    began.map_err(db)?;
    let statement = prepared.map_err(db)?;
    let params: Vec<Param> = params.into_iter().map(Param).collect();
    let params = params.iter().map(|p| p as &dyn ToSql);
    // A statement with no result columns (DML without RETURNING) says how
    // many rows it changed.
    let outcome = if run.rows && !statement.columns().is_empty() {
        let stream = client.query_raw(&statement, params).await.map_err(db)?;
        let mut stream = std::pin::pin!(stream);
        let columns: Vec<String> = statement.columns().iter().map(|c| c.name().to_owned()).collect();
        let mut collector = Collector::new(&run);
        *settled = false;
        loop {
            let row = match stream.try_next().await {
                Ok(Some(row)) => row,
                Ok(None) => break,
                // The server ended the statement.
                Err(error) => {
                    *settled = true;
                    return Err(db(error));
                }
            };
            if !collector.wants_more() {
                if run.effect == Effect::Read {
                    return Ok(Outcome::Rows(collector.finish(columns)));
                }
                continue;
            }
            collector.push(cells(&row)?)?;
        }
        *settled = true;
        Outcome::Rows(collector.finish(columns))
    } else {
        Outcome::Changed(client.execute_raw(&statement, params).await.map_err(db)?)
    };
    if run.effect != Effect::Read {
        client.batch_execute("COMMIT").await.map_err(db)?;
    }
    Ok(outcome)
}

/// One row's values, as the `sql` interface carries them.
fn cells(row: &tokio_postgres::Row) -> std::result::Result<Vec<Value>, Failure> {
    (0..row.len())
        .map(|i| row.try_get::<_, Cell>(i).map(|cell| cell.0))
        .collect::<std::result::Result<_, _>>()
        .map_err(|e| Failure::Statement(format!("cannot read a value: {}", chain(&e))))
}

/// A parameter of the `sql` interface, written as the type the server expects.
#[derive(Debug)]
struct Param(Value);

impl ToSql for Param {
    fn to_sql(
        &self,
        ty: &Type,
        out: &mut bytes::BytesMut,
    ) -> std::result::Result<IsNull, Box<dyn std::error::Error + Sync + Send>> {
        match &self.0 {
            Value::Null => Ok(IsNull::Yes),
            Value::Integer(i) => match *ty {
                Type::INT2 => i16::try_from(*i)?.to_sql(ty, out),
                Type::INT4 => i32::try_from(*i)?.to_sql(ty, out),
                Type::FLOAT4 => (*i as f32).to_sql(ty, out),
                Type::FLOAT8 => (*i as f64).to_sql(ty, out),
                Type::BOOL => (*i != 0).to_sql(ty, out),
                _ => i.to_sql(ty, out),
            },
            Value::Real(f) => match *ty {
                Type::FLOAT4 => (*f as f32).to_sql(ty, out),
                _ => f.to_sql(ty, out),
            },
            Value::Text(s) => s.to_sql(ty, out),
            Value::Blob(b) => b.to_sql(ty, out),
        }
    }

    fn accepts(_ty: &Type) -> bool {
        true
    }

    to_sql_checked!();
}

/// One value read from a row, whatever its column type.
struct Cell(Value);

impl<'a> FromSql<'a> for Cell {
    fn from_sql(ty: &Type, raw: &'a [u8]) -> std::result::Result<Self, Box<dyn std::error::Error + Sync + Send>> {
        let value = match *ty {
            // A function that returns nothing (`void`): no value.
            Type::VOID => Value::Null,
            Type::BOOL => Value::Integer(i64::from(bool::from_sql(ty, raw)?)),
            Type::INT2 => Value::Integer(i16::from_sql(ty, raw)?.into()),
            Type::INT4 => Value::Integer(i32::from_sql(ty, raw)?.into()),
            Type::INT8 => Value::Integer(i64::from_sql(ty, raw)?),
            Type::OID => Value::Integer(u32::from_sql(ty, raw)?.into()),
            Type::FLOAT4 => Value::Real(f32::from_sql(ty, raw)?.into()),
            Type::FLOAT8 => Value::Real(f64::from_sql(ty, raw)?),
            Type::NUMERIC => numeric(raw)?,
            Type::BYTEA => Value::Blob(raw.to_vec()),
            Type::JSON | Type::JSONB => Value::Text(serde_json::Value::from_sql(ty, raw)?.to_string()),
            Type::DATE => Value::Text(jiff::civil::Date::from_sql(ty, raw)?.to_string()),
            Type::TIME => Value::Text(jiff::civil::Time::from_sql(ty, raw)?.to_string()),
            Type::TIMESTAMP => Value::Text(jiff::civil::DateTime::from_sql(ty, raw)?.to_string()),
            Type::TIMESTAMPTZ => Value::Text(jiff::Timestamp::from_sql(ty, raw)?.to_string()),
            Type::UUID if raw.len() == 16 => Value::Text(uuid(raw)),
            _ if <&str as FromSql>::accepts(ty) => Value::Text(<&str>::from_sql(ty, raw)?.to_owned()),
            _ => {
                return Err(format!(
                    "values of type `{ty}` cannot be read by this host; cast the column to text (`column::text`)"
                )
                .into());
            }
        };
        Ok(Cell(value))
    }

    fn from_sql_null(_ty: &Type) -> std::result::Result<Self, Box<dyn std::error::Error + Sync + Send>> {
        Ok(Cell(Value::Null))
    }

    fn accepts(_ty: &Type) -> bool {
        true
    }
}

fn uuid(raw: &[u8]) -> String {
    let hex: String = raw.iter().map(|b| format!("{b:02x}")).collect();
    format!("{}-{}-{}-{}-{}", &hex[..8], &hex[8..12], &hex[12..16], &hex[16..20], &hex[20..])
}

/// A binary `numeric`: a number where `f64` holds it exactly enough to
/// print the same digits, else its decimal text.
fn numeric(raw: &[u8]) -> std::result::Result<Value, Box<dyn std::error::Error + Sync + Send>> {
    let field = |i: usize| -> std::result::Result<i16, Box<dyn std::error::Error + Sync + Send>> {
        raw.get(i * 2..i * 2 + 2).map(|b| i16::from_be_bytes([b[0], b[1]])).ok_or_else(|| "a short numeric".into())
    };
    let (digits, weight, sign, scale) = (field(0)? as usize, field(1)?, field(2)? as u16, field(3)? as usize);
    if sign == 0xC000 {
        return Ok(Value::Text("NaN".into()));
    }
    let groups: Vec<i16> = (0..digits).map(|i| field(4 + i)).collect::<std::result::Result<_, _>>()?;
    // Base-10000 groups: the first has weight `weight`.
    let mut integer = String::new();
    let mut fraction = String::new();
    for (i, group) in groups.iter().enumerate() {
        let power = weight as i64 - i as i64;
        if power >= 0 {
            if integer.is_empty() {
                integer = group.to_string();
            } else {
                integer.push_str(&format!("{group:04}"));
            }
        } else {
            // Leading zero groups of the fraction.
            while (fraction.len() as i64) < (-power - 1) * 4 {
                fraction.push_str("0000");
            }
            fraction.push_str(&format!("{group:04}"));
        }
    }
    // Trailing zero groups of the integer part.
    let last_power = weight as i64 - groups.len() as i64 + 1;
    if !groups.is_empty() && last_power > 0 {
        for _ in 0..last_power {
            integer.push_str("0000");
        }
    }
    if integer.is_empty() {
        integer.push('0');
    }
    fraction.truncate(scale);
    while fraction.len() < scale {
        fraction.push('0');
    }
    let text =
        format!("{}{integer}{}{fraction}", if sign == 0x4000 { "-" } else { "" }, if scale > 0 { "." } else { "" });
    Ok(match text.parse::<f64>() {
        Ok(number) if number.is_finite() && text.len() <= 17 => Value::Real(number),
        _ => Value::Text(text),
    })
}

async fn schema(client: &tokio_postgres::Client) -> std::result::Result<RawSchema, tokio_postgres::Error> {
    let name: Option<String> = client.query_one("SELECT current_schema()::text", &[]).await?.get(0);
    let tables = client
        .query(
            "SELECT c.relname::text, left(coalesce(obj_description(c.oid, 'pg_class'), ''), 4096), \
                    CASE WHEN c.reltuples >= 0 THEN c.reltuples::bigint END, c.relkind IN ('v', 'm') \
             FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace \
             WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'v', 'm', 'p') ORDER BY 1",
            &[],
        )
        .await?;
    let columns = client
        .query(
            "SELECT c.relname::text, a.attname::text, format_type(a.atttypid, a.atttypmod), NOT a.attnotnull, \
                    left(coalesce(col_description(c.oid, a.attnum), ''), 4096), \
                    CASE WHEN a.attidentity IN ('a', 'd') THEN 'generated as identity' \
                         WHEN a.attgenerated = 's' THEN 'generated always as ' || pg_get_expr(d.adbin, d.adrelid) \
                         ELSE pg_get_expr(d.adbin, d.adrelid) END \
             FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid JOIN pg_namespace n ON n.oid = c.relnamespace \
             LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum \
             WHERE n.nspname = current_schema() AND a.attnum > 0 AND NOT a.attisdropped \
             ORDER BY c.relname, a.attnum",
            &[],
        )
        .await?;
    let keys = client
        .query(
            "SELECT c.relname::text, con.contype::text, a.attname::text, fc.relname::text, fa.attname::text \
             FROM pg_constraint con \
             JOIN pg_class c ON c.oid = con.conrelid JOIN pg_namespace n ON n.oid = c.relnamespace \
             CROSS JOIN LATERAL unnest(con.conkey) WITH ORDINALITY AS k(attnum, position) \
             JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum = k.attnum \
             LEFT JOIN pg_class fc ON fc.oid = con.confrelid \
             LEFT JOIN pg_attribute fa ON fa.attrelid = con.confrelid AND fa.attnum = con.confkey[k.position] \
             WHERE n.nspname = current_schema() AND con.contype IN ('p', 'f') \
             ORDER BY c.relname, con.contype, k.position",
            &[],
        )
        .await?;
    // Whole-table unique indexes (those of unique constraints included),
    // not the primary key's, not partial, not on expressions.
    let unique = client
        .query(
            "SELECT c.relname::text, ic.relname::text, a.attname::text \
             FROM pg_index i JOIN pg_class c ON c.oid = i.indrelid JOIN pg_class ic ON ic.oid = i.indexrelid \
             JOIN pg_namespace n ON n.oid = c.relnamespace \
             CROSS JOIN LATERAL unnest(i.indkey) WITH ORDINALITY AS k(attnum, position) \
             JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum = k.attnum \
             WHERE n.nspname = current_schema() AND i.indisunique AND NOT i.indisprimary \
               AND i.indpred IS NULL AND i.indexprs IS NULL \
             ORDER BY 1, 2, k.position",
            &[],
        )
        .await?;
    let mut out = Vec::with_capacity(tables.len());
    for table in tables {
        let name: String = table.get(0);
        let primary_key = keys
            .iter()
            .filter(|k| k.get::<_, String>(0) == name && k.get::<_, String>(1) == "p")
            .map(|k| k.get(2))
            .collect();
        let columns = columns
            .iter()
            .filter(|c| c.get::<_, String>(0) == name)
            .map(|c| {
                let column: String = c.get(1);
                let references = keys
                    .iter()
                    .find(|k| {
                        k.get::<_, String>(0) == name && k.get::<_, String>(1) == "f" && k.get::<_, String>(2) == column
                    })
                    .map(|k| format!("{}.{}", k.get::<_, String>(3), k.get::<_, String>(4)));
                let default = c.get(5);
                RawColumn {
                    name: column,
                    data_type: c.get(2),
                    nullable: c.get(3),
                    comment: c.get(4),
                    references,
                    default,
                }
            })
            .collect();
        let mut sets: Vec<(String, Vec<String>)> = Vec::new();
        for row in unique.iter().filter(|u| u.get::<_, String>(0) == name) {
            let index: String = row.get(1);
            match sets.last_mut() {
                Some((last, columns)) if *last == index => columns.push(row.get(2)),
                _ => sets.push((index, vec![row.get(2)])),
            }
        }
        let mut unique: Vec<Vec<String>> = sets.into_iter().map(|(_, columns)| columns).collect();
        unique.sort();
        unique.dedup();
        let row_estimate: Option<i64> = table.get(2);
        out.push(RawTable {
            name,
            comment: table.get(1),
            columns,
            primary_key,
            row_estimate: row_estimate.and_then(|n| u64::try_from(n).ok()),
            view: table.get(3),
            unique,
        });
    }
    Ok(RawSchema { name: name.unwrap_or_default(), tables: out, readable_hidden: None })
}

/// What of `hidden` the connection's role may read anyway: hidden tables
/// it has `SELECT` on, hidden columns it may select (by a table grant or a
/// column grant), in the current schema. Names compare in lower case, as
/// the policy's do.
async fn readable_hidden(
    client: &tokio_postgres::Client,
    hidden: &Hidden,
) -> std::result::Result<Vec<String>, tokio_postgres::Error> {
    let (tables, columns) = hidden.entries();
    let (mut names, mut fields): (Vec<String>, Vec<Option<String>>) = (Vec::new(), Vec::new());
    for table in tables {
        names.push(table.to_owned());
        fields.push(None);
    }
    for (table, column) in columns {
        names.push(table.to_owned());
        fields.push(Some(column.to_owned()));
    }
    if names.is_empty() {
        return Ok(Vec::new());
    }
    let rows = client
        .query(
            "SELECT h.t || coalesce('.' || h.c, '') \
             FROM unnest($1::text[], $2::text[]) AS h(t, c) \
             JOIN pg_class r ON lower(r.relname) = h.t AND r.relnamespace = current_schema()::regnamespace \
             LEFT JOIN pg_attribute a ON a.attrelid = r.oid AND lower(a.attname) = h.c AND a.attnum > 0 \
                                        AND NOT a.attisdropped \
             WHERE (h.c IS NULL AND has_table_privilege(r.oid, 'SELECT')) \
                OR (h.c IS NOT NULL AND a.attnum IS NOT NULL AND has_column_privilege(r.oid, a.attnum, 'SELECT')) \
             ORDER BY 1",
            &[&names, &fields],
        )
        .await?;
    Ok(rows.iter().map(|row| row.get(0)).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn encode(digits: &[i16], weight: i16, sign: u16, scale: u16) -> Vec<u8> {
        let mut raw = Vec::new();
        for field in [digits.len() as i16, weight, sign as i16, scale as i16] {
            raw.extend_from_slice(&field.to_be_bytes());
        }
        for d in digits {
            raw.extend_from_slice(&d.to_be_bytes());
        }
        raw
    }

    #[test]
    fn numerics_decode_to_their_digits() {
        assert_eq!(numeric(&encode(&[2328, 6000], 0, 0, 2)).unwrap(), Value::Real(2328.60));
        assert_eq!(numeric(&encode(&[9900], -1, 0, 2)).unwrap(), Value::Real(0.99));
        assert_eq!(numeric(&encode(&[100], -2, 0, 8)).unwrap(), Value::Real(0.000001));
        assert_eq!(numeric(&encode(&[1], 1, 0x4000, 0)).unwrap(), Value::Real(-10000.0));
        assert_eq!(numeric(&encode(&[], 0, 0, 0)).unwrap(), Value::Real(0.0));
        let long = numeric(&encode(&[1234, 5678, 9012, 3456, 7890], 4, 0, 0)).unwrap();
        assert_eq!(long, Value::Text("12345678901234567890".into()));
    }
}
