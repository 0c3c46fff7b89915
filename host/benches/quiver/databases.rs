//! Databases: what the host adds to a statement (adapter, policy, limits)
//! over the same statement on the native driver, statement validation, and
//! what Tier 1 costs for the demo database against its full schema.

use std::fmt::Write as _;
use std::time::{Duration, Instant};

use quiver::contract::Access;
use quiver::disclosure::tokens::Cost;
use quiver::sandbox::sql::policy::{self, Dialect, Functions, Hidden, Policy, Visible};
use quiver_tests::TestHost;
use quiver_tests::databases::{Engine, TestDatabase};
use quiver_tests::postgres::PASSWORD;

use crate::{Options, Stats, us};

/// Statements timed on both engines: a point lookup, a 25-row aggregate, a
/// five-table join.
const STATEMENTS: &[(&str, &str)] = &[
    ("point lookup (1 row)", "SELECT name, unit_price FROM track WHERE track_id = 42"),
    ("aggregate (25 rows)", "SELECT genre_id, count(*) FROM track GROUP BY genre_id ORDER BY genre_id"),
    (
        "five-table join (3 rows)",
        "SELECT ar.name, sum(il.unit_price * il.quantity) AS revenue FROM invoice_line il \
         JOIN track t ON t.track_id = il.track_id JOIN album al ON al.album_id = t.album_id \
         JOIN artist ar ON ar.artist_id = al.artist_id GROUP BY ar.name ORDER BY revenue DESC LIMIT 3",
    ),
];

pub(crate) fn section(options: &Options, runtime: &tokio::runtime::Runtime, report: &mut String) {
    writeln!(report, "## Databases\n").unwrap();
    round_trips(options, runtime, report);
    validation(options, report);
    tier_one(runtime, report);
}

/// `query` through the bundled adapter (`Host::call`: input check, a fresh
/// instance, the `sql` import, the policy, the engine, the JSON result)
/// against the native driver running the same statement on a held
/// connection and reading every value.
fn round_trips(options: &Options, runtime: &tokio::runtime::Runtime, report: &mut String) {
    writeln!(
        report,
        "`query` round trip through the generic adapter (`Host::call`: input schema check, a fresh \
         instance, the `sql` import, policy check, the engine's read-only mode and limits, rows to \
         JSON) against the same statement on the native driver (rusqlite on a held read-only \
         connection, `prepare` + read every value; tokio-postgres on a held connection, \
         `query`). Chinook; PostgreSQL {} on loopback, started by the test harness. Warm; p50 / p99 \
         over {} calls each. Goal: at most 200 µs added.\n",
        postgres_version(),
        options.reps(2000)
    )
    .unwrap();
    writeln!(
        report,
        "| engine | statement | native p50 / p99 (µs) | through Quiver p50 / p99 (µs) | added at p50 (µs) |"
    )
    .unwrap();
    writeln!(report, "|---|---|---:|---:|---:|").unwrap();
    let mut parts = String::new();
    for engine in [Engine::Sqlite, Engine::Postgres] {
        let db = TestDatabase::new(engine);
        let t = TestHost::builder().config(&db.section("music", "row_limit = 10000")).build();
        let warm = |action: &'static str, input: String| {
            let host = t.host.clone();
            runtime.block_on(async move {
                host.call("music", action, &input).await.unwrap();
                let mut samples = Vec::new();
                for _ in 0..options.reps(2000) {
                    let start = Instant::now();
                    std::hint::black_box(host.call("music", action, &input).await.unwrap());
                    samples.push(start.elapsed());
                }
                Stats::new(samples)
            })
        };
        let listed = warm("list_tables", "{}".into());
        let one = warm("query", r#"{"sql": "SELECT 1"}"#.into());
        let native_one = match engine {
            Engine::Sqlite => native_sqlite(&db, "SELECT 1", options.reps(2000)),
            Engine::Postgres => runtime.block_on(native_postgres(&db, "SELECT 1", options.reps(2000))),
        };
        writeln!(
            parts,
            "| {engine:?} | {} | {} | {} |",
            us(listed.median()),
            us(one.median()),
            us(native_one.median())
        )
        .unwrap();
        for (label, sql) in STATEMENTS {
            let input = serde_json::json!({ "sql": sql, "max_rows": 10000 }).to_string();
            let native = match engine {
                Engine::Sqlite => native_sqlite(&db, sql, options.reps(2000)),
                Engine::Postgres => runtime.block_on(native_postgres(&db, sql, options.reps(2000))),
            };
            let quiver = runtime.block_on(async {
                t.host.call("music", "query", &input).await.unwrap();
                let mut samples = Vec::new();
                for _ in 0..options.reps(2000) {
                    let start = Instant::now();
                    std::hint::black_box(t.host.call("music", "query", &input).await.unwrap());
                    samples.push(start.elapsed());
                }
                Stats::new(samples)
            });
            let added = quiver.median().as_secs_f64() - native.median().as_secs_f64();
            writeln!(
                report,
                "| {} | {label} | {} / {} | {} / {} | {:.1} |",
                match engine {
                    Engine::Sqlite => "SQLite",
                    Engine::Postgres => "PostgreSQL",
                },
                us(native.median()),
                us(native.pct(0.99)),
                us(quiver.median()),
                us(quiver.pct(0.99)),
                added * 1e6
            )
            .unwrap();
            eprintln!("measured {engine:?} {label}");
        }
    }
    writeln!(
        report,
        "\nWhere the time goes (p50, µs): an adapter call that runs no statement (`list_tables`, the schema \
         from the host's cache), the smallest statement through Quiver, and on the native driver:\n"
    )
    .unwrap();
    writeln!(report, "| engine | `list_tables` | `SELECT 1` through Quiver | `SELECT 1` native |").unwrap();
    writeln!(report, "|---|---:|---:|---:|").unwrap();
    writeln!(report, "{parts}").unwrap();
}

fn native_sqlite(db: &TestDatabase, sql: &str, reps: usize) -> Stats {
    use rusqlite::types::Value;
    let flags = rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let connection = rusqlite::Connection::open_with_flags(db.file(), flags).unwrap();
    let run = || {
        let mut statement = connection.prepare(sql).unwrap();
        let width = statement.column_count();
        let rows: Vec<Vec<Value>> = statement
            .query_map([], |row| (0..width).map(|i| row.get::<_, Value>(i)).collect())
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        std::hint::black_box(rows)
    };
    run();
    Stats::new((0..reps).map(|_| crate::time(run).1).collect())
}

async fn native_postgres(db: &TestDatabase, sql: &str, reps: usize) -> Stats {
    let mut config: tokio_postgres::Config = db.server().url("postgres", "chinook").parse().unwrap();
    config.password(PASSWORD);
    let (client, connection) = config.connect(tokio_postgres::NoTls).await.unwrap();
    let driver = tokio::spawn(connection);
    let mut samples = Vec::with_capacity(reps);
    client.query(sql, &[]).await.unwrap();
    for _ in 0..reps {
        let start = Instant::now();
        let rows = client.query(sql, &[]).await.unwrap();
        // Read every value, as the host does (numeric as text: a float
        // would lose digits).
        for row in &rows {
            for i in 0..row.len() {
                std::hint::black_box(row.try_get::<_, Option<String>>(i).ok());
            }
        }
        samples.push(start.elapsed());
    }
    drop(client);
    let _ = driver.await;
    Stats::new(samples)
}

fn postgres_version() -> String {
    std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.file_name().to_str().map(str::to_owned))
        .max()
        .unwrap_or_else(|| "?".into())
}

/// `policy::check`: parse in the dialect and walk the statement.
fn validation(options: &Options, report: &mut String) {
    writeln!(
        report,
        "Statement validation (`policy::check`: `sqlparser` parse in the connection's dialect, then the \
         visitor's checks of statement kind, functions, catalogs, hidden tables and columns; median of \
         {} runs):\n",
        options.reps(5000)
    )
    .unwrap();
    writeln!(report, "| statement | bytes | SQLite (µs) | PostgreSQL (µs) |").unwrap();
    writeln!(report, "|---|---:|---:|---:|").unwrap();
    let hidden = Hidden::parse(&["secrets".into(), "employee.birth_date".into(), "customer.email".into()]).unwrap();
    // The visible schema: Chinook's tables and columns, as the host reads them.
    let db = TestDatabase::sqlite();
    let connection = rusqlite::Connection::open(db.file()).unwrap();
    let mut tables = connection.prepare("SELECT name FROM sqlite_schema WHERE type = 'table'").unwrap();
    let tables: Vec<(String, Vec<String>)> = tables
        .query_map([], |row| row.get::<_, String>(0))
        .unwrap()
        .map(|name| {
            let name = name.unwrap();
            let mut columns = connection.prepare("SELECT name FROM pragma_table_info(?1)").unwrap();
            let columns = columns.query_map([&name], |row| row.get(0)).unwrap().map(Result::unwrap).collect();
            (name, columns)
        })
        .collect();
    let refused = "SELECT 1; DELETE FROM genre";
    for (label, sql) in STATEMENTS.iter().copied().chain([("refused: two statements", refused)]) {
        let time = |dialect: Dialect| {
            let schema = if dialect == Dialect::Sqlite { "main" } else { "public" };
            let named = tables.iter().map(|(t, cs)| (t.as_str(), cs.iter().map(String::as_str).collect()));
            let visible = Visible::new(schema, named, &hidden);
            let functions = Functions::new(dialect, Access::Read, &[]);
            let policy =
                Policy { dialect, access: Access::Read, hidden: &hidden, visible: &visible, functions: &functions };
            let runs = (0..options.reps(5000)).map(|_| {
                let start = Instant::now();
                let _ = std::hint::black_box(policy::check(&policy, sql));
                start.elapsed()
            });
            Stats::new(runs.collect::<Vec<Duration>>()).median()
        };
        writeln!(
            report,
            "| {label} | {} | {} | {} |",
            sql.len(),
            us(time(Dialect::Sqlite)),
            us(time(Dialect::Postgres))
        )
        .unwrap();
    }
    writeln!(report).unwrap();
}

/// What the demo database costs in Tier 1, against its full schema (every
/// table's `describe_table`, what an eager prompt would carry).
fn tier_one(runtime: &tokio::runtime::Runtime, report: &mut String) {
    let t = TestHost::builder().demo().build();
    let session = t.host.session(None).unwrap();
    let prompt = session.system_prompt();
    let line = prompt.lines().find(|l| l.starts_with("- chinook:")).expect("the demo in Tier 1").to_owned();
    let compiled = t.host.load_stats().compiled();
    let schema = runtime.block_on(async {
        let tables = t.host.call("chinook", "list_tables", "{}").await.unwrap();
        let mut schemas = Vec::new();
        for table in tables.as_array().unwrap() {
            let input = serde_json::json!({ "table": table["name"] }).to_string();
            schemas.push(t.host.call("chinook", "describe_table", &input).await.unwrap());
        }
        let columns: usize = schemas.iter().map(|s| s["columns"].as_array().map_or(0, Vec::len)).sum();
        (serde_json::to_string(&schemas).unwrap(), schemas.len(), columns)
    });
    let (schema, tables, columns) = schema;
    let (stub, full) = (Cost::of(&line), Cost::of(&schema));
    writeln!(
        report,
        "Tier 1 of the demo database (`chinook`, {tables} tables, {columns} columns): its stub line, read \
         by the host with {compiled} components compiled, against its full schema as `discover` returns \
         it (every table's columns, types, keys, references, descriptions):\n"
    )
    .unwrap();
    writeln!(report, "| text | o200k tokens | cl100k tokens |").unwrap();
    writeln!(report, "|---|---:|---:|").unwrap();
    writeln!(report, "| Tier-1 line | {} | {} |", stub.o200k, stub.cl100k).unwrap();
    writeln!(report, "| full schema (JSON) | {} | {} |", full.o200k, full.cl100k).unwrap();
    writeln!(report, "| saved | {:.1}% | |\n", 100.0 * (1.0 - stub.o200k as f64 / full.o200k as f64)).unwrap();
}
