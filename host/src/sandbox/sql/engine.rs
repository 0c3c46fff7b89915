//! What the database engines share: how a statement may run, what it
//! produced or why it failed, the schema as an engine reports it, and the
//! row and byte caps every result is read against. [`database`] drives the
//! engines ([`sqlite`], [`postgres`]) with these.
//!
//! [`database`]: super::database
//! [`sqlite`]: super::sqlite
//! [`postgres`]: super::postgres

use std::sync::Arc;
use std::time::{Duration, Instant};

use super::policy::{Effect, Functions, Visible};
use crate::contract::database::quiver::plugin::sql::{Rows, Value};

/// What a backend ran: rows, or a count of rows changed.
#[derive(Debug)]
pub(crate) enum Outcome {
    Rows(Rows),
    Changed(u64),
}

/// What an engine that can check a statement itself (SQLite's authorizer)
/// checks it against: the policy's own lists, so it is refused twice.
#[derive(Debug, Clone)]
pub(crate) struct Guard {
    /// The schema as last read, less what is hidden.
    pub(crate) visible: Arc<Visible>,
    /// The functions this statement may call.
    pub(crate) functions: Arc<Functions>,
}

/// How one statement may run.
#[derive(Debug, Clone)]
pub(crate) struct Run {
    /// What the policy found it does.
    pub(crate) effect: Effect,
    /// Whether the connection may write (false for read access).
    pub(crate) writable: bool,
    /// Whether the caller wants rows back.
    pub(crate) rows: bool,
    /// When it must be done.
    pub(crate) deadline: Instant,
    /// Whether that is the call's deadline, nearer than the statement timeout.
    pub(crate) call_bound: bool,
    /// Rows read at most (one more is read to say `truncated`).
    pub(crate) row_limit: u32,
    /// Bytes of values read at most.
    pub(crate) max_bytes: usize,
    /// What the engine checks the statement against itself.
    pub(crate) guard: Guard,
}

/// The rows of one result, read against the row and byte caps.
pub(crate) struct Collector {
    row_limit: usize,
    max_bytes: usize,
    rows: Vec<Vec<Value>>,
    bytes: usize,
    truncated: bool,
}

impl Collector {
    pub(crate) fn new(run: &Run) -> Collector {
        Collector {
            row_limit: run.row_limit as usize,
            max_bytes: run.max_bytes,
            rows: Vec::new(),
            bytes: 0,
            truncated: false,
        }
    }

    /// Whether one more row may be read (else the result is `truncated`).
    pub(crate) fn wants_more(&mut self) -> bool {
        self.truncated |= self.rows.len() >= self.row_limit;
        !self.truncated
    }

    /// Keep `row` unless it takes the result past the byte cap (then the
    /// result is `truncated`). A first row alone past the cap is an error:
    /// an empty truncated result would tell the model nothing.
    pub(crate) fn push(&mut self, row: Vec<Value>) -> Result<(), Failure> {
        self.bytes += row.iter().map(size_of).sum::<usize>();
        if self.bytes <= self.max_bytes {
            self.rows.push(row);
        } else if self.rows.is_empty() {
            return Err(Failure::Statement(format!(
                "one row is larger than the result cap of {} KiB; select fewer or shorter columns (substr, length)",
                self.max_bytes / 1024
            )));
        } else {
            self.truncated = true;
        }
        Ok(())
    }

    pub(crate) fn finish(self, columns: Vec<String>) -> Rows {
        Rows { columns, rows: self.rows, truncated: self.truncated }
    }
}

/// The bytes a value counts against the result cap.
pub(crate) fn size_of(value: &Value) -> usize {
    match value {
        Value::Text(text) => text.len(),
        Value::Blob(bytes) => bytes.len(),
        _ => 8,
    }
}

/// Why a backend failed, before it becomes the adapter's typed error.
#[derive(Debug)]
pub(crate) enum Failure {
    /// The database refused or could not run the statement (bad SQL, no such table...).
    Statement(String),
    /// The database refused a write: it is read-only for this access.
    ReadOnly(String),
    /// The statement ran past its time.
    Timeout(Duration),
    /// The database cannot be reached, or the connection was lost.
    Unavailable(String),
}

/// The schema as the engine reports it: its name and tables.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct RawSchema {
    /// The schema's name (`main`; PostgreSQL's `current_schema()`).
    pub(crate) name: String,
    pub(crate) tables: Vec<RawTable>,
    /// What the operator hid that the connection's role can read anyway
    /// (`table` or `table.column`), where the engine has privileges to ask
    /// (PostgreSQL); `None` where it has none (SQLite).
    pub(crate) readable_hidden: Option<Vec<String>>,
}

/// A table as the engine reports it, before hiding and descriptions.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct RawTable {
    pub(crate) name: String,
    pub(crate) comment: String,
    pub(crate) columns: Vec<RawColumn>,
    pub(crate) primary_key: Vec<String>,
    pub(crate) row_estimate: Option<u64>,
    /// A view (or materialized view), not a table.
    pub(crate) view: bool,
    /// The column sets each unique constraint (or whole-table unique
    /// index) holds unique, besides the primary key.
    pub(crate) unique: Vec<Vec<String>>,
}

/// A column as the engine reports it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct RawColumn {
    pub(crate) name: String,
    pub(crate) data_type: String,
    pub(crate) nullable: bool,
    pub(crate) comment: String,
    pub(crate) references: Option<String>,
    /// Its default, as the database writes the expression.
    pub(crate) default: Option<String>,
}
