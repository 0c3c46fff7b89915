//! What replaces what: from a fresh scan to the next catalog snapshot,
//! without ever replacing a good plugin by a broken one.
//!
//! The swap itself is publishing a new `Arc<Catalog>`; a call holds the
//! `Arc<Plugin>` it started with, so it finishes on that version while later
//! calls see the new one. This module decides what the new snapshot holds,
//! plugin by plugin:
//!
//! * a new file whose stub is valid is added (prepared first only when its
//!   settings ask for `preload`);
//! * a replacement is validated whole before the swap: stub, compile (or
//!   the `.cwasm` cache), world, `describe()` against the stub; so a
//!   replacement costs one compile, and the first call after the swap only
//!   instantiates;
//! * a replacement that fails any of that leaves the previous version
//!   serving (even where a bundled plugin of the same name could serve
//!   instead), and the failure is kept as the plugin's [`Stale`] status;
//! * a removed file removes its plugin (an embedded plugin of the same name
//!   comes back); running calls finish.

use std::sync::Arc;

use crate::catalog::{Catalog, Rejection, Stale};
use crate::error::ErrorKind;
use crate::load::Plugin;
use crate::runtime::WasmRuntime;

/// The catalog to publish after `old`, given a `fresh` scan of the sources
/// made with `old` as the previous snapshot.
pub(crate) async fn reconcile(old: &Catalog, mut fresh: Catalog, runtime: &WasmRuntime) -> Catalog {
    // Files that served a plugin and are now broken: keep what they served.
    for rejection in fresh.take_rejected() {
        let previous = old.plugins().find(|p| p.origin().to_string() == rejection.origin);
        match previous {
            Some(previous) if replaceable(&rejection) && may_keep(&fresh, previous) => {
                keep_previous(&mut fresh, previous, rejection, None);
            }
            _ => fresh.reject(rejection),
        }
    }
    // New versions with a valid stub: validate replacements (and plugins
    // the operator wants preloaded) fully before the swap.
    let names: Vec<String> = fresh.plugin_names().cloned().collect();
    for name in names {
        let Some(candidate) = fresh.get(&name).cloned() else { continue };
        let previous = old.get(&name);
        // The same plugin, or the same file version: nothing to validate.
        if previous.is_some_and(|p| {
            Arc::ptr_eq(p, &candidate) || (p.origin().same_as(candidate.origin()) && p.stub() == candidate.stub())
        }) {
            continue;
        }
        if previous.is_none() && !candidate.settings().preload {
            continue;
        }
        let Err(error) = runtime.prepare(&candidate).await else { continue };
        let rejection = Rejection { origin: candidate.origin().to_string(), error };
        fresh.withdraw(&name);
        match previous {
            // The previous version may have come from another file (a rename):
            // it still serves, since its bytes are kept.
            Some(previous) => keep_previous(&mut fresh, previous, rejection, Some(candidate)),
            None => {
                tracing::warn!(origin = %rejection.origin, error = %rejection.error, "plugin rejected");
                fresh.reject(rejection);
            }
        }
    }
    fresh
}

/// Whether a rejection can be answered by keeping the previous version
/// (the file is broken), rather than being about the catalog as a whole.
fn replaceable(rejection: &Rejection) -> bool {
    rejection.error.kind() != ErrorKind::DuplicateName
}

/// Whether `previous` may keep its name in `fresh`: nothing holds it, or
/// only the bundled plugin that `previous`, a folder plugin, replaced.
fn may_keep(fresh: &Catalog, previous: &Plugin) -> bool {
    fresh.get(previous.name()).is_none_or(|now| now.origin().is_embedded() && !previous.origin().is_embedded())
}

fn keep_previous(fresh: &mut Catalog, previous: &Arc<Plugin>, rejection: Rejection, candidate: Option<Arc<Plugin>>) {
    tracing::warn!(
        plugin = previous.name(),
        origin = %rejection.origin,
        error = %rejection.error,
        "new version rejected; the last good version keeps serving"
    );
    fresh.serve(previous.clone());
    fresh.mark_stale(previous.name(), Stale { origin: rejection.origin, error: rejection.error, candidate });
}
