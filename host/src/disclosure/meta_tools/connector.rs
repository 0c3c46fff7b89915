//! `connector(subcommand, connector, action?, parameters?)`: discover a
//! connector's actions, or execute one.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::{CallContext, CallFuture, MetaTool, View, definition, first_names, missing, parse_args, unknown};
use crate::catalog::Category;
use crate::contract::{Access, Kind};
use crate::disclosure::formats::{ToolDef, model_schema};
use crate::disclosure::policy::ListMode;

pub(crate) struct Connector;

const NAME: &str = "connector";

/// Action names listed per connector in Tier 1.
const SHOWN_ACTIONS: usize = 8;

#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
enum Subcommand {
    /// List the connector's actions with their input schemas.
    Discover,
    /// Run one action.
    Execute,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Args {
    /// `discover` lists the connector's actions with their input schemas; `execute` runs one.
    subcommand: Subcommand,
    /// The connector.
    connector: String,
    /// For `execute`: the action to run.
    action: Option<String>,
    /// For `execute`: the action's input, an object matching its schema.
    parameters: Option<Map<String, Value>>,
}

/// An action as `discover` returns it.
#[derive(Serialize)]
pub(crate) struct ActionSchema {
    pub name: String,
    pub description: String,
    pub input_schema: Value,
    pub access: Access,
}

#[derive(Serialize)]
struct Discovered {
    connector: String,
    description: String,
    actions: Vec<ActionSchema>,
}

/// The Tier-1 lines: name, one line, action names.
pub(crate) fn stub_lines(view: &View<'_>) -> Vec<String> {
    view.catalog
        .plugins_of(Kind::Connector)
        .map(|p| {
            let stub = p.stub();
            format!(
                "- {}: {} Actions: {}",
                stub.name,
                stub.description,
                first_names(
                    stub.actions.iter().map(|a| a.name.as_str()).collect::<Vec<_>>().into_iter(),
                    SHOWN_ACTIONS
                )
            )
        })
        .collect()
}

impl MetaTool for Connector {
    fn name(&self) -> &'static str {
        NAME
    }

    fn definition(&self, view: &View<'_>) -> Option<ToolDef> {
        let offered = view.policy.allows(Category::Connector) && view.policy.connectors == ListMode::Progressive;
        let lines = stub_lines(view);
        if !offered || lines.is_empty() {
            return None;
        }
        let names: Vec<String> = view.catalog.plugins_of(Kind::Connector).map(|p| p.name().to_owned()).collect();
        let description = format!(
            "Use an API connector. `discover` returns its actions with their input schemas; `execute` runs \
             `action` with `parameters`.\nConnectors:\n{}",
            lines.join("\n")
        );
        Some(definition::<Args>(NAME, description, Category::Connector, &[("connector", &names)]))
    }

    fn call<'a>(&'a self, cx: CallContext<'a>, args: Value) -> CallFuture<'a> {
        Box::pin(async move {
            let args: Args = parse_args(NAME, args)?;
            let plugin = cx
                .catalog
                .get(&args.connector)
                .filter(|p| p.stub().kind == Kind::Connector && cx.policy.allows(Category::Connector))
                .ok_or_else(|| {
                    unknown(
                        NAME,
                        "connector",
                        &args.connector,
                        cx.catalog.plugins_of(Kind::Connector).map(|p| p.name().to_owned()),
                    )
                })?;
            match args.subcommand {
                Subcommand::Discover => {
                    let manifest = cx.host.describe(plugin.name()).await?;
                    let discovered = Discovered {
                        connector: manifest.name.clone(),
                        description: manifest.description.clone(),
                        actions: manifest
                            .actions
                            .iter()
                            .map(|a| ActionSchema {
                                name: a.name.clone(),
                                description: a.description.clone(),
                                input_schema: model_schema(a.input_schema.clone()),
                                access: a.access,
                            })
                            .collect(),
                    };
                    Ok(serde_json::to_value(discovered).expect("plain data serializes"))
                }
                Subcommand::Execute => {
                    let action = args.action.ok_or_else(|| missing(NAME, "action", "execute"))?;
                    if !plugin.stub().action_names().any(|a| a == action) {
                        return Err(unknown(NAME, "action", &action, plugin.stub().action_names().map(str::to_owned)));
                    }
                    let input = Value::Object(args.parameters.unwrap_or_default());
                    cx.host.call_json(plugin.name(), &action, &input).await
                }
            }
        })
    }
}
