//! The first-party Quiver plugins, embedded as component bytes.
//!
//! `build.rs` compiles every crate under `plugins/` for `wasm32-wasip2` (with
//! the workspace's `plugin` profile) and embeds the results here, so the
//! `quiver` binary serves them without a plugins folder and without network.

/// One embedded plugin component.
#[derive(Debug, Clone, Copy)]
pub struct Bundled {
    /// File name it would have in a plugins folder, e.g. `calc.wasm`.
    pub file_name: &'static str,
    /// The component's bytes.
    pub bytes: &'static [u8],
}

include!(concat!(env!("OUT_DIR"), "/plugins.rs"));
