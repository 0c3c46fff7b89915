//! An optional argument given as `null` means "not given".
//!
//! Models often fill an optional parameter with `null`, and OpenAI's strict
//! mode makes them do so (every property is required there; an optional one
//! becomes nullable: see `disclosure::strict`). A schema that does not admit
//! `null` for such a property would refuse the call, so before refusing,
//! the host drops the `null` members that stand for an absent optional
//! argument and checks again. Only members that are optional *and* whose
//! schema refuses `null` are dropped: where `null` is a value the tool
//! accepts, it is passed on.

use serde_json::{Map, Value};

/// Drop from `input` the members that are `null` where `schema` makes them
/// optional and does not admit `null`, at any depth the schema describes
/// unambiguously (properties, array items, a `$ref` to `#/$defs` or
/// `#/definitions`, the one object branch of an `anyOf`/`oneOf`). Returns
/// whether anything was dropped.
pub fn drop_null_optionals(schema: &Value, input: &mut Value) -> bool {
    walk(schema, schema, input, 0)
}

/// Deeper than this, a schema is left as it is (a guard against `$ref`
/// cycles with recursive inputs).
const MAX_DEPTH: usize = 32;

fn walk(root: &Value, schema: &Value, input: &mut Value, depth: usize) -> bool {
    if depth > MAX_DEPTH {
        return false;
    }
    let schema = resolve(root, schema);
    let mut dropped = false;
    match input {
        Value::Object(members) => {
            if let Some(properties) = schema.get("properties").and_then(Value::as_object) {
                dropped |= drop_members(root, schema, properties, members);
                for (key, value) in members.iter_mut() {
                    if let Some(property) = properties.get(key) {
                        dropped |= walk(root, property, value, depth + 1);
                    }
                }
            } else if let Some(branch) = only_object_branch(root, schema) {
                dropped |= walk(root, branch, input, depth + 1);
            }
        }
        Value::Array(items) => {
            if let Some(item) = schema.get("items").filter(|i| i.is_object()) {
                for value in items {
                    dropped |= walk(root, item, value, depth + 1);
                }
            }
        }
        _ => {}
    }
    dropped
}

fn drop_members(
    root: &Value,
    schema: &Value,
    properties: &Map<String, Value>,
    members: &mut Map<String, Value>,
) -> bool {
    let required = |key: &str| {
        schema.get("required").and_then(Value::as_array).is_some_and(|r| r.iter().any(|k| k.as_str() == Some(key)))
    };
    let before = members.len();
    members.retain(|key, value| {
        !(value.is_null() && !required(key) && properties.get(key).is_some_and(|p| !admits_null(root, p, 0)))
    });
    members.len() != before
}

/// The single branch of an `anyOf`/`oneOf` that describes an object (as
/// `Option<Struct>` renders: the struct or `null`); none if several do.
fn only_object_branch<'a>(root: &'a Value, schema: &'a Value) -> Option<&'a Value> {
    let branches = schema.get("anyOf").or_else(|| schema.get("oneOf"))?.as_array()?;
    let mut objects = branches.iter().map(|b| resolve(root, b)).filter(|b| b.get("properties").is_some());
    let first = objects.next()?;
    objects.next().is_none().then_some(first)
}

/// Whether `schema` may accept `null` (conservatively: yes when unsure).
fn admits_null(root: &Value, schema: &Value, depth: usize) -> bool {
    if depth > MAX_DEPTH {
        return true;
    }
    let schema = resolve(root, schema);
    let Some(map) = schema.as_object() else { return schema.as_bool().unwrap_or(true) };
    if let Some(kind) = map.get("type") {
        let null = match kind {
            Value::String(t) => t == "null",
            Value::Array(types) => types.iter().any(|t| t == "null"),
            _ => true,
        };
        if !null {
            return false;
        }
    }
    if let Some(value) = map.get("const") {
        return value.is_null();
    }
    if let Some(values) = map.get("enum").and_then(Value::as_array) {
        return values.iter().any(Value::is_null);
    }
    for key in ["anyOf", "oneOf"] {
        if let Some(branches) = map.get(key).and_then(Value::as_array) {
            return branches.iter().any(|b| admits_null(root, b, depth + 1));
        }
    }
    if let Some(all) = map.get("allOf").and_then(Value::as_array) {
        return all.iter().all(|b| admits_null(root, b, depth + 1));
    }
    true
}

/// `schema`, or what its local `$ref` points at.
fn resolve<'a>(root: &'a Value, schema: &'a Value) -> &'a Value {
    let mut schema = schema;
    for _ in 0..8 {
        let Some(target) = schema.get("$ref").and_then(Value::as_str) else { break };
        match target.strip_prefix('#').and_then(|pointer| root.pointer(pointer)) {
            Some(found) => schema = found,
            None => break,
        }
    }
    schema
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::drop_null_optionals;

    #[test]
    fn null_stands_for_an_absent_optional_argument() {
        let schema = json!({
            "type": "object",
            "properties": {
                "query": {"type": "string"},
                "limit": {"type": "integer"},
                "note": {"type": ["string", "null"]},
                "filter": {"anyOf": [{"$ref": "#/$defs/Filter"}, {"type": "null"}]},
                "tags": {"type": "array", "items": {"$ref": "#/$defs/Filter"}}
            },
            "required": ["query"],
            "$defs": {"Filter": {"type": "object", "properties": {"field": {"type": "string"}, "max": {"type": "number"}}}}
        });
        let mut input = json!({
            "query": null, "limit": null, "note": null,
            "filter": {"field": "a", "max": null},
            "tags": [{"field": null}]
        });
        assert!(drop_null_optionals(&schema, &mut input));
        // A required member stays (and fails validation); a member whose
        // schema admits null stays; the others go, at every depth.
        assert_eq!(input, json!({"query": null, "note": null, "filter": {"field": "a"}, "tags": [{}]}));
        let mut clean = json!({"query": "x"});
        assert!(!drop_null_optionals(&schema, &mut clean));
    }
}
