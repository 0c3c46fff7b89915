//! How a model reaches what it found: by name once it may call it, or
//! through the meta-tool of its kind. One place for the rule; the turn
//! rules word a refusal with it, `search_tools` its usage lines.

use crate::catalog::{Catalog, Category};

/// How a model reaches a tool it found (by search, in Tier 1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Reach {
    /// By its name, once it is unlocked (or resident, or flattened).
    Direct,
    /// It is a skill: read with `read_skill`.
    Skill,
    /// It is an entry of a saved `tools/list`: seen with `mcp` `discover`,
    /// never called.
    Saved,
}

/// How a model reaches what it found of `category` from `origin` (a
/// search hit) in `catalog`.
pub(crate) fn reach(catalog: &Catalog, category: Category, origin: &str) -> Reach {
    match category {
        Category::Skill => Reach::Skill,
        Category::Mcp if !catalog.mcp_server(origin).is_some_and(|s| s.live) => Reach::Saved,
        _ => Reach::Direct,
    }
}

/// What a tool's kind needs before a model may call it by name.
pub(crate) fn not_active(category: Category) -> &'static str {
    match category {
        Category::Builtin => "load it first with request_tools (or find it with search_tools)",
        Category::Connector => "run it with the connector tool (`execute`), or unlock it with search_tools",
        Category::Database => "use it through the database tool",
        Category::Mcp => "use it through the mcp tool",
        Category::Skill => "read it with read_skill",
    }
}
