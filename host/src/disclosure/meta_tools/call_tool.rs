//! `call_tool(name, arguments)`: call any tool by its exact name, for
//! clients that only call the tools they were listed (the tools that
//! `request_tools` and `search_tools` return are not in the list). It
//! discloses nothing itself, so it is no [`MetaTool`](super::tool::MetaTool):
//! a face that needs it lists it, and every session accepts it.

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use crate::catalog::Category;
use crate::contract::Access;
use crate::disclosure::formats::ToolDef;
use crate::error::{Error, Result};

/// The name of the generic call tool.
pub const CALL_TOOL: &str = "call_tool";

/// Arguments of `call_tool`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Args {
    /// The tool's exact name, as `request_tools` or `search_tools` returned it.
    name: String,
    /// Its arguments, as its input schema describes them.
    #[serde(default)]
    arguments: serde_json::Map<String, Value>,
}

/// Its definition.
pub(crate) fn definition() -> ToolDef {
    ToolDef {
        name: CALL_TOOL.into(),
        description: "Call any tool by its exact name with its arguments: use it for tools that request_tools or \
                      search_tools returned, which are not in the tool list."
            .into(),
        input_schema: super::args_schema::<Args>(&[]),
        output_schema: None,
        category: Category::Builtin,
        access: Some(Access::Admin),
        meta: true,
    }
}

/// The tool a `call_tool` call names, and its arguments.
pub(crate) fn unwrap(args: Value) -> Result<(String, Value)> {
    let args: Args = serde_json::from_value(args).map_err(|e| Error::InvalidArguments {
        tool: CALL_TOOL.into(),
        reason: format!("give {{\"name\": \"<tool name>\", \"arguments\": {{...}}}}: {e}"),
    })?;
    Ok((args.name, Value::Object(args.arguments)))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn it_names_a_tool_and_its_arguments() {
        let (name, args) = unwrap(json!({"name": "calc__evaluate", "arguments": {"expression": "1"}})).unwrap();
        assert_eq!((name.as_str(), args), ("calc__evaluate", json!({"expression": "1"})));
        assert_eq!(unwrap(json!({"name": "x"})).unwrap().1, json!({}));
        let error = unwrap(json!({"tool": "x"})).unwrap_err().to_string();
        assert!(error.contains("call_tool") && error.contains("\"name\""), "{error}");
        assert_eq!(definition().input_schema["required"], json!(["name"]));
    }
}
