//! OpenAPI connectors at the size of a large public API: a generated
//! document of 1,000 operations (GitHub's REST description has about
//! 1,100; its npm package is 385 MB, too big to fetch for a bench), from
//! its text to the connector's Tier-1 line, and what that line costs in
//! tokens next to the operations' full definitions.

use std::fmt::Write as _;
use std::time::Instant;

use quiver::disclosure::tokens::Cost;
use quiver::load::openapi::{Api, Selection};
use quiver_tests::TestHost;
use serde_json::{Value, json};

use crate::{Options, Stats};

/// Resources in the document; five operations each.
const RESOURCES: usize = 200;

pub(crate) fn section(options: &Options, runtime: &tokio::runtime::Runtime, report: &mut String) {
    writeln!(report, "## OpenAPI connectors\n").unwrap();
    let text = document(RESOURCES).to_string();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("large.json");
    std::fs::write(&path, &text).unwrap();
    let reps = options.reps(20);
    let parse = Stats::new(
        (0..reps)
            .map(|_| {
                let start = Instant::now();
                let api = std::sync::Arc::new(Api::parse(&text, "large.json").unwrap());
                let stub = api.select(&Selection::default(), "[connectors.large]").unwrap().stub("large");
                std::hint::black_box(stub);
                start.elapsed()
            })
            .collect(),
    );
    let api = std::sync::Arc::new(Api::parse(&text, "large.json").unwrap());
    let operations = api.operations.len();
    let config = format!("[connectors.large]\nopenapi = \"{}\"\nbase_url = \"http://127.0.0.1:9\"", path.display());
    let host_reps = options.reps(5);
    let mut prompt = String::new();
    let ready = Stats::new(
        (0..host_reps)
            .map(|_| {
                let start = Instant::now();
                let t = TestHost::builder().config(&config).build();
                prompt = t.host.session(None).unwrap().system_prompt();
                start.elapsed()
            })
            .collect(),
    );
    let line = prompt.lines().find(|l| l.starts_with("- large:")).expect("the connector's Tier-1 line").to_owned();
    let tier1 = Cost::of(&line);
    let connector = api.select(&Selection::default(), "[connectors.large]").unwrap();
    let full = connector.manifest("large").actions.iter().fold(Cost::default(), |mut total, action| {
        let def =
            json!({ "name": action.name, "description": action.description, "input_schema": action.input_schema });
        let cost = Cost::of(&def.to_string());
        total.o200k += cost.o200k;
        total.cl100k += cost.cl100k;
        total
    });
    // The first `discover` prepares the instance: the generic connector
    // compiled (or read from the cache) and the host-made manifest.
    let t = TestHost::builder().config(&config).build();
    let (discover, index_tokens, one, one_tokens) = runtime.block_on(async {
        let mut session = t.host.session(None).unwrap();
        let start = Instant::now();
        let outcome = session.call("connector", json!({ "subcommand": "discover", "connector": "large" })).await;
        let discover = start.elapsed();
        assert!(!outcome.is_error, "{}", outcome.text);
        let action = json!({ "subcommand": "discover", "connector": "large", "action": "resource7_create_for_org" });
        let start = Instant::now();
        let single = session.call("connector", action).await;
        let one = start.elapsed();
        assert!(!single.is_error, "{}", single.text);
        (discover, Cost::of(&outcome.text), one, Cost::of(&single.text))
    });
    writeln!(
        report,
        "A generated OpenAPI 3.0 document of {operations} operations ({RESOURCES} resources with list, create, \
         get, update and delete; path, query and body parameters; shared and per-resource component \
         schemas referenced with `$ref`), {:.1} MB of JSON. p50 / p99 over {reps} runs (the host: {host_reps}).\n",
        text.len() as f64 / 1e6
    )
    .unwrap();
    writeln!(report, "| step | p50 | p99 |").unwrap();
    writeln!(report, "|---|---:|---:|").unwrap();
    let ms = |d: std::time::Duration| format!("{:.1} ms", d.as_secs_f64() * 1e3);
    writeln!(
        report,
        "| document text → parsed, every action's schemas and plan → Tier-1 stub (`Api::parse`, `select`, `stub`) | {} | {} |",
        ms(parse.median()),
        ms(parse.pct(0.99))
    )
    .unwrap();
    writeln!(
        report,
        "| config → host built → Tier-1 prompt (reads the file, parses it, builds the catalog; no compile) | {} | {} |",
        ms(ready.median()),
        ms(ready.pct(0.99))
    )
    .unwrap();
    writeln!(
        report,
        "| first `discover` (the generic connector compiled; {operations} names, summaries and levels, no schemas) | {} | |",
        ms(discover)
    )
    .unwrap();
    writeln!(report, "| then `discover` of one action (its description and input schema) | {} | |", ms(one)).unwrap();
    writeln!(report).unwrap();
    writeln!(report, "| what the model is sent | o200k tokens | cl100k tokens |").unwrap();
    writeln!(report, "|---|---:|---:|").unwrap();
    writeln!(report, "| the connector's Tier-1 line | {} | {} |", tier1.o200k, tier1.cl100k).unwrap();
    writeln!(
        report,
        "| `discover` without `action`: the index of {operations} actions | {} | {} |",
        index_tokens.o200k, index_tokens.cl100k
    )
    .unwrap();
    writeln!(report, "| `discover` of one action | {} | {} |", one_tokens.o200k, one_tokens.cl100k).unwrap();
    writeln!(
        report,
        "| all {operations} operations as tool definitions (name, description, input schema) | {} | {} |",
        full.o200k, full.cl100k
    )
    .unwrap();
    writeln!(report, "\nThe Tier-1 line: `{line}`\n").unwrap();
    eprintln!("measured openapi");
}

/// A document of `resources` × 5 operations, in the shape of a large REST
/// API (GitHub-style `operationId`s, pagination, shared schemas).
fn document(resources: usize) -> Value {
    let mut paths = serde_json::Map::new();
    let mut schemas = serde_json::Map::new();
    schemas.insert(
        "Owner".into(),
        json!({ "type": "object", "required": ["login", "id"], "properties": {
            "login": { "type": "string" }, "id": { "type": "integer" },
            "url": { "type": "string", "format": "uri" }, "type": { "type": "string", "enum": ["User", "Organization"] } } }),
    );
    schemas.insert(
        "Label".into(),
        json!({ "type": "object", "properties": { "name": { "type": "string" }, "color": { "type": "string" } } }),
    );
    for i in 0..resources {
        let name = format!("Resource{i}");
        let new = format!("NewResource{i}");
        schemas.insert(
            new.clone(),
            json!({ "type": "object", "required": ["name"], "properties": {
                "name": { "type": "string", "description": "A short name." },
                "description": { "type": "string" },
                "visibility": { "type": "string", "enum": ["public", "private", "internal"] },
                "labels": { "type": "array", "items": { "$ref": "#/components/schemas/Label" } } } }),
        );
        schemas.insert(
            name.clone(),
            json!({ "allOf": [ { "$ref": format!("#/components/schemas/{new}") }, { "type": "object", "properties": {
                "id": { "type": "integer" }, "owner": { "$ref": "#/components/schemas/Owner" },
                "created_at": { "type": "string", "format": "date-time" } } } ] }),
        );
        let list_ref = json!({ "$ref": format!("#/components/schemas/{name}") });
        let one = json!({ "200": { "description": "ok", "content": { "application/json": { "schema": list_ref.clone() } } } });
        let org = json!({ "name": "org", "in": "path", "required": true, "schema": { "type": "string" }, "description": "The organization name." });
        let id = json!({ "name": "id", "in": "path", "required": true, "schema": { "type": "integer" } });
        let body = json!({ "required": true, "content": { "application/json": { "schema": { "$ref": format!("#/components/schemas/{new}") } } } });
        let word = format!("resource{i}");
        paths.insert(
            format!("/orgs/{{org}}/{word}"),
            json!({
                "get": { "operationId": format!("{word}/list-for-org"), "summary": format!("List the {word} items of an organization"),
                         "description": "Lists items the authenticated user can see, newest first, a page at a time.",
                         "tags": [word], "parameters": [org, { "name": "per_page", "in": "query", "schema": { "type": "integer", "maximum": 100 } },
                         { "name": "page", "in": "query", "schema": { "type": "integer" } },
                         { "name": "sort", "in": "query", "schema": { "type": "string", "enum": ["created", "updated", "name"] } }],
                         "responses": { "200": { "description": "ok", "content": { "application/json": { "schema": { "type": "array", "items": list_ref } } } } } },
                "post": { "operationId": format!("{word}/create-for-org"), "summary": format!("Create a {word} item"), "tags": [word],
                          "parameters": [org], "requestBody": body, "responses": one }
            }),
        );
        paths.insert(
            format!("/orgs/{{org}}/{word}/{{id}}"),
            json!({
                "parameters": [org, id],
                "get": { "operationId": format!("{word}/get"), "summary": format!("Get a {word} item"), "tags": [word], "responses": one },
                "patch": { "operationId": format!("{word}/update"), "summary": format!("Update a {word} item"), "tags": [word],
                           "requestBody": body, "responses": one },
                "delete": { "operationId": format!("{word}/delete"), "summary": format!("Delete a {word} item"), "tags": [word],
                            "responses": { "204": { "description": "gone" } } }
            }),
        );
    }
    json!({
        "openapi": "3.0.3",
        "info": { "title": "Large API", "version": "1.0.0", "description": "A generated REST API the size of GitHub's." },
        "paths": paths,
        "components": { "schemas": schemas, "securitySchemes": { "token": { "type": "http", "scheme": "bearer" } } }
    })
}
