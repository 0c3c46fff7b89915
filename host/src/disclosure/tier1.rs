//! The Tier-1 prompt: every plugin as a stub, nothing compiled.
//!
//! Deterministic (sorted by plugin, actions in the author's order) so the
//! text is byte-identical across runs and provider prompt caches hit.

use std::fmt::Write;

use crate::catalog::Catalog;

/// Render the Tier-1 text of `catalog`.
pub fn render(catalog: &Catalog) -> String {
    let tools: usize = catalog.plugins().map(|p| p.stub().actions.len()).sum();
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{} plugins, {tools} tools. Each entry: plugin (kind) - purpose [categories], then its tools. \
         Full input schemas are loaded on request.",
        catalog.len()
    );
    for plugin in catalog.plugins() {
        let stub = plugin.stub();
        let _ = write!(out, "\n{} ({}) - {}", stub.name, stub.kind, stub.description);
        if !stub.categories.is_empty() {
            let _ = write!(out, " [{}]", stub.categories.join(", "));
        }
        out.push('\n');
        for action in &stub.actions {
            let _ = writeln!(out, "  {}__{}: {}", stub.name, action.name, action.summary);
        }
    }
    out
}
