//! Routes as data, and the OpenAPI 3.1 document made from them: paths,
//! parameters and answers come from the route table, and every body schema
//! from its Rust type (schemars), so the document cannot drift from the
//! routes the router serves.

use std::collections::BTreeMap;

use axum::http::{Method, StatusCode};
use axum::routing::MethodRouter;
use schemars::JsonSchema;
use serde_json::{Map, Value, json};

use super::errors::ApiError;

/// How one route answers, for the router and the OpenAPI document.
pub(crate) struct Route<S> {
    pub(crate) method: Method,
    pub(crate) path: &'static str,
    pub(crate) summary: &'static str,
    /// Parameters beyond none: a `{name}` path parameter, or a query type.
    pub(crate) params: Params,
    /// The JSON answer's type (as a named schema), or its media type.
    pub(crate) answer: Answer,
    /// The statuses of failures, each answered with [`ApiError`].
    pub(crate) failures: &'static [StatusCode],
    pub(crate) handler: fn() -> MethodRouter<S>,
}

#[derive(Clone, Copy)]
pub(crate) enum Params {
    None,
    Name,
    /// The schema of the type the query string deserializes into.
    Query(fn() -> Value),
}

#[derive(Clone, Copy)]
pub(crate) enum Answer {
    /// A named schema derived from a type.
    Schema(&'static str, fn() -> Value),
    /// A document of this media type with no fixed schema.
    Media(&'static str, &'static str),
}

/// The JSON Schema of `T`, as an OpenAPI component.
pub(crate) fn schema<T: JsonSchema>() -> Value {
    let mut schema = serde_json::to_value(schemars::schema_for!(T)).unwrap_or_default();
    if let Some(root) = schema.as_object_mut() {
        root.remove("$schema");
    }
    schema
}

fn reference(name: &str) -> Value {
    json!({"content": {"application/json": {"schema": {"$ref": format!("#/components/schemas/{name}")}}}})
}

fn parameters(params: Params) -> Value {
    match params {
        Params::None => json!([]),
        Params::Name => json!([{"name": "name", "in": "path", "required": true, "schema": {"type": "string"}}]),
        Params::Query(of) => {
            // The query parameters, from the query type's own schema.
            let query = of();
            let properties = query["properties"].as_object().cloned().unwrap_or_default();
            properties
                .into_iter()
                .map(|(name, schema)| {
                    json!({"name": name, "in": "query", "required": false,
                           "description": schema["description"], "schema": schema})
                })
                .collect()
        }
    }
}

/// The whole document of `routes`.
pub(crate) fn document<S>(routes: &[Route<S>]) -> Value {
    let mut paths: BTreeMap<&str, Map<String, Value>> = BTreeMap::new();
    let mut components: BTreeMap<&str, Value> = BTreeMap::new();
    components.insert("ApiError", schema::<ApiError>());
    for route in routes {
        let mut responses = Map::new();
        let ok = match route.answer {
            Answer::Schema(name, make) => {
                components.insert(name, make());
                let mut ok = reference(name);
                ok["description"] = name.into();
                ok
            }
            Answer::Media(description, media) => json!({"description": description, "content": {media: {}}}),
        };
        responses.insert("200".into(), ok);
        for status in route.failures {
            let mut failure = reference("ApiError");
            failure["description"] = status.canonical_reason().unwrap_or("failure").into();
            responses.insert(status.as_str().into(), failure);
        }
        let mut operation = json!({
            "summary": route.summary,
            "parameters": parameters(route.params),
            "responses": responses,
        });
        if route.method == Method::POST {
            operation["requestBody"] = json!({"content": {"application/json": {"schema": {"type": "object"}}}});
        }
        paths.entry(route.path).or_default().insert(route.method.as_str().to_lowercase(), operation);
    }
    json!({
        "openapi": "3.1.0",
        "info": {"title": "Quiver", "version": env!("CARGO_PKG_VERSION"),
                 "description": "Tools at three levels of detail; responses carry ETags from the catalog version."},
        "paths": paths,
        "components": {"schemas": components},
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_route_is_in_the_document() {
        let routes = super::super::routes::ROUTES;
        let document = document(routes);
        for route in routes {
            let method = route.method.as_str().to_lowercase();
            assert!(document["paths"][route.path][&method].is_object(), "{} {}", route.method, route.path);
        }
        assert!(document["components"]["schemas"]["Status"].is_object());
        let page = &document["paths"]["/v1/tools"]["get"]["parameters"];
        assert_eq!(page.as_array().map(Vec::len), Some(2));
    }
}
