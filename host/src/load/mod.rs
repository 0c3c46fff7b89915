//! ③ Loading: stub (no compile) → `.cwasm` cache → compile; the checked
//! manifest.
//!
//! [`Plugin`] is what a scan produces: the stub, where it was read from
//! (and, on a watched host, the bytes themselves) and the resolved
//! settings. Nothing is compiled until the first call or `describe`, when
//! the runtime prepares it: compiled ([`compile`]), linked against its
//! kind's world, `describe()`d once and checked against its stub. The
//! result is kept in the plugin (one per plugin version), so later calls
//! only instantiate.

pub mod cache;
pub(crate) mod compile;
pub mod connector;
mod manifest;
mod nulls;
pub mod oci;
pub mod openapi;
mod origin;
pub mod package;
pub(crate) mod plain;
mod plugin;
pub mod settings;
pub mod stub;

pub use compile::LoadStats;
pub use connector::{ConnectorSettings, OPENAPI_PLUGIN, RawConnector};
pub(crate) use manifest::violations;
pub use manifest::{ActionSchema, ActionSpec, Manifest, SharedSchema};
pub use nulls::drop_null_optionals;
pub use origin::{Beside, FileStamp, MAX_PLUGIN_BYTES, Origin};
pub use plain::request::{AskKind, AskStatus, RequestsStatus};
pub(crate) use plugin::Pre;
pub use plugin::{Plugin, Prepared};
pub use settings::{Instances, PluginSettings, RawPluginSettings, SettingsResolver};
pub use stub::{Stub, StubAction};
