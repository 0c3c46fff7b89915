//! The `quiver:stub` custom section: the Tier-1 metadata the host reads
//! without compiling the component. Its format is documented in the README
//! and parsed by the host's `load::stub` module.

use crate::Action;

/// Version of the stub format written here.
const STUB_FORMAT: u32 = 1;

/// The WIT package the generated glue implements.
const CONTRACT: &str = "quiver:plugin@0.1.0";

pub(crate) fn encode(
    name: &str,
    version: &str,
    kind: &str,
    description: &str,
    categories: &[String],
    actions: &[Action],
) -> Vec<u8> {
    let actions: Vec<serde_json::Value> = actions
        .iter()
        .map(|a| {
            serde_json::json!({
                "name": a.name,
                "summary": a.summary,
                "access": a.access,
            })
        })
        .collect();
    let stub = serde_json::json!({
        "format": STUB_FORMAT,
        "contract": CONTRACT,
        "name": name,
        "version": version,
        "kind": kind,
        "description": description,
        "categories": categories,
        "actions": actions,
    });
    serde_json::to_vec(&stub).expect("a JSON value always serializes")
}
