//! The Wasm runtime: the [`Backend`] that runs plugins.
//!
//! [`WasmRuntime::prepare`](wasm::WasmRuntime::prepare) turns a scanned [`Plugin`] into a runnable one,
//! once per plugin version: compiled (or loaded from the `.cwasm` cache),
//! linked against its kind's world by the [sandbox](crate::sandbox),
//! `describe()`d in a fresh instance and checked against its stub. A call
//! checks its input against the action's schema, waits for an instance
//! slot, and runs in a fresh store ([`call`]), or in the one the same
//! caller's last call left when the operator keeps the plugin's instances
//! per caller ([`kept`]).

mod call;
mod kept;
mod plain;
mod preinit;
mod wasm;

pub use self::wasm::WasmRuntime;
