//! JSON Schemas of operations, with the document's component schemas
//! shared.
//!
//! The host follows the references between OpenAPI objects (parameters,
//! request bodies, responses; see [`super::refs`]); schemas may still
//! point at `#/components/schemas/NAME`, and may do so in cycles. Those
//! references are kept, rewritten to `#/$defs/NAME`. The component schemas
//! are converted once into the document's [`Definitions`], which every
//! [`Schema`] of the document shares: an operation holds only its own JSON
//! and the names it refers to, so memory grows with the document, not with
//! its operations times its components. [`Schema::document`] makes one
//! schema self-contained when it is asked for (a model's `discover`, the
//! validator): its JSON with `$defs` holding every component schema it
//! reaches, so the `jsonschema` validator (and a model) resolves them,
//! cycles included. A reference to anything else (another file, another
//! part of the document) becomes an unconstrained schema that says what it
//! stood for.

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use serde_json::{Map, Value};

use crate::contract::{Shape, sanitize};

const COMPONENTS: &str = "#/components/schemas/";

/// A document's component schemas, converted once and shared by all its
/// schemas.
#[derive(Debug, Default, PartialEq)]
pub struct Definitions {
    defs: BTreeMap<String, Definition>,
}

/// One component schema: its JSON, and the component schemas it names.
#[derive(Debug, PartialEq)]
struct Definition {
    schema: Value,
    refs: BTreeSet<String>,
}

impl Definitions {
    /// Convert every schema under `components.schemas`.
    pub(super) fn new(spec: &oas3::Spec) -> Arc<Definitions> {
        let mut defs = BTreeMap::new();
        if let Some(components) = &spec.components {
            for (name, schema) in &components.schemas {
                let (schema, refs) = convert(schema);
                defs.insert(name.clone(), Definition { schema, refs });
            }
        }
        Arc::new(Definitions { defs })
    }

    /// How many component schemas the document has.
    pub fn len(&self) -> usize {
        self.defs.len()
    }

    /// Whether it has none.
    pub fn is_empty(&self) -> bool {
        self.defs.is_empty()
    }

    /// `schema`, its references rewritten, over these definitions.
    pub(super) fn schema(self: &Arc<Self>, schema: &oas3::spec::Schema) -> Schema {
        let (root, refs) = convert(schema);
        self.with(root, refs)
    }

    /// `root`, which names the component schemas `refs`, over these
    /// definitions.
    pub(super) fn with(self: &Arc<Self>, root: Value, refs: BTreeSet<String>) -> Schema {
        Schema(Arc::new(Parts { root, refs, defs: Arc::clone(self) }))
    }

    /// Every component schema `refs` reach, by name.
    fn reached<'a>(&'a self, refs: &'a BTreeSet<String>) -> BTreeSet<&'a str> {
        let mut reached = BTreeSet::new();
        let mut pending: Vec<&String> = refs.iter().collect();
        while let Some(name) = pending.pop() {
            if !reached.insert(name.as_str()) {
                continue;
            }
            pending.extend(self.defs.get(name).into_iter().flat_map(|d| &d.refs));
        }
        reached
    }
}

/// A schema as the host holds it: its own JSON, whose references to
/// component schemas read `#/$defs/NAME`, over its document's
/// [`Definitions`] (shared, never copied). Cloning it is cheap.
#[derive(Clone)]
pub struct Schema(Arc<Parts>);

struct Parts {
    root: Value,
    refs: BTreeSet<String>,
    defs: Arc<Definitions>,
}

impl Schema {
    /// Its own JSON, as held: no `$defs`.
    pub fn root(&self) -> &Value {
        &self.0.root
    }

    /// The document's definitions it is read against.
    pub fn definitions(&self) -> &Arc<Definitions> {
        &self.0.defs
    }

    /// The schema, self-contained: its JSON with `$defs` holding every
    /// component schema it reaches (made now, not kept).
    pub fn document(&self) -> Value {
        let Parts { root, refs, defs } = &*self.0;
        let mut root = root.clone();
        let reached = defs.reached(refs);
        if reached.is_empty() {
            return root;
        }
        let included: Map<String, Value> = reached
            .into_iter()
            .map(|name| {
                let schema = match defs.defs.get(name) {
                    Some(definition) => definition.schema.clone(),
                    None => unresolved(&format!("{COMPONENTS}{name}")),
                };
                (name.to_owned(), schema)
            })
            .collect();
        if let Value::Object(object) = &mut root {
            object.insert("$defs".into(), Value::Object(included));
        }
        root
    }
}

impl crate::load::manifest::SharedSchema for Schema {
    fn held(&self) -> &Value {
        self.root()
    }

    fn document(&self) -> Value {
        Schema::document(self)
    }
}

impl PartialEq for Schema {
    fn eq(&self, other: &Self) -> bool {
        self.0.root == other.0.root
            && self.0.refs == other.0.refs
            && (Arc::ptr_eq(&self.0.defs, &other.0.defs) || self.0.defs == other.0.defs)
    }
}

impl std::fmt::Debug for Schema {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Schema").field("root", &self.0.root).field("refs", &self.0.refs).finish_non_exhaustive()
    }
}

/// `schema` as JSON with its references rewritten, and the component
/// schemas it names.
pub(super) fn convert(schema: &oas3::spec::Schema) -> (Value, BTreeSet<String>) {
    let mut value = serde_json::to_value(schema).unwrap_or_else(|_| Value::Object(Map::new()));
    let mut refs = BTreeSet::new();
    rewrite(&mut value, &mut refs);
    sanitize_texts(&mut value);
    (value, refs)
}

/// Keywords whose text is prose for a reader (and a model).
const TEXT_KEYWORDS: [&str; 4] = ["description", "title", "summary", "$comment"];

/// Keywords whose value maps names (a property's, which may be any word)
/// to schemas.
const NAMED_SCHEMAS: [&str; 5] = ["properties", "patternProperties", "$defs", "definitions", "dependentSchemas"];

/// Keywords whose value is data (an instance), left as the API gives it.
const VALUE_KEYWORDS: [&str; 5] = ["enum", "const", "default", "example", "examples"];

/// Every prose text of a schema (descriptions, titles, and the strings of
/// `x-` extensions such as enum descriptions) through the one sanitiser,
/// lines kept. Values the API defines (`enum`, `const`, `default`,
/// examples) are data and stay as they are.
fn sanitize_texts(value: &mut Value) {
    match value {
        Value::Object(object) => {
            for (key, child) in object.iter_mut() {
                match child {
                    Value::String(text) if TEXT_KEYWORDS.contains(&key.as_str()) || key.starts_with("x-") => {
                        if let Cow::Owned(clean) = sanitize(text, Shape::Lines) {
                            *text = clean;
                        }
                    }
                    Value::Object(named) if NAMED_SCHEMAS.contains(&key.as_str()) => {
                        named.values_mut().for_each(sanitize_texts);
                    }
                    _ if VALUE_KEYWORDS.contains(&key.as_str()) => {}
                    _ if key.starts_with("x-") => sanitize_strings(child),
                    _ => sanitize_texts(child),
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(sanitize_texts),
        _ => {}
    }
}

/// Every string in `value` (an extension's free-form value) sanitised.
fn sanitize_strings(value: &mut Value) {
    match value {
        Value::String(text) => {
            if let Cow::Owned(clean) = sanitize(text, Shape::Lines) {
                *text = clean;
            }
        }
        Value::Array(items) => items.iter_mut().for_each(sanitize_strings),
        Value::Object(object) => object.values_mut().for_each(sanitize_strings),
        _ => {}
    }
}

fn rewrite(value: &mut Value, refs: &mut BTreeSet<String>) {
    match value {
        Value::Object(object) => {
            if let Some(Value::String(target)) = object.get("$ref") {
                match target.strip_prefix(COMPONENTS) {
                    Some(rest) => {
                        let segment = rest.split('/').next().unwrap_or(rest);
                        refs.insert(segment.replace("~1", "/").replace("~0", "~"));
                        let rewritten = format!("#/$defs/{rest}");
                        object.insert("$ref".into(), Value::String(rewritten));
                    }
                    None => {
                        *value = unresolved(target);
                        return;
                    }
                }
            }
            for child in object.values_mut() {
                rewrite(child, refs);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|item| rewrite(item, refs)),
        _ => {}
    }
}

/// Rewrite 3.0 schema keywords (in a 3.0 document, or a 3.1 one written
/// with 3.0 habits) in their 3.1 (JSON Schema 2020-12) form, which `oas3` reads and the validator checks:
/// `nullable: true` → `null` added to `type`; a boolean
/// `exclusiveMinimum`/`exclusiveMaximum` → the bound itself. Only boolean
/// values are touched, so a property *named* `nullable` is left alone.
pub(super) fn upgrade_3_0(value: &mut Value) {
    match value {
        Value::Object(object) => {
            if let Some(Value::Bool(nullable)) = object.get("nullable").cloned() {
                object.remove("nullable");
                if nullable && let Some(Value::String(kind)) = object.get("type").cloned() {
                    object.insert("type".into(), serde_json::json!([kind, "null"]));
                }
            }
            for (flag, bound) in [("exclusiveMinimum", "minimum"), ("exclusiveMaximum", "maximum")] {
                if let Some(Value::Bool(exclusive)) = object.get(flag).cloned() {
                    object.remove(flag);
                    if exclusive && let Some(limit) = object.remove(bound) {
                        object.insert(flag.into(), limit);
                    }
                }
            }
            object.values_mut().for_each(upgrade_3_0);
        }
        Value::Array(items) => items.iter_mut().for_each(upgrade_3_0),
        _ => {}
    }
}

/// An unconstrained schema that names the reference it replaces.
fn unresolved(target: &str) -> Value {
    serde_json::json!({ "description": format!("(not resolved: `{target}`)") })
}

#[cfg(test)]
mod tests {
    use super::*;

    const DOC: &str = r##"{
      "openapi": "3.1.0", "info": {"title": "t", "version": "1"}, "paths": {},
      "components": {"schemas": {
        "Node": {"type": "object", "properties": {"next": {"$ref": "#/components/schemas/Node"},
                 "tag": {"$ref": "#/components/schemas/Tag"}}},
        "Tag": {"type": "string"},
        "Alone": {"type": "integer"}
      }}
    }"##;

    #[test]
    fn cycles_are_kept_as_references_with_their_definitions() {
        let spec = oas3::from_json(DOC).unwrap();
        let definitions = Definitions::new(&spec);
        let schema: oas3::spec::Schema =
            serde_json::from_str(r##"{"type":"array","items":{"$ref":"#/components/schemas/Node"}}"##).unwrap();
        let schema = definitions.schema(&schema);
        assert!(schema.root().get("$defs").is_none(), "held without its definitions");
        let document = schema.document();
        assert_eq!(document["items"]["$ref"], "#/$defs/Node");
        let defs = document["$defs"].as_object().unwrap();
        assert_eq!(defs.keys().collect::<Vec<_>>(), ["Node", "Tag"]);
        assert_eq!(defs["Node"]["properties"]["next"]["$ref"], "#/$defs/Node");
        let validator = jsonschema::validator_for(&document).unwrap();
        assert!(validator.is_valid(&serde_json::json!([{"next": {"tag": "a"}}])));
        assert!(!validator.is_valid(&serde_json::json!([{"next": {"tag": 7}}])));
    }

    #[test]
    fn a_3_0_document_reads_as_3_1() {
        let mut value = serde_json::json!({ "properties": {
            "n": { "type": "integer", "nullable": true, "minimum": 1, "exclusiveMinimum": true, "exclusiveMaximum": false, "maximum": 9 },
            "nullable": { "type": "boolean" } } });
        upgrade_3_0(&mut value);
        assert_eq!(
            value,
            serde_json::json!({ "properties": {
                "n": { "type": ["integer", "null"], "exclusiveMinimum": 1, "maximum": 9 },
                "nullable": { "type": "boolean" } } })
        );
    }

    #[test]
    fn prose_is_sanitised_and_data_is_not() {
        let schema: oas3::spec::Schema = serde_json::from_value(serde_json::json!({
            "type": "object", "title": "T\u{1b}[2J", "description": "a\nb\u{7}",
            "properties": {
                "default": { "type": "string", "description": "d\u{0}" },
                "mode": { "type": "string", "enum": ["a\u{7}"], "default": "a\u{7}" }
            },
            "x-enum-descriptions": { "a": "bell\u{7}" }
        }))
        .unwrap();
        let (value, _) = convert(&schema);
        assert_eq!(value["title"], "T\\u{1b}[2J");
        assert_eq!(value["description"], "a\nb\\u{7}");
        assert_eq!(value["properties"]["default"]["description"], "d\\u{0}");
        assert_eq!(value["properties"]["mode"]["enum"][0], "a\u{7}", "data is the API's");
        assert_eq!(value["properties"]["mode"]["default"], "a\u{7}");
        assert_eq!(value["x-enum-descriptions"]["a"], "bell\\u{7}");
    }

    #[test]
    fn other_references_become_open_schemas_that_say_so() {
        let spec = oas3::from_json(DOC).unwrap();
        let schema: oas3::spec::Schema =
            serde_json::from_str(r##"{"type":"object","properties":{"x":{"$ref":"other.json#/X"}}}"##).unwrap();
        let document = Definitions::new(&spec).schema(&schema).document();
        assert!(document["properties"]["x"]["description"].as_str().unwrap().contains("other.json#/X"));
        assert!(document.get("$defs").is_none());
    }
}
