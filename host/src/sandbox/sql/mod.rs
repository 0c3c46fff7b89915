//! The `sql` capability: database adapters send statements to the host,
//! which holds the connections and their credentials.
//!
//! Grant: [`SqlGrant`], the [`Database`] an adapter instance is bound to
//! (from a `[databases.NAME]` section), if any. Per-call state: the grant,
//! the access ceiling of the calling agent for this database, and the
//! call's deadline. Every statement passes the host's three layers,
//! whatever the adapter did before ([`database`]): the [`policy`], the
//! database's own read-only mode, and the host's limits. A refusal is the
//! typed WIT error `denied` naming the rule and how to rephrase; an adapter
//! with no database gets `unavailable`. Backends: [`sqlite`] (the embedded
//! default) and [`postgres`].

mod capability;
mod database;
mod engine;
pub mod policy;
mod postgres;
pub mod settings;
mod snapshot;
mod sqlite;
pub(crate) mod stack;
mod tls;
mod wire;

pub use self::capability::SqlGrant;
pub(crate) use self::capability::{SqlState, link};
pub use self::database::{Database, TableNames};
#[cfg(feature = "fuzzing")]
pub(crate) use self::engine::Outcome;
pub use self::settings::{DatabaseSettings, RawDatabase};
pub use self::snapshot::{Privileges, TableShape};
pub use self::sqlite::materialize;
