//! JSON Schemas of operations, as self-contained documents.
//!
//! oas3 resolves the references between OpenAPI objects (parameters,
//! request bodies, responses); schemas may still point at
//! `#/components/schemas/NAME`, and may do so in cycles. Each schema the
//! host hands out keeps those references, rewritten to `#/$defs/NAME`,
//! and carries in `$defs` every component schema it reaches, so the
//! `jsonschema` validator (and a model) resolves them, cycles included.
//! A reference to anything else (another file, another part of the
//! document) becomes an unconstrained schema that says what it stood for.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Map, Value};

const COMPONENTS: &str = "#/components/schemas/";

/// The document's component schemas, converted once.
pub(super) struct Components {
    defs: BTreeMap<String, (Value, BTreeSet<String>)>,
}

impl Components {
    /// Convert every schema under `components.schemas`.
    pub(super) fn new(spec: &oas3::Spec) -> Components {
        let mut defs = BTreeMap::new();
        if let Some(components) = &spec.components {
            for (name, schema) in &components.schemas {
                defs.insert(name.clone(), convert(schema));
            }
        }
        Components { defs }
    }

    /// `schema` as a self-contained JSON Schema: its references rewritten
    /// and the component schemas it reaches under `$defs`.
    pub(super) fn document(&self, schema: &oas3::spec::Schema) -> Value {
        let (value, refs) = convert(schema);
        self.with_defs(value, refs)
    }

    /// `root` with `$defs` holding every component schema `refs` reach.
    pub(super) fn with_defs(&self, mut root: Value, refs: BTreeSet<String>) -> Value {
        let mut reached = BTreeSet::new();
        let mut pending: Vec<String> = refs.into_iter().collect();
        while let Some(name) = pending.pop() {
            if !reached.insert(name.clone()) {
                continue;
            }
            if let Some((_, next)) = self.defs.get(&name) {
                pending.extend(next.iter().filter(|n| !reached.contains(*n)).cloned());
            }
        }
        if reached.is_empty() {
            return root;
        }
        let defs: Map<String, Value> = reached
            .into_iter()
            .map(|name| {
                let schema = match self.defs.get(&name) {
                    Some((schema, _)) => schema.clone(),
                    None => unresolved(&format!("{COMPONENTS}{name}")),
                };
                (name, schema)
            })
            .collect();
        if let Value::Object(object) = &mut root {
            object.insert("$defs".into(), Value::Object(defs));
        }
        root
    }
}

/// `schema` as JSON with its references rewritten, and the component
/// schemas it names.
pub(super) fn convert(schema: &oas3::spec::Schema) -> (Value, BTreeSet<String>) {
    let mut value = serde_json::to_value(schema).unwrap_or_else(|_| Value::Object(Map::new()));
    let mut refs = BTreeSet::new();
    rewrite(&mut value, &mut refs);
    (value, refs)
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
        let components = Components::new(&spec);
        let schema: oas3::spec::Schema =
            serde_json::from_str(r##"{"type":"array","items":{"$ref":"#/components/schemas/Node"}}"##).unwrap();
        let document = components.document(&schema);
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
    fn other_references_become_open_schemas_that_say_so() {
        let spec = oas3::from_json(DOC).unwrap();
        let schema: oas3::spec::Schema =
            serde_json::from_str(r##"{"type":"object","properties":{"x":{"$ref":"other.json#/X"}}}"##).unwrap();
        let document = Components::new(&spec).document(&schema);
        assert!(document["properties"]["x"]["description"].as_str().unwrap().contains("other.json#/X"));
        assert!(document.get("$defs").is_none());
    }
}
