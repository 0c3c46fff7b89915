//! JSON to component values and back, by a function's WIT types: the
//! arguments a model sent, lowered to `Val`s for a dynamic call, and the
//! function's results lifted back to JSON, in the mapping [`super::schema`]
//! documents. The input was checked against the schema first; lowering
//! checks again and names where a value does not fit (`/shape/value/0`),
//! so a mismatch is an input error the model can act on, never a trap.

use serde_json::{Map, Value};
use wasmtime::component::Val;

use super::types::Ty;

/// Lower `json`, a value for `ty`, at `path` (a JSON pointer, for errors).
pub fn lower(ty: &Ty, json: &Value, path: &str) -> Result<Val, String> {
    let wrong = |wanted: &str| format!("{}: expected {wanted}, got {}", at(path), kind_of(json));
    let int = |wanted: &str| -> Result<i128, String> {
        match json {
            // `3.0` and `1e19` are integers to JSON Schema too (the cast
            // saturates; the type's range is checked after).
            Value::Number(n) => n
                .as_i64()
                .map(i128::from)
                .or_else(|| n.as_u64().map(i128::from))
                .or_else(|| n.as_f64().filter(|f| f.fract() == 0.0).map(|f| f as i128))
                .ok_or_else(|| wrong(wanted)),
            _ => Err(wrong(wanted)),
        }
    };
    let ranged = |wanted: &str| {
        let text = format!("an integer of {wanted}");
        move |e: std::num::TryFromIntError| format!("{}: expected {text}, out of range ({e})", at(path))
    };
    Ok(match ty {
        Ty::Bool => Val::Bool(json.as_bool().ok_or_else(|| wrong("a boolean"))?),
        Ty::U8 => Val::U8(int("u8")?.try_into().map_err(ranged("u8"))?),
        Ty::U16 => Val::U16(int("u16")?.try_into().map_err(ranged("u16"))?),
        Ty::U32 => Val::U32(int("u32")?.try_into().map_err(ranged("u32"))?),
        Ty::U64 => Val::U64(int("u64")?.try_into().map_err(ranged("u64"))?),
        Ty::S8 => Val::S8(int("s8")?.try_into().map_err(ranged("s8"))?),
        Ty::S16 => Val::S16(int("s16")?.try_into().map_err(ranged("s16"))?),
        Ty::S32 => Val::S32(int("s32")?.try_into().map_err(ranged("s32"))?),
        Ty::S64 => Val::S64(int("s64")?.try_into().map_err(ranged("s64"))?),
        Ty::F64 => Val::Float64(json.as_f64().ok_or_else(|| wrong("a number"))?),
        Ty::F32 => {
            let wide = json.as_f64().ok_or_else(|| wrong("a number"))?;
            let narrow = wide as f32;
            if !narrow.is_finite() {
                return Err(format!("{}: {json} is out of the range of an f32", at(path)));
            }
            Val::Float32(narrow)
        }
        Ty::Char => {
            let text = json.as_str().ok_or_else(|| wrong("a string of one character"))?;
            let mut chars = text.chars();
            match (chars.next(), chars.next()) {
                (Some(c), None) => Val::Char(c),
                _ => return Err(wrong("a string of one character")),
            }
        }
        Ty::String => Val::String(json.as_str().ok_or_else(|| wrong("a string"))?.to_owned()),
        Ty::List(t) => Val::List(items(t, json, path).ok_or_else(|| wrong("an array"))??),
        Ty::Tuple(types) => {
            let array = json.as_array().ok_or_else(|| wrong("an array"))?;
            if array.len() != types.len() {
                return Err(format!("{}: expected {} items, got {}", at(path), types.len(), array.len()));
            }
            let lowered = types.iter().zip(array).enumerate().map(|(i, (t, v))| lower(t, v, &format!("{path}/{i}")));
            Val::Tuple(lowered.collect::<Result<_, _>>()?)
        }
        Ty::Option(inner) => match (json, &**inner) {
            (Value::Null, _) => Val::Option(None),
            (_, Ty::Option(_)) => {
                let object = json.as_object().filter(|o| o.len() == 1).ok_or_else(|| wrong("null or {\"some\": …}"))?;
                let some = object.get("some").ok_or_else(|| wrong("null or {\"some\": …}"))?;
                Val::Option(Some(Box::new(lower(inner, some, &format!("{path}/some"))?)))
            }
            _ => Val::Option(Some(Box::new(lower(inner, json, path)?))),
        },
        Ty::Result { ok, err } => {
            let object =
                json.as_object().filter(|o| o.len() == 1).ok_or_else(|| wrong("{\"ok\": …} or {\"err\": …}"))?;
            let (key, value) = object.iter().next().expect("one entry");
            let arm = |t: &Option<Box<Ty>>| -> Result<Option<Box<Val>>, String> {
                match t {
                    Some(t) => Ok(Some(Box::new(lower(t, value, &format!("{path}/{key}"))?))),
                    None if value.is_null() => Ok(None),
                    None => Err(format!("{}/{key}: expected null, got {}", at(path), kind_of(value))),
                }
            };
            match key.as_str() {
                "ok" => Val::Result(Ok(arm(ok)?)),
                "err" => Val::Result(Err(arm(err)?)),
                _ => return Err(wrong("{\"ok\": …} or {\"err\": …}")),
            }
        }
        Ty::Record(fields) => {
            let object = json.as_object().ok_or_else(|| wrong("an object"))?;
            if let Some(extra) = object.keys().find(|k| !fields.iter().any(|f| &f.name == *k)) {
                return Err(format!("{}: no field `{extra}` here", at(path)));
            }
            let mut lowered = Vec::with_capacity(fields.len());
            for field in fields {
                let value = match (object.get(&field.name), &field.ty) {
                    (Some(value), ty) => lower(ty, value, &format!("{path}/{}", field.name))?,
                    (None, Ty::Option(_)) => Val::Option(None),
                    (None, _) => return Err(format!("{}: the field `{}` is missing", at(path), field.name)),
                };
                lowered.push((field.name.clone(), value));
            }
            Val::Record(lowered)
        }
        Ty::Variant(cases) => {
            let object = json.as_object().ok_or_else(|| wrong("an object with a `tag`"))?;
            let tag = object.get("tag").and_then(Value::as_str).ok_or_else(|| wrong("an object with a `tag`"))?;
            let case = cases.iter().find(|c| c.name == tag).ok_or_else(|| {
                let known: Vec<&str> = cases.iter().map(|c| c.name.as_str()).collect();
                format!("{}/tag: `{tag}` is not one of {}", at(path), known.join(", "))
            })?;
            let payload = match (&case.ty, object.get("value")) {
                (Some(ty), Some(value)) => Some(Box::new(lower(ty, value, &format!("{path}/value"))?)),
                (Some(_), None) => return Err(format!("{}: the case `{tag}` needs a `value`", at(path))),
                (None, None) => None,
                (None, Some(_)) => return Err(format!("{}: the case `{tag}` holds no `value`", at(path))),
            };
            if object.len() > 1 + usize::from(payload.is_some()) {
                return Err(format!("{}: only `tag` and `value` may be given", at(path)));
            }
            Val::Variant(tag.to_owned(), payload)
        }
        Ty::Enum(cases) => {
            let name = json.as_str().ok_or_else(|| wrong("a string"))?;
            if !cases.iter().any(|c| c.name == name) {
                let known: Vec<&str> = cases.iter().map(|c| c.name.as_str()).collect();
                return Err(format!("{}: `{name}` is not one of {}", at(path), known.join(", ")));
            }
            Val::Enum(name.to_owned())
        }
        Ty::Flags(flags) => {
            let array = json.as_array().ok_or_else(|| wrong("an array of names"))?;
            let mut set = Vec::with_capacity(array.len());
            for (i, item) in array.iter().enumerate() {
                let name = item.as_str().filter(|n| flags.iter().any(|f| f.name == *n));
                let name = name.ok_or_else(|| format!("{path}/{i}: not a flag of this type"))?;
                if !set.iter().any(|s: &String| s == name) {
                    set.push(name.to_owned());
                }
            }
            Val::Flags(set)
        }
    })
}

fn items(t: &Ty, json: &Value, path: &str) -> Option<Result<Vec<Val>, String>> {
    let array = json.as_array()?;
    Some(array.iter().enumerate().map(|(i, v)| lower(t, v, &format!("{path}/{i}"))).collect())
}

/// Lift `val`, a value of `ty` a function gave back, to JSON; an error
/// when the value is not of the type (a bug of the engine's, never the
/// guest's: the engine checks what it lifts).
pub fn lift(ty: &Ty, val: &Val) -> Result<Value, String> {
    let mismatch = || format!("a {} value where a {} was expected", val_kind(val), ty.wit());
    Ok(match (ty, val) {
        (Ty::Bool, Val::Bool(b)) => Value::Bool(*b),
        (Ty::U8, Val::U8(n)) => Value::from(*n),
        (Ty::U16, Val::U16(n)) => Value::from(*n),
        (Ty::U32, Val::U32(n)) => Value::from(*n),
        (Ty::U64, Val::U64(n)) => Value::from(*n),
        (Ty::S8, Val::S8(n)) => Value::from(*n),
        (Ty::S16, Val::S16(n)) => Value::from(*n),
        (Ty::S32, Val::S32(n)) => Value::from(*n),
        (Ty::S64, Val::S64(n)) => Value::from(*n),
        (Ty::F32, Val::Float32(f)) => float(f64::from(*f)),
        (Ty::F64, Val::Float64(f)) => float(*f),
        (Ty::Char, Val::Char(c)) => Value::String(c.to_string()),
        (Ty::String, Val::String(s)) => Value::String(s.clone()),
        (Ty::List(t), Val::List(items)) => Value::Array(items.iter().map(|v| lift(t, v)).collect::<Result<_, _>>()?),
        (Ty::Tuple(types), Val::Tuple(items)) if types.len() == items.len() => {
            Value::Array(types.iter().zip(items).map(|(t, v)| lift(t, v)).collect::<Result<_, _>>()?)
        }
        (Ty::Option(_), Val::Option(None)) => Value::Null,
        (Ty::Option(inner), Val::Option(Some(v))) => match &**inner {
            Ty::Option(_) => Value::Object(Map::from_iter([("some".to_owned(), lift(inner, v)?)])),
            _ => lift(inner, v)?,
        },
        (Ty::Result { ok, err }, Val::Result(r)) => {
            let (key, t, v) = match r {
                Ok(v) => ("ok", ok, v),
                Err(v) => ("err", err, v),
            };
            Value::Object(Map::from_iter([(key.to_owned(), payload(t, v.as_deref())?)]))
        }
        (Ty::Record(fields), Val::Record(values)) if fields.len() == values.len() => {
            let mut object = Map::new();
            for (field, (name, v)) in fields.iter().zip(values) {
                if &field.name != name {
                    return Err(mismatch());
                }
                object.insert(name.clone(), lift(&field.ty, v)?);
            }
            Value::Object(object)
        }
        (Ty::Variant(cases), Val::Variant(tag, v)) => {
            let case = cases.iter().find(|c| &c.name == tag).ok_or_else(mismatch)?;
            let mut object = Map::from_iter([("tag".to_owned(), Value::String(tag.clone()))]);
            if let Some(ty) = &case.ty {
                object.insert("value".into(), lift(ty, v.as_deref().ok_or_else(mismatch)?)?);
            }
            Value::Object(object)
        }
        (Ty::Enum(_), Val::Enum(name)) => Value::String(name.clone()),
        (Ty::Flags(_), Val::Flags(names)) => Value::Array(names.iter().cloned().map(Value::String).collect()),
        _ => return Err(mismatch()),
    })
}

/// Lift the payload of a result arm: `null` when the arm holds nothing.
pub fn payload(ty: &Option<Box<Ty>>, val: Option<&Val>) -> Result<Value, String> {
    match (ty, val) {
        (Some(ty), Some(v)) => lift(ty, v),
        (None, None) => Ok(Value::Null),
        _ => Err("a result arm that does not match its type".into()),
    }
}

/// A float as JSON: a number, or the name of a value JSON has no number for.
fn float(f: f64) -> Value {
    match serde_json::Number::from_f64(f) {
        Some(n) => Value::Number(n),
        None if f.is_nan() => Value::String("NaN".into()),
        None if f > 0.0 => Value::String("Infinity".into()),
        None => Value::String("-Infinity".into()),
    }
}

fn at(path: &str) -> &str {
    if path.is_empty() { "/" } else { path }
}

/// What kind of JSON value `json` is, as an error names it ("a string").
pub(crate) fn kind_of(json: &Value) -> &'static str {
    match json {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

fn val_kind(val: &Val) -> &'static str {
    match val {
        Val::Bool(_) => "bool",
        Val::S8(_) | Val::U8(_) | Val::S16(_) | Val::U16(_) | Val::S32(_) | Val::U32(_) | Val::S64(_) | Val::U64(_) => {
            "integer"
        }
        Val::Float32(_) | Val::Float64(_) => "float",
        Val::Char(_) => "char",
        Val::String(_) => "string",
        Val::List(_) | Val::FixedLengthList(_) => "list",
        Val::Map(_) => "map",
        Val::Record(_) => "record",
        Val::Tuple(_) => "tuple",
        Val::Variant(..) => "variant",
        Val::Enum(_) => "enum",
        Val::Option(_) => "option",
        Val::Result(_) => "result",
        Val::Flags(_) => "flags",
        Val::Resource(_) => "resource",
        Val::Future(_) => "future",
        Val::Stream(_) => "stream",
        Val::ErrorContext(_) => "error-context",
    }
}
