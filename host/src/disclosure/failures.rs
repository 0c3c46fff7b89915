//! What a model reads when a call fails: the tool by the name the model
//! knows it by (`units__length`, never `units.length`), what went wrong
//! in plain words, and what the model itself can do next (the input
//! schema, a smaller request, another try later, or not to retry). Shell
//! commands and configuration settings are for operators: they stay in
//! the error's own text (CLI, logs, REST `fix`), not here.

use crate::catalog::Catalog;
use crate::error::{Error, GuestErrorKind};

/// Longest input schema quoted in an error; a longer one is pointed at.
const MAX_QUOTED_SCHEMA: usize = 1500;

/// The text a model reads for `error`, with tools named as `catalog`
/// names them to models; when the model called the meta-tool `via` (which
/// called the tool), the tool is named as the model reached it (`database`
/// on `chinook`), never by a name it was not shown.
pub fn explain(error: &Error, catalog: &Catalog, via: Option<&str>) -> String {
    let name = |plugin: &str, action: &str| match via {
        Some(meta) => format!("{meta}` on `{plugin}"),
        None => catalog
            .model_name(plugin, action)
            .map_or_else(|| format!("{plugin}{}{action}", crate::contract::NAME_SEPARATOR), str::to_owned),
    };
    let schema_hint = |plugin: &str, action: &str, tool: &str| match via {
        Some(meta) => format!("Get its input schema with `{meta}` `discover` on `{plugin}` and call it again."),
        None => schema_hint(catalog, plugin, action, tool),
    };
    match error {
        Error::InputNotJson { plugin, action, reason } => {
            let tool = name(plugin, action);
            format!(
                "`{tool}` takes its arguments as one JSON object, and got {reason}. {}",
                schema_hint(plugin, action, &tool)
            )
        }
        Error::InputSchema { plugin, action, errors } => {
            let tool = name(plugin, action);
            format!(
                "The arguments of `{tool}` do not fit its input schema: {}. {}",
                errors.join("; "),
                schema_hint(plugin, action, &tool)
            )
        }
        Error::Guest { plugin, action, kind, message } => {
            let next = match kind {
                GuestErrorKind::InvalidInput => "Correct the arguments and call it again.",
                GuestErrorKind::NotFound => {
                    "Check the names and values in the arguments; what they name does not exist."
                }
                GuestErrorKind::Denied => "This is not allowed; do not retry it.",
                GuestErrorKind::Unavailable => "A service it needs is unavailable; retry later, or use another tool.",
                GuestErrorKind::Failed => "Retry only if the cause looks temporary.",
            };
            format!("`{}` failed ({kind}): {}. {next}", name(plugin, action), message.trim_end_matches('.'))
        }
        Error::Trap { plugin, action, message } => format!(
            "`{}` crashed: {}. This is a fault of the tool, not of your arguments; the same call will fail \
             again, so use another way if there is one.",
            name(plugin, action),
            message.trim_end_matches('.')
        ),
        Error::Timeout { plugin, action, limit } => format!(
            "`{}` did not finish within its time limit of {} ms. Retry with less work (a smaller input) if you can.",
            name(plugin, action),
            limit.as_millis()
        ),
        Error::MemoryLimit { plugin, action, limit_bytes } => format!(
            "`{}` ran out of memory (its limit is {} MiB). Retry with a smaller input if you can.",
            name(plugin, action),
            limit_bytes >> 20
        ),
        Error::OutputTooLarge { plugin, action, size, limit } => format!(
            "The result of `{}` is {size} bytes, over the limit of {limit} bytes. Ask for less: narrower \
             filters, fewer fields, a smaller page.",
            name(plugin, action)
        ),
        Error::InvalidOutput { plugin, action, .. } => format!(
            "`{}` returned a result that is not valid JSON: a fault of the tool, not of your arguments.",
            name(plugin, action)
        ),
        Error::Busy { plugin, action, .. } => {
            format!("`{}` could not start: the host is busy. Retry in a moment.", name(plugin, action))
        }
        Error::AboveCeiling { resource, action, needed, allowed } => format!(
            "`{}` needs `{needed}` access, and this host allows at most `{allowed}` on `{resource}`: it cannot be \
             called here. Do not retry it; use an action within `{allowed}`.",
            name(resource, action)
        ),
        Error::Denied { .. } => format!("{error}. It is not allowed in this session; do not retry it."),
        Error::OutOfScope { scope, .. } => format!(
            "{error}. Do not retry it with this token: the user's client must ask for the scope `{scope}` first."
        ),
        Error::UnknownTool { .. } | Error::InvalidArguments { .. } => error.to_string(),
        Error::Upstream { .. } => match error.remedy() {
            Some(remedy) => format!("{error}. {}", capitalized(&remedy)),
            None => error.to_string(),
        },
        _ => match error.remedy() {
            Some(remedy) => format!("{error}. Fix: {remedy}"),
            None => error.to_string(),
        },
    }
}

/// The input schema of `plugin`'s `action`, quoted when short, else the
/// call that returns it.
fn schema_hint(catalog: &Catalog, plugin: &str, action: &str, tool: &str) -> String {
    let schema = catalog
        .tool(tool)
        .filter(|e| e.origin == plugin && e.action == action)
        .and_then(|entry| catalog.record(entry))
        .and_then(|record| record.input_schema)
        .map(|schema| serde_json::to_string(&schema).unwrap_or_default());
    match schema {
        Some(text) if text.len() <= MAX_QUOTED_SCHEMA => format!("Its input schema: {text}"),
        _ => format!("Get its input schema with request_tools {{\"tool_names\": [\"{tool}\"]}} and call it again."),
    }
}

fn capitalized(text: &str) -> String {
    let mut chars = text.chars();
    chars.next().map(|c| c.to_uppercase().chain(chars).collect()).unwrap_or_default()
}
