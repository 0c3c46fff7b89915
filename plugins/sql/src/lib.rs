//! Quiver's generic database adapter: one component for every configured
//! database, SQLite or PostgreSQL.
//!
//! It holds no connection and no credential: the host binds each instance
//! to one `[databases.NAME]` section, answers `tables()` with the schema it
//! exposes (hidden tables and columns left out, the operator's descriptions
//! filled in), and checks every statement against its policy before the
//! database sees it. This adapter only shapes those answers for models.

use quiver_sdk::ToolError;
use quiver_sdk::database::{Column, DescribeTable, Query, Table, TableSchema};

fn schema(table: quiver_sdk::sql::TableInfo) -> TableSchema {
    TableSchema {
        name: table.name,
        description: table.description,
        columns: table
            .columns
            .into_iter()
            .map(|c| Column {
                name: c.name,
                data_type: c.data_type,
                nullable: c.nullable,
                description: c.description,
                references: c.references,
            })
            .collect(),
        primary_key: table.primary_key,
        row_estimate: table.row_estimate,
    }
}

/// A SQL database: list its tables, describe one, run a statement.
#[quiver_sdk::plugin(kind = "database", name = "sql", categories = ["database"])]
mod sql {
    use super::*;

    /// List the tables and views, with what each holds and its size.
    pub fn list_tables() -> Result<Vec<Table>, ToolError> {
        Ok(quiver_sdk::sql::tables()?
            .into_iter()
            .map(|t| Table {
                column_count: t.columns.len() as u32,
                name: t.name,
                description: t.description,
                row_estimate: t.row_estimate,
            })
            .collect())
    }

    /// Describe one table: its columns, their types and meaning, its keys.
    pub fn describe_table(input: DescribeTable) -> Result<TableSchema, ToolError> {
        let tables = quiver_sdk::sql::tables()?;
        let known: Vec<String> = tables.iter().map(|t| t.name.clone()).collect();
        tables
            .into_iter()
            .find(|t| t.name.eq_ignore_ascii_case(&input.table))
            .map(schema)
            .ok_or_else(|| ToolError::not_found(format!("no table `{}`; tables: {}", input.table, known.join(", "))))
    }

    /// Run one SQL statement and return its rows.
    pub fn query(input: Query) -> Result<quiver_sdk::sql::Rows, ToolError> {
        let mut rows = quiver_sdk::sql::query(&input.sql, &[])?;
        if rows.rows.len() > input.max_rows as usize {
            rows.rows.truncate(input.max_rows as usize);
            rows.truncated = true;
        }
        Ok(rows)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schemas_keep_keys_and_references() {
        let info = quiver_sdk::sql::TableInfo {
            name: "track".into(),
            description: "Songs".into(),
            columns: vec![quiver_sdk::sql::ColumnInfo {
                name: "album_id".into(),
                data_type: "INTEGER".into(),
                nullable: true,
                description: String::new(),
                references: Some("album.album_id".into()),
            }],
            primary_key: vec!["track_id".into()],
            row_estimate: Some(3503),
        };
        let table = schema(info);
        assert_eq!(table.columns[0].references.as_deref(), Some("album.album_id"));
        assert_eq!(table.row_estimate, Some(3503));
    }
}
