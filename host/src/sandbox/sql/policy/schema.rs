//! What the policy checks names against: the operator's hidden tables and
//! columns, and the schema an agent may see (the schema as last read, minus
//! what is hidden). Every column reference must resolve against the
//! visible schema; a name it does not know is refused, not guessed.

use std::collections::{BTreeMap, BTreeSet};

/// Tables and columns that must never be listed or queried, by lower-case
/// name.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Hidden {
    tables: BTreeSet<String>,
    /// Table → its hidden columns.
    columns: BTreeMap<String, BTreeSet<String>>,
}

impl Hidden {
    /// Parse entries `table` (the whole table) or `table.column`.
    pub fn parse(entries: &[String]) -> Result<Hidden, String> {
        let mut hidden = Hidden::default();
        for entry in entries {
            let entry = entry.trim();
            match entry.split_once('.') {
                None if !entry.is_empty() => {
                    hidden.tables.insert(entry.to_lowercase());
                }
                Some((table, column)) if !table.is_empty() && !column.is_empty() && !column.contains('.') => {
                    hidden.columns.entry(table.to_lowercase()).or_default().insert(column.to_lowercase());
                }
                _ => return Err(format!("hidden entry `{entry}`: write `table` or `table.column`")),
            }
        }
        Ok(hidden)
    }

    /// Whether table `name` is hidden.
    pub fn table(&self, name: &str) -> bool {
        self.tables.contains(&name.to_lowercase())
    }

    /// Whether column `column` of `table` is hidden.
    pub fn column(&self, table: &str, column: &str) -> bool {
        self.columns.get(&table.to_lowercase()).is_some_and(|c| c.contains(&column.to_lowercase()))
    }

    /// Whether `table` has hidden columns.
    pub fn has_columns(&self, table: &str) -> bool {
        self.columns.contains_key(&table.to_lowercase())
    }

    /// The hidden tables, and each hidden column as (table, column).
    pub fn entries(&self) -> (impl Iterator<Item = &str>, impl Iterator<Item = (&str, &str)>) {
        let columns = self.columns.iter().flat_map(|(t, cs)| cs.iter().map(move |c| (t.as_str(), c.as_str())));
        (self.tables.iter().map(String::as_str), columns)
    }
}

/// The tables and columns an agent may see, by lower-case name: the schema
/// as last read from the database, with what is hidden left out.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Visible {
    /// The schema the tables are in (`main` for SQLite, PostgreSQL's
    /// `current_schema()`).
    schema: String,
    tables: BTreeMap<String, BTreeSet<String>>,
}

impl Visible {
    /// The tables of `schema` as read (name and column names), less `hidden`.
    pub fn new<'a>(
        schema: &str,
        tables: impl IntoIterator<Item = (&'a str, Vec<&'a str>)>,
        hidden: &Hidden,
    ) -> Visible {
        let tables = tables
            .into_iter()
            .filter(|(table, _)| !hidden.table(table))
            .map(|(table, columns)| {
                let columns = columns.into_iter().filter(|c| !hidden.column(table, c)).map(str::to_lowercase);
                (table.to_lowercase(), columns.collect())
            })
            .collect();
        Visible { schema: schema.to_lowercase(), tables }
    }

    /// The schema's name, lower case.
    pub fn schema(&self) -> &str {
        &self.schema
    }

    /// Whether table `name` is visible.
    pub fn table(&self, name: &str) -> bool {
        self.tables.contains_key(&name.to_lowercase())
    }

    /// The visible columns of `table`, if it is visible.
    pub fn columns(&self, table: &str) -> Option<&BTreeSet<String>> {
        self.tables.get(&table.to_lowercase())
    }

    /// Whether `column` of `table` is visible.
    pub fn column(&self, table: &str, column: &str) -> bool {
        self.tables.get(&table.to_lowercase()).is_some_and(|c| c.contains(&column.to_lowercase()))
    }
}
