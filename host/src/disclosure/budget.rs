//! The prompt budget: the progressive prompt (every offered meta-tool's
//! definition, the instructions beside them and the pinned tools) kept
//! within `[disclosure] prompt_tokens` (o200k) at any catalog size.
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
use std::hash::{Hash, Hasher};
use std::sync::{Arc, Mutex};

use serde::Serialize;

use super::meta_tools::{ALL, Line, View};
use super::tokens::Cost;

/// The default `prompt_tokens`.
pub const DEFAULT_PROMPT_TOKENS: usize = 2000;

/// Members a group shows first, before any is dropped.
const FIRST_MEMBERS: usize = 3;

/// The most groups shown once groups start being dropped (then halved).
const MOST_GROUPS: usize = 32;

/// How one meta-tool's lines are shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case", tag = "shape")]
pub enum Shape {
    /// Every line.
    Full,
    /// Lines grouped: per group its count and first `members`; at most
    /// `groups` groups (the largest; every one when `None`), the rest
    /// counted.
    Grouped {
        /// Members named per group.
        members: usize,
        /// Groups shown at most.
        groups: Option<usize>,
    },
    /// Only how many there are.
    Counted,
}

impl Shape {
    /// The next, smaller shape, if there is one.
    fn next(self) -> Option<Shape> {
        Some(match self {
            Shape::Full => Shape::Grouped { members: FIRST_MEMBERS, groups: None },
            Shape::Grouped { members, groups } if members > 0 => Shape::Grouped { members: members - 1, groups },
            Shape::Grouped { groups: None, .. } => Shape::Grouped { members: 0, groups: Some(MOST_GROUPS) },
            Shape::Grouped { groups: Some(groups), .. } if groups > 1 => {
                Shape::Grouped { members: 0, groups: Some(groups / 2) }
            }
            Shape::Grouped { .. } => Shape::Counted,
            Shape::Counted => return None,
        })
    }
}

impl std::fmt::Display for Shape {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Shape::Full => write!(f, "every line"),
            Shape::Grouped { members, groups: None } => write!(f, "grouped, {members} names per group"),
            Shape::Grouped { members, groups: Some(most) } => {
                write!(f, "grouped, {members} names per group, at most {most} groups")
            }
            Shape::Counted => write!(f, "counted"),
        }
    }
}

/// How the prompt was made to fit its budget.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct Fit {
    /// The budget, o200k tokens (0: none).
    pub budget: usize,
    /// What the prompt costs as sent, o200k tokens: counted, except that a
    /// prompt with fewer bytes than the budget is given as its bytes (a
    /// bound: a token is at least a byte) and 0 when there is no budget
    /// (nothing is counted).
    pub tokens: usize,
    /// What the pinned tools' definitions cost, part of `tokens`.
    pub pinned: usize,
    /// The meta-tools whose lines were folded, and how.
    pub folded: BTreeMap<&'static str, Shape>,
}

impl Fit {
    /// Every line shown, nothing counted.
    pub(crate) fn unbounded() -> Arc<Fit> {
        Arc::new(Fit { budget: 0, tokens: 0, pinned: 0, folded: BTreeMap::new() })
    }

    /// How `meta` shows its lines.
    pub(crate) fn shape(&self, meta: &str) -> Shape {
        self.folded.get(meta).copied().unwrap_or(Shape::Full)
    }

    /// By how many tokens the prompt passes its budget, if it does (when
    /// everything was folded and the pinned tools still do not fit).
    pub fn overrun(&self) -> Option<usize> {
        (self.budget > 0 && self.tokens > self.budget).then(|| self.tokens - self.budget)
    }
}

/// Fits remembered, by a hash of what they were computed from.
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
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    (budget, &parts, &instructions, pinned).hash(&mut hasher);
    let key = hasher.finish();
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
            "the progressive prompt passes its budget (`[disclosure] prompt_tokens`) with every section folded: \
             the pinned tools alone cost {} tokens",
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

/// Fold the sections of `view` until the prompt fits `budget`.
fn folded(
    view: &View<'_>,
    budget: usize,
    parts: &[(&'static str, String)],
    instructions: &str,
    pinned: &[String],
) -> Fit {
    let pinned: usize = pinned.iter().map(|text| Cost::o200k_of(text)).sum();
    let fixed = Cost::o200k_of(instructions) + pinned;
    // Tokens are never more than bytes: a prompt that short fits uncounted.
    let bytes: usize = parts.iter().map(|(_, text)| text.len()).sum::<usize>() + instructions.len();
    let mut costs: BTreeMap<&'static str, usize> = BTreeMap::new();
    let mut fit = Fit { budget, tokens: 0, pinned, folded: BTreeMap::new() };
    if bytes + pinned <= budget {
        fit.tokens = bytes + pinned;
        return fit;
    }
    for (name, text) in parts {
        costs.insert(name, Cost::o200k_of(text));
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
        costs.insert(name, meta.definition(&trial).map_or(0, |def| Cost::o200k_of(&def.sent())));
    }
}

/// The position of meta-tool `name` in [`ALL`].
fn order(name: &str) -> usize {
    ALL.iter().position(|m| m.name() == name).unwrap_or(usize::MAX)
}

/// `lines` in `shape`, with a note for the label when folded: how many
/// there are, and that `search_tools` finds each. `noun` names one (e.g.
/// `server`).
pub(crate) fn fold(lines: Vec<Line>, shape: Shape, noun: &str) -> (Vec<Line>, Option<String>) {
    let (members, most) = match shape {
        Shape::Full => return (lines, None),
        Shape::Grouped { members, groups } => (members, groups.unwrap_or(usize::MAX)),
        Shape::Counted => (0, 0),
    };
    let counted = shape == Shape::Counted;
    let total = lines.len();
    let mut groups: BTreeMap<String, Vec<Line>> = BTreeMap::new();
    for line in lines {
        groups.entry(line.group.clone()).or_default().push(line);
    }
    let all_groups = groups.len();
    let plural = |n: usize| if n == 1 { noun.to_owned() } else { format!("{noun}s") };
    let note = format!(
        "{total} {} in {all_groups} group{}, folded to fit the prompt; search_tools finds each by what it does",
        plural(total),
        if all_groups == 1 { "" } else { "s" }
    );
    // The largest groups are shown (ties by name), in name order.
    let mut by_size: Vec<(&String, usize)> = groups.iter().map(|(key, lines)| (key, lines.len())).collect();
    by_size.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    let shown: std::collections::BTreeSet<String> = by_size.iter().take(most).map(|(key, _)| (*key).clone()).collect();
    let mut out = Vec::new();
    let mut hidden = (0, 0);
    for (key, lines) in &groups {
        if !shown.contains(key) {
            hidden = (hidden.0 + 1, hidden.1 + lines.len());
            continue;
        }
        let names: Vec<&str> = lines.iter().map(|line| line.name.as_str()).collect();
        let first = super::meta_tools::first_names(names.into_iter(), members);
        let first = if members == 0 { String::new() } else { format!(": {first}") };
        out.push(Line::new(key.clone(), key.clone(), format!(" ({}){first}", lines.len())));
    }
    if hidden.0 > 0 && !counted {
        let groups = if hidden.0 == 1 { "" } else { "s" };
        let rest = format!(" {} more {} in {} other group{groups}", hidden.1, plural(hidden.1), hidden.0);
        out.push(Line::new("", "…", rest));
    }
    (out, Some(note))
}

/// The family a name belongs to, for grouping: its first word that says
/// something (not `mcp`, `server`, `archived`, a version number), as
/// `github` for `github-mcp-server` and `server-github-archived`.
pub(crate) fn family(name: &str) -> String {
    const GENERIC: &[&str] = &["mcp", "server", "servers", "archived", "official", "api"];
    let words = name.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty());
    let telling = |w: &&str| !GENERIC.contains(&w.to_lowercase().as_str()) && !w.chars().all(|c| c.is_ascii_digit());
    let mut words = words.peekable();
    let first = words.peek().map(|w| w.to_lowercase());
    words.find(telling).map(str::to_lowercase).or(first).unwrap_or_else(|| name.to_lowercase())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn families_skip_the_words_every_server_name_has() {
        assert_eq!(family("github-mcp-server"), "github");
        assert_eq!(family("server-github-archived"), "github");
        assert_eq!(family("mcp-server-time"), "time");
        assert_eq!(family("stripe-mcp-0.2.5"), "stripe");
        assert_eq!(family("mcp"), "mcp");
        assert_eq!(family("42-tools"), "tools");
    }

    #[test]
    fn shapes_shrink_to_a_count_and_stop() {
        let mut shape = Shape::Full;
        let mut steps = 0;
        while let Some(next) = shape.next() {
            shape = next;
            steps += 1;
        }
        assert_eq!(shape, Shape::Counted);
        assert_eq!(steps, 4 + 1 + 5 + 1, "groups of 3..0 members, then 32..1 groups, then a count");
    }

    #[test]
    fn folding_groups_counts_and_names_the_first_members() {
        let line = |name: &str| Line::described(name, name, "does things");
        let lines = vec![line("github-a"), line("github-b"), line("github-c"), line("gitlab-a"), line("slack-x")];
        let (out, note) = fold(lines.clone(), Shape::Full, "server");
        assert_eq!((out, note), (lines.clone(), None));
        let (out, note) = fold(lines.clone(), Shape::Grouped { members: 2, groups: None }, "server");
        let text = super::super::meta_tools::line::joined(&out);
        assert_eq!(text, "- github (3): github-a, github-b, … (3)\n- gitlab (1): gitlab-a\n- slack (1): slack-x");
        assert!(note.unwrap().starts_with("5 servers in 3 groups"));
        let (out, _) = fold(lines.clone(), Shape::Grouped { members: 0, groups: Some(1) }, "server");
        let text = super::super::meta_tools::line::joined(&out);
        assert_eq!(text, "- github (3)\n- … 2 more servers in 2 other groups");
        let (out, note) = fold(lines, Shape::Counted, "server");
        assert!(out.is_empty());
        assert!(note.unwrap().starts_with("5 servers in 3 groups"));
    }
}
