//! A call's arguments checked against the input schema the server listed,
//! before anything is sent: a wrong argument gets the same model-facing
//! error a plugin's does (what is wrong, where, and the schema), not the
//! server's own text. A schema is compiled once per server, tool and
//! schema, with a pattern engine that cannot backtrack (an upstream's
//! patterns are outside text). A schema that does not compile (a remote
//! `$ref`, a look-around in a pattern) leaves the call unchecked, as the
//! server still checks it; that is logged once.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use jsonschema::Validator;
use serde_json::Value;

/// The compiled input schemas of the tools called so far, by server and tool.
#[derive(Default)]
pub(crate) struct Checks(Mutex<HashMap<(String, String), Compiled>>);

/// One tool's schema, as compiled (none: it does not compile).
struct Compiled {
    schema: Value,
    validator: Option<Arc<Validator>>,
}

impl Checks {
    /// How `input` breaks the input schema `schema` of `tool` of `server`
    /// (empty: it fits, or the schema cannot be checked here).
    pub(crate) fn violations(&self, server: &str, tool: &str, schema: &Value, input: &Value) -> Vec<String> {
        match self.validator(server, tool, schema) {
            Some(validator) => crate::load::violations(&validator, input),
            None => Vec::new(),
        }
    }

    fn validator(&self, server: &str, tool: &str, schema: &Value) -> Option<Arc<Validator>> {
        let mut compiled = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        let key = (server.to_owned(), tool.to_owned());
        if let Some(known) = compiled.get(&key).filter(|c| &c.schema == schema) {
            return known.validator.clone();
        }
        let built = jsonschema::options().with_pattern_options(jsonschema::PatternOptions::regex()).build(schema);
        let validator = match built {
            Ok(validator) => Some(Arc::new(validator)),
            Err(error) => {
                let reason = crate::catalog::shown::shown(&error.to_string());
                tracing::warn!(
                    %server, %tool, %reason,
                    "the tool's input schema does not compile here: its calls are sent unchecked (the server checks them)"
                );
                None
            }
        };
        compiled.insert(key, Compiled { schema: schema.clone(), validator: validator.clone() });
        validator
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn arguments_are_checked_against_the_listed_schema() {
        let checks = Checks::default();
        let schema =
            json!({"type": "object", "properties": {"timezone": {"type": "string"}}, "required": ["timezone"]});
        assert!(checks.violations("time", "now", &schema, &json!({"timezone": "UTC"})).is_empty());
        let wrong = checks.violations("time", "now", &schema, &json!({"timezone": 5}));
        assert_eq!(wrong.len(), 1);
        assert!(wrong[0].starts_with("at /timezone:"), "{wrong:?}");
        assert_eq!(checks.violations("time", "now", &schema, &json!({})).len(), 1);
        // A changed schema is compiled again.
        let open = json!({"type": "object"});
        assert!(checks.violations("time", "now", &open, &json!({})).is_empty());
    }

    #[test]
    fn a_schema_that_does_not_compile_here_leaves_the_call_to_the_server() {
        let checks = Checks::default();
        // A look-ahead: the backtracking-free engine refuses it.
        let schema = json!({"type": "object", "properties": {"id": {"type": "string", "pattern": "^(?=a)a+$"}}});
        assert!(checks.violations("s", "t", &schema, &json!({"id": "b"})).is_empty());
        assert!(checks.violations("s", "t", &schema, &json!({"id": 5})).is_empty(), "unchecked, not half-checked");
    }
}
