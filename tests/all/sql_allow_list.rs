//! The SQL policy's allow-list against the real engines: every entry exists
//! where the tests run, an operator can widen it for one database, the
//! engines' own layers behind it (PostgreSQL's privileges, pooled sessions
//! reset before reuse), output bounded by each engine's named limit, and
//! the schema read again when a statement names what it did not have.

use serde_json::{Value, json};

use quiver::sandbox::sql::Privileges;
use quiver::sandbox::sql::policy::allow_list;
use quiver::{Error, GuestErrorKind, Session};
use quiver_tests::TestHost;
use quiver_tests::databases::{Engine, TestDatabase};

async fn query(session: &mut Session, sql: &str) -> Result<Value, (GuestErrorKind, String)> {
    let outcome = session.call("database", json!({ "subcommand": "query", "database": "music", "sql": sql })).await;
    match (outcome.value().cloned(), outcome.error) {
        (Some(value), None) => Ok(value),
        (_, Some(Error::Guest { kind, message, .. })) => Err((kind, message)),
        (_, other) => panic!("`{sql}`: not the adapter's typed answer: {other:?} {}", outcome.text),
    }
}

/// Every function, table function and cast type of `allowed.toml` exists by
/// name in the engines the tests run: `pg_proc` of the test PostgreSQL (and
/// `syntax` entries are not functions there), `pragma_function_list` of
/// the bundled SQLite (its JSON table functions, with the columns listed
/// for them, by use); every PostgreSQL cast type is one the server knows.
#[test]
fn the_allow_list_names_real_functions_and_types() {
    let list = allow_list();
    let server = quiver_tests::postgres::Postgres::start();
    let procs = server.psql("postgres", "SELECT string_agg(DISTINCT proname, ',') FROM pg_proc");
    let procs: std::collections::BTreeSet<&str> = procs.split(',').collect();
    let pg = &list.postgres;
    for name in pg.read.iter().chain(&pg.write).chain(&pg.admin) {
        assert!(procs.contains(name.as_str()), "PostgreSQL has no function `{name}`");
    }
    for name in &pg.syntax {
        assert!(!procs.contains(name.as_str()), "`{name}` is a function in PostgreSQL: list it under a level");
    }
    let casts: Vec<String> = pg.casts.iter().map(|t| format!("NULL::{t}")).collect();
    server.psql("postgres", &format!("SELECT {}", casts.join(", ")));

    let sqlite = rusqlite::Connection::open_in_memory().unwrap();
    let names = |sql: &str| -> std::collections::BTreeSet<String> {
        let mut statement = sqlite.prepare(sql).unwrap();
        statement.query_map([], |row| row.get(0)).unwrap().collect::<Result<_, _>>().unwrap()
    };
    let functions = names("SELECT name FROM pragma_function_list");
    let lite = &list.sqlite;
    for name in lite.syntax.iter().chain(&lite.read).chain(&lite.write).chain(&lite.admin) {
        assert!(functions.contains(name), "SQLite has no function `{name}`");
    }
    // JSON's table-valued functions are built into SQLite's core, not
    // modules (`pragma_module_list` does not list them): each is read once.
    for name in &lite.tables {
        let columns = &lite.columns[name];
        let sql = format!("SELECT {} FROM {name}('[1]')", columns.join(", "));
        assert!(sqlite.prepare(&sql).is_ok(), "SQLite cannot run `{sql}`");
    }
}

/// `allow_functions` widens one database's list, in the policy and, on
/// SQLite, in the engine's authorizer; another database keeps refusing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_operator_may_allow_a_function_for_one_database() {
    let db = TestDatabase::new(Engine::Sqlite);
    let t = TestHost::builder()
        .config(&db.section("music", "allow_functions = [\"sqlite_version\"]"))
        .config(&db.section("other", ""))
        .build();
    let mut s = t.host.session(None).unwrap();
    let version = query(&mut s, "SELECT sqlite_version()").await.unwrap();
    assert!(version["rows"][0][0].as_str().is_some_and(|v| v.starts_with('3')), "{version}");
    let other = s
        .call("database", json!({ "subcommand": "query", "database": "other", "sql": "SELECT sqlite_version()" }))
        .await;
    assert!(other.is_error && other.text.contains("sqlite_version"), "{}", other.text);
}

/// A session's state never outlives the call on a pooled connection: an
/// advisory lock (taken where the operator allowed the function) is
/// released before the connection serves the next statement.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pooled_connections_are_reset_before_reuse() {
    let db = TestDatabase::new(Engine::Postgres);
    let t = TestHost::builder().config(&db.section("music", "allow_functions = [\"pg_advisory_lock\"]")).build();
    let mut s = t.host.session(None).unwrap();
    assert!(query(&mut s, "SELECT pg_advisory_lock(4711)").await.unwrap()["rows"][0][0].is_null());
    let locks = "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory'";
    assert_eq!(db.value(locks), "1", "the lock is held by the pooled connection");
    assert_eq!(query(&mut s, "SELECT count(*) FROM genre").await.unwrap()["rows"][0][0], 25);
    let connections = "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'quiver'";
    assert_eq!(db.value(connections), "1", "the second statement reused the connection");
    assert_eq!(db.value(locks), "0", "the pooled connection was not reset before reuse");
}

/// With the first reading of the schema (no connection of its own), the
/// host asks PostgreSQL whether its role can read what is hidden: a
/// superuser can (reported, with the advice), a role given column
/// privileges as the manual shows cannot; before any connection the status
/// says it was not checked yet.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn privileges_behind_the_policy_are_checked_and_reported() {
    let db = TestDatabase::new(Engine::Postgres);
    let privileges = |t: &TestHost| {
        let status = t.host.status();
        let music = status.plugins.iter().find(|p| p.name == "music").expect("the database is served");
        music.privileges.clone().expect("a database reports its privileges")
    };
    let t = TestHost::builder().config(&db.section("music", "")).build();
    match privileges(&t) {
        Privileges::Readable { hidden, advice } => {
            assert_eq!(hidden, ["customer.email", "employee.birth_date", "secrets", "trésor"]);
            assert!(advice.contains("docs/src/security.md"), "{advice}");
        }
        other => panic!("a superuser reads everything: {other:?}"),
    }

    // The manual's column grants: everything but what is hidden.
    let server = db.server();
    server.script(
        "chinook",
        "CREATE ROLE quiver_reader LOGIN PASSWORD 'reader-password'; \
         GRANT USAGE ON SCHEMA public TO quiver_reader;",
    );
    let plain = server.psql(
        "chinook",
        "SELECT string_agg(quote_ident(tablename), ', ') FROM pg_tables WHERE schemaname = 'public' \
         AND tablename NOT IN ('secrets', 'trésor', 'customer', 'employee')",
    );
    server.script("chinook", &format!("GRANT SELECT ON {plain} TO quiver_reader;"));
    for (table, hidden) in [("customer", "email"), ("employee", "birth_date")] {
        let columns = server.psql(
            "chinook",
            &format!(
                "SELECT string_agg(quote_ident(column_name), ', ') FROM information_schema.columns \
                 WHERE table_name = '{table}' AND column_name <> '{hidden}'"
            ),
        );
        server.script("chinook", &format!("GRANT SELECT ({columns}) ON {table} TO quiver_reader;"));
    }
    let password = db.dir.path().join("reader-password");
    std::fs::write(&password, "reader-password").unwrap();
    let section = format!(
        "[databases.music]\nurl = \"{}\"\npassword_file = \"{}\"\n{}",
        server.url("quiver_reader", "chinook"),
        password.display(),
        quiver_tests::databases::HIDDEN
    );
    let reader = TestHost::builder().config(&section).build();
    assert_eq!(privileges(&reader), Privileges::Enforced);
    let mut s = reader.host.session(None).unwrap();
    assert_eq!(query(&mut s, "SELECT count(*) FROM customer").await.unwrap()["rows"][0][0], 59);

    // Unreachable at start: not checked yet; checked with the first statement.
    server.stop();
    let late = TestHost::builder().config(&section).build();
    assert_eq!(privileges(&late), Privileges::NotCheckedYet);
    server.start_again();
    let mut s = late.host.session(None).unwrap();
    assert_eq!(query(&mut s, "SELECT count(*) FROM genre").await.unwrap()["rows"][0][0], 25);
    assert_eq!(privileges(&late), Privileges::Enforced);
}

/// Output is bounded by a named engine limit whatever the functions build:
/// SQLite's `SQLITE_LIMIT_LENGTH` (the result cap) stops `printf` and
/// `zeroblob` mid-statement; PostgreSQL's `statement_timeout` stops a
/// runaway aggregate, and a value larger than the result cap is refused
/// from its message's header, before it is read (a 50 MB `repeat` used to
/// be read whole, then found too large); the next statement runs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn output_is_bounded_by_named_engine_limits() {
    let lite = TestDatabase::new(Engine::Sqlite);
    let t = TestHost::builder().config(&lite.section("music", "max_result_kb = 64")).build();
    let mut s = t.host.session(None).unwrap();
    for sql in ["SELECT length(printf('%.*c', 1000000, 'x'))", "SELECT length(zeroblob(1000000))"] {
        let (kind, message) = query(&mut s, sql).await.unwrap_err();
        assert_eq!(kind, GuestErrorKind::InvalidInput, "{sql}: {message}");
        assert!(message.contains("result cap of 64 KiB"), "{sql}: {message}");
    }

    let pg = TestDatabase::new(Engine::Postgres);
    let t = TestHost::builder().config(&pg.section("music", "statement_timeout_ms = 500")).build();
    let mut s = t.host.session(None).unwrap();
    let sql = "SELECT length(string_agg(repeat('x', 100), ',')) FROM generate_series(1, 100000000)";
    let (kind, message) = query(&mut s, sql).await.unwrap_err();
    assert_eq!(kind, GuestErrorKind::Unavailable, "{message}");
    assert!(message.contains("limit of 500 ms"), "{message}");
    let t = TestHost::builder().config(&pg.section("music", "max_result_kb = 64")).build();
    let mut s = t.host.session(None).unwrap();
    for sql in ["SELECT repeat('x', 50000000)", "SELECT string_agg(name, ',') FROM track a, (SELECT 1 FROM genre) g"] {
        let (kind, message) = query(&mut s, sql).await.unwrap_err();
        assert_eq!(kind, GuestErrorKind::InvalidInput, "{sql}: {message}");
        assert!(message.contains("over the result cap of 64 KiB, and the connection was closed"), "{sql}: {message}");
        assert_eq!(query(&mut s, "SELECT count(*) FROM genre").await.unwrap()["rows"][0][0], 25);
    }
}

/// A table made after the schema was read (by someone else) is not
/// refused as unknown: the host reads the schema again, once, and the
/// statement runs; a name that still does not exist is refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_schema_is_read_again_when_a_statement_names_something_new() {
    let db = TestDatabase::new(Engine::Sqlite);
    let t = TestHost::builder().config(&db.section("music", "")).build();
    let mut s = t.host.session(None).unwrap();
    assert_eq!(query(&mut s, "SELECT count(*) FROM genre").await.unwrap()["rows"][0][0], 25);
    let connection = rusqlite::Connection::open(db.file()).unwrap();
    connection
        .execute_batch("CREATE TABLE mood (id INTEGER PRIMARY KEY, name TEXT); INSERT INTO mood VALUES (1, 'calm');")
        .unwrap();
    drop(connection);
    // The schema is re-read only if it is older than a second: wait for that
    // on the host's own clock rather than sleeping a fixed time.
    let started = std::time::Instant::now();
    let answer = loop {
        match query(&mut s, "SELECT name FROM mood").await {
            Ok(answer) => break answer,
            Err((GuestErrorKind::InvalidInput, message)) if message.contains("no table `mood`") => {
                assert!(started.elapsed().as_secs() < 30, "the schema was never read again: {message}");
                tokio::task::yield_now().await;
            }
            Err(other) => panic!("{other:?}"),
        }
    };
    assert_eq!(answer["rows"][0][0], "calm");
    let (kind, message) = query(&mut s, "SELECT name FROM nowhere").await.unwrap_err();
    assert_eq!(kind, GuestErrorKind::InvalidInput, "{message}");
    assert!(message.contains("no table `nowhere`") && message.contains("list_tables"), "{message}");
}

/// The red-team review's bypasses, on the real PostgreSQL through a
/// session: each was accepted by the first allow-list and read a hidden
/// column (or called an unlisted function) there; each is now refused
/// with a typed `invalid_input` (a rule to rewrite around: no statement of
/// these needs more access than the database grants), and nothing changed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_reviews_bypasses_are_refused_on_postgresql() {
    let db = TestDatabase::new(Engine::Postgres);
    let t = TestHost::builder().config(&db.section("music", "access = \"write\"")).build();
    let mut s = t.host.session(None).unwrap();
    let before = db.checksum();
    for sql in [
        "SELECT x4 FROM customer AS c(x1, x2, x3, x4, x5, x6, x7, x8, x9, x10, x11, x12)",
        "SELECT U&\"\\0065mail\" AS u, 0 AS \"\\0065mail\" FROM customer",
        "SELECT c.* FROM customer c WHERE EXISTS (SELECT 1 FROM artist c)",
        "SELECT (SELECT c::text FROM customer c LIMIT 1) FROM artist c",
        "SELECT j.* FROM (customer JOIN invoice USING (customer_id)) AS j",
        "SELECT r FROM customer c, LATERAL row_to_json(c.*) AS r",
        "EXPLAIN VERBOSE SELECT a.name FROM customer c JOIN artist a ON a.name = c.first_name",
        "SELECT current_role AS r, 1 AS \"current_role\"",
        "SELECT s.pg_column_size FROM (SELECT 1 AS n) s, (SELECT 1 AS pg_column_size) z",
        "UPDATE artist SET name = artist.name FROM customer RETURNING *",
        "DELETE FROM artist USING customer WHERE false RETURNING *",
        "SELECT nextval('genre_genre_id_seq')",
    ] {
        let (kind, message) = query(&mut s, sql).await.unwrap_err();
        assert_eq!(kind, GuestErrorKind::InvalidInput, "`{sql}`: {message}");
        assert!(!message.contains("@") && !message.contains("quiver_reader"), "`{sql}`: {message}");
    }
    assert_eq!(db.checksum(), before);
}
