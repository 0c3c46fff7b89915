//! The SQL policy's escape attempts, on both engines: each is refused
//! with a typed error naming its rule, and leaves the database exactly as
//! it was; then the layers behind the policy, on their own.

use super::*;

on_both_engines!(escape_attempts_are_refused_and_change_nothing);

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
