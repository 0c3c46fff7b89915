//! Reload: from a fresh scan to the next catalog version, without ever
//! replacing a good plugin by a broken one.
//!
//! The swap itself is the host publishing a new `Arc<Catalog>`; a call holds
//! the `Arc<Plugin>` it started with, so it finishes on that version while
//! later calls see the new one. This module decides what the new snapshot
//! holds, plugin by plugin:
//!
//! * a new file whose stub is valid is added (compiled first only when its
//!   settings ask for `preload`);
//! * a replacement is validated whole before the swap: stub, compile (or
//!   the `.cwasm` cache), world, `describe()` against the stub; so a
//!   replacement costs one compile, and the first call after the swap only
//!   instantiates;
//! * a replacement that fails any of that leaves the previous version
//!   serving, and the failure is kept as the plugin's [`Stale`] status;
//! * a removed file removes its plugin (an embedded plugin of the same name
//!   comes back); running calls finish.

use std::sync::Arc;

use super::{Catalog, Rejection, Stale, is_validation_failure};
use crate::load::{Loader, Plugin};

/// The catalog to publish after `old`, given a `fresh` scan of the sources
/// made with `old` as the previous snapshot.
pub(crate) async fn reconcile(old: &Catalog, mut fresh: Catalog, loader: &Loader) -> Catalog {
    // Files that served a plugin and are now broken: keep what they served.
    let rejected = std::mem::take(&mut fresh.rejected);
    for rejection in rejected {
        let previous = old.plugins.values().find(|p| p.origin().to_string() == rejection.origin);
        match previous {
            Some(previous)
                if is_validation_failure(&rejection.error) && !fresh.plugins.contains_key(previous.name()) =>
            {
                keep_previous(&mut fresh, previous, rejection, None);
            }
            _ => fresh.rejected.push(rejection),
        }
    }
    // New versions with a valid stub: validate replacements (and plugins
    // the operator wants preloaded) fully before the swap.
    let candidates: Vec<Arc<Plugin>> = fresh.plugins.values().cloned().collect();
    for candidate in candidates {
        let previous = old.plugins.get(candidate.name());
        // The same plugin, or the same file version now read with its
        // bytes (when watching starts): nothing to validate.
        if previous.is_some_and(|p| {
            Arc::ptr_eq(p, &candidate) || (p.origin().same_as(candidate.origin()) && p.stub() == candidate.stub())
        }) {
            continue;
        }
        if previous.is_none() && !candidate.settings().preload {
            continue;
        }
        let Err(error) = loader.load(&candidate).await else { continue };
        let rejection = Rejection { origin: candidate.origin().to_string(), error };
        fresh.plugins.remove(candidate.name());
        match previous {
            // The previous version may have come from another file (a rename):
            // it still serves, since its bytes are kept.
            Some(previous) => keep_previous(&mut fresh, previous, rejection, Some(candidate)),
            None => {
                tracing::warn!(origin = %rejection.origin, error = %rejection.error, "plugin rejected");
                fresh.rejected.push(rejection);
            }
        }
    }
    fresh
}

fn keep_previous(fresh: &mut Catalog, previous: &Arc<Plugin>, rejection: Rejection, candidate: Option<Arc<Plugin>>) {
    tracing::warn!(
        plugin = previous.name(),
        origin = %rejection.origin,
        error = %rejection.error,
        "new version rejected; the last good version keeps serving"
    );
    fresh.plugins.insert(previous.name().to_owned(), previous.clone());
    fresh
        .stale
        .insert(previous.name().to_owned(), Stale { origin: rejection.origin, error: rejection.error, candidate });
}

/// Whether `a` and `b` serve the same things (then no new version is
/// published).
pub(crate) fn same_contents(a: &Catalog, b: &Catalog) -> bool {
    let plugins = a.plugins.len() == b.plugins.len()
        && a.plugins.iter().zip(&b.plugins).all(|((na, pa), (nb, pb))| na == nb && Arc::ptr_eq(pa, pb));
    let rejected = a.rejected.len() == b.rejected.len()
        && a.rejected
            .iter()
            .zip(&b.rejected)
            .all(|(x, y)| x.origin == y.origin && x.error.to_string() == y.error.to_string());
    let stale = a.stale.len() == b.stale.len()
        && a.stale
            .iter()
            .zip(&b.stale)
            .all(|((na, x), (nb, y))| na == nb && x.origin == y.origin && x.error.to_string() == y.error.to_string());
    plugins && rejected && stale && a.skills == b.skills && a.mcp == b.mcp
}
