//! Watching the folders: file-system events are hints that trigger a
//! [`Reloader::reload`]; the rescan, not the event, decides what changed.
//!
//! One thread per [`Watcher`] receives debounced `notify` events for the
//! plugins, skills and MCP folders, waits for the files they name to settle
//! (a writer still copying), and reloads. It also reloads every
//! [`RESCAN_EVERY`] in case events were lost (network file systems, inotify
//! limits), and re-arms a folder that was removed and created again (it
//! watches each folder's parent for that).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, mpsc};
use std::time::{Duration, Instant};

use notify_debouncer_full::notify::event::{AccessKind, AccessMode, EventKind};
use notify_debouncer_full::notify::{RecommendedWatcher, RecursiveMode};
use notify_debouncer_full::{DebounceEventResult, Debouncer, RecommendedCache, new_debouncer};

use super::reloader::Reloader;
use crate::error::{Error, Result};

/// Quiet time after the last event before a batch is handled.
pub const DEBOUNCE: Duration = Duration::from_millis(50);
/// How long a changed file must stay untouched before it is read.
pub const SETTLE: Duration = Duration::from_millis(50);
/// The longest wait for a file that keeps changing; then it is read as it
/// is (and rejected if incomplete, until the next change).
const SETTLE_AT_MOST: Duration = Duration::from_secs(2);
/// A full rescan this often even without events.
pub const RESCAN_EVERY: Duration = Duration::from_secs(30);

enum Message {
    Events(DebounceEventResult),
    Stop,
}

/// Keeps a [`Host`] in step with its folders until dropped.
pub struct Watcher {
    stop: mpsc::Sender<Message>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Drop for Watcher {
    fn drop(&mut self) {
        let _ = self.stop.send(Message::Stop);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl Watcher {
    /// Watch the folders of `reloader` and reload on every change until the
    /// returned `Watcher` is dropped. Call it from within a tokio runtime
    /// (reloads run on it).
    pub fn start(reloader: Arc<Reloader>) -> Result<Watcher> {
        let runtime = tokio::runtime::Handle::try_current()
            .map_err(|_| Error::internal("watcher", "it must be started within a tokio runtime"))?;
        let folders: Vec<(PathBuf, RecursiveMode)> = reloader
            .folders()
            .watched()
            .into_iter()
            .map(|(dir, recursive)| {
                let dir = std::path::absolute(&dir).unwrap_or(dir);
                (dir, if recursive { RecursiveMode::Recursive } else { RecursiveMode::NonRecursive })
            })
            .collect();
        let (sender, receiver) = mpsc::channel();
        let events = sender.clone();
        let debouncer = new_debouncer(DEBOUNCE, None, move |result| {
            let _ = events.send(Message::Events(result));
        })
        .map_err(|e| Error::internal("watcher", format!("cannot watch the folders: {e}")))?;
        let mut state = WatchState { debouncer, folders, armed: HashMap::new() };
        state.arm();
        // From now on a replaced file must not take away what is served:
        // keep the plugins' bytes (the first reload reads them).
        reloader.keep_plugin_bytes();
        let thread = std::thread::Builder::new()
            .name("quiver-watch".into())
            .spawn(move || state.run(&reloader, &runtime, &receiver))
            .map_err(|e| Error::internal("watcher", format!("cannot start its thread: {e}")))?;
        Ok(Watcher { stop: sender, thread: Some(thread) })
    }
}

struct WatchState {
    debouncer: Debouncer<RecommendedWatcher, RecommendedCache>,
    folders: Vec<(PathBuf, RecursiveMode)>,
    /// Watched paths and the identity of the folder when it was armed.
    armed: HashMap<PathBuf, Option<u64>>,
}

impl WatchState {
    fn run(&mut self, reloader: &Reloader, runtime: &tokio::runtime::Handle, receiver: &mpsc::Receiver<Message>) {
        // Catch up with changes made before the watch began, and read the
        // bytes of the plugins scanned without them.
        if let Err(error) = runtime.block_on(reloader.reload()) {
            tracing::warn!(%error, "reload failed; the current catalog keeps serving");
        }
        loop {
            let mut changed = Vec::new();
            match receiver.recv_timeout(RESCAN_EVERY) {
                Ok(Message::Stop) | Err(mpsc::RecvTimeoutError::Disconnected) => return,
                Ok(Message::Events(batch)) => {
                    if !self.collect(batch, &mut changed) {
                        continue;
                    }
                }
                Err(mpsc::RecvTimeoutError::Timeout) => {}
            }
            // Fold in whatever else arrived meanwhile: one reload for all.
            while let Ok(message) = receiver.try_recv() {
                match message {
                    Message::Stop => return,
                    Message::Events(batch) => {
                        self.collect(batch, &mut changed);
                    }
                }
            }
            settle(&changed);
            self.arm();
            if let Err(error) = runtime.block_on(reloader.reload()) {
                tracing::warn!(%error, "reload failed; the current catalog keeps serving");
            }
        }
    }

    /// Add the paths of a batch that matter to `changed`; whether any did.
    fn collect(&self, batch: DebounceEventResult, changed: &mut Vec<PathBuf>) -> bool {
        let events = match batch {
            Ok(events) => events,
            Err(errors) => {
                tracing::warn!(?errors, "watch errors; rescanning");
                return true;
            }
        };
        let mut relevant = false;
        for event in events {
            let reads = matches!(
                event.kind,
                EventKind::Access(AccessKind::Open(_) | AccessKind::Read | AccessKind::Close(AccessMode::Read))
            );
            if reads {
                continue;
            }
            for path in &event.paths {
                if self.folders.iter().any(|(dir, _)| path.starts_with(dir)) {
                    relevant = true;
                    changed.push(path.clone());
                }
            }
        }
        relevant
    }

    /// Watch every folder that exists (again, if it was re-created) and the
    /// parent of each, so that a folder appearing is noticed.
    fn arm(&mut self) {
        let wanted: Vec<(PathBuf, RecursiveMode)> = self
            .folders
            .iter()
            .flat_map(|(dir, mode)| {
                let parent = dir.parent().map(|p| (p.to_owned(), RecursiveMode::NonRecursive));
                parent.into_iter().chain([(dir.clone(), *mode)])
            })
            .collect();
        for (path, mode) in wanted {
            let identity = identity(&path);
            match self.armed.get(&path) {
                Some(armed) if identity.is_some() && *armed == identity => continue,
                Some(_) => {
                    let _ = self.debouncer.unwatch(&path);
                    self.armed.remove(&path);
                }
                None => {}
            }
            if identity.is_none() {
                continue;
            }
            match self.debouncer.watch(&path, mode) {
                Ok(()) => {
                    self.armed.insert(path, identity);
                }
                Err(error) => tracing::warn!(path = %path.display(), %error, "cannot watch"),
            }
        }
    }
}

/// The inode of a folder (a re-created folder has a new one); `None` if it
/// does not exist.
fn identity(path: &Path) -> Option<u64> {
    let meta = std::fs::metadata(path).ok().filter(|m| m.is_dir())?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        Some(meta.ino())
    }
    #[cfg(not(unix))]
    {
        let _ = meta;
        Some(0)
    }
}

/// Wait until none of `paths` was modified in the last [`SETTLE`].
fn settle(paths: &[PathBuf]) {
    let deadline = Instant::now() + SETTLE_AT_MOST;
    for path in paths {
        loop {
            let age = std::fs::metadata(path).and_then(|m| m.modified()).ok().and_then(|m| m.elapsed().ok());
            match age {
                Some(age) if age < SETTLE && Instant::now() < deadline => std::thread::sleep(SETTLE - age),
                _ => break,
            }
        }
    }
}
