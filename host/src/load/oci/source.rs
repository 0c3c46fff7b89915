//! The `[[oci]]` entries of `quiver.toml`, their credentials, and the lock
//! file that pins each tag to one digest for every replica.
//!
//! ```toml
//! [[oci]]
//! ref = "ghcr.io/acme/weather@sha256:…"   # pinned: served as it is
//!
//! [[oci]]
//! ref = "127.0.0.1:5000/tools/calc:1.2"   # a tag: pinned by `quiver oci resolve`
//! insecure = true                         # plain HTTP (a registry on loopback)
//! username = "ci"                         # Basic credentials, the password
//! password_env = "REGISTRY_PASSWORD"      #   from the environment
//! # docker_config = "/run/secrets/config.json"  # or a docker config.json's `auths`
//! key = "keys/acme.pub"                   # served only if cosign-signed with this key
//! ```

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use base64::Engine as _;
use oci_client::Reference;
pub use oci_client::secrets::RegistryAuth;
use serde::{Deserialize, Serialize};

use super::layout::is_sha256;
use super::signature::PublicKey;
use crate::error::{Error, Result};

/// The lock file's name beside `quiver.toml` (`oci_lock` changes it).
pub const LOCK_FILE: &str = "quiver.lock";

/// One `[[oci]]` entry as written.
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct RawOci {
    /// `REGISTRY/REPOSITORY@sha256:…`, or `…:TAG` pinned by the lock file.
    #[serde(rename = "ref")]
    pub reference: String,
    /// Reach the registry over plain HTTP.
    #[serde(default)]
    pub insecure: bool,
    /// The user of Basic credentials (with `password_env`).
    pub username: Option<String>,
    /// The environment variable holding the password.
    pub password_env: Option<String>,
    /// A docker `config.json` whose `auths` entry for the registry is used.
    pub docker_config: Option<PathBuf>,
    /// A cosign public key (`cosign.pub`, ECDSA P-256): the artifact is
    /// served only with a signature that verifies with it.
    pub key: Option<PathBuf>,
}

/// An `[[oci]]` entry resolved: pinned to a digest, credentials read.
#[derive(Clone)]
pub struct OciSource {
    /// The reference as configured (what the status and errors name).
    pub written: String,
    /// The reference by digest: what is pulled.
    pub pinned: Reference,
    /// Plain HTTP.
    pub insecure: bool,
    /// How to authenticate.
    pub auth: RegistryAuth,
    /// The key its signature must verify with, when one is configured.
    pub key: Option<PublicKey>,
}

impl std::fmt::Debug for OciSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // RegistryAuth's own Debug hides the password.
        f.debug_struct("OciSource").field("pinned", &self.pinned.whole()).field("auth", &self.auth).finish()
    }
}

/// What `quiver oci resolve` wrote: each tag reference's digest.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct OciLock {
    /// Tag reference as configured → `sha256:…`.
    #[serde(default)]
    pub pins: BTreeMap<String, String>,
}

impl OciLock {
    /// The lock at `path`; none yet is an empty one.
    pub fn read(path: &Path) -> Result<OciLock> {
        let text = match std::fs::read_to_string(path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(OciLock::default()),
            Err(e) => return Err(Error::Io { path: path.display().to_string(), message: e.to_string() }),
        };
        OciLock::parse(&text, &path.display().to_string())
    }

    /// The lock file's `text`, read from `at`.
    pub fn parse(text: &str, at: &str) -> Result<OciLock> {
        let lock: OciLock = toml::from_str(text).map_err(|e| Error::config(at, e.to_string()))?;
        if let Some((tag, digest)) = lock.pins.iter().find(|(_, d)| !is_sha256(d)) {
            let message = format!("`{tag}` is pinned to `{digest}`, not sha256 and 64 hex digits");
            return Err(Error::config(at, message));
        }
        Ok(lock)
    }

    /// Write it to `path` (whole, then renamed over the old one).
    pub fn write(&self, path: &Path) -> Result<()> {
        let io = |e: std::io::Error| Error::Io { path: path.display().to_string(), message: e.to_string() };
        let body = toml::to_string(self).map_err(|e| Error::internal("oci lock", e))?;
        let text = format!(
            "# Written by `quiver oci resolve`: the digest each tag named. Share it with every replica.\n{body}"
        );
        let folder = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
        let mut file = tempfile::NamedTempFile::new_in(folder).map_err(io)?;
        std::io::Write::write_all(&mut file, text.as_bytes()).map_err(io)?;
        file.persist(path).map_err(|e| io(e.error))?;
        Ok(())
    }
}

impl RawOci {
    /// Its reference, parsed; `[[oci]] REF` errors otherwise.
    pub fn parsed(&self) -> Result<Reference> {
        let reference: Reference =
            self.reference.parse().map_err(|e| Error::config(self.section(), format!("not an OCI reference: {e}")))?;
        if let Some(digest) = reference.digest().filter(|d| !is_sha256(d)) {
            return Err(Error::config(self.section(), format!("digest `{digest}` is not sha256 and 64 hex digits")));
        }
        if self.password_env.is_some() != self.username.is_some() {
            return Err(Error::config(self.section(), "`username` and `password_env` go together"));
        }
        if self.password_env.is_some() && self.docker_config.is_some() {
            return Err(Error::config(self.section(), "set `password_env` or `docker_config`, not both"));
        }
        Ok(reference)
    }

    /// How the status and errors name it.
    pub fn section(&self) -> String {
        format!("[[oci]] {}", crate::contract::sanitize_cut(&self.reference, crate::contract::Shape::Line, 200))
    }

    /// Whether it names a tag (and no digest).
    pub fn is_tag(&self) -> bool {
        self.parsed().is_ok_and(|r| r.digest().is_none())
    }

    /// Pinned by its own digest, or by `lock`; its credentials read.
    pub fn resolve(&self, lock: &OciLock) -> Result<OciSource> {
        let reference = self.parsed()?;
        let pinned = match reference.digest() {
            Some(_) => reference.clone(),
            None => match lock.pins.get(&self.reference) {
                Some(digest) => reference.clone_with_digest(digest.clone()),
                None => {
                    return Err(Error::config(
                        self.section(),
                        "a tag is pinned only by `quiver oci resolve`, which writes the lock file the replicas share; run it",
                    ));
                }
            },
        };
        let key = match &self.key {
            Some(path) => {
                let text = std::fs::read_to_string(path)
                    .map_err(|e| Error::config(self.section(), format!("key {}: {e}", path.display())))?;
                let key = PublicKey::from_pem(&text)
                    .map_err(|m| Error::config(self.section(), format!("key {}: {m}", path.display())))?;
                Some(key)
            }
            None => None,
        };
        let auth = self.auth(&reference)?;
        Ok(OciSource { written: self.reference.clone(), pinned, insecure: self.insecure, auth, key })
    }

    /// The credentials for its registry.
    pub fn auth(&self, reference: &Reference) -> Result<RegistryAuth> {
        if let (Some(user), Some(var)) = (&self.username, &self.password_env) {
            let password = std::env::var(var).map_err(|_| {
                Error::config(self.section(), format!("the environment variable `{var}` (its password) is not set"))
            })?;
            return Ok(RegistryAuth::Basic(user.clone(), password));
        }
        match &self.docker_config {
            Some(path) => docker_auth(path, reference.resolve_registry()).map_err(|m| Error::config(self.section(), m)),
            None => Ok(RegistryAuth::Anonymous),
        }
    }
}

/// The `auths` entry of a docker `config.json` for `registry`.
fn docker_auth(path: &Path, registry: &str) -> std::result::Result<RegistryAuth, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("docker_config {}: {e}", path.display()))?;
    docker_auth_in(&text, &path.display().to_string(), registry)
}

/// The `auths` entry for `registry` of the docker `config.json` `text`
/// (read from `at`); an error never quotes the text, which holds secrets.
pub fn docker_auth_in(text: &str, at: &str, registry: &str) -> std::result::Result<RegistryAuth, String> {
    #[derive(Deserialize)]
    struct DockerConfig {
        #[serde(default)]
        auths: BTreeMap<String, DockerAuth>,
        #[serde(default, rename = "credsStore")]
        creds_store: Option<String>,
    }
    #[derive(Deserialize)]
    struct DockerAuth {
        auth: Option<String>,
        username: Option<String>,
        password: Option<String>,
    }
    // Never echo the file: it holds credentials.
    let config: DockerConfig = serde_json::from_str(text)
        .map_err(|e| format!("docker_config {at} is not a docker config.json (line {})", e.line()))?;
    let strip = |key: &str| {
        let key = key.trim_start_matches("https://").trim_start_matches("http://");
        key.split('/').next().unwrap_or(key).to_owned()
    };
    let Some(entry) = config.auths.iter().find(|(key, _)| strip(key) == registry).map(|(_, a)| a) else {
        let helper =
            config.creds_store.map(|s| format!(" (credential helpers such as `{s}` are not run)")).unwrap_or_default();
        return Err(format!("docker_config {at} has no `auths` entry for `{registry}`{helper}"));
    };
    if let (Some(user), Some(password)) = (&entry.username, &entry.password) {
        return Ok(RegistryAuth::Basic(user.clone(), password.clone()));
    }
    let decoded = entry
        .auth
        .as_deref()
        .and_then(|a| base64::engine::general_purpose::STANDARD.decode(a).ok())
        .and_then(|a| String::from_utf8(a).ok())
        .ok_or_else(|| format!("docker_config {at}: the `auths` entry for `{registry}` has no base64 `auth`"))?;
    let (user, password) = decoded
        .split_once(':')
        .ok_or_else(|| format!("docker_config {at}: the `auth` for `{registry}` is not user:password"))?;
    Ok(RegistryAuth::Basic(user.to_owned(), password.to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(text: &str) -> RawOci {
        toml::from_str(text).unwrap()
    }

    #[test]
    fn a_digest_pins_itself_and_a_tag_needs_the_lock() {
        let digest = format!("sha256:{}", "ab".repeat(32));
        let pinned = raw(&format!("ref = \"127.0.0.1:5000/tools/calc@{digest}\"\ninsecure = true"));
        let source = pinned.resolve(&OciLock::default()).unwrap();
        assert_eq!(source.pinned.digest(), Some(digest.as_str()));
        assert_eq!(source.pinned.registry(), "127.0.0.1:5000");

        let tag = raw("ref = \"127.0.0.1:5000/tools/calc:1.2\"");
        assert!(tag.is_tag());
        let error = tag.resolve(&OciLock::default()).unwrap_err().to_string();
        assert!(error.contains("quiver oci resolve"), "{error}");
        let lock = OciLock { pins: [(tag.reference.clone(), digest.clone())].into() };
        assert_eq!(tag.resolve(&lock).unwrap().pinned.digest(), Some(digest.as_str()));
    }

    #[test]
    fn bad_entries_say_what_is_wrong() {
        let error = |text: &str| raw(text).parsed().unwrap_err().to_string();
        assert!(error("ref = \"r/x@md5:00\"").contains("[[oci]] r/x@md5:00"));
        assert!(error("ref = \"r/x:1\"\nusername = \"u\"").contains("go together"));
        assert!(toml::from_str::<RawOci>("ref = \"r/x:1\"\npassword = \"p\"").is_err());
    }

    #[test]
    fn docker_config_credentials_are_read_and_never_echoed() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config.json");
        let auth = base64::engine::general_purpose::STANDARD.encode("ci:s3cret-pass");
        std::fs::write(&path, format!(r#"{{"auths":{{"https://127.0.0.1:5000/v1/":{{"auth":"{auth}"}}}}}}"#)).unwrap();
        assert_eq!(
            docker_auth(&path, "127.0.0.1:5000").unwrap(),
            RegistryAuth::Basic("ci".into(), "s3cret-pass".into())
        );
        let missing = docker_auth(&path, "ghcr.io").unwrap_err();
        assert!(missing.contains("no `auths` entry") && !missing.contains("s3cret"), "{missing}");
        std::fs::write(&path, "{\"auths\": s3cret-pass").unwrap();
        assert!(!docker_auth(&path, "ghcr.io").unwrap_err().contains("s3cret"));
    }

    #[test]
    fn the_lock_file_round_trips_and_refuses_what_is_not_a_digest() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(LOCK_FILE);
        assert_eq!(OciLock::read(&path).unwrap(), OciLock::default());
        let lock = OciLock { pins: [("r/x:1".to_owned(), format!("sha256:{}", "0".repeat(64)))].into() };
        lock.write(&path).unwrap();
        assert_eq!(OciLock::read(&path).unwrap(), lock);
        std::fs::write(&path, "[pins]\n\"r/x:1\" = \"latest\"\n").unwrap();
        assert!(OciLock::read(&path).unwrap_err().to_string().contains("not sha256"));
    }
}
