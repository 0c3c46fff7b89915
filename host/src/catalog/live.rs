//! The snapshot being served, and the news of the next one.

use std::sync::Arc;

use tokio::sync::watch;

use super::snapshot::Catalog;

/// Longest a call naming something unknown waits for sources on their way
/// (a pull has its own network timeouts; a registry that drips could
/// outlast them).
pub const ARRIVAL_WAIT: std::time::Duration = std::time::Duration::from_secs(60);

/// Holds the catalog snapshot the host serves. Readers take an `Arc` of
/// it ([`current`](Live::current)) and keep it as long as they need (a
/// call finishes on the snapshot it started with); [`publish`](Live::publish)
/// swaps in the next one and wakes every [`subscribe`](Live::subscribe)r.
#[derive(Debug)]
pub struct Live {
    sender: watch::Sender<Arc<Catalog>>,
    /// Sources on their way (a component being pulled) whose first
    /// outcome is not published yet.
    arriving: watch::Sender<usize>,
}

impl Live {
    /// Serve `first`.
    pub fn new(first: Catalog) -> Live {
        Live { sender: watch::Sender::new(Arc::new(first)), arriving: watch::Sender::new(0) }
    }

    /// A source is on its way: a call naming what it does not know yet
    /// waits for it ([`settled`](Self::settled)).
    pub fn expect_arrival(&self) {
        self.arriving.send_modify(|n| *n += 1);
    }

    /// A source's first outcome (served, or failed with why) is published.
    pub fn arrived(&self) {
        self.arriving.send_modify(|n| *n = n.saturating_sub(1));
    }

    /// Sources still on their way.
    pub fn arriving(&self) -> usize {
        *self.arriving.borrow()
    }

    /// Once no source is on its way.
    pub async fn settled(&self) {
        let _ = self.arriving.subscribe().wait_for(|n| *n == 0).await;
    }

    /// The snapshot served now.
    pub fn current(&self) -> Arc<Catalog> {
        self.sender.borrow().clone()
    }

    /// Serve `next` from now on.
    pub fn publish(&self, next: Arc<Catalog>) {
        self.sender.send_replace(next);
    }

    /// Every snapshot published from now on (wait with `changed`).
    pub fn subscribe(&self) -> watch::Receiver<Arc<Catalog>> {
        self.sender.subscribe()
    }

    /// Receivers of [`subscribe`](Self::subscribe) alive now.
    pub fn subscribers(&self) -> usize {
        self.sender.receiver_count()
    }
}
