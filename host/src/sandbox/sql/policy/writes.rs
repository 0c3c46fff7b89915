//! What a statement writes, checked before its parts are visited: the
//! columns DML names (never a hidden one; no positional INSERT into a table
//! with hidden columns), what `RETURNING` returns (every table the
//! statement reads, FROM and USING included), and DDL, which may change
//! tables, views and indexes only, never one with hidden columns (a rename
//! would take a hidden column out from under its name).

use std::ops::ControlFlow;

use sqlparser::ast::{
    AlterColumnOperation, AlterTableOperation, Assignment, AssignmentTarget, CascadeOption, ColumnDef, ColumnOption,
    CreateTableLikeKind, FromTable, Ident, MergeAction, MergeUpdateKind, ObjectName, ObjectType, OnConflictAction,
    OnInsert, RenameTableNameKind, Statement, TableConstraint, TableFactor, TableObject, TableWithJoins,
    UpdateTableFromKind,
};

use super::scope::{last, parts};
use super::verdict::{Refusal, refuse};
use super::walk::{Checker, table_named};

/// The column names of `names`, each one plain name: `addr.city` writes a
/// field of the column `addr` (PostgreSQL), refused.
fn plain_columns<'n>(names: impl IntoIterator<Item = &'n ObjectName>) -> Result<Vec<&'n Ident>, Refusal> {
    names
        .into_iter()
        .map(|name| match name.0.as_slice() {
            [part] => part.as_ident().ok_or_else(|| refuse(format!("`{name}` is not a column name"), "name a column")),
            _ => Err(refuse(format!("`{name}` writes a field of a column"), "write whole columns")),
        })
        .collect()
}

/// The columns an assignment list writes.
fn assigned(assignments: &[Assignment]) -> Result<Vec<&Ident>, Refusal> {
    plain_columns(assignments.iter().flat_map(|a| match &a.target {
        AssignmentTarget::ColumnName(name) => std::slice::from_ref(name),
        AssignmentTarget::Tuple(names) => names.as_slice(),
    }))
}

fn columns(names: &[ObjectName]) -> Result<Vec<&Ident>, Refusal> {
    plain_columns(names)
}

/// `result` as the visitor's flow.
fn flow<T>(result: Result<T, Refusal>) -> ControlFlow<Refusal, T> {
    match result {
        Ok(value) => ControlFlow::Continue(value),
        Err(refusal) => ControlFlow::Break(refusal),
    }
}

fn plain(names: impl IntoIterator<Item = ObjectName>) -> Vec<TableWithJoins> {
    names.into_iter().map(|name| TableWithJoins { relation: table_named(&name), joins: Vec::new() }).collect()
}

impl Checker<'_> {
    fn with_hidden_columns(&self, name: &ObjectName) -> Option<String> {
        let table = last(name);
        self.policy.hidden.has_columns(&table).then_some(table)
    }

    fn untouchable(&self, name: &ObjectName, what: &str) -> ControlFlow<Refusal> {
        match self.with_hidden_columns(name) {
            Some(table) => ControlFlow::Break(refuse(
                format!("`{table}` has columns that are not available, so agents may not {what} it"),
                "ask the operator to change that table",
            )),
            None => ControlFlow::Continue(()),
        }
    }

    /// DML and DDL, by what they write.
    pub(super) fn statement(&mut self, statement: &Statement) -> ControlFlow<Refusal> {
        let positional = |table: String| {
            ControlFlow::Break(refuse(
                format!("`{table}` has columns that are not available, and this names none"),
                "name the columns you write (INSERT INTO t (a, b) …)",
            ))
        };
        match statement {
            Statement::Insert(insert) => {
                let TableObject::TableName(name) = &insert.table else { return ControlFlow::Continue(()) };
                let table = last(name);
                if insert.columns.is_empty() && self.policy.hidden.has_columns(&table) {
                    return positional(table);
                }
                self.written(&table, flow(columns(&insert.columns))?)?;
                if let Some(OnInsert::OnConflict(conflict)) = &insert.on {
                    if let Some(sqlparser::ast::ConflictTarget::Columns(targets)) = &conflict.conflict_target {
                        self.written(&table, targets)?;
                    }
                    if let OnConflictAction::DoUpdate(update) = &conflict.action {
                        self.written(&table, flow(assigned(&update.assignments))?)?;
                    }
                }
                if let Some(items) = &insert.returning {
                    self.items(items, &plain([name.clone()]))?;
                }
            }
            Statement::Update(update) => {
                let mut read = vec![update.table.clone()];
                if let Some(UpdateTableFromKind::BeforeSet(from) | UpdateTableFromKind::AfterSet(from)) = &update.from {
                    read.extend(from.iter().cloned());
                }
                for from in &read {
                    self.joins(from)?;
                }
                if let TableFactor::Table { name, .. } = &update.table.relation {
                    self.written(&last(name), flow(assigned(&update.assignments))?)?;
                }
                if let Some(items) = &update.returning {
                    self.items(items, &read)?;
                }
            }
            Statement::Delete(delete) => {
                let (FromTable::WithFromKeyword(from) | FromTable::WithoutKeyword(from)) = &delete.from;
                let mut read = plain(delete.tables.iter().cloned());
                read.extend(from.iter().cloned());
                read.extend(delete.using.iter().flatten().cloned());
                for from in &read {
                    self.joins(from)?;
                }
                if let Some(items) = &delete.returning {
                    self.items(items, &read)?;
                }
            }
            Statement::Merge(merge) => {
                let TableFactor::Table { name, .. } = &merge.table else { return ControlFlow::Continue(()) };
                let table = last(name);
                for clause in &merge.clauses {
                    match &clause.action {
                        MergeAction::Insert(insert)
                            if insert.columns.is_empty() && self.policy.hidden.has_columns(&table) =>
                        {
                            return positional(table);
                        }
                        MergeAction::Insert(insert) if insert.columns.is_empty() => {}
                        MergeAction::Insert(insert) => self.written(&table, flow(columns(&insert.columns))?)?,
                        MergeAction::Update(update) => match &update.kind {
                            MergeUpdateKind::Set(assignments) => self.written(&table, flow(assigned(assignments))?)?,
                            _ if self.policy.hidden.has_columns(&table) => {
                                return ControlFlow::Break(refuse(
                                    format!("`UPDATE SET *` would write columns of `{table}` that are not available"),
                                    "name the columns you write",
                                ));
                            }
                            _ => {}
                        },
                        _ => {}
                    }
                }
            }
            _ => self.ddl(statement)?,
        }
        ControlFlow::Continue(())
    }

    /// DDL: only tables, views and indexes, never `CASCADE`, never on a
    /// table with hidden columns or copied from one; the names it makes are
    /// the only names it may use that the schema does not have.
    fn ddl(&mut self, statement: &Statement) -> ControlFlow<Refusal> {
        match statement {
            Statement::Drop { object_type, names, cascade, .. } => {
                if !matches!(
                    object_type,
                    ObjectType::Table | ObjectType::View | ObjectType::MaterializedView | ObjectType::Index
                ) {
                    return ControlFlow::Break(refuse(
                        format!("DROP {object_type} is not a statement an agent may run"),
                        "an agent may drop tables, views and indexes",
                    ));
                }
                if *cascade {
                    return ControlFlow::Break(refuse("DROP … CASCADE reaches other objects", "drop them one by one"));
                }
                for name in names {
                    // An index is not a table the schema lists: only its
                    // name's class is checked (never a catalog's, never a
                    // hidden table's).
                    if *object_type == ObjectType::Index {
                        self.new_name(name)?;
                    } else {
                        self.relation(name)?;
                        self.untouchable(name, "drop")?;
                    }
                }
            }
            Statement::Truncate(truncate) => {
                if truncate.cascade == Some(CascadeOption::Cascade) {
                    return ControlFlow::Break(refuse("TRUNCATE … CASCADE reaches other tables", "truncate one table"));
                }
                for target in &truncate.table_names {
                    self.untouchable(&target.name, "truncate")?;
                }
            }
            Statement::AlterTable(alter) => {
                self.untouchable(&alter.name, "alter")?;
                for operation in &alter.operations {
                    match operation {
                        AlterTableOperation::RenameTable {
                            table_name: RenameTableNameKind::As(name) | RenameTableNameKind::To(name),
                        } => self.new_name(name)?,
                        AlterTableOperation::AddColumn { column_def, .. } => {
                            self.column_defs(std::slice::from_ref(column_def))?
                        }
                        AlterTableOperation::AddConstraint { constraint, .. } => {
                            self.constraints(std::slice::from_ref(constraint))?
                        }
                        AlterTableOperation::AlterColumn {
                            op: AlterColumnOperation::SetDataType { data_type, .. },
                            ..
                        } => self.column_type(data_type)?,
                        _ => {}
                    }
                }
            }
            Statement::AlterView { name, .. } => {
                self.relation(name)?;
                self.untouchable(name, "alter")?;
            }
            Statement::CreateIndex(index) => self.untouchable(&index.table_name, "index")?,
            Statement::CreateTable(create) => {
                self.ddl_target(&create.name);
                let like = match &create.like {
                    Some(CreateTableLikeKind::Parenthesized(like) | CreateTableLikeKind::Plain(like)) => {
                        Some(&like.name)
                    }
                    None => None,
                };
                let sources = like.into_iter().chain(&create.clone).chain(create.inherits.iter().flatten());
                for source in sources.chain(&create.partition_of) {
                    self.relation(source)?;
                    self.untouchable(source, "copy")?;
                }
                self.column_defs(&create.columns)?;
                self.constraints(&create.constraints)?;
            }
            Statement::CreateView(view) => self.ddl_target(&view.name),
            Statement::Query(_) => {}
            // The kinds `statement::effect_of` lets through are above:
            // anything else is refused.
            other => {
                let keyword = other.to_string().split_whitespace().take(2).collect::<Vec<_>>().join(" ");
                return ControlFlow::Break(refuse(
                    format!("{keyword} is not a statement an agent may run"),
                    "an agent may create, alter and drop tables, views and indexes",
                ));
            }
        }
        ControlFlow::Continue(())
    }

    /// The columns a table is made with: types a value may be cast to (or a
    /// serial), references only to tables an agent may use.
    fn column_defs(&self, columns: &[ColumnDef]) -> ControlFlow<Refusal> {
        for column in columns {
            self.column_type(&column.data_type)?;
            for option in &column.options {
                if let ColumnOption::ForeignKey(key) = &option.option {
                    self.referenced(&key.foreign_table)?;
                }
            }
        }
        ControlFlow::Continue(())
    }

    fn constraints(&self, constraints: &[TableConstraint]) -> ControlFlow<Refusal> {
        for constraint in constraints {
            if let TableConstraint::ForeignKey(key) = constraint {
                self.referenced(&key.foreign_table)?;
            }
        }
        ControlFlow::Continue(())
    }

    /// A foreign key's table: a visible table without hidden columns (a key
    /// into a hidden one would test which values it holds).
    fn referenced(&self, table: &ObjectName) -> ControlFlow<Refusal> {
        self.relation(table)?;
        self.untouchable(table, "reference")
    }

    /// A column's type: as a cast's (`regclass` would read the catalog), or
    /// a serial.
    fn column_type(&self, data_type: &sqlparser::ast::DataType) -> ControlFlow<Refusal> {
        let serial = matches!(
            super::allowed::type_name(data_type).as_str(),
            "serial" | "bigserial" | "smallserial" | "serial2" | "serial4" | "serial8"
        );
        if serial { ControlFlow::Continue(()) } else { self.cast(data_type) }
    }

    /// A name a table is renamed to: never a system catalog's or a hidden
    /// table's.
    pub(super) fn new_name(&self, name: &ObjectName) -> ControlFlow<Refusal> {
        let parts = parts(name);
        if super::dialect::system_relation(&parts) || self.policy.hidden.table(parts.last().map_or("", String::as_str))
        {
            return ControlFlow::Break(refuse(format!("`{name}` may not be made or renamed to"), "pick another name"));
        }
        ControlFlow::Continue(())
    }

    /// A name `statement` makes: it may be unknown to the schema.
    fn ddl_target(&mut self, name: &ObjectName) {
        if parts(name).len() == 1 {
            self.ddl_targets.insert(name as *const ObjectName as usize);
        }
    }
}
