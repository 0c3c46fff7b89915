//! The prompt budget: the progressive prompt (every offered meta-tool's
//! definition, the instructions beside them and the pinned tools) kept
//! within `[disclosure] prompt_tokens` (o200k) at any catalog size.
//!
//! Tokens are counted without tiktoken's table (see [`super::ceiling`]):
//! tiktoken's count, never below it, and no table (180 ms and 50 MB to
//! build) on any path that serves.
//!
//! When the prompt fits, nothing changes. When it does not, the section
//! with the most text is folded one step, and again, until it fits or
//! nothing folds further: every line → groups, each a count and its first
//! three members → two, one, no members → at most 32, 16, … 1 groups → a
//! count alone. A folded section drops the `enum` of names from its
//! meta-tool's schema (a wrong name is still refused with the names it
//! could have been) and says that `search_tools` finds the rest. Pinned
//! tools stay resident: if they alone pass the budget, they are shown
//! and the overrun is reported (a warning once, `/v1/status`).
//!
//! Deterministic: the fit is a function of the text the catalog and the
//! policy give, never of timing or order of requests, so every replica
//! and every request sends the same prompt and prompt caches hold.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

pub use super::meta_tools::fold::{Fit, Shape};
pub use super::policy::DEFAULT_PROMPT_TOKENS;

use super::meta_tools::{ALL, View};
use super::o200k;

/// Fits remembered, by the digest of what they were computed from.
static FITS: Mutex<Option<HashMap<u64, Arc<Fit>>>> = Mutex::new(None);

/// Most fits remembered (then forgotten all at once).
const REMEMBERED: usize = 256;

/// The fit of `view`'s prompt (with `pinned`, the text of the pinned
/// tools' definitions) within its policy's budget.
pub(crate) fn fit(view: &View<'_>, pinned: &[String]) -> Arc<Fit> {
    let budget = view.policy.prompt_tokens;
    if budget == 0 {
        return Fit::unbounded();
    }
    let full = View { fit: Fit::unbounded(), ..*view };
    let parts: Vec<(&'static str, String)> =
        ALL.iter().filter_map(|m| m.definition(&full).map(|def| (m.name(), def.sent()))).collect();
    let instructions = super::tier1::instructions(&full);
    // The groups lines fold into (a plugin's category) are not in the
    // unfolded text, yet decide the folded one.
    let groups: Vec<Vec<String>> =
        ALL.iter().map(|m| m.lines(&full).into_iter().map(|line| line.group).collect()).collect();
    let key = digest(budget, &parts, &instructions, pinned, &groups);
    if let Some(fit) = FITS.lock().unwrap_or_else(|e| e.into_inner()).get_or_insert_with(HashMap::new).get(&key) {
        return fit.clone();
    }
    let fit = Arc::new(folded(view, budget, &parts, &instructions, pinned));
    if let Some(overrun) = fit.overrun() {
        tracing::warn!(
            budget,
            tokens = fit.tokens,
            pinned = fit.pinned,
            overrun,
            "the progressive prompt passes its budget (`[disclosure] prompt_tokens`) with every section folded \
             as far as it goes: {} tokens, {} of them the pinned tools' definitions",
            fit.tokens,
            fit.pinned
        );
    }
    let mut fits = FITS.lock().unwrap_or_else(|e| e.into_inner());
    let fits = fits.get_or_insert_with(HashMap::new);
    if fits.len() >= REMEMBERED {
        fits.clear();
    }
    fits.insert(key, fit.clone());
    fit
}

/// A digest of what a fit is computed from (its key in memory), each part
/// length-prefixed as search's kin is.
fn digest(
    budget: usize,
    parts: &[(&'static str, String)],
    instructions: &str,
    pinned: &[String],
    groups: &[Vec<String>],
) -> u64 {
    let budget = budget.to_string();
    let mut all: Vec<&str> = vec![concat!("quiver-fit-", env!("CARGO_PKG_VERSION")), &budget];
    for (name, text) in parts {
        all.extend([*name, text.as_str()]);
    }
    all.extend([instructions, "pinned"]);
    all.extend(pinned.iter().map(String::as_str));
    for section in groups {
        all.push("groups");
        all.extend(section.iter().map(String::as_str));
    }
    super::search::kin_of(&all)
}

/// Forget every fit remembered: the next is computed afresh (a test of
/// determinism must not read the first answer back).
pub fn forget() {
    FITS.lock().unwrap_or_else(|e| e.into_inner()).take();
}

/// Fold the sections of `view` until the prompt fits `budget`.
fn folded(
    view: &View<'_>,
    budget: usize,
    parts: &[(&'static str, String)],
    instructions: &str,
    pinned: &[String],
) -> Fit {
    let pinned: usize = pinned.iter().map(|text| o200k::count(text)).sum();
    let fixed = o200k::count(instructions) + pinned;
    let mut costs: BTreeMap<&'static str, usize> = BTreeMap::new();
    let mut fit = Fit { budget, tokens: 0, pinned, folded: BTreeMap::new() };
    for (name, text) in parts {
        costs.insert(name, o200k::count(text));
    }
    // Sections that can fold: those with lines (search_tools has none).
    let mut foldable: Vec<&'static str> =
        ALL.iter().filter(|m| costs.contains_key(m.name()) && !m.lines(view).is_empty()).map(|m| m.name()).collect();
    loop {
        fit.tokens = fixed + costs.values().sum::<usize>();
        if fit.tokens <= budget {
            return fit;
        }
        // The costliest section that can fold further; ties by order.
        foldable.retain(|name| fit.shape(name).next().is_some());
        let Some(&name) = foldable.iter().max_by_key(|name| (costs[*name], std::cmp::Reverse(order(name)))) else {
            return fit;
        };
        let next = fit.shape(name).next().expect("retained: it folds further");
        fit.folded.insert(name, next);
        let trial = View { fit: Arc::new(fit.clone()), ..*view };
        let meta = ALL.iter().find(|m| m.name() == name).expect("a meta-tool of ALL");
        costs.insert(name, meta.definition(&trial).map_or(0, |def| o200k::count(&def.sent())));
    }
}

/// The position of meta-tool `name` in [`ALL`].
fn order(name: &str) -> usize {
    ALL.iter().position(|m| m.name() == name).unwrap_or(usize::MAX)
}
