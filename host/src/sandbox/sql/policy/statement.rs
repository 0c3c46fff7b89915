//! Which statements an access level allows, by kind: an allow-list of
//! statement kinds (queries; DML at `write`; DDL at `admin`), everything
//! else refused whether or not it parses.

use sqlparser::ast::{Statement, UtilityOption};
use sqlparser::dialect::{PostgreSqlDialect, SQLiteDialect};
use sqlparser::keywords::Keyword;
use sqlparser::parser::ParserError;
use sqlparser::tokenizer::{Token, Tokenizer};

use super::dialect::Dialect;
use super::verdict::{Effect, Refusal, Why, refuse};

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

/// `EXPLAIN` options that only change how a plan is shown (PostgreSQL's
/// `EXPLAIN (…)`); any other runs the statement (`ANALYZE` in any form),
/// reads the server's state (`BUFFERS`, `SETTINGS`) or prints every column
/// a scan outputs, hidden ones too (`VERBOSE`).
const EXPLAIN_OPTIONS: &[&str] = &["format", "costs"];

/// Why a statement that does not parse is refused: a statement kind no
/// access level allows (`DO`, `PRAGMA x = ON`…) is denied as such; a
/// statement that could be allowed is malformed, with the parser's reason.
pub(super) fn unparsed(dialect: Dialect, sql: &str, error: ParserError) -> Refusal {
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
            why: Why::Malformed,
        },
    }
}

/// What `statement` does, or why no access level allows it.
pub(super) fn effect_of(statement: &Statement) -> Result<Effect, Refusal> {
    Ok(match statement {
        Statement::Query(_) => Effect::Read,
        Statement::Explain { analyze: true, .. } => {
            return Err(refuse("EXPLAIN ANALYZE runs the statement", "use EXPLAIN without ANALYZE"));
        }
        Statement::Explain { verbose: true, .. } => {
            return Err(refuse(
                "EXPLAIN VERBOSE lists every column a scan reads, hidden ones too",
                "use EXPLAIN without VERBOSE",
            ));
        }
        Statement::Explain { statement, options, estimate, .. } if matches!(**statement, Statement::Query(_)) => {
            explain_options(options.as_deref().unwrap_or_default())?;
            if *estimate {
                return Err(refuse("EXPLAIN ESTIMATE is not supported", "use EXPLAIN"));
            }
            Effect::Read
        }
        Statement::Explain { .. } => {
            return Err(refuse("EXPLAIN of a statement that is not a query", "explain a query"));
        }
        Statement::Insert(_) | Statement::Update(_) | Statement::Delete(_) | Statement::Merge(_) => Effect::Write,
        Statement::CreateTable(_)
        | Statement::CreateView(_)
        | Statement::CreateIndex(_)
        | Statement::AlterTable(_)
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

/// Refuse any `EXPLAIN (…)` option but those that only shape the output.
fn explain_options(options: &[UtilityOption]) -> Result<(), Refusal> {
    for option in options {
        let name = option.name.value.to_lowercase();
        if name == "analyze" || name == "analyse" {
            return Err(refuse("EXPLAIN ANALYZE runs the statement", "use EXPLAIN without ANALYZE"));
        }
        if !EXPLAIN_OPTIONS.contains(&name.as_str()) {
            return Err(refuse(
                format!("the EXPLAIN option {} is not allowed", name.to_uppercase()),
                format!("use EXPLAIN with {} only", EXPLAIN_OPTIONS.join(", ").to_uppercase()),
            ));
        }
    }
    Ok(())
}
