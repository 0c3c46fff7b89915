//! Support code for the expansion of [`plugin`](crate::plugin). Not a stable
//! API: plugins never call it directly.

use schemars::JsonSchema;
use schemars::generate::{Contract, SchemaSettings};
use serde::Serialize;
use serde::de::DeserializeOwned;

pub use crate::wit::quiver::plugin::types::{Access, Action, Error as WitError, Kind, Manifest};
pub use wit_bindgen;

use crate::ToolError;

/// Input type of actions that take no argument: only `{}` is accepted.
#[derive(serde::Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NoInput {}

fn schema_text<T: JsonSchema>(contract: Contract) -> serde_json::Value {
    let settings = SchemaSettings::draft2020_12().with(|s| {
        s.inline_subschemas = true;
        s.contract = contract;
    });
    let mut schema = settings.into_generator().into_root_schema_for::<T>();
    // The Rust type name means nothing to a model or a client.
    schema.remove("title");
    schema.to_value()
}

/// The input schema of an action `f`, derived from its argument type.
pub fn input_schema<I: JsonSchema, R>(_: &impl FnOnce(I) -> R) -> String {
    let mut schema = schema_text::<I>(Contract::Deserialize);
    // The action's own description says what the input is for; the input
    // type's doc comment would repeat it to the model.
    if let Some(root) = schema.as_object_mut() {
        root.remove("description");
    }
    schema.to_string()
}

/// The output schema of an action `f`, derived from the `Ok` type of its
/// result; `None` when the output is untyped JSON.
pub fn output_schema<I, O: JsonSchema, E>(_: &impl FnOnce(I) -> Result<O, E>) -> Option<String> {
    let schema = schema_text::<O>(Contract::Serialize);
    let trivial = schema.as_object().is_some_and(|o| o.keys().all(|k| k == "$schema"));
    (!trivial && schema != serde_json::Value::Bool(true)).then(|| schema.to_string())
}

/// Build the manifest `describe` returns.
pub fn manifest(
    name: &str,
    version: &str,
    kind: Kind,
    description: &str,
    categories: &[&str],
    actions: Vec<Action>,
) -> Manifest {
    Manifest {
        name: name.to_owned(),
        version: version.to_owned(),
        kind,
        description: description.to_owned(),
        categories: categories.iter().map(|c| (*c).to_owned()).collect(),
        actions,
    }
}

/// The JSON of the `quiver:manifest` section for `manifest`: what a plugin
/// built natively computes, so that a build embedding its component can
/// write the section the host serves before compiling it.
pub fn manifest_section(manifest: Manifest) -> Vec<u8> {
    use quiver_contract::{ActionSection, MANIFEST_FORMAT, ManifestSection};
    let schema = |text: &str| serde_json::from_str(text).expect("the SDK writes schemas as JSON");
    let section = ManifestSection {
        format: MANIFEST_FORMAT,
        name: manifest.name,
        version: manifest.version,
        kind: match manifest.kind {
            Kind::Tool => quiver_contract::Kind::Tool,
            Kind::Connector => quiver_contract::Kind::Connector,
            Kind::Database => quiver_contract::Kind::Database,
        },
        description: manifest.description,
        categories: manifest.categories,
        actions: manifest
            .actions
            .into_iter()
            .map(|a| ActionSection {
                input_schema: schema(&a.input_schema),
                output_schema: a.output_schema.as_deref().map(schema),
                name: a.name,
                description: a.description,
                access: match a.access {
                    Access::Read => quiver_contract::Access::Read,
                    Access::Write => quiver_contract::Access::Write,
                    Access::Admin => quiver_contract::Access::Admin,
                },
            })
            .collect(),
    };
    serde_json::to_vec(&section).expect("a manifest always serializes")
}

/// Build one action entry of the manifest.
pub fn action(
    name: &str,
    description: &str,
    access: Access,
    input_schema: String,
    output_schema: Option<String>,
) -> Action {
    Action { name: name.to_owned(), description: description.to_owned(), input_schema, output_schema, access }
}

/// Decode the input, run the action, encode its output.
pub fn call<I, O, E>(input: &str, f: impl FnOnce(I) -> Result<O, E>) -> Result<String, WitError>
where
    I: DeserializeOwned,
    O: Serialize,
    E: Into<ToolError>,
{
    let input: I = serde_json::from_str(input)
        .map_err(|e| WitError::InvalidInput(format!("input does not match the schema: {e}")))?;
    let output = f(input).map_err(|e| WitError::from(e.into()))?;
    serde_json::to_string(&output).map_err(|e| WitError::Failed(format!("cannot encode the output as JSON: {e}")))
}

/// The error for an action name the plugin does not have.
pub fn unknown_action(action: &str, known: &[&str]) -> WitError {
    WitError::NotFound(format!("no action `{action}`; this plugin has: {}", known.join(", ")))
}

/// Convert the WIT error into the SDK's error type.
pub fn from_wit_error(error: WitError) -> ToolError {
    match error {
        WitError::InvalidInput(m) => ToolError::InvalidInput(m),
        WitError::NotFound(m) => ToolError::NotFound(m),
        WitError::Denied(m) => ToolError::Denied(m),
        WitError::Unavailable(m) => ToolError::Unavailable(m),
        WitError::Failed(m) => ToolError::Failed(m),
    }
}

/// Report panics through the host log, tagged so the host can attach the
/// message to the trap it reports (a panic aborts the instance).
pub fn install_panic_hook() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        std::panic::set_hook(Box::new(|info| {
            let message = match info.payload().downcast_ref::<&str>() {
                Some(s) => (*s).to_owned(),
                None => match info.payload().downcast_ref::<String>() {
                    Some(s) => s.clone(),
                    None => "panic".to_owned(),
                },
            };
            let location = info.location().map(|l| format!("{}:{}", l.file(), l.line())).unwrap_or_default();
            crate::wit::quiver::plugin::log::log(
                crate::wit::quiver::plugin::log::Level::Error,
                &message,
                &[("quiver.panic".to_owned(), "true".to_owned()), ("location".to_owned(), location)],
            );
        }));
    });
}
