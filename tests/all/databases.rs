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

on_both_engines!(
    walks_from_tier_one_to_query,
    escape_attempts_are_refused_and_change_nothing,
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

/// A statement the policy must refuse: its text and a fragment of the rule
/// the refusal names.
struct Attempt {
    sql: String,
    rule: &'static str,
}

fn attempt(sql: impl Into<String>, rule: &'static str) -> Attempt {
    Attempt { sql: sql.into(), rule }
}

/// The escape attempts both dialects must refuse.
fn common_attempts(dir: &str) -> Vec<Attempt> {
    vec![
        // Stacked statements, and a comment hiding the second one.
        attempt("SELECT 1; DELETE FROM genre", "only one statement"),
        attempt("SELECT name FROM genre -- list them\n; DROP TABLE genre", "only one statement"),
        attempt("SELECT 1 /* harmless */; UPDATE genre SET name = 'x'", "only one statement"),
        attempt("SELECT 1;;SELECT 2", "only one statement"),
        // Writes and schema changes under read access.
        attempt("DELETE FROM genre", "needs `write`"),
        attempt("INSERT INTO genre (genre_id, name) VALUES (99, 'x')", "needs `write`"),
        attempt("UPDATE genre SET name = 'x'", "needs `write`"),
        attempt("DROP TABLE genre", "needs `admin`"),
        attempt("CREATE TABLE t (x INTEGER)", "needs `admin`"),
        attempt("ALTER TABLE genre ADD COLUMN x INTEGER", "needs `admin`"),
        attempt("CREATE VIEW v AS SELECT * FROM secrets", "needs `admin`"),
        attempt("SELECT * INTO genre_copy FROM genre", "into"),
        attempt("EXPLAIN DELETE FROM genre", "explain of a statement that is not a query"),
        // Hidden tables: any spelling, qualified, nested, Unicode.
        attempt("SELECT * FROM secrets", "no table `secrets`"),
        attempt("SELECT api_key FROM \"SECRETS\"", "no table"),
        attempt("SELECT api_key FROM SeCrEtS", "no table"),
        attempt("SELECT note FROM \"TRÉSOR\"", "no table"),
        attempt("SELECT note FROM trésor", "no table"),
        attempt("SELECT (SELECT api_key FROM secrets LIMIT 1) AS k", "no table `secrets`"),
        attempt("SELECT name FROM genre WHERE genre_id IN (SELECT id FROM secrets)", "no table `secrets`"),
        attempt("SELECT name FROM genre UNION SELECT api_key FROM secrets", "no table `secrets`"),
        attempt("WITH s AS (SELECT * FROM secrets) SELECT * FROM s", "no table `secrets`"),
        // Hidden columns: by name, alias, case, `*`, `t.*`.
        attempt("SELECT * FROM employee", "`*` would include columns of `employee`"),
        attempt("SELECT birth_date FROM employee", "column `birth_date`"),
        attempt("SELECT e.BIRTH_DATE FROM employee e", "column `BIRTH_DATE`"),
        attempt("SELECT c.* FROM customer c", "`c.*` would include columns of `customer`"),
        attempt("SELECT first_name FROM customer WHERE email LIKE '%@gmail.com'", "column `email`"),
        attempt("SELECT count(*) FROM customer ORDER BY email", "column `email`"),
        // System catalogs hold the unfiltered schema.
        attempt("SELECT * FROM information_schema.columns", "system catalog"),
        // Statements no access level allows.
        attempt(format!("ATTACH DATABASE '{dir}/other.db' AS other"), "attach"),
        attempt("BEGIN", "not a statement an agent may run"),
        // A huge literal.
        attempt(format!("SELECT '{}'", "x".repeat(70_000)), "over the limit of 65536"),
    ]
}

fn sqlite_attempts(dir: &str) -> Vec<Attempt> {
    vec![
        attempt("SELECT name FROM sqlite_master", "system catalog"),
        attempt("SELECT sql FROM sqlite_schema WHERE name = 'secrets'", "system catalog"),
        attempt("SELECT * FROM pragma_table_info('secrets')", "pragma_table_info"),
        attempt("PRAGMA query_only = 0", "pragma"),
        attempt("PRAGMA writable_schema = ON", "pragma"),
        attempt("DETACH DATABASE main", "detach"),
        attempt("SELECT load_extension('/tmp/evil.so')", "load_extension"),
        attempt("SELECT LOAD_EXTENSION('/tmp/evil.so')", "load_extension"),
        attempt("SELECT readfile('/etc/passwd')", "readfile"),
        attempt(format!("SELECT writefile('{dir}/pwned', 'x')"), "writefile"),
        attempt("SELECT fts3_tokenizer('simple')", "fts3_tokenizer"),
        attempt("SELECT sqlite_version()", "sqlite_version"),
        attempt("SELECT * FROM pragma_function_list", "pragma_function_list"),
        attempt("VACUUM", "not a statement an agent may run"),
        attempt(format!("VACUUM INTO '{dir}/copy.db'"), "not a statement an agent may run"),
    ]
}

fn postgres_attempts(dir: &str) -> Vec<Attempt> {
    vec![
        attempt("WITH d AS (DELETE FROM genre RETURNING *) SELECT * FROM d", "changes data"),
        attempt("WITH i AS (INSERT INTO genre VALUES (99, 'x') RETURNING 1) SELECT 1", "changes data"),
        attempt("SELECT * FROM genre FOR UPDATE", "locking clauses"),
        attempt("SELECT name FROM genre FOR SHARE", "locking clauses"),
        attempt("EXPLAIN ANALYZE DELETE FROM genre", "explain analyze"),
        attempt("EXPLAIN ANALYZE SELECT 1", "explain analyze"),
        attempt("SELECT pg_read_file('/etc/passwd')", "pg_read_file"),
        attempt("SELECT PG_READ_FILE('/etc/passwd')", "pg_read_file"),
        attempt("SELECT pg_catalog.pg_read_file('/etc/passwd')", "pg_read_file"),
        attempt("SELECT \"pg_read_file\"('/etc/passwd')", "pg_read_file"),
        attempt("SELECT pg_read_binary_file('/etc/passwd')", "pg_read_binary_file"),
        attempt("SELECT * FROM pg_ls_dir('.')", "pg_ls_dir"),
        attempt("SELECT lo_import('/etc/passwd')", "lo_import"),
        attempt(format!("SELECT lo_export(1, '{dir}/pwned')"), "lo_export"),
        attempt("SELECT * FROM dblink('dbname=postgres', 'SELECT 1') AS t(x int)", "dblink"),
        attempt("SELECT dblink_exec('dbname=postgres', 'DROP TABLE genre')", "dblink_exec"),
        attempt("SELECT set_config('default_transaction_read_only', 'off', false)", "set_config"),
        attempt("SELECT pg_sleep(60)", "pg_sleep"),
        attempt("SELECT pg_sleep_for('1 minute')", "pg_sleep_for"),
        attempt("SELECT pg_terminate_backend(pg_backend_pid())", "pg_terminate_backend"),
        attempt("SELECT nextval('genre_seq')", "nextval"),
        attempt("SELECT setval('genre_seq', 1)", "setval"),
        attempt("SELECT current_setting('data_directory')", "current_setting"),
        attempt("SELECT query_to_xml('SELECT * FROM secrets', true, true, '')", "query_to_xml"),
        attempt("SELECT * FROM pg_catalog.pg_tables", "system catalog"),
        attempt("SELECT usename, passwd FROM pg_shadow", "system catalog"),
        attempt("SELECT api_key FROM public.secrets", "no table `public.secrets`"),
        attempt("SELECT e FROM employee e", "whole-row reference"),
        attempt("SELECT row_to_json(customer) FROM customer", "whole-row reference"),
        attempt(format!("COPY genre TO '{dir}/genres.csv'"), "copy is never allowed"),
        attempt("COPY (SELECT 1) TO PROGRAM 'touch /tmp/quiver-pwned'", "copy is never allowed"),
        attempt("SET default_transaction_read_only = off", "not a statement an agent may run"),
        attempt("SET ROLE postgres", "not a statement an agent may run"),
        attempt("RESET ALL", "not a statement an agent may run"),
        attempt("DO $$ BEGIN DELETE FROM genre; END $$", "not a statement an agent may run"),
        attempt("GRANT ALL ON genre TO PUBLIC", "not a statement an agent may run"),
        attempt("CREATE ROLE intruder SUPERUSER LOGIN", "not a statement an agent may run"),
        attempt("TRUNCATE genre", "needs `admin`"),
        attempt("LISTEN quiver", "not a statement an agent may run"),
        attempt("PREPARE p AS DELETE FROM genre", "not a statement an agent may run"),
        // The second hostile trial (issue 28): whole rows of a table with
        // hidden columns (H2), query text run by a function (H3), functions
        // in FROM (H4), EXPLAIN options (I1), the catalog by cast or size (I5).
        attempt("SELECT row_to_json(c.*) FROM customer c", "whole-row reference to `customer`"),
        attempt("SELECT to_jsonb(customer.*) FROM customer", "whole-row"),
        attempt("SELECT json_agg(c.*) FROM customer c", "whole-row"),
        attempt("SELECT ROW(c.*)::text FROM customer c", "whole-row"),
        attempt("SELECT c.row_to_json FROM customer c", "no column `row_to_json` in `c`"),
        attempt("SELECT * FROM ts_stat('SELECT to_tsvector(api_key) FROM secrets')", "ts_stat"),
        attempt("SELECT ts_stat('SELECT to_tsvector(email) FROM customer')", "ts_stat"),
        attempt("SELECT * FROM genre JOIN LATERAL pg_advisory_lock(1) ON true", "pg_advisory_lock"),
        attempt("SELECT * FROM genre g, LATERAL pg_terminate_backend(g.genre_id) t", "pg_terminate_backend"),
        attempt("SELECT * FROM pg_advisory_lock(7)", "pg_advisory_lock"),
        attempt("EXPLAIN (ANALYZE) SELECT 1", "explain analyze"),
        attempt("EXPLAIN (FORMAT JSON, ANALYZE on) SELECT 1", "explain analyze"),
        attempt("SELECT pg_relation_size('secrets')", "pg_relation_size"),
        attempt("SELECT 'secrets'::regclass", "regclass"),
        attempt("SELECT txid_current()", "txid_current"),
        attempt("SELECT pg_export_snapshot()", "pg_export_snapshot"),
        attempt("SELECT version()", "version"),
    ]
}

/// Every escape attempt is refused with a typed error naming the rule and
/// the way forward: `denied` (do not retry) for what needs more access than
/// granted, `invalid_input` (rewrite it) for every other rule; and the
/// database is byte-for-byte (SQLite) or row-for-row (PostgreSQL) what it
/// was. Then the layers behind the policy, on their own.
async fn escape_attempts_are_refused_and_change_nothing(engine: Engine) {
    let db = TestDatabase::new(engine);
    let t = host(&db, "", "");
    let mut s = t.host.session(None).unwrap();
    let dir = db.dir.path().display().to_string();
    let mut attempts = common_attempts(&dir);
    attempts.extend(match engine {
        Engine::Sqlite => sqlite_attempts(&dir),
        Engine::Postgres => postgres_attempts(&dir),
    });
    assert!(attempts.len() >= 30, "{} attempts", attempts.len());
    let before = db.checksum();
    for Attempt { sql, rule } in &attempts {
        let (kind, message) = refused(&mut s, sql).await;
        let shown: String = sql.chars().take(80).collect();
        let access = message.contains("access, and this statement needs") || message.contains("changes data");
        let expected = if access { GuestErrorKind::Denied } else { GuestErrorKind::InvalidInput };
        assert_eq!(kind, expected, "`{shown}`: {message}");
        assert!(message.to_lowercase().contains(&rule.to_lowercase()), "`{shown}`: `{message}` lacks `{rule}`");
        assert!(message.contains(';'), "`{shown}`: `{message}` says no way forward");
        assert!(!message.contains("sk-live") && !message.contains("gold under"), "{message}");
    }
    assert_eq!(db.checksum(), before, "a refused statement changed the database");
    if engine == Engine::Postgres {
        let locks = "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory'";
        assert_eq!(db.value(locks), "0", "a refused statement took an advisory lock");
    }
    for file in ["other.db", "pwned", "copy.db", "genres.csv"] {
        assert!(!db.dir.path().join(file).exists(), "{file} was created");
    }
    assert!(!std::path::Path::new("/tmp/quiver-pwned").exists());

    // Behind the policy, the engine's own read-only mode: a function that
    // writes is a query the parser cannot see through. The policy refuses
    // it (it is not on the allow-list); an operator who allows it still has
    // the read-only transaction behind.
    if engine == Engine::Postgres {
        db.server().script(
            "chinook",
            "CREATE FUNCTION add_genre(n text) RETURNS int LANGUAGE sql \
             AS $$ INSERT INTO genre (genre_id, name) VALUES (1000, n) RETURNING genre_id $$;",
        );
        let before = db.checksum();
        let (kind, message) = refused(&mut s, "SELECT add_genre('Sea Shanty')").await;
        assert_eq!(kind, GuestErrorKind::InvalidInput, "{message}");
        assert!(message.contains("add_genre") && message.contains("allow-list"), "{message}");
        let allowed = host(&db, "allow_functions = [\"add_genre\"]", "");
        let mut a = allowed.host.session(None).unwrap();
        let (kind, message) = refused(&mut a, "SELECT add_genre('Sea Shanty')").await;
        assert_eq!(kind, GuestErrorKind::Denied, "{message}");
        assert!(message.contains("read-only"), "{message}");
        assert_eq!(db.checksum(), before);
    }
    // A query still runs after all of that.
    assert_eq!(query(&mut s, "SELECT count(*) FROM genre").await["rows"][0][0], 25);
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
