//! Types of the `database` interface, for plugins of kind `database`.
//!
//! A database adapter's module defines exactly three actions with these
//! signatures; the [`plugin`](crate::plugin) attribute wires them to both
//! the `database` export and the generic `invoke`:
//!
//! ```ignore
//! pub fn list_tables() -> Result<Vec<Table>, ToolError>;
//! pub fn describe_table(input: DescribeTable) -> Result<TableSchema, ToolError>;
//! pub fn query(input: Query) -> Result<QueryResult, ToolError>;
//! ```

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A table (or view) as listed by `list_tables`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Table {
    /// Table name as it is written in SQL.
    pub name: String,
    /// One line on what the table holds; left out when there is none.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
    /// Number of columns.
    pub column_count: u32,
    /// Rows, as the database estimates them cheaply; absent if unknown.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub row_estimate: Option<u64>,
}

/// One column of a table.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Column {
    /// Column name as it is written in SQL.
    pub name: String,
    /// Declared type, e.g. `INTEGER` or `varchar(64)`.
    pub data_type: String,
    /// Whether the column accepts NULL.
    pub nullable: bool,
    /// What the column holds; left out when there is none.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
    /// For a foreign key: the `table.column` it references.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub references: Option<String>,
}

/// The full schema of one table.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TableSchema {
    /// Table name.
    pub name: String,
    /// What the table holds; left out when there is none.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
    /// The columns, in declaration order.
    pub columns: Vec<Column>,
    /// Names of the primary-key columns, if any.
    pub primary_key: Vec<String>,
    /// Rows, as the database estimates them cheaply; absent if unknown.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub row_estimate: Option<u64>,
}

/// Input of `describe_table`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DescribeTable {
    /// Name of the table, as returned by `list_tables`.
    pub table: String,
}

/// Input of `query`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Query {
    /// One SQL statement: a query, or a change where the database grants write access.
    pub sql: String,
    /// Return at most this many rows (default 100).
    #[serde(default = "default_max_rows")]
    #[schemars(range(min = 1, max = 10000))]
    pub max_rows: u32,
}

fn default_max_rows() -> u32 {
    100
}

/// A result set as models see it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct QueryResult {
    /// Column names, in order.
    pub columns: Vec<String>,
    /// The rows: numbers, strings and `null`; blobs as hex strings.
    pub rows: Vec<Vec<serde_json::Value>>,
    /// True when more rows matched than were returned.
    pub truncated: bool,
}
