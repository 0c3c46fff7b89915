//! The configured artifacts and where each one is: stored (served from
//! the store with no network), being pulled, or failed with why.
//!
//! Building [`Pulls`] touches no network: an artifact already in the store
//! is ready at once, the others wait for [`Pulls::pull`], which the host
//! runs in the background (and again, backing off, after a failure) so
//! that a slow or absent registry never holds up the plugins it serves.

use std::path::PathBuf;
use std::sync::Mutex;
use std::time::Instant;

use schemars::JsonSchema;
use serde::Serialize;

use super::registry::Registry;
use super::source::{OciLock, OciSource, RawOci};
use super::store::{Store, Stored};
use crate::error::{Error, Result};

/// Where a configured artifact is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Phase {
    /// Not in the store yet: being pulled.
    Pulling,
    /// In the store, its digests checked: served.
    Stored,
    /// Cannot be served (`reason` says why); a pull is tried again later.
    Failed,
}

/// One `[[oci]]` entry in the status.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct OciStatus {
    /// The reference as configured.
    pub reference: String,
    /// The manifest digest it is pinned to.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub digest: Option<String>,
    /// `pulling`, `stored` or `failed`.
    pub state: Phase,
    /// Why it failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The component's file in the store.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub component: Option<String>,
    /// The component's size in bytes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bytes: Option<u64>,
    /// How long its last successful pull took (none: found in the store).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pull_ms: Option<u64>,
    /// Pulls tried since start.
    pub attempts: u32,
    /// Whether a cosign signature was verified with the configured key
    /// (false: no key is configured, or nothing verified yet).
    pub signed: bool,
    /// Which form of signature verified: `bundle` (a Sigstore bundle among
    /// the manifest's referrers) or `sig-tag` (the classic `.sig` tag).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub signature: Option<&'static str>,
}

/// A stored component for the scan: listed like a folder plugin, served
/// only while its bytes have `digest`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pulled {
    /// Its file.
    pub path: PathBuf,
    /// The SHA-256 its bytes must have.
    pub digest: [u8; 32],
    /// The `[[oci]] REF` it came from.
    pub section: String,
}

struct Entry {
    section: String,
    written: String,
    source: Option<OciSource>,
    state: Mutex<State>,
    /// Its own client, made at its first pull (a client keeps the first
    /// credentials it is given for a registry; entries may differ).
    client: std::sync::OnceLock<std::result::Result<Registry, String>>,
}

struct State {
    phase: Phase,
    reason: Option<String>,
    stored: Option<Stored>,
    attempts: u32,
    pull_ms: Option<u64>,
    /// The form of the signature that verified.
    form: Option<&'static str>,
}

/// Every configured artifact.
pub struct Pulls {
    entries: Vec<Entry>,
    store: Option<Store>,
    max_component: u64,
}

impl Pulls {
    /// The entries `raw`, tags pinned by `lock`, looked up in `store`
    /// (none: there is no cache folder to keep them in).
    pub fn new(raw: &[RawOci], lock: Result<OciLock>, store: Option<Store>, max_component: u64) -> Pulls {
        let lock = lock.map_err(|e| e.to_string());
        // The status names the entry already: a configuration error's message alone.
        let reason = |error: Error| match error {
            Error::Config { message, .. } => message,
            other => other.to_string(),
        };
        let mut entries = Vec::new();
        for entry in raw {
            let resolved = match (&lock, &store) {
                (_, None) => Err("needs a cache folder to keep pulled components in (`cache_dir`)".to_owned()),
                (Err(lock), _) if entry.is_tag() => Err(format!("the lock file: {lock}")),
                (Ok(lock), _) => entry.resolve(lock).map_err(reason),
                (Err(_), _) => entry.resolve(&OciLock::default()).map_err(reason),
            };
            let form = |d: &str| store.as_ref().and_then(|s| s.proof(d)).map(|p| p.form());
            let stored = match (&resolved, &store) {
                // Signed artifacts are trusted from the store only while their
                // kept signature verifies with the key configured now.
                (Ok(source), Some(store)) => source.pinned.digest().and_then(|d| {
                    let signed = |key| {
                        let kept = store.proof(d).zip(store.manifest(d));
                        kept.is_some_and(|(proof, manifest)| proof.check(key, d, &manifest).is_ok())
                    };
                    store.stored(d, max_component).filter(|_| source.key.as_ref().is_none_or(signed))
                }),
                _ => None,
            };
            let (phase, reason) = match (&resolved, &stored) {
                (Err(reason), _) => (Phase::Failed, Some(reason.clone())),
                (Ok(_), Some(_)) => (Phase::Stored, None),
                (Ok(_), None) => (Phase::Pulling, None),
            };
            let signed = resolved.as_ref().ok().filter(|s| s.key.is_some() && stored.is_some());
            let signature = signed.and_then(|s| form(s.pinned.digest()?));
            entries.push(Entry {
                section: entry.section(),
                written: entry.reference.clone(),
                source: resolved.ok(),
                state: Mutex::new(State { phase, reason, stored, attempts: 0, pull_ms: None, form: signature }),
                client: std::sync::OnceLock::new(),
            });
        }
        Pulls { entries, store, max_component }
    }

    /// Whether no artifact is configured.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The entries still to pull (by index), and those whose pull failed
    /// (to try again).
    pub fn unstored(&self) -> Vec<usize> {
        (0..self.entries.len())
            .filter(|&i| {
                let entry = &self.entries[i];
                entry.source.is_some() && entry.state.lock().unwrap().phase != Phase::Stored
            })
            .collect()
    }

    /// Pull entry `index` into the store; whether it is stored now.
    pub async fn pull(&self, index: usize) -> bool {
        let entry = &self.entries[index];
        let (Some(source), Some(store)) = (&entry.source, &self.store) else {
            return false;
        };
        let started = Instant::now();
        entry.state.lock().unwrap().attempts += 1;
        let client = entry.client.get_or_init(|| {
            Registry::new(source.insecure.then(|| source.pinned.registry().to_owned()).into_iter().collect())
        });
        let pulled = match client {
            Ok(registry) => {
                registry.pull(&source.pinned, &source.auth, source.key.as_ref(), store, self.max_component).await
            }
            Err(reason) => Err(reason.clone()),
        };
        let elapsed_ms = started.elapsed().as_millis() as u64;
        let mut state = entry.state.lock().unwrap();
        match pulled {
            Ok(stored) => {
                tracing::info!(reference = %entry.written, bytes = stored.size, elapsed_ms, "component pulled");
                let form = source.key.as_ref().and_then(|_| store.proof(&stored.manifest)).map(|p| p.form());
                (state.phase, state.reason, state.stored, state.pull_ms, state.form) =
                    (Phase::Stored, None, Some(stored), Some(elapsed_ms), form);
                true
            }
            Err(reason) => {
                tracing::warn!(reference = %entry.written, %reason, attempts = state.attempts, "cannot pull a component");
                (state.phase, state.reason) = (Phase::Failed, Some(reason));
                false
            }
        }
    }

    /// The stored components, for the scan.
    pub fn ready(&self) -> Vec<Pulled> {
        let stored = |e: &Entry| e.state.lock().unwrap().stored.clone().map(|s| (e.section.clone(), s));
        self.entries
            .iter()
            .filter_map(stored)
            .map(|(section, s)| Pulled { path: s.path, digest: s.digest, section })
            .collect()
    }

    /// The entries that cannot be served now, with why (for the scan's
    /// rejections).
    pub fn failures(&self) -> Vec<(String, Error)> {
        self.entries
            .iter()
            .filter_map(|e| {
                let state = e.state.lock().unwrap();
                let reason = state.reason.clone().filter(|_| state.phase == Phase::Failed)?;
                Some((e.section.clone(), Error::Io { path: e.section.clone(), message: reason }))
            })
            .collect()
    }

    /// Every entry's state.
    pub fn status(&self) -> Vec<OciStatus> {
        self.entries
            .iter()
            .map(|e| {
                let state = e.state.lock().unwrap();
                OciStatus {
                    reference: crate::contract::sanitize_cut(&e.written, crate::contract::Shape::Line, 200),
                    digest: e.source.as_ref().and_then(|s| s.pinned.digest().map(str::to_owned)),
                    state: state.phase,
                    reason: state.reason.clone(),
                    component: state.stored.as_ref().map(|s| s.path.display().to_string()),
                    bytes: state.stored.as_ref().map(|s| s.size),
                    pull_ms: state.pull_ms,
                    attempts: state.attempts,
                    signed: state.stored.is_some() && e.source.as_ref().is_some_and(|s| s.key.is_some()),
                    signature: state.form.filter(|_| state.stored.is_some()),
                }
            })
            .collect()
    }

    /// Remove from the store every artifact no entry is pinned to now.
    /// Refused while an entry cannot be resolved (a tag the lock file does
    /// not pin, a broken lock file): what it will pin is not known, and its
    /// stored artifact may be what serves it.
    pub fn collect(&self) -> std::result::Result<super::store::Collected, String> {
        let Some(store) = &self.store else { return Ok(Default::default()) };
        if let Some(entry) = self.entries.iter().find(|e| e.source.is_none()) {
            let state = entry.state.lock().unwrap();
            let reason = state.reason.as_deref().unwrap_or("it cannot be resolved");
            return Err(format!("{}: {reason}; fix it first, or its stored artifact would go", entry.section));
        }
        let keep: Vec<String> =
            self.entries.iter().filter_map(|e| e.source.as_ref()?.pinned.digest().map(str::to_owned)).collect();
        store.collect(&keep, self.max_component).map_err(|e| format!("{}: {e}", store.root().display()))
    }

    /// The passwords of the entries' credentials (kept out of logs).
    pub fn secrets(&self) -> Vec<String> {
        use oci_client::secrets::RegistryAuth;
        self.entries
            .iter()
            .filter_map(|e| match &e.source.as_ref()?.auth {
                RegistryAuth::Basic(_, password) => Some(password.clone()),
                RegistryAuth::Bearer(token) => Some(token.clone()),
                RegistryAuth::Anonymous => None,
            })
            .collect()
    }
}

impl std::fmt::Debug for Pulls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.entries.iter().map(|e| &e.written)).finish()
    }
}
