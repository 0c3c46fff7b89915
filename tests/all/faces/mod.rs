//! The faces: MCP through a real rmcp client, the REST API through the
//! router, and what both HTTP transports (and stdio) refuse.

mod browser;
mod dashboard;
mod drain;
mod http;
pub(crate) mod mcp;
mod metrics;
mod oauth;
mod oauth_sign_in;
pub(crate) mod rest;
mod shared_sessions;
mod shared_sign_ins;
