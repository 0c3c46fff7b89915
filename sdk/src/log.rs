//! Structured logging to the host's log.
//!
//! Records go to the host's `tracing` output, tagged with the plugin's name;
//! they never reach the host's standard output. The host may drop records
//! past a per-call budget.

use crate::wit::quiver::plugin::log::{Level, log};

fn emit(level: Level, message: &str, fields: &[(&str, &str)]) {
    let fields: Vec<(String, String)> = fields.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect();
    log(level, message, &fields);
}

/// Log at debug level.
pub fn debug(message: &str) {
    emit(Level::Debug, message, &[]);
}

/// Log at info level.
pub fn info(message: &str) {
    emit(Level::Info, message, &[]);
}

/// Log at warn level.
pub fn warn(message: &str) {
    emit(Level::Warn, message, &[]);
}

/// Log at error level.
pub fn error(message: &str) {
    emit(Level::Error, message, &[]);
}

/// Log with key/value fields, e.g. `log::with_fields(Level::Info, "fetched", &[("rows", "3")])`.
pub fn with_fields(level: Level, message: &str, fields: &[(&str, &str)]) {
    emit(level, message, fields);
}

pub use crate::wit::quiver::plugin::log::Level as LogLevel;
