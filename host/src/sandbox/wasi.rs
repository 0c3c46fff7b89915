//! The WASI baseline: WASI p2 with no ambient authority.
//!
//! Grant: none (nothing is configurable). Per-call state: a `WasiCtx` from
//! `WasiCtxBuilder::new()`, which starts closed: no preopened directories
//! (so no filesystem), no environment, no arguments, stdin empty, TCP/UDP
//! and name lookup denied. We never call any `inherit_*` method. The
//! guest's stdout and stderr feed the [`log`](super::log) capability's
//! budget, never the host's stdout (which carries MCP on stdio).

use wasmtime::component::Linker;
use wasmtime_wasi::{WasiCtx, WasiCtxBuilder, WasiView};

use super::log::{LogState, Stream};

/// Add WASI p2 to `linker`. What a guest can do with it is decided by the
/// context ([`context`]), which grants nothing.
pub(crate) fn link<T: WasiView>(linker: &mut Linker<T>) -> wasmtime::Result<()> {
    wasmtime_wasi::p2::add_to_linker_async(linker)
}

/// A WASI context with nothing granted; stdout and stderr feed `log`.
pub(crate) fn context(log: &LogState) -> WasiCtx {
    WasiCtxBuilder::new().stdout(log.pipe(Stream::Stdout)).stderr(log.pipe(Stream::Stderr)).build()
}
