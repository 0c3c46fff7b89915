//! Token accounting: what each disclosure mode costs in the prompt,
//! counted with real tokenizers (tiktoken's `o200k_base` and `cl100k_base`).
//!
//! A tool definition is counted as the compact JSON of its name,
//! description and input schema, which is what every provider is sent
//! (each wraps it a little differently). Three levels per resource:
//! *full* (every tool flat, with its schema: `legacy`), *progressive* (its
//! Tier-1 stub inside a meta-tool) and *names* (only the names).

use std::ops::AddAssign;

use serde::Serialize;

use crate::catalog::{Catalog, Category, ToolRecord};
use crate::disclosure::formats::ToolDef;
use crate::disclosure::meta_tools::fold::Fit;
use crate::disclosure::meta_tools::{self, Line, View};

/// The Tier-1 lines of every meta-tool of `category`, as shown (a folded
/// section's group lines are charged to no resource).
fn lines_of(view: &View<'_>, category: Category) -> Vec<Line> {
    meta_tools::ALL.iter().filter(|m| m.category() == category).flat_map(|m| m.shown(view)).collect()
}

/// What `lines` cost, one line of text each.
fn cost_of<'a>(lines: impl Iterator<Item = &'a Line>) -> Cost {
    lines.fold(Cost::default(), |mut acc, line| {
        acc += Cost::of(&format!("{line}\n"));
        acc
    })
}

/// A token count under both encodings.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Cost {
    /// Tokens with `o200k_base` (GPT-4o and later).
    pub o200k: usize,
    /// Tokens with `cl100k_base` (GPT-4, GPT-3.5).
    pub cl100k: usize,
}

/// What a test looks for in the debug log to tell the tokenizer's table
/// was built (about 180 ms and 50 MB).
const LOADING: &str = "loading the o200k_base tokenizer table";

/// tiktoken's `o200k_base`, its table built on first use and kept.
fn o200k() -> &'static tiktoken_rs::CoreBPE {
    static LOGGED: std::sync::Once = std::sync::Once::new();
    LOGGED.call_once(|| tracing::debug!("{LOADING}"));
    tiktoken_rs::o200k_base_singleton()
}

impl Cost {
    /// The cost of `text`.
    pub fn of(text: &str) -> Cost {
        Cost {
            o200k: o200k().encode_ordinary(text).len(),
            cl100k: tiktoken_rs::cl100k_base_singleton().encode_ordinary(text).len(),
        }
    }

    /// Tokens of `text` with `o200k_base` alone (one table loaded, not two).
    pub fn o200k_of(text: &str) -> usize {
        o200k().encode_ordinary(text).len()
    }

    /// The cost of a tool definition as sent to a model.
    pub fn of_def(def: &ToolDef) -> Cost {
        Cost::of(&def.sent())
    }

    /// Reduction from `full` to `self`, in percent (o200k).
    pub fn reduction_from(&self, full: &Cost) -> f64 {
        if full.o200k == 0 { 0.0 } else { 100.0 * (1.0 - self.o200k as f64 / full.o200k as f64) }
    }
}

impl AddAssign for Cost {
    fn add_assign(&mut self, other: Cost) {
        self.o200k += other.o200k;
        self.cl100k += other.cl100k;
    }
}

/// One line of the report: a resource (plugin, server, skill set) or a total.
#[derive(Debug, Clone, Serialize)]
pub struct TokenRow {
    /// Plugin or server name, or a label such as `total`.
    pub name: String,
    /// Its category.
    pub category: Category,
    /// How many tools it has.
    pub tools: usize,
    /// Every tool flat with its full schema (legacy / inline).
    pub full: Cost,
    /// Its Tier-1 stub in the meta-tool (progressive).
    pub progressive: Cost,
    /// Its tool names only.
    pub names: Cost,
}

/// Per-resource costs and the totals, as `quiver tokens` prints them.
#[derive(Debug, Clone, Serialize)]
pub struct TokenReport {
    /// One row per plugin, MCP server and (all) skills, sorted.
    pub rows: Vec<TokenRow>,
    /// The fixed part of each offered meta-tool (its text and argument
    /// schema, without the stubs), by meta-tool name.
    pub overhead: Vec<(String, Cost)>,
    /// Everything flat.
    pub full: Cost,
    /// Every offered meta-tool definition, stubs included, and the
    /// instructions sent beside them (MCP `instructions`).
    pub progressive: Cost,
    /// The instructions alone (part of `progressive`).
    pub instructions: Cost,
    /// Every tool name, one per line.
    pub names: Cost,
    /// How Tier 1 was folded to fit the prompt budget.
    pub fit: Fit,
}

/// Count the costs of everything `view` can disclose. `records` must be
/// the catalog's records with schemas (plugins loaded), since the full
/// cost needs them; records without a schema count with an empty one.
pub(crate) fn report(view: &View<'_>, records: &[ToolRecord]) -> TokenReport {
    let mut rows: Vec<TokenRow> = Vec::new();
    let mut full_total = Cost::default();
    let mut names_total = Cost::default();
    let stubs: Vec<(Category, Vec<Line>)> = [Category::Connector, Category::Database, Category::Mcp, Category::Builtin]
        .into_iter()
        .map(|c| (c, lines_of(view, c)))
        .collect();
    for origin in origins(records.iter().map(|r| r.origin.as_str())) {
        let tools: Vec<&ToolRecord> = records.iter().filter(|r| r.origin == origin).collect();
        let category = tools[0].category;
        let mut full = Cost::default();
        let mut names = Cost::default();
        for record in &tools {
            full += Cost::of_def(&flat(record));
            names += Cost::of(&format!("{}\n", record.name));
        }
        // The stub line(s) of this origin in its meta-tool.
        let lines = stubs.iter().filter(|(c, _)| *c == category).flat_map(|(_, lines)| lines);
        let progressive = cost_of(lines.filter(|line| line.origin == origin));
        full_total += full;
        names_total += names;
        rows.push(TokenRow { name: origin.to_owned(), category, tools: tools.len(), full, progressive, names });
    }
    let skills: Vec<_> = view.catalog.skills().collect();
    if !skills.is_empty() {
        let mut full = Cost::default();
        let mut names = Cost::default();
        for skill in &skills {
            full += Cost::of(&format!(
                "## Skill: {}\n{}\n\n{}\n",
                skill.name,
                skill.description,
                skill.body().unwrap_or_default()
            ));
            names += Cost::of(&format!("{}\n", skill.name));
        }
        let progressive = cost_of(lines_of(view, Category::Skill).iter());
        full_total += full;
        names_total += names;
        rows.push(TokenRow {
            name: "skills".into(),
            category: Category::Skill,
            tools: skills.len(),
            full,
            progressive,
            names,
        });
    }

    let mut progressive_total = Cost::default();
    let mut overhead = Vec::new();
    for meta in meta_tools::ALL {
        if let Some(def) = meta.definition(view) {
            let cost = Cost::of_def(&def);
            progressive_total += cost;
            let stub_cost = rows.iter().filter(|r| r.category == def.category).fold(Cost::default(), |mut acc, r| {
                acc += r.progressive;
                acc
            });
            let stub_cost = if def.name == "search_tools" { Cost::default() } else { stub_cost };
            overhead.push((
                def.name.clone(),
                Cost {
                    o200k: cost.o200k.saturating_sub(stub_cost.o200k),
                    cl100k: cost.cl100k.saturating_sub(stub_cost.cl100k),
                },
            ));
        }
    }
    let instructions = Cost::of(&super::tier1::instructions(view));
    progressive_total += instructions;
    TokenReport {
        rows,
        overhead,
        full: full_total,
        progressive: progressive_total,
        instructions,
        names: names_total,
        fit: (*view.fit).clone(),
    }
}

/// `names`, each once, in the order they first appear.
pub(crate) fn origins<'a>(names: impl Iterator<Item = &'a str>) -> Vec<&'a str> {
    let mut seen = std::collections::BTreeSet::new();
    names.filter(|name| seen.insert(*name)).collect()
}

/// The flat cost (o200k only) of the tools of `origins` whose schemas
/// `catalog` knows without loading anything (packaged manifests, saved
/// upstream lists), and how many tools it does not know yet.
pub(crate) fn known_full(catalog: &Catalog, origins: &[&str]) -> (usize, usize) {
    let (mut tokens, mut unknown) = (0, 0);
    for entry in origins.iter().flat_map(|origin| catalog.tools_of(origin)) {
        match catalog.record(entry).as_ref().and_then(ToolDef::of) {
            Some(def) => tokens += Cost::o200k_of(&def.sent()),
            None => unknown += 1,
        }
    }
    (tokens, unknown)
}

/// A record as a flat tool; if its schema is unknown (its plugin failed to
/// load) it counts with a `null` schema, a lower bound.
pub(crate) fn flat(record: &ToolRecord) -> ToolDef {
    ToolDef::of(record).unwrap_or_else(|| ToolDef {
        name: record.name.clone(),
        description: record.description.clone(),
        input_schema: serde_json::Value::Null,
        output_schema: None,
        category: record.category,
        access: Some(record.access),
        meta: false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_with_both_encodings() {
        let cost = Cost::of("hello world");
        assert_eq!(cost, Cost { o200k: 2, cl100k: 2 });
        assert!(Cost::of(&"lorem ipsum ".repeat(100)).o200k > 100);
        assert_eq!(Cost { o200k: 10, cl100k: 10 }.reduction_from(&Cost { o200k: 1000, cl100k: 1000 }), 99.0);
    }
}
