//! Quiver's generic OpenAPI connector: one component for every API an
//! operator describes with an OpenAPI document.
//!
//! It never reads the document. The host parses it, makes the actions'
//! names and schemas, checks every input against them, and hands this
//! component one [`OperationPlan`] per action in its `config`. A call
//! turns the plan and the input into a request ([`request`]), sends it
//! through the host (which checks the destination and adds the
//! credential) and turns the response into an answer or a typed error the
//! model can act on ([`answer`]).

pub mod answer;
pub mod request;

use quiver_contract::openapi::{OperationPlan, plan_key};
use quiver_sdk::ToolError;
use serde_json::Value;

/// The standalone action: what this component serves when it is not an
/// instance of a document (the plans it was given).
pub const OPERATIONS: &str = "operations";

/// Generic OpenAPI connector: serves the operations of an OpenAPI document
#[quiver_sdk::plugin(name = "openapi", kind = "connector", categories = ["api"], fallback = run)]
mod openapi {
    use quiver_contract::openapi::plan_key;

    /// List the operations this instance serves
    pub fn operations() -> Vec<String> {
        quiver_sdk::config::entries()
            .into_iter()
            .filter_map(|(key, _)| key.strip_prefix(&plan_key("")).map(str::to_owned))
            .collect()
    }
}

/// Run `action`, an operation of the instance's document, with `input`
/// (already checked against its schema by the host).
pub fn run(action: &str, input: &str) -> Result<String, ToolError> {
    let plan = quiver_sdk::config::get(&plan_key(action))
        .ok_or_else(|| ToolError::not_found(format!("this connector has no operation `{action}`")))?;
    let plan: OperationPlan = serde_json::from_str(&plan)
        .map_err(|e| ToolError::failed(format!("the host's plan for `{action}` is not readable: {e}")))?;
    let input: Value =
        serde_json::from_str(input).map_err(|e| ToolError::invalid_input(format!("the input is not JSON: {e}")))?;
    let base = quiver_sdk::config::get("base_url")
        .ok_or_else(|| ToolError::unavailable("this connector has no `base_url`; configure an instance"))?;
    let request = request::Request::build(&plan, &base, &input)?;
    let headers: Vec<(&str, &str)> = request.headers.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let response = quiver_sdk::http::send(&plan.method, &request.url, &headers, request.body.as_deref())?;
    let content_type = response.header("content-type").map(str::to_owned);
    let answer = answer::answer(&plan, response.status, content_type.as_deref(), &response.body)?;
    Ok(answer.to_string())
}

#[cfg(test)]
mod tests {
    #[test]
    fn its_manifest_is_valid_for_this_contract() {
        let section = super::__quiver_manifest::section();
        let manifest: serde_json::Value = serde_json::from_slice(&section).unwrap();
        assert_eq!(manifest["name"], "openapi");
        assert_eq!(manifest["kind"], "connector");
        assert_eq!(manifest["actions"][0]["name"], super::OPERATIONS);
    }
}
