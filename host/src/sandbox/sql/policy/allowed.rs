//! What a statement may call and cast to: the allow-list in
//! `allowed.toml` (data, read once), per engine and per access level, plus
//! the functions an operator allows for one database.
//!
//! The same lists drive the parser's policy and SQLite's authorizer, so on
//! SQLite a function is refused twice: once here, once by the engine.

use std::collections::BTreeSet;
use std::sync::OnceLock;

use serde::Deserialize;
use sqlparser::ast::{ArrayElemTypeDef, DataType, Ident};

use super::dialect::Dialect;
use super::schema::{Hidden, Visible};
use crate::contract::Access;

/// The allow-list, as written in `allowed.toml`.
const ALLOWED: &str = include_str!("allowed.toml");

/// One engine's section of `allowed.toml`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EngineList {
    /// Keywords the SQL parser reads as function calls.
    pub syntax: Vec<String>,
    /// Functions every access level may call.
    pub read: Vec<String>,
    /// Functions `write` adds.
    pub write: Vec<String>,
    /// Functions `admin` adds.
    pub admin: Vec<String>,
    /// Table-valued functions a FROM clause may read (SQLite's virtual
    /// tables; PostgreSQL's set-returning functions are in the levels).
    #[serde(default)]
    pub tables: Vec<String>,
    /// The columns of a set-returning function's rows, where they have
    /// names of their own.
    #[serde(default)]
    pub columns: std::collections::BTreeMap<String, Vec<String>>,
    /// Types a value may be cast to.
    pub casts: Vec<String>,
}

/// Both engines' lists.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AllowList {
    /// PostgreSQL's.
    pub postgres: EngineList,
    /// SQLite's.
    pub sqlite: EngineList,
}

/// The allow-list of `allowed.toml`.
pub fn allow_list() -> &'static AllowList {
    static LIST: OnceLock<AllowList> = OnceLock::new();
    LIST.get_or_init(|| toml::from_str(ALLOWED).expect("allowed.toml is valid (a unit test reads it)"))
}

impl AllowList {
    /// The section of `dialect`.
    pub fn engine(&self, dialect: Dialect) -> &EngineList {
        match dialect {
            Dialect::Postgres => &self.postgres,
            Dialect::Sqlite => &self.sqlite,
        }
    }
}

/// What one statement may call: its engine's list up to its access level,
/// and the operator's own additions for this database.
#[derive(Debug, Clone)]
pub struct Functions {
    dialect: Dialect,
    names: BTreeSet<String>,
    tables: BTreeSet<String>,
}

impl Functions {
    /// The functions of `dialect` at `access`, plus `extra` (the operator's
    /// `allow_functions`, by their lower-case names, as PostgreSQL folds an
    /// unquoted name and SQLite compares them).
    pub fn new(dialect: Dialect, access: Access, extra: &[String]) -> Functions {
        let list = allow_list().engine(dialect);
        let mut names: BTreeSet<String> = list.syntax.iter().chain(&list.read).cloned().collect();
        if access >= Access::Write {
            names.extend(list.write.iter().cloned());
        }
        if access >= Access::Admin {
            names.extend(list.admin.iter().cloned());
        }
        let extra = extra.iter().map(|name| name.to_lowercase());
        names.extend(extra.clone());
        let tables = list.tables.iter().cloned().chain(extra).collect();
        Functions { dialect, names, tables }
    }

    /// Whether a function of this name may be called. PostgreSQL folds an
    /// unquoted name to lower case and keeps a quoted one as written
    /// (`"LOWER"` is not `lower`); SQLite ignores case.
    pub fn allows(&self, name: &Ident) -> bool {
        self.names.contains(&self.fold(name))
    }

    /// Whether `name` may be read as a table-valued function in FROM.
    pub fn allows_table(&self, name: &Ident) -> bool {
        let folded = self.fold(name);
        match self.dialect {
            Dialect::Sqlite => self.tables.contains(&folded),
            Dialect::Postgres => self.names.contains(&folded),
        }
    }

    /// Whether SQLite's authorizer may let a call of `name` through (the
    /// engine names functions in lower case; operators such as `->` too).
    pub fn allows_name(&self, name: &str) -> bool {
        self.names.contains(&name.to_ascii_lowercase())
    }

    /// A name as the engine compares it: PostgreSQL folds an unquoted name's
    /// ASCII letters only (`\u{212a}` is not `k`), SQLite ignores ASCII case.
    fn fold(&self, name: &Ident) -> String {
        match (self.dialect, name.quote_style) {
            (Dialect::Postgres, Some(_)) => name.value.clone(),
            _ => name.value.to_ascii_lowercase(),
        }
    }
}

/// Whether a value may be cast to `data_type` in `dialect`: its name (and,
/// for an array, its element's) is on the list.
pub fn cast_allowed(dialect: Dialect, data_type: &DataType) -> bool {
    let element = match data_type {
        DataType::Array(
            ArrayElemTypeDef::SquareBracket(inner, _)
            | ArrayElemTypeDef::AngleBracket(inner)
            | ArrayElemTypeDef::Parenthesis(inner),
        ) => return cast_allowed(dialect, inner),
        DataType::Array(ArrayElemTypeDef::None) => return false,
        other => other,
    };
    let casts = &allow_list().engine(dialect).casts;
    casts.iter().any(|allowed| *allowed == type_name(element))
}

/// A type's name as the list spells it: lower case, without length,
/// precision or interval fields, single-spaced.
pub fn type_name(data_type: &DataType) -> String {
    if let DataType::Interval { .. } = data_type {
        return "interval".into();
    }
    let written = data_type.to_string().to_lowercase();
    let mut name = String::with_capacity(written.len());
    let mut depth = 0usize;
    for c in written.chars() {
        match c {
            '(' => depth += 1,
            ')' => depth = depth.saturating_sub(1),
            c if depth == 0 => name.push(c),
            _ => {}
        }
    }
    name.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_list_reads_and_has_no_repeats() {
        for dialect in [Dialect::Postgres, Dialect::Sqlite] {
            let list = allow_list().engine(dialect);
            let mut seen = BTreeSet::new();
            for name in list.syntax.iter().chain(&list.read).chain(&list.write).chain(&list.admin) {
                assert!(seen.insert(name), "{dialect:?}: `{name}` is listed twice");
                assert_eq!(name, &name.to_lowercase(), "{dialect:?}: `{name}` is not lower case");
            }
        }
    }

    #[test]
    fn levels_add_to_the_ones_below() {
        let ident = |name: &str| Ident::new(name);
        let read = Functions::new(Dialect::Postgres, Access::Read, &[]);
        let write = Functions::new(Dialect::Postgres, Access::Write, &[]);
        let admin = Functions::new(Dialect::Postgres, Access::Admin, &[]);
        assert!(read.allows(&ident("LOWER")) && !read.allows(&Ident::with_quote('"', "LOWER")));
        assert!(!read.allows(&ident("nextval")) && !write.allows(&ident("nextval")) && !admin.allows(&ident("setval")));
        for never in ["pg_advisory_lock", "set_config", "ts_stat", "query_to_xml", "pg_sleep", "version"] {
            assert!(!admin.allows(&ident(never)), "{never}");
        }
        let operator = Functions::new(Dialect::Postgres, Access::Read, &["my_score".into()]);
        assert!(operator.allows(&ident("my_score")) && !read.allows(&ident("my_score")));
        let sqlite = Functions::new(Dialect::Sqlite, Access::Admin, &[]);
        assert!(sqlite.allows_name("->>") && sqlite.allows_name("LIKE") && !sqlite.allows_name("load_extension"));
        assert!(sqlite.allows_table(&ident("json_each")) && !sqlite.allows_table(&ident("pragma_table_info")));
    }

    #[test]
    fn casts_are_read_by_name() {
        use sqlparser::dialect::PostgreSqlDialect;
        use sqlparser::parser::Parser;
        let cast = |written: &str| {
            let mut parser = Parser::new(&PostgreSqlDialect {}).try_with_sql(written).unwrap();
            cast_allowed(Dialect::Postgres, &parser.parse_data_type().unwrap())
        };
        for ok in ["int", "numeric(10,2)", "varchar(3)", "timestamp(6) with time zone", "interval day", "text[][]"] {
            assert!(cast(ok), "{ok}");
        }
        for refused in ["regclass", "regproc", "oid", "xml", "pg_catalog.int4", "\"int4\"", "secrets", "tsvector"] {
            assert!(!cast(refused), "{refused}");
        }
    }
}

/// What one database allows one caller.
#[derive(Debug, Clone)]
pub struct Policy<'a> {
    /// The connection's dialect.
    pub dialect: Dialect,
    /// The caller's access here (the lower of the database's and the agent's).
    pub access: Access,
    /// What the operator hid.
    pub hidden: &'a Hidden,
    /// The schema as last read, less what is hidden.
    pub visible: &'a Visible,
    /// The functions this access level may call, with the operator's own.
    pub functions: &'a Functions,
}
