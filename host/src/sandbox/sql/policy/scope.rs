//! The first pass over a statement: the names it defines and the tables it
//! reads, so that the second pass ([`super::walk`]) can resolve every
//! column reference.
//!
//! Resolution is deliberately statement-wide rather than scope by scope:
//! every relation a name is bound to anywhere in the statement counts (an
//! alias used for `customer` in a subquery and for `artist` outside is
//! checked as both), a name counts as a column if it is a visible column of
//! any table the statement reads or a name the statement defines, and the
//! second pass refuses what could resolve to a hidden column or a whole row
//! with hidden columns anywhere in the statement. It refuses more than
//! PostgreSQL or SQLite would need to, never less.

use std::collections::{BTreeMap, BTreeSet};
use std::ops::ControlFlow;

use sqlparser::ast::{
    AlterTableOperation, Expr, ObjectName, ObjectNamePart, OnConflictAction, OnInsert, Query, Select, SelectItem,
    SetExpr, Statement, TableAlias, TableFactor, TableObject, TableWithJoins, Visitor,
};

use super::Dialect;
use super::allowed::allow_list;

/// What a name in FROM (a table's name or an alias) stands for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Relation {
    /// A table (or view) of the database, by lower-case name (a reference
    /// that may also be to a CTE of that name is checked as both).
    Table(String),
    /// A subquery, a CTE, a function's rows, a VALUES list: made of
    /// expressions the policy checks where they are written. Its column
    /// names where they are known (`None`: a `*` made them).
    Derived(Option<BTreeSet<String>>),
}

/// The names of one statement.
#[derive(Debug)]
pub(super) struct Names {
    dialect: Dialect,
    /// Alias or name (lower case) → every relation it is bound to.
    pub(super) relations: BTreeMap<String, Vec<Relation>>,
    /// Every table name the statement mentions (lower case).
    pub(super) tables: BTreeSet<String>,
    /// CTE names (lower case) → their column names, where known.
    pub(super) ctes: BTreeMap<String, Option<BTreeSet<String>>>,
    /// Column names the statement defines (lower case).
    pub(super) defined: BTreeSet<String>,
    /// The tables read or written (not functions in FROM), as written:
    /// checked first, so that a refusal names the table before its columns.
    pub(super) relations_named: Vec<ObjectName>,
}

/// The lower-case parts of an object name.
pub(super) fn parts(name: &ObjectName) -> Vec<String> {
    name.0
        .iter()
        .map(|part| match part {
            ObjectNamePart::Identifier(ident) => ident.value.to_lowercase(),
            other => other.to_string().to_lowercase(),
        })
        .collect()
}

pub(super) fn last(name: &ObjectName) -> String {
    parts(name).pop().unwrap_or_default()
}

/// The column names of `query`'s rows, as PostgreSQL and SQLite name them:
/// an alias, a column's own name, a function's name; `None` where a `*`
/// makes them.
pub(super) fn outputs(query: &Query) -> Option<BTreeSet<String>> {
    fn of(body: &SetExpr) -> Option<BTreeSet<String>> {
        match body {
            SetExpr::Select(select) => {
                let mut names = BTreeSet::new();
                for item in &select.projection {
                    match item {
                        SelectItem::ExprWithAlias { alias, .. } => {
                            names.insert(alias.value.to_lowercase());
                        }
                        SelectItem::ExprWithAliases { aliases, .. } => {
                            names.extend(aliases.iter().map(|a| a.value.to_lowercase()));
                        }
                        SelectItem::UnnamedExpr(expr) => names.extend(expr_name(expr)),
                        SelectItem::Wildcard(_) | SelectItem::QualifiedWildcard(..) => return None,
                    }
                }
                Some(names)
            }
            SetExpr::Query(query) => outputs(query),
            SetExpr::SetOperation { left, .. } => of(left),
            SetExpr::Values(values) => {
                let width = values.rows.first().map_or(0, |row| row.content.len());
                Some((1..=width).map(|i| format!("column{i}")).collect())
            }
            _ => None,
        }
    }
    of(&query.body)
}

/// The name an unaliased select item's column gets.
fn expr_name(expr: &Expr) -> Option<String> {
    match expr {
        Expr::Identifier(ident) => Some(ident.value.to_lowercase()),
        Expr::CompoundIdentifier(idents) => idents.last().map(|i| i.value.to_lowercase()),
        Expr::Function(function) => Some(last(&function.name)),
        Expr::Cast { expr, .. } | Expr::Nested(expr) => expr_name(expr),
        _ => None,
    }
}

impl Names {
    /// Collect the names of `statement`, in `dialect`.
    pub(super) fn of(statement: &Statement, dialect: Dialect) -> Names {
        use sqlparser::ast::Visit;
        let mut names = Names {
            dialect,
            relations: BTreeMap::new(),
            tables: BTreeSet::new(),
            ctes: BTreeMap::new(),
            defined: BTreeSet::new(),
            relations_named: Vec::new(),
        };
        let _ = statement.visit(&mut names);
        names
    }

    fn bind(&mut self, name: String, relation: Relation) {
        let bindings = self.relations.entry(name).or_default();
        if !bindings.contains(&relation) {
            bindings.push(relation);
        }
    }

    /// The columns of function `name`'s rows: its own name (PostgreSQL's
    /// single-column functions) and those the allow-list gives it.
    fn function_columns(&self, name: &str) -> BTreeSet<String> {
        let mut columns = BTreeSet::new();
        if self.dialect == Dialect::Postgres {
            columns.insert(name.to_owned());
        }
        if let Some(listed) = allow_list().engine(self.dialect).columns.get(name) {
            columns.extend(listed.iter().cloned());
        }
        columns
    }

    /// Bind `alias` to `relation`; its column list renames the columns.
    fn alias(&mut self, alias: Option<&TableAlias>, relation: Relation) {
        let Some(alias) = alias else { return };
        let renamed: BTreeSet<String> = alias.columns.iter().map(|c| c.name.value.to_lowercase()).collect();
        self.defined.extend(renamed.iter().cloned());
        // PostgreSQL renames the first columns and keeps the others' names.
        let relation = match relation {
            Relation::Derived(Some(columns)) if !renamed.is_empty() => {
                Relation::Derived(Some(columns.union(&renamed).cloned().collect()))
            }
            other => other,
        };
        self.bind(alias.name.value.to_lowercase(), relation);
    }

    /// What a FROM item stands for when an alias names it whole.
    fn bindings(&self, factor: &TableFactor) -> Vec<Relation> {
        match factor {
            TableFactor::Table { name, args: None, .. } => vec![Relation::Table(last(name))],
            TableFactor::Derived { subquery, alias, .. } => {
                vec![Relation::Derived(alias.as_ref().filter(|a| !a.columns.is_empty()).map_or_else(
                    || outputs(subquery),
                    |a| Some(a.columns.iter().map(|c| c.name.value.to_lowercase()).collect()),
                ))]
            }
            TableFactor::NestedJoin { table_with_joins, .. } => self.joined(table_with_joins),
            _ => vec![Relation::Derived(None)],
        }
    }

    fn joined(&self, from: &TableWithJoins) -> Vec<Relation> {
        let mut all = self.bindings(&from.relation);
        for join in &from.joins {
            all.extend(self.bindings(&join.relation));
        }
        all
    }
}

impl Visitor for Names {
    type Break = ();

    fn pre_visit_query(&mut self, query: &Query) -> ControlFlow<()> {
        for cte in query.with.iter().flat_map(|with| &with.cte_tables) {
            let name = cte.alias.name.value.to_lowercase();
            let columns: BTreeSet<String> = cte.alias.columns.iter().map(|c| c.name.value.to_lowercase()).collect();
            self.defined.extend(columns.iter().cloned());
            let columns = if columns.is_empty() { outputs(&cte.query) } else { Some(columns) };
            self.ctes.insert(name.clone(), columns.clone());
            self.bind(name, Relation::Derived(columns));
        }
        ControlFlow::Continue(())
    }

    fn pre_visit_select(&mut self, select: &Select) -> ControlFlow<()> {
        for item in &select.projection {
            match item {
                SelectItem::ExprWithAlias { alias, .. } => {
                    self.defined.insert(alias.value.to_lowercase());
                }
                SelectItem::ExprWithAliases { aliases, .. } => {
                    self.defined.extend(aliases.iter().map(|a| a.value.to_lowercase()));
                }
                _ => {}
            }
        }
        ControlFlow::Continue(())
    }

    /// Every relation named, DDL targets among them.
    fn pre_visit_relation(&mut self, relation: &ObjectName) -> ControlFlow<()> {
        self.tables.insert(last(relation));
        ControlFlow::Continue(())
    }

    fn pre_visit_table_factor(&mut self, factor: &TableFactor) -> ControlFlow<()> {
        match factor {
            TableFactor::Table { name, alias, args: None, .. } => {
                self.relations_named.push(name.clone());
                let table = last(name);
                self.tables.insert(table.clone());
                self.bind(table.clone(), Relation::Table(table.clone()));
                // `t AS a(x, y)` renames the table's columns (the second pass
                // refuses it on a table with hidden columns).
                let renamed = alias.as_ref().is_some_and(|a| !a.columns.is_empty());
                self.alias(alias.as_ref(), if renamed { Relation::Derived(None) } else { Relation::Table(table) });
            }
            // A function's rows: its alias names the rows and, for a
            // function of one column, that column.
            TableFactor::Table { alias, args: Some(_), .. }
            | TableFactor::Function { alias, .. }
            | TableFactor::UNNEST { alias, .. }
            | TableFactor::TableFunction { alias, .. } => {
                let mut columns = match factor {
                    TableFactor::Table { name, .. } | TableFactor::Function { name, .. } => {
                        self.function_columns(&last(name))
                    }
                    TableFactor::UNNEST { .. } => self.function_columns("unnest"),
                    _ => BTreeSet::new(),
                };
                if let Some(alias) = alias {
                    columns.insert(alias.name.value.to_lowercase());
                }
                self.defined.extend(columns.iter().cloned());
                self.alias(alias.as_ref(), Relation::Derived(Some(columns)));
            }
            TableFactor::Derived { alias, .. } => {
                for binding in self.bindings(factor) {
                    self.alias(alias.as_ref(), binding);
                }
            }
            // A join's alias stands for every table it joins.
            TableFactor::NestedJoin { table_with_joins, alias } => {
                for binding in self.joined(table_with_joins) {
                    self.alias(alias.as_ref(), binding);
                }
            }
            _ => {}
        }
        ControlFlow::Continue(())
    }

    fn pre_visit_statement(&mut self, statement: &Statement) -> ControlFlow<()> {
        match statement {
            Statement::Insert(insert) => {
                if let TableObject::TableName(name) = &insert.table {
                    self.relations_named.push(name.clone());
                    let table = last(name);
                    self.tables.insert(table.clone());
                    self.bind(table.clone(), Relation::Table(table.clone()));
                    if let Some(alias) = &insert.table_alias {
                        self.bind(alias.alias.value.to_lowercase(), Relation::Table(table.clone()));
                    }
                    // `ON CONFLICT … DO UPDATE SET x = excluded.x`: the row proposed.
                    if let Some(OnInsert::OnConflict(conflict)) = &insert.on
                        && let OnConflictAction::DoUpdate(_) = conflict.action
                    {
                        self.bind("excluded".into(), Relation::Table(table));
                    }
                }
            }
            // The columns a statement creates are its own names.
            Statement::CreateTable(create) => {
                self.defined.extend(create.columns.iter().map(|c| c.name.value.to_lowercase()));
            }
            Statement::AlterTable(alter) => {
                for operation in &alter.operations {
                    if let AlterTableOperation::AddColumn { column_def, .. } = operation {
                        self.defined.insert(column_def.name.value.to_lowercase());
                    }
                }
            }
            _ => {}
        }
        ControlFlow::Continue(())
    }
}
