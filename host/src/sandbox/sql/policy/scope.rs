//! The first pass over a statement: the names it defines and the tables it
//! reads, so that the second pass ([`super::walk`]) can resolve every
//! column reference.
//!
//! Resolution is deliberately statement-wide rather than scope by scope:
//! every binding of a name anywhere in the statement counts (an alias used
//! for `customer` in a subquery and for `artist` outside must pass as
//! both), a name counts as a column if it is a visible column of any table
//! the statement reads or a name the statement itself defines, and the
//! second pass refuses what could resolve to a hidden column or a whole
//! row with hidden columns anywhere in the statement. It refuses more than
//! PostgreSQL or SQLite would need to, never less.

use std::collections::{BTreeMap, BTreeSet};
use std::ops::ControlFlow;

use sqlparser::ast::{
    AlterTableOperation, Expr, ObjectName, ObjectNamePart, OnConflictAction, OnInsert, Query, Select, SelectItem,
    SelectItemQualifiedWildcardKind, SetExpr, Statement, TableAlias, TableFactor, TableObject, TableWithJoins, Visitor,
};

use super::allowed::allow_list;
use super::dialect::Dialect;
use super::schema::Visible;

/// What a name in FROM (a table's name or an alias) stands for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Relation {
    /// A table (or view) of the database, by lower-case name.
    Table(String),
    /// A subquery, a CTE, a function's rows, a VALUES list, a renamed
    /// table: made of expressions the policy checks where they are
    /// written. Its column names where they are known (`None`: not known).
    Derived(Option<BTreeSet<String>>),
}

/// One binding of a name: the relations it stands for together (one,
/// except for a join's alias, which stands for every table it joins).
pub(super) type Group = Vec<Relation>;

/// The names of one statement.
#[derive(Debug)]
pub(super) struct Names {
    dialect: Dialect,
    /// Alias or name (lower case) → every binding of it in the statement.
    pub(super) relations: BTreeMap<String, Vec<Group>>,
    /// Every table name the statement mentions (lower case).
    pub(super) tables: BTreeSet<String>,
    /// CTE names (lower case) → their column names, where known.
    pub(super) ctes: BTreeMap<String, Option<BTreeSet<String>>>,
    /// Column names the statement defines (lower case): output aliases,
    /// column lists, the columns of subqueries and functions' rows.
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
    /// Collect the names of `statement`, in `dialect`, over the schema
    /// `visible` (what `*` of a table stands for).
    pub(super) fn of(statement: &Statement, dialect: Dialect, visible: &Visible) -> Names {
        use sqlparser::ast::Visit;
        let mut names = Collector {
            names: Names {
                dialect,
                relations: BTreeMap::new(),
                tables: BTreeSet::new(),
                ctes: BTreeMap::new(),
                defined: BTreeSet::new(),
                relations_named: Vec::new(),
            },
            visible,
        };
        let _ = statement.visit(&mut names);
        names.names
    }

    fn bind(&mut self, name: String, group: Group) {
        let groups = self.relations.entry(name).or_default();
        if !groups.contains(&group) {
            groups.push(group);
        }
    }

    /// The columns of function `name`'s rows: those the allow-list gives
    /// it (`json_each`: key, value…), else its one column, named after
    /// `alias` if given, else after the function (PostgreSQL).
    fn function_columns(&self, name: &str, alias: Option<&str>) -> BTreeSet<String> {
        if let Some(listed) = allow_list().engine(self.dialect).columns.get(name) {
            return listed.iter().cloned().collect();
        }
        match self.dialect {
            Dialect::Postgres => BTreeSet::from([alias.unwrap_or(name).to_owned()]),
            Dialect::Sqlite => BTreeSet::new(),
        }
    }
}

/// The first pass's visitor: the names, and the schema for `*`.
struct Collector<'v> {
    names: Names,
    visible: &'v Visible,
}

impl Collector<'_> {
    /// The column names of `query`'s rows, as PostgreSQL and SQLite name
    /// them: an alias, a column's own name, a function's name, every
    /// visible column of a table `*` covers; `None` where not known.
    fn outputs(&self, query: &Query) -> Option<BTreeSet<String>> {
        self.of(&query.body)
    }

    fn of(&self, body: &SetExpr) -> Option<BTreeSet<String>> {
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
                        SelectItem::Wildcard(_) => {
                            for from in &select.from {
                                names.extend(self.star(from)?);
                            }
                        }
                        SelectItem::QualifiedWildcard(SelectItemQualifiedWildcardKind::ObjectName(name), _) => {
                            let table = last(name);
                            names.extend(self.visible.columns(&table)?.iter().cloned());
                        }
                        SelectItem::QualifiedWildcard(..) => return None,
                    }
                }
                Some(names)
            }
            SetExpr::Query(query) => self.outputs(query),
            SetExpr::SetOperation { left, .. } => self.of(left),
            SetExpr::Values(values) => {
                let width = values.rows.first().map_or(0, |row| row.content.len());
                Some((1..=width).map(|i| format!("column{i}")).collect())
            }
            _ => None,
        }
    }

    /// The columns `*` covers of one FROM item with its joins.
    fn star(&self, from: &TableWithJoins) -> Option<BTreeSet<String>> {
        let mut names = self.factor(&from.relation)?;
        for join in &from.joins {
            names.extend(self.factor(&join.relation)?);
        }
        Some(names)
    }

    fn factor(&self, factor: &TableFactor) -> Option<BTreeSet<String>> {
        match factor {
            TableFactor::Table { name, args: None, alias, .. }
                if alias.as_ref().is_none_or(|a| a.columns.is_empty()) =>
            {
                self.visible.columns(&last(name)).cloned()
            }
            TableFactor::Derived { subquery, alias, .. } => match alias.as_ref().filter(|a| !a.columns.is_empty()) {
                Some(alias) => Some(alias.columns.iter().map(|c| c.name.value.to_lowercase()).collect()),
                None => self.outputs(subquery),
            },
            TableFactor::NestedJoin { table_with_joins, .. } => self.star(table_with_joins),
            _ => None,
        }
    }

    /// What a FROM item stands for when an alias names it whole.
    fn group(&self, factor: &TableFactor) -> Group {
        match factor {
            TableFactor::Table { name, args: None, .. } => vec![Relation::Table(last(name))],
            TableFactor::NestedJoin { table_with_joins, .. } => {
                let mut all = self.group(&table_with_joins.relation);
                for join in &table_with_joins.joins {
                    all.extend(self.group(&join.relation));
                }
                all
            }
            other => vec![Relation::Derived(self.factor(other))],
        }
    }

    /// Bind `alias` to `group`; its column list renames the columns.
    fn alias(&mut self, alias: Option<&TableAlias>, group: Group) {
        let Some(alias) = alias else { return };
        let renamed: BTreeSet<String> = alias.columns.iter().map(|c| c.name.value.to_lowercase()).collect();
        self.names.defined.extend(renamed.iter().cloned());
        let group = group
            .into_iter()
            .map(|relation| match relation {
                // PostgreSQL renames the first columns and keeps the others' names.
                Relation::Derived(Some(columns)) => {
                    self.names.defined.extend(columns.iter().cloned());
                    Relation::Derived(Some(columns.union(&renamed).cloned().collect()))
                }
                other => other,
            })
            .collect();
        self.names.bind(alias.name.value.to_lowercase(), group);
    }
}

impl Visitor for Collector<'_> {
    type Break = ();

    fn pre_visit_query(&mut self, query: &Query) -> ControlFlow<()> {
        for cte in query.with.iter().flat_map(|with| &with.cte_tables) {
            let name = cte.alias.name.value.to_lowercase();
            let columns: BTreeSet<String> = cte.alias.columns.iter().map(|c| c.name.value.to_lowercase()).collect();
            let columns = if columns.is_empty() { self.outputs(&cte.query) } else { Some(columns) };
            self.names.defined.extend(columns.iter().flatten().cloned());
            self.names.ctes.insert(name.clone(), columns.clone());
            self.names.bind(name, vec![Relation::Derived(columns)]);
        }
        ControlFlow::Continue(())
    }

    fn pre_visit_select(&mut self, select: &Select) -> ControlFlow<()> {
        for item in &select.projection {
            match item {
                SelectItem::ExprWithAlias { alias, .. } => {
                    self.names.defined.insert(alias.value.to_lowercase());
                }
                SelectItem::ExprWithAliases { aliases, .. } => {
                    self.names.defined.extend(aliases.iter().map(|a| a.value.to_lowercase()));
                }
                _ => {}
            }
        }
        ControlFlow::Continue(())
    }

    /// Every relation named, DDL targets among them.
    fn pre_visit_relation(&mut self, relation: &ObjectName) -> ControlFlow<()> {
        self.names.tables.insert(last(relation));
        ControlFlow::Continue(())
    }

    fn pre_visit_table_factor(&mut self, factor: &TableFactor) -> ControlFlow<()> {
        match factor {
            TableFactor::Table { name, alias, args: None, .. } => {
                self.names.relations_named.push(name.clone());
                let table = last(name);
                self.names.tables.insert(table.clone());
                self.names.bind(table.clone(), vec![Relation::Table(table.clone())]);
                // `t AS a(x, y)` renames the table's columns (the second
                // pass refuses it on a table with hidden columns).
                let renamed = alias.as_ref().is_some_and(|a| !a.columns.is_empty());
                let group = match renamed {
                    true => vec![Relation::Derived(self.visible.columns(&table).cloned())],
                    false => vec![Relation::Table(table)],
                };
                self.alias(alias.as_ref(), group);
            }
            // A function's rows: the columns the allow-list names, or one
            // named after its alias or itself.
            TableFactor::Table { alias, args: Some(_), .. }
            | TableFactor::Function { alias, .. }
            | TableFactor::UNNEST { alias, .. }
            | TableFactor::TableFunction { alias, .. } => {
                let alias_name = alias.as_ref().map(|a| a.name.value.to_lowercase());
                let columns = match factor {
                    TableFactor::Table { name, .. } | TableFactor::Function { name, .. } => {
                        self.names.function_columns(&last(name), alias_name.as_deref())
                    }
                    TableFactor::UNNEST { .. } => self.names.function_columns("unnest", alias_name.as_deref()),
                    _ => BTreeSet::new(),
                };
                self.names.defined.extend(columns.iter().cloned());
                self.alias(alias.as_ref(), vec![Relation::Derived(Some(columns))]);
            }
            TableFactor::Derived { alias, .. } | TableFactor::NestedJoin { alias, .. } => {
                let group = self.group(factor);
                self.alias(alias.as_ref(), group);
            }
            _ => {}
        }
        ControlFlow::Continue(())
    }

    fn pre_visit_statement(&mut self, statement: &Statement) -> ControlFlow<()> {
        match statement {
            Statement::Insert(insert) => {
                if let TableObject::TableName(name) = &insert.table {
                    self.names.relations_named.push(name.clone());
                    let table = last(name);
                    self.names.tables.insert(table.clone());
                    self.names.bind(table.clone(), vec![Relation::Table(table.clone())]);
                    if let Some(alias) = &insert.table_alias {
                        self.names.bind(alias.alias.value.to_lowercase(), vec![Relation::Table(table.clone())]);
                    }
                    // `ON CONFLICT … DO UPDATE SET x = excluded.x`: the row proposed.
                    if let Some(OnInsert::OnConflict(conflict)) = &insert.on
                        && let OnConflictAction::DoUpdate(_) = conflict.action
                    {
                        self.names.bind("excluded".into(), vec![Relation::Table(table)]);
                    }
                }
            }
            // The columns a statement creates are its own names.
            Statement::CreateTable(create) => {
                self.names.defined.extend(create.columns.iter().map(|c| c.name.value.to_lowercase()));
            }
            Statement::AlterTable(alter) => {
                for operation in &alter.operations {
                    if let AlterTableOperation::AddColumn { column_def, .. } = operation {
                        self.names.defined.insert(column_def.name.value.to_lowercase());
                    }
                }
            }
            _ => {}
        }
        ControlFlow::Continue(())
    }
}
