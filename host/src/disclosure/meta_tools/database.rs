//! `database(subcommand, database, table?, sql?)`: list tables, discover
//! columns, run a read query, through a database adapter's actions.

use std::sync::Arc;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

use super::line::Line;
use super::tool::{CallContext, CallFuture, MetaTool, Reach, View, failing_lines, missing, named_or_failing};
use crate::catalog::Category;
use crate::contract::{Access, Kind};
use crate::error::{Error, Result};
use crate::invoke::Output;
use crate::load::Plugin;
use crate::sandbox::sql::{TableNames, TableShape};

pub(crate) struct Database;

/// Table names listed per database in Tier 1.
const SHOWN_TABLES: usize = 10;

#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Subcommand {
    /// List the tables.
    ListTables,
    /// The columns of a table.
    Discover,
    /// Run one SQL statement.
    Query,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct Args {
    /// `list_tables` lists tables with descriptions and column counts (views marked); `discover` returns the
    /// columns of `table` (or of every table) with keys, unique sets and defaults; `query` runs one `sql`
    /// statement.
    subcommand: Subcommand,
    /// The database.
    database: String,
    /// For `discover`: the table.
    table: Option<String>,
    /// For `query`: one SQL statement (a query, unless the database's line grants write access).
    sql: Option<String>,
}

impl Database {
    /// The `[databases.NAME]` resources this meta-tool reaches.
    const REACH: Reach = Reach { tool: <Self as MetaTool>::NAME, what: "database", section: "databases" };
}

impl MetaTool for Database {
    type Args = Args;
    const NAME: &'static str = "database";
    const CATEGORY: Category = Category::Database;
    const SECTION: &'static str = "Databases";
    const PURPOSE: &'static str = "Query a database: `list_tables`, then `discover` a table's columns, then `query` \
                                   with SQL (queries only, unless a database's line says it grants write or admin \
                                   access).";
    const LABEL: &'static str = "Databases";
    const NOUN: &'static str = "database";
    const CHOICE: Option<&'static str> = Some("database");

    /// Name, one line, and its tables: read by the host from a configured
    /// database, or as the adapter last listed them.
    fn lines(view: &View<'_>) -> Vec<Line> {
        view.catalog
            .plugins_of(Kind::Database)
            .filter(|p| view.policy.shows_plugin(p))
            .map(|p| {
                let (description, tables, access) = match p.settings().grants.sql.database() {
                    Some(database) => (
                        database.settings().description.clone().unwrap_or_else(|| p.stub().description.clone()),
                        database.table_names(),
                        database.settings().access.min(view.policy.caller.ceiling(p.name())),
                    ),
                    None => (
                        p.stub().description.clone(),
                        view.tables.of(p).map_or(TableNames::NotRead, |t| TableNames::Read(t.to_vec())),
                        Access::Read,
                    ),
                };
                // Queries are the rule; a database that grants more says so.
                let access = if access > Access::Read { format!(" ({access} access)") } else { String::new() };
                let tables = match tables {
                    TableNames::Read(names) => {
                        let more = if names.len() > SHOWN_TABLES { ", …" } else { "" };
                        format!("Tables ({}): {}{more}", names.len(), names[..names.len().min(SHOWN_TABLES)].join(", "))
                    }
                    TableNames::NotRead => "Tables: see list_tables".to_owned(),
                    TableNames::Failed(_) => "Tables: not readable now (see list_tables)".to_owned(),
                };
                Line::described(p.name(), p.name(), &format!("{description}{access} {tables}"))
            })
            .chain(failing_lines(view, Self::REACH.section))
            .collect()
    }

    fn choices(view: &View<'_>) -> Vec<String> {
        view.catalog
            .plugins_of(Kind::Database)
            .filter(|p| view.policy.shows_plugin(p))
            .map(|p| p.name().to_owned())
            .collect()
    }

    fn run<'a>(mut cx: CallContext<'a>, args: Args) -> CallFuture<'a> {
        Box::pin(async move {
            let (catalog, policy) = (cx.catalog, cx.policy);
            let databases =
                || catalog.plugins_of(Kind::Database).filter(|p| policy.shows_plugin(p)).map(|p| p.name().to_owned());
            let found =
                catalog.get(&args.database).filter(|p| p.stub().kind == Kind::Database && policy.shows_plugin(p));
            let plugin = named_or_failing(&cx, &Self::REACH, &args.database, found, databases())?;
            let cx = &mut cx;
            match args.subcommand {
                Subcommand::ListTables => list_tables(cx, plugin).await.map(Output::Json),
                Subcommand::Discover => match args.table {
                    Some(table) => describe(cx, plugin, Value::String(table)).await.map(Output::Json),
                    None => {
                        let tables = list_tables(cx, plugin).await?;
                        let mut schemas = Vec::new();
                        for table in tables.as_array().into_iter().flatten() {
                            schemas.push(describe(cx, plugin, table.get("name").cloned().unwrap_or_default()).await?);
                        }
                        Ok(Output::Json(Value::Array(schemas)))
                    }
                },
                Subcommand::Query => {
                    let sql = args.sql.ok_or_else(|| missing(Self::NAME, "sql", "query"))?;
                    action(cx, plugin, "query", json!({ "sql": sql })).await
                }
            }
        })
    }
}

/// Call the adapter's `name` action with `input`.
async fn action(cx: &mut CallContext<'_>, plugin: &Plugin, name: &str, input: Value) -> Result<Output> {
    let tool =
        cx.catalog.tools_of(plugin.name()).iter().find(|t| t.action == name).ok_or_else(|| Error::UnknownAction {
            plugin: plugin.name().to_owned(),
            action: name.to_owned(),
            known: plugin.stub().action_names().map(str::to_owned).collect(),
        })?;
    cx.call(tool, input).await
}

/// Call the adapter's `list_tables`, noting the names for Tier 1, with
/// views marked.
async fn list_tables(cx: &mut CallContext<'_>, plugin: &Arc<Plugin>) -> Result<Value> {
    let mut tables = action(cx, plugin, "list_tables", json!({})).await?.into_json();
    let names: Vec<String> = tables
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| t.get("name").and_then(Value::as_str).map(str::to_owned))
        .collect();
    cx.tables.note(plugin, names);
    for table in tables.as_array_mut().into_iter().flatten() {
        if shape_of(plugin, table).is_some_and(|shape| shape.view) {
            table.as_object_mut().map(|t| t.insert("view".into(), Value::Bool(true)));
        }
    }
    Ok(tables)
}

/// Call the adapter's `describe_table`, and add what the host read of the
/// table beyond the adapter's contract: `"view": true`, `"unique"` (the
/// column sets held unique besides the primary key) and each column's
/// `"default"`.
async fn describe(cx: &mut CallContext<'_>, plugin: &Plugin, table: Value) -> Result<Value> {
    let mut schema = action(cx, plugin, "describe_table", json!({ "table": table })).await?.into_json();
    let Some(shape) = shape_of(plugin, &schema) else { return Ok(schema) };
    let Some(object) = schema.as_object_mut() else { return Ok(schema) };
    if shape.view {
        object.insert("view".into(), Value::Bool(true));
    }
    if !shape.unique.is_empty() {
        object.insert("unique".into(), json!(shape.unique));
    }
    for column in object.get_mut("columns").and_then(Value::as_array_mut).into_iter().flatten() {
        let default = column.get("name").and_then(Value::as_str).and_then(|name| shape.defaults.get(name));
        if let (Some(default), Some(column)) = (default.cloned(), column.as_object_mut()) {
            column.insert("default".into(), Value::String(default));
        }
    }
    Ok(schema)
}

/// What the host read of the table an adapter's answer names, where the
/// adapter is bound to a configured database (nothing is read now).
fn shape_of(plugin: &Plugin, table: &Value) -> Option<TableShape> {
    let name = table.get("name").and_then(Value::as_str)?;
    plugin.settings().grants.sql.database()?.shape(name)
}
