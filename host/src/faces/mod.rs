//! ⑧ Faces: how clients reach the host besides the library ([`Host`],
//! [`Session`](crate::session::Session)): an MCP server ([`mcp`], over stdio or
//! streamable HTTP) and a REST API ([`rest`]), served together by [`http`].
//! Faces work through sessions (one open session per face, resolved once
//! and cloned per request) and the host's public API; they parse, call and
//! map results to their protocol, nothing more.

pub mod http;
pub mod mcp;
pub mod rest;

use crate::error::{Error, Result};
use crate::host::Host;

/// Serve MCP on stdin/stdout until the client closes them. Nothing but
/// protocol is written to stdout (logs go to stderr, guest output to logs).
/// When both are pipes (as MCP clients launch servers), they are driven by
/// the IO reactor instead of blocking threads (rmcp's `stdio_pipes`): no
/// thread hand-off per message.
pub async fn serve_stdio(host: &Host, agent: Option<String>) -> Result<()> {
    use rmcp::ServiceExt;
    let server = mcp::McpServer::new(host.clone(), agent)?;
    let running = server.serve(rmcp::transport::stdio_pipes()).await.map_err(|e| Error::internal("MCP on stdio", e))?;
    running.waiting().await.map_err(|e| Error::internal("MCP on stdio", e))?;
    Ok(())
}
