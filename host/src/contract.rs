//! ① The WIT contract: host bindings of the `quiver:plugin` package, and
//! the contract's rules.
//!
//! Generated code lives only here. Each world the host calls into gets one
//! `bindgen!`; interfaces they share are generated once and reused with
//! `with:`. The rules every plugin's declarations must follow (names,
//! limits, the stub format) come from the `quiver-contract` crate, which the
//! SDK's macro checks too, and are re-exported here.

#![allow(missing_docs, clippy::all)]

pub use quiver_contract::text::unsafe_char;
pub use quiver_contract::{
    Access, CONTRACT, CREDENTIAL_REFUSAL, HEADER_REFUSAL, INIT_EXPORT, INITIALIZED_SECTION, Kind, MANIFEST_SECTION,
    MAX_ACTION_NAME, MAX_ACTIONS, MAX_OUTSIDE_NAME, MAX_PLUGIN_NAME, MAX_SUMMARY_CHARS, MAX_TOOL_NAME, NAME_SEPARATOR,
    STUB_FORMAT, STUB_SECTION, Shape, Stub, StubAction, action_name_problem, category_problem, one_line,
    outside_name_problem, plugin_name_problem, sanitize, sanitize_cut, summary_of, summary_problem,
};

/// Bindings of the `tool` world. Every plugin exports its `plugin`
/// interface, so these also call connectors and database adapters.
pub(crate) mod tool {
    wasmtime::component::bindgen!({
        path: "../wit",
        world: "quiver:plugin/tool",
        imports: { default: trappable },
        exports: { default: async },
    });
}

/// Bindings of the `database-adapter` world: the `sql` import.
pub(crate) mod database {
    wasmtime::component::bindgen!({
        path: "../wit",
        world: "quiver:plugin/database-adapter",
        imports: { default: async | trappable },
        additional_derives: [PartialEq],
        exports: { default: async },
        with: {
            "quiver:plugin/types": super::tool::quiver::plugin::types,
            "quiver:plugin/log": super::tool::quiver::plugin::log,
            "quiver:plugin/config": super::tool::quiver::plugin::config,
        },
    });
}

pub(crate) use tool::quiver::plugin::types as wit;

impl From<wit::Kind> for Kind {
    fn from(kind: wit::Kind) -> Self {
        match kind {
            wit::Kind::Tool => Kind::Tool,
            wit::Kind::Connector => Kind::Connector,
            wit::Kind::Database => Kind::Database,
        }
    }
}

impl From<wit::Access> for Access {
    fn from(access: wit::Access) -> Self {
        match access {
            wit::Access::Read => Access::Read,
            wit::Access::Write => Access::Write,
            wit::Access::Admin => Access::Admin,
        }
    }
}

/// Split the plugin's typed error into its kind and message.
pub(crate) fn guest_error(error: wit::Error) -> (crate::error::GuestErrorKind, String) {
    use crate::error::GuestErrorKind as K;
    match error {
        wit::Error::InvalidInput(m) => (K::InvalidInput, m),
        wit::Error::NotFound(m) => (K::NotFound, m),
        wit::Error::Denied(m) => (K::Denied, m),
        wit::Error::Unavailable(m) => (K::Unavailable, m),
        wit::Error::Failed(m) => (K::Failed, m),
    }
}
