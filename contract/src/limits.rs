//! The limits on names and counts a plugin declares, chosen so a
//! model-facing tool name always fits.

/// Longest plugin name.
pub const MAX_PLUGIN_NAME: usize = 30;

/// Longest action name.
pub const MAX_ACTION_NAME: usize = 32;

/// Longest category tag.
pub const MAX_CATEGORY: usize = 32;

/// Longest one-line description of a plugin, and of an action's summary
/// (the first paragraph of its description).
pub const MAX_SUMMARY_CHARS: usize = 120;

/// The most actions one plugin may declare.
pub const MAX_ACTIONS: usize = 256;

/// Longest name a model is shown (providers accept `[A-Za-z0-9_-]{1,64}`).
pub const MAX_TOOL_NAME: usize = 64;

/// What joins a plugin name and an action name into a model-facing tool
/// name (`calc__evaluate`). Plugin and action names cannot contain it, so
/// the split is unambiguous, and `30 + 2 + 32` fits [`MAX_TOOL_NAME`].
pub const NAME_SEPARATOR: &str = "__";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_longest_names_fit_a_tool_name() {
        assert!(MAX_PLUGIN_NAME + NAME_SEPARATOR.len() + MAX_ACTION_NAME <= MAX_TOOL_NAME);
    }
}
