//! Databases for real: the bundled generic adapter over Chinook on SQLite
//! and on a throwaway PostgreSQL server, through sessions as a model uses
//! them. Every case runs on both engines. Refusals are checked for their
//! typed error and for leaving the database exactly as it was.

use serde_json::{Value, json};

use quiver::{Error, GuestErrorKind, Session};
use quiver_tests::TestHost;
use quiver_tests::databases::{Engine, TestDatabase};
use quiver_tests::postgres::PASSWORD;

/// Run `case` on SQLite and on PostgreSQL, as two tests.
macro_rules! on_both_engines {
    ($($case:ident),* $(,)?) => {$(
        mod $case {
            use super::*;

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn sqlite() {
                super::$case(Engine::Sqlite).await
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn postgres() {
                super::$case(Engine::Postgres).await
            }
        }
    )*};
}

mod escapes;

on_both_engines!(
    walks_from_tier_one_to_query,
    limits_cut_results_and_statements_short,
    write_access_allows_dml_audited_but_never_ddl,
    unreachable_databases_are_typed_and_never_leak_secrets,
);

/// What the operator writes of the tables (Tier 2 shows it).
const NOTES: &str = r#"description = "Chinook, a music store: artists, albums, tracks, customers, invoices."
statement_timeout_ms = 1500
row_limit = 50
max_result_kb = 64
tables = { track = { description = "Songs for sale.", columns = { unit_price = "Price in US dollars." } } }"#;

fn host(db: &TestDatabase, extra: &str, config: &str) -> TestHost {
    TestHost::builder().config(&db.section("music", &format!("{NOTES}\n{extra}"))).config(config).build()
}

async fn ok(session: &mut Session, name: &str, args: Value) -> Value {
    let outcome = session.call(name, args.clone()).await;
    assert!(!outcome.is_error, "{name}({args}) failed: {}", outcome.text);
    outcome.value().cloned().unwrap()
}

async fn err(session: &mut Session, name: &str, args: Value) -> Error {
    let outcome = session.call(name, args.clone()).await;
    assert!(outcome.is_error, "{name}({args}) should fail, got {}", outcome.text);
    outcome.error.unwrap()
}

async fn query(session: &mut Session, sql: &str) -> Value {
    ok(session, "database", json!({ "subcommand": "query", "database": "music", "sql": sql })).await
}

async fn refused(session: &mut Session, sql: &str) -> (GuestErrorKind, String) {
    match err(session, "database", json!({ "subcommand": "query", "database": "music", "sql": sql })).await {
        Error::Guest { kind, message, .. } => (kind, message),
        other => panic!("`{sql}`: not the adapter's typed error: {other}"),
    }
}

fn number(value: &Value) -> f64 {
    value.as_f64().or_else(|| value.as_str().and_then(|s| s.parse().ok())).unwrap_or_else(|| panic!("{value}"))
}

/// Tier 1 from the host's own reading of the schema (nothing compiled),
/// Tier 2 with the operator's notes, keys and sizes, then real answers, in
/// progressive and legacy modes.
async fn walks_from_tier_one_to_query(engine: Engine) {
    let db = TestDatabase::new(engine);
    let t = host(&db, "", "[agents.flat]\ndatabase_tool_mode = \"legacy\"");
    let mut s = t.host.session(None).unwrap();
    let prompt = s.system_prompt();
    assert!(
        prompt.contains(
            "- music: Chinook, a music store: artists, albums, tracks, customers, invoices. Tables (11): album, \
             artist, customer, employee, genre, invoice, invoice_line, media_type, playlist, playlist_track, …"
        ),
        "{prompt}"
    );
    assert!(!prompt.contains("secrets") && !prompt.to_lowercase().contains("trésor"), "{prompt}");
    assert_eq!(t.host.load_stats().compiled(), 0, "Tier 1 compiles nothing");

    let tables = ok(&mut s, "database", json!({ "subcommand": "list_tables", "database": "music" })).await;
    let names: Vec<&str> = tables.as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(names.len(), 11, "{names:?}");
    let track = tables.as_array().unwrap().iter().find(|t| t["name"] == "track").unwrap();
    assert_eq!((track["description"].as_str(), track["row_estimate"].as_u64()), (Some("Songs for sale."), Some(3503)));

    let schema =
        ok(&mut s, "database", json!({ "subcommand": "discover", "database": "music", "table": "track" })).await;
    assert_eq!(schema["primary_key"], json!(["track_id"]));
    let column = |name: &str| schema["columns"].as_array().unwrap().iter().find(|c| c["name"] == name).cloned();
    let album = column("album_id").unwrap();
    assert_eq!(album["references"], "album.album_id");
    assert_eq!(column("name").unwrap()["nullable"], false);
    assert_eq!(column("composer").unwrap()["nullable"], true);
    assert_eq!(column("unit_price").unwrap()["description"], "Price in US dollars.");
    assert!(!album["data_type"].as_str().unwrap().is_empty());

    // Hidden columns are not listed; hidden tables do not exist.
    let employee =
        ok(&mut s, "database", json!({ "subcommand": "discover", "database": "music", "table": "employee" })).await;
    let columns: Vec<&str> =
        employee["columns"].as_array().unwrap().iter().map(|c| c["name"].as_str().unwrap()).collect();
    assert!(columns.contains(&"hire_date") && !columns.contains(&"birth_date"), "{columns:?}");
    let missing = err(&mut s, "database", json!({ "subcommand": "discover", "database": "music", "table": "secrets" }))
        .await
        .to_string();
    assert!(missing.contains("no table `secrets`") && missing.contains("playlist_track"), "{missing}");

    let top = query(
        &mut s,
        "SELECT ar.name, sum(il.unit_price * il.quantity) AS revenue FROM invoice_line il \
         JOIN track t ON t.track_id = il.track_id JOIN album al ON al.album_id = t.album_id \
         JOIN artist ar ON ar.artist_id = al.artist_id GROUP BY ar.name ORDER BY revenue DESC LIMIT 3",
    )
    .await;
    assert_eq!(top["columns"], json!(["name", "revenue"]));
    assert_eq!(top["rows"][0][0], "Iron Maiden");
    assert!((number(&top["rows"][0][1]) - 138.6).abs() < 1e-6, "{top}");
    assert_eq!(top["truncated"], false);
    let total = query(&mut s, "SELECT sum(total) FROM invoice").await;
    assert!((number(&total["rows"][0][0]) - number(&json!(db.value("SELECT sum(total) FROM invoice")))).abs() < 1e-6);
    // Parameters of every type come back as the engine stores them.
    let values = query(&mut s, "SELECT 1 AS i, 2.5 AS r, 'x' AS t, NULL AS n").await;
    assert_eq!(values["rows"][0][0], 1);
    assert_eq!(values["rows"][0][2], "x");
    assert!(values["rows"][0][3].is_null());

    // Legacy mode: the same adapter as three flat tools.
    let mut flat = t.host.session(Some("flat")).unwrap();
    let names = flat.tools_for_turn("which artists sell best?").await.names().join(",");
    for tool in ["music__list_tables", "music__describe_table", "music__query"] {
        assert!(names.contains(tool), "{tool} missing: {names}");
    }
    assert_eq!(ok(&mut flat, "music__list_tables", json!({})).await.as_array().unwrap().len(), 11);
    let invoice = ok(&mut flat, "music__describe_table", json!({ "table": "invoice" })).await;
    assert_eq!(invoice["columns"][0]["name"], "invoice_id");
    let count = ok(&mut flat, "music__query", json!({ "sql": "SELECT count(*) FROM track", "max_rows": 5 })).await;
    assert_eq!(count["rows"][0][0], 3503);
}

/// Host limits: a 10⁹-row cross join stops at `row_limit`, wide rows at
/// the byte cap, a runaway statement at its timeout; the connection is
/// fine afterwards.
async fn limits_cut_results_and_statements_short(engine: Engine) {
    let db = TestDatabase::new(engine);
    let t = host(&db, "", "");
    let mut s = t.host.session(None).unwrap();
    let billion = "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 1000) \
                   SELECT a.i, b.i, c.i FROM n a, n b, n c";
    let rows = query(&mut s, billion).await;
    assert_eq!((rows["rows"].as_array().unwrap().len(), &rows["truncated"]), (50, &json!(true)));
    let tracks = query(&mut s, "SELECT a.name, b.name, c.name FROM track a, track b, track c").await;
    assert_eq!((tracks["rows"].as_array().unwrap().len(), &tracks["truncated"]), (50, &json!(true)));
    if engine == Engine::Postgres {
        // Past the limit the host stops reading; the server is told to
        // stop too (uncancelled, the cross join would run to its timeout).
        let running = "SELECT count(*) FROM pg_stat_activity WHERE query LIKE '%FROM n a, n b, n c%' \
                       AND state = 'active' AND pid <> pg_backend_pid()";
        let stopped = std::time::Instant::now();
        while db.value(running) != "0" {
            assert!(stopped.elapsed().as_millis() < 1000, "the truncated statement still runs on the server");
        }
    }

    // Rows of about 2 KB: the 64 KiB cap stops the result before 50 rows.
    let (wide, huge) = match engine {
        Engine::Sqlite => ("SELECT quote(zeroblob(1000)) || a.name FROM track a", "SELECT zeroblob(100000000)"),
        Engine::Postgres => ("SELECT repeat('x', 2000) || a.name FROM track a", "SELECT repeat('x', 100000)"),
    };
    let wide = query(&mut s, wide).await;
    let kept = wide["rows"].as_array().unwrap().len();
    assert!((20..50).contains(&kept) && wide["truncated"] == true, "{kept} rows");
    let (kind, message) = refused(&mut s, huge).await;
    assert_eq!(kind, GuestErrorKind::InvalidInput, "{message}");
    assert!(message.contains("result cap of 64 KiB"), "{message}");

    let forever = match engine {
        Engine::Sqlite => "WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM r) SELECT count(*) FROM r",
        Engine::Postgres => "SELECT count(*) FROM generate_series(1, 100000000000)",
    };
    let started = std::time::Instant::now();
    let (kind, message) = refused(&mut s, forever).await;
    assert_eq!(kind, GuestErrorKind::Unavailable, "{message}");
    assert!(message.contains("limit of 1500 ms") && message.contains("cancelled"), "{message}");
    assert!(started.elapsed() < std::time::Duration::from_secs(30), "the statement was not stopped");
    if engine == Engine::Postgres {
        // The cancel request is asynchronous: the server ends the
        // statement within moments (uncancelled, it would run for hours).
        let running = "SELECT count(*) FROM pg_stat_activity WHERE query LIKE '%generate_series(1, 100000000000)%' \
                       AND state = 'active' AND pid <> pg_backend_pid()";
        let cancelled = std::time::Instant::now();
        while db.value(running) != "0" {
            assert!(cancelled.elapsed().as_secs() < 10, "the cancelled statement still runs on the server");
        }
    }
    assert_eq!(query(&mut s, "SELECT count(*) FROM artist").await["rows"][0][0], 275);

    // Deep nesting: as deep as the parser allows runs (on SQLite, in the
    // calling thread's stack); deeper is a typed refusal, never a crash.
    let nested = |depth: usize| format!("SELECT {}1{}", "(SELECT ".repeat(depth), ")".repeat(depth));
    assert_eq!(query(&mut s, &nested(20)).await["rows"][0][0], 1);
    let deep = format!("SELECT {}1{}", "(1 + ".repeat(20), ")".repeat(20));
    assert_eq!(query(&mut s, &deep).await["rows"][0][0], 21);
    let (kind, message) = refused(&mut s, &nested(500)).await;
    assert_eq!(kind, GuestErrorKind::InvalidInput, "{message}");
    // Trees the parser builds without recursing, as deep as the size limit
    // allows: they are checked and run on a stack of their own (on the
    // guest call's stack they overflowed it and killed the host), and past
    // the bounds they are typed refusals.
    let chain = format!("SELECT 1{}", " + 1".repeat((quiver::sandbox::sql::policy::MAX_STATEMENT_BYTES - 8) / 4));
    let (kind, message) = refused(&mut s, &chain).await;
    assert_eq!(kind, GuestErrorKind::InvalidInput, "{message}");
    let combined = |n: usize| format!("SELECT 1{}", " UNION ALL SELECT 1".repeat(n - 1));
    assert_eq!(query(&mut s, &combined(64)).await["rows"].as_array().unwrap().len(), 50);
    let (kind, message) = refused(&mut s, &combined(3000)).await;
    assert_eq!(kind, GuestErrorKind::InvalidInput, "{message}");
    assert!(message.contains("combines 3000 queries"), "{message}");
}

/// `write` access: DML runs, is counted and audited; DDL is still refused;
/// an agent granted only `read` here cannot write.
async fn write_access_allows_dml_audited_but_never_ddl(engine: Engine) {
    let db = TestDatabase::new(engine);
    let audit = tempfile::tempdir().unwrap();
    let log = audit.path().join("audit.jsonl");
    let config = format!("[audit]\npath = \"{}\"\n[agents.analyst]\naccess = {{ music = \"read\" }}", log.display());
    let t = host(&db, "access = \"write\"", &config);
    let mut s = t.host.session(None).unwrap();

    let inserted = query(&mut s, "INSERT INTO genre (genre_id, name) VALUES (26, 'Sea Shanty')").await;
    assert_eq!(inserted, json!({ "columns": ["changed"], "rows": [[1]], "truncated": false }));
    assert_eq!(db.value("SELECT name FROM genre WHERE genre_id = 26"), "Sea Shanty");
    let updated = query(&mut s, "UPDATE genre SET name = 'Shanty' WHERE genre_id >= 25").await;
    assert_eq!(updated["rows"][0][0], 2);
    assert_eq!(db.value("SELECT count(*) FROM genre WHERE name = 'Shanty'"), "2");
    assert_eq!(query(&mut s, "DELETE FROM genre WHERE genre_id = 26").await["rows"][0][0], 1);

    let before = db.checksum();
    for ddl in ["CREATE TABLE t (x INTEGER)", "DROP TABLE genre", "ALTER TABLE genre ADD COLUMN x INTEGER"] {
        let (kind, message) = refused(&mut s, ddl).await;
        assert_eq!(kind, GuestErrorKind::Denied, "{message}");
        assert!(message.contains("grants `write`") && message.contains("needs `admin`"), "{message}");
    }
    // Hidden tables stay out of reach of writes too.
    for (sql, rule) in [
        ("UPDATE secrets SET api_key = 'x'", "no table `secrets`"),
        ("INSERT INTO customer (customer_id, first_name, last_name, email) VALUES (99, 'a', 'b', 'c')", "`email`"),
        ("UPDATE customer SET email = 'x' WHERE customer_id = 1", "`email`"),
        ("DELETE FROM employee WHERE employee_id = 0 RETURNING *", "`*` would include"),
    ] {
        let (kind, message) = refused(&mut s, sql).await;
        // As if they did not exist: a name to fix, not an access to ask for.
        assert_eq!((kind, message.contains(rule)), (GuestErrorKind::InvalidInput, true), "{sql}: {message}");
    }
    let mut analyst = t.host.session(Some("analyst")).unwrap();
    let (kind, message) = refused(&mut analyst, "DELETE FROM genre WHERE genre_id = 25").await;
    assert_eq!(kind, GuestErrorKind::Denied, "{message}");
    assert!(message.contains("grants `read`"), "{message}");
    assert_eq!(query(&mut analyst, "SELECT count(*) FROM genre").await["rows"][0][0], 25);
    assert_eq!(db.checksum(), before, "a refused statement changed the database");

    if engine == Engine::Postgres {
        // A statement that quotes the database's password is audited with
        // the password redacted (the host knows its secrets' values).
        let echoed = query(&mut s, &format!("SELECT '{PASSWORD}' AS p")).await;
        assert_eq!(echoed["rows"][0][0], PASSWORD);
    }

    // Every call is on the audit log, with its statement and outcome.
    let text = std::fs::read_to_string(&log).unwrap();
    let lines: Vec<Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let line = |needle: &str| {
        lines
            .iter()
            .find(|l| l["params"]["sql"].as_str().is_some_and(|sql| sql.contains(needle)))
            .unwrap_or_else(|| panic!("no audit line for `{needle}` in {text}"))
    };
    let insert = line("INSERT INTO genre");
    assert_eq!(
        (&insert["resource"], &insert["action"], &insert["outcome"]),
        (&json!("music"), &json!("query"), &json!("ok"))
    );
    assert_eq!(line("DROP TABLE genre")["outcome"], "denied");
    let delete = line("DELETE FROM genre WHERE genre_id = 25");
    assert_eq!((&delete["agent"], &delete["outcome"]), (&json!("analyst"), &json!("denied")));
    assert!(!text.contains(PASSWORD), "{text}");
    if engine == Engine::Postgres {
        assert_eq!(line("AS p")["params"]["sql"], "SELECT '[redacted]' AS p");
    }
    let recent = t.host.audit(100, Some("music"));
    assert_eq!(recent.len(), lines.len());
}

/// A database that cannot be reached is a typed `unavailable`, Tier 1
/// says so, and no password reaches a message; a lost PostgreSQL
/// connection (the server stopped mid-statement) is `unavailable` and the
/// next call reconnects.
async fn unreachable_databases_are_typed_and_never_leak_secrets(engine: Engine) {
    let db = TestDatabase::new(engine);
    match engine {
        Engine::Sqlite => {
            let gone = db.dir.path().join("gone.db");
            // A SQLite file that is not there fails alone when the host
            // starts, its whole path in the reason, and is never created.
            let t =
                TestHost::builder().config(&format!("[databases.music]\nurl = \"sqlite:{}\"", gone.display())).build();
            let mut s = t.host.session(None).unwrap();
            let (tier1, path) = (s.system_prompt(), gone.display().to_string());
            assert!(tier1.contains("- music: failing, not available now") && tier1.contains(&path), "{tier1}");
            let error =
                err(&mut s, "database", json!({"subcommand": "query", "database": "music", "sql": "SELECT 1"})).await;
            assert_eq!(error.kind(), quiver::ErrorKind::Rejected, "{error}");
            assert!(!gone.exists(), "a read-only database must never be created");
        }
        Engine::Postgres => {
            let wrong = db.dir.path().join("wrong-password");
            std::fs::write(&wrong, "not-the-password-4711").unwrap();
            let url = db.server().url("postgres", "chinook");
            let section = format!("[databases.music]\nurl = \"{url}\"\npassword_file = \"{}\"", wrong.display());
            let t = TestHost::builder().config(&section).build();
            let mut s = t.host.session(None).unwrap();
            assert!(s.system_prompt().contains("Tables: not readable now"), "{}", s.system_prompt());
            let (kind, message) = refused(&mut s, "SELECT 1").await;
            assert_eq!(kind, GuestErrorKind::Unavailable, "{message}");
            assert!(message.contains("password authentication failed"), "{message}");
            assert!(!message.contains("not-the-password") && !message.contains(PASSWORD), "{message}");

            let unset = format!("[databases.music]\nurl = \"{url}\"\npassword_env = \"QUIVER_TEST_NO_SUCH_PASSWORD\"");
            let error = TestHost::builder().config(&unset).refused("[databases.music]");
            assert!(error.contains("QUIVER_TEST_NO_SUCH_PASSWORD"), "{error}");

            // The server stops while a statement runs.
            let t = TestHost::builder().config(&db.section("music", "statement_timeout_ms = 60000")).build();
            let mut s = t.host.session(None).unwrap();
            assert_eq!(query(&mut s, "SELECT count(*) FROM genre").await["rows"][0][0], 25);
            let long = tokio::spawn({
                let mut s = t.host.session(None).unwrap();
                async move { refused(&mut s, "SELECT count(*) FROM generate_series(1, 100000000000)").await }
            });
            let active = "SELECT count(*) FROM pg_stat_activity WHERE state = 'active' \
                          AND query LIKE '%generate_series(1, 100000000000)%' AND pid <> pg_backend_pid()";
            while db.value(active) == "0" {
                assert!(!long.is_finished(), "the statement ended before the server stopped");
                tokio::task::yield_now().await;
            }
            db.server().stop();
            let (kind, message) = long.await.unwrap();
            assert_eq!(kind, GuestErrorKind::Unavailable, "{message}");
            assert!(message.starts_with("music: "), "{message}");
            let (kind, message) = refused(&mut s, "SELECT count(*) FROM genre").await;
            assert_eq!(kind, GuestErrorKind::Unavailable, "{message}");
            assert!(message.contains("cannot connect"), "{message}");
            db.server().start_again();
            assert_eq!(query(&mut s, "SELECT count(*) FROM genre").await["rows"][0][0], 25);
        }
    }
}

/// PostgreSQL over TLS (`sslmode=require`): the server's certificate is
/// verified against the operator's `ca_file`; without it (the system's
/// roots) the connection is refused with a certificate error.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_over_tls_verifies_the_server() {
    let (server, ca) = quiver_tests::postgres::Postgres::start_with_tls();
    server.create("chinook", quiver_tests::databases::chinook());
    let url = format!("{}?sslmode=require", server.url("postgres", "chinook"));
    let section = |extra: &str| {
        format!("[databases.music]\nurl = \"{url}\"\npassword_file = \"{}\"\n{extra}", server.password_file().display())
    };

    let t = TestHost::builder().config(&section(&format!("ca_file = \"{}\"", ca.display()))).build();
    let mut s = t.host.session(None).unwrap();
    assert!(s.system_prompt().contains("Tables (11): album"), "{}", s.system_prompt());
    assert_eq!(query(&mut s, "SELECT count(*) FROM genre").await["rows"][0][0], 25);
    let connections = |ssl: bool| {
        server.psql(
            "chinook",
            &format!(
                "SELECT count(*) FROM pg_stat_ssl s JOIN pg_stat_activity a USING (pid) \
                 WHERE a.application_name = 'quiver' AND s.ssl = {ssl}"
            ),
        )
    };
    assert_ne!(connections(true), "0", "the host's connection is not encrypted");
    assert_eq!(connections(false), "0", "the host has a plain connection");

    let untrusted = TestHost::builder().config(&section("")).build();
    let mut s = untrusted.host.session(None).unwrap();
    assert!(s.system_prompt().contains("Tables: not readable now"), "{}", s.system_prompt());
    let (kind, message) = refused(&mut s, "SELECT 1").await;
    assert_eq!(kind, GuestErrorKind::Unavailable, "{message}");
    assert!(message.contains("certificate"), "{message}");
}
