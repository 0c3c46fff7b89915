//! What the latest reloads changed, kept for operators (the dashboard's
//! health page): a short ring, one entry per published snapshot.

use std::collections::VecDeque;
use std::sync::Mutex;

use schemars::JsonSchema;
use serde::Serialize;

use crate::catalog::Catalog;

/// Entries kept; older ones fall out.
pub const KEPT: usize = 64;

/// One published snapshot and what it changed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct Reload {
    /// The catalog version it serves.
    pub version: u64,
    /// Its revision (changes with the status too).
    pub revision: u64,
    /// When it was published (RFC 3339, UTC).
    pub time: String,
    /// What changed, one line each, as the log says it (`added`,
    /// `replaced`, `removed`, and what was refused or went stale).
    pub changes: Vec<String>,
}

/// The ring of [`Reload`]s.
#[derive(Debug, Default)]
pub(crate) struct Timeline(Mutex<VecDeque<Reload>>);

impl Timeline {
    /// Note that `next` was published after `old` (none: at start).
    pub(crate) fn published(&self, next: &Catalog, old: Option<&Catalog>) {
        let mut changes: Vec<String> = match old {
            Some(old) => next.changes_from(old).iter().map(ToString::to_string).collect(),
            None => vec![format!("started serving {} plugins", next.len())],
        };
        let (rejected, stale) = (next.rejected().len(), next.stale().count());
        if old.is_none_or(|old| old.rejected().len() != rejected || old.stale().count() != stale) {
            changes.push(format!("{rejected} files refused, {stale} plugins stale"));
        }
        let entry = Reload { version: next.version(), revision: next.revision(), time: crate::audit::now(), changes };
        let mut ring = self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if ring.len() == KEPT {
            ring.pop_front();
        }
        ring.push_back(entry);
    }

    /// The entries kept, oldest first.
    pub(crate) fn entries(&self) -> Vec<Reload> {
        self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner).iter().cloned().collect()
    }
}
