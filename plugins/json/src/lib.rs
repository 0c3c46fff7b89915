//! Quiver built-in tool plugin: jq queries (with jaq) and formatting of JSON.

mod jq;
mod prelude;

use quiver_sdk::prelude::*;

pub use jq::{Json, Query, QueryResult, run_jq};
pub use prelude::{Prelude, prelude};

fn default_indent() -> u8 {
    2
}

/// How to lay out JSON text.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Copy, Default, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum Style {
    /// Indented, one member per line.
    #[default]
    Pretty,
    /// No whitespace at all.
    Minify,
}

/// Input of `format`.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Format {
    /// JSON text to reformat, e.g. `{"b":1,"a":[1,2]}`.
    pub json: String,
    /// Layout.
    #[serde(default)]
    pub style: Style,
    /// Spaces per indentation level for `pretty`.
    #[serde(default = "default_indent")]
    #[schemars(range(max = 8))]
    pub indent: u8,
    /// Sort object keys alphabetically at every level (otherwise keep the input order).
    #[serde(default)]
    pub sort_keys: bool,
}

/// Reformatted JSON.
#[derive(Serialize, JsonSchema)]
pub struct Formatted {
    /// The JSON text.
    pub json: String,
}

/// Reformat JSON text, keeping the order of object keys unless `sort_keys`.
pub fn format_json(text: &str, style: Style, indent: usize, sort_keys: bool) -> Result<String, ToolError> {
    // serde_json checks strict JSON and says where it is wrong; jaq's reader keeps the key
    // order and the exact text of numbers, and also accepts NaN and `#` comments.
    serde_json::from_str::<serde::de::IgnoredAny>(text)
        .map_err(|e| ToolError::invalid_input(format!("not valid JSON: {e}")))?;
    let value = jaq_json::read::parse_single(text.as_bytes())
        .map_err(|e| ToolError::invalid_input(format!("not valid JSON: {e}")))?;
    let pp = jaq_json::write::Pp {
        indent: (style == Style::Pretty).then(|| " ".repeat(indent)),
        sort_keys,
        sep_space: style == Style::Pretty,
        ..Default::default()
    };
    let mut out = Vec::new();
    jaq_json::write::write(&mut out, &pp, 0, &value).map_err(ToolError::failed)?;
    String::from_utf8(out).map_err(ToolError::failed)
}

/// Query JSON with jq filters; pretty-print, minify or sort the keys of JSON text.
#[quiver_sdk::plugin(categories = ["data"])]
mod json {
    use super::*;

    /// Run a jq filter over a JSON value and return every output.
    ///
    /// Uses jaq, a jq implementation: paths, `select`, `map`, `group_by`, `to_entries`,
    /// string interpolation, `@base64`, `test`/`capture` regexes, dates, `reduce`, `def` all work.
    pub fn query(input: Query) -> Result<QueryResult, ToolError> {
        let max = input.max_outputs.clamp(1, 100_000) as usize;
        run_jq(&input.filter, input.input, input.args, max)
    }

    /// Pretty-print or minify JSON text, optionally sorting object keys.
    pub fn format(input: Format) -> Result<Formatted, ToolError> {
        let indent = input.indent.min(8) as usize;
        format_json(&input.json, input.style, indent, input.sort_keys).map(|json| Formatted { json })
    }

    /// Parse jq's standard library once, when the host pre-initialises the plugin
    /// (otherwise each call's fresh instance would parse it again).
    #[init]
    fn parse_prelude() {
        prelude();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats() {
        let text = r#"{"b":1,"a":[1,2]}"#;
        assert_eq!(format_json(text, Style::Minify, 2, true).unwrap(), r#"{"a":[1,2],"b":1}"#);
        assert_eq!(format_json("[1]", Style::Pretty, 4, false).unwrap(), "[\n    1\n]");
        let kept = format_json(r#"{"b": 1.50, "a": null}"#, Style::Minify, 2, false).unwrap();
        assert_eq!(kept, r#"{"b":1.50,"a":null}"#);
        assert!(format_json("{nope}", Style::Minify, 2, false).is_err());
    }
}
