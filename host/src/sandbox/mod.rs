//! ② Sandbox: what a guest may reach, and how much it may use.
//!
//! Nothing is granted by default. Each capability is one module that owns
//! its whole lifecycle: how it is linked, what the operator grants, the
//! state of one call, and the host side of its imports.
//!
//! | capability | module | linked for | grant | denial |
//! |---|---|---|---|---|
//! | WASI p2 baseline | [`wasi`] | every kind | none: no files, env, sockets | WASI error codes |
//! | `log` (+ stdout/stderr) | [`log`] | every kind | `max_log_kb` | output dropped past the budget |
//! | `config` | [`config`] | every kind | [`ConfigGrant`](config::ConfigGrant) | `none` for any other key |
//! | `wasi:http` | [`http`] | connectors | [`HttpGrant`](http::HttpGrant): allowed origins, credential, limits | `HTTP-request-denied`, `destination-IP-prohibited`, body size, timeouts |
//! | `sql` | [`sql`] | database adapters | [`SqlGrant`](sql::SqlGrant): one configured database | `denied` (policy, read-only), `unavailable` |
//!
//! A capability knows nothing of the others or of the store: it is linked
//! with a getter of its own state (`link(linker, |state| &mut state.log)`)
//! or through the view trait wasmtime defines for it (`WasiView`,
//! `WasiHttpView`). [`limits`] holds the engine and the per-call CPU,
//! memory and output limits; [`secrets`] the credentials type the host
//! keeps out of guests. [`Grants`] is what the operator grants a plugin,
//! one field per capability; the store's state (`GuestState`, one field per
//! capability) and the per-kind linkers (`Linkers`, which also check a
//! component against its kind's world) compose the capabilities.

pub mod config;
mod grants;
pub mod http;
pub mod limits;
mod linkers;
pub(crate) mod log;
pub mod secrets;
pub mod sql;
mod store;
pub(crate) mod wasi;

pub use grants::Grants;
pub(crate) use linkers::Linkers;
pub(crate) use store::{Ending, GuestState, rearm, store};
pub use wasi::WasiGrant;
