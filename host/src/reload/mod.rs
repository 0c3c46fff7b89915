//! Hot reload, a side stage: rescan the sources, decide what replaces what
//! ([`reconcile`]), publish the next snapshot; [`watch`] turns file-system
//! events into reloads.
//!
//! One reload runs at a time. A snapshot that serves the same things as
//! the current one is published only if its status changed (a file newly
//! rejected, a plugin gone stale), and then keeps its version number, so
//! clients' caches of the tool list stay valid.

mod arrivals;
mod reconcile;
mod reloader;
mod timeline;
pub mod watch;

pub use self::reloader::{Folders, Reloader};
pub use self::timeline::Reload;
