//! Real databases for the database tests and benchmarks: the Chinook data
//! set (the same script the demo database is built from) on SQLite and on a
//! throwaway PostgreSQL server, plus tables that must stay hidden.

use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};

use crate::postgres::Postgres;

/// Tables besides Chinook's: what an operator hides. `secrets` and
/// `trésor` (a Unicode name) are hidden tables; `employee.birth_date` and
/// `customer.email` hidden columns (see [`HIDDEN`]).
pub const EXTRA: &str = "
CREATE TABLE secrets (id INTEGER PRIMARY KEY, api_key VARCHAR(64) NOT NULL);
INSERT INTO secrets VALUES (1, 'sk-live-0123456789abcdef'), (2, 'sk-live-fedcba9876543210');
CREATE TABLE \"trésor\" (id INTEGER PRIMARY KEY, note VARCHAR(64) NOT NULL);
INSERT INTO \"trésor\" VALUES (1, 'gold under the floor');
";

/// The `hidden` entries of every test database.
pub const HIDDEN: &str = r#"hidden = ["secrets", "Trésor", "employee.birth_date", "customer.email"]"#;

/// The Chinook script of the bundled demo database.
pub fn chinook() -> &'static str {
    quiver_bundled::DEMOS.iter().find(|d| d.name == "chinook").expect("the chinook demo").sql
}

/// Which engine a test database runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Engine {
    /// A SQLite file.
    Sqlite,
    /// A throwaway PostgreSQL server.
    Postgres,
}

/// Chinook (with [`EXTRA`]) on one engine, readable natively to check what
/// the host did.
pub struct TestDatabase {
    /// Its engine.
    pub engine: Engine,
    /// The folder of the SQLite file (and anything a statement might create).
    pub dir: tempfile::TempDir,
    sqlite: Option<PathBuf>,
    /// The PostgreSQL server, for [`Engine::Postgres`].
    pub server: Option<Postgres>,
}

impl TestDatabase {
    /// Chinook on `engine`.
    pub fn new(engine: Engine) -> TestDatabase {
        match engine {
            Engine::Sqlite => TestDatabase::sqlite(),
            Engine::Postgres => TestDatabase::postgres(),
        }
    }

    /// Chinook in a SQLite file, built with `rusqlite` (as the host builds its demo).
    pub fn sqlite() -> TestDatabase {
        let dir = tempfile::tempdir().expect("a temporary folder");
        let path = dir.path().join("chinook.db");
        let connection = rusqlite::Connection::open(&path).expect("create the SQLite file");
        connection.execute_batch(chinook()).expect("load Chinook");
        connection.execute_batch(EXTRA).expect("load the hidden tables");
        drop(connection);
        TestDatabase { engine: Engine::Sqlite, dir, sqlite: Some(path), server: None }
    }

    /// Chinook in a database `chinook` of a new PostgreSQL server.
    pub fn postgres() -> TestDatabase {
        let dir = tempfile::tempdir().expect("a temporary folder");
        let server = Postgres::start();
        server.create("chinook", &format!("{}\n{EXTRA}", chinook()));
        TestDatabase { engine: Engine::Postgres, dir, sqlite: None, server: Some(server) }
    }

    /// The `[databases.NAME]` section that serves it, with `extra` keys.
    pub fn section(&self, name: &str, extra: &str) -> String {
        let connection = match (&self.sqlite, &self.server) {
            (Some(path), _) => format!("url = \"sqlite:{}\"", path.display()),
            (None, Some(server)) => format!(
                "url = \"{}\"\npassword_file = \"{}\"",
                server.url("postgres", "chinook"),
                server.password_file().display()
            ),
            (None, None) => unreachable!("a test database has an engine"),
        };
        format!("[databases.{name}]\n{connection}\n{HIDDEN}\n{extra}\n")
    }

    /// The SQLite file, for [`Engine::Sqlite`].
    pub fn file(&self) -> &Path {
        self.sqlite.as_deref().expect("a SQLite database")
    }

    /// The server, for [`Engine::Postgres`].
    pub fn server(&self) -> &Postgres {
        self.server.as_ref().expect("a PostgreSQL database")
    }

    /// Run a script natively (not through Quiver), as the owner.
    pub fn execute(&self, sql: &str) {
        match self.engine {
            Engine::Sqlite => rusqlite::Connection::open(self.file())
                .and_then(|connection| connection.execute_batch(sql))
                .unwrap_or_else(|e| panic!("`{sql}`: {e}")),
            Engine::Postgres => self.server().script("chinook", sql),
        }
    }

    /// One value, read natively (not through Quiver), as text.
    pub fn value(&self, sql: &str) -> String {
        match self.engine {
            Engine::Sqlite => {
                let connection = rusqlite::Connection::open(self.file()).expect("open the SQLite file");
                connection
                    .query_row(sql, [], |row| row.get::<_, rusqlite::types::Value>(0))
                    .map(|value| match value {
                        rusqlite::types::Value::Null => String::new(),
                        rusqlite::types::Value::Integer(i) => i.to_string(),
                        rusqlite::types::Value::Real(f) => f.to_string(),
                        rusqlite::types::Value::Text(t) => t,
                        rusqlite::types::Value::Blob(b) => format!("{b:?}"),
                    })
                    .unwrap_or_else(|e| panic!("`{sql}`: {e}"))
            }
            Engine::Postgres => self.server().psql("chinook", sql),
        }
    }

    /// A digest of everything a statement could change: every table's rows
    /// and the schema; on PostgreSQL also roles, large objects, functions
    /// and saved settings; on SQLite the file's bytes and the folder's files.
    pub fn checksum(&self) -> String {
        match self.engine {
            Engine::Sqlite => {
                let mut hasher = std::hash::DefaultHasher::new();
                std::fs::read(self.file()).expect("read the SQLite file").hash(&mut hasher);
                let mut files: Vec<String> = std::fs::read_dir(self.dir.path())
                    .expect("list the folder")
                    .flatten()
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .collect();
                files.sort();
                format!("{:016x} {}", hasher.finish(), files.join(","))
            }
            Engine::Postgres => self.server().psql("chinook", PG_CHECKSUM),
        }
    }
}

/// One statement that digests a PostgreSQL database: each table's rows
/// (through `query_to_xml`, run natively here, never by an agent), columns,
/// roles, large objects, functions of `public`, per-role settings.
const PG_CHECKSUM: &str = "
SELECT md5(concat_ws('/',
  (SELECT string_agg(c.relname || '=' || (xpath('/row/d/text()', query_to_xml(
      format('SELECT md5(coalesce(string_agg(t::text, ''|'' ORDER BY t::text), '''')) AS d FROM %I t', c.relname),
      false, true, '')))[1]::text, ',' ORDER BY c.relname)
     FROM pg_class c WHERE c.relnamespace = 'public'::regnamespace AND c.relkind IN ('r', 'v', 'm')),
  (SELECT string_agg(a.attrelid::regclass || '.' || a.attname || ':' || a.atttypid::regtype, ',' ORDER BY 1)
     FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid
     WHERE c.relnamespace = 'public'::regnamespace AND a.attnum > 0 AND NOT a.attisdropped),
  (SELECT string_agg(rolname || rolsuper::text, ',' ORDER BY rolname) FROM pg_roles),
  (SELECT count(*) FROM pg_largeobject_metadata)::text,
  (SELECT coalesce(string_agg(proname, ',' ORDER BY proname), '') FROM pg_proc WHERE pronamespace = 'public'::regnamespace),
  (SELECT count(*) FROM pg_db_role_setting)::text,
  (SELECT count(*) FROM pg_class WHERE relnamespace = 'public'::regnamespace)::text))";
