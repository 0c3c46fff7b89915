//! Instances kept between calls: the per-plugin opt-in
//! `instances = "per-caller"`.
//!
//! By default each call runs in a fresh instance and nothing persists
//! between calls. A plugin whose instantiation costs more than its work
//! (an interpreter's: CPython and StarlingMonkey fill hundreds of table
//! entries and link a dozen core instances each time) may be opted in by
//! the operator: a call that ended cleanly leaves its store and instance
//! here, and the next call of the *same caller* to the *same plugin
//! version under the same settings* runs in it. What the guest kept in
//! memory is then seen by that caller's later calls, never by anyone
//! else's: the key holds the agent profile, the token's principal and the
//! access ceiling. A call that trapped, ran out of time or hit its memory
//! cap leaves nothing behind, nor does a store that ever sent an HTTP
//! request (its request or response body may still be running on a task
//! of its own, past the call's deadline).
//!
//! The shelf holds one instance per caller and is bounded
//! (`engine.max_kept_instances`, slots the pool holds on top of
//! `max_concurrency`); past it the instance kept longest ago is dropped,
//! and an instance unused for [`KEPT_IDLE`], or of a version no catalog
//! serves any more, is dropped at the next call of any plugin.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use wasmtime::Store;

use crate::contract::Access;
use crate::contract::tool::Tool;
use crate::invoke::Caller;
use crate::load::PluginSettings;
use crate::sandbox::GuestState;

/// An instance a clean call left, in its store.
pub(crate) struct Warm {
    pub(crate) store: Store<GuestState>,
    pub(crate) live: Live,
}

/// An instance, as its kind of plugin is called.
pub(crate) enum Live {
    /// Through Quiver's contract.
    Contract(Tool),
    /// A plain component: its exports found by index.
    Plain(wasmtime::component::Instance),
}

/// Who may run in an instance another call left: the same agent profile,
/// the same token principal and the same access ceiling.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Tenant {
    agent: Option<String>,
    principal: Option<String>,
    ceiling: Access,
}

impl Tenant {
    /// The tenant of `caller`'s call at `ceiling`.
    pub(crate) fn of(caller: &Caller, ceiling: Access) -> Tenant {
        Tenant { agent: caller.agent.clone(), principal: caller.token.as_deref().map(|p| p.key()), ceiling }
    }
}

/// What an instance was made for: one plugin version (alive while the
/// catalog serves it), its settings then, and a tenant.
pub(crate) struct Key {
    version: Weak<dyn std::any::Any + Send + Sync>,
    settings: PluginSettings,
    tenant: Tenant,
}

impl Key {
    /// The key of a call of `version` (its prepared form) under `settings` for `tenant`.
    pub(crate) fn new<V: std::any::Any + Send + Sync>(
        version: &Arc<V>,
        settings: &PluginSettings,
        tenant: Tenant,
    ) -> Key {
        let version: Arc<dyn std::any::Any + Send + Sync> = version.clone();
        Key { version: Arc::downgrade(&version), settings: settings.clone(), tenant }
    }

    /// Whether an instance made for `self` may serve a call keyed `call`.
    fn serves(&self, call: &Key) -> bool {
        Weak::ptr_eq(&self.version, &call.version) && self.tenant == call.tenant && self.settings == call.settings
    }

    /// Whether the plugin version is still served by some catalog.
    fn alive(&self) -> bool {
        self.version.strong_count() > 0
    }
}

/// Longest an instance is kept unused: what a caller left in memory is
/// not held longer than a conversation's pause.
pub(crate) const KEPT_IDLE: Duration = Duration::from_secs(120);

/// Instances left by clean calls, at most one per key and `capacity` in
/// all, oldest first.
pub(crate) struct Shelf<W> {
    kept: Mutex<VecDeque<(Key, W, Instant)>>,
    capacity: usize,
    idle: Duration,
}

impl<W> Shelf<W> {
    /// An empty shelf holding at most `capacity` instances (0: none), each
    /// at most `idle` unused.
    pub(crate) fn new(capacity: usize, idle: Duration) -> Shelf<W> {
        Shelf { kept: Mutex::new(VecDeque::new()), capacity, idle }
    }

    /// The instance kept for `key`, taken off the shelf. Instances of
    /// versions no catalog serves any more, and those unused too long, are
    /// dropped.
    pub(crate) fn take(&self, key: &Key) -> Option<W> {
        let (found, stale) = {
            let mut kept = self.lock();
            let stale = self.drain_stale(&mut kept);
            let found = kept.iter().position(|(k, ..)| k.serves(key)).and_then(|i| kept.remove(i));
            (found, stale)
        };
        drop(stale);
        found.map(|(_, kept, _)| kept)
    }

    /// Keep `instance` for the next call keyed `key`, in place of one kept
    /// for it before (calls of one caller that overlapped); past the
    /// capacity the instance kept longest ago is dropped.
    pub(crate) fn keep(&self, key: Key, instance: W) {
        if self.capacity == 0 {
            return;
        }
        let dropped = {
            let mut kept = self.lock();
            let mut dropped = self.drain_stale(&mut kept);
            if let Some(i) = kept.iter().position(|(k, ..)| k.serves(&key)) {
                dropped.extend(kept.remove(i));
            }
            kept.push_back((key, instance, Instant::now()));
            while kept.len() > self.capacity {
                dropped.extend(kept.pop_front());
            }
            dropped
        };
        // Stores are dropped outside the lock (each frees its instance).
        drop(dropped);
    }

    /// Drop the instances of versions no longer served and those unused
    /// too long (done on every call, kept or not).
    pub(crate) fn sweep(&self) {
        let stale = {
            let mut kept = self.lock();
            if kept.is_empty() {
                return;
            }
            self.drain_stale(&mut kept)
        };
        drop(stale);
    }

    /// How many instances are kept now.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.lock().len()
    }

    fn drain_stale(&self, kept: &mut VecDeque<(Key, W, Instant)>) -> Vec<(Key, W, Instant)> {
        let fresh = |(key, _, at): &(Key, W, Instant)| key.alive() && at.elapsed() < self.idle;
        if kept.iter().all(fresh) {
            return Vec::new();
        }
        let (alive, stale): (VecDeque<_>, VecDeque<_>) = std::mem::take(kept).into_iter().partition(fresh);
        *kept = alive;
        stale.into()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, VecDeque<(Key, W, Instant)>> {
        // Nothing is left half-done while the lock is held.
        self.kept.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tenant(agent: Option<&str>, ceiling: Access) -> Tenant {
        Tenant { agent: agent.map(str::to_owned), principal: None, ceiling }
    }

    #[test]
    fn an_instance_serves_only_its_own_version_settings_and_tenant() {
        let shelf = Shelf::new(8, KEPT_IDLE);
        let (v1, v2) = (Arc::new(1u8), Arc::new(2u8));
        let settings = PluginSettings::default();
        let me = || tenant(Some("a"), Access::Read);
        shelf.keep(Key::new(&v1, &settings, me()), "v1 for a");

        for other in [
            Key::new(&v2, &settings, me()),
            Key::new(&v1, &settings, tenant(Some("b"), Access::Read)),
            Key::new(&v1, &settings, tenant(None, Access::Read)),
            Key::new(&v1, &settings, tenant(Some("a"), Access::Write)),
            Key::new(&v1, &settings, Tenant { principal: Some("sub\0client".into()), ..me() }),
            Key::new(&v1, &PluginSettings { preload: true, ..PluginSettings::default() }, me()),
        ] {
            assert_eq!(shelf.take(&other), None, "{:?}", other.tenant);
        }
        assert_eq!(shelf.take(&Key::new(&v1, &settings, me())), Some("v1 for a"));
        assert_eq!(shelf.take(&Key::new(&v1, &settings, me())), None, "taken once");
    }

    #[test]
    fn the_shelf_is_bounded_one_per_caller_and_forgets_what_is_stale() {
        let shelf = Shelf::new(2, KEPT_IDLE);
        let settings = PluginSettings::default();
        let me = |agent: &str| tenant(Some(agent), Access::Read);
        let v1 = Arc::new(1u8);
        shelf.keep(Key::new(&v1, &settings, me("a")), 1);
        shelf.keep(Key::new(&v1, &settings, me("a")), 2);
        assert_eq!(shelf.len(), 1, "one instance per caller: the last kept");
        shelf.keep(Key::new(&v1, &settings, me("b")), 3);
        shelf.keep(Key::new(&v1, &settings, me("c")), 4);
        assert_eq!(shelf.len(), 2, "the oldest is dropped past the capacity");
        assert_eq!(shelf.take(&Key::new(&v1, &settings, me("a"))), None);
        assert_eq!(shelf.take(&Key::new(&v1, &settings, me("b"))), Some(3));

        let gone = Arc::new(9u8);
        shelf.keep(Key::new(&gone, &settings, me("a")), 9);
        drop(gone);
        shelf.sweep();
        assert_eq!(shelf.len(), 1, "a version no catalog serves is dropped");

        let brief = Shelf::new(8, Duration::ZERO);
        brief.keep(Key::new(&v1, &settings, me("a")), 1);
        assert_eq!(brief.take(&Key::new(&v1, &settings, me("a"))), None, "unused too long");
        let none = Shelf::new(0, KEPT_IDLE);
        none.keep(Key::new(&v1, &settings, me("a")), 1);
        assert_eq!(none.len(), 0);
    }
}
