//! Redaction of parameters before they are written to the audit log: keys
//! that name a credential, and any value the host holds as a secret.

use serde_json::Value;

use crate::sandbox::secrets::Secret;

/// What replaces a redacted value.
pub const REDACTED: &str = "[redacted]";

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
/// one of `secrets` in a string, replaced by [`REDACTED`].
pub fn redact(value: &Value, secrets: &[Secret]) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| (k.clone(), if secret_key(k) { Value::from(REDACTED) } else { redact(v, secrets) }))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(|v| redact(v, secrets)).collect()),
        Value::String(text) => Value::String(scrub(text, secrets)),
        other => other.clone(),
    }
}

/// `text` with every occurrence of one of `secrets` replaced.
pub fn scrub(text: &str, secrets: &[Secret]) -> String {
    let mut text = text.to_owned();
    for secret in secrets {
        let value = secret.expose();
        // Short values would redact ordinary words; a credential is longer.
        if value.len() >= 4 && text.contains(value) {
            text = text.replace(value, REDACTED);
        }
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_are_redacted_by_key_and_by_value() {
        let secrets = [Secret::new("hunter2-long".into())];
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
