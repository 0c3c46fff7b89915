//! The SQL policy, differentially: every statement the policy accepts runs
//! on a real engine, and the engine's answer is checked. For anything
//! accepted at `read`, the database is unchanged; no hidden value appears
//! in any answer; a failure is an ordinary typed error (malformed SQL, a
//! refusal, a timeout), never a lost connection or a panic.
//!
//! [`SqlHarness::sqlite`] is what the fuzz target runs (in-process, fast);
//! the corpus replay runs the same inputs on PostgreSQL too
//! ([`SqlHarness::postgres`]).

use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use crate::contract::Access;
use crate::contract::database::quiver::plugin::sql::Value;
use crate::contract::wit;
use crate::sandbox::sql::policy::{self, Dialect, Functions, Policy, Visible};
use crate::sandbox::sql::{Database, DatabaseSettings, RawDatabase};

/// The schema every SQL harness serves (portable SQL: SQLite and
/// PostgreSQL). Hidden: the table `secrets` and the column
/// `customer.email`; their values carry [`MARKERS`].
pub const SCHEMA: &str = "
CREATE TABLE artist (artist_id INTEGER PRIMARY KEY, name TEXT NOT NULL);
INSERT INTO artist VALUES (1, 'AC/DC'), (2, 'Accept'), (3, 'Aerosmith');
CREATE TABLE album (album_id INTEGER PRIMARY KEY, title TEXT NOT NULL, artist_id INTEGER REFERENCES artist (artist_id));
INSERT INTO album VALUES (1, 'For Those About To Rock', 1), (2, 'Balls to the Wall', 2), (3, 'Big Ones', 3);
CREATE TABLE customer (customer_id INTEGER PRIMARY KEY, first_name TEXT, country TEXT, email TEXT);
INSERT INTO customer VALUES (1, 'Luís', 'Brazil', 'luis.hidden-mail-7f3a@example.com'),
  (2, 'Leonie', 'Germany', 'leonie.hidden-mail-7f3a@example.com');
CREATE TABLE secrets (id INTEGER PRIMARY KEY, api_key TEXT NOT NULL);
INSERT INTO secrets VALUES (1, 'sk-hidden-key-c0ffee');
";

/// What the operator hides in [`SCHEMA`].
pub const HIDDEN: &[&str] = &["secrets", "customer.email"];

/// Substrings only hidden values contain.
pub const MARKERS: &[&str] = &["hidden-mail-7f3a", "sk-hidden-key-c0ffee"];

/// One database serving [`SCHEMA`] through the host's `sql` layers, and
/// how to tell whether it changed.
pub struct SqlHarness {
    database: Arc<Database>,
    runtime: tokio::runtime::Runtime,
    /// The SQLite file (and its folder), for the checksum.
    file: Option<(tempfile::TempDir, PathBuf)>,
    /// A native connection that digests every table (PostgreSQL).
    native: Option<tokio_postgres::Client>,
}

/// A digest of every row of [`SCHEMA`], read natively (PostgreSQL).
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
    /// [`SCHEMA`] in a new SQLite file.
    pub fn sqlite() -> SqlHarness {
        let dir = tempfile::tempdir().expect("a temporary folder");
        let file = dir.path().join("fuzz.db");
        let connection = rusqlite::Connection::open(&file).expect("create the SQLite file");
        connection.execute_batch(SCHEMA).expect("load the schema");
        drop(connection);
        let database = Database::open(settings(format!("sqlite:{}", file.display()), None)).expect("open");
        SqlHarness { database, runtime: runtime(), file: Some((dir, file)), native: None }
    }

    /// A PostgreSQL database at `url` (no TLS) that already holds [`SCHEMA`].
    pub fn postgres(url: &str, password_file: &Path) -> SqlHarness {
        let database = Database::open(settings(url.to_owned(), Some(password_file))).expect("open");
        let runtime = runtime();
        let mut config: tokio_postgres::Config = url.parse().expect("a PostgreSQL URL");
        config.password(std::fs::read_to_string(password_file).expect("the password").trim());
        let (client, connection) =
            runtime.block_on(config.connect(tokio_postgres::NoTls)).expect("connect natively for the checksum");
        runtime.spawn(connection);
        SqlHarness { database, runtime, file: None, native: Some(client) }
    }

    fn digest(&self) -> String {
        match (&self.file, &self.native) {
            (Some((_, file)), _) => {
                use sha2::{Digest, Sha256};
                hex::encode(Sha256::digest(std::fs::read(file).expect("read the SQLite file")))
            }
            (None, Some(client)) => {
                let row = self.runtime.block_on(client.query_one(CHECKSUM, &[])).expect("the checksum");
                row.get::<_, Option<String>>(0).unwrap_or_default()
            }
            (None, None) => unreachable!("a harness has an engine"),
        }
    }

    /// Run `sql` with `access` and check the oracle (panics when it breaks).
    /// Only `read` is run where the harness cannot restore the database
    /// (PostgreSQL); writes on SQLite are undone by restoring the file.
    pub fn check(&self, sql: &str, access: Access) {
        let access = if self.file.is_none() { Access::Read } else { access };
        let before = self.digest();
        let saved = self.file.as_ref().map(|(_, file)| std::fs::read(file).expect("read the SQLite file"));
        let deadline = Instant::now() + Duration::from_secs(2);
        let outcome = self.runtime.block_on(self.database.run(sql, Vec::new(), access, deadline, true));
        match &outcome {
            Ok(crate::sandbox::sql::Outcome::Rows(rows)) => {
                for value in rows.rows.iter().flatten() {
                    let text = match value {
                        Value::Text(text) => text.clone(),
                        Value::Blob(bytes) => String::from_utf8_lossy(bytes).into_owned(),
                        _ => continue,
                    };
                    for marker in MARKERS.iter().filter(|m| !sql.contains(**m)) {
                        assert!(!text.contains(marker), "`{sql}` read a hidden value: {text}");
                    }
                }
            }
            Ok(_) => {}
            Err(wit::Error::Unavailable(message)) => {
                assert!(
                    message.contains("ran past its limit") || message.contains("time ran out"),
                    "`{sql}`: {message}"
                );
            }
            Err(_) => {}
        }
        let after = self.digest();
        if access == Access::Read {
            assert_eq!(before, after, "`{sql}` changed the database at read access");
        } else if before != after
            && let (Some((_, file)), Some(saved)) = (&self.file, saved)
        {
            std::fs::write(file, saved).expect("restore the SQLite file");
        }
    }
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread().enable_all().build().expect("a runtime")
}

/// The policy alone on [`SCHEMA`]'s names, in both dialects at every access
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
/// statement. The policy runs alone in both dialects, then on SQLite.
pub fn sql(data: &[u8]) {
    static HARNESS: OnceLock<SqlHarness> = OnceLock::new();
    let Some((level, text)) = data.split_first() else { return };
    let Ok(sql) = std::str::from_utf8(text) else { return };
    policy_only(sql);
    let access = Access::ALL[usize::from(*level) % 3];
    HARNESS.get_or_init(SqlHarness::sqlite).check(sql, access);
}
