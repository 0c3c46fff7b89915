//! The meta-tools: each carries the Tier-1 stubs of one kind in its
//! description and returns Tier 2 (schemas, bodies, results) as the
//! result of a call, so the schemas enter the conversation only when asked
//! for, and the tool list itself never changes.
//!
//! A meta-tool is one file: a [`MetaTool`](tool::MetaTool) impl (its typed arguments, its
//! Tier-1 lines, what a call does) plus one line in [`ALL`]. Everything
//! else comes from the trait: whether it is offered (the policy's mode for
//! its category), its definition (purpose, stub lines, argument schema
//! derived with schemars plus the `enum` of valid names), its Tier-1
//! section, and the parsing of a call's arguments.

pub(crate) mod call_tool;
mod connector;
mod database;
pub(crate) mod fold;
pub(crate) mod line;
mod mcp;
mod read_skill;
mod request_tools;
mod search_tools;
mod tool;

use std::marker::PhantomData;

pub use call_tool::CALL_TOOL;
pub(crate) use line::Line;
use tool::Meta;
pub(crate) use tool::{CallContext, Offered, View, args_schema, to_value};

/// Every meta-tool, in the order they are offered (and their sections shown).
pub(crate) const ALL: &[&dyn Offered] = &[
    &Meta::<read_skill::ReadSkill>(PhantomData),
    &Meta::<connector::Connector>(PhantomData),
    &Meta::<database::Database>(PhantomData),
    &Meta::<mcp::Mcp>(PhantomData),
    &Meta::<request_tools::RequestTools>(PhantomData),
    &Meta::<search_tools::SearchTools>(PhantomData),
];

/// The meta-tool called `name`.
pub(crate) fn find(name: &str) -> Option<&'static dyn Offered> {
    ALL.iter().copied().find(|m| m.name() == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_meta_tool_has_a_distinct_name() {
        let names: std::collections::BTreeSet<&str> = ALL.iter().map(|m| m.name()).collect();
        assert_eq!(names.len(), ALL.len());
    }
}
