//! ④ The catalog: an immutable snapshot of everything the host serves.
//!
//! Five kinds of resource behind one [`ToolEntry`] each: built-in tools,
//! connectors and database adapters (plugins), tools of upstream MCP
//! servers (from saved `tools/list` results) and Agent Skills. A
//! [scan](Catalog::scan) reads stubs and front matter only, never
//! compiles. Whatever is not valid is kept as a [`Rejection`] so operators
//! can see why. [`Live`] holds the snapshot being served and tells
//! subscribers when another is published.
//!
//! A snapshot carries two numbers: its [`version`](Catalog::version), which
//! changes exactly when what is served changes (clients cache tool lists
//! by it), and its [`revision`](Catalog::revision), which also changes
//! when only the status does (a file rejected, a plugin gone stale).

mod changes;
mod configured;
mod live;
pub mod mcp;
pub mod names;
mod record;
mod scan;
pub(crate) mod shown;
pub mod skill;
mod snapshot;
pub(crate) mod status;

pub use changes::PluginChange;
pub use configured::{ConnectorSource, DatabaseSource};
pub use live::{ARRIVAL_WAIT, Live};
pub use mcp::{Listing, LiveServer, ServerState, UpstreamServer, UpstreamTool};
pub use record::{Category, SUMMARY_CHARS, ToolEntry, ToolRecord, model_schema};
pub use scan::{Embedded, Sources};
pub use shown::printable;
pub use skill::Skill;
pub use snapshot::{Catalog, Rejection, Stale};
pub use status::{PluginStatus, RejectedStatus, ServerStatus, SkippedExport, Status};
pub(crate) use status::{requests_of, skipped_of};
