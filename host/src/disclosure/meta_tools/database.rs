//! `database(subcommand, database, table?, sql?)`: list tables, discover
//! columns, run a read query, through a database adapter's actions.

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

use super::{CallContext, CallFuture, MetaTool, View, definition, first_names, missing, parse_args, unknown};
use crate::catalog::Category;
use crate::contract::Kind;
use crate::disclosure::formats::ToolDef;
use crate::disclosure::policy::ListMode;

pub(crate) struct Database;

const NAME: &str = "database";

/// Table names listed per database in Tier 1.
const SHOWN_TABLES: usize = 10;

#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
enum Subcommand {
    /// List the tables.
    ListTables,
    /// The columns of a table.
    Discover,
    /// Run a read-only query.
    Query,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Args {
    /// `list_tables` lists tables with descriptions and column counts; `discover` returns the columns of
    /// `table` (or of every table); `query` runs one read-only `sql` statement.
    subcommand: Subcommand,
    /// The database.
    database: String,
    /// For `discover`: the table.
    table: Option<String>,
    /// For `query`: one read-only SQL statement.
    sql: Option<String>,
}

/// The Tier-1 lines: name, one line, and the tables once they are known.
pub(crate) fn stub_lines(view: &View<'_>) -> Vec<String> {
    view.catalog
        .plugins_of(Kind::Database)
        .map(|p| {
            let tables = match p.tables() {
                Some(tables) => format!(
                    "Tables ({}): {}",
                    tables.len(),
                    first_names(tables.iter().map(String::as_str).collect::<Vec<_>>().into_iter(), SHOWN_TABLES)
                ),
                None => "Tables: see list_tables".to_owned(),
            };
            format!("- {}: {} {tables}", p.name(), p.stub().description)
        })
        .collect()
}

impl MetaTool for Database {
    fn name(&self) -> &'static str {
        NAME
    }

    fn definition(&self, view: &View<'_>) -> Option<ToolDef> {
        let offered = view.policy.allows(Category::Database) && view.policy.databases == ListMode::Progressive;
        let lines = stub_lines(view);
        if !offered || lines.is_empty() {
            return None;
        }
        let names: Vec<String> = view.catalog.plugins_of(Kind::Database).map(|p| p.name().to_owned()).collect();
        let description = format!(
            "Query a database: `list_tables`, then `discover` a table's columns, then `query` with read-only SQL.\n\
             Databases:\n{}",
            lines.join("\n")
        );
        Some(definition::<Args>(NAME, description, Category::Database, &[("database", &names)]))
    }

    fn call<'a>(&'a self, cx: CallContext<'a>, args: Value) -> CallFuture<'a> {
        Box::pin(async move {
            let args: Args = parse_args(NAME, args)?;
            let plugin = cx
                .catalog
                .get(&args.database)
                .filter(|p| p.stub().kind == Kind::Database && cx.policy.allows(Category::Database))
                .ok_or_else(|| {
                    unknown(
                        NAME,
                        "database",
                        &args.database,
                        cx.catalog.plugins_of(Kind::Database).map(|p| p.name().to_owned()),
                    )
                })?;
            let db = plugin.name();
            match args.subcommand {
                Subcommand::ListTables => list_tables(&cx, plugin).await,
                Subcommand::Discover => match args.table {
                    Some(table) => cx.host.call_json(db, "describe_table", &json!({ "table": table })).await,
                    None => {
                        let tables = list_tables(&cx, plugin).await?;
                        let mut schemas = Vec::new();
                        for table in tables.as_array().into_iter().flatten() {
                            let name = table.get("name").cloned().unwrap_or_default();
                            schemas.push(cx.host.call_json(db, "describe_table", &json!({ "table": name })).await?);
                        }
                        Ok(Value::Array(schemas))
                    }
                },
                Subcommand::Query => {
                    let sql = args.sql.ok_or_else(|| missing(NAME, "sql", "query"))?;
                    cx.host.call_json(db, "query", &json!({ "sql": sql })).await
                }
            }
        })
    }
}

/// Call the adapter's `list_tables`, remembering the names for Tier 1.
async fn list_tables(cx: &CallContext<'_>, plugin: &crate::load::Plugin) -> crate::Result<Value> {
    let tables = cx.host.call_json(plugin.name(), "list_tables", &json!({})).await?;
    let names: Vec<String> = tables
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| t.get("name").and_then(Value::as_str).map(str::to_owned))
        .collect();
    plugin.remember_tables(names);
    Ok(tables)
}
