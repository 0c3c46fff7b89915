//! `database(subcommand, database, table?, sql?)`: list tables, discover
//! columns, run a read query, through a database adapter's actions.

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

use super::tool::{CallContext, CallFuture, MetaTool, View, missing, named};
use crate::catalog::Category;
use crate::contract::Kind;
use crate::error::{Error, Result};
use crate::load::Plugin;
use crate::sandbox::sql::TableList;

pub(crate) struct Database;

/// Table names listed per database in Tier 1.
use crate::sandbox::sql::SHOWN_TABLES;

#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Subcommand {
    /// List the tables.
    ListTables,
    /// The columns of a table.
    Discover,
    /// Run a read-only query.
    Query,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct Args {
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

impl MetaTool for Database {
    type Args = Args;
    const NAME: &'static str = "database";
    const CATEGORY: Category = Category::Database;
    const SECTION: &'static str = "Databases";
    const PURPOSE: &'static str = "Query a database: `list_tables`, then `discover` a table's columns, then `query` \
                                   with SQL (read-only unless the database grants more).";
    const LABEL: &'static str = "Databases";
    const CHOICE: Option<&'static str> = Some("database");

    /// Name, one line, and its tables: read by the host from a configured
    /// database, or as the adapter last listed them.
    fn lines(view: &View<'_>) -> Vec<String> {
        view.catalog
            .plugins_of(Kind::Database)
            .filter(|p| view.policy.shows_plugin(p))
            .map(|p| {
                let (description, tables) = match p.settings().grants.sql.database() {
                    Some(database) => (
                        database.settings().description.clone().unwrap_or_else(|| p.stub().description.clone()),
                        database.table_list(),
                    ),
                    None => (
                        p.stub().description.clone(),
                        p.tables().map_or(TableList::Unknown, |t| TableList::Known(t.to_vec())),
                    ),
                };
                let tables = match tables {
                    TableList::Known(names) => {
                        let more = if names.len() > SHOWN_TABLES { ", …" } else { "" };
                        format!("Tables ({}): {}{more}", names.len(), names[..names.len().min(SHOWN_TABLES)].join(", "))
                    }
                    TableList::Unknown => "Tables: see list_tables".to_owned(),
                    TableList::Failed(_) => "Tables: not readable now (see list_tables)".to_owned(),
                };
                format!("- {}: {description} {tables}", p.name())
            })
            .collect()
    }

    fn choices(view: &View<'_>) -> Vec<String> {
        view.catalog
            .plugins_of(Kind::Database)
            .filter(|p| view.policy.shows_plugin(p))
            .map(|p| p.name().to_owned())
            .collect()
    }

    fn run<'a>(cx: CallContext<'a>, args: Args) -> CallFuture<'a> {
        Box::pin(async move {
            let databases = || {
                cx.catalog.plugins_of(Kind::Database).filter(|p| cx.policy.shows_plugin(p)).map(|p| p.name().to_owned())
            };
            let found =
                cx.catalog.get(&args.database).filter(|p| p.stub().kind == Kind::Database && cx.policy.shows_plugin(p));
            let plugin = named(Self::NAME, "database", &args.database, found, databases())?;
            match args.subcommand {
                Subcommand::ListTables => list_tables(&cx, plugin).await,
                Subcommand::Discover => match args.table {
                    Some(table) => action(&cx, plugin, "describe_table", json!({ "table": table })).await,
                    None => {
                        let tables = list_tables(&cx, plugin).await?;
                        let mut schemas = Vec::new();
                        for table in tables.as_array().into_iter().flatten() {
                            let name = table.get("name").cloned().unwrap_or_default();
                            schemas.push(action(&cx, plugin, "describe_table", json!({ "table": name })).await?);
                        }
                        Ok(Value::Array(schemas))
                    }
                },
                Subcommand::Query => {
                    let sql = args.sql.ok_or_else(|| missing(Self::NAME, "sql", "query"))?;
                    action(&cx, plugin, "query", json!({ "sql": sql })).await
                }
            }
        })
    }
}

/// Call the adapter's `name` action with `input`.
async fn action(cx: &CallContext<'_>, plugin: &Plugin, name: &str, input: Value) -> Result<Value> {
    let tool =
        cx.catalog.tools_of(plugin.name()).iter().find(|t| t.action == name).ok_or_else(|| Error::UnknownAction {
            plugin: plugin.name().to_owned(),
            action: name.to_owned(),
            known: plugin.stub().action_names().map(str::to_owned).collect(),
        })?;
    cx.backend.call(cx.catalog, tool, input, cx.caller).await
}

/// Call the adapter's `list_tables`, remembering the names for Tier 1.
async fn list_tables(cx: &CallContext<'_>, plugin: &Plugin) -> Result<Value> {
    let tables = action(cx, plugin, "list_tables", json!({})).await?;
    let names: Vec<String> = tables
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| t.get("name").and_then(Value::as_str).map(str::to_owned))
        .collect();
    plugin.remember_tables(names);
    Ok(tables)
}
