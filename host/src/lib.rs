//! Quiver: a WebAssembly plugin host for LLM-agent tools, with progressive
//! disclosure.
//!
//! Plugins are `wasm32-wasip2` components implementing the `quiver:plugin`
//! WIT worlds (see `wit/` and the `quiver-sdk` crate). The host reads each
//! plugin's Tier-1 stub from a custom section without compiling it, and
//! compiles, checks and instantiates a plugin only when it is first used.
//! Every call runs in a fresh, sandboxed instance.
//!
//! The modules follow the data path:
//!
//! | stage | module |
//! |---|---|
//! | ① contract | [`contract`]: WIT bindings, kinds, naming rules |
//! | ② loading | [`load`]: stub → `.cwasm` cache → compile → manifest |
//! | ③ catalog | [`catalog`]: immutable snapshots of the plugins; reload, and [`Host::watch`] |
//! | ④ disclosure | [`disclosure`]: modes, meta-tools, Tier-1 text, search, selection, tokens |
//! | ⑤ faces | [`Host`] and [`Session`] (library), [`faces`] (MCP, REST), the `quiver` binary |
//! | ⑥ sandbox | [`sandbox`]: WASI with nothing granted, HTTP allow-list, limits |
//!
//! ```no_run
//! # async fn demo() -> quiver::Result<()> {
//! let host = quiver::Host::builder().plugins_dir("plugins").build()?;
//! println!("{}", host.session(None)?.system_prompt());
//! let out = host.call("calc", "evaluate", r#"{"expression": "2 + 2"}"#).await?;
//! assert_eq!(out["value"], 4);
//! # Ok(()) }
//! ```

pub mod catalog;
pub mod config;
pub mod contract;
pub mod disclosure;
mod error;
pub mod faces;
mod host;
pub mod load;
mod runtime;
pub mod sandbox;
pub mod session;
pub mod watch;

pub use catalog::{Catalog, ToolRecord};
pub use config::Config;
pub use error::{Error, ErrorKind, GuestErrorKind, Result};
pub use host::{Host, HostBuilder};
pub use load::{Manifest, Plugin, Stub};
pub use session::{CallOutcome, Session, SessionState, Turn};
pub use watch::Watcher;
