//! Tool names as metric labels, bounded: the first `N` distinct tools seen
//! keep their own label for the life of the process, and every later one
//! shares [`OTHER`], so a catalog of 10,000 tools cannot make 10,000 series
//! per metric.

use std::collections::HashSet;
use std::sync::{PoisonError, RwLock};

/// The label of every tool past the cap.
pub const OTHER: &str = "_other";

/// The label of a name that is no tool (a client's typo, or made-up names
/// that would otherwise take every label slot).
pub const UNKNOWN: &str = "_unknown";

/// Labels given out so far, and how many may be.
#[derive(Debug)]
pub struct StickyLabels {
    cap: usize,
    seen: RwLock<HashSet<String>>,
}

impl StickyLabels {
    /// At most `cap` distinct labels besides [`OTHER`].
    pub fn new(cap: usize) -> StickyLabels {
        StickyLabels { cap, seen: RwLock::new(HashSet::new()) }
    }

    /// The label of `name`: its own while there is room or once it had
    /// one, [`OTHER`] after.
    pub fn label(&self, name: &str) -> String {
        if self.seen.read().unwrap_or_else(PoisonError::into_inner).contains(name) {
            return name.to_owned();
        }
        let mut seen = self.seen.write().unwrap_or_else(PoisonError::into_inner);
        if seen.contains(name) || seen.len() < self.cap {
            seen.insert(name.to_owned());
            return name.to_owned();
        }
        OTHER.to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_tools_keep_their_label_and_the_rest_share_one() {
        let labels = StickyLabels::new(2);
        assert_eq!(labels.label("a"), "a");
        assert_eq!(labels.label("b"), "b");
        assert_eq!(labels.label("c"), OTHER);
        assert_eq!(labels.label("a"), "a", "sticky");
        assert_eq!(labels.label("c"), OTHER, "still past the cap");
    }
}
