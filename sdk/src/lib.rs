//! Write [Quiver] plugins as ordinary typed Rust functions.
//!
//! A plugin is a `wasm32-wasip2` component that implements one of the worlds
//! of the `quiver:plugin` WIT package (`tool`, `connector` or
//! `database-adapter`). This crate hides the component plumbing: put your
//! actions in a module, mark it with [`plugin`], and build with
//! `cargo build --release --target wasm32-wasip2`.
//!
//! ```ignore
//! use quiver_sdk::prelude::*;
//!
//! #[derive(Deserialize, JsonSchema)]
//! struct Eval {
//!     /// An arithmetic expression, e.g. `2 * (3 + 4)`.
//!     expression: String,
//! }
//!
//! /// Evaluate arithmetic expressions.
//! #[quiver_sdk::plugin(categories = ["math"])]
//! mod calc {
//!     use super::*;
//!
//!     /// Evaluate an arithmetic expression and return its value.
//!     pub fn eval(input: Eval) -> Result<f64, ToolError> {
//!         meval::eval_str(&input.expression).map_err(ToolError::invalid_input)
//!     }
//! }
//! ```
//!
//! What the attribute generates for you:
//!
//! * the component exports of the world (`describe` and `invoke`, plus the
//!   `database` interface for database adapters);
//! * each action's input and output JSON Schema (draft 2020-12), derived with
//!   [`schemars`] from the argument and return types: integers keep their
//!   ranges, `Option` fields are optional, doc comments become descriptions;
//! * the `quiver:stub` custom section the host reads without compiling the
//!   plugin (name, kind, one-line description, categories, action names);
//! * decoding of the input, encoding of the output and conversion of errors.
//!
//! Every `pub fn` of the module is an action. Its doc comment is its
//! description (the first paragraph, at most 120 characters, is the summary
//! shown to models before they load the schema). Set the access level with
//! `#[action(access = "write")]` (`read` is the default).
//!
//! Each call runs in a fresh instance. Start-up work the actions share
//! (parsing a grammar, building a table) goes in one private `fn()` marked
//! `#[init]` that fills `static`s (e.g. a `OnceLock`): the component then
//! also exports `wizer-initialize`, which the host runs once, in the sandbox
//! with no grants (`config`, HTTP and SQL are not available there), and
//! snapshots, so every instance starts from the state it left. Values read
//! from clocks or randomness during it are frozen into that state. The
//! actions must still work if it never ran (another host may not
//! pre-initialise): call the same `get_or_init` from them.
//!
//! [Quiver]: https://github.com/quiver-dev/quiver

#![warn(missing_docs)]

pub mod config;
pub mod database;
mod error;
pub mod http;
pub mod log;
pub mod sql;

#[doc(hidden)]
pub mod __rt;

pub use error::ToolError;
pub use quiver_sdk_macros::plugin;
/// Re-exported so plugins derive schemas with the same version the SDK uses.
pub use schemars;
/// Re-exported so plugins (de)serialize with the same version the SDK uses.
pub use serde;
/// Re-exported for plugins that return untyped JSON.
pub use serde_json;

/// Bindings of the `quiver:plugin/guest-imports` world: everything a plugin
/// may import from the host. Prefer the wrappers in [`log`], [`config`] and
/// [`sql`].
#[allow(missing_docs, unsafe_code, clippy::all)]
pub mod wit {
    wit_bindgen::generate!({
        path: "wit",
        world: "quiver:plugin/guest-imports",
        generate_all,
        generate_unused_types: true,
    });
}

/// The items most plugins need: `use quiver_sdk::prelude::*;`.
pub mod prelude {
    pub use crate::ToolError;
    pub use schemars::JsonSchema;
    pub use serde::{Deserialize, Serialize};
}
