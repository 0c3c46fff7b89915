//! Pulling the configured OCI artifacts in the background: each one not
//! in the store is pulled on the runtime, the catalog is reloaded when it
//! lands (or fails), and a failed pull is tried again, backing off, until
//! it is stored. Serving never waits for a registry; a call naming a
//! plugin still on its way waits for its first outcome.

use std::sync::{Arc, Weak};
use std::time::Duration;

use crate::load::oci::Pulls;
use crate::reload::Reloader;

/// The first wait before a failed pull is tried again (doubling each time).
const FIRST_RETRY: Duration = Duration::from_secs(1);
/// The longest wait between two tries.
const LAST_RETRY: Duration = Duration::from_secs(300);

/// Pull every artifact of `pulls` the store lacks, publishing each outcome
/// through `reloader`. Needs a tokio runtime; without one (a one-shot
/// command) nothing is pulled and the status says so.
pub(super) fn start(pulls: &Arc<Pulls>, reloader: &Arc<Reloader>) {
    let unstored = pulls.unstored();
    if unstored.is_empty() {
        return;
    }
    let Ok(runtime) = tokio::runtime::Handle::try_current() else {
        tracing::warn!(artifacts = unstored.len(), "OCI artifacts are pulled only by a serving host");
        return;
    };
    for index in unstored {
        reloader.live().expect_arrival();
        let (pulls, reloader) = (Arc::downgrade(pulls), Arc::downgrade(reloader));
        runtime.spawn(pull_until_stored(pulls, reloader, index));
    }
}

async fn pull_until_stored(pulls: Weak<Pulls>, reloader: Weak<Reloader>, index: usize) {
    let (mut wait, mut first) = (FIRST_RETRY, true);
    loop {
        // Hold the host only while working: a dropped host ends the loop.
        let Some(stored) = (match pulls.upgrade() {
            Some(pulls) => Some(pulls.pull(index).await),
            None => None,
        }) else {
            return;
        };
        let Some(reloader) = reloader.upgrade() else { return };
        if let Err(error) = reloader.reload().await {
            tracing::warn!(%error, "cannot publish a pulled component");
        }
        if std::mem::take(&mut first) {
            reloader.live().arrived();
        }
        drop(reloader);
        if stored {
            return;
        }
        tokio::time::sleep(wait).await;
        wait = (wait * 2).min(LAST_RETRY);
    }
}
