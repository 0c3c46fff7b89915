//! The `.cwasm` cache: compiled components on disk, keyed by the content
//! hash of the component and the engine's compatibility hash.
//!
//! A cache entry is native code the host will run, so an entry must prove
//! where it came from, not only that it is whole. Each file holds a magic
//! tag, an HMAC-SHA256 and the artifact; the HMAC is keyed with a random
//! per-installation key (`key` in the folder, created 0600) and signs the
//! digest of the component it was compiled from, the engine key and the
//! artifact's SHA-256. An entry copied from another component, forged without the
//! key, truncated or stale is a miss (and is rewritten), never run.
//!
//! The folder is created 0700. A folder owned by another user, or writable
//! by group or others, is refused at start-up: whoever can write it could
//! replace the key and the entries together.
//!
//! Entries are written to a temporary file, synced and renamed into place,
//! so readers see a whole file or none.
//!
//! Replicas share compiled components through `[cache]`: a `key_file`
//! (a Kubernetes Secret, say) holds the key instead of the folder's `key`,
//! and a `shared` folder (a volume mounted read-only) holds entries that
//! another host, signing with that key, wrote (`quiver precompile`). The
//! shared folder is read after `cache_dir` misses and never written: a
//! miss is compiled in memory (and kept in `cache_dir`, if there is one).
//! It is not checked for ownership or mode, as a mount rarely belongs to
//! the pod's user: its entries are trusted for the key alone, which
//! whoever can write the volume does not need to hold.

use std::hash::{Hash, Hasher};
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use ring::hmac;
use serde::Deserialize;
use sha2::{Digest, Sha256};
use wasmtime::Engine;
use wasmtime::component::Component;

/// Tag at the start of every cache file (format version 2: authenticated).
const MAGIC: &[u8; 8] = b"QVRCWSM2";
const HEADER: usize = MAGIC.len() + 32;
/// The key file in the cache folder.
const KEY_FILE: &str = "key";

/// How a component was obtained.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// Loaded from a valid cache entry.
    CacheHit,
    /// Compiled (and stored, if a cache directory is set).
    Compiled,
    /// Initialised by running its init export (see the runtime's
    /// `preinit`), then compiled and stored.
    Initialized,
}

/// `[cache]`: compiled components shared between hosts (replicas).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CacheSettings {
    /// A folder of compiled components other hosts wrote (a volume mounted
    /// read-only), read when `cache_dir` has no entry, never written.
    /// Needs `key_file`.
    pub shared: Option<PathBuf>,
    /// A file holding the key entries are signed with, as 64 hex digits
    /// (a mounted Secret), instead of the `key` file in `cache_dir`: the
    /// hosts that share compiled components share this key.
    pub key_file: Option<PathBuf>,
}

impl CacheSettings {
    /// What is wrong with these settings, if anything.
    pub fn problem(&self) -> Option<&'static str> {
        (self.shared.is_some() && self.key_file.is_none())
            .then_some("`shared` needs `key_file`: the key the shared entries were signed with")
    }
}

/// Where compiled components are kept between runs.
#[derive(Debug, Clone)]
pub struct ArtifactCache {
    dir: Option<PathBuf>,
    /// A read-only folder of entries other hosts wrote with `key`.
    shared: Option<PathBuf>,
    engine_key: String,
    key: Option<hmac::Key>,
}

impl ArtifactCache {
    /// A cache in `dir` (created 0700 with its key if need be, unless
    /// `settings` give the key), reading `settings.shared` too, or no cache
    /// at all. Fails, saying why and what to do, when the folder is not
    /// safe to load native code from, or the key cannot be read.
    pub fn new(engine: &Engine, dir: Option<PathBuf>, settings: &CacheSettings) -> Result<Self, String> {
        let mut hasher = Sha256Hasher(Sha256::new());
        engine.precompile_compatibility_hash().hash(&mut hasher);
        let engine_key = hex::encode(&hasher.0.finalize()[..8]);
        if let Some(problem) = settings.problem() {
            return Err(problem.into());
        }
        let given = settings.key_file.as_deref().map(read_key_file).transpose()?;
        let key = match (&dir, given) {
            (Some(dir), given) => Some(open_folder(dir, given)?),
            (None, given) => given,
        };
        if let Some(shared) = &settings.shared
            && !shared.is_dir()
        {
            return Err(format!("the shared compile cache {} is not a folder this host can read", shared.display()));
        }
        Ok(Self { dir, shared: settings.shared.clone(), engine_key, key })
    }

    /// The cache directory, if any.
    pub fn dir(&self) -> Option<&Path> {
        self.dir.as_deref()
    }

    /// The file that holds the artifact of `wasm`.
    pub fn path_for(&self, wasm: &[u8]) -> Option<PathBuf> {
        self.dir.as_ref().map(|d| d.join(self.file_name(wasm)))
    }

    /// The name of the entry of `wasm`, in any folder of entries.
    fn file_name(&self, wasm: &[u8]) -> String {
        format!("{}-{}.cwasm", hex::encode(Sha256::digest(wasm)), self.engine_key)
    }

    /// What an entry's HMAC covers besides the artifact: the component it
    /// was compiled from, and the engine.
    fn binding(&self, wasm: &[u8]) -> Vec<u8> {
        let mut binding = Sha256::digest(wasm).to_vec();
        binding.extend_from_slice(self.engine_key.as_bytes());
        binding
    }

    /// Load the compiled form of `wasm` from the cache, or compile it (and
    /// store it). CPU-bound: call it from a blocking thread.
    pub fn load_or_compile(&self, engine: &Engine, wasm: &[u8]) -> wasmtime::Result<(Component, Source)> {
        match self.load(engine, wasm) {
            Some(component) => Ok((component, Source::CacheHit)),
            None => Ok((self.compile(engine, wasm, wasm)?, Source::Compiled)),
        }
    }

    /// The compiled form of `wasm` from a valid cache entry, if there is
    /// one: in `cache_dir`, else in the shared folder. CPU-bound.
    pub fn load(&self, engine: &Engine, wasm: &[u8]) -> Option<Component> {
        let key = self.key.as_ref()?;
        let (name, binding) = (self.file_name(wasm), self.binding(wasm));
        self.dir.iter().chain(&self.shared).find_map(|dir| read_entry(engine, &dir.join(&name), key, &binding))
    }

    /// Compile `code` and keep it as the compiled form of `wasm`: the same
    /// bytes, or the ones `code` was made from by running their
    /// initialisation (a pre-initialised plugin is known by its own bytes).
    /// CPU-bound.
    pub fn compile(&self, engine: &Engine, wasm: &[u8], code: &[u8]) -> wasmtime::Result<Component> {
        let (Some(path), Some(key)) = (self.path_for(wasm), &self.key) else {
            return Component::new(engine, code);
        };
        let artifact = engine.precompile_component(code)?;
        if let Err(e) = write_entry(&path, key, &self.binding(wasm), &artifact) {
            tracing::warn!(path = %path.display(), error = %e, "cannot write the compile cache; continuing without it");
        }
        deserialize(engine, &artifact)
    }
}

impl ArtifactCache {
    /// Store `component` as the compiled form of `wasm`, bytes that differ
    /// from the ones it was compiled from only in custom sections (what
    /// `quiver package` adds), so the packaged file is never compiled.
    pub fn store(&self, wasm: &[u8], component: &Component) -> wasmtime::Result<()> {
        let (Some(path), Some(key)) = (self.path_for(wasm), &self.key) else { return Ok(()) };
        let artifact = component.serialize()?;
        write_entry(&path, key, &self.binding(wasm), &artifact)?;
        Ok(())
    }
}

/// The key in the file at `path`: 64 hex digits, surrounding white space
/// aside (what `openssl rand -hex 32` prints). The error never shows what
/// the file holds.
fn read_key_file(path: &Path) -> Result<hmac::Key, String> {
    let shown = path.display();
    let meta = std::fs::metadata(path).map_err(|e| format!("the compile-cache key file {shown}: {e}"))?;
    if !meta.is_file() || meta.len() > 1024 {
        return Err(format!("the compile-cache key file {shown} is not a file of 64 hex digits"));
    }
    let text = zeroize::Zeroizing::new(
        std::fs::read_to_string(path).map_err(|e| format!("the compile-cache key file {shown}: {e}"))?,
    );
    let key = zeroize::Zeroizing::new(hex::decode(text.trim()).unwrap_or_default());
    if key.len() != 32 {
        return Err(format!(
            "the compile-cache key file {shown} does not hold 64 hex digits (make one with `openssl rand -hex 32`)"
        ));
    }
    Ok(hmac::Key::new(hmac::HMAC_SHA256, &key))
}

/// Create or check the cache folder, and read (or create) its key unless
/// `given` is the key.
fn open_folder(dir: &Path, given: Option<hmac::Key>) -> Result<hmac::Key, String> {
    let shown = dir.display();
    let fix = "give a folder of your own (--cache-dir, `cache_dir`), or run without one (--no-cache)";
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(|e| format!("the compile cache {shown}: {e}"))?;
    let meta = std::fs::metadata(dir).map_err(|e| format!("the compile cache {shown}: {e}"))?;
    let me = rustix::process::geteuid().as_raw();
    if meta.uid() != me {
        return Err(format!(
            "the compile cache {shown} is owned by uid {}, not by this user (uid {me}); {fix}",
            meta.uid()
        ));
    }
    if meta.mode() & 0o022 != 0 {
        return Err(format!(
            "the compile cache {shown} is writable by other users (mode {:o}); remove it or `chmod 700` it after \
             checking its contents, or {fix}",
            meta.mode() & 0o777
        ));
    }
    if meta.mode() & 0o077 != 0 {
        // Ours, readable by others (an older Quiver made it 0755): tighten.
        let _ = std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700));
    }
    if let Some(key) = given {
        return Ok(key);
    }
    let path = dir.join(KEY_FILE);
    let key = match std::fs::read(&path) {
        Ok(bytes) if bytes.len() == 32 => bytes,
        Ok(_) => return Err(format!("{}: not a Quiver cache key; delete it (the cache is rebuilt)", path.display())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => new_key(&path)?,
        Err(e) => return Err(format!("{}: {e}", path.display())),
    };
    Ok(hmac::Key::new(hmac::HMAC_SHA256, &key))
}

/// A fresh random key, written 0600 (never over an existing file).
fn new_key(path: &Path) -> Result<Vec<u8>, String> {
    let mut key = vec![0u8; 32];
    ring::rand::SecureRandom::fill(&ring::rand::SystemRandom::new(), &mut key)
        .map_err(|_| "no randomness for the compile-cache key".to_owned())?;
    let written = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .and_then(|mut file| file.write_all(&key).and_then(|()| file.sync_all()));
    match written {
        Ok(()) => Ok(key),
        // Another process made it first: use theirs.
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))
        }
        Err(e) => Err(format!("{}: {e}", path.display())),
    }
}

/// What an entry's HMAC signs: the binding and the artifact's SHA-256 (a
/// short message, so checking an entry never copies the artifact).
fn signed(binding: &[u8], artifact: &[u8]) -> Vec<u8> {
    let mut message = binding.to_vec();
    message.extend_from_slice(&Sha256::digest(artifact));
    message
}

fn read_entry(engine: &Engine, path: &Path, key: &hmac::Key, binding: &[u8]) -> Option<Component> {
    let bytes = std::fs::read(path).ok()?;
    let valid = bytes.len() > HEADER
        && bytes.starts_with(MAGIC)
        && hmac::verify(key, &signed(binding, &bytes[HEADER..]), &bytes[MAGIC.len()..HEADER]).is_ok();
    if !valid {
        tracing::warn!(path = %path.display(), "compile-cache entry not made here for this component; recompiling");
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
    // a cache file whose HMAC (keyed with this installation's secret key, in
    // a folder only this user can write) binds it to this very component and
    // engine. Plugins have no access to the cache directory. wasmtime itself
    // rejects artifacts of another version or configuration.
    unsafe { Component::deserialize(engine, artifact) }
}

fn write_entry(path: &Path, key: &hmac::Key, binding: &[u8], artifact: &[u8]) -> std::io::Result<()> {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let dir = path.parent().expect("cache paths have a parent");
    let tmp = dir.join(format!(
        ".{}.{}.{}.tmp",
        path.file_name().unwrap().to_string_lossy(),
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    ));
    let result = (|| {
        let mut file = std::fs::File::create(&tmp)?;
        file.write_all(MAGIC)?;
        file.write_all(hmac::sign(key, &signed(binding, artifact)).as_ref())?;
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
