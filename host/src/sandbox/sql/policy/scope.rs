//! The first pass over a statement: the names it defines and the tables it
//! reads, so that the second pass ([`super::walk`]) can resolve every
//! column reference.
//!
//! Resolution is deliberately statement-wide rather than scope by scope:
//! a name counts as a column of the statement if it is a visible column of
//! any table the statement reads, or a name the statement itself defines
//! (an output alias, a CTE or derived table's column list, a function
//! table's alias); the second pass refuses what could resolve to a hidden
//! column or a whole row with hidden columns anywhere in the statement. It
//! refuses more than PostgreSQL or SQLite would need to, never less.

use std::collections::{BTreeMap, BTreeSet};
use std::ops::ControlFlow;

use sqlparser::ast::{
    AlterTableOperation, ObjectName, ObjectNamePart, OnConflictAction, OnInsert, Query, Select, SelectItem, Statement,
    TableAlias, TableFactor, TableObject, Visitor,
};

use super::Dialect;
use super::allowed::allow_list;

/// What a name in FROM (a table's name or an alias) stands for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Relation {
    /// A table (or view) of the database, by lower-case name; or a CTE of
    /// that name (a reference is checked as both).
    Table(String),
    /// A subquery, a CTE, a function's rows, a VALUES list: made of
    /// expressions the policy checks where they are written.
    Derived,
}

/// The names of one statement.
#[derive(Debug)]
pub(super) struct Names {
    dialect: Dialect,
    /// Alias or name (lower case) → what it stands for.
    pub(super) relations: BTreeMap<String, Relation>,
    /// Every table name the statement mentions (lower case).
    pub(super) tables: BTreeSet<String>,
    /// CTE names (lower case).
    pub(super) ctes: BTreeSet<String>,
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

fn last(name: &ObjectName) -> String {
    parts(name).pop().unwrap_or_default()
}

impl Names {
    /// Collect the names of `statement`, in `dialect`.
    pub(super) fn of(statement: &Statement, dialect: Dialect) -> Names {
        use sqlparser::ast::Visit;
        let mut names = Names {
            dialect,
            relations: BTreeMap::new(),
            tables: BTreeSet::new(),
            ctes: BTreeSet::new(),
            defined: BTreeSet::new(),
            relations_named: Vec::new(),
        };
        let _ = statement.visit(&mut names);
        names
    }

    /// The columns of function `name`'s rows: its own name (PostgreSQL's
    /// single-column functions) and those the allow-list gives it.
    fn function_columns(&mut self, name: &str) {
        if self.dialect == Dialect::Postgres {
            self.defined.insert(name.to_owned());
        }
        if let Some(columns) = allow_list().engine(self.dialect).columns.get(name) {
            self.defined.extend(columns.iter().cloned());
        }
    }

    fn alias(&mut self, alias: Option<&TableAlias>, relation: Relation) {
        if let Some(alias) = alias {
            self.relations.insert(alias.name.value.to_lowercase(), relation);
            self.defined.extend(alias.columns.iter().map(|c| c.name.value.to_lowercase()));
        }
    }

    /// A table's alias may stand for the table, and for the table only.
    fn table(&mut self, name: &ObjectName, alias: Option<&TableAlias>) {
        let table = last(name);
        self.tables.insert(table.clone());
        self.relations.insert(table.clone(), Relation::Table(table.clone()));
        self.alias(alias, Relation::Table(table));
    }
}

impl Visitor for Names {
    type Break = ();

    fn pre_visit_query(&mut self, query: &Query) -> ControlFlow<()> {
        for cte in query.with.iter().flat_map(|with| &with.cte_tables) {
            let name = cte.alias.name.value.to_lowercase();
            self.ctes.insert(name.clone());
            self.relations.entry(name).or_insert(Relation::Derived);
            self.defined.extend(cte.alias.columns.iter().map(|c| c.name.value.to_lowercase()));
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
                self.table(name, alias.as_ref())
            }
            // A function's rows: its alias names the rows and, for a
            // function of one column, that column.
            TableFactor::Table { alias, args: Some(_), .. }
            | TableFactor::Function { alias, .. }
            | TableFactor::UNNEST { alias, .. }
            | TableFactor::TableFunction { alias, .. } => {
                match factor {
                    TableFactor::Table { name, .. } | TableFactor::Function { name, .. } => {
                        self.function_columns(&last(name))
                    }
                    TableFactor::UNNEST { .. } => self.function_columns("unnest"),
                    _ => {}
                }
                if let Some(alias) = alias {
                    self.defined.insert(alias.name.value.to_lowercase());
                }
                self.alias(alias.as_ref(), Relation::Derived);
            }
            TableFactor::Derived { alias, .. } | TableFactor::NestedJoin { alias, .. } => {
                self.alias(alias.as_ref(), Relation::Derived)
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
                    self.relations.insert(table.clone(), Relation::Table(table.clone()));
                    if let Some(alias) = &insert.table_alias {
                        self.relations.insert(alias.alias.value.to_lowercase(), Relation::Table(table.clone()));
                    }
                    // `ON CONFLICT … DO UPDATE SET x = excluded.x`: the row proposed.
                    if let Some(OnInsert::OnConflict(conflict)) = &insert.on
                        && let OnConflictAction::DoUpdate(_) = conflict.action
                    {
                        self.relations.insert("excluded".into(), Relation::Table(table));
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
