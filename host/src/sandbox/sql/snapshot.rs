//! The schema as the host last read it, in the two shapes it is used in:
//! the tables an agent is shown (hidden parts left out, the operator's
//! notes filled in) and the names the policy resolves columns against.
//! Also what the engine said of its own privileges over what is hidden.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Instant;

use schemars::JsonSchema;
use serde::Serialize;

use super::engine::RawSchema;
use super::policy::Visible;
use super::settings::DatabaseSettings;
use crate::contract::database::quiver::plugin::sql::{ColumnInfo, TableInfo};
use crate::contract::{Shape, sanitize_cut};

/// One reading of the schema.
#[derive(Debug, Clone)]
pub(crate) struct Snapshot {
    /// When it was read.
    pub(crate) at: Instant,
    /// The tables as agents see them, sorted by name.
    pub(crate) tables: Arc<Vec<TableInfo>>,
    /// The names the policy allows.
    pub(crate) visible: Arc<Visible>,
    /// What the host read of each shown table beyond the adapter's
    /// contract, by table name.
    pub(crate) shapes: Arc<BTreeMap<String, TableShape>>,
}

/// What the host reads of a table that the adapter's `table-info` does not
/// carry (its contract stays as it is): whether it is a view, the column
/// sets it holds unique, and its columns' defaults. Hidden columns are left
/// out, and so is a unique set that names one.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TableShape {
    /// A view (or a materialized view), not a table.
    pub view: bool,
    /// Column sets held unique besides the primary key.
    pub unique: Vec<Vec<String>>,
    /// Each column's default, as the database writes it, by column name.
    pub defaults: BTreeMap<String, String>,
}

/// Longest default expression shown.
const MAX_DEFAULT_CHARS: usize = 200;

impl Snapshot {
    /// `raw` as `settings` expose it.
    pub(crate) fn new(settings: &DatabaseSettings, raw: RawSchema) -> Snapshot {
        let visible = Visible::new(
            &raw.name,
            raw.tables.iter().map(|t| (t.name.as_str(), t.columns.iter().map(|c| c.name.as_str()).collect())),
            &settings.hidden,
        );
        let shapes = Arc::new(shapes(settings, &raw));
        Snapshot { at: Instant::now(), tables: Arc::new(expose(settings, raw)), visible: Arc::new(visible), shapes }
    }
}

/// The shapes of the tables `settings` show.
fn shapes(settings: &DatabaseSettings, raw: &RawSchema) -> BTreeMap<String, TableShape> {
    let hidden = &settings.hidden;
    let shown = |table: &str, column: &str| !hidden.column(table, column);
    raw.tables
        .iter()
        .filter(|t| !hidden.table(&t.name))
        .map(|t| {
            let shape = TableShape {
                view: t.view,
                unique: t.unique.iter().filter(|set| set.iter().all(|c| shown(&t.name, c))).cloned().collect(),
                defaults: t
                    .columns
                    .iter()
                    .filter(|c| shown(&t.name, &c.name))
                    .filter_map(|c| {
                        let default = c.default.as_deref()?;
                        Some((c.name.clone(), sanitize_cut(default, Shape::Line, MAX_DEFAULT_CHARS)))
                    })
                    .collect(),
            };
            (t.name.clone(), shape)
        })
        .collect()
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
