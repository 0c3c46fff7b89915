//! The meta-tools: each carries the Tier-1 stubs of one kind in its
//! description and returns Tier 2 (schemas, bodies, results) as the
//! result of a call, so the schemas enter the conversation only when asked
//! for, and the tool list itself never changes.
//!
//! One small file per meta-tool; [`ALL`] lists them in the order they are
//! offered. Argument schemas are derived from typed structs (schemars); the
//! only thing added at run time is the `enum` of valid names.

mod connector;
mod database;
mod mcp;
mod read_skill;
mod request_tools;
mod search_tools;

use std::collections::BTreeSet;
use std::future::Future;
use std::pin::Pin;

use schemars::JsonSchema;
use schemars::generate::SchemaSettings;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::Host;
use crate::catalog::{Catalog, Category, ToolRecord};
use crate::disclosure::formats::ToolDef;
use crate::disclosure::policy::Policy;
use crate::{Error, Result};

pub(crate) use connector::stub_lines as connector_lines;
pub(crate) use database::stub_lines as database_lines;
pub(crate) use mcp::stub_lines as mcp_lines;
pub(crate) use read_skill::stub_lines as skill_lines;
pub(crate) use request_tools::stub_lines as builtin_lines;

/// What a meta-tool's definition depends on.
pub(crate) struct View<'a> {
    pub catalog: &'a Catalog,
    pub policy: &'a Policy,
    /// Built-in tools that are not resident this turn (what `request_tools` offers).
    pub registry: &'a [ToolRecord],
}

/// What a meta-tool call may use and change.
pub(crate) struct CallContext<'a> {
    pub host: &'a Host,
    pub catalog: &'a Catalog,
    pub policy: &'a Policy,
    /// Tools this session may call directly; `request_tools` and
    /// `search_tools` add to it.
    pub unlocked: &'a mut BTreeSet<String>,
}

/// The future of a meta-tool call.
pub(crate) type CallFuture<'a> = Pin<Box<dyn Future<Output = Result<Value>> + Send + 'a>>;

/// One meta-tool.
pub(crate) trait MetaTool: Sync {
    /// Its name.
    fn name(&self) -> &'static str;

    /// Its definition for this catalog and policy; `None` when it has
    /// nothing to disclose (it is then not offered).
    fn definition(&self, view: &View<'_>) -> Option<ToolDef>;

    /// Run it.
    fn call<'a>(&'a self, cx: CallContext<'a>, args: Value) -> CallFuture<'a>;
}

/// Every meta-tool, in the order they are offered.
pub(crate) const ALL: &[&dyn MetaTool] = &[
    &read_skill::ReadSkill,
    &connector::Connector,
    &database::Database,
    &mcp::Mcp,
    &request_tools::RequestTools,
    &search_tools::SearchTools,
];

/// The meta-tool called `name`.
pub(crate) fn find(name: &str) -> Option<&'static dyn MetaTool> {
    ALL.iter().copied().find(|m| m.name() == name)
}

/// A meta-tool definition with a typed argument schema.
pub(crate) fn definition<T: JsonSchema>(
    name: &str,
    description: String,
    category: Category,
    enums: &[(&str, &[String])],
) -> ToolDef {
    ToolDef {
        name: name.to_owned(),
        description,
        input_schema: args_schema::<T>(enums),
        category,
        access: None,
        meta: true,
    }
}

/// The schema of `T` as a model should see it, with `enum` set on the named
/// properties (or their array items) when the lists are not empty.
pub(crate) fn args_schema<T: JsonSchema>(enums: &[(&str, &[String])]) -> Value {
    let settings = SchemaSettings::draft2020_12().with(|s| s.inline_subschemas = true);
    let mut schema = settings.into_generator().into_root_schema_for::<T>().to_value();
    tidy(&mut schema);
    if let Some(root) = schema.as_object_mut() {
        root.remove("$schema");
        root.remove("title");
        root.remove("description");
    }
    for (property, values) in enums {
        if values.is_empty() {
            continue;
        }
        let Some(target) = schema.get_mut("properties").and_then(|p| p.get_mut(*property)) else { continue };
        let target = if target.get("type") == Some(&Value::from("array")) { &mut target["items"] } else { target };
        target["enum"] = values.iter().map(|v| Value::from(v.as_str())).collect();
    }
    schema
}

/// Optional fields: `["string", "null"]` becomes `"string"` and a `null`
/// default disappears (the field can simply be left out). Fewer tokens, and
/// some providers reject type arrays.
fn tidy(schema: &mut Value) {
    match schema {
        Value::Object(map) => {
            if let Some(Value::Array(types)) = map.get("type")
                && types.len() == 2
                && types.contains(&Value::from("null"))
            {
                let other = types.iter().find(|t| *t != &Value::from("null")).cloned().unwrap_or(Value::Null);
                map.insert("type".into(), other);
            }
            if let Some(Value::Array(any)) = map.get("anyOf")
                && any.len() == 2
                && let Some(i) = any.iter().position(|s| s.get("type") == Some(&Value::from("null")))
            {
                let kept = any[1 - i].clone();
                map.remove("anyOf");
                if let Value::Object(kept) = kept {
                    for (k, v) in kept {
                        map.entry(k).or_insert(v);
                    }
                }
            }
            if map.get("default") == Some(&Value::Null) {
                map.remove("default");
            }
            for value in map.values_mut() {
                tidy(value);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(tidy),
        _ => {}
    }
}

/// Parse a meta-tool's arguments, with a message a model can act on.
pub(crate) fn parse_args<T: DeserializeOwned>(tool: &str, args: Value) -> Result<T> {
    let args = if args.is_null() { Value::Object(Default::default()) } else { args };
    serde_json::from_value(args)
        .map_err(|e| Error::InvalidArguments { tool: tool.to_owned(), reason: format!("{e}; see the tool's schema") })
}

/// The error for a name that is not among `known`.
pub(crate) fn unknown(tool: &str, what: &str, name: &str, known: impl IntoIterator<Item = String>) -> Error {
    let known: Vec<String> = known.into_iter().collect();
    Error::InvalidArguments {
        tool: tool.to_owned(),
        reason: format!(
            "no {what} `{name}`; {what}s: {}",
            if known.is_empty() { "none".into() } else { known.join(", ") }
        ),
    }
}

/// A required argument that is missing for this subcommand.
pub(crate) fn missing(tool: &str, argument: &str, subcommand: &str) -> Error {
    Error::InvalidArguments { tool: tool.to_owned(), reason: format!("`{subcommand}` needs `{argument}`") }
}

/// Up to `max` names joined with `, `, then `…` and the total if there are more.
pub(crate) fn first_names<'a>(names: impl ExactSizeIterator<Item = &'a str>, max: usize) -> String {
    let total = names.len();
    let shown: Vec<&str> = names.take(max).collect();
    if total > max { format!("{}, … ({total})", shown.join(", ")) } else { shown.join(", ") }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(serde::Deserialize, JsonSchema)]
    #[allow(dead_code)]
    struct Args {
        /// Which one.
        name: String,
        /// Optional.
        file: Option<String>,
        /// Several.
        names: Vec<String>,
    }

    #[test]
    fn schemas_are_typed_tidy_and_carry_enums() {
        let names = vec!["a".to_owned(), "b".to_owned()];
        let schema = args_schema::<Args>(&[("name", &names), ("names", &names)]);
        assert_eq!(schema["properties"]["name"]["enum"], serde_json::json!(["a", "b"]));
        assert_eq!(schema["properties"]["names"]["items"]["enum"], serde_json::json!(["a", "b"]));
        assert_eq!(schema["properties"]["file"]["type"], "string");
        assert!(schema.get("$schema").is_none() && schema.get("title").is_none());
        assert_eq!(schema["required"], serde_json::json!(["name", "names"]));
        // An empty list of names adds no enum (a model could not satisfy it).
        let schema = args_schema::<Args>(&[("name", &[])]);
        assert!(schema["properties"]["name"].get("enum").is_none());
    }

    #[test]
    fn first_names_counts_the_rest() {
        assert_eq!(first_names(["a", "b"].into_iter(), 3), "a, b");
        assert_eq!(first_names(["a", "b", "c", "d"].into_iter(), 2), "a, b, … (4)");
    }
}
