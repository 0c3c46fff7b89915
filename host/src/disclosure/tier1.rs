//! The Tier-1 text: what exists, one short block per kind.
//!
//! The same stub lines appear in the descriptions of the meta-tools, so a
//! client that drops the system prompt (or one that drops tool
//! descriptions) still sees them. Each section comes from its meta-tool
//! (its `section`). Deterministic: sorted by name, actions in the
//! author's order, so the text is byte-identical across runs and provider
//! prompt caches hit.

use std::fmt::Write;

use crate::disclosure::meta_tools::line::{Line, joined};
use crate::disclosure::meta_tools::{ALL, Offered, View};

/// The sections shown, in order: those offered with lines, or folded
/// (a section folded to a count alone has no lines but its heading says
/// how many there are).
fn sections<'v>(view: &'v View<'_>) -> impl Iterator<Item = (&'static dyn Offered, String, Vec<Line>)> + 'v {
    ALL.iter().filter_map(move |&m| {
        let (title, lines) = m.section(view)?;
        (!lines.is_empty() || view.fit.folded.contains_key(m.name())).then_some((m, title, lines))
    })
}

/// The instructions an MCP client receives beside the tool list: which
/// meta-tools disclose what, the inline texts and the footers, but not
/// the stub lines, which the meta-tools' descriptions carry (a client that
/// forwards both would pay for them twice; tool descriptions are the part
/// every client forwards).
pub(crate) fn instructions(view: &View<'_>) -> String {
    let offered: Vec<String> = sections(view).map(|(m, _, _)| format!("`{}`", m.name())).collect();
    let mut out = if offered.is_empty() {
        String::from("Tools are disclosed on demand.\n")
    } else {
        format!(
            "Tools are disclosed on demand: the descriptions of {} list what exists of each kind; call one to get \
             full definitions or results.\n",
            offered.join(", ")
        )
    };
    for text in ALL.iter().filter_map(|m| m.inline(view)) {
        out.push_str(&text);
    }
    for footer in ALL.iter().filter_map(|m| m.footer(view)) {
        let _ = write!(out, "\n{footer}\n");
    }
    out
}

/// Render the Tier-1 text for `view`.
pub(crate) fn render(view: &View<'_>) -> String {
    let mut out = String::from(
        "Tools are disclosed on demand. Each section below lists what exists; call the tool named in its \
         heading to get full definitions or results.\n",
    );
    for (_, title, lines) in sections(view) {
        if lines.is_empty() {
            let _ = write!(out, "\n## {title}\n");
        } else {
            let _ = write!(out, "\n## {title}\n{}\n", joined(&lines));
        }
    }
    for text in ALL.iter().filter_map(|m| m.inline(view)) {
        out.push_str(&text);
    }
    for footer in ALL.iter().filter_map(|m| m.footer(view)) {
        let _ = write!(out, "\n{footer}\n");
    }
    out
}
