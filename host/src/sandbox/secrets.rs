//! Secrets the host holds for plugins (credentials for connectors and
//! databases): read from the environment or a file, never written in a
//! config file that lands in a repository, and never shown.
//!
//! A [`Secret`] has no `Display` and its `Debug` prints no part of the
//! value, so it cannot reach a log line, an error message or an audit
//! record by accident; only the host's own capability code can read it
//! ([`Secret::expose`] is crate-private), to inject it where the guest
//! cannot see it. The memory is wiped when it is dropped (zeroize).
//!
//! [`Redaction`] is the host's one way of taking secret values out of text
//! that leaves it: the audit log's parameters and the responses a
//! connector's API sends back (which may echo the credential).

use std::borrow::Cow;
use std::ops::Range;
use std::path::Path;
use std::sync::Arc;

use aho_corasick::{AhoCorasick, MatchKind};

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

/// Whether `a` is `b` (a presented token and the one held), compared in
/// time that does not depend on where they differ.
pub fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// What replaces a redacted value.
pub const REDACTED: &str = "[redacted]";

/// Shorter values are not redacted: they would redact ordinary words, and
/// a credential is longer.
const SHORTEST: usize = 4;

/// Every occurrence of some secret values, found in one pass (the longest
/// one where two start at the same place) and replaced by [`REDACTED`].
#[derive(Clone, Default)]
pub struct Redaction {
    matcher: Option<Arc<AhoCorasick>>,
    longest: usize,
}

impl std::fmt::Debug for Redaction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Redaction(<redacted>)")
    }
}

impl Redaction {
    /// A redaction of `secrets` (values shorter than four bytes are left).
    pub fn new<'a>(secrets: impl IntoIterator<Item = &'a Secret>) -> Redaction {
        let values: Vec<&str> = secrets.into_iter().map(Secret::expose).filter(|v| v.len() >= SHORTEST).collect();
        let longest = values.iter().map(|v| v.len()).max().unwrap_or(0);
        let matcher = match values.is_empty() {
            true => None,
            false => AhoCorasick::builder().match_kind(MatchKind::LeftmostLongest).build(&values).ok().map(Arc::new),
        };
        Redaction { longest: if matcher.is_some() { longest } else { 0 }, matcher }
    }

    /// Whether it redacts nothing.
    pub fn is_empty(&self) -> bool {
        self.matcher.is_none()
    }

    /// `text` with every secret replaced; borrowed when it holds none.
    pub fn scrub<'t>(&self, text: &'t str) -> Cow<'t, str> {
        match &self.matcher {
            Some(matcher) if matcher.is_match(text) => {
                Cow::Owned(matcher.replace_all(text, &vec![REDACTED; matcher.patterns_len()]))
            }
            _ => Cow::Borrowed(text),
        }
    }

    /// `bytes` with every secret replaced; borrowed when they hold none.
    pub(crate) fn scrub_bytes<'b>(&self, bytes: &'b [u8]) -> Cow<'b, [u8]> {
        match &self.matcher {
            Some(matcher) if matcher.is_match(bytes) => {
                Cow::Owned(matcher.replace_all_bytes(bytes, &vec![REDACTED; matcher.patterns_len()]))
            }
            _ => Cow::Borrowed(bytes),
        }
    }

    /// Where the secrets occur in `bytes`, in order, never overlapping.
    pub(crate) fn occurrences<'b>(&'b self, bytes: &'b [u8]) -> impl Iterator<Item = Range<usize>> + 'b {
        self.matcher.iter().flat_map(move |matcher| matcher.find_iter(bytes).map(|m| m.range()))
    }

    /// The length of the longest secret, in bytes (0 when empty).
    pub(crate) fn longest(&self) -> usize {
        self.longest
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_compare_whole() {
        assert!(constant_time_eq(b"secret", b"secret"));
        assert!(!constant_time_eq(b"secret", b"secreT"));
        assert!(!constant_time_eq(b"secret", b"secret2"));
    }

    #[test]
    fn a_secret_never_prints_its_value() {
        let secret = Secret::new("hunter2".into());
        assert_eq!(format!("{secret:?}"), "Secret(<redacted>)");
        assert_eq!(format!("{:?}", Some(secret.clone())), "Some(Secret(<redacted>))");
        assert_eq!(secret.expose(), "hunter2");
    }

    #[test]
    fn a_redaction_replaces_every_occurrence_of_every_secret() {
        let secrets = [Secret::new("hunter2-long".into()), Secret::new("hunter2".into()), Secret::new("abc".into())];
        let redaction = Redaction::new(&secrets);
        assert_eq!(redaction.scrub("a hunter2-long, a hunter2, an abc"), "a [redacted], a [redacted], an abc");
        assert!(matches!(redaction.scrub("nothing here"), Cow::Borrowed(_)));
        assert_eq!(&*redaction.scrub_bytes(b"xhunter2x"), b"x[redacted]x");
        assert_eq!(redaction.longest(), 12);
        assert_eq!(format!("{redaction:?}"), "Redaction(<redacted>)");
        assert!(Redaction::new(&[Secret::new("abc".into())]).is_empty());
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
