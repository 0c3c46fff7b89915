//! Quiver: a WebAssembly plugin host for LLM-agent tools, with progressive
//! disclosure.
//!
//! Plugins are `wasm32-wasip2` components implementing the `quiver:plugin`
//! WIT worlds (see `wit/` and the `quiver-sdk` crate). The host reads each
//! plugin's Tier-1 stub from a custom section without compiling it, and
//! compiles, checks and instantiates a plugin only when it is first used.
//! Every call runs in a fresh, sandboxed instance.
//!
//! The modules follow the data path; each imports only the stages above
//! it in this table:
//!
//! | stage | module |
//! |---|---|
//! | ① contract | [`contract`]: WIT bindings, kinds, the contract's rules (`quiver-contract`) |
//! | ② sandbox | [`sandbox`]: one module per capability (WASI, log, config, http, sql), limits, secrets |
//! | ③ loading | [`load`]: stub → `.cwasm` cache → compile; manifest; plugin settings |
//! | ④ catalog | [`catalog`]: immutable snapshots of plugins, skills and upstream MCP lists |
//! | ⑤ invocation | [`invoke`]: the [`Backend`](invoke::Backend) seam; [`runtime`]: the Wasm backend; [`upstream`]: upstream MCP servers |
//! | ⑥ disclosure | [`disclosure`]: modes, meta-tools, Tier-1 text, search, selection, tokens |
//! | ⑦ sessions | [`session`]: one conversation |
//! | side stages | [`reload`]: rescan, reconcile, publish; the folder watcher. [`audit`]: one line per call |
//! | wiring | [`Host`] (and [`config`], the file it is built from) |
//! | ⑧ faces | [`faces`] (MCP, REST) over sessions, and the `quiver` binary |
//!
//! ```no_run
//! # async fn demo() -> quiver::Result<()> {
//! let host = quiver::Host::builder().plugins_dir("plugins").build()?;
//! println!("{}", host.session(None)?.system_prompt());
//! let out = host.call("calc", "evaluate", r#"{"expression": "2 + 2"}"#).await?;
//! assert_eq!(out["value"], 4);
//! # Ok(()) }
//! ```

pub mod audit;
pub mod auth;
pub mod catalog;
pub mod config;
pub mod contract;
pub mod disclosure;
mod error;
pub mod faces;
#[cfg(feature = "fuzzing")]
pub mod fuzzing;
mod host;
pub mod invoke;
pub mod load;
pub mod reload;
pub mod runtime;
pub mod sandbox;
pub mod session;
pub mod telemetry;
pub mod upstream;

pub use catalog::{Catalog, ToolEntry, ToolRecord};
pub use config::Config;
pub use error::{Error, ErrorKind, GuestErrorKind, Result, UpstreamFault};
pub use host::{Checked, Host, HostBuilder, Packaged};
pub use load::{Manifest, Plugin, Stub};
pub use reload::watch::Watcher;
pub use session::{CallOutcome, Listing, Session, SessionState, Turn};
