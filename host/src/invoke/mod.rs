//! ⑤ The invocation seam: between a session and whatever runs a tool.
//!
//! A [`Backend`] gives the full definitions (Tier 2) of a resource's tools
//! and runs them; sessions and meta-tools see only this trait, never the
//! engine behind it. [`Backends`] routes each resource to the backend of
//! its kind:
//!
//! | resource | backend |
//! |---|---|
//! | plugins (tools, connectors, database adapters) | [`runtime::WasmRuntime`](crate::runtime::WasmRuntime): a fresh sandboxed instance per call |
//! | upstream MCP servers | [`upstream::Upstreams`](crate::upstream::Upstreams): rmcp client connections to live servers; saved `tools/list` results (not callable) |
//!
//! Values stay `serde_json::Value` from the caller to the backend; each
//! backend checks the input against the tool's schema before it runs.

mod backends;
pub(crate) mod fit;
pub mod progress;

pub use self::backends::{Backend, Backends, BoxFuture, Caller, definition};
