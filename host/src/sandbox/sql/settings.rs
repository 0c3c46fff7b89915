//! One database's settings: a `[databases.NAME]` section as written, then
//! resolved (the URL parsed, the password read from where it is kept).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;

use super::policy::{Dialect, Hidden};
use crate::contract::Access;
use crate::error::{Error, Result};
use crate::sandbox::secrets::Secret;

/// Rows a query returns at most unless the operator says otherwise.
pub const DEFAULT_ROW_LIMIT: u32 = 1_000;
/// The most rows any database may be configured to return.
pub const MAX_ROW_LIMIT: u32 = 10_000;
/// The default statement timeout.
pub const DEFAULT_TIMEOUT_MS: u64 = 5_000;
/// The default cap on the bytes of one result.
pub const DEFAULT_RESULT_KB: u64 = 1_024;

/// A `[databases.NAME]` section as written.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawDatabase {
    /// `sqlite:PATH` (relative to the config file) or
    /// `postgres://USER@HOST:PORT/DB` (no password in it).
    pub url: String,
    /// The environment variable holding the password (PostgreSQL).
    pub password_env: Option<String>,
    /// The file holding the password (PostgreSQL).
    pub password_file: Option<PathBuf>,
    /// PEM file of the CA that signed the server's certificate (PostgreSQL
    /// over TLS; default: the system's roots). TLS itself is the URL's
    /// `sslmode`.
    pub ca_file: Option<PathBuf>,
    /// `read` (default), `write` (adds DML) or `admin` (adds DDL).
    pub access: Option<Access>,
    /// Rows a query returns at most (default 1,000; at most 10,000).
    pub row_limit: Option<u32>,
    /// Longest a statement may run, in ms (default 5,000).
    pub statement_timeout_ms: Option<u64>,
    /// Largest result, in KiB (default 1,024).
    pub max_result_kb: Option<u64>,
    /// One line on what the database holds, for Tier 1.
    pub description: Option<String>,
    /// Tables (`name`) and columns (`table.column`) never listed or queried.
    #[serde(default)]
    pub hidden: Vec<String>,
    /// Descriptions of tables and columns, shown by `list_tables` and `discover`.
    #[serde(default)]
    pub tables: BTreeMap<String, RawTableNotes>,
    /// The database adapter plugin that serves it (default: the bundled
    /// generic adapter).
    pub adapter: Option<String>,
    /// Functions of the operator's own (or built-in ones off the policy's
    /// allow-list) that statements on this database may call, by name.
    #[serde(default)]
    pub allow_functions: Vec<String>,
}

/// What the operator says of one table.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawTableNotes {
    /// One line on what the table holds.
    pub description: Option<String>,
    /// One line per column, by column name.
    #[serde(default)]
    pub columns: BTreeMap<String, String>,
}

/// Where a database is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Location {
    /// A SQLite file.
    Sqlite(PathBuf),
    /// A PostgreSQL server: the connection string without a password.
    Postgres(String),
}

impl Location {
    /// The dialect spoken there.
    pub fn dialect(&self) -> Dialect {
        match self {
            Location::Sqlite(_) => Dialect::Sqlite,
            Location::Postgres(_) => Dialect::Postgres,
        }
    }
}

/// One database's resolved settings.
#[derive(Debug, Clone)]
pub struct DatabaseSettings {
    /// Its name (the catalog name of its adapter instance).
    pub name: String,
    /// Where it is.
    pub location: Location,
    /// Its password, held by the host.
    pub password: Option<Secret>,
    /// The CA certificates the server's certificate must chain to.
    pub ca_file: Option<PathBuf>,
    /// The highest access any agent may use.
    pub access: Access,
    /// Rows a query returns at most.
    pub row_limit: u32,
    /// Longest a statement may run.
    pub statement_timeout: Duration,
    /// Largest result, in bytes.
    pub max_result_bytes: usize,
    /// One line on what it holds.
    pub description: Option<String>,
    /// What is never listed or queried.
    pub hidden: Hidden,
    /// Descriptions of tables and columns, by lower-case table name.
    pub notes: BTreeMap<String, RawTableNotes>,
    /// The adapter plugin that serves it; `None`: the bundled generic one.
    pub adapter: Option<String>,
    /// Functions the operator allows besides the policy's list.
    pub allow_functions: Vec<String>,
    /// Whether statements' text goes on their spans (`[audit] params =
    /// "traced"`, set by the host; the password redacted).
    pub trace_text: bool,
}

impl DatabaseSettings {
    /// Resolve `[databases.NAME]`; relative SQLite paths against `base`.
    pub fn resolve(name: &str, raw: &RawDatabase, base: &Path) -> Result<DatabaseSettings> {
        let section = format!("[databases.{name}]");
        let fail = |message: String| Error::config(section.clone(), message);
        if let Some(problem) = crate::contract::plugin_name_problem(name) {
            return Err(fail(problem.replace("plugin name", "database name")));
        }
        let location = if let Some(path) = raw.url.strip_prefix("sqlite:") {
            let path = Path::new(path.trim_start_matches("//"));
            Location::Sqlite(if path.is_relative() { base.join(path) } else { path.to_owned() })
        } else if raw.url.starts_with("postgres://") || raw.url.starts_with("postgresql://") {
            let config: tokio_postgres::Config =
                raw.url.parse().map_err(|e| fail(format!("url: not a PostgreSQL connection URL: {e}")))?;
            if config.get_load_balance_hosts() == tokio_postgres::config::LoadBalanceHosts::Random {
                return Err(fail("url: load_balance_hosts=random is not supported; list the hosts in order".into()));
            }
            if config.get_password().is_some() {
                return Err(fail(
                    "url: has a password in it; put the password in `password_env` or `password_file`".into(),
                ));
            }
            Location::Postgres(raw.url.clone())
        } else {
            return Err(fail(format!("url `{}`: use `sqlite:PATH` or `postgres://USER@HOST:PORT/DB`", raw.url)));
        };
        let password = match (&raw.password_env, &raw.password_file) {
            (Some(_), Some(_)) => return Err(fail("give `password_env` or `password_file`, not both".into())),
            (Some(var), None) => Some(Secret::from_env(var, &section)?),
            (None, Some(file)) => {
                let file = if file.is_relative() { base.join(file) } else { file.clone() };
                Some(Secret::from_file(&file, &section)?)
            }
            (None, None) => None,
        };
        let ca_file = match (&raw.ca_file, &location) {
            (None, _) => None,
            (Some(file), Location::Postgres(_)) => {
                Some(if file.is_relative() { base.join(file) } else { file.clone() })
            }
            (Some(_), Location::Sqlite(_)) => return Err(fail("ca_file is for PostgreSQL over TLS".into())),
        };
        let row_limit = raw.row_limit.unwrap_or(DEFAULT_ROW_LIMIT);
        if !(1..=MAX_ROW_LIMIT).contains(&row_limit) {
            return Err(fail(format!("row_limit must be 1 to {MAX_ROW_LIMIT}, not {row_limit}")));
        }
        let timeout_ms = raw.statement_timeout_ms.unwrap_or(DEFAULT_TIMEOUT_MS);
        if timeout_ms == 0 {
            return Err(fail("statement_timeout_ms must be at least 1".into()));
        }
        let result_kb = raw.max_result_kb.unwrap_or(DEFAULT_RESULT_KB);
        if result_kb == 0 {
            return Err(fail("max_result_kb must be at least 1".into()));
        }
        let hidden = Hidden::parse(&raw.hidden).map_err(fail)?;
        for name in &raw.allow_functions {
            let plain = name.chars().next().is_some_and(|c| c.is_alphabetic() || c == '_')
                && name.chars().all(|c| c.is_alphanumeric() || c == '_' || c == '$')
                && name.len() <= 63;
            if !plain {
                return Err(fail(format!(
                    "allow_functions: `{}` is not a function name (letters, digits, `_`, `$`; no schema)",
                    crate::contract::sanitize_cut(name, crate::contract::Shape::Line, 64)
                )));
            }
        }
        Ok(DatabaseSettings {
            name: name.to_owned(),
            location,
            password,
            ca_file,
            access: raw.access.unwrap_or(Access::Read),
            row_limit,
            statement_timeout: Duration::from_millis(timeout_ms),
            max_result_bytes: usize::try_from(result_kb.saturating_mul(1024)).unwrap_or(usize::MAX),
            description: raw.description.clone(),
            hidden,
            notes: raw.tables.iter().map(|(table, notes)| (table.to_lowercase(), notes.clone())).collect(),
            adapter: raw.adapter.clone(),
            allow_functions: raw.allow_functions.clone(),
            trace_text: false,
        })
    }

    /// The operator's description of `table`, if any.
    pub fn table_note(&self, table: &str) -> Option<&str> {
        self.notes.get(&table.to_lowercase()).and_then(|n| n.description.as_deref())
    }

    /// The operator's description of `column` of `table`, if any.
    pub fn column_note(&self, table: &str, column: &str) -> Option<&str> {
        let notes = self.notes.get(&table.to_lowercase())?;
        notes.columns.iter().find(|(c, _)| c.eq_ignore_ascii_case(column)).map(|(_, d)| d.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resolve(toml_text: &str) -> Result<DatabaseSettings> {
        let raw: RawDatabase = toml::from_str(toml_text).unwrap();
        DatabaseSettings::resolve("chinook", &raw, Path::new("/srv/quiver"))
    }

    #[test]
    fn sections_resolve_with_defaults() {
        let db = resolve("url = \"sqlite:data/chinook.db\"\nhidden = [\"employee.birth_date\"]").unwrap();
        assert_eq!(db.location, Location::Sqlite(PathBuf::from("/srv/quiver/data/chinook.db")));
        assert_eq!((db.access, db.row_limit), (Access::Read, DEFAULT_ROW_LIMIT));
        assert!(db.hidden.column("Employee", "BIRTH_DATE"));
        let pg = resolve("url = \"postgres://reader@127.0.0.1:5432/chinook\"\naccess = \"write\"").unwrap();
        assert_eq!(pg.location.dialect(), Dialect::Postgres);
        assert_eq!(pg.access, Access::Write);
    }

    #[test]
    fn bad_sections_name_what_to_fix() {
        let error = resolve("url = \"postgres://u:hunter2@h/db\"").unwrap_err().to_string();
        assert!(error.contains("password_env") && !error.contains("hunter2"), "{error}");
        let error = resolve("url = \"mysql://h/db\"").unwrap_err().to_string();
        assert!(error.contains("sqlite:PATH"), "{error}");
        let error = resolve("url = \"sqlite:x.db\"\nrow_limit = 20000").unwrap_err().to_string();
        assert!(error.contains("row_limit"), "{error}");
        let error = resolve("url = \"sqlite:x.db\"\npassword_env = \"QUIVER_TEST_UNSET_DB_PASSWORD\"").unwrap_err();
        assert!(error.to_string().contains("QUIVER_TEST_UNSET_DB_PASSWORD"), "{error}");
        assert!(toml::from_str::<RawDatabase>("url = \"sqlite:x\"\npassword = \"inline\"").is_err());
        let error = resolve("url = \"sqlite:x.db\"\nallow_functions = [\"pg_catalog.f; DROP\"]").unwrap_err();
        assert!(error.to_string().contains("allow_functions"), "{error}");
        let db = resolve("url = \"sqlite:x.db\"\nallow_functions = [\"my_score\"]").unwrap();
        assert_eq!(db.allow_functions, ["my_score"]);
    }
}
