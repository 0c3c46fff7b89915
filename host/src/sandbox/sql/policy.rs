//! The statement policy: the first of the `sql` capability's three layers
//! (then the database's own read-only mode, then the host's limits).
//!
//! Every statement an adapter sends is parsed with `sqlparser`, in the
//! dialect of the connection, and checked against the access the operator
//! granted, whatever the adapter did before. A refusal names the rule and
//! how to rephrase, so a model can act on it:
//!
//! * exactly one statement, of bounded length;
//! * `read`: a query only (`SELECT`, `WITH … SELECT`, `VALUES`, `EXPLAIN`
//!   of a query without `ANALYZE`); no data-modifying CTE, no
//!   `SELECT … INTO`, no locking clause (`FOR UPDATE`…);
//! * `write` adds `INSERT`, `UPDATE`, `DELETE`, `MERGE`; `admin` adds
//!   `CREATE`, `ALTER`, `DROP`, `TRUNCATE`. Nothing else at any level:
//!   no `ATTACH`/`DETACH`, `PRAGMA`, `COPY`, `SET`, transaction control,
//!   grants, `VACUUM`, `LOAD`, `CALL`…;
//! * no function on the dialect's deny-list (file access, large objects,
//!   `dblink`, dynamic SQL, settings, sequences, sleeping, killing
//!   sessions, loading extensions…);
//! * no system catalog (`sqlite_schema`, `pg_catalog`,
//!   `information_schema`, `pg_*`): the schema, minus what is hidden, is
//!   what the adapter's `list_tables` and `describe_table` return;
//! * no hidden table, and no hidden column: not by name (any spelling's
//!   case), not through `*` or `table.*` of a table that has one, not
//!   through a whole-row reference to such a table.

use std::collections::{BTreeMap, BTreeSet};
use std::ops::ControlFlow;

use sqlparser::ast::{
    AssignmentTarget, Expr, Ident, ObjectName, ObjectNamePart, Query, Select, SelectItem, SetExpr, Statement,
    TableFactor, Visit, Visitor,
};
use sqlparser::dialect::{PostgreSqlDialect, SQLiteDialect};
use sqlparser::keywords::Keyword;
use sqlparser::parser::{Parser, ParserError};
use sqlparser::tokenizer::{Token, Tokenizer};

use crate::contract::Access;

/// The SQL dialect of a connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    /// SQLite 3.
    Sqlite,
    /// PostgreSQL.
    Postgres,
}

impl Dialect {
    /// Its name, as the `sql` capability reports it.
    pub fn as_str(self) -> &'static str {
        match self {
            Dialect::Sqlite => "sqlite",
            Dialect::Postgres => "postgresql",
        }
    }
}

/// Longest statement accepted, in bytes.
pub const MAX_STATEMENT_BYTES: usize = 64 * 1024;

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

    fn has_columns(&self, table: &str) -> bool {
        self.columns.contains_key(&table.to_lowercase())
    }
}

/// What a statement does, once it passed the policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Effect {
    /// It reads (a query, or `EXPLAIN` of one).
    Read,
    /// It changes rows (DML).
    Write,
    /// It changes the schema (DDL).
    Admin,
}

/// Why a statement is refused: the rule, and how to rephrase.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// The rule it breaks.
    pub rule: String,
    /// What to do instead.
    pub hint: String,
    /// Whether the statement is malformed SQL (a mistake to fix) rather
    /// than something the policy forbids.
    pub malformed: bool,
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}; {}", self.rule, self.hint)
    }
}

fn refuse(rule: impl Into<String>, hint: impl Into<String>) -> Refusal {
    Refusal { rule: rule.into(), hint: hint.into(), malformed: false }
}

/// Check `sql` against the policy of a connection of `dialect` with
/// `access`; what it does if it may run.
pub fn check(dialect: Dialect, access: Access, hidden: &Hidden, sql: &str) -> Result<Effect, Refusal> {
    if sql.len() > MAX_STATEMENT_BYTES {
        return Err(refuse(
            format!("the statement is {} bytes, over the limit of {MAX_STATEMENT_BYTES}", sql.len()),
            "send a shorter statement (filter in SQL rather than listing values)",
        ));
    }
    let parsed = match dialect {
        Dialect::Sqlite => Parser::parse_sql(&SQLiteDialect {}, sql),
        Dialect::Postgres => Parser::parse_sql(&PostgreSqlDialect {}, sql),
    };
    let statements = parsed.map_err(|e| unparsed(dialect, sql, e))?;
    let statement = match statements.as_slice() {
        [one] => one,
        [] => return Err(refuse("there is no statement", "send one SQL statement")),
        _ => {
            return Err(refuse(
                format!("only one statement per query, and this has {}", statements.len()),
                "split it and send each statement on its own",
            ));
        }
    };
    let effect = effect_of(statement)?;
    let needed = match effect {
        Effect::Read => Access::Read,
        Effect::Write => Access::Write,
        Effect::Admin => Access::Admin,
    };
    if needed > access {
        let allowed = match access {
            Access::Read => "queries only (SELECT, WITH … SELECT, VALUES, EXPLAIN)",
            Access::Write => "queries and INSERT, UPDATE, DELETE, MERGE",
            Access::Admin => "queries, DML and DDL",
        };
        return Err(refuse(
            format!("this database grants `{access}` access, and this statement needs `{needed}`"),
            format!("it allows {allowed}"),
        ));
    }
    let mut checker = Checker { dialect, hidden, effect, depth: 0, tables: BTreeMap::new() };
    // First the relations (and their aliases), then everything else, so that
    // column checks know which tables the statement reads.
    let _ = statement.visit(&mut Relations(&mut checker));
    if let ControlFlow::Break(refusal) = statement.visit(&mut checker) {
        return Err(refusal);
    }
    Ok(effect)
}

/// Statements that start with these keywords may be allowed at some
/// access level; any other statement is not, whether or not it parses.
const PERMITTED_STARTS: &[Keyword] = &[
    Keyword::SELECT,
    Keyword::WITH,
    Keyword::VALUES,
    Keyword::TABLE,
    Keyword::EXPLAIN,
    Keyword::INSERT,
    Keyword::UPDATE,
    Keyword::DELETE,
    Keyword::MERGE,
    Keyword::CREATE,
    Keyword::ALTER,
    Keyword::DROP,
    Keyword::TRUNCATE,
];

/// Why a statement that does not parse is refused: a statement kind no
/// access level allows (`DO`, `PRAGMA x = ON`…) is denied as such; a
/// statement that could be allowed is malformed, with the parser's reason.
fn unparsed(dialect: Dialect, sql: &str, error: ParserError) -> Refusal {
    let tokens = match dialect {
        Dialect::Sqlite => Tokenizer::new(&SQLiteDialect {}, sql).tokenize(),
        Dialect::Postgres => Tokenizer::new(&PostgreSqlDialect {}, sql).tokenize(),
    };
    let first = tokens.ok().and_then(|tokens| {
        tokens.into_iter().find(|t| !matches!(t, Token::Whitespace(_) | Token::LParen | Token::SemiColon))
    });
    match first {
        Some(Token::Word(word)) if word.keyword != Keyword::NoKeyword && !PERMITTED_STARTS.contains(&word.keyword) => {
            refuse(
                format!("{} is not a statement an agent may run", word.value.to_uppercase()),
                "send a query (or, where granted, INSERT, UPDATE, DELETE, or DDL)",
            )
        }
        _ => Refusal {
            rule: format!("the statement does not parse: {error}"),
            hint: "fix the SQL".into(),
            malformed: true,
        },
    }
}

/// What `statement` does, or why no access level allows it.
fn effect_of(statement: &Statement) -> Result<Effect, Refusal> {
    Ok(match statement {
        Statement::Query(_) => Effect::Read,
        Statement::Explain { analyze: true, .. } => {
            return Err(refuse("EXPLAIN ANALYZE runs the statement", "use EXPLAIN without ANALYZE"));
        }
        Statement::Explain { statement, .. } if matches!(**statement, Statement::Query(_)) => Effect::Read,
        Statement::Explain { .. } => {
            return Err(refuse("EXPLAIN of a statement that is not a query", "explain a query"));
        }
        Statement::Insert(_) | Statement::Update(_) | Statement::Delete(_) | Statement::Merge(_) => Effect::Write,
        Statement::CreateTable(_)
        | Statement::CreateView(_)
        | Statement::CreateIndex(_)
        | Statement::AlterTable(_)
        | Statement::AlterIndex { .. }
        | Statement::AlterView { .. }
        | Statement::Drop { .. }
        | Statement::Truncate(_) => Effect::Admin,
        Statement::AttachDatabase { .. } => {
            return Err(refuse("ATTACH is never allowed", "query the tables of this database only"));
        }
        Statement::Pragma { .. } => {
            return Err(refuse("PRAGMA is never allowed", "use list_tables and discover for the schema"));
        }
        Statement::Copy { .. } => return Err(refuse("COPY is never allowed", "use a query")),
        other => {
            let keyword = other.to_string().split_whitespace().next().unwrap_or("this statement").to_uppercase();
            return Err(refuse(
                format!("{keyword} is not a statement an agent may run"),
                "send a query (or, where granted, INSERT, UPDATE, DELETE, or DDL)",
            ));
        }
    })
}

/// Functions no statement may call, by dialect (lower case; an entry ending
/// in `*` is a prefix).
fn denied_function(dialect: Dialect, name: &str) -> bool {
    const POSTGRES: &[&str] = &[
        "pg_read_file",
        "pg_read_binary_file",
        "pg_ls_*",
        "pg_stat_file",
        "lo_*",
        "dblink*",
        "set_config",
        "pg_sleep*",
        "pg_terminate_backend",
        "pg_cancel_backend",
        "pg_reload_conf",
        "pg_rotate_logfile",
        "pg_promote",
        "pg_switch_wal",
        "pg_advisory*",
        "pg_try_advisory*",
        "pg_logical_*",
        "pg_file_*",
        "nextval",
        "setval",
        "query_to_xml*",
        "table_to_xml*",
        "schema_to_xml*",
        "database_to_xml*",
        "cursor_to_xml*",
        "current_setting",
        "pg_catalog.*",
    ];
    const SQLITE: &[&str] =
        &["load_extension", "readfile", "writefile", "fts3_tokenizer", "edit", "pragma_*", "sqlite_dbpage", "zipfile"];
    let list = match dialect {
        Dialect::Postgres => POSTGRES,
        Dialect::Sqlite => SQLITE,
    };
    list.iter().any(|entry| match entry.strip_suffix('*') {
        Some(prefix) => name.starts_with(prefix),
        None => name == *entry,
    })
}

/// Whether `parts` (lower case) name a system catalog: its tables are the
/// unfiltered schema, hidden parts included.
fn system_relation(parts: &[String]) -> bool {
    let first = parts.first().map(String::as_str).unwrap_or_default();
    let last = parts.last().map(String::as_str).unwrap_or_default();
    matches!(first, "pg_catalog" | "information_schema" | "pg_toast")
        || last.starts_with("pg_")
        || last.starts_with("sqlite_")
}

/// The lower-case parts of an object name.
fn parts(name: &ObjectName) -> Vec<String> {
    name.0
        .iter()
        .map(|part| match part {
            ObjectNamePart::Identifier(ident) => ident.value.to_lowercase(),
            other => other.to_string().to_lowercase(),
        })
        .collect()
}

struct Checker<'a> {
    dialect: Dialect,
    hidden: &'a Hidden,
    effect: Effect,
    /// Nesting of statements: 0 outside, 1 in the top-level one.
    depth: usize,
    /// Tables the statement names (lower case) → whether they have hidden
    /// columns; aliases are listed under their table's entry too.
    tables: BTreeMap<String, String>,
}

impl Checker<'_> {
    /// The tables read that have hidden columns.
    fn tables_with_hidden_columns(&self) -> impl Iterator<Item = &str> {
        self.tables.values().map(String::as_str).filter(|t| self.hidden.has_columns(t))
    }

    /// `*` or `t.*` among `items` while a table with hidden columns is read.
    fn check_wildcards(&self, items: &[SelectItem]) -> ControlFlow<Refusal> {
        let wildcard =
            items.iter().any(|item| matches!(item, SelectItem::Wildcard(_) | SelectItem::QualifiedWildcard(..)));
        if wildcard && let Some(table) = self.tables_with_hidden_columns().next() {
            return ControlFlow::Break(refuse(
                format!("`*` would include columns of `{table}` that are not available"),
                "name the columns you need",
            ));
        }
        ControlFlow::Continue(())
    }

    fn check_identifier(&self, ident: &Ident) -> ControlFlow<Refusal> {
        let name = ident.value.to_lowercase();
        for table in self.tables_with_hidden_columns() {
            if self.hidden.column(table, &name) {
                return ControlFlow::Break(refuse(
                    format!("column `{}` of `{table}` is not available", ident.value),
                    "leave it out of the query",
                ));
            }
        }
        // A whole-row reference (`customers`, or its alias) carries every column.
        if let Some(table) = self.tables.get(&name).filter(|t| self.hidden.has_columns(t)) {
            return ControlFlow::Break(refuse(
                format!("a whole-row reference to `{table}` would include columns that are not available"),
                "name the columns you need",
            ));
        }
        ControlFlow::Continue(())
    }
}

/// The first pass: which tables the statement reads, and their aliases.
struct Relations<'c, 'a>(&'c mut Checker<'a>);

impl Visitor for Relations<'_, '_> {
    type Break = ();

    /// Every relation named, including the targets of DML.
    fn pre_visit_relation(&mut self, relation: &ObjectName) -> ControlFlow<()> {
        let table = parts(relation).last().cloned().unwrap_or_default();
        self.0.tables.insert(table.clone(), table);
        ControlFlow::Continue(())
    }

    fn pre_visit_table_factor(&mut self, factor: &TableFactor) -> ControlFlow<()> {
        if let TableFactor::Table { name, alias, .. } = factor {
            let table = parts(name).last().cloned().unwrap_or_default();
            if let Some(alias) = alias {
                self.0.tables.insert(alias.name.value.to_lowercase(), table.clone());
            }
            self.0.tables.insert(table.clone(), table);
        }
        ControlFlow::Continue(())
    }
}

impl Visitor for Checker<'_> {
    type Break = Refusal;

    fn pre_visit_statement(&mut self, statement: &Statement) -> ControlFlow<Refusal> {
        self.depth += 1;
        if self.depth > 1 && self.effect == Effect::Read && !matches!(statement, Statement::Query(_)) {
            return ControlFlow::Break(refuse(
                "a statement inside the query changes data (a data-modifying WITH)",
                "read with a plain query",
            ));
        }
        // Columns written and returned by DML are not expressions the
        // visitor sees: check them here.
        let (written, returning): (Vec<&ObjectName>, _) = match statement {
            Statement::Insert(insert) => (insert.columns.iter().collect(), insert.returning.as_deref()),
            Statement::Update(update) => (
                update
                    .assignments
                    .iter()
                    .flat_map(|a| match &a.target {
                        AssignmentTarget::ColumnName(name) => std::slice::from_ref(name),
                        AssignmentTarget::Tuple(names) => names.as_slice(),
                    })
                    .collect(),
                update.returning.as_deref(),
            ),
            Statement::Delete(delete) => (Vec::new(), delete.returning.as_deref()),
            _ => (Vec::new(), None),
        };
        for column in written {
            if let Some(ObjectNamePart::Identifier(ident)) = column.0.last() {
                self.check_identifier(ident)?;
            }
        }
        if let Some(items) = returning {
            self.check_wildcards(items)?;
        }
        ControlFlow::Continue(())
    }

    fn post_visit_statement(&mut self, _statement: &Statement) -> ControlFlow<Refusal> {
        self.depth -= 1;
        ControlFlow::Continue(())
    }

    fn pre_visit_query(&mut self, query: &Query) -> ControlFlow<Refusal> {
        if self.effect == Effect::Read && !query.locks.is_empty() {
            return ControlFlow::Break(refuse("locking clauses (FOR UPDATE, FOR SHARE…)", "drop the FOR clause"));
        }
        if self.effect == Effect::Read
            && let SetExpr::Insert(_) | SetExpr::Update(_) | SetExpr::Delete(_) | SetExpr::Merge(_) = &*query.body
        {
            return ControlFlow::Break(refuse("the query changes data", "read with a plain query"));
        }
        ControlFlow::Continue(())
    }

    fn pre_visit_select(&mut self, select: &Select) -> ControlFlow<Refusal> {
        if select.into.is_some() {
            return ControlFlow::Break(refuse("SELECT … INTO creates a table", "select without INTO"));
        }
        self.check_wildcards(&select.projection)
    }

    fn pre_visit_relation(&mut self, relation: &ObjectName) -> ControlFlow<Refusal> {
        let parts = parts(relation);
        let table = parts.last().cloned().unwrap_or_default();
        if system_relation(&parts) {
            return ControlFlow::Break(refuse(
                format!("`{relation}` is a system catalog"),
                "get the schema from list_tables and discover",
            ));
        }
        if denied_function(self.dialect, &table) {
            return ControlFlow::Break(refuse(format!("`{relation}` may not be called"), "leave it out"));
        }
        if self.hidden.table(&table) {
            return ControlFlow::Break(refuse(format!("there is no table `{relation}`"), "see list_tables"));
        }
        ControlFlow::Continue(())
    }

    fn pre_visit_expr(&mut self, expr: &Expr) -> ControlFlow<Refusal> {
        match expr {
            Expr::Function(function) => {
                let name = parts(&function.name).join(".");
                let bare = parts(&function.name).last().cloned().unwrap_or_default();
                if denied_function(self.dialect, &name) || denied_function(self.dialect, &bare) {
                    return ControlFlow::Break(refuse(
                        format!("the function `{}` may not be called", function.name),
                        "leave it out of the query",
                    ));
                }
            }
            Expr::Identifier(ident) => return self.check_identifier(ident),
            Expr::CompoundIdentifier(idents) => {
                if let Some(last) = idents.last() {
                    self.check_identifier(last)?;
                }
                // `alias.column` where the qualifier is a hidden table's name.
                if let Some(first) = idents.first().filter(|_| idents.len() > 1)
                    && self.hidden.table(&first.value)
                {
                    return ControlFlow::Break(refuse(
                        format!("there is no table `{}`", first.value),
                        "see list_tables",
                    ));
                }
            }
            _ => {}
        }
        ControlFlow::Continue(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hidden() -> Hidden {
        Hidden::parse(&["secrets".into(), "customer.ssn".into()]).unwrap()
    }

    fn read(dialect: Dialect, sql: &str) -> Result<Effect, Refusal> {
        check(dialect, Access::Read, &hidden(), sql)
    }

    #[test]
    fn queries_pass_at_read_access() {
        for dialect in [Dialect::Sqlite, Dialect::Postgres] {
            for sql in [
                "SELECT name FROM artist WHERE artist_id = 1",
                "WITH a AS (SELECT artist_id FROM album) SELECT count(*) FROM a",
                "VALUES (1, 2)",
                "EXPLAIN SELECT * FROM artist",
                "SELECT c.first_name FROM customer c JOIN invoice i ON i.customer_id = c.customer_id",
                "SELECT first_name FROM customer -- trailing comment",
            ] {
                assert_eq!(read(dialect, sql), Ok(Effect::Read), "{dialect:?}: {sql}");
            }
        }
    }

    #[test]
    fn every_rule_refuses_with_its_reason() {
        let cases: &[(Dialect, &str, &str)] = &[
            (Dialect::Sqlite, "SELECT 1; DROP TABLE artist", "only one statement"),
            (Dialect::Sqlite, "SELECT 1; /* x */ DELETE FROM artist", "only one statement"),
            (Dialect::Sqlite, "DELETE FROM artist", "needs `write`"),
            (Dialect::Sqlite, "INSERT INTO artist (name) VALUES ('x')", "needs `write`"),
            (Dialect::Sqlite, "DROP TABLE artist", "needs `admin`"),
            (Dialect::Sqlite, "ATTACH DATABASE '/tmp/x.db' AS x", "ATTACH"),
            (Dialect::Sqlite, "PRAGMA writable_schema = 1", "PRAGMA"),
            (Dialect::Sqlite, "SELECT load_extension('/tmp/evil')", "load_extension"),
            (Dialect::Sqlite, "SELECT readfile('/etc/passwd')", "readfile"),
            (Dialect::Sqlite, "SELECT * FROM pragma_table_info('customer')", "pragma_table_info"),
            (Dialect::Sqlite, "SELECT sql FROM sqlite_master", "system catalog"),
            (Dialect::Sqlite, "SELECT * FROM secrets", "no table"),
            (Dialect::Sqlite, "SELECT * FROM \"SECRETS\"", "no table"),
            (Dialect::Sqlite, "SELECT * FROM main.secrets", "no table"),
            (Dialect::Sqlite, "SELECT ssn FROM customer", "column `ssn`"),
            (Dialect::Sqlite, "SELECT c.\"SSN\" FROM customer AS c", "column"),
            (Dialect::Sqlite, "SELECT * FROM customer", "`*`"),
            (Dialect::Sqlite, "SELECT c.* FROM customer c", "`*`"),
            (Dialect::Sqlite, "SELECT first_name FROM customer ORDER BY ssn", "column `ssn`"),
            (Dialect::Sqlite, "SELECT (SELECT group_concat(ssn) FROM customer)", "column `ssn`"),
            (Dialect::Postgres, "SELECT pg_read_file('/etc/passwd')", "pg_read_file"),
            (Dialect::Postgres, "SELECT pg_sleep(60)", "pg_sleep"),
            (Dialect::Postgres, "SELECT set_config('statement_timeout', '0', false)", "set_config"),
            (Dialect::Postgres, "SELECT nextval('seq')", "nextval"),
            (Dialect::Postgres, "SELECT query_to_xml('select * from secrets', true, true, '')", "query_to_xml"),
            (Dialect::Postgres, "SELECT * FROM dblink('host=x', 'select 1') AS t(a int)", "dblink"),
            (Dialect::Postgres, "SELECT lo_import('/etc/passwd')", "lo_import"),
            (Dialect::Postgres, "SELECT pg_terminate_backend(1)", "pg_terminate_backend"),
            (Dialect::Postgres, "SELECT * FROM pg_catalog.pg_tables", "system catalog"),
            (Dialect::Postgres, "SELECT table_name FROM information_schema.tables", "system catalog"),
            (Dialect::Postgres, "SELECT row_to_json(customer) FROM customer", "whole-row"),
            (Dialect::Postgres, "SELECT row_to_json(c) FROM customer c", "whole-row"),
            (Dialect::Postgres, "SELECT * FROM artist FOR UPDATE", "locking"),
            (Dialect::Postgres, "SELECT * INTO copy FROM artist", "INTO"),
            (Dialect::Postgres, "WITH d AS (DELETE FROM artist RETURNING *) SELECT * FROM d", "changes data"),
            (Dialect::Postgres, "EXPLAIN ANALYZE SELECT 1", "ANALYZE"),
            (Dialect::Postgres, "COPY artist TO '/tmp/x'", "COPY"),
            (Dialect::Postgres, "SET statement_timeout = 0", "SET"),
            (Dialect::Postgres, "BEGIN", "not a statement"),
            (Dialect::Postgres, "SELEC 1", "does not parse"),
        ];
        for (dialect, sql, reason) in cases {
            let refusal = read(*dialect, sql).unwrap_err();
            assert!(refusal.to_string().contains(reason), "{dialect:?} {sql}: {refusal}");
        }
        let long = format!("SELECT '{}'", "x".repeat(MAX_STATEMENT_BYTES));
        assert!(read(Dialect::Sqlite, &long).unwrap_err().rule.contains("over the limit"));
    }

    #[test]
    fn write_and_admin_widen_the_set_explicitly() {
        let write = |sql: &str| check(Dialect::Postgres, Access::Write, &hidden(), sql);
        assert_eq!(write("UPDATE artist SET name = 'x' WHERE artist_id = 1"), Ok(Effect::Write));
        assert_eq!(write("DELETE FROM artist WHERE artist_id = 1"), Ok(Effect::Write));
        assert!(write("CREATE TABLE t (a int)").unwrap_err().to_string().contains("needs `admin`"));
        assert!(write("DELETE FROM secrets").unwrap_err().to_string().contains("no table"));
        assert!(write("UPDATE customer SET ssn = 'x'").unwrap_err().to_string().contains("column `ssn`"));
        assert!(write("UPDATE customer AS c SET (name, ssn) = ('a', 'b')").unwrap_err().to_string().contains("`ssn`"));
        assert!(write("INSERT INTO customer (name, ssn) VALUES ('a', 'b')").unwrap_err().to_string().contains("`ssn`"));
        assert!(write("INSERT INTO secrets VALUES (1)").unwrap_err().to_string().contains("no table"));
        assert!(write("DELETE FROM customer RETURNING *").unwrap_err().to_string().contains("`*` would include"));
        assert!(write("UPDATE customer SET name = 'x' RETURNING ssn").unwrap_err().to_string().contains("`ssn`"));
        assert_eq!(write("DELETE FROM customer WHERE name = 'x' RETURNING name"), Ok(Effect::Write));
        let admin = |sql: &str| check(Dialect::Postgres, Access::Admin, &hidden(), sql);
        assert_eq!(admin("CREATE TABLE t (a int)"), Ok(Effect::Admin));
        assert!(admin("COPY artist TO '/tmp/x'").is_err());
        assert!(admin("SELECT pg_read_file('x')").is_err());
    }

    #[test]
    fn hidden_entries_parse() {
        let hidden = Hidden::parse(&["Secrets".into(), "Customer.SSN".into()]).unwrap();
        assert!(hidden.table("secrets") && hidden.column("customer", "ssn"));
        assert!(Hidden::parse(&["a.b.c".into()]).is_err());
        assert!(Hidden::parse(&["".into()]).is_err());
    }
}
