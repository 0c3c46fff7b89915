//! A tool's input schema rewritten for OpenAI's strict mode (Structured
//! Outputs for function calling), where the model's arguments are
//! guaranteed to match the schema, at the price of a subset of JSON Schema:
//! every object closed (`additionalProperties: false`) with every property
//! required, so an optional property becomes a required one that admits
//! `null`; no `allOf`/`not`/conditionals, tuples or open maps; `anyOf` in
//! place of `oneOf`, `enum` in place of `const`; and a short list of
//! `format`s.
//!
//! Keywords that only narrow a value (`minLength`, `uniqueItems`, a
//! `default`, …) are dropped from the rewritten schema: the host still
//! checks every call against the tool's own schema, and reads a `null`
//! optional argument as "not given" (`load::drop_null_optionals`), so a
//! strict call means what the same call would mean without strict mode. A
//! schema whose meaning cannot be kept (it accepts any value somewhere, an
//! open object, a tuple) is not rewritten: that tool is exported with
//! `strict: false`, and the reason says why.

use serde_json::{Map, Value};

/// The `format`s strict mode accepts; others are dropped.
const FORMATS: &[&str] = &["date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6", "uuid"];

/// Keywords strict mode refuses that only narrow values or annotate them:
/// dropped, since the host checks the original schema anyway.
const DROPPED: &[&str] = &[
    "$schema",
    "$id",
    "$comment",
    "default",
    "examples",
    "deprecated",
    "readOnly",
    "writeOnly",
    "minLength",
    "maxLength",
    "uniqueItems",
    "minProperties",
    "maxProperties",
    "contentEncoding",
    "contentMediaType",
];

/// Keywords whose meaning strict mode cannot express.
const REFUSED: &[&str] = &[
    "allOf",
    "not",
    "if",
    "then",
    "else",
    "patternProperties",
    "propertyNames",
    "dependentRequired",
    "dependentSchemas",
    "unevaluatedProperties",
    "unevaluatedItems",
    "prefixItems",
    "contains",
];

/// Nesting strict mode allows (objects within objects).
const MAX_NESTING: usize = 10;

/// `schema` in strict mode's subset, or why it cannot be.
pub fn strict_schema(schema: &Value) -> Result<Value, String> {
    let mut out = schema.clone();
    let Some(root) = out.as_object_mut() else { return Err("the schema is not an object schema".into()) };
    if root.get("type").and_then(Value::as_str) != Some("object") {
        return Err("the arguments are not described as one object".into());
    }
    for defs in ["$defs", "definitions"] {
        if let Some(Value::Object(defs)) = root.get_mut(defs) {
            for (name, def) in defs.iter_mut() {
                rewrite(def, &format!("#/{name}"), 0)?;
            }
        }
    }
    rewrite(&mut out, "", 0)?;
    Ok(out)
}

fn rewrite(node: &mut Value, at: &str, nesting: usize) -> Result<(), String> {
    let here = || if at.is_empty() { "the arguments".to_owned() } else { format!("`{at}`") };
    let Value::Object(map) = node else {
        return Err(format!("{} accepts any value", here()));
    };
    if let Some(keyword) = REFUSED.iter().find(|k| map.contains_key(**k)) {
        return Err(format!("{} uses `{keyword}`, which strict mode does not support", here()));
    }
    for keyword in DROPPED {
        map.remove(*keyword);
    }
    if map.get("format").and_then(Value::as_str).is_some_and(|f| !FORMATS.contains(&f)) {
        map.remove("format");
    }
    if let Some(value) = map.remove("const") {
        map.insert("enum".into(), Value::Array(vec![value]));
    }
    if let Some(branches) = map.remove("oneOf") {
        map.insert("anyOf".into(), branches);
    }
    if let Some(Value::Array(branches)) = map.get_mut("anyOf") {
        for (i, branch) in branches.iter_mut().enumerate() {
            rewrite(branch, &format!("{at}|{i}"), nesting)?;
        }
    }
    let constrained = ["type", "enum", "anyOf", "$ref"].iter().any(|k| map.contains_key(*k));
    if !constrained {
        return Err(format!("{} accepts any value", here()));
    }
    if is_type(map, "object") || map.contains_key("properties") {
        close_object(map, at, nesting)?;
    }
    if is_type(map, "array") {
        match map.get_mut("items") {
            Some(items) => rewrite(items, &format!("{at}[]"), nesting)?,
            None => return Err(format!("{} is a list of any values", here())),
        }
    }
    Ok(())
}

fn close_object(map: &mut Map<String, Value>, at: &str, nesting: usize) -> Result<(), String> {
    let here = if at.is_empty() { "the arguments".to_owned() } else { format!("`{at}`") };
    if nesting >= MAX_NESTING {
        return Err(format!("{here} nest objects deeper than strict mode's {MAX_NESTING} levels"));
    }
    if map.get("additionalProperties").is_some_and(|a| a != &Value::Bool(false)) {
        return Err(format!("{here} is an open map (any keys), which strict mode cannot express"));
    }
    // Arguments without properties are a tool without arguments: `{}`.
    if at.is_empty() && !map.contains_key("properties") {
        map.insert("properties".into(), Value::Object(Map::new()));
    }
    if map.get("properties").and_then(Value::as_object).is_none_or(|p| p.is_empty() && !at.is_empty()) {
        return Err(format!("{here} is an object of any shape"));
    }
    let required: Vec<String> = map
        .get("required")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|k| k.as_str().map(str::to_owned))
        .collect();
    let Some(Value::Object(properties)) = map.get_mut("properties") else { unreachable!("checked above") };
    let mut all = Vec::with_capacity(properties.len());
    for (key, property) in properties.iter_mut() {
        let path = if at.is_empty() { key.clone() } else { format!("{at}.{key}") };
        rewrite(property, &path, nesting + 1)?;
        if !required.contains(key) {
            nullable(property);
        }
        all.push(Value::String(key.clone()));
    }
    map.insert("type".into(), Value::String("object".into()));
    map.insert("required".into(), Value::Array(all));
    map.insert("additionalProperties".into(), Value::Bool(false));
    Ok(())
}

/// Make an optional property's schema admit `null` (strict mode's way of
/// saying "may be left out").
fn nullable(schema: &mut Value) {
    let Value::Object(map) = schema else { return };
    let null = Value::String("null".into());
    if let Some(kind) = map.get("type") {
        let kinds = match kind {
            Value::String(kind) if kind != "null" => vec![Value::String(kind.clone()), null],
            Value::Array(kinds) if !kinds.contains(&null) => kinds.iter().cloned().chain([null]).collect(),
            _ => return,
        };
        map.insert("type".into(), Value::Array(kinds));
        push_null_value(map);
    } else if map.contains_key("enum") {
        push_null_value(map);
    } else if let Some(Value::Array(branches)) = map.get_mut("anyOf") {
        if !branches.iter().any(|b| b.get("type") == Some(&null)) {
            branches.push(serde_json::json!({"type": "null"}));
        }
    } else {
        // A `$ref`: wrap it, keeping the description outside.
        let mut inner = std::mem::take(map);
        if let Some(description) = inner.remove("description") {
            map.insert("description".into(), description);
        }
        map.insert("anyOf".into(), serde_json::json!([Value::Object(inner), {"type": "null"}]));
    }
}

/// An `enum` of a nullable schema lists `null` too.
fn push_null_value(map: &mut Map<String, Value>) {
    if let Some(Value::Array(values)) = map.get_mut("enum")
        && !values.contains(&Value::Null)
    {
        values.push(Value::Null);
    }
}

fn is_type(map: &Map<String, Value>, kind: &str) -> bool {
    match map.get("type") {
        Some(Value::String(t)) => t == kind,
        Some(Value::Array(types)) => types.iter().any(|t| t == kind),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::strict_schema;

    #[test]
    fn optional_arguments_become_required_and_nullable_in_closed_objects() {
        let schema = json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "properties": {
                "expression": {"type": "string", "minLength": 1},
                "precision": {"type": "integer", "format": "uint8", "minimum": 0, "maximum": 255, "default": 6},
                "unit": {"oneOf": [{"const": "m", "description": "metres"}, {"const": "ft"}]},
                "when": {"type": "string", "format": "date-time"},
                "filter": {"$ref": "#/$defs/Filter"}
            },
            "required": ["expression"],
            "$defs": {"Filter": {"type": "object", "properties": {"field": {"type": "string"}}}}
        });
        let strict = strict_schema(&schema).unwrap();
        assert_eq!(
            strict,
            json!({
                "type": "object",
                "properties": {
                    "expression": {"type": "string"},
                    "precision": {"type": ["integer", "null"], "minimum": 0, "maximum": 255},
                    "unit": {"anyOf": [{"enum": ["m"], "description": "metres"}, {"enum": ["ft"]}, {"type": "null"}]},
                    "when": {"type": ["string", "null"], "format": "date-time"},
                    "filter": {"anyOf": [{"$ref": "#/$defs/Filter"}, {"type": "null"}]}
                },
                "required": ["expression", "precision", "unit", "when", "filter"],
                "additionalProperties": false,
                "$defs": {"Filter": {
                    "type": "object",
                    "properties": {"field": {"type": ["string", "null"]}},
                    "required": ["field"],
                    "additionalProperties": false
                }}
            })
        );
    }

    #[test]
    fn schemas_strict_mode_cannot_express_say_why() {
        let cases = [
            (json!({"type": "object", "properties": {"value": {}}}), "`value` accepts any value"),
            (
                json!({"type": "object", "properties": {"m": {"type": "object", "additionalProperties": {"type": "string"}}}}),
                "`m` is an open map",
            ),
            (
                json!({"type": "object", "properties": {"p": {"type": "array", "prefixItems": [{"type": "number"}]}}}),
                "`p` uses `prefixItems`",
            ),
            (json!({"type": "object", "properties": {"o": {"type": "object"}}}), "`o` is an object of any shape"),
            (json!({"type": "string"}), "not described as one object"),
        ];
        for (schema, reason) in cases {
            let error = strict_schema(&schema).unwrap_err();
            assert!(error.contains(reason), "{error} (expected {reason})");
        }
    }
}
