//! How a meta-tool's Tier-1 lines are shown when the prompt budget
//! ([`crate::disclosure::budget`]) folds them: the [`Shape`] of each
//! section, the [`Fit`] of the whole prompt, and [`fold`], which writes a
//! section's lines in a shape.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde::Serialize;

use super::line::{Line, first_names};

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
    pub(crate) fn next(self) -> Option<Shape> {
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
    /// What the prompt costs as sent, o200k tokens: tiktoken's count (a
    /// piece of text of 100 bytes or more is charged its bytes, so never
    /// below it); 0 when there is no budget (nothing is counted).
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
        let first = first_names(names.into_iter(), members);
        let first = if members == 0 { String::new() } else { format!(": {first}") };
        // A group is charged to no one resource.
        out.push(Line::new("", key.clone(), format!(" ({}){first}", lines.len())));
    }
    if hidden.0 > 0 && !counted {
        let groups = if hidden.0 == 1 { "" } else { "s" };
        let rest = format!(" {} more {} in {} other group{groups}", hidden.1, plural(hidden.1), hidden.0);
        out.push(Line::new("", "…", rest));
    }
    (out, Some(note))
}

#[cfg(test)]
mod tests {
    use super::*;

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
        let text = super::super::line::joined(&out);
        assert_eq!(text, "- github (3): github-a, github-b, … (3)\n- gitlab (1): gitlab-a\n- slack (1): slack-x");
        assert!(note.unwrap().starts_with("5 servers in 3 groups"));
        assert!(out.iter().all(|l| l.origin.is_empty()), "a group is charged to no resource: {out:?}");
        let (out, _) = fold(lines.clone(), Shape::Grouped { members: 0, groups: Some(1) }, "server");
        let text = super::super::line::joined(&out);
        assert_eq!(text, "- github (3)\n- … 2 more servers in 2 other groups");
        let (out, note) = fold(lines, Shape::Counted, "server");
        assert!(out.is_empty());
        assert!(note.unwrap().starts_with("5 servers in 3 groups"));
    }
}
