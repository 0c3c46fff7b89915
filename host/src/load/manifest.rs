//! The Tier-2 manifest: what `describe()` returns, parsed and checked.

use std::borrow::Cow;
use std::sync::{Arc, OnceLock};

use serde::Serialize;
use serde_json::Value;

use super::stub::Stub;
use crate::contract::{self, Access, Kind, MANIFEST_SECTION, wit};
// The section's shape is the contract's: the SDK computes it too.
use crate::error::{Error, Result};
use quiver_contract::{ActionSection as Declared, MANIFEST_FORMAT, ManifestSection as DeclaredManifest};

/// A plugin's full description (Tier 2).
#[derive(Debug, Clone, Serialize)]
pub struct Manifest {
    /// Plugin name.
    pub name: String,
    /// Plugin version.
    pub version: String,
    /// Its kind.
    pub kind: Kind,
    /// One line on what it is for.
    pub description: String,
    /// Tags.
    pub categories: Vec<String>,
    /// Its actions, in the author's order.
    pub actions: Vec<ActionSpec>,
}

/// One action with its schemas.
#[derive(Clone, Serialize)]
pub struct ActionSpec {
    /// Action name.
    pub name: String,
    /// Full description (first paragraph = the summary).
    pub description: String,
    /// JSON Schema (2020-12) of the input; its root is an object schema.
    pub input_schema: ActionSchema,
    /// JSON Schema of the output, if fixed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<ActionSchema>,
    /// What calling it may change.
    pub access: Access,
    /// The input schema's validator: built when the manifest is checked
    /// (a plugin's), or on first use (a document's, which may hold
    /// hundreds of actions that are never called).
    #[serde(skip)]
    validator: Arc<OnceLock<std::result::Result<Arc<jsonschema::Validator>, String>>>,
    /// Whether a `pattern` the validator cannot compile is dropped from
    /// the check rather than failing the action (a document's schemas,
    /// written for other regex engines; the API still checks them).
    #[serde(skip)]
    lenient: bool,
}

/// An action's JSON Schema: a plugin's, held whole, or an OpenAPI
/// document's, whose component schemas all the document's actions share
/// and which is made self-contained each time it is asked for (never kept
/// per action: a document's actions times its components would not fit).
#[derive(Debug, Clone)]
pub enum ActionSchema {
    /// The schema itself.
    Whole(Value),
    /// A document's schema, over its shared definitions.
    Document(Arc<dyn SharedSchema>),
}

/// A schema whose definitions are shared with others (an OpenAPI
/// document's component schemas), made self-contained when asked for.
pub trait SharedSchema: Send + Sync + std::fmt::Debug {
    /// Its own JSON, as held: references to the shared definitions, no
    /// `$defs`.
    fn held(&self) -> &Value;
    /// The schema, self-contained: its JSON with `$defs` holding every
    /// definition it reaches (made now, not kept).
    fn document(&self) -> Value;
}

impl PartialEq for ActionSchema {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (ActionSchema::Whole(a), ActionSchema::Whole(b)) => a == b,
            (a, b) => a.value() == b.value(),
        }
    }
}

impl ActionSchema {
    /// The schema, self-contained.
    pub fn value(&self) -> Cow<'_, Value> {
        match self {
            ActionSchema::Whole(value) => Cow::Borrowed(value),
            ActionSchema::Document(schema) => Cow::Owned(schema.document()),
        }
    }
}

impl Serialize for ActionSchema {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> std::result::Result<S::Ok, S::Error> {
        self.value().serialize(serializer)
    }
}

impl std::fmt::Debug for ActionSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ActionSpec").field("name", &self.name).field("access", &self.access).finish()
    }
}

impl ActionSpec {
    /// The first paragraph of the description, on one line.
    pub fn summary(&self) -> String {
        contract::summary_of(&self.description)
    }

    /// An action of a plugin's manifest.
    fn new(
        name: String,
        description: String,
        input_schema: ActionSchema,
        output_schema: Option<ActionSchema>,
        access: Access,
    ) -> Self {
        let validator = Arc::default();
        ActionSpec { name, description, input_schema, output_schema, access, validator, lenient: false }
    }

    /// An action the host made from a document: its input schema is
    /// checked on first use, and patterns the validator cannot compile are
    /// left to the API.
    pub(crate) fn from_document(
        name: String,
        description: String,
        input_schema: Arc<dyn SharedSchema>,
        output_schema: Option<Arc<dyn SharedSchema>>,
        access: Access,
    ) -> ActionSpec {
        let input = ActionSchema::Document(input_schema);
        let output = output_schema.map(ActionSchema::Document);
        ActionSpec { lenient: true, ..ActionSpec::new(name, description, input, output, access) }
    }

    /// The validator of its input schema; the error says why the schema
    /// is not a valid JSON Schema.
    pub fn validator(&self) -> std::result::Result<&jsonschema::Validator, &str> {
        let built = self.validator.get_or_init(|| {
            let schema = self.input_schema.value();
            let strict = jsonschema::validator_for(&schema);
            let built = match strict {
                Err(error) if self.lenient => {
                    let mut schema = schema.into_owned();
                    drop_patterns(&mut schema);
                    tracing::debug!(action = %self.name, %error, "input patterns left to the API");
                    jsonschema::validator_for(&schema)
                }
                other => other,
            };
            built.map(Arc::new).map_err(|e| format!("action `{}`: invalid input schema: {e}", self.name))
        });
        match built {
            Ok(validator) => Ok(validator),
            Err(reason) => Err(reason),
        }
    }
}

impl Manifest {
    /// Parse and check what `describe()` returned.
    pub(crate) fn from_wit(manifest: wit::Manifest, plugin: &str) -> Result<Manifest> {
        let invalid = |reason: String| Error::InvalidManifest { plugin: plugin.to_owned(), reason };
        let mut actions = Vec::with_capacity(manifest.actions.len());
        for action in manifest.actions {
            let input_schema = parse_schema(&action.name, "input", &action.input_schema).map_err(invalid)?;
            let output_schema = match &action.output_schema {
                Some(text) => Some(parse_schema(&action.name, "output", text).map_err(invalid)?),
                None => None,
            };
            actions.push(Declared {
                name: action.name,
                description: action.description,
                input_schema,
                output_schema,
                access: action.access.into(),
            });
        }
        let declared = DeclaredManifest {
            format: MANIFEST_FORMAT,
            name: manifest.name,
            version: manifest.version,
            kind: manifest.kind.into(),
            description: manifest.description,
            categories: manifest.categories,
            actions,
        };
        Manifest::checked(declared, plugin)
    }

    /// Parse and check the JSON of a `quiver:manifest` section (what
    /// `quiver package` writes: the manifest with its schemas, read without
    /// compiling the plugin).
    pub(crate) fn from_section(bytes: &[u8], plugin: &str) -> Result<Manifest> {
        let invalid = |reason: String| Error::InvalidManifest { plugin: plugin.to_owned(), reason };
        let declared: DeclaredManifest = serde_json::from_slice(bytes)
            .map_err(|e| invalid(format!("its `{MANIFEST_SECTION}` section is not the expected JSON: {e}")))?;
        if declared.format != MANIFEST_FORMAT {
            return Err(invalid(format!(
                "its `{MANIFEST_SECTION}` section has format {}; this host reads {MANIFEST_FORMAT}",
                declared.format
            )));
        }
        Manifest::checked(declared, plugin)
    }

    /// The JSON of its `quiver:manifest` section.
    pub fn to_section(&self) -> Vec<u8> {
        let declared = DeclaredManifest {
            format: MANIFEST_FORMAT,
            name: self.name.clone(),
            version: self.version.clone(),
            kind: self.kind,
            description: self.description.clone(),
            categories: self.categories.clone(),
            actions: self
                .actions
                .iter()
                .map(|a| Declared {
                    name: a.name.clone(),
                    description: a.description.clone(),
                    input_schema: a.input_schema.value().into_owned(),
                    output_schema: a.output_schema.as_ref().map(|o| o.value().into_owned()),
                    access: a.access,
                })
                .collect(),
        };
        serde_json::to_vec(&declared).expect("a manifest always serializes")
    }

    /// Whether `other` says exactly what this manifest says, schemas
    /// included.
    pub(crate) fn same_as(&self, other: &Manifest) -> bool {
        self.to_section() == other.to_section()
    }

    /// Whether `other` declares what this manifest declares but for the
    /// words: the same name, version and kind, and the same actions in the
    /// same order with the same access and schemas, every `description`
    /// aside (a plain component's docs may come from a `.wit` that was
    /// beside it when it was packaged, and is no longer).
    pub(crate) fn same_shape(&self, other: &Manifest) -> bool {
        let schema = |s: &ActionSchema| without_docs(&s.value());
        (&self.name, &self.version, self.kind) == (&other.name, &other.version, other.kind)
            && self.actions.len() == other.actions.len()
            && self.actions.iter().zip(&other.actions).all(|(a, b)| {
                (&a.name, a.access) == (&b.name, b.access)
                    && schema(&a.input_schema) == schema(&b.input_schema)
                    && a.output_schema.as_ref().map(schema) == b.output_schema.as_ref().map(schema)
            })
    }

    /// Check a manifest the host wrote itself (a plain component's, from
    /// its types) by the contract's rules.
    pub(crate) fn from_declared(declared: DeclaredManifest, plugin: &str) -> Result<Manifest> {
        Manifest::checked(declared, plugin)
    }

    /// Check a manifest by the contract's rules: names, an object schema
    /// for every input, schemas that compile.
    fn checked(declared: DeclaredManifest, plugin: &str) -> Result<Manifest> {
        let invalid = |reason: String| Error::InvalidManifest { plugin: plugin.to_owned(), reason };
        if let Some(p) = contract::plugin_name_problem(&declared.name) {
            return Err(invalid(p));
        }
        let mut actions = Vec::with_capacity(declared.actions.len());
        for action in declared.actions {
            if let Some(p) = contract::action_name_problem(&action.name) {
                return Err(invalid(p));
            }
            if !action.input_schema.is_object() || action.output_schema.as_ref().is_some_and(|o| !o.is_object()) {
                return Err(invalid(format!("action `{}`: a schema is not a JSON object", action.name)));
            }
            if action.input_schema.get("type") != Some(&Value::String("object".into())) {
                return Err(invalid(format!(
                    "action `{}`: the input schema's root must be `\"type\": \"object\"`",
                    action.name
                )));
            }
            let spec = ActionSpec::new(
                action.name,
                action.description.trim().to_owned(),
                ActionSchema::Whole(action.input_schema),
                action.output_schema.map(ActionSchema::Whole),
                action.access,
            );
            spec.validator().map_err(|reason| invalid(reason.to_owned()))?;
            actions.push(spec);
        }
        Ok(Manifest {
            name: declared.name,
            version: declared.version,
            kind: declared.kind,
            description: declared.description,
            categories: declared.categories,
            actions,
        })
    }

    /// The stub that says what this manifest says (what `quiver package`
    /// writes into a component), validated by the contract's rules.
    pub fn stub(&self) -> std::result::Result<Stub, String> {
        let mut stub = Stub::new(&self.name, &self.version, self.kind, &self.description);
        stub.categories = self.categories.clone();
        stub.actions = self
            .actions
            .iter()
            .map(|a| crate::contract::StubAction { name: a.name.clone(), summary: a.summary(), access: a.access })
            .collect();
        stub.validate()?;
        Ok(stub)
    }

    /// The action called `name`.
    pub fn action(&self, name: &str) -> Option<&ActionSpec> {
        self.actions.iter().find(|a| a.name == name)
    }

    /// Reject the plugin if its stub says anything `describe()` does not.
    pub(crate) fn check_against(&self, stub: &Stub, origin: &str) -> Result<()> {
        let mut differences = Vec::new();
        let mut differ = |field: &str, stub: &dyn std::fmt::Debug, described: &dyn std::fmt::Debug| {
            differences.push(format!("{field}: stub says {stub:?}, describe() says {described:?}"));
        };
        if stub.name != self.name {
            differ("name", &stub.name, &self.name);
        }
        if stub.version != self.version {
            differ("version", &stub.version, &self.version);
        }
        if stub.kind != self.kind {
            differ("kind", &stub.kind, &self.kind);
        }
        if stub.description != self.description {
            differ("description", &stub.description, &self.description);
        }
        if stub.categories != self.categories {
            differ("categories", &stub.categories, &self.categories);
        }
        let stub_actions: Vec<&str> = stub.action_names().collect();
        let described: Vec<&str> = self.actions.iter().map(|a| a.name.as_str()).collect();
        if stub_actions != described {
            differ("actions", &stub_actions, &described);
        } else {
            for (s, a) in stub.actions.iter().zip(&self.actions) {
                if s.summary != a.summary() {
                    differ(&format!("summary of `{}`", a.name), &s.summary, &a.summary());
                }
                if s.access != a.access {
                    differ(&format!("access of `{}`", a.name), &s.access, &a.access);
                }
            }
        }
        if differences.is_empty() {
            Ok(())
        } else {
            Err(Error::StubMismatch {
                plugin: stub.name.clone(),
                origin: origin.to_owned(),
                differences: differences.join("; "),
            })
        }
    }
}

/// `schema` without the `description` of it and of every schema inside it
/// (in the keywords a plain component's schemas use; a property called
/// `description` stays).
fn without_docs(schema: &Value) -> Value {
    let Value::Object(object) = schema else { return schema.clone() };
    let mut out = serde_json::Map::new();
    for (key, value) in object {
        let value = match (key.as_str(), value) {
            ("description", Value::String(_)) => continue,
            ("properties", Value::Object(properties)) => {
                Value::Object(properties.iter().map(|(name, s)| (name.clone(), without_docs(s))).collect())
            }
            ("items" | "additionalProperties", s @ Value::Object(_)) => without_docs(s),
            ("prefixItems" | "anyOf" | "oneOf" | "allOf", Value::Array(schemas)) => {
                Value::Array(schemas.iter().map(without_docs).collect())
            }
            (_, other) => other.clone(),
        };
        out.insert(key.clone(), value);
    }
    Value::Object(out)
}

/// `schema` without its `pattern` and `patternProperties` keywords (where
/// their values are what those keywords take, not property schemas).
fn drop_patterns(schema: &mut Value) {
    match schema {
        Value::Object(object) => {
            if object.get("pattern").is_some_and(Value::is_string) {
                object.remove("pattern");
            }
            if object.get("patternProperties").is_some_and(Value::is_object) {
                object.remove("patternProperties");
            }
            object.values_mut().for_each(drop_patterns);
        }
        Value::Array(items) => items.iter_mut().for_each(drop_patterns),
        _ => {}
    }
}

fn parse_schema(action: &str, which: &str, text: &str) -> std::result::Result<Value, String> {
    let schema: Value =
        serde_json::from_str(text).map_err(|e| format!("action `{action}`: the {which} schema is not JSON: {e}"))?;
    if !schema.is_object() {
        return Err(format!("action `{action}`: the {which} schema is not a JSON object"));
    }
    Ok(schema)
}

/// How many violations of an input schema an error lists at most.
const MAX_VIOLATIONS: usize = 8;

/// Every way `input` breaks `validator`'s schema (at most
/// [`MAX_VIOLATIONS`]), each named with where it is; empty when it fits.
pub(crate) fn violations(validator: &jsonschema::Validator, input: &Value) -> Vec<String> {
    if validator.is_valid(input) {
        return Vec::new();
    }
    validator
        .iter_errors(input)
        .take(MAX_VIOLATIONS)
        .map(|e| {
            let at = e.instance_path().to_string();
            let text = violation(&e);
            if at.is_empty() { text } else { format!("at {at}: {text}") }
        })
        .collect()
}

/// A violation of a schema, in plain words: a choice among constants
/// (`oneOf` / `anyOf` of `const`, as schemars renders a documented Rust
/// enum) lists the values instead of naming the keyword; a property a
/// closed object does not have (`additionalProperties: false`) is named.
fn violation(error: &jsonschema::ValidationError<'_>) -> String {
    use jsonschema::error::ValidationErrorKind as K;
    let branches = match error.kind() {
        K::FalseSchema => {
            let at = error.instance_path().to_string();
            return match at.rsplit('/').next().filter(|name| !name.is_empty()) {
                Some(name) => format!("`{}` is not one of its arguments", name.replace("~1", "/").replace("~0", "~")),
                None => "no value is allowed here".to_owned(),
            };
        }
        K::OneOfNotValid { context } | K::AnyOf { context } => context,
        K::Enum { options } => return one_of(error.instance(), options.as_array().map(Vec::as_slice).unwrap_or(&[])),
        _ => return error.to_string(),
    };
    let constants: Option<Vec<Value>> = branches
        .iter()
        .map(|errors| {
            errors.iter().find_map(|e| match e.kind() {
                K::Constant { expected_value } => Some(Value::clone(expected_value)),
                _ => None,
            })
        })
        .collect();
    match constants {
        Some(values) if !values.is_empty() => one_of(error.instance(), &values),
        _ => error.to_string(),
    }
}

fn one_of(instance: &Value, values: &[Value]) -> String {
    let listed: Vec<String> = values.iter().map(Value::to_string).collect();
    format!("{instance} is not one of the allowed values: {}", listed.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_aside_means_descriptions_only() {
        let schema = serde_json::json!({
            "type": "object", "description": "Outer.",
            "properties": {
                "description": {"type": "string", "description": "A property called description."},
                "items": {"type": "array", "items": {"type": "integer", "description": "Each."}},
                "pick": {"oneOf": [{"const": "a", "description": "A."}, {"enum": ["description"]}]},
            },
            "required": ["description"],
        });
        let bare = serde_json::json!({
            "type": "object",
            "properties": {
                "description": {"type": "string"},
                "items": {"type": "array", "items": {"type": "integer"}},
                "pick": {"oneOf": [{"const": "a"}, {"enum": ["description"]}]},
            },
            "required": ["description"],
        });
        assert_eq!(without_docs(&schema), bare);
    }
}
