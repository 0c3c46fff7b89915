//! The engines the policy knows, and what each calls its own catalog.

/// The SQL dialect of a connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    /// SQLite 3.
    Sqlite,
    /// PostgreSQL.
    Postgres,
}

impl Dialect {
    /// Its name, as the `sql` capability reports it.
    pub fn as_str(self) -> &'static str {
        match self {
            Dialect::Sqlite => "sqlite",
            Dialect::Postgres => "postgresql",
        }
    }
}

/// Whether `parts` (lower case) name a system catalog: its tables are the
/// unfiltered schema, hidden parts included.
pub(super) fn system_relation(parts: &[String]) -> bool {
    let first = parts.first().map(String::as_str).unwrap_or_default();
    let last = parts.last().map(String::as_str).unwrap_or_default();
    matches!(first, "pg_catalog" | "information_schema" | "pg_toast" | "pg_temp")
        || last.starts_with("pg_")
        || last.starts_with("sqlite_")
}
