//! The rules of the `quiver:plugin` contract, in one place.
//!
//! The WIT package (`wit/`) says what a plugin exports and imports; this
//! crate says what the host and the SDK both check about the *values* a
//! plugin declares: the contract identifier, the stub section's name and
//! format, the naming rules and the limits. The host validates stubs and
//! manifests with these functions, and the SDK's `#[plugin]` macro
//! refuses, at compile time, what the host would reject at load time: one
//! source, so the two can never disagree.
//!
//! It has no WebAssembly runtime dependency (the SDK's proc-macro uses it).

mod kinds;
mod limits;
mod manifest;
pub mod openapi;
mod rules;
mod stub;
pub mod text;
mod version;

pub use kinds::{Access, Kind};
pub use limits::{
    MAX_ACTION_NAME, MAX_ACTIONS, MAX_CATEGORY, MAX_PLUGIN_NAME, MAX_SUMMARY_CHARS, MAX_TOOL_NAME, NAME_SEPARATOR,
};
pub use manifest::{ActionSection, MANIFEST_FORMAT, ManifestSection};
pub use rules::{
    MAX_VERSION, action_name_problem, category_problem, one_line, plugin_name_problem, summary_of, summary_problem,
    version_problem,
};
pub use stub::{Stub, StubAction};
pub use text::{MAX_OUTSIDE_NAME, Shape, outside_name_problem, sanitize, sanitize_cut};
pub use version::{CONTRACT, STUB_FORMAT, contract_compatible};

/// Name of the custom section that carries a plugin's Tier-1 stub.
pub const STUB_SECTION: &str = "quiver:stub";

/// The custom section holding a plugin's full manifest (schemas included)
/// as JSON, written by `quiver package`: what the host serves before it
/// compiles the plugin, checked against `describe()` when it does.
pub const MANIFEST_SECTION: &str = "quiver:manifest";

/// The component export a plugin may add to have its start-up work done
/// once, when it is packaged or first compiled, instead of in every
/// instance: the host runs it in the sandbox with no grants and snapshots
/// the state it leaves (the name is the Wizer convention's).
pub const INIT_EXPORT: &str = "wizer-initialize";

/// The custom section that marks a component as already initialised (its
/// [`INIT_EXPORT`] ran and its state is the snapshot): never run again.
pub const INITIALIZED_SECTION: &str = "quiver:initialized";

/// How the host begins the `internal-error` text of a connector request it
/// refuses because the guest set, itself, what carries a credential the
/// host adds (the API key's query parameter, in any spelling). The SDK
/// reports such a refusal as `denied`, with the rest of the text, which
/// names the parameter.
pub const CREDENTIAL_REFUSAL: &str = "credential refused: ";

/// How the host begins the `internal-error` text of a connector request it
/// refuses because the guest set a header that is not on the connector's
/// allow-list (the standard content headers and those its API declares).
/// The SDK reports it as `denied`, with the rest of the text, which names
/// the header.
pub const HEADER_REFUSAL: &str = "header refused: ";
