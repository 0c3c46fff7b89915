//! ⑥ Sandbox: what a guest may reach, and how much it may use.
//!
//! Nothing is granted by default: no filesystem, no environment, no
//! sockets. Connectors get outbound HTTP through an allow-list; database
//! adapters get the host's `sql` capability; every call runs under a
//! deadline and a memory cap.

pub mod http;
pub mod limits;
pub(crate) mod wasi;
