//! The first-party Quiver plugins, embedded as component bytes.
//!
//! `build.rs` compiles every crate under `plugins/` for `wasm32-wasip2` (with
//! the workspace's `plugin` profile) and embeds the results here, so the
//! `quiver` binary serves them without a plugins folder and without network;
//! and the demo database's data (`demo/`).

/// One embedded plugin component.
#[derive(Debug, Clone, Copy)]
pub struct Bundled {
    /// File name it would have in a plugins folder, e.g. `calc.wasm`.
    pub file_name: &'static str,
    /// The component's bytes.
    pub bytes: &'static [u8],
}

include!(concat!(env!("OUT_DIR"), "/plugins.rs"));

/// A demo database: a name, the keys of its `[databases.NAME]` section
/// (without `url`), and the portable SQL that builds it.
#[derive(Debug, Clone, Copy)]
pub struct Demo {
    /// The name agents see it under.
    pub name: &'static str,
    /// Its settings, as TOML.
    pub settings: &'static str,
    /// The SQL that creates and fills it (SQLite and PostgreSQL alike).
    pub sql: &'static str,
}

/// The demo databases: Chinook, a real sample data set (see `demo/`).
pub static DEMOS: &[Demo] = &[Demo {
    name: "chinook",
    settings: include_str!("../demo/chinook.toml"),
    sql: include_str!("../demo/chinook.sql"),
}];
