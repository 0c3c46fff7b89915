//! The host's SQL capability, for database adapters.
//!
//! The host owns the connection and its credentials; an adapter only sends
//! statements. Only plugins of kind `database` may import it: the host
//! refuses to load a tool or connector that does.

pub use crate::wit::quiver::plugin::sql::{ColumnInfo, Rows, TableInfo, Value};

use crate::ToolError;

/// Run a statement that returns rows, with positional parameters.
pub fn query(statement: &str, params: &[Value]) -> Result<Rows, ToolError> {
    crate::wit::quiver::plugin::sql::query(statement, params).map_err(crate::__rt::from_wit_error)
}

/// Run a statement that changes data; returns the number of rows affected.
pub fn execute(statement: &str, params: &[Value]) -> Result<u64, ToolError> {
    crate::wit::quiver::plugin::sql::execute(statement, params).map_err(crate::__rt::from_wit_error)
}

/// The tables the host exposes for this adapter's database, sorted by name:
/// hidden tables and columns are never listed, and the operator's
/// descriptions are filled in.
pub fn tables() -> Result<Vec<TableInfo>, ToolError> {
    crate::wit::quiver::plugin::sql::tables().map_err(crate::__rt::from_wit_error)
}

/// The SQL dialect of the connection: `sqlite`, `postgresql`, or `none`
/// when no database is configured.
pub fn dialect() -> String {
    crate::wit::quiver::plugin::sql::dialect()
}

/// The JSON form of one SQL value, as models see query results: numbers,
/// strings and `null`; blobs as lower-case hex strings.
pub fn value_to_json(value: &Value) -> serde_json::Value {
    match value {
        Value::Null => serde_json::Value::Null,
        Value::Integer(i) => (*i).into(),
        Value::Real(f) => {
            serde_json::Number::from_f64(*f).map(serde_json::Value::Number).unwrap_or(serde_json::Value::Null)
        }
        Value::Text(s) => s.clone().into(),
        Value::Blob(bytes) => bytes.iter().map(|b| format!("{b:02x}")).collect::<String>().into(),
    }
}

impl From<Rows> for crate::database::QueryResult {
    fn from(rows: Rows) -> Self {
        Self {
            columns: rows.columns,
            rows: rows.rows.iter().map(|row| row.iter().map(value_to_json).collect()).collect(),
            truncated: rows.truncated,
        }
    }
}
