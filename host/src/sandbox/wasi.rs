//! The WASI baseline: WASI p2 with no ambient authority.
//!
//! Grant ([`WasiGrant`]): nothing by default. The operator may open
//! folders to a plugin, read-only (`[plugins.NAME] folders`), and a plain
//! component's `config` values are its environment variables (the
//! interface such a component reads settings through). Per-call state: a
//! `WasiCtx` from `WasiCtxBuilder::new()`, which starts closed: no
//! preopened directories (so no filesystem), no environment, no
//! arguments, stdin empty, TCP/UDP and name lookup denied; then what the
//! grant gives. We never call any `inherit_*` method. The guest's stdout
//! and stderr feed the [`log`](super::log) capability's budget, never the
//! host's stdout (which carries MCP on stdio).

use std::path::PathBuf;

use wasmtime::component::Linker;
use wasmtime_wasi::{FsPerms, WasiCtx, WasiCtxBuilder, WasiView};

use super::log::{LogState, Stream};

/// Add WASI p2 to `linker`. What a guest can do with it is decided by the
/// context ([`context`]), which grants nothing.
pub(crate) fn link<T: WasiView>(linker: &mut Linker<T>) -> wasmtime::Result<()> {
    wasmtime_wasi::p2::add_to_linker_async(linker)
}

/// What a plugin's WASI context is given beyond nothing.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct WasiGrant {
    /// Folders opened read-only: the host folder (checked and made
    /// absolute when the configuration was read) and the path the guest
    /// sees it at.
    pub folders: Vec<(PathBuf, String)>,
    /// Environment variables.
    pub environment: Vec<(String, String)>,
}

/// A WASI context with what `grant` gives; stdout and stderr feed `log`.
/// A granted folder that can no longer be opened is left out of this
/// call, with a warning.
pub(crate) fn context(log: &LogState, grant: &WasiGrant) -> WasiCtx {
    let mut builder = WasiCtxBuilder::new();
    builder.stdout(log.pipe(Stream::Stdout)).stderr(log.pipe(Stream::Stderr)).envs(&grant.environment);
    for (host, guest) in &grant.folders {
        if let Err(error) = builder.preopened_dir(host, guest, FsPerms::ReadOnly) {
            tracing::warn!(folder = %host.display(), %error, "a granted folder cannot be opened; this call has it not");
        }
    }
    builder.build()
}
