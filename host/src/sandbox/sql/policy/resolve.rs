//! Name resolution for the second pass: every table the statement names,
//! every column reference, every whole-row value and every `*`, against
//! the visible schema and what the first pass ([`super::scope`]) found. A
//! name bound to several relations in the statement must pass for each.

use std::ops::ControlFlow;

use sqlparser::ast::{
    Ident, JoinConstraint, JoinOperator, ObjectName, SelectItem, SelectItemQualifiedWildcardKind, TableFactor,
    TableWithJoins,
};

use super::dialect::Dialect;
use super::scope::{Group, Relation, parts};
use super::verdict::{Effect, Refusal, Why, refuse};
use super::walk::Checker;

/// SQLite's implicit row-id columns, readable on any table.
const SQLITE_ROW_IDS: &[&str] = &["rowid", "oid", "_rowid_"];

/// SQL keywords the parser reads as names but the engines answer with
/// session or catalog information, whatever a column is called.
const SESSION_KEYWORDS: &[&str] =
    &["current_role", "current_schema", "current_user", "session_user", "user", "current_catalog", "system_user"];

/// A name the schema does not have: the database's schema may have changed
/// since it was read, so the caller reads it again before it gives up.
pub(super) fn unknown(rule: impl Into<String>, hint: impl Into<String>) -> Refusal {
    Refusal { why: Why::Unknown, ..refuse(rule, hint) }
}

pub(super) fn no_column(name: &str) -> Refusal {
    unknown(
        format!("there is no column `{name}` in the tables this statement reads"),
        "see discover for the columns (strings take single quotes)",
    )
}

fn no_column_in(column: &str, relation: &str) -> Refusal {
    unknown(format!("there is no column `{column}` in `{relation}`"), "see discover for the columns")
}

/// A hidden column is refused as if it did not exist (the schema's reading
/// cannot bring it back, so the caller does not read it again).
pub(super) fn hidden_column(name: &str) -> Refusal {
    Refusal { why: Why::Hidden, ..no_column(name) }
}

pub(super) fn no_table(name: &str) -> Refusal {
    unknown(format!("there is no table `{name}`"), "see list_tables")
}

impl Checker<'_> {
    pub(super) fn lower(ident: &Ident) -> String {
        ident.value.to_lowercase()
    }

    fn row_id(&self, name: &str) -> bool {
        self.policy.dialect == Dialect::Sqlite && SQLITE_ROW_IDS.contains(&name)
    }

    /// Whether `name` is a visible column of a table the statement reads.
    fn read_column(&self, name: &str) -> bool {
        self.names.tables.iter().any(|t| self.policy.visible.column(t, name))
    }

    /// A hidden column of a table the statement reads, named `name`.
    pub(super) fn hidden_column(&self, name: &str) -> Option<&str> {
        self.names.tables.iter().map(String::as_str).find(|t| self.policy.hidden.column(t, name))
    }

    /// What `name` (an alias or a table's name) is bound to in the statement.
    fn bindings(&self, name: &str) -> &[Group] {
        self.names.relations.get(name).map_or(&[], Vec::as_slice)
    }

    /// A table with hidden columns that `name` is bound to.
    fn bound_to_hidden(&self, name: &str) -> Option<&str> {
        self.bindings(name).iter().flatten().find_map(|binding| match binding {
            Relation::Table(table) if self.policy.hidden.has_columns(table) => Some(table.as_str()),
            _ => None,
        })
    }

    fn whole_row_refusal(table: &str) -> Refusal {
        refuse(
            format!("a whole-row reference to `{table}` would include columns that are not available"),
            "name the columns you need (qualify a column that shares the table's name: `t.column`)",
        )
    }

    /// An unqualified name: a column of a table read, a name the statement
    /// defines, or a whole row without hidden columns.
    pub(super) fn bare(&self, ident: &Ident) -> ControlFlow<Refusal> {
        let name = Self::lower(ident);
        if ident.quote_style.is_none() {
            // `DEFAULT` in VALUES and SET is a keyword the parser reads as a name.
            if name == "default" && self.effect != Effect::Read {
                return ControlFlow::Continue(());
            }
            if SESSION_KEYWORDS.contains(&name.as_str()) {
                return ControlFlow::Break(refuse(
                    format!("`{}` is session information a query may not read", ident.value),
                    "leave it out of the query",
                ));
            }
        }
        if self.hidden_column(&name).is_some() {
            return ControlFlow::Break(hidden_column(&ident.value));
        }
        if let Some(table) = self.bound_to_hidden(&name) {
            return ControlFlow::Break(Self::whole_row_refusal(table));
        }
        if self.read_column(&name)
            || self.names.defined.contains(&name)
            || self.row_id(&name)
            || self.names.relations.contains_key(&name)
        {
            return ControlFlow::Continue(());
        }
        ControlFlow::Break(no_column(&ident.value))
    }

    /// Whether `relation` (one member of a binding) has a column `x` an
    /// agent may read: a visible table's visible column, a CTE's or a
    /// subquery's own column; where those are not known, only a visible
    /// column of a table the statement reads (never a name defined elsewhere
    /// in the statement: `q.f` with no column `f` calls a function `f`).
    fn has_column(&self, relation: &Relation, x: &str) -> bool {
        match relation {
            Relation::Table(table) if self.policy.visible.table(table) => {
                self.policy.visible.column(table, x) || self.row_id(x)
            }
            Relation::Table(table) => match self.names.ctes.get(table) {
                Some(Some(columns)) => columns.contains(x),
                _ => self.read_column(x),
            },
            Relation::Derived(Some(columns)) => columns.contains(x),
            Relation::Derived(None) => self.read_column(x),
        }
    }

    /// `q.x` or `schema.q.x`: `q` a relation of the statement, `x` one of
    /// its columns, for every binding of `q` (a join's alias: a column of
    /// one of the tables it joins, hidden in none); attribute notation,
    /// `t.function`, is refused.
    pub(super) fn qualified(&self, idents: &[Ident]) -> ControlFlow<Refusal> {
        let (qualifier, column) = match idents {
            [q, x] => (q, x),
            [schema, q, x] if Self::lower(schema) == self.policy.visible.schema() => (q, x),
            _ => {
                let written = idents.iter().map(|i| i.value.as_str()).collect::<Vec<_>>().join(".");
                return ControlFlow::Break(unknown(
                    format!("`{written}` is not a column of this database's tables"),
                    "write `table.column` or `column`",
                ));
            }
        };
        let (q, x) = (Self::lower(qualifier), Self::lower(column));
        if self.policy.hidden.table(&q) {
            return ControlFlow::Break(no_table(&qualifier.value));
        }
        let groups = self.bindings(&q);
        if groups.is_empty() {
            return ControlFlow::Break(unknown(
                format!("there is no table or alias `{}` in this statement", qualifier.value),
                "qualify columns with a table or alias of FROM",
            ));
        }
        for group in groups {
            let hidden = group.iter().any(|r| matches!(r, Relation::Table(t) if self.policy.hidden.column(t, &x)));
            if hidden {
                return ControlFlow::Break(Refusal {
                    why: Why::Hidden,
                    ..no_column_in(&column.value, &qualifier.value)
                });
            }
            if !group.iter().any(|relation| self.has_column(relation, &x)) {
                return ControlFlow::Break(no_column_in(&column.value, &qualifier.value));
            }
        }
        ControlFlow::Continue(())
    }

    /// `t.*`, `ROW(t.*)`, `f(t.*)`: every column of `t`.
    pub(super) fn whole_row(&self, name: &ObjectName) -> ControlFlow<Refusal> {
        let parts = parts(name);
        let table = match parts.as_slice() {
            [t] => t,
            [schema, t] if *schema == self.policy.visible.schema() => t,
            _ => return ControlFlow::Break(no_table(&name.to_string())),
        };
        if let Some(hidden) = self.bound_to_hidden(table) {
            return ControlFlow::Break(Self::whole_row_refusal(hidden));
        }
        if !self.bindings(table).is_empty() {
            return ControlFlow::Continue(());
        }
        if self.policy.hidden.table(table) {
            return ControlFlow::Break(no_table(table));
        }
        ControlFlow::Break(unknown(
            format!("there is no table or alias `{table}` in this statement"),
            "write `alias.*` for a table of FROM",
        ))
    }

    /// The tables `from` reads directly (through nested joins), by name.
    pub(super) fn base_tables(from: &TableWithJoins) -> Vec<String> {
        fn tables(factor: &TableFactor, out: &mut Vec<String>) {
            match factor {
                TableFactor::Table { name, args: None, .. } => out.push(parts(name).pop().unwrap_or_default()),
                TableFactor::NestedJoin { table_with_joins, .. } => {
                    tables(&table_with_joins.relation, out);
                    table_with_joins.joins.iter().for_each(|j| tables(&j.relation, out));
                }
                _ => {}
            }
        }
        let mut read = Vec::new();
        tables(&from.relation, &mut read);
        from.joins.iter().for_each(|j| tables(&j.relation, &mut read));
        read
    }

    /// `*` over `from`: refused if a table read directly has hidden columns.
    pub(super) fn star(&self, from: &[TableWithJoins]) -> ControlFlow<Refusal> {
        for table in from.iter().flat_map(Self::base_tables) {
            if self.policy.hidden.has_columns(&table) {
                return ControlFlow::Break(refuse(
                    format!("`*` would include columns of `{table}` that are not available"),
                    "name the columns you need",
                ));
            }
        }
        ControlFlow::Continue(())
    }

    pub(super) fn items(&self, items: &[SelectItem], from: &[TableWithJoins]) -> ControlFlow<Refusal> {
        for item in items {
            match item {
                SelectItem::Wildcard(_) => self.star(from)?,
                SelectItem::QualifiedWildcard(SelectItemQualifiedWildcardKind::ObjectName(name), _) => {
                    let qualifier = parts(name).pop().unwrap_or_default();
                    if let Some(table) = self.bound_to_hidden(&qualifier) {
                        return ControlFlow::Break(refuse(
                            format!("`{name}.*` would include columns of `{table}` that are not available"),
                            "name the columns you need",
                        ));
                    }
                    self.whole_row(name)?
                }
                SelectItem::QualifiedWildcard(SelectItemQualifiedWildcardKind::Expr(_), _) => {
                    return ControlFlow::Break(refuse("`(expression).*` is not supported", "name the fields"));
                }
                _ => {}
            }
        }
        ControlFlow::Continue(())
    }

    /// The joins of `from`: a NATURAL join matches on every shared column,
    /// hidden ones too; a `USING` list names columns as a select list does.
    pub(super) fn joins(&self, from: &TableWithJoins) -> ControlFlow<Refusal> {
        for join in &from.joins {
            let constraint = match &join.join_operator {
                JoinOperator::Join(c)
                | JoinOperator::Inner(c)
                | JoinOperator::Left(c)
                | JoinOperator::LeftOuter(c)
                | JoinOperator::Right(c)
                | JoinOperator::RightOuter(c)
                | JoinOperator::FullOuter(c) => c,
                _ => continue,
            };
            match constraint {
                JoinConstraint::Natural
                    if Self::base_tables(from).iter().any(|t| self.policy.hidden.has_columns(t)) =>
                {
                    return ControlFlow::Break(refuse(
                        "a NATURAL join would match on columns that are not available",
                        "join with ON or USING and named columns",
                    ));
                }
                JoinConstraint::Using(columns) => {
                    for column in columns.iter().flat_map(|c| parts(c).pop()) {
                        if self.hidden_column(&column).is_some() {
                            return ControlFlow::Break(hidden_column(&column));
                        }
                    }
                }
                _ => {}
            }
        }
        ControlFlow::Continue(())
    }

    /// Columns written in `table` (INSERT, SET, ON CONFLICT, MERGE): none hidden.
    pub(super) fn written<'i>(
        &self,
        table: &str,
        columns: impl IntoIterator<Item = &'i Ident>,
    ) -> ControlFlow<Refusal> {
        for column in columns {
            if self.policy.hidden.column(table, &column.value) {
                return ControlFlow::Break(hidden_column(&column.value));
            }
        }
        ControlFlow::Continue(())
    }

    /// A table the statement reads or writes: in this database's schema,
    /// not a system catalog, not hidden, and known (or a CTE in scope; or,
    /// in DDL, a table the statement makes).
    pub(super) fn relation(&self, relation: &ObjectName) -> ControlFlow<Refusal> {
        let parts = parts(relation);
        if super::dialect::system_relation(&parts) {
            return ControlFlow::Break(refuse(
                format!("`{relation}` is a system catalog"),
                "get the schema from list_tables and discover",
            ));
        }
        let table = match parts.as_slice() {
            [table] => table,
            [schema, table] if *schema == self.policy.visible.schema() => table,
            _ => {
                return ControlFlow::Break(refuse(
                    format!("`{relation}` is not in this database's schema `{}`", self.policy.visible.schema()),
                    "see list_tables",
                ));
            }
        };
        if self.policy.hidden.table(table) {
            return ControlFlow::Break(Refusal { why: Why::Hidden, ..no_table(&relation.to_string()) });
        }
        let cte = parts.len() == 1 && self.cte_scopes.iter().any(|scope| scope.contains(table));
        if self.policy.visible.table(table) || cte {
            return ControlFlow::Continue(());
        }
        ControlFlow::Break(no_table(&relation.to_string()))
    }
}
