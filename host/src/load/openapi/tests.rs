use serde_json::json;

use std::sync::Arc;

use super::*;
use crate::contract::Access;
use crate::sandbox::http::RawAuth;
use quiver_contract::openapi::{ParamIn, ParamStyle};

const BOOKS: &str = r##"
openapi: 3.0.3
info: { title: Books, version: 2.1.0, description: "A small library.\n\nMore words." }
components:
  securitySchemes:
    key: { type: apiKey, in: query, name: api_key }
    client: { type: oauth2, flows: { clientCredentials: { tokenUrl: "http://127.0.0.1:9/token", scopes: {} } } }
  schemas:
    Book:
      type: object
      required: [title]
      properties:
        title: { type: string }
        sequel: { $ref: "#/components/schemas/Book" }
  parameters:
    Limit: { name: limit, in: query, schema: { type: integer }, description: "At most this many." }
paths:
  /books/{bookId}:
    parameters:
      - { name: bookId, in: path, required: true, schema: { type: integer } }
    get:
      operationId: getBook
      summary: Get one book
      tags: [books]
      responses:
        "200": { description: ok, content: { application/json: { schema: { $ref: "#/components/schemas/Book" } } } }
    delete:
      operationId: deleteBook
      tags: [books, admin]
      responses: { "204": { description: gone } }
  /books:
    get:
      tags: [books]
      parameters:
        - $ref: "#/components/parameters/Limit"
        - { name: tag, in: query, style: form, explode: false, schema: { type: array, items: { type: string } } }
        - { name: session, in: cookie, schema: { type: string } }
      responses: { "200": { description: ok } }
    post:
      operationId: createBook
      tags: [books]
      requestBody:
        required: true
        content: { application/json: { schema: { $ref: "#/components/schemas/Book" } } }
      responses: { "201": { description: made } }
"##;

fn api() -> Arc<Api> {
    Arc::new(Api::parse(BOOKS, "books.yaml").unwrap())
}

fn op<'a>(api: &'a Api, name: &str) -> &'a Operation {
    api.operations.iter().find(|o| o.name == name).unwrap_or_else(|| panic!("no {name}"))
}

#[test]
fn operations_become_actions_with_names_levels_and_plans() {
    let api = api();
    let names: Vec<&str> = api.operations.iter().map(|o| o.name.as_str()).collect();
    assert_eq!(names, ["get_book", "delete_book", "get_books", "create_book"]);
    assert_eq!((api.title.as_str(), api.summary.as_str()), ("Books", "A small library."));
    let levels: Vec<Access> = api.operations.iter().map(|o| o.access).collect();
    assert_eq!(levels, [Access::Read, Access::Admin, Access::Read, Access::Write]);
    let get = op(&api, "get_book");
    assert_eq!(get.plan.path, "/books/{bookId}");
    assert_eq!(get.plan.params[0].location, ParamIn::Path);
    assert_eq!(get.input_schema.root()["required"], json!(["bookId"]));
    assert_eq!(get.description, "Get one book\n\n`GET /books/{bookId}`");
    let output = get.output_schema.as_ref().unwrap().document();
    assert_eq!(output["$ref"], "#/$defs/Book");
    assert_eq!(output["$defs"]["Book"]["properties"]["sequel"]["$ref"], "#/$defs/Book");
}

#[test]
fn inputs_hold_parameters_and_the_body_and_validate() {
    let api = api();
    let list = op(&api, "get_books");
    assert_eq!(list.input_schema.root()["properties"]["limit"]["description"], "At most this many.");
    assert!(list.input_schema.root()["properties"].get("session").is_none(), "cookies are not sent");
    let tag = list.plan.params.iter().find(|p| p.name == "tag").unwrap();
    assert_eq!((tag.style, tag.explode), (ParamStyle::Form, false));
    let create = op(&api, "create_book");
    assert_eq!(create.plan.body.as_ref().unwrap().content_type, "application/json");
    let validator = jsonschema::validator_for(&create.input_schema.document()).unwrap();
    assert!(validator.is_valid(&json!({"body": {"title": "Dune", "sequel": {"title": "Messiah"}}})));
    assert!(!validator.is_valid(&json!({"body": {"sequel": {}}})), "title is required");
    assert!(!validator.is_valid(&json!({})), "the body is required");
    assert!(!validator.is_valid(&json!({"body": {"title": "x"}, "typo": 1})));
}

#[test]
fn a_selection_picks_operations_and_overrides_levels() {
    let api = api();
    let selection = Selection {
        exclude_tags: vec!["admin".into()],
        access: [("createBook".to_owned(), Access::Admin)].into(),
        ..Selection::default()
    };
    let connector = api.select(&selection, "[connectors.books]").unwrap();
    let stub = connector.stub("books");
    assert_eq!(stub.description, "Books: A small library.");
    let served: Vec<(&str, Access)> = stub.actions.iter().map(|a| (a.name.as_str(), a.access)).collect();
    assert_eq!(served, [("get_book", Access::Read), ("get_books", Access::Read), ("create_book", Access::Admin)]);
    let manifest = connector.manifest("books");
    assert_eq!(manifest.actions.len(), 3);
    assert_eq!(manifest.actions[0].summary(), stub.actions[0].summary);
    let plans: Vec<(String, String)> = connector.plans().collect();
    assert_eq!(plans[0].0, "openapi.operation.get_book");
    for (selection, expected) in [
        (Selection { operations: vec!["nope".into()], ..Selection::default() }, "no operation `nope`"),
        (Selection { tags: vec!["pets".into()], ..Selection::default() }, "tag `pets`"),
        (Selection { exclude_tags: vec!["books".into()], ..Selection::default() }, "leaves no operation"),
    ] {
        let error = api.select(&selection, "[connectors.books]").unwrap_err().to_string();
        assert!(error.contains(expected) && error.contains("[connectors.books]"), "{error}");
    }
}

#[test]
fn the_document_says_where_a_key_goes_and_where_tokens_come_from() {
    let api = api();
    let mut key: RawAuth = toml::from_str("kind = \"api_key\"\nkey_env = \"K\"").unwrap();
    api.complete_auth(&mut key, "[connectors.books]").unwrap();
    assert!(matches!(key, RawAuth::ApiKey { query: Some(ref q), .. } if q == "api_key"), "{key:?}");
    let mut oauth: RawAuth = toml::from_str("kind = \"oauth2\"\nclient_id = \"c\"\nclient_secret_env = \"S\"").unwrap();
    api.complete_auth(&mut oauth, "[connectors.books]").unwrap();
    assert!(matches!(oauth, RawAuth::Oauth2 { token_url: Some(ref u), .. } if u == "http://127.0.0.1:9/token"));
    let mut wrong: RawAuth = toml::from_str("kind = \"api_key\"\nkey_env = \"K\"\nscheme = \"client\"").unwrap();
    let error = api.complete_auth(&mut wrong, "[connectors.books]").unwrap_err().to_string();
    assert!(error.contains("`client` is not an apiKey scheme"), "{error}");
}

#[test]
fn what_is_not_an_openapi_document_says_so() {
    for text in ["{\"swagger\": \"2.0\"}", "openapi: 2.0.0\ninfo: {title: t, version: '1'}\npaths: {}", "[1, 2"] {
        let error = Api::parse(text, "doc.json").unwrap_err().to_string();
        assert!(error.contains("doc.json") && error.contains("not an OpenAPI"), "{error}");
    }
}

#[test]
fn one_content_is_parsed_once() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("a.yaml"), dir.path().join("b.yaml"));
    std::fs::write(&a, BOOKS).unwrap();
    std::fs::write(&b, BOOKS).unwrap();
    assert!(Arc::ptr_eq(&Api::open(&a).unwrap(), &Api::open(&b).unwrap()));
}

/// A `$ref` cycle between parameters, responses, request bodies or
/// security schemes (a document of a few hundred bytes) is an error naming
/// the document and the cycle, not a stack overflow; so is a chain of
/// references longer than the limit, cycle or not.
#[test]
fn reference_cycles_and_long_chains_are_errors_naming_the_document() {
    let document = |operation: &str, components: &str| {
        format!(
            r#"{{"openapi":"3.0.0","info":{{"title":"t","version":"1"}},"paths":{{"/a":{{"post":{{{operation}}}}}}},"components":{{{components}}}}}"#
        )
    };
    let ok = r#""responses":{"200":{"description":"ok"}}"#;
    let parameters = document(
        &format!(r##""parameters":[{{"$ref":"#/components/parameters/A"}}],{ok}"##),
        r##""parameters":{"A":{"$ref":"#/components/parameters/B"},"B":{"$ref":"#/components/parameters/A"}}"##,
    );
    assert!(parameters.len() < 330, "{}", parameters.len());
    let responses = document(
        r##""responses":{"200":{"$ref":"#/components/responses/R"}}"##,
        r##""responses":{"R":{"$ref":"#/components/responses/S"},"S":{"$ref":"#/components/responses/R"}}"##,
    );
    let bodies = document(
        &format!(r##""requestBody":{{"$ref":"#/components/requestBodies/Q"}},{ok}"##),
        r##""requestBodies":{"Q":{"$ref":"#/components/requestBodies/Q"}}"##,
    );
    let schemes = document(ok, r##""securitySchemes":{"K":{"$ref":"#/components/securitySchemes/K"}}"##);
    for (text, cycle) in [
        (&parameters, "#/components/parameters/A → #/components/parameters/B → #/components/parameters/A"),
        (&responses, "#/components/responses/R → #/components/responses/S → #/components/responses/R"),
        (&bodies, "#/components/requestBodies/Q → #/components/requestBodies/Q"),
        (&schemes, "#/components/securitySchemes/K → #/components/securitySchemes/K"),
    ] {
        let error = Api::parse(text, "cycle.json").expect_err(cycle).to_string();
        assert!(error.contains("cycle.json") && error.contains("cycle") && error.contains(cycle), "{error}");
    }
    // 40 parameters, each a reference to the next: no cycle, too long.
    let chain: Vec<String> = (0..40)
        .map(|i| format!(r##""P{i}":{{"$ref":"#/components/parameters/P{}"}}"##, i + 1))
        .chain([r#""P40":{"name":"q","in":"query","schema":{"type":"string"}}"#.to_owned()])
        .collect();
    let long = document(
        &format!(r##""parameters":[{{"$ref":"#/components/parameters/P0"}}],{ok}"##),
        &format!(r#""parameters":{{{}}}"#, chain.join(",")),
    );
    let error = Api::parse(&long, "chain.json").expect_err("a chain past the limit").to_string();
    assert!(error.contains("chain.json") && error.contains("#/components/parameters/P0"), "{error}");
    assert!(error.contains(&format!("more than {}", refs::MAX_DEPTH)), "{error}");
    // Within the limit, the chain is followed.
    let short = long.replace("#/components/parameters/P0\"}],", "#/components/parameters/P30\"}],");
    let api = Api::parse(&short, "chain.json").unwrap();
    assert!(api.operations[0].plan.params.iter().any(|p| p.name == "q"));
}

/// A document of `operations` operations over `components` component
/// schemas that all reach each other (each refers to the next, the last to
/// the first); each operation's body and answer refer to one of them.
fn connected(operations: usize, components: usize) -> String {
    let schemas: serde_json::Map<String, serde_json::Value> = (0..components)
        .map(|i| {
            let next = format!("#/components/schemas/C{}", (i + 1) % components);
            (
                format!("C{i}"),
                json!({ "type": "object", "properties": { "name": { "type": "string" }, "next": { "$ref": next } } }),
            )
        })
        .collect();
    let paths: serde_json::Map<String, serde_json::Value> = (0..operations)
        .map(|i| {
            let schema = json!({ "$ref": format!("#/components/schemas/C{}", i % components) });
            let operation = json!({
                "requestBody": { "content": { "application/json": { "schema": schema } } },
                "responses": { "200": { "description": "ok", "content": { "application/json": { "schema": schema } } } }
            });
            (format!("/r{i}"), json!({ "post": operation }))
        })
        .collect();
    json!({ "openapi": "3.1.0", "info": { "title": "t", "version": "1" }, "paths": paths,
            "components": { "schemas": schemas } })
    .to_string()
}

/// Every operation reaches every component schema: each definition is
/// held once, shared, however many operations reach it (it used to be
/// copied into each operation's schemas and each instance's manifest: a
/// 271 KB document took 3.5 GB). What a model is served is unchanged: an
/// action's schema, made self-contained when asked for.
#[test]
fn component_schemas_are_held_once_whatever_reaches_them() {
    const OPERATIONS: usize = 400;
    const COMPONENTS: usize = 50;
    let api = Arc::new(Api::parse(&connected(OPERATIONS, COMPONENTS), "connected.json").unwrap());
    let manifest = api.select(&Selection::default(), "[connectors.c]").unwrap().manifest("c");
    let defs = |schema: &serde_json::Value| schema.get("$defs").and_then(|d| d.as_object()).map_or(0, |d| d.len());
    let held_by = |schema: &crate::load::ActionSchema| match schema {
        crate::load::ActionSchema::Whole(value) => defs(value),
        crate::load::ActionSchema::Document(schema) => defs(schema.held()),
    };
    let shared = api.operations[0].input_schema.definitions();
    assert_eq!(shared.len(), COMPONENTS);
    let mut held = 0;
    for op in &api.operations {
        held += defs(op.input_schema.root()) + op.output_schema.as_ref().map_or(0, |o| defs(o.root()));
        for schema in [Some(&op.input_schema), op.output_schema.as_ref()].into_iter().flatten() {
            assert!(Arc::ptr_eq(schema.definitions(), shared), "one set of definitions, shared");
        }
    }
    for action in &manifest.actions {
        held += held_by(&action.input_schema) + action.output_schema.as_ref().map_or(0, held_by);
    }
    assert_eq!(held, 0, "component definitions held {held} times for {COMPONENTS} components");

    // Served, an action's schema is self-contained: every definition it
    // reaches, and it checks inputs through them.
    let action = &manifest.actions[7];
    let served = action.input_schema.value();
    assert_eq!(defs(&served), COMPONENTS);
    assert_eq!(served["properties"]["body"]["$ref"], "#/$defs/C7");
    let validator = action.validator().unwrap();
    assert!(validator.is_valid(&json!({ "body": { "name": "a", "next": { "next": { "name": "b" } } } })));
    assert!(!validator.is_valid(&json!({ "body": { "next": { "next": { "name": 3 } } } })));
}

/// Header parameters the guest may never set (the host sets or refuses
/// them: `Host`, `Cookie`, the credentials, hop-by-hop headers) or that the
/// connector sets itself (`Accept`, `Content-Type`) are not offered to the
/// model: every use of them would be refused.
#[test]
fn headers_the_host_owns_are_not_parameters() {
    let owned = ["Host", "Cookie", "Proxy-Authorization", "Authorization", "Connection", "Transfer-Encoding", "Accept"];
    let mut parameters: Vec<serde_json::Value> =
        owned.iter().map(|name| json!({ "name": name, "in": "header", "schema": { "type": "string" } })).collect();
    parameters.push(json!({ "name": "X-Trace", "in": "header", "schema": { "type": "string" } }));
    let document = json!({ "openapi": "3.1.0", "info": { "title": "t", "version": "1" }, "paths": { "/a": { "get": {
        "parameters": parameters, "responses": { "200": { "description": "ok" } } } } } });
    let api = Api::parse(&document.to_string(), "headers.json").unwrap();
    let op = &api.operations[0];
    let offered: Vec<&String> = op.input_schema.root()["properties"].as_object().unwrap().keys().collect();
    assert_eq!(offered, ["X-Trace"]);
    let planned: Vec<&str> = op.plan.params.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(planned, ["X-Trace"]);
}

/// `info.version` follows the contract's rule for a plugin's version, as a
/// stub read from a component does: one with escape codes or a line break
/// (which `quiver list` printed as they were) refuses the document, naming
/// it and the field, without echoing the control characters.
#[test]
fn a_version_with_control_characters_refuses_the_document() {
    let hostile = BOOKS.replace("version: 2.1.0", "version: \"2.1\\e[2J\\n- forged: line\"");
    let error = Api::parse(&hostile, "books.yaml").expect_err("refused").to_string();
    assert!(error.contains("books.yaml") && error.contains("`info.version`"), "{error}");
    assert!(!error.contains(['\u{1b}', '\n']), "{error:?}");

    // Every other text of the stub is made from the document by the one
    // sanitiser, so it keeps the contract's rules however hostile the
    // document is; an empty title still gives a description.
    let hostile = BOOKS
        .replace("title: Books,", "title: \"Books\\e]0;owned\\a\",")
        .replace("summary: Get one book", "summary: \"Get\\a one\\r\\n- forged: line\"");
    let untitled = BOOKS
        .replace("title: Books,", "title: \"\",")
        .replace(", description: \"A small library.\\n\\nMore words.\"", "");
    for (text, description) in [
        (hostile, "Books\\u{1b}]0;owned\\u{7}: A small library."),
        (untitled, "An API described by an OpenAPI document"),
    ] {
        let api = Arc::new(Api::parse(&text, "books.yaml").unwrap());
        let stub = api.select(&Selection::default(), "[connectors.books]").unwrap().stub("books");
        assert_eq!(quiver_contract::version_problem(&stub.version), None);
        assert_eq!(stub.description, description);
        assert_eq!(crate::contract::summary_problem("books", &stub.description), None);
        for action in &stub.actions {
            assert_eq!(crate::contract::summary_problem(&action.name, &action.summary), None, "{:?}", action.summary);
        }
    }
}
