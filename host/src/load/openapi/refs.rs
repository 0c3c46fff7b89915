//! `$ref`s between a document's reusable objects (parameters, request
//! bodies, responses, security schemes), followed here rather than by
//! `oas3`, whose resolution recurses without end on a cycle: each chain is
//! followed with the names it has passed and at most [`MAX_DEPTH`] steps, so
//! a cycle or an over-long chain is an error naming the document and the
//! chain. The object found is borrowed from the document, never copied.
//!
//! Schemas refer to each other too; those references are kept as
//! references (see [`super::schema`]), so they need no following here.

use oas3::Spec;
use oas3::spec::{Components, ObjectOrReference, Parameter, RequestBody, Response, SecurityScheme};

use crate::contract::{Shape, sanitize_cut};
use crate::error::{Error, Result};

/// Most `$ref`s followed from one place before the chain is refused.
pub(super) const MAX_DEPTH: usize = 32;

/// Longest reference quoted in an error.
const SHOWN_REF: usize = 120;

/// An object that `components` holds by name, and that a `$ref` may name.
pub(super) trait Reusable: Sized {
    /// Its section of `components`, as a `$ref` names it.
    const SECTION: &'static str;
    /// That section.
    fn section(components: &Components) -> &oas3::Map<String, ObjectOrReference<Self>>;
}

impl Reusable for Parameter {
    const SECTION: &'static str = "parameters";
    fn section(components: &Components) -> &oas3::Map<String, ObjectOrReference<Self>> {
        &components.parameters
    }
}

impl Reusable for RequestBody {
    const SECTION: &'static str = "requestBodies";
    fn section(components: &Components) -> &oas3::Map<String, ObjectOrReference<Self>> {
        &components.request_bodies
    }
}

impl Reusable for Response {
    const SECTION: &'static str = "responses";
    fn section(components: &Components) -> &oas3::Map<String, ObjectOrReference<Self>> {
        &components.responses
    }
}

impl Reusable for SecurityScheme {
    const SECTION: &'static str = "securitySchemes";
    fn section(components: &Components) -> &oas3::Map<String, ObjectOrReference<Self>> {
        &components.security_schemes
    }
}

/// What a reference leads to.
pub(super) enum Found<'a, T> {
    /// The object.
    Object(&'a T),
    /// Nothing in this document: another file, another kind of object, or
    /// a name `components` does not have (the reference, as written).
    Missing(String),
}

/// Follows references within one document; `origin` names it in errors.
#[derive(Clone, Copy)]
pub(super) struct Refs<'a> {
    pub spec: &'a Spec,
    pub origin: &'a str,
}

impl<'a> Refs<'a> {
    /// The object `item` is or leads to. A cycle, or a chain of more than
    /// [`MAX_DEPTH`] references, is an error naming the document and the
    /// chain.
    pub(super) fn follow<T: Reusable>(&self, item: &'a ObjectOrReference<T>) -> Result<Found<'a, T>> {
        let mut chain: Vec<&'a str> = Vec::new();
        let mut item = item;
        loop {
            let path = match item {
                ObjectOrReference::Object(object) => return Ok(Found::Object(object)),
                ObjectOrReference::Ref { ref_path, .. } => ref_path.as_str(),
            };
            if chain.contains(&path) {
                chain.push(path);
                return Err(self.refused("a `$ref` cycle", &chain, "", "break it: each `$ref` must end at an object"));
            }
            chain.push(path);
            if chain.len() > MAX_DEPTH {
                let what = format!("a chain of more than {MAX_DEPTH} `$ref`s");
                return Err(self.refused(&what, &chain[..3], " → …", "point the first nearer to the object"));
            }
            let next = name_in(path, T::SECTION)
                .and_then(|name| self.spec.components.as_ref().and_then(|c| T::section(c).get(&name)));
            match next {
                Some(next) => item = next,
                None => return Ok(Found::Missing(path.to_owned())),
            }
        }
    }

    /// The error: `what`, the references of `chain` then `more`, and the
    /// remedy.
    fn refused(&self, what: &str, chain: &[&str], more: &str, remedy: &str) -> Error {
        let shown: Vec<String> = chain.iter().map(|r| sanitize_cut(r, Shape::Line, SHOWN_REF)).collect();
        Error::config(self.origin, format!("{what}: {}{more}; {remedy}", shown.join(" → ")))
    }
}

/// The name `path` gives in `components.SECTION` of this document (a JSON
/// pointer's `~1` and `~0` decoded), if that is where it points.
fn name_in(path: &str, section: &str) -> Option<String> {
    let name = path.strip_prefix("#/components/")?.strip_prefix(section)?.strip_prefix('/')?;
    (!name.contains('/')).then(|| name.replace("~1", "/").replace("~0", "~"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_read_from_local_pointers_only() {
        assert_eq!(name_in("#/components/parameters/Limit", "parameters").as_deref(), Some("Limit"));
        assert_eq!(name_in("#/components/parameters/a~1b~0c", "parameters").as_deref(), Some("a/b~c"));
        assert_eq!(name_in("other.json#/components/parameters/Limit", "parameters"), None);
        assert_eq!(name_in("#/components/responses/Limit", "parameters"), None);
        assert_eq!(name_in("#/components/parametersX/Limit", "parameters"), None);
    }
}
