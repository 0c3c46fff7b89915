//! The log itself: records, the file they are appended to, the lines
//! kept in memory.

use std::collections::VecDeque;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::contract::Access;
use crate::sandbox::secrets::{Redaction, Secret};

/// Lines kept in memory.
pub const KEPT: usize = 1_000;

/// One audited call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct AuditRecord {
    /// Its place in this process's log: 1 for the first call, one more for
    /// each next (set when it is recorded; pages go back by it).
    #[serde(default)]
    pub id: u64,
    /// When the call started (RFC 3339, UTC).
    pub time: String,
    /// The agent profile the call was made for, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    /// The access token's subject, when the call came with one (never the token).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub principal: Option<String>,
    /// The OAuth client the token was issued to, if it says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_id: Option<String>,
    /// The plugin instance, database or server.
    pub resource: String,
    /// The action.
    pub action: String,
    /// The tool's model-facing name.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub tool: String,
    /// The W3C trace id of the request that made the call, when it carried
    /// one or a span of Quiver's recorded it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace_id: Option<String>,
    /// The access level the action declares: `read`, `write` or `admin`.
    #[schemars(with = "String")]
    pub access: Access,
    /// `ok`, or the kind of the error.
    pub outcome: String,
    /// How long the call took, in milliseconds.
    pub duration_ms: f64,
    /// Bytes of the parameters (as JSON).
    pub bytes_in: usize,
    /// Bytes of the result (as JSON); 0 on error.
    pub bytes_out: usize,
    /// The statuses of the HTTP responses a connector received, in order
    /// (redirect hops included).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub http_statuses: Vec<u16>,
    /// The parameters, credentials redacted.
    pub params: Value,
}

/// What becomes of a call's arguments: the one switch (`[audit] params`)
/// the audit log and traces obey.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Params {
    /// Kept nowhere: audit records carry `null`.
    None,
    /// Kept in the audit log, credentials redacted; never on a span.
    #[default]
    Audit,
    /// Kept in the audit log and put on spans (a call's arguments and
    /// result, a SQL statement's text), redacted the same way.
    Traced,
}

/// Where the lines of an [`AuditLog`] are written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AuditSink {
    /// Appended to a file.
    File(PathBuf),
    /// Standard output.
    Stdout,
    /// Standard error.
    Stderr,
}

impl std::fmt::Display for AuditSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            AuditSink::File(path) => write!(f, "{}", path.display()),
            AuditSink::Stdout => f.write_str("stdout"),
            AuditSink::Stderr => f.write_str("stderr"),
        }
    }
}

/// Where audited calls go.
pub struct AuditLog {
    sink: Option<AuditSink>,
    file: Mutex<Option<std::fs::File>>,
    recent: Mutex<VecDeque<AuditRecord>>,
    /// Values redacted wherever they appear.
    redaction: Redaction,
    /// Whether a write failure was logged already (once is enough).
    failed: AtomicBool,
    /// Records the file did not take.
    write_failures: AtomicU64,
    /// The last id given.
    last_id: AtomicU64,
    /// Each record as it is kept, to whoever follows the calls live.
    live: tokio::sync::broadcast::Sender<Arc<AuditRecord>>,
}

impl std::fmt::Debug for AuditLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AuditLog").field("sink", &self.sink).finish()
    }
}

impl AuditLog {
    /// A log that writes to `sink` (none: memory only), redacting `secrets`.
    pub fn new(sink: Option<AuditSink>, secrets: Vec<Secret>) -> AuditLog {
        AuditLog {
            sink,
            file: Mutex::new(None),
            recent: Mutex::new(VecDeque::new()),
            redaction: Redaction::new(&secrets),
            failed: AtomicBool::new(false),
            write_failures: AtomicU64::new(0),
            last_id: AtomicU64::new(0),
            live: tokio::sync::broadcast::channel(LIVE_BACKLOG).0,
        }
    }

    /// Every record from now on, as it is kept. A follower that falls
    /// more than [`LIVE_BACKLOG`] records behind is told how many it
    /// missed (it can page them back with [`before`](Self::before)).
    pub fn follow(&self) -> tokio::sync::broadcast::Receiver<Arc<AuditRecord>> {
        self.live.subscribe()
    }

    /// Records the file did not take since start.
    pub fn write_failures(&self) -> u64 {
        self.write_failures.load(Ordering::Relaxed)
    }

    /// The file it appends to, if any.
    pub fn path(&self) -> Option<&Path> {
        match &self.sink {
            Some(AuditSink::File(path)) => Some(path),
            _ => None,
        }
    }

    /// Redact `params` as a record of this log would.
    pub fn redact(&self, params: &Value) -> Value {
        super::redact::redact(params, &self.redaction)
    }

    /// Append `record`, giving it the next id.
    pub fn record(&self, mut record: AuditRecord) {
        let mut recent = self.recent.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        // Ids are given under the lock: the ring and the file stay in id order.
        record.id = self.last_id.fetch_add(1, Ordering::Relaxed) + 1;
        if let Some(sink) = &self.sink
            && let Err(error) = self.append(sink, &record)
        {
            self.write_failures.fetch_add(1, Ordering::Relaxed);
            if !self.failed.swap(true, Ordering::Relaxed) {
                tracing::error!(to = %sink, %error, "cannot write the audit log; calls go on");
            }
        }
        if recent.len() == KEPT {
            recent.pop_front();
        }
        if self.live.receiver_count() > 0 {
            let _ = self.live.send(Arc::new(record.clone()));
        }
        recent.push_back(record);
    }

    fn append(&self, sink: &AuditSink, record: &AuditRecord) -> std::io::Result<()> {
        let mut line = serde_json::to_vec(record).map_err(std::io::Error::other)?;
        line.push(b'\n');
        // One write per line, under the stream's lock: lines never interleave.
        let path = match sink {
            AuditSink::File(path) => path,
            AuditSink::Stdout => return std::io::stdout().lock().write_all(&line),
            AuditSink::Stderr => return std::io::stderr().lock().write_all(&line),
        };
        let mut file = self.file.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if file.is_none() {
            *file = Some(std::fs::OpenOptions::new().create(true).append(true).open(path)?);
        }
        let result = file.as_mut().map_or(Ok(()), |f| f.write_all(&line));
        if result.is_err() {
            // Open it again next time (the file may have been moved away).
            *file = None;
        }
        result
    }

    /// The latest `limit` records, newest last; only those of `resource`,
    /// if given.
    pub fn recent(&self, limit: usize, resource: Option<&str>) -> Vec<AuditRecord> {
        let recent = self.recent.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let matching: Vec<&AuditRecord> =
            recent.iter().filter(|r| resource.is_none_or(|wanted| r.resource == wanted)).collect();
        matching[matching.len().saturating_sub(limit)..].iter().map(|r| (*r).clone()).collect()
    }

    /// Up to `limit` kept records with an id below `before` (all, if none)
    /// that pass `keep`, newest first, and the oldest id kept (none while
    /// nothing is).
    pub fn before(
        &self,
        before: Option<u64>,
        limit: usize,
        keep: impl Fn(&AuditRecord) -> bool,
    ) -> (Vec<AuditRecord>, Option<u64>) {
        let recent = self.recent.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let page = recent
            .iter()
            .rev()
            .filter(|r| before.is_none_or(|b| r.id < b))
            .filter(|r| keep(r))
            .take(limit)
            .cloned()
            .collect();
        (page, recent.front().map(|r| r.id))
    }

    /// Every kept record, oldest first, as `f` reads them (under the lock:
    /// keep `f` short).
    pub fn read<T>(&self, f: impl FnOnce(&mut dyn Iterator<Item = &AuditRecord>) -> T) -> T {
        let recent = self.recent.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        f(&mut recent.iter())
    }
}

/// Records a live follower may fall behind by before it misses some.
pub const LIVE_BACKLOG: usize = 256;

/// The current time, for a record.
pub fn now() -> String {
    jiff::Timestamp::now().to_string()
}

/// `at` as a record writes it (RFC 3339, UTC).
pub fn time(at: std::time::SystemTime) -> String {
    jiff::Timestamp::try_from(at).map_or_else(|_| now(), |t| t.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(resource: &str) -> AuditRecord {
        AuditRecord {
            id: 0,
            time: now(),
            agent: None,
            principal: None,
            client_id: None,
            resource: resource.into(),
            action: "query".into(),
            tool: format!("{resource}__query"),
            trace_id: None,
            access: Access::Read,
            outcome: "ok".into(),
            duration_ms: 1.0,
            bytes_in: 2,
            bytes_out: 3,
            http_statuses: Vec::new(),
            params: Value::Null,
        }
    }

    #[test]
    fn records_are_appended_and_kept() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.jsonl");
        let log = AuditLog::new(Some(AuditSink::File(path.clone())), Vec::new());
        log.record(record("a"));
        log.record(record("b"));
        let lines: Vec<AuditRecord> =
            std::fs::read_to_string(&path).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        assert_eq!(lines.len(), 2);
        assert_eq!(log.recent(10, Some("b")).len(), 1);
        assert_eq!(log.recent(1, None)[0].resource, "b");
    }

    #[test]
    fn records_get_rising_ids_and_page_back_to_the_oldest_kept() {
        let log = AuditLog::new(None, Vec::new());
        let mut live = log.follow();
        log.record(record("even"));
        assert_eq!(live.try_recv().unwrap().id, 1, "a follower gets each record as kept");
        for i in 1..KEPT + 5 {
            log.record(record(if i % 2 == 0 { "even" } else { "odd" }));
        }
        let lagged = live.try_recv().unwrap_err();
        assert!(matches!(lagged, tokio::sync::broadcast::error::TryRecvError::Lagged(_)), "a slow follower is told");
        let (page, oldest) = log.before(None, 3, |_| true);
        assert_eq!(page.iter().map(|r| r.id).collect::<Vec<_>>(), [KEPT as u64 + 5, KEPT as u64 + 4, KEPT as u64 + 3]);
        assert_eq!(oldest, Some(6), "the first five fell out of the ring");
        let (page, _) = log.before(Some(10), 100, |r| r.resource == "odd");
        assert_eq!(page.iter().map(|r| r.id).collect::<Vec<_>>(), [8, 6], "ids below 10, newest first, filtered");
        let (page, _) = log.before(Some(6), 100, |_| true);
        assert!(page.is_empty(), "paging ends at the oldest kept");
    }

    #[test]
    fn a_log_that_cannot_be_written_does_not_fail() {
        let log = AuditLog::new(Some(AuditSink::File(PathBuf::from("/nonexistent-dir/audit.jsonl"))), Vec::new());
        log.record(record("a"));
        assert_eq!(log.recent(10, None).len(), 1);
    }
}
