//! The second pass: every part of the statement checked against what is
//! allowed. Expressions by kind (an allow-list of expression forms,
//! operators, functions and cast types), FROM items by kind, every column
//! reference resolved against the visible schema, every whole-row value
//! and `*` checked for hidden columns. Anything not listed is refused.

use std::collections::BTreeSet;
use std::ops::ControlFlow;

use sqlparser::ast::{
    AccessExpr, BinaryOperator, Expr, Function, FunctionArg, FunctionArgExpr, FunctionArguments, Ident, ObjectName,
    ObjectNamePart, Query, Select, SetExpr, Statement, TableFactor, TableWithJoins, UnaryOperator, Visitor,
};

use super::allowed::Policy;
use super::allowed::cast_allowed;
use super::dialect::Dialect;
use super::scope::{Names, parts};
use super::verdict::{Effect, Refusal, deny, refuse};

pub(super) struct Checker<'a> {
    pub(super) policy: &'a Policy<'a>,
    pub(super) effect: Effect,
    pub(super) names: Names,
    /// Nesting of statements: 0 outside, 1 in the top-level one.
    pub(super) depth: usize,
    /// The names of FROM-clause functions (by address): checked as
    /// functions, not as tables.
    pub(super) function_names: BTreeSet<usize>,
    /// The CTE names of each query being visited, outermost first: a CTE
    /// name counts as a table only inside its query.
    pub(super) cte_scopes: Vec<BTreeSet<String>>,
    /// The names DDL makes (by address): the only ones that may be unknown.
    pub(super) ddl_targets: BTreeSet<usize>,
}

/// PostgreSQL cuts identifiers to this many bytes: two names the policy
/// tells apart could be one to the engine.
const POSTGRES_NAME_BYTES: usize = 63;

impl Checker<'_> {
    /// A WITH clause: a CTE is never named like a table of the database
    /// (a reference must mean one thing), and, unless RECURSIVE, each one
    /// refers only to the CTEs before it (PostgreSQL reads its own name, or
    /// a later one's, as a table).
    fn ctes(&self, with: &sqlparser::ast::With) -> ControlFlow<Refusal> {
        let names: Vec<String> = with.cte_tables.iter().map(|cte| cte.alias.name.value.to_lowercase()).collect();
        for (i, cte) in with.cte_tables.iter().enumerate() {
            let name = &names[i];
            if self.policy.visible.table(name) || self.policy.hidden.table(name) {
                return ControlFlow::Break(refuse(
                    format!("the CTE `{}` is named like a table of the database", cte.alias.name.value),
                    "give the CTE another name",
                ));
            }
            if !with.recursive {
                let mut read = Read::default();
                let _ = sqlparser::ast::Visit::visit(&*cte.query, &mut read);
                if let Some(later) = names[i..].iter().find(|n| read.0.contains(*n)) {
                    return ControlFlow::Break(refuse(
                        format!(
                            "the CTE `{}` refers to `{later}`, which is not defined before it",
                            cte.alias.name.value
                        ),
                        "refer to the CTEs before it, or write WITH RECURSIVE",
                    ));
                }
            }
        }
        ControlFlow::Continue(())
    }

    fn function(&self, function: &Function) -> ControlFlow<Refusal> {
        let refused = || {
            refuse(
                format!("the function `{}` may not be called", function.name),
                format!(
                    "a query may call only the functions of the SQL allow-list at `{}` access (the operator's manual lists them); leave it \
                     out of the query",
                    self.policy.access
                ),
            )
        };
        let ident = match function.name.0.as_slice() {
            [ObjectNamePart::Identifier(ident)] => ident,
            [ObjectNamePart::Identifier(schema), ObjectNamePart::Identifier(ident)]
                if self.policy.dialect == Dialect::Postgres
                    && schema.quote_style.is_none()
                    && schema.value.eq_ignore_ascii_case("pg_catalog") =>
            {
                ident
            }
            _ => return ControlFlow::Break(refused()),
        };
        if !self.policy.functions.allows(ident) || !matches!(function.parameters, FunctionArguments::None) {
            return ControlFlow::Break(refused());
        }
        let FunctionArguments::List(list) = &function.args else { return ControlFlow::Continue(()) };
        self.arguments(&function.name, &list.args)
    }

    /// A function's arguments, in an expression or in FROM: `t.*` is a
    /// whole row; `*` is `count`'s only.
    fn arguments(&self, function: &ObjectName, args: &[FunctionArg]) -> ControlFlow<Refusal> {
        for arg in args {
            let (FunctionArg::Unnamed(arg) | FunctionArg::Named { arg, .. } | FunctionArg::ExprNamed { arg, .. }) = arg;
            match arg {
                FunctionArgExpr::Expr(_) => {}
                FunctionArgExpr::Wildcard if parts(function).last().is_some_and(|f| f == "count") => {}
                FunctionArgExpr::QualifiedWildcard(name) => self.whole_row(name)?,
                FunctionArgExpr::Wildcard | FunctionArgExpr::WildcardWithOptions(_) => {
                    return ControlFlow::Break(refuse(
                        format!("`*` as an argument of `{function}`"),
                        "pass named columns (only count(*) takes `*`)",
                    ));
                }
            }
        }
        ControlFlow::Continue(())
    }

    pub(super) fn cast(&self, data_type: &sqlparser::ast::DataType) -> ControlFlow<Refusal> {
        if cast_allowed(self.policy.dialect, data_type) {
            return ControlFlow::Continue(());
        }
        ControlFlow::Break(refuse(
            format!("a cast to `{data_type}` is not allowed"),
            "cast to a plain type (numbers, text, dates and times, boolean, JSON, UUID, bytes)",
        ))
    }
}

/// Binary operators a statement may use: arithmetic, comparison, logic,
/// bits, pattern matching, JSON, arrays and ranges. Not custom operators
/// (`OPERATOR(schema.op)`), which may run any function.
fn binary_allowed(op: &BinaryOperator) -> bool {
    use BinaryOperator::*;
    matches!(
        op,
        Plus | Minus
            | Multiply
            | Divide
            | Modulo
            | StringConcat
            | Gt
            | Lt
            | GtEq
            | LtEq
            | Eq
            | NotEq
            | And
            | Or
            | BitwiseOr
            | BitwiseAnd
            | BitwiseXor
            | PGBitwiseXor
            | PGBitwiseShiftLeft
            | PGBitwiseShiftRight
            | PGExp
            | PGOverlap
            | PGRegexMatch
            | PGRegexIMatch
            | PGRegexNotMatch
            | PGRegexNotIMatch
            | PGLikeMatch
            | PGILikeMatch
            | PGNotLikeMatch
            | PGNotILikeMatch
            | PGStartsWith
            | Arrow
            | LongArrow
            | HashArrow
            | HashLongArrow
            | AtAt
            | AtArrow
            | ArrowAt
            | HashMinus
            | AtQuestion
            | Question
            | QuestionAnd
            | QuestionPipe
            | Glob
            | Overlaps
    )
}

fn unary_allowed(op: &UnaryOperator) -> bool {
    use UnaryOperator::*;
    matches!(op, Plus | Minus | Not | BitwiseNot | PGAbs | PGSquareRoot | PGCubeRoot)
}

impl Visitor for Checker<'_> {
    type Break = Refusal;

    fn pre_visit_statement(&mut self, statement: &Statement) -> ControlFlow<Refusal> {
        self.depth += 1;
        if self.depth > 1 && self.effect == Effect::Read && !matches!(statement, Statement::Query(_)) {
            return ControlFlow::Break(deny(
                "a statement inside the query changes data (a data-modifying WITH)",
                "read with a plain query",
            ));
        }
        self.statement(statement)
    }

    fn post_visit_statement(&mut self, _statement: &Statement) -> ControlFlow<Refusal> {
        self.depth -= 1;
        ControlFlow::Continue(())
    }

    fn pre_visit_query(&mut self, query: &Query) -> ControlFlow<Refusal> {
        let names = query.with.iter().flat_map(|with| &with.cte_tables);
        self.cte_scopes.push(names.map(|cte| cte.alias.name.value.to_lowercase()).collect());
        if let Some(with) = &query.with {
            self.ctes(with)?;
        }
        if self.effect == Effect::Read && !query.locks.is_empty() {
            return ControlFlow::Break(refuse("locking clauses (FOR UPDATE, FOR SHARE…)", "drop the FOR clause"));
        }
        self.set_expr(&query.body)
    }

    fn post_visit_query(&mut self, _query: &Query) -> ControlFlow<Refusal> {
        self.cte_scopes.pop();
        ControlFlow::Continue(())
    }

    fn pre_visit_select(&mut self, select: &Select) -> ControlFlow<Refusal> {
        if select.into.is_some() {
            return ControlFlow::Break(refuse("SELECT … INTO creates a table", "select without INTO"));
        }
        for from in &select.from {
            self.joins(from)?;
        }
        self.items(&select.projection, &select.from)
    }

    fn pre_visit_table_factor(&mut self, factor: &TableFactor) -> ControlFlow<Refusal> {
        let alias = match factor {
            TableFactor::Table { name, args: None, alias, .. } => {
                // `t AS a(x, y)` renames a table's columns by position.
                if alias.as_ref().is_some_and(|a| !a.columns.is_empty())
                    && let Some(table) = parts(name).pop().filter(|t| self.policy.hidden.has_columns(t))
                {
                    return ControlFlow::Break(refuse(
                        format!("`{table}` has columns that are not available: its columns may not be renamed"),
                        "alias the table without a column list, and name the columns you need",
                    ));
                }
                alias
            }
            TableFactor::Table { name, args: Some(_), alias, .. } | TableFactor::Function { name, alias, .. } => {
                self.function_names.insert(name as *const ObjectName as usize);
                let allowed = match name.0.as_slice() {
                    [ObjectNamePart::Identifier(ident)] => self.policy.functions.allows_table(ident),
                    _ => false,
                };
                if !allowed {
                    return ControlFlow::Break(refuse(
                        format!("the function `{name}` may not be read in FROM"),
                        "read tables, subqueries, or functions of the SQL allow-list",
                    ));
                }
                let args = match factor {
                    TableFactor::Table { args: Some(args), .. } => args.args.as_slice(),
                    TableFactor::Function { args, .. } => args.as_slice(),
                    _ => &[],
                };
                self.arguments(name, args)?;
                alias
            }
            TableFactor::Derived { alias, .. }
            | TableFactor::UNNEST { alias, .. }
            | TableFactor::TableFunction { alias, .. } => alias,
            TableFactor::NestedJoin { table_with_joins, alias } => {
                self.joins(table_with_joins)?;
                // `(a JOIN b) AS j(x, y)` renames the joined columns by position.
                if alias.as_ref().is_some_and(|a| !a.columns.is_empty())
                    && let Some(table) =
                        Self::base_tables(table_with_joins).into_iter().find(|t| self.policy.hidden.has_columns(t))
                {
                    return ControlFlow::Break(refuse(
                        format!("`{table}` has columns that are not available: a join of it may not rename columns"),
                        "alias the join without a column list, and name the columns you need",
                    ));
                }
                alias
            }
            other => {
                let kind = format!("{other:?}").split([' ', '(', '{']).next().unwrap_or_default().to_owned();
                return ControlFlow::Break(refuse(
                    format!("`{kind}` in FROM is not supported"),
                    "read tables, subqueries, or functions of the SQL allow-list",
                ));
            }
        };
        // Column definitions of a function's rows (`AS t(a int)`) are casts.
        for column in alias.iter().flat_map(|a| &a.columns) {
            if let Some(data_type) = &column.data_type {
                self.cast(data_type)?;
            }
        }
        ControlFlow::Continue(())
    }

    fn pre_visit_relation(&mut self, relation: &ObjectName) -> ControlFlow<Refusal> {
        let address = relation as *const ObjectName as usize;
        if self.function_names.contains(&address) {
            return ControlFlow::Continue(());
        }
        if self.ddl_targets.contains(&address) {
            // A name DDL makes: never a system catalog's or a hidden table's.
            let table = parts(relation).pop().unwrap_or_default();
            if super::dialect::system_relation(&parts(relation)) || self.policy.hidden.table(&table) {
                return ControlFlow::Break(refuse(
                    format!("`{relation}` may not be made or renamed to"),
                    "pick another name",
                ));
            }
            return ControlFlow::Continue(());
        }
        self.relation(relation)
    }

    fn pre_visit_ident(&mut self, ident: &Ident) -> ControlFlow<Refusal> {
        if self.policy.dialect == Dialect::Postgres && ident.value.len() > POSTGRES_NAME_BYTES {
            return ControlFlow::Break(refuse(
                format!(
                    "the name `{}…` is longer than PostgreSQL's {POSTGRES_NAME_BYTES} bytes",
                    ident.value.chars().take(40).collect::<String>()
                ),
                "use a shorter name",
            ));
        }
        ControlFlow::Continue(())
    }

    fn pre_visit_expr(&mut self, expr: &Expr) -> ControlFlow<Refusal> {
        match expr {
            Expr::Identifier(ident) => self.bare(ident),
            Expr::CompoundIdentifier(idents) => self.qualified(idents),
            Expr::Function(function) => self.function(function),
            Expr::Cast { data_type, format: None, .. } => self.cast(data_type),
            Expr::TypedString(typed) => self.cast(&typed.data_type),
            Expr::BinaryOp { op, .. } | Expr::AnyOp { compare_op: op, .. } | Expr::AllOp { compare_op: op, .. }
                if binary_allowed(op) =>
            {
                ControlFlow::Continue(())
            }
            Expr::UnaryOp { op, .. } if unary_allowed(op) => ControlFlow::Continue(()),
            Expr::CompoundFieldAccess { access_chain, .. }
                if access_chain.iter().all(|a| matches!(a, AccessExpr::Subscript(_))) =>
            {
                ControlFlow::Continue(())
            }
            Expr::QualifiedWildcard(name, _) => self.whole_row(name),
            Expr::IsFalse(_)
            | Expr::IsNotFalse(_)
            | Expr::IsTrue(_)
            | Expr::IsNotTrue(_)
            | Expr::IsNull(_)
            | Expr::IsNotNull(_)
            | Expr::IsUnknown(_)
            | Expr::IsNotUnknown(_)
            | Expr::IsDistinctFrom(..)
            | Expr::IsNotDistinctFrom(..)
            | Expr::IsNormalized { .. }
            | Expr::InList { .. }
            | Expr::InSubquery { .. }
            | Expr::Between { .. }
            | Expr::Like { .. }
            | Expr::ILike { .. }
            | Expr::SimilarTo { .. }
            | Expr::AtTimeZone { .. }
            | Expr::Extract { .. }
            | Expr::Ceil { .. }
            | Expr::Floor { .. }
            | Expr::Position { .. }
            | Expr::Substring { .. }
            | Expr::Trim { .. }
            | Expr::Overlay { .. }
            | Expr::Collate { .. }
            | Expr::Nested(_)
            | Expr::Value(_)
            | Expr::Case { .. }
            | Expr::Exists { .. }
            | Expr::Subquery(_)
            | Expr::GroupingSets(_)
            | Expr::Cube(_)
            | Expr::Rollup(_)
            | Expr::Tuple(_)
            | Expr::Array(_)
            | Expr::Interval(_) => ControlFlow::Continue(()),
            other => {
                let shown: String = other.to_string().chars().take(60).collect();
                ControlFlow::Break(refuse(
                    format!("the expression `{shown}` is not one a query may use"),
                    "use columns, literals, the SQL operators, CASE, subqueries and allowed functions",
                ))
            }
        }
    }
}

impl Checker<'_> {
    /// The parts of a query body the visitor has no hook for: data changes
    /// under `read`, and `TABLE t` (every column of `t`).
    fn set_expr(&self, body: &SetExpr) -> ControlFlow<Refusal> {
        match body {
            SetExpr::Insert(_) | SetExpr::Update(_) | SetExpr::Delete(_) | SetExpr::Merge(_)
                if self.effect == Effect::Read =>
            {
                ControlFlow::Break(deny("the query changes data", "read with a plain query"))
            }
            SetExpr::SetOperation { left, right, .. } => {
                self.set_expr(left)?;
                self.set_expr(right)
            }
            SetExpr::Table(table) => {
                let Some(name) = &table.table_name else {
                    return ControlFlow::Break(refuse("TABLE names no table", "write TABLE name"));
                };
                let mut written = table.schema_name.iter().cloned().collect::<Vec<_>>();
                written.push(name.clone());
                let name = ObjectName::from(written.into_iter().map(Ident::new).collect::<Vec<_>>());
                let from = [TableWithJoins { relation: table_named(&name), joins: Vec::new() }];
                self.relation(&name)?;
                self.star(&from)
            }
            _ => ControlFlow::Continue(()),
        }
    }
}

/// The one-part table names a query reads.
#[derive(Default)]
struct Read(std::collections::BTreeSet<String>);

impl Visitor for Read {
    type Break = ();

    fn pre_visit_table_factor(&mut self, factor: &TableFactor) -> ControlFlow<()> {
        if let TableFactor::Table { name, args: None, .. } = factor
            && let [ObjectNamePart::Identifier(ident)] = name.0.as_slice()
        {
            self.0.insert(ident.value.to_lowercase());
        }
        ControlFlow::Continue(())
    }
}

/// A plain table factor naming `name`, to check `*` against.
pub(super) fn table_named(name: &ObjectName) -> TableFactor {
    TableFactor::Table {
        name: name.clone(),
        alias: None,
        args: None,
        with_hints: Vec::new(),
        version: None,
        with_ordinality: false,
        partitions: Vec::new(),
        json_path: None,
        sample: None,
        index_hints: Vec::new(),
    }
}
