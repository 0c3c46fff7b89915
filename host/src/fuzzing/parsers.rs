//! The targets over parsers of outside text: configuration, SKILL.md,
//! stub and manifest sections, MCP tool lists, OpenAPI documents; and the
//! token bound every such text passes through in the prompt budget.

use std::path::Path;

use crate::contract::{Shape, outside_name_problem, sanitize};
use crate::load::Manifest;

/// `quiver.toml` and its agent profiles: parsed and validated, every
/// section resolved as the host would (databases, upstream servers,
/// plugin settings), every profile's policy resolved without the
/// environment. Errors are fine; panics are not.
pub fn config(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let Ok(config) = crate::Config::parse(text, Path::new("/nonexistent/quiver-fuzz")) else { return };
    let settings = config.plugin_settings();
    for name in config.plugins.keys() {
        let _ = settings.resolve(name, None);
    }
    let _ = config.database_settings();
    let _ = config.server_specs();
    let none = |_: &str| None;
    for agent in config.agents.keys().map(String::as_str).map(Some).chain([None]) {
        let _ = crate::disclosure::policy::Policy::resolve(&config.disclosure, &config.agents, agent, &none);
    }
}

/// A `SKILL.md`: its front matter read by the skill rules. A skill that
/// loads has a valid name (its folder's) and a description of bounded
/// length with no line of its own past the rules.
pub fn skill(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else { return };
    if let Ok(skill) = crate::catalog::skill::Skill::parse(text, Path::new("/nonexistent/fuzz-skill")) {
        assert_eq!(skill.name, "fuzz-skill", "a skill's name is its folder's");
        assert!(!skill.description.is_empty());
        assert!(skill.description.chars().count() <= crate::catalog::skill::MAX_SERVED_DESCRIPTION);
    }
}

/// The `quiver:stub` section: read from a whole component (the first byte
/// 0) or as the section's JSON alone. A stub that reads is valid by the
/// contract's rules and survives a round trip.
pub fn stub(data: &[u8]) {
    let (mode, rest) = data.split_first().unwrap_or((&0, &[]));
    let stub = if mode % 2 == 0 {
        crate::load::stub::read(rest, "fuzz").ok()
    } else {
        crate::contract::Stub::from_json(rest).ok()
    };
    if let Some(stub) = stub {
        let again = crate::contract::Stub::from_json(&stub.to_json()).expect("a stub that read reads again");
        assert_eq!(again, stub, "a stub changed in a round trip");
    }
}

/// The `quiver:manifest` section: a manifest that reads is valid by the
/// contract's rules, its schemas compile, and it survives a round trip.
pub fn manifest(data: &[u8]) {
    let Ok(manifest) = Manifest::from_section(data, "fuzz") else { return };
    let _ = manifest.stub();
    for action in &manifest.actions {
        let _ = action.validator();
    }
    let again = Manifest::from_section(&manifest.to_section(), "fuzz").expect("a manifest that read reads again");
    assert!(again.same_as(&manifest), "a manifest changed in a round trip");
}

/// A saved MCP `tools/list` (the same reading as a live server's and the
/// disk cache's): every tool kept has a name that can be shown, and its
/// description, title and the prose of its schemas have nothing unsafe left
/// in them; a bad entry never takes the others with it.
pub fn mcp_tools(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let Ok((server, _left_out)) = crate::catalog::mcp::UpstreamServer::parse(text, Path::new("fuzz.json")) else {
        return;
    };
    for tool in &server.tools {
        assert!(outside_name_problem(&tool.name).is_none(), "kept a tool named {:?}", tool.name);
        let raw = |text: &str, shape| !matches!(sanitize(text, shape), std::borrow::Cow::Borrowed(_));
        assert!(!raw(&tool.description, Shape::Lines), "a raw description: {:?}", tool.description);
        assert!(!tool.title.as_deref().is_some_and(|t| raw(t, Shape::Line)), "a raw title: {:?}", tool.title);
        for schema in
            [Some(&tool.input_schema), tool.output_schema.as_ref(), tool.annotations.as_ref()].into_iter().flatten()
        {
            prose(schema, &mut |text| assert!(!raw(text, Shape::Lines), "raw prose in a schema: {text:?}"));
        }
    }
}

/// Every `description`, `title` and `$comment` string in `value`.
fn prose(value: &serde_json::Value, check: &mut impl FnMut(&str)) {
    match value {
        serde_json::Value::Array(items) => items.iter().for_each(|item| prose(item, check)),
        serde_json::Value::Object(map) => {
            for (key, value) in map {
                match value {
                    serde_json::Value::String(text) if matches!(key.as_str(), "description" | "title" | "$comment") => {
                        check(text)
                    }
                    other => prose(other, check),
                }
            }
        }
        _ => {}
    }
}

/// An OpenAPI document, imported as a connector: parsed, every operation
/// selected, its stub, manifest (each action's schema as served, and its
/// validator) and request plans built. A document that imports gives a
/// stub whose version follows the contract's rule. (The fuzz target also holds
/// the import's memory to a bound of the document's size, with a counting
/// allocator of its own.)
pub fn openapi(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let Ok(api) = crate::load::openapi::Api::parse(text, "fuzz.json") else { return };
    let api = std::sync::Arc::new(api);
    let Ok(connector) = api.select(&crate::load::openapi::Selection::default(), "[connectors.fuzz]") else { return };
    let stub = connector.stub("fuzz");
    assert!(quiver_contract::version_problem(&stub.version).is_none(), "a stub with version {:?}", stub.version);
    let manifest = connector.manifest("fuzz");
    for action in &manifest.actions {
        let _ = action.validator();
    }
    for (_, plan) in connector.plans() {
        assert!(!plan.is_empty());
    }
}

/// The prompt budget's token count over any text (upstream descriptions,
/// plugin stubs end up in the prompt): tiktoken's own o200k count for a
/// text under 100 bytes, never below it nor above the bytes for any, and
/// no panic on either path.
pub fn token_count(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let ours = crate::disclosure::o200k::count(&text);
    let tiktoken = crate::disclosure::tokens::Cost::o200k_of(&text);
    assert!(ours >= tiktoken, "the count {ours} is below tiktoken's {tiktoken}");
    assert!(ours <= text.len().max(tiktoken), "the count {ours} is above the bytes {}", text.len());
    if text.len() < 100 {
        assert_eq!(ours, tiktoken, "every piece is merged as tiktoken merges it");
    }
}
