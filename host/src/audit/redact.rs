//! Redaction of parameters before they are written to the audit log: keys
//! that name a credential, and any value the host holds as a secret.

use serde_json::Value;

pub use crate::sandbox::secrets::REDACTED;
use crate::sandbox::secrets::Redaction;

/// Parts of a key (case-insensitive) that mark its value as a credential.
const SECRET_KEYS: &[&str] = &[
    "password",
    "passwd",
    "passphrase",
    "token",
    "secret",
    "authorization",
    "api_key",
    "apikey",
    "access_key",
    "private_key",
    "signing_key",
    "hmac_key",
    "credential",
    "cookie",
];

/// Whether the value of `key` is a credential.
pub fn secret_key(key: &str) -> bool {
    let key = key.to_ascii_lowercase().replace('-', "_");
    SECRET_KEYS.iter().any(|part| key.contains(part))
}

/// `value` with every credential-named key's value, and every occurrence of
/// a secret of `redaction` in a string, replaced by [`REDACTED`].
pub fn redact(value: &Value, redaction: &Redaction) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| (k.clone(), if secret_key(k) { Value::from(REDACTED) } else { redact(v, redaction) }))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(|v| redact(v, redaction)).collect()),
        Value::String(text) => Value::String(redaction.scrub(text).into_owned()),
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_are_redacted_by_key_and_by_value() {
        let secrets = Redaction::new(&[crate::sandbox::secrets::Secret::new("hunter2-long".into())]);
        let params = serde_json::json!({
            "query": "select 1 -- hunter2-long",
            "API-Key": "abc",
            "nested": {"Authorization": "Bearer x", "list": ["hunter2-long", 3]},
            "limit": 5,
        });
        let redacted = redact(&params, &secrets);
        assert_eq!(redacted["query"], "select 1 -- [redacted]");
        assert_eq!(redacted["API-Key"], REDACTED);
        assert_eq!(redacted["nested"]["Authorization"], REDACTED);
        assert_eq!(redacted["nested"]["list"][0], REDACTED);
        assert_eq!(redacted["limit"], 5);
    }
}
