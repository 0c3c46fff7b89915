//! ⑥ Progressive disclosure: what a model sees before it asks for more.
//!
//! [`policy`] decides the mode of each kind; [`turn`] holds the rules of
//! one turn (what is resident, callable, flattened, offered); [`meta_tools`]
//! carry the Tier-1 stubs and return Tier 2 when called; [`tier1`] renders
//! the same stubs as text; [`search`] and [`select`] rank tools; [`tokens`]
//! counts what each mode costs; [`formats`] shapes definitions for MCP,
//! OpenAI and Anthropic; [`failures`] words a failed call for the model;
//! [`tables`] keeps what database adapters listed; `reach` says how a
//! model reaches what it found; [`budget`] folds Tier 1 to fit the
//! prompt's token budget, which [`o200k`] counts without tiktoken's table.

pub mod budget;
pub mod failures;
pub mod footprint;
pub mod formats;
pub(crate) mod meta_tools;
pub mod o200k;
pub mod policy;
pub(crate) mod reach;
pub mod search;
pub mod select;
pub mod strict;
pub mod tables;
pub(crate) mod tier1;
pub mod tokens;
pub mod turn;

pub use meta_tools::CALL_TOOL;
