//! The SQL policy, differentially: every statement the policy accepts runs
//! on two databases that differ only in their hidden values, and the two
//! answers must be the same: if hidden data reached an answer, in any
//! form (a value, a transformation of one, a count, an error), they
//! differ. Besides, anything accepted at `read` leaves both unchanged, and
//! a failure is an ordinary typed error (malformed SQL, a refusal, a
//! timeout), never a lost connection or a panic.
//!
//! [`SqlHarness::sqlite`] is what the fuzz target runs (in-process, fast);
//! the corpus replay runs the same inputs on PostgreSQL too
//! ([`SqlHarness::postgres`]).

use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use crate::contract::Access;
use crate::contract::wit;
use crate::sandbox::sql::policy::{self, Dialect, Functions, Policy, Visible};
use crate::sandbox::sql::{Database, DatabaseSettings, Outcome, RawDatabase};

/// The schema every SQL harness serves (portable SQL: SQLite and
/// PostgreSQL), with twin `n` (0 or 1)'s hidden values: the table
/// `secrets` and the column `customer.email` differ between the twins,
/// nothing else does.
pub fn schema(twin: usize) -> String {
    let (mail, key) =
        [("hidden-mail-7f3a", "sk-hidden-key-c0ffee"), ("other-mail-1b2c", "sk-other-key-beef")][twin % 2];
    format!(
        "
CREATE TABLE artist (artist_id INTEGER PRIMARY KEY, name TEXT NOT NULL);
INSERT INTO artist VALUES (1, 'AC/DC'), (2, 'Accept'), (3, 'Aerosmith');
CREATE TABLE album (album_id INTEGER PRIMARY KEY, title TEXT NOT NULL, artist_id INTEGER REFERENCES artist (artist_id));
INSERT INTO album VALUES (1, 'For Those About To Rock', 1), (2, 'Balls to the Wall', 2), (3, 'Big Ones', 3);
CREATE TABLE customer (customer_id INTEGER PRIMARY KEY, first_name TEXT, country TEXT, email TEXT);
INSERT INTO customer VALUES (1, 'Luís', 'Brazil', 'luis.{mail}@example.com'),
  (2, 'Leonie', 'Germany', 'leonie.{mail}@example.org'), (3, 'Zoë', 'Germany', NULL);
CREATE TABLE secrets (id INTEGER PRIMARY KEY, api_key TEXT NOT NULL);
INSERT INTO secrets VALUES (1, '{key}');
"
    )
}

/// What the operator hides in [`schema`].
pub const HIDDEN: &[&str] = &["secrets", "customer.email"];

/// Words of statements whose answers differ from run to run whatever the
/// data (the clock, randomness): their two answers are not compared.
const UNSTABLE: &[&str] = &[
    "random",
    "now",
    "current_",
    "clock_",
    "statement_timestamp",
    "transaction_timestamp",
    "timeofday",
    "uuid",
    "date(",
    "time(",
    "datetime(",
    "julianday(",
    "unixepoch(",
    "strftime(",
    "timediff(",
    "localtime",
];

/// One engine: twin databases serving [`schema`] through the host's `sql`
/// layers, and how to tell whether they changed.
pub struct SqlHarness {
    twins: [Twin; 2],
    runtime: tokio::runtime::Runtime,
}

struct Twin {
    database: Arc<Database>,
    /// The SQLite file (in its folder), for the checksum and restoring.
    file: Option<(tempfile::TempDir, PathBuf)>,
    /// A native connection that digests every table (PostgreSQL).
    native: Option<tokio_postgres::Client>,
}

/// A digest of every row of [`schema`], read natively (PostgreSQL).
const CHECKSUM: &str = "SELECT md5(string_agg(r, ',' ORDER BY r)) FROM (SELECT a::text AS r FROM artist a \
     UNION ALL SELECT b::text FROM album b UNION ALL SELECT c::text FROM customer c \
     UNION ALL SELECT s::text FROM secrets s) all_rows";

fn settings(url: String, password_file: Option<&Path>) -> DatabaseSettings {
    let raw = RawDatabase {
        url,
        password_file: password_file.map(Path::to_owned),
        access: Some(Access::Admin),
        row_limit: Some(50),
        statement_timeout_ms: Some(300),
        max_result_kb: Some(64),
        hidden: HIDDEN.iter().map(|h| (*h).to_owned()).collect(),
        ..RawDatabase::default()
    };
    DatabaseSettings::resolve("fuzz", &raw, Path::new("/")).expect("the harness's settings are valid")
}

impl SqlHarness {
    /// [`schema`]'s twins in two new SQLite files.
    pub fn sqlite() -> SqlHarness {
        let twin = |n: usize| {
            let dir = tempfile::tempdir().expect("a temporary folder");
            let file = dir.path().join("fuzz.db");
            let connection = rusqlite::Connection::open(&file).expect("create the SQLite file");
            connection.execute_batch(&schema(n)).expect("load the schema");
            drop(connection);
            let database = Database::open(settings(format!("sqlite:{}", file.display()), None)).expect("open");
            Twin { database, file: Some((dir, file)), native: None }
        };
        SqlHarness { twins: [twin(0), twin(1)], runtime: runtime() }
    }

    /// Two PostgreSQL databases at `urls` (no TLS) that already hold
    /// [`schema`]`(0)` and [`schema`]`(1)`.
    pub fn postgres(urls: [&str; 2], password_file: &Path) -> SqlHarness {
        let runtime = runtime();
        let twin = |url: &str| {
            let database = Database::open(settings(url.to_owned(), Some(password_file))).expect("open");
            let mut config: tokio_postgres::Config = url.parse().expect("a PostgreSQL URL");
            config.password(std::fs::read_to_string(password_file).expect("the password").trim());
            let (client, connection) =
                runtime.block_on(config.connect(tokio_postgres::NoTls)).expect("connect natively for the checksum");
            runtime.spawn(connection);
            Twin { database, file: None, native: Some(client) }
        };
        let twins = [twin(urls[0]), twin(urls[1])];
        SqlHarness { twins, runtime }
    }

    fn digest(&self, twin: &Twin) -> String {
        match (&twin.file, &twin.native) {
            (Some((_, file)), _) => {
                use sha2::{Digest, Sha256};
                hex::encode(Sha256::digest(std::fs::read(file).expect("read the SQLite file")))
            }
            (None, Some(client)) => {
                let row = self.runtime.block_on(client.query_one(CHECKSUM, &[])).expect("the checksum");
                row.get::<_, Option<String>>(0).unwrap_or_default()
            }
            (None, None) => unreachable!("a twin has an engine"),
        }
    }

    /// Run `sql` with `access` on both twins and check the oracle (panics
    /// when it breaks). Only `read` is run where the harness cannot restore
    /// a database (PostgreSQL); writes on SQLite are undone by restoring
    /// the files.
    pub fn check(&self, sql: &str, access: Access) {
        let access = if self.twins[0].file.is_none() { Access::Read } else { access };
        let mut answers = Vec::with_capacity(2);
        for twin in &self.twins {
            let before = self.digest(twin);
            let saved = twin.file.as_ref().map(|(_, file)| std::fs::read(file).expect("read the SQLite file"));
            let deadline = Instant::now() + Duration::from_secs(2);
            let outcome = self.runtime.block_on(twin.database.run(
                sql,
                Vec::new(),
                access,
                deadline,
                true,
                &mut Default::default(),
            ));
            if let Err(wit::Error::Unavailable(message)) = &outcome {
                let ordinary = message.contains("ran past its limit") || message.contains("time ran out");
                assert!(ordinary, "`{sql}`: {message}");
            }
            let changed = self.digest(twin) != before;
            assert!(!(changed && access == Access::Read), "`{sql}` changed the database at read access");
            if changed && let (Some((_, file)), Some(saved)) = (&twin.file, saved) {
                std::fs::write(file, saved).expect("restore the SQLite file");
            }
            answers.push(answer(outcome));
        }
        let lower = sql.to_lowercase();
        if !UNSTABLE.iter().any(|word| lower.contains(word)) {
            assert_eq!(answers[0], answers[1], "`{sql}`: the answer depends on hidden values");
        }
    }
}

/// What is compared of an answer: the rows, or the kind of error (whose
/// text may quote the statement, never the data of another twin).
fn answer(outcome: std::result::Result<Outcome, wit::Error>) -> String {
    match outcome {
        Ok(Outcome::Rows(rows)) => format!("{:?} {:?} {}", rows.columns, rows.rows, rows.truncated),
        Ok(Outcome::Changed(n)) => format!("changed {n}"),
        // A timeout is the clock's: the twins may differ by a row.
        Err(wit::Error::Unavailable(_)) => "unavailable".into(),
        Err(error) => format!("{:?}", std::mem::discriminant(&error)),
    }
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread().enable_all().build().expect("a runtime")
}

/// The policy alone on [`schema`]'s names, in both dialects at every access
/// level: never a panic, and a statement accepted at a level is accepted
/// with the same effect at every higher one.
fn policy_only(sql: &str) {
    let hidden = policy::Hidden::parse(&HIDDEN.iter().map(|h| (*h).to_owned()).collect::<Vec<_>>()).unwrap();
    let tables = [
        ("artist", vec!["artist_id", "name"]),
        ("album", vec!["album_id", "title", "artist_id"]),
        ("customer", vec!["customer_id", "first_name", "country", "email"]),
        ("secrets", vec!["id", "api_key"]),
    ];
    for (dialect, schema) in [(Dialect::Sqlite, "main"), (Dialect::Postgres, "public")] {
        let visible = Visible::new(schema, tables.clone(), &hidden);
        let mut accepted = None;
        for access in Access::ALL {
            let functions = Functions::new(dialect, access, &[]);
            let policy = Policy { dialect, access, hidden: &hidden, visible: &visible, functions: &functions };
            let result = policy::check(&policy, sql);
            if let Some(effect) = accepted {
                assert_eq!(result.as_ref().ok(), Some(&effect), "`{sql}`: accepted below {access}, not at it");
            }
            accepted = result.ok().or(accepted);
        }
    }
}

/// The fuzz target: the first byte picks the access level, the rest is the
/// statement. The policy runs alone in both dialects (on a thread with the
/// stack a check gets), then on SQLite's twins.
pub fn sql(data: &[u8]) {
    static HARNESS: OnceLock<SqlHarness> = OnceLock::new();
    let Some((level, text)) = data.split_first() else { return };
    let Ok(sql) = std::str::from_utf8(text) else { return };
    // On the stack the host gives a check: any statement fits in it.
    std::thread::scope(|scope| {
        let checking = std::thread::Builder::new().stack_size(crate::sandbox::sql::stack::STACK_BYTES);
        checking.spawn_scoped(scope, || policy_only(sql)).expect("start the check's thread").join()
    })
    .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
    let access = Access::ALL[usize::from(*level) % 3];
    HARNESS.get_or_init(SqlHarness::sqlite).check(sql, access);
}
