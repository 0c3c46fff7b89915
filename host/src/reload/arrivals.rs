//! Compile on arrival: a plugin that appears while the host runs (a file
//! dropped into a watched folder, a new configured instance) is compiled
//! in the background right after it is published, so its first call does
//! not pay the compile (6 to 9 s for a Python component, as much again
//! for JavaScript).
//!
//! One arrival compiles at a time, on the compiler's own bounded slots, so
//! a burst of new files never takes every core from calls that need a
//! compile of their own, and Tier 1 never waits (the plugin is listed from
//! its stub at once). A call that arrives during the compile joins it: the
//! plugin's preparation is a once-cell, and the compiler shares in-flight
//! work by digest, so nothing compiles twice. A plugin that fails keeps
//! that failure for its version, as after a failed first call.

use std::sync::Arc;

use tokio::sync::Semaphore;

use crate::catalog::Catalog;
use crate::runtime::WasmRuntime;

/// The background compiles of arriving plugins.
pub(crate) struct Arrivals {
    runtime: Arc<WasmRuntime>,
    /// One arrival compiles at a time.
    one_at_a_time: Arc<Semaphore>,
}

impl Arrivals {
    pub(crate) fn new(runtime: Arc<WasmRuntime>) -> Arrivals {
        Arrivals { runtime, one_at_a_time: Arc::new(Semaphore::new(1)) }
    }

    /// Start preparing, in the background, each plugin `next` serves that
    /// `old` did not (already-prepared ones, such as validated
    /// replacements, are skipped).
    pub(crate) fn prepare_new(&self, old: &Catalog, next: &Catalog) {
        for plugin in next.plugins() {
            let known = old.get(plugin.name()).is_some_and(|p| Arc::ptr_eq(p, plugin));
            if known || plugin.is_loaded() {
                continue;
            }
            let (plugin, runtime, slot) = (plugin.clone(), self.runtime.clone(), self.one_at_a_time.clone());
            tokio::spawn(async move {
                let Ok(_slot) = slot.acquire_owned().await else { return };
                if let Err(error) = runtime.prepare(&plugin).await {
                    tracing::warn!(plugin = plugin.name(), %error, "a new plugin failed to load");
                } else {
                    tracing::debug!(plugin = plugin.name(), "compiled on arrival");
                }
            });
        }
    }
}
