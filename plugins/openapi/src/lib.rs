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

/// The Tier-1 stub of the component itself (an instance's stub comes
/// from its document, on the host).
pub const STUB: &str = concat!(
    r#"{"format":1,"contract":"quiver:plugin@0.1.1","name":"openapi","version":"0.1.0","kind":"connector","#,
    r#""description":"Generic OpenAPI connector: serves the operations of an OpenAPI document","#,
    r#""categories":["api"],"actions":[{"name":"operations","summary":"List the operations this instance serves","access":"read"}]}"#
);

/// Run `action` with `input` (already checked against its schema).
pub fn invoke(action: &str, input: &str) -> Result<String, ToolError> {
    if action == OPERATIONS {
        let names: Vec<String> = quiver_sdk::config::entries()
            .into_iter()
            .filter_map(|(key, _)| key.strip_prefix(&plan_key("")).map(str::to_owned))
            .collect();
        return Ok(Value::from(names).to_string());
    }
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

#[cfg(target_family = "wasm")]
#[doc(hidden)]
#[allow(missing_docs, unused, unsafe_code, clippy::all)]
mod component {
    use quiver_sdk::__rt;

    quiver_sdk::__rt::wit_bindgen::generate!({
        path: "../../wit",
        world: "quiver:plugin/connector",
        runtime_path: "::quiver_sdk::__rt::wit_bindgen::rt",
        with: {
            "quiver:plugin/types@0.1.1": ::quiver_sdk::wit::quiver::plugin::types,
            "quiver:plugin/log@0.1.1": ::quiver_sdk::wit::quiver::plugin::log,
            "quiver:plugin/config@0.1.1": ::quiver_sdk::wit::quiver::plugin::config,
            "wasi:http/outgoing-handler@0.2.12": ::quiver_sdk::wit::wasi::http::outgoing_handler,
            "wasi:http/types@0.2.12": ::quiver_sdk::wit::wasi::http::types,
            "wasi:io/poll@0.2.12": ::quiver_sdk::wit::wasi::io::poll,
            "wasi:io/error@0.2.12": ::quiver_sdk::wit::wasi::io::error,
            "wasi:io/streams@0.2.12": ::quiver_sdk::wit::wasi::io::streams,
            "wasi:clocks/monotonic-clock@0.2.12": ::quiver_sdk::wit::wasi::clocks::monotonic_clock,
        },
    });

    struct Component;

    impl exports::quiver::plugin::plugin::Guest for Component {
        fn describe() -> __rt::Manifest {
            let action = __rt::action(
                super::OPERATIONS,
                "List the operations this instance serves",
                __rt::Access::Read,
                r#"{"type":"object","additionalProperties":false}"#.to_owned(),
                None,
            );
            let description = "Generic OpenAPI connector: serves the operations of an OpenAPI document";
            __rt::manifest("openapi", "0.1.0", __rt::Kind::Connector, description, &["api"], vec![action])
        }

        fn invoke(action: String, input: String) -> Result<String, __rt::WitError> {
            __rt::install_panic_hook();
            super::invoke(&action, &input).map_err(__rt::WitError::from)
        }
    }

    export!(Component);

    const fn bytes<const N: usize>(text: &str) -> [u8; N] {
        let source = text.as_bytes();
        let mut out = [0u8; N];
        let mut i = 0;
        while i < N {
            out[i] = source[i];
            i += 1;
        }
        out
    }

    /// Tier-1 stub read by the host without compiling this component.
    #[used]
    #[unsafe(link_section = "quiver:stub")]
    static QUIVER_STUB: [u8; super::STUB.len()] = bytes(super::STUB);
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_stub_is_valid_for_this_contract() {
        let stub = quiver_contract::Stub::from_json(super::STUB.as_bytes()).unwrap();
        assert_eq!(stub.contract, quiver_contract::CONTRACT);
        assert_eq!(stub.actions[0].name, super::OPERATIONS);
    }
}
