//! ⑤ Upstream MCP servers: the [`Backend`] that calls the servers Quiver
//! fronts, beside the Wasm runtime.
//!
//! | file | what it owns |
//! |---|---|
//! | [`spec`] | the `mcpServers` entry, secret references, the cache key |
//! | `cache` | each server's tool list and purpose on disk |
//! | `connection` | one rmcp client connection: spawn or reach, handshake, kill |
//! | `probe` | the handshake's era probe: its answer dropped once it was given up |
//! | `stderr` | a stdio server's stderr in fixed memory: lines logged, the last kept |
//! | `process` | a stdio server's process group and descendants: spawn, note, stop and kill |
//! | `list` | a server's `tools/list`, paged by hand within a page cap and a byte cap |
//! | `server` | one server's life: lazy connect, list, call, idle close, backoff |
//! | `check` | a call's arguments against the schema the server listed, before sending |
//! | `answer` | a result as passed on: protocol `_meta` dropped, cut to the answer budget |
//! | `upstreams` | every configured server as one backend: tools, calls, status |
//!
//! Nothing is spawned or connected at start-up. A server's tools come from
//! its disk cache; a server never listed is listed in the background
//! ([`Upstreams::list_in_background`]), or by the first `discover` that
//! needs it. The first call connects; each new connection lists the tools
//! again, and a changed list
//! (or an upstream `list_changed`) reaches the catalog through the
//! [`on_change`](Upstreams::on_change) hook, so Quiver's own clients get
//! `list_changed` in turn. Saved `tools/list` files are served here too:
//! definitions only, never callable.

mod answer;
mod cache;
mod check;
mod connection;
mod list;
mod probe;
mod process;
mod server;
pub mod spec;
mod stderr;
mod upstreams;

pub use self::list::MAX_LIST_PAGES;
pub use self::spec::{RawServer, ServerSpec};
pub use self::upstreams::{UpstreamStatus, Upstreams};
