//! Fits kept on disk, in the cache folder (`fits/<digest>.json`), so a
//! process that starts over a catalog it has fitted before neither counts
//! nor loads the tokenizer: the fit is a pure function of the texts it is
//! keyed by (and of this version of Quiver, part of the key).
//!
//! The folder is process-wide, like the remembered fits: keyed by content,
//! a fit one host kept is right for any other.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::RwLock;

use serde::{Deserialize, Serialize};

use super::meta_tools::ALL;
use super::meta_tools::fold::{Fit, Shape};

/// Where fits are kept; none until a host with a cache folder says so.
static FOLDER: RwLock<Option<PathBuf>> = RwLock::new(None);

/// Keep fits in `cache/fits` from now on (`None`: on no disk).
pub(crate) fn keep_in(cache: Option<&std::path::Path>) {
    *FOLDER.write().unwrap_or_else(|e| e.into_inner()) = cache.map(|dir| dir.join("fits"));
}

/// A fit as written: meta-tools by name.
#[derive(Serialize, Deserialize)]
struct Kept {
    budget: usize,
    tokens: usize,
    pinned: usize,
    counted: bool,
    folded: BTreeMap<String, Shape>,
}

/// The fit kept under `digest`, if there is a readable one.
pub(crate) fn read(digest: &str) -> Option<Fit> {
    let path = FOLDER.read().unwrap_or_else(|e| e.into_inner()).as_ref()?.join(format!("{digest}.json"));
    let kept: Kept = serde_json::from_slice(&std::fs::read(path).ok()?).ok()?;
    // Names this version does not have: not a fit of this version.
    let mut folded = BTreeMap::new();
    for (name, shape) in kept.folded {
        folded.insert(ALL.iter().map(|m| m.name()).find(|known| *known == name)?, shape);
    }
    Some(Fit { budget: kept.budget, tokens: kept.tokens, pinned: kept.pinned, counted: kept.counted, folded })
}

/// Keep `fit` under `digest` (best effort: a folder that cannot be
/// written only means the next process counts again).
pub(crate) fn write(digest: &str, fit: &Fit) {
    let Some(folder) = FOLDER.read().unwrap_or_else(|e| e.into_inner()).clone() else { return };
    let kept = Kept {
        budget: fit.budget,
        tokens: fit.tokens,
        pinned: fit.pinned,
        counted: fit.counted,
        folded: fit.folded.iter().map(|(name, shape)| ((*name).to_owned(), *shape)).collect(),
    };
    let written = std::fs::create_dir_all(&folder).and_then(|()| {
        let temporary = folder.join(format!(".{digest}.{}", std::process::id()));
        std::fs::write(&temporary, serde_json::to_vec(&kept).expect("a fit serializes"))?;
        std::fs::rename(&temporary, folder.join(format!("{digest}.json")))
    });
    if let Err(error) = written {
        tracing::debug!(%error, folder = %folder.display(), "prompt fit not kept on disk");
    }
}
