//! The content-addressed store of pulled components, under the cache
//! folder (`CACHE/oci`):
//!
//! ```text
//! manifests/HEX.json          the artifact's manifest, named by its SHA-256
//! sha256/HEX.wasm             a component, named by its SHA-256
//! sha256/HEX.policy.yaml      the policy layer its artifact carried (a request)
//! signatures/HEX.json         the cosign signature that verified the manifest HEX
//! ```
//!
//! Every file is written whole and renamed into place, so a reader sees
//! nothing or all of it; a manifest is written last, so a stored manifest
//! means its component is there. Names are checked on every read: a file
//! whose bytes are not what its name says is not served (the scan compares
//! the component's digest again when it reads it).

use std::io::Write;
use std::path::{Path, PathBuf};

use super::layout::{Artifact, MAX_DOCUMENT_BYTES};
use super::signature::Proof;

/// A component in the store, ready to be listed like a folder plugin.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stored {
    /// The manifest's digest (`sha256:…`).
    pub manifest: String,
    /// The component file.
    pub path: PathBuf,
    /// The SHA-256 its bytes must have.
    pub digest: [u8; 32],
    /// Its size in bytes.
    pub size: u64,
}

/// The store's folder.
#[derive(Debug, Clone)]
pub struct Store {
    root: PathBuf,
}

/// The hex part of a `sha256:` digest.
fn hex_of(digest: &str) -> &str {
    digest.strip_prefix("sha256:").unwrap_or(digest)
}

impl Store {
    /// The store under `root` (created when something is first stored).
    pub fn new(root: PathBuf) -> Store {
        Store { root }
    }

    /// Its folder.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Where the component of digest `digest` is kept.
    pub fn component_path(&self, digest: &str) -> PathBuf {
        self.root.join("sha256").join(format!("{}.wasm", hex_of(digest)))
    }

    fn manifest_path(&self, digest: &str) -> PathBuf {
        self.root.join("manifests").join(format!("{}.json", hex_of(digest)))
    }

    /// The component of the artifact whose manifest has digest `manifest`,
    /// if the store holds both and the manifest is what its name says.
    pub fn stored(&self, manifest: &str, max_component: u64) -> Option<Stored> {
        let bytes = self.manifest(manifest)?;
        let artifact = Artifact::read(&bytes, max_component).ok()?;
        let component = self.component_path(&artifact.component.digest);
        let size = std::fs::metadata(&component).ok().filter(|m| m.is_file())?.len();
        (size == artifact.component.size).then(|| Stored {
            manifest: manifest.to_owned(),
            path: component,
            digest: sha256_of(&artifact.component.digest),
            size,
        })
    }

    /// The stored manifest of digest `digest`, if it is what its name says.
    pub fn manifest(&self, digest: &str) -> Option<Vec<u8>> {
        let path = self.manifest_path(digest);
        let bytes = std::fs::read(&path).ok().filter(|b| b.len() as u64 <= MAX_DOCUMENT_BYTES)?;
        if hex::encode(crate::load::origin::digest(&bytes)) != hex_of(digest) {
            tracing::warn!(path = %path.display(), "a stored manifest is not what its name says; pulling it again");
            return None;
        }
        Some(bytes)
    }

    /// Keep `bytes` as the blob of digest `digest` (already checked), of
    /// kind `extension` (`wasm`, `policy.yaml`), named after `name`.
    pub fn put_blob(&self, name: &str, extension: &str, bytes: &[u8]) -> std::io::Result<PathBuf> {
        let path = self.root.join("sha256").join(format!("{}.{extension}", hex_of(name)));
        write_whole(&path, bytes)?;
        Ok(path)
    }

    /// The signature verified when the artifact of manifest `digest` was pulled.
    pub fn proof(&self, digest: &str) -> Option<Proof> {
        let bytes = std::fs::read(self.proof_path(digest)).ok()?;
        serde_json::from_slice(&bytes).ok()
    }

    /// Keep the verified signature of the artifact of manifest `digest`.
    pub fn put_proof(&self, digest: &str, proof: &Proof) -> std::io::Result<()> {
        write_whole(&self.proof_path(digest), &serde_json::to_vec(proof).map_err(std::io::Error::other)?)
    }

    fn proof_path(&self, digest: &str) -> PathBuf {
        self.root.join("signatures").join(format!("{}.json", hex_of(digest)))
    }

    /// Remove every artifact but those whose manifests are `keep`: their
    /// manifests and signatures, and the components and policies no kept
    /// artifact names. Only files named as the store names them are
    /// touched; manifests go first, so an artifact is never found half gone.
    pub fn collect(&self, keep: &[String], max_component: u64) -> std::io::Result<Collected> {
        let kept: std::collections::HashSet<&str> = keep.iter().map(|d| hex_of(d)).collect();
        let components: std::collections::HashSet<String> = keep
            .iter()
            .filter_map(|d| Artifact::read(&self.manifest(d)?, max_component).ok())
            .map(|a| hex_of(&a.component.digest).to_owned())
            .collect();
        let mut collected = Collected::default();
        for (folder, suffixes) in
            [("manifests", &[".json"][..]), ("signatures", &[".json"]), ("sha256", &[".wasm", ".policy.yaml"])]
        {
            let entries = match std::fs::read_dir(self.root.join(folder)) {
                Ok(entries) => entries,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(e) => return Err(e),
            };
            for entry in entries {
                let entry = entry?;
                let name = entry.file_name().to_string_lossy().into_owned();
                let Some(hex) = suffixes.iter().find_map(|s| name.strip_suffix(s)).filter(|h| is_hex_name(h)) else {
                    continue;
                };
                let keep = if folder == "sha256" { components.contains(hex) } else { kept.contains(hex) };
                if keep {
                    continue;
                }
                let bytes = entry.metadata()?.len();
                std::fs::remove_file(entry.path())?;
                if folder == "manifests" {
                    collected.artifacts.push(format!("sha256:{hex}"));
                }
                (collected.files, collected.bytes) = (collected.files + 1, collected.bytes + bytes);
            }
        }
        collected.artifacts.sort();
        Ok(collected)
    }

    /// Keep the manifest `bytes` of digest `digest` (already checked):
    /// the artifact is stored from now on.
    pub fn put_manifest(&self, digest: &str, bytes: &[u8]) -> std::io::Result<()> {
        write_whole(&self.manifest_path(digest), bytes)
    }
}

/// What [`Store::collect`] removed.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct Collected {
    /// The manifests of the artifacts removed (`sha256:…`).
    pub artifacts: Vec<String>,
    /// Files removed (manifests, signatures, components, policies).
    pub files: usize,
    /// Their bytes.
    pub bytes: u64,
}

/// Whether `name` is 64 lowercase hex digits (as the store names files).
fn is_hex_name(name: &str) -> bool {
    name.len() == 64 && name.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// The 32 bytes of a checked `sha256:` digest (zeros if it is not one:
/// a digest nothing has).
pub fn sha256_of(digest: &str) -> [u8; 32] {
    let mut out = [0u8; 32];
    if hex::decode_to_slice(hex_of(digest), &mut out).is_err() {
        return [0u8; 32];
    }
    out
}

/// Write `bytes` to `path` whole: to a temporary file beside it, synced,
/// then renamed over it.
fn write_whole(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let folder = path.parent().expect("store paths have a parent");
    std::fs::create_dir_all(folder)?;
    let mut file = tempfile::NamedTempFile::new_in(folder)?;
    file.write_all(bytes)?;
    file.as_file().sync_all()?;
    file.persist(path).map_err(|e| e.error)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load::oci::layout::{MANIFEST, WASM_CONFIG, WASM_LAYER};
    use crate::load::origin::digest;

    #[test]
    fn a_stored_artifact_is_found_by_its_manifest_and_a_forged_one_is_not() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::new(dir.path().to_owned());
        let component = b"\0asm\x0d\0\x01\0".to_vec();
        let layer = format!("sha256:{}", hex::encode(digest(&component)));
        let manifest = serde_json::to_vec(&serde_json::json!({
            "schemaVersion": 2, "mediaType": MANIFEST,
            "config": {"mediaType": WASM_CONFIG, "digest": format!("sha256:{}", "0".repeat(64)), "size": 2},
            "layers": [{"mediaType": WASM_LAYER, "digest": layer, "size": component.len()}],
        }))
        .unwrap();
        let name = format!("sha256:{}", hex::encode(digest(&manifest)));
        assert_eq!(store.stored(&name, 1 << 20), None);
        store.put_blob(&layer, "wasm", &component).unwrap();
        store.put_manifest(&name, &manifest).unwrap();
        let stored = store.stored(&name, 1 << 20).unwrap();
        assert_eq!((stored.digest, stored.size), (digest(&component), 8));
        assert_eq!(stored.path, store.component_path(&layer));

        // Collecting keeps what is kept, and the components they name;
        // files it did not name are not its own, and stay.
        std::fs::write(store.root().join("sha256/notes.txt"), b"operator's").unwrap();
        assert_eq!(store.collect(std::slice::from_ref(&name), 1 << 20).unwrap(), Collected::default());
        assert!(store.stored(&name, 1 << 20).is_some());
        let collected = store.collect(&[], 1 << 20).unwrap();
        assert_eq!((collected.artifacts, collected.files), (vec![name.clone()], 2));
        assert_eq!(store.stored(&name, 1 << 20), None);
        assert!(store.root().join("sha256/notes.txt").exists());
        store.put_blob(&layer, "wasm", &component).unwrap();
        store.put_manifest(&name, &manifest).unwrap();

        // A manifest rewritten in place is not the one its name says.
        std::fs::write(store.manifest_path(&name), [&manifest[..], b" "].concat()).unwrap();
        assert_eq!(store.stored(&name, 1 << 20), None);
    }
}
