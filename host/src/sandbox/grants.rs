//! What the operator grants one plugin: one field per capability.

use super::config::ConfigGrant;
use super::http::HttpGrant;
use super::limits::Limits;
use super::sql::SqlGrant;
use super::wasi::WasiGrant;

/// What the operator grants one plugin, per capability.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Grants {
    /// CPU, memory, output and log limits of each call.
    pub limits: Limits,
    /// Values its `config` import reads.
    pub config: ConfigGrant,
    /// Where it may send HTTP requests (connectors).
    pub http: HttpGrant,
    /// The database it reaches (database adapters).
    pub sql: SqlGrant,
    /// Folders and environment variables its WASI context is given.
    pub wasi: WasiGrant,
}
