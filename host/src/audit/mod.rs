//! The audit log, a side stage: one JSON line per call that crosses the
//! invocation seam, whatever runs it (a plugin, a database adapter, a
//! connector or an upstream MCP server).
//!
//! A line holds the time, the agent, the resource and action, the access
//! level the action declares, the outcome (`ok`, `tool_error` or the error's kind), the
//! duration, the bytes in and out, and the parameters with credentials
//! redacted ([`redact`]: keys that name a credential, and every value the
//! host holds as a secret). It is off unless a file or a stream is configured. A line
//! that cannot be written is logged and never fails the call. The latest
//! lines are also kept in memory, for the library and `GET /v1/audit`.

mod log;
pub mod redact;

pub use self::log::{AuditLog, AuditRecord, AuditSink, KEPT, Params, now, time};
