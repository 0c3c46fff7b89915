//! JSON Schemas of plain components' functions, written from their WIT
//! types ([`Ty`]): the model's input is checked against them before any
//! value is lowered, and they say what each output holds.
//!
//! The JSON each type takes and gives (the manual's "bring your own
//! component" table; `values` lowers and lifts exactly these):
//!
//! | WIT | JSON |
//! |---|---|
//! | `bool` | boolean |
//! | `u8` … `u64`, `s8` … `s64` | integer within the type's range (64-bit ones exact: Quiver never rounds them, though a JavaScript client may past 2^53) |
//! | `f32`, `f64` | number (an `f32` input within ±3.4028235e38); a result that is NaN or infinite is the string `"NaN"`, `"Infinity"` or `"-Infinity"` (JSON has no such numbers); an input must be finite |
//! | `char` | a string of one character |
//! | `string` | string |
//! | `list<T>` (`list<u8>` too) | array |
//! | `tuple<A, B>` | array of exactly those items |
//! | `option<T>` | `T` or `null`; a parameter or field of this type may be left out; `option<option<T>>`'s inner value is `{"some": …}` |
//! | `result<T, E>` | returned by a function: `T`, or a typed error holding `E`; elsewhere `{"ok": T}` or `{"err": E}` |
//! | `record` | object with every field required, but options |
//! | `variant` | `{"tag": "case", "value": …}` (`value` only for a case that holds one) |
//! | `enum` | one of the case names |
//! | `flags` | array of the names that are set |

use serde::Serialize;
use serde_json::Number;

use super::types::{Named, Ty};

/// Which way a value travels: what a model may send, or what a function
/// gives back (only that may hold a non-finite float, as a string).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Way {
    In,
    Out,
}

/// A JSON Schema (2020-12), as much of it as WIT types need.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Schema {
    #[serde(rename = "type", skip_serializing_if = "Option::is_none")]
    pub kind: Option<Kind>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(rename = "const", skip_serializing_if = "Option::is_none")]
    pub constant: Option<String>,
    #[serde(rename = "enum", skip_serializing_if = "Vec::is_empty")]
    pub one_of_names: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub minimum: Option<Number>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub maximum: Option<Number>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub min_length: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_length: Option<u32>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub prefix_items: Vec<Schema>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub items: Option<Items>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub min_items: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_items: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unique_items: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub properties: Option<indexmap::IndexMap<String, Schema>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub required: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub additional_properties: Option<bool>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub any_of: Vec<Schema>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub one_of: Vec<Schema>,
}

/// The `type` keyword: one type, or several.
#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(untagged)]
pub enum Kind {
    One(&'static str),
    Some(Vec<&'static str>),
}

/// The `items` keyword: a schema, or `false` (no items past `prefixItems`).
#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(untagged)]
pub enum Items {
    Each(Box<Schema>),
    None(bool),
}

impl Schema {
    fn of(kind: &'static str) -> Schema {
        Schema { kind: Some(Kind::One(kind)), ..Schema::default() }
    }

    /// The schema of `null` only.
    pub fn null() -> Schema {
        Schema::of("null")
    }

    fn integer(min: impl Into<Number>, max: impl Into<Number>) -> Schema {
        Schema { minimum: Some(min.into()), maximum: Some(max.into()), ..Schema::of("integer") }
    }

    fn described(self, docs: Option<&str>) -> Schema {
        Schema { description: docs.map(str::to_owned).or(self.description), ..self }
    }

    /// The object schema of a function's parameters: one property each,
    /// required unless it is an option.
    pub fn params<'a>(params: impl IntoIterator<Item = (&'a str, &'a Ty, Option<&'a str>)>) -> Schema {
        let mut properties = indexmap::IndexMap::new();
        let mut required = Vec::new();
        for (name, ty, docs) in params {
            if !matches!(ty, Ty::Option(_)) {
                required.push(name.to_owned());
            }
            properties.insert(name.to_owned(), Schema::for_ty(ty, Way::In).described(docs));
        }
        Schema { properties: Some(properties), required, additional_properties: Some(false), ..Schema::of("object") }
    }

    /// The schema of the JSON for a value of `ty` travelling `way`.
    pub fn for_ty(ty: &Ty, way: Way) -> Schema {
        match ty {
            Ty::Bool => Schema::of("boolean"),
            Ty::U8 => Schema::integer(u8::MIN, u8::MAX),
            Ty::U16 => Schema::integer(u16::MIN, u16::MAX),
            Ty::U32 => Schema::integer(u32::MIN, u32::MAX),
            Ty::U64 => Schema::integer(u64::MIN, u64::MAX),
            Ty::S8 => Schema::integer(i8::MIN, i8::MAX),
            Ty::S16 => Schema::integer(i16::MIN, i16::MAX),
            Ty::S32 => Schema::integer(i32::MIN, i32::MAX),
            Ty::S64 => Schema::integer(i64::MIN, i64::MAX),
            // An f32 input is a finite number within the type's range.
            Ty::F32 if way == Way::In => Schema {
                minimum: Number::from_f64(f64::from(f32::MIN)),
                maximum: Number::from_f64(f64::from(f32::MAX)),
                ..Schema::of("number")
            },
            Ty::F32 | Ty::F64 => match way {
                Way::In => Schema::of("number"),
                Way::Out => Schema { kind: Some(Kind::Some(vec!["number", "string"])), ..Schema::default() },
            },
            Ty::Char => Schema { min_length: Some(1), max_length: Some(1), ..Schema::of("string") },
            Ty::String => Schema::of("string"),
            Ty::List(t) => Schema { items: Some(Items::Each(Box::new(Schema::for_ty(t, way)))), ..Schema::of("array") },
            Ty::Tuple(items) => {
                let n = u32::try_from(items.len()).unwrap_or(u32::MAX);
                Schema {
                    prefix_items: items.iter().map(|t| Schema::for_ty(t, way)).collect(),
                    items: Some(Items::None(false)),
                    min_items: Some(n),
                    max_items: Some(n),
                    ..Schema::of("array")
                }
            }
            Ty::Option(inner) => {
                let some = match &**inner {
                    Ty::Option(_) => Schema::object([("some", Schema::for_ty(inner, way), true)]),
                    _ => Schema::for_ty(inner, way),
                };
                Schema { any_of: vec![some, Schema::of("null")], ..Schema::default() }
            }
            Ty::Result { ok, err } => {
                let arm = |name, t: &Option<Box<Ty>>| {
                    let value = t.as_deref().map_or_else(|| Schema::of("null"), |t| Schema::for_ty(t, way));
                    Schema::object([(name, value, true)])
                };
                Schema { one_of: vec![arm("ok", ok), arm("err", err)], ..Schema::default() }
            }
            Ty::Record(fields) => {
                let fields = fields.iter().map(|f| {
                    let schema = Schema::for_ty(&f.ty, way).described(f.docs.as_deref());
                    (f.name.as_str(), schema, !matches!(f.ty, Ty::Option(_)))
                });
                Schema::object(fields)
            }
            Ty::Variant(cases) => Schema {
                one_of: cases
                    .iter()
                    .map(|case| {
                        let tag = Schema { constant: Some(case.name.clone()), ..Schema::of("string") };
                        let mut parts = vec![("tag", tag, true)];
                        if let Some(ty) = &case.ty {
                            parts.push(("value", Schema::for_ty(ty, way), true));
                        }
                        Schema::object(parts).described(case.docs.as_deref())
                    })
                    .collect(),
                ..Schema::default()
            },
            Ty::Enum(cases) => Schema { one_of_names: names(cases), ..Schema::of("string") },
            Ty::Flags(flags) => Schema {
                items: Some(Items::Each(Box::new(Schema { one_of_names: names(flags), ..Schema::of("string") }))),
                unique_items: Some(true),
                ..Schema::of("array")
            },
        }
    }

    /// A closed object of `(name, schema, required)` properties.
    fn object<'a>(parts: impl IntoIterator<Item = (&'a str, Schema, bool)>) -> Schema {
        let mut properties = indexmap::IndexMap::new();
        let mut required = Vec::new();
        for (name, schema, needed) in parts {
            if needed {
                required.push(name.to_owned());
            }
            properties.insert(name.to_owned(), schema);
        }
        Schema { properties: Some(properties), required, additional_properties: Some(false), ..Schema::of("object") }
    }

    /// As JSON.
    pub fn to_value(&self) -> serde_json::Value {
        serde_json::to_value(self).expect("a schema always serializes")
    }
}

fn names(items: &[Named<()>]) -> Vec<String> {
    items.iter().map(|n| n.name.clone()).collect()
}
