//! OpenAPI connectors: an operator's OpenAPI 3.0 or 3.1 document (JSON or
//! YAML) served with no code.
//!
//! The host reads the document with `oas3` into an [`Api`]: one
//! [`Operation`] per operation, with its action name, schemas, access
//! level and the [`OperationPlan`](quiver_contract::openapi::OperationPlan)
//! the bundled generic connector follows to send it. A connector instance
//! ([`OpenApiConnector`]) is the operations its section selects; it gives
//! the catalog a Tier-1 stub and a Tier-2 manifest without compiling
//! anything, and the component its plans through `config`. A document is
//! parsed once per content: instances of the same document (staging and
//! production) share one [`Api`].

mod connector;
mod names;
mod operation;
mod refs;
mod schema;
mod security;
#[cfg(test)]
mod tests;

pub use self::connector::{Api, OpenApiConnector, Selection};
pub use self::operation::{Operation, access_of};
pub use self::schema::{Definitions, Schema};
