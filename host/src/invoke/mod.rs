//! ⑤ The invocation seam: between a session and whatever runs a tool.
//!
//! A [`Backend`] gives the full definitions (Tier 2) of a resource's tools
//! and runs a [`Call`] of one of them, answering with an [`Answer`]: the
//! tool's [`Output`] typed by who produced it (a plugin's JSON, an upstream
//! server's `CallToolResult`) and the [`Facts`] of the call (timing,
//! sizes, HTTP statuses, the server, the principal). The answer travels
//! unchanged to the face that renders it. [`Backends`] routes each
//! resource to the backend of its kind, after the [`Caller`]'s grant:
//!
//! | resource | backend |
//! |---|---|
//! | plugins (tools, connectors, database adapters) | [`runtime::WasmRuntime`](crate::runtime::WasmRuntime): a fresh sandboxed instance per call |
//! | upstream MCP servers | [`upstream::Upstreams`](crate::upstream::Upstreams): rmcp client connections to live servers; saved `tools/list` results (not callable) |
//!
//! Inputs stay `serde_json::Value` from the caller to the backend; each
//! backend checks the input against the tool's schema before it runs.

mod answer;
mod backends;
mod caller;
pub(crate) mod fit;
pub mod progress;
#[cfg(test)]
pub(crate) mod testing;

pub use self::answer::{Answer, Facts, Output, outcome};
pub use self::backends::{Backend, Backends, BoxFuture, Call, definition, tool_of};
pub use self::caller::Caller;
