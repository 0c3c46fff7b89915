//! The `.cwasm` cache: compiled components on disk, keyed by the content
//! hash of the component and the engine's compatibility hash.
//!
//! A file holds a magic tag, the SHA-256 of the artifact and the artifact
//! itself. It is written to a temporary file, synced and renamed into place,
//! so readers see a whole file or none. On read the digest is checked before
//! wasmtime sees the bytes: a truncated, corrupt or stale entry is a miss
//! (and is rewritten), never a crash.

use std::hash::{Hash, Hasher};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use sha2::{Digest, Sha256};
use wasmtime::Engine;
use wasmtime::component::Component;

/// Tag at the start of every cache file (format version 1).
const MAGIC: &[u8; 8] = b"QVRCWSM1";
const HEADER: usize = MAGIC.len() + 32;

/// How a component was obtained.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// Loaded from a valid cache entry.
    CacheHit,
    /// Compiled (and stored, if a cache directory is set).
    Compiled,
}

/// Where compiled components are kept between runs.
#[derive(Debug, Clone)]
pub struct ArtifactCache {
    dir: Option<PathBuf>,
    engine_key: String,
}

impl ArtifactCache {
    /// A cache in `dir` (created on first write), or no cache at all.
    pub fn new(engine: &Engine, dir: Option<PathBuf>) -> Self {
        let mut hasher = Sha256Hasher(Sha256::new());
        engine.precompile_compatibility_hash().hash(&mut hasher);
        let engine_key = hex::encode(&hasher.0.finalize()[..8]);
        Self { dir, engine_key }
    }

    /// The cache directory, if any.
    pub fn dir(&self) -> Option<&Path> {
        self.dir.as_deref()
    }

    /// The file that holds the artifact of `wasm`.
    pub fn path_for(&self, wasm: &[u8]) -> Option<PathBuf> {
        let digest = hex::encode(Sha256::digest(wasm));
        self.dir.as_ref().map(|d| d.join(format!("{digest}-{}.cwasm", self.engine_key)))
    }

    /// Load the compiled form of `wasm` from the cache, or compile it (and
    /// store it). CPU-bound: call it from a blocking thread.
    pub fn load_or_compile(&self, engine: &Engine, wasm: &[u8]) -> wasmtime::Result<(Component, Source)> {
        let Some(path) = self.path_for(wasm) else {
            return Ok((Component::new(engine, wasm)?, Source::Compiled));
        };
        if let Some(component) = read_entry(engine, &path) {
            return Ok((component, Source::CacheHit));
        }
        let artifact = engine.precompile_component(wasm)?;
        if let Err(e) = write_entry(&path, &artifact) {
            tracing::warn!(path = %path.display(), error = %e, "cannot write the compile cache; continuing without it");
        }
        Ok((deserialize(engine, &artifact)?, Source::Compiled))
    }
}

fn read_entry(engine: &Engine, path: &Path) -> Option<Component> {
    let bytes = std::fs::read(path).ok()?;
    let valid = bytes.len() > HEADER
        && bytes.starts_with(MAGIC)
        && Sha256::digest(&bytes[HEADER..]).as_slice() == &bytes[MAGIC.len()..HEADER];
    if !valid {
        tracing::warn!(path = %path.display(), "corrupt compile-cache entry; recompiling");
        return None;
    }
    match deserialize(engine, &bytes[HEADER..]) {
        Ok(component) => Some(component),
        Err(e) => {
            tracing::warn!(path = %path.display(), error = %e, "unusable compile-cache entry; recompiling");
            None
        }
    }
}

#[allow(unsafe_code)]
fn deserialize(engine: &Engine, artifact: &[u8]) -> wasmtime::Result<Component> {
    // SAFETY: `artifact` was produced by `Engine::precompile_component` of an
    // engine with the same compatibility hash: either just now, or read from
    // a host-owned cache file whose SHA-256 we verified above. Plugins have
    // no access to the cache directory. wasmtime itself rejects artifacts of
    // another version or configuration.
    unsafe { Component::deserialize(engine, artifact) }
}

fn write_entry(path: &Path, artifact: &[u8]) -> std::io::Result<()> {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let dir = path.parent().expect("cache paths have a parent");
    std::fs::create_dir_all(dir)?;
    let tmp = dir.join(format!(
        ".{}.{}.{}.tmp",
        path.file_name().unwrap().to_string_lossy(),
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    ));
    let result = (|| {
        let mut file = std::fs::File::create(&tmp)?;
        file.write_all(MAGIC)?;
        file.write_all(&Sha256::digest(artifact))?;
        file.write_all(artifact)?;
        file.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

/// Feeds `Hash` output into SHA-256, so the key is stable across Rust releases.
struct Sha256Hasher(Sha256);

impl Hasher for Sha256Hasher {
    fn write(&mut self, bytes: &[u8]) {
        self.0.update(bytes);
    }

    fn finish(&self) -> u64 {
        0 // never used: only the SHA-256 digest matters
    }
}
