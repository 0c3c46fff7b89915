//! Secrets the host holds for plugins (credentials for connectors and
//! databases): read from the environment or a file, never written in a
//! config file that lands in a repository, and never shown.
//!
//! A [`Secret`] has no `Display` and its `Debug` prints no part of the
//! value, so it cannot reach a log line, an error message or an audit
//! record by accident; only the host's own capability code can read it
//! ([`Secret::expose`] is crate-private), to inject it where the guest
//! cannot see it. The memory is wiped when it is dropped (zeroize).

use std::path::Path;

use zeroize::Zeroizing;

use crate::error::{Error, Result};

/// A credential. See the module documentation.
#[derive(Clone)]
pub struct Secret(Zeroizing<String>);

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secret(<redacted>)")
    }
}

/// Equal values (for telling whether a plugin's settings changed).
impl PartialEq for Secret {
    fn eq(&self, other: &Secret) -> bool {
        *self.0 == *other.0
    }
}

impl Secret {
    /// A secret holding `value` (for embedders that fetch secrets themselves).
    pub fn new(value: String) -> Secret {
        Secret(Zeroizing::new(value))
    }

    /// The value of environment variable `var`; an error naming `var` (and
    /// `used_by`, what needs it) if it is unset or empty.
    pub fn from_env(var: &str, used_by: &str) -> Result<Secret> {
        match std::env::var(var) {
            Ok(value) if !value.is_empty() => Ok(Secret::new(value)),
            Ok(_) => Err(Error::config(used_by, format!("environment variable `{var}` is empty"))),
            Err(_) => Err(Error::config(used_by, format!("environment variable `{var}` is not set"))),
        }
    }

    /// The contents of the file at `path`, without a trailing newline; an
    /// error naming the file if it cannot be read. The error never contains
    /// any of the file's contents.
    pub fn from_file(path: &Path, used_by: &str) -> Result<Secret> {
        let text = Zeroizing::new(std::fs::read_to_string(path).map_err(|e| {
            Error::config(used_by, format!("cannot read the secret file {}: {}", path.display(), e.kind()))
        })?);
        let value = text.trim_end_matches(['\r', '\n']);
        if value.is_empty() {
            return Err(Error::config(used_by, format!("the secret file {} is empty", path.display())));
        }
        Ok(Secret::new(value.to_owned()))
    }

    /// The value, for the host's capability code to inject (never into
    /// guest memory, logs or errors).
    pub(crate) fn expose(&self) -> &str {
        &self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_secret_never_prints_its_value() {
        let secret = Secret::new("hunter2".into());
        assert_eq!(format!("{secret:?}"), "Secret(<redacted>)");
        assert_eq!(format!("{:?}", Some(secret.clone())), "Some(Secret(<redacted>))");
        assert_eq!(secret.expose(), "hunter2");
    }

    #[test]
    fn missing_secrets_name_where_they_were_looked_for() {
        let error = Secret::from_env("QUIVER_TEST_SURELY_UNSET_VARIABLE", "[connectors.books]").unwrap_err();
        assert!(error.to_string().contains("QUIVER_TEST_SURELY_UNSET_VARIABLE"), "{error}");
        assert!(error.to_string().contains("[connectors.books]"), "{error}");

        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("token");
        let error = Secret::from_file(&path, "[connectors.books]").unwrap_err();
        assert!(error.to_string().contains("token"), "{error}");
        std::fs::write(&path, "s3cret\n").unwrap();
        let secret = Secret::from_file(&path, "[connectors.books]").unwrap();
        assert_eq!(secret.expose(), "s3cret");
    }
}
