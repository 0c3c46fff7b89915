//! ⑧ Faces: how clients reach the host besides the library ([`Host`],
//! [`Session`](crate::session::Session)): an MCP server ([`mcp`], over stdio or
//! streamable HTTP), a REST API ([`rest`]) and an operators' [`dashboard`],
//! served together by [`http`] behind one [`guard`], with the Prometheus
//! [`metrics`] and the [`health`] probes.
//! Faces work through sessions (one open session per face, resolved once
//! and cloned per request) and the host's public API; they parse, call and
//! map results to their protocol, nothing more.

mod connections;
pub mod dashboard;
pub mod envelope;
pub mod guard;
pub mod health;
pub mod http;
pub mod mcp;
pub mod metrics;
pub mod oauth;
pub mod principals;
pub mod rest;
pub mod sessions;
pub mod shared;
pub mod stdio;

pub use stdio::serve_stdio;
