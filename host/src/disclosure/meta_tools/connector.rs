//! `connector(subcommand, connector, action?, parameters?)`: discover a
//! connector's actions, or execute one.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::line::Line;
use super::tool::{
    CallContext, CallFuture, MetaTool, Reach, View, failing_lines, first_names, missing, named, named_or_failing,
    to_value,
};
use crate::catalog::Category;
use crate::contract::{Access, Kind};
use crate::invoke::Output;

pub(crate) struct Connector;

/// Action names listed per connector in Tier 1.
const SHOWN_ACTIONS: usize = 8;

/// Above this many actions, `discover` without an `action` lists them
/// without their schemas (a large API's would flood the context).
const SCHEMAS_LISTED: usize = 24;

#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Subcommand {
    /// List the connector's actions with their input schemas.
    Discover,
    /// Run one action.
    Execute,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct Args {
    /// `discover` lists the connector's actions with their input schemas (one action's, when
    /// `action` is given); `execute` runs one.
    subcommand: Subcommand,
    /// The connector.
    connector: String,
    /// For `execute`: the action to run. For `discover`: the action to describe.
    action: Option<String>,
    /// For `execute`: the action's input, an object matching its schema.
    parameters: Option<Map<String, Value>>,
}

/// An action as `discover` returns it.
#[derive(Serialize)]
struct ActionSchema {
    name: String,
    description: String,
    /// Absent when the connector has too many actions to list them all
    /// with schemas (`discover` with `action` gives one).
    #[serde(skip_serializing_if = "Option::is_none")]
    input_schema: Option<Value>,
    access: Access,
    /// Whether this caller may run it: false when its level is above the
    /// instance's `access` or the agent's grant (running it is refused).
    callable: bool,
}

#[derive(Serialize)]
struct Discovered<'a> {
    connector: &'a str,
    description: &'a str,
    actions: Vec<ActionSchema>,
    /// What was left out, and how to get it.
    #[serde(skip_serializing_if = "Option::is_none")]
    note: Option<String>,
}

impl Connector {
    /// The `[connectors.NAME]` resources this meta-tool reaches.
    const REACH: Reach = Reach { tool: <Self as MetaTool>::NAME, what: "connector", section: "connectors" };
}

impl MetaTool for Connector {
    type Args = Args;
    const NAME: &'static str = "connector";
    const CATEGORY: Category = Category::Connector;
    const SECTION: &'static str = "Connectors";
    const PURPOSE: &'static str = "Use an API connector. `discover` returns its actions with their input schemas; \
                                   `execute` runs `action` with `parameters`.";
    const LABEL: &'static str = "Connectors";
    const NOUN: &'static str = "connector";
    const CHOICE: Option<&'static str> = Some("connector");

    /// Name, one line, action names.
    fn lines(view: &View<'_>) -> Vec<Line> {
        view.catalog
            .plugins_of(Kind::Connector)
            .filter(|p| view.policy.shows_plugin(p))
            .map(|p| {
                let stub = p.stub();
                let actions: Vec<&str> = stub.action_names().collect();
                let actions = first_names(actions.into_iter(), SHOWN_ACTIONS);
                Line::described(p.name(), p.name(), &format!("{} Actions: {actions}", stub.description))
            })
            .chain(failing_lines(view, Self::REACH.section))
            .collect()
    }

    fn choices(view: &View<'_>) -> Vec<String> {
        view.catalog
            .plugins_of(Kind::Connector)
            .filter(|p| view.policy.shows_plugin(p))
            .map(|p| p.name().to_owned())
            .collect()
    }

    fn run<'a>(mut cx: CallContext<'a>, args: Args) -> CallFuture<'a> {
        Box::pin(async move {
            let (catalog, policy) = (cx.catalog, cx.policy);
            let connectors =
                || catalog.plugins_of(Kind::Connector).filter(|p| policy.shows_plugin(p)).map(|p| p.name().to_owned());
            let found =
                catalog.get(&args.connector).filter(|p| p.stub().kind == Kind::Connector && policy.shows_plugin(p));
            let plugin = named_or_failing(&cx, &Self::REACH, &args.connector, found, connectors())?;
            match args.subcommand {
                Subcommand::Discover => {
                    let mut records = cx.backend.definitions(catalog, plugin.name()).await?;
                    if let Some(action) = &args.action {
                        let known = records.iter().map(|r| r.action.clone()).collect::<Vec<_>>();
                        let found = records.iter().position(|r| r.action == *action);
                        let index = named(Self::NAME, "action", action, found, known)?;
                        records = vec![records.swap_remove(index)];
                    }
                    let ceiling = cx.caller.allowed_on(catalog, plugin.name());
                    let total = records.len();
                    let with_schemas = total <= SCHEMAS_LISTED;
                    let actions = records
                        .into_iter()
                        .map(|r| ActionSchema {
                            name: r.action,
                            description: if with_schemas { r.description } else { r.summary },
                            input_schema: with_schemas.then(|| r.input_schema.unwrap_or_default()),
                            access: r.access,
                            callable: r.access <= ceiling,
                        })
                        .collect();
                    let note = (!with_schemas).then(|| {
                        format!(
                            "{total} actions, listed with their summaries only; call `discover` with `action` \
                             for one action's full description and input schema"
                        )
                    });
                    let description = &plugin.stub().description;
                    Ok(Output::Json(to_value(Discovered { connector: plugin.name(), description, actions, note })))
                }
                Subcommand::Execute => {
                    let action = args.action.ok_or_else(|| missing(Self::NAME, "action", "execute"))?;
                    let tools = catalog.tools_of(plugin.name());
                    let known = || tools.iter().map(|t| t.action.clone());
                    let tool =
                        named(Self::NAME, "action", &action, tools.iter().find(|t| t.action == action), known())?;
                    cx.call(tool, Value::Object(args.parameters.unwrap_or_default())).await
                }
            }
        })
    }
}
