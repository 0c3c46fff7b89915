//! What a session's context costs a model, for an operator to read (the
//! dashboard's footprint page): the Tier-1 text and its tokens, each
//! meta-tool's fixed part, and beside them the flat cost of every tool,
//! per tool and per resource, with the saving as one number.
//!
//! Tools whose schema is not known without loading their plugin (or
//! listing their server) are counted as not known, never guessed; asked
//! to, the session loads them first.

use serde::Serialize;

use crate::catalog::{Category, ToolRecord};
use crate::disclosure::formats::ToolDef;
use crate::disclosure::tokens::{Cost, TokenReport, flat};

/// A session's context footprint.
#[derive(Debug, Clone, Serialize)]
pub struct Footprint {
    /// The Tier-1 text, exactly as a model gets it.
    pub tier1: String,
    /// Its tokens.
    pub tier1_tokens: Cost,
    /// Every offered meta-tool definition, stubs included, and the
    /// instructions beside them: what progressive disclosure sends.
    pub progressive: Cost,
    /// Every tool flat with its schema, for the tools whose schema is known.
    pub full: Cost,
    /// Tools whose schema is not known yet (not in `full`).
    pub unknown_tools: usize,
    /// How much smaller `progressive` is than `full`, in percent (o200k).
    pub saving_percent: f64,
    /// The fixed part of each offered meta-tool (without its stubs).
    pub meta_tools: Vec<MetaCost>,
    /// One row per plugin, MCP server and (all) skills.
    pub resources: Vec<ResourceCost>,
    /// One row per tool.
    pub tools: Vec<ToolCost>,
    /// Whether every plugin was loaded (and every live server listed) to
    /// count this.
    pub loaded: bool,
}

/// A meta-tool's fixed cost.
#[derive(Debug, Clone, Serialize)]
pub struct MetaCost {
    /// Its name.
    pub name: String,
    /// Its text and argument schema, without the stubs.
    pub cost: Cost,
}

/// One resource's costs.
#[derive(Debug, Clone, Serialize)]
pub struct ResourceCost {
    /// The plugin or server, or `skills`.
    pub name: String,
    /// Its category.
    pub category: Category,
    /// How many tools it has.
    pub tools: usize,
    /// Its known tools flat.
    pub full: Cost,
    /// Its Tier-1 stub.
    pub progressive: Cost,
    /// Its tools whose schema is not known yet.
    pub unknown: usize,
}

/// One tool's flat cost.
#[derive(Debug, Clone, Serialize)]
pub struct ToolCost {
    /// Its model-facing name.
    pub name: String,
    /// Its plugin or server.
    pub origin: String,
    /// Its category.
    pub category: Category,
    /// Its definition flat; none while its schema is not known.
    pub full: Option<Cost>,
}

impl Footprint {
    /// The footprint of `tier1` and `report`, with each tool of `records`
    /// counted when `known` says its schema is known.
    pub(crate) fn of(tier1: String, report: TokenReport, records: &[(ToolRecord, bool)], loaded: bool) -> Footprint {
        let tools: Vec<ToolCost> = records
            .iter()
            .map(|(record, known)| ToolCost {
                name: record.name.clone(),
                origin: record.origin.clone(),
                category: record.category,
                full: known.then(|| Cost::of_def(&ToolDef::of(record).unwrap_or_else(|| flat(record)))),
            })
            .collect();
        let resources: Vec<ResourceCost> = report
            .rows
            .iter()
            .map(|row| {
                let of_row = || tools.iter().filter(|t| t.origin == row.name && t.category != Category::Skill);
                let (full, unknown) = if row.category == Category::Skill {
                    (row.full, 0)
                } else {
                    (sum(of_row().filter_map(|t| t.full)), of_row().filter(|t| t.full.is_none()).count())
                };
                ResourceCost {
                    name: row.name.clone(),
                    category: row.category,
                    tools: row.tools,
                    full,
                    progressive: row.progressive,
                    unknown,
                }
            })
            .collect();
        let full = sum(resources.iter().map(|r| r.full));
        Footprint {
            tier1_tokens: Cost::of(&tier1),
            tier1,
            progressive: report.progressive,
            saving_percent: report.progressive.reduction_from(&full),
            full,
            unknown_tools: tools.iter().filter(|t| t.full.is_none()).count(),
            meta_tools: report.overhead.into_iter().map(|(name, cost)| MetaCost { name, cost }).collect(),
            resources,
            tools,
            loaded,
        }
    }
}

fn sum(costs: impl Iterator<Item = Cost>) -> Cost {
    costs.fold(Cost::default(), |mut acc, c| {
        acc += c;
        acc
    })
}
