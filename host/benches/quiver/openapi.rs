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

/// Resources in the scale document (10,000 operations), whose component
/// schemas all reach each other.
const SCALE_RESOURCES: usize = 2_000;

/// Operations sharing one `operationId` in the naming row.
const SAME_ID: usize = 40_000;

pub(crate) fn section(options: &Options, runtime: &tokio::runtime::Runtime, report: &mut String) {
    writeln!(report, "## OpenAPI connectors\n").unwrap();
    let text = document(RESOURCES, false).to_string();
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
    scale(options, report);
    eprintln!("measured openapi");
}

/// Import at scale: a 10,000-operation document whose component schemas
/// all reach each other (each resource's schema refers to the next one's),
/// its import time and the peak memory of a host that serves it; and
/// 40,000 operations with one `operationId`, named.
fn scale(options: &Options, report: &mut String) {
    let text = document(SCALE_RESOURCES, true).to_string();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("connected.json");
    std::fs::write(&path, &text).unwrap();
    let reps = options.reps(5);
    let mut operations = 0;
    let import = Stats::new(
        (0..reps)
            .map(|_| {
                let start = Instant::now();
                let api = std::sync::Arc::new(Api::parse(&text, "connected.json").unwrap());
                let connector = api.select(&Selection::default(), "[connectors.large]").unwrap();
                std::hint::black_box((connector.stub("large"), connector.manifest("large")));
                operations = api.operations.len();
                start.elapsed()
            })
            .collect(),
    );
    let with = dir.path().join("with.toml");
    let config = format!("[connectors.large]\nopenapi = \"{}\"\nbase_url = \"http://127.0.0.1:9\"\n", path.display());
    std::fs::write(&with, config).unwrap();
    let without = dir.path().join("without.toml");
    std::fs::write(&without, "").unwrap();
    let peak = |config: &std::path::Path| {
        let runs = options.reps(3);
        (0..runs).map(|_| crate::scale::run(&["--config", config.to_str().unwrap(), "prompt"]).1).max().unwrap_or(0)
    };
    let (peak_with, peak_without) = (peak(&with), peak(&without));
    let added = peak_with.saturating_sub(peak_without) * 1024;
    let same = same_id_document(SAME_ID);
    let naming = Stats::new(
        (0..options.reps(3))
            .map(|_| {
                let start = Instant::now();
                let api = Api::parse(&same, "same.json").unwrap();
                assert_eq!(api.operations.len(), SAME_ID);
                start.elapsed()
            })
            .collect(),
    );
    writeln!(
        report,
        "At scale: a generated document of {operations} operations ({SCALE_RESOURCES} resources as above, each \
         resource's schema also referring to the next one's, so that every operation reaches all {} component \
         schemas), {:.1} MB of JSON; and {SAME_ID} operations sharing one `operationId` ({:.1} MB). Peak RSS of \
         `quiver --config FILE prompt` from `wait4` (through the launcher of the start-up section), with the \
         connector and with an empty config; the maximum over {} runs.\n",
        2 * SCALE_RESOURCES + 2,
        text.len() as f64 / 1e6,
        same.len() as f64 / 1e6,
        options.reps(3)
    )
    .unwrap();
    writeln!(report, "| at scale | p50 | p99 |").unwrap();
    writeln!(report, "|---|---:|---:|").unwrap();
    let ms = |d: std::time::Duration| format!("{:.1} ms", d.as_secs_f64() * 1e3);
    writeln!(
        report,
        "| {operations} operations, connected components: parsed, selected, stub and manifest | {} | {} |",
        ms(import.median()),
        ms(import.pct(0.99))
    )
    .unwrap();
    writeln!(
        report,
        "| {SAME_ID} operations with one `operationId`: parsed and named | {} | {} |",
        ms(naming.median()),
        ms(naming.pct(0.99))
    )
    .unwrap();
    writeln!(report).unwrap();
    writeln!(report, "| peak RSS | MiB |").unwrap();
    writeln!(report, "|---|---:|").unwrap();
    writeln!(report, "| `quiver prompt`, empty config | {:.1} |", peak_without as f64 / 1024.0).unwrap();
    writeln!(report, "| `quiver prompt`, the {operations}-operation connector | {:.1} |", peak_with as f64 / 1024.0)
        .unwrap();
    writeln!(
        report,
        "| added by the connector | {:.1} ({:.1}× the document's bytes) |\n",
        added as f64 / (1024.0 * 1024.0),
        added as f64 / text.len() as f64
    )
    .unwrap();
}

/// `operations` operations, all with the `operationId` `listItems`.
fn same_id_document(operations: usize) -> String {
    let paths: serde_json::Map<String, Value> = (0..operations)
        .map(|i| {
            let operation = json!({ "operationId": "listItems", "responses": { "200": { "description": "ok" } } });
            (format!("/items{i}"), json!({ "get": operation }))
        })
        .collect();
    json!({ "openapi": "3.1.0", "info": { "title": "Same", "version": "1" }, "paths": paths }).to_string()
}

/// A document of `resources` × 5 operations, in the shape of a large REST
/// API (GitHub-style `operationId`s, pagination, shared schemas); when
/// `connected`, each resource's schema refers to the next one's (the last to
/// the first), so that every operation reaches every component schema.
fn document(resources: usize, connected: bool) -> Value {
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
        let mut own = json!({ "type": "object", "properties": {
            "id": { "type": "integer" }, "owner": { "$ref": "#/components/schemas/Owner" },
            "created_at": { "type": "string", "format": "date-time" } } });
        if connected {
            let next = format!("#/components/schemas/Resource{}", (i + 1) % resources);
            own["properties"]["related"] = json!({ "$ref": next });
        }
        schemas.insert(name.clone(), json!({ "allOf": [ { "$ref": format!("#/components/schemas/{new}") }, own ] }));
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
