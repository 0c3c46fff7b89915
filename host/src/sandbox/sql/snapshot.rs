//! The schema as the host last read it, in the two shapes it is used in:
//! the tables an agent is shown (hidden parts left out, the operator's
//! notes filled in) and the names the policy resolves columns against.
//! Also what the engine said of its own privileges over what is hidden.

use std::sync::Arc;
use std::time::Instant;

use schemars::JsonSchema;
use serde::Serialize;

use super::engine::RawSchema;
use super::policy::Visible;
use super::settings::DatabaseSettings;
use crate::contract::database::quiver::plugin::sql::{ColumnInfo, TableInfo};

/// One reading of the schema.
#[derive(Debug, Clone)]
pub(crate) struct Snapshot {
    /// When it was read.
    pub(crate) at: Instant,
    /// The tables as agents see them, sorted by name.
    pub(crate) tables: Arc<Vec<TableInfo>>,
    /// The names the policy allows.
    pub(crate) visible: Arc<Visible>,
}

impl Snapshot {
    /// `raw` as `settings` expose it.
    pub(crate) fn new(settings: &DatabaseSettings, raw: RawSchema) -> Snapshot {
        let visible = Visible::new(
            &raw.name,
            raw.tables.iter().map(|t| (t.name.as_str(), t.columns.iter().map(|c| c.name.as_str()).collect())),
            &settings.hidden,
        );
        Snapshot { at: Instant::now(), tables: Arc::new(expose(settings, raw)), visible: Arc::new(visible) }
    }
}

/// Apply what is hidden and what the operator wrote.
fn expose(settings: &DatabaseSettings, raw: RawSchema) -> Vec<TableInfo> {
    let hidden = &settings.hidden;
    let mut tables: Vec<TableInfo> = raw
        .tables
        .into_iter()
        .filter(|t| !hidden.table(&t.name))
        .map(|t| {
            let columns: Vec<ColumnInfo> = t
                .columns
                .into_iter()
                .filter(|c| !hidden.column(&t.name, &c.name))
                .map(|c| ColumnInfo {
                    description: settings.column_note(&t.name, &c.name).map(str::to_owned).unwrap_or(c.comment),
                    references: c.references.filter(|r| {
                        let (table, column) = r.split_once('.').unwrap_or((r, ""));
                        !hidden.table(table) && !hidden.column(table, column)
                    }),
                    name: c.name,
                    data_type: c.data_type,
                    nullable: c.nullable,
                })
                .collect();
            TableInfo {
                description: settings.table_note(&t.name).map(str::to_owned).unwrap_or(t.comment),
                primary_key: t.primary_key.into_iter().filter(|k| columns.iter().any(|c| &c.name == k)).collect(),
                columns,
                row_estimate: t.row_estimate,
                name: t.name,
            }
        })
        .collect();
    tables.sort_by(|a, b| a.name.cmp(&b.name));
    tables
}

/// Whether the role the host connects as can read what the operator hid:
/// the database's own privileges are the second layer behind the policy.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum Privileges {
    /// Not connected yet: checked with the first reading of the schema
    /// (no connection is made just for it).
    #[default]
    NotCheckedYet,
    /// The role cannot read anything hidden (or nothing is hidden): the
    /// database refuses it too.
    Enforced,
    /// The role can read these hidden tables or columns: only the policy
    /// keeps them hidden.
    Readable {
        /// `table` or `table.column`.
        hidden: Vec<String>,
        /// What to do about it.
        advice: String,
    },
    /// The engine has no privileges to check (SQLite: its authorizer is
    /// the second layer).
    NotApplicable,
}

impl Privileges {
    /// The state after a check that found `readable`.
    pub(crate) fn checked(readable: &[String]) -> Privileges {
        if readable.is_empty() {
            return Privileges::Enforced;
        }
        Privileges::Readable {
            hidden: readable.to_vec(),
            advice: "grant the role SELECT on the visible columns only (docs/src/security.md: column privileges)"
                .into(),
        }
    }
}
