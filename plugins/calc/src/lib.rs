//! Quiver built-in tool plugin: evaluate arithmetic expressions.

use quiver_sdk::prelude::*;

/// Input of `evaluate`.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Evaluate {
    /// Expression such as `2 * (3 + 4) ^ 2` or `math::sqrt(2) / 3`. Supports + - * / % ^,
    /// comparisons, `&&`/`||`, `min`, `max`, `floor`, `round`, `math::*` functions.
    pub expression: String,
}

/// Output of `evaluate`.
#[derive(Serialize, JsonSchema)]
pub struct Evaluated {
    /// The result: a number, boolean or string.
    pub value: serde_json::Value,
}

/// Evaluate arithmetic expressions.
#[quiver_sdk::plugin(categories = ["math"])]
mod calc {
    use super::*;

    /// Calculate with numbers: add, subtract, times, divided by, powers, roots, comparisons, as one arithmetic expression.
    pub fn evaluate(input: Evaluate) -> Result<Evaluated, ToolError> {
        let value = evalexpr::eval(&input.expression).map_err(ToolError::invalid_input)?;
        let value = match value {
            evalexpr::Value::Int(i) => i.into(),
            evalexpr::Value::Float(f) => f.into(),
            evalexpr::Value::Boolean(b) => b.into(),
            evalexpr::Value::String(s) => s.into(),
            other => return Err(ToolError::invalid_input(format!("unsupported result: {other}"))),
        };
        Ok(Evaluated { value })
    }
}
