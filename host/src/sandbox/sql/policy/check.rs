//! The policy's entry: what one statement may do at an access level, and
//! why a refused one is refused.

use super::allowed::Policy;
use super::dialect::Dialect;
use super::verdict::{Effect, Refusal, Why, deny, refuse};
use std::collections::BTreeSet;
use std::ops::ControlFlow;

use sqlparser::ast::Visit;
use sqlparser::dialect::{PostgreSqlDialect, SQLiteDialect};
use sqlparser::parser::Parser;

use crate::contract::Access;

/// Longest statement accepted, in bytes.
pub const MAX_STATEMENT_BYTES: usize = 64 * 1024;

/// Most queries one statement may combine with `UNION`, `INTERSECT` or
/// `EXCEPT`. The parser builds such a chain without recursing, so its own
/// limit does not bound it, while everything that reads the tree after it
/// (this walk, dropping the tree, SQLite's planner) recurses once per
/// query, with large frames: bounded here, before parsing. SQLite is told
/// the same limit. (The walk runs on a stack of its own, `sql::stack`,
/// which also holds the deepest chain of operators 64 KiB can spell.)
pub const MAX_COMPOUND: usize = 64;

/// Check `sql` against `policy`; what it does if it may run.
pub fn check(policy: &Policy<'_>, sql: &str) -> Result<Effect, Refusal> {
    if sql.len() > MAX_STATEMENT_BYTES {
        return Err(refuse(
            format!("the statement is {} bytes, over the limit of {MAX_STATEMENT_BYTES}", sql.len()),
            "send a shorter statement (filter in SQL rather than listing values)",
        ));
    }
    // Neither engine reads past a NUL: SQLite ends the statement there, and
    // PostgreSQL's protocol cannot carry one (the client fails to send it).
    if sql.contains('\0') {
        return Err(Refusal {
            rule: "the statement contains a NUL character (U+0000)".into(),
            hint: "remove it; SQL text never needs one (for a zero byte in data, use a parameter or a blob literal)"
                .into(),
            why: Why::Malformed,
        });
    }
    lexemes(policy.dialect, sql)?;
    let parsed = match policy.dialect {
        Dialect::Sqlite => Parser::parse_sql(&SQLiteDialect {}, sql),
        Dialect::Postgres => Parser::parse_sql(&PostgreSqlDialect {}, sql),
    };
    let statements = parsed.map_err(|e| super::statement::unparsed(policy.dialect, sql, e))?;
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
    let effect = super::statement::effect_of(statement)?;
    let needed = match effect {
        Effect::Read => Access::Read,
        Effect::Write => Access::Write,
        Effect::Admin => Access::Admin,
    };
    if needed > policy.access {
        let allowed = match policy.access {
            Access::Read => "queries only (SELECT, WITH … SELECT, VALUES, EXPLAIN)",
            Access::Write => "queries and INSERT, UPDATE, DELETE, MERGE",
            Access::Admin => "queries, DML and DDL",
        };
        return Err(deny(
            format!("this database grants `{}` access, and this statement needs `{needed}`", policy.access),
            format!("it allows {allowed}"),
        ));
    }
    // EXPLAIN's options were checked with its kind: the rest is its query.
    let statement = match statement {
        sqlparser::ast::Statement::Explain { statement, .. } => statement,
        other => other,
    };
    let mut checker = super::walk::Checker {
        policy,
        effect,
        names: super::scope::Names::of(statement, policy.dialect, policy.visible),
        depth: 0,
        function_names: BTreeSet::new(),
        cte_scopes: Vec::new(),
        ddl_targets: BTreeSet::new(),
    };
    // The tables first, so that a refusal names a table before its columns
    // (a CTE's name is checked in its scope, by the visit).
    for relation in &checker.names.relations_named {
        if checker.names.ctes.contains_key(&super::scope::last(relation)) {
            continue;
        }
        if let ControlFlow::Break(refusal) = checker.relation(relation) {
            return Err(refusal);
        }
    }
    match statement.visit(&mut checker) {
        ControlFlow::Break(refusal) => Err(refusal),
        ControlFlow::Continue(()) => Ok(effect),
    }
}

/// What is read from the tokens before parsing: how many queries the
/// statement combines (see [`MAX_COMPOUND`]), and on PostgreSQL the
/// spellings the server reads differently from the SQL parser: a
/// Unicode-escaped identifier (`U&"\0065mail"` is `email` to the server,
/// `U & "\0065mail"` to the parser) and a dollar-quote tag that starts with
/// a digit (older servers read `$1a$` as a parameter and what follows as
/// SQL). A statement that does not tokenize is left to the parser to
/// refuse with its reason.
fn lexemes(dialect: Dialect, sql: &str) -> Result<(), Refusal> {
    use sqlparser::keywords::Keyword;
    use sqlparser::tokenizer::{Token, Tokenizer};
    let tokens = match dialect {
        Dialect::Sqlite => Tokenizer::new(&SQLiteDialect {}, sql).tokenize(),
        Dialect::Postgres => Tokenizer::new(&PostgreSqlDialect {}, sql).tokenize(),
    };
    let Ok(tokens) = tokens else { return Ok(()) };
    let combined = 1 + tokens
        .iter()
        .filter(|t| {
            matches!(t, Token::Word(w) if matches!(w.keyword, Keyword::UNION | Keyword::INTERSECT | Keyword::EXCEPT | Keyword::MINUS))
        })
        .count();
    if combined > MAX_COMPOUND {
        return Err(refuse(
            format!("the statement combines {combined} queries with UNION, INTERSECT or EXCEPT"),
            format!("combine at most {MAX_COMPOUND} (for many literal rows, use one VALUES list)"),
        ));
    }
    if dialect == Dialect::Sqlite {
        return Ok(());
    }
    for pair in tokens.windows(3) {
        if let [Token::Word(u), Token::Ampersand, Token::Word(quoted)] = pair
            && u.quote_style.is_none()
            && u.value.eq_ignore_ascii_case("u")
            && quoted.quote_style == Some('"')
        {
            return Err(refuse("Unicode-escaped identifiers (U&\"…\") are not supported", "write the name plainly"));
        }
    }
    for token in &tokens {
        if let Token::DollarQuotedString(quoted) = token
            && quoted.tag.as_deref().is_some_and(|tag| tag.starts_with(|c: char| c.is_ascii_digit()))
        {
            return Err(refuse("a dollar-quote tag may not start with a digit", "use $$…$$ or a tag like $a$"));
        }
    }
    Ok(())
}
