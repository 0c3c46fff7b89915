//! The fixture server of the official MCP conformance suite
//! (`@modelcontextprotocol/conformance`), served through Quiver's MCP face.
//!
//! Quiver serves its bundled plugins (the meta-tools and resident tools of
//! `quiver serve`) and, through the embedder seam
//! ([`quiver::faces::mcp::McpServer`]'s extras), the suite's fixtures:
//! the `test_*` tools, the `test://` resources, the `test_*` prompts,
//! completion and logging. The suite drives it over streamable HTTP in both
//! protocol revisions; `tests/conformance/run.sh` runs it.
//!
//! Usage: `quiver-conformance-server [ADDR]` (default `127.0.0.1:0`); the
//! first line on stdout is the MCP URL, once it listens.

mod fixtures;
mod mrtr;
mod prompts;
mod resources;
mod tools;

use std::io::Write;
use std::net::SocketAddr;

use quiver::Host;
use quiver::faces::http::{HttpOptions, serve_with};
use tokio_util::sync::CancellationToken;

#[tokio::main]
async fn main() -> std::process::ExitCode {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .with_env_filter(tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "warn".into()))
        .init();
    let addr: SocketAddr = match std::env::args().nth(1).unwrap_or_else(|| "127.0.0.1:0".into()).parse() {
        Ok(addr) => addr,
        Err(e) => {
            eprintln!("quiver-conformance-server: the address must be IP:PORT: {e}");
            return std::process::ExitCode::from(2);
        }
    };
    let result = async {
        let host = Host::builder().bundled().build()?;
        let options = HttpOptions { addr, ..HttpOptions::default() };
        let shutdown = CancellationToken::new();
        let stop = shutdown.clone();
        tokio::spawn(async move {
            let _ = tokio::signal::ctrl_c().await;
            stop.cancel();
        });
        serve_with(
            &host,
            &options,
            shutdown,
            |addr| {
                let mut out = std::io::stdout();
                let _ = writeln!(out, "http://{addr}/mcp");
                let _ = out.flush();
            },
            fixtures::Fixtures::default(),
        )
        .await
    }
    .await;
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("quiver-conformance-server: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}
