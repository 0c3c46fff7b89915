//! Tool embeddings, computed once per text and kept on disk.
//!
//! A vector is keyed by its model (the file's name) and the SHA-256 of the
//! text it embeds, so a reload re-embeds only the tools whose text changed,
//! and a restarted host reads the rest back. The file
//! (`<cache_dir>/embeddings/<model>.bin`) is a header and fixed-size
//! records, appended to; a torn last record is ignored, and the file is
//! rewritten with only the live vectors when stale ones outnumber them.

use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use sha2::{Digest, Sha256};

use super::model::StaticModel;

type Key = [u8; 32];

/// Embeds texts with one model, remembering every vector it made.
pub struct Embedder {
    model: Arc<StaticModel>,
    memory: Mutex<HashMap<Key, Arc<[f32]>>>,
    file: Option<PathBuf>,
    loaded: OnceLock<()>,
    embedded: std::sync::atomic::AtomicUsize,
}

impl std::fmt::Debug for Embedder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Embedder").field("model", &self.model.id()).field("file", &self.file).finish()
    }
}

const MAGIC: &[u8; 8] = b"QVEC\x01\0\0\0";

/// Stale vectors allowed on disk, as a multiple of live ones, before the
/// file is rewritten.
const STALE_FACTOR: usize = 4;

impl Embedder {
    /// An embedder for `model`, caching under `cache_dir` when given.
    pub fn new(model: Arc<StaticModel>, cache_dir: Option<&Path>) -> Embedder {
        let file = cache_dir.map(|dir| dir.join("embeddings").join(format!("{}.bin", model.id())));
        Embedder { model, memory: Mutex::default(), file, loaded: OnceLock::new(), embedded: Default::default() }
    }

    /// The model it embeds with.
    pub fn model(&self) -> &StaticModel {
        &self.model
    }

    /// How many texts it has embedded (not found in memory or on disk).
    pub fn embedded(&self) -> usize {
        self.embedded.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// The vectors of `texts`, in order: remembered ones as they are, the
    /// others embedded now (and written to the cache file).
    pub fn embed_all(&self, texts: &[String]) -> Vec<Arc<[f32]>> {
        self.loaded.get_or_init(|| self.load());
        let keys: Vec<Key> = texts.iter().map(|t| Sha256::digest(t.as_bytes()).into()).collect();
        let known: Vec<Option<Arc<[f32]>>> = {
            let memory = self.memory.lock().unwrap_or_else(PoisonError::into_inner);
            keys.iter().map(|k| memory.get(k).cloned()).collect()
        };
        let mut fresh: Vec<(Key, Arc<[f32]>)> = Vec::new();
        let vectors: Vec<Arc<[f32]>> = known
            .into_iter()
            .zip(keys.iter().zip(texts))
            .map(|(known, (key, text))| {
                known.unwrap_or_else(|| {
                    let vector: Arc<[f32]> = self.model.embed(text).into();
                    fresh.push((*key, vector.clone()));
                    vector
                })
            })
            .collect();
        if !fresh.is_empty() {
            self.embedded.fetch_add(fresh.len(), std::sync::atomic::Ordering::Relaxed);
            let total = {
                let mut memory = self.memory.lock().unwrap_or_else(PoisonError::into_inner);
                memory.extend(fresh.iter().cloned());
                memory.len()
            };
            self.save(&fresh, &keys, total);
        }
        vectors
    }

    /// Read the cache file into memory (once; a missing or foreign file is empty).
    fn load(&self) {
        let Some(path) = &self.file else { return };
        let Ok(bytes) = std::fs::read(path) else { return };
        let dim = self.model.dim();
        let record = 32 + 4 * dim;
        if bytes.len() < 12
            || &bytes[..8] != MAGIC
            || u32::from_le_bytes(bytes[8..12].try_into().unwrap()) as usize != dim
        {
            tracing::debug!(path = %path.display(), "ignoring an embeddings cache of another format");
            return;
        }
        let mut memory = self.memory.lock().unwrap_or_else(PoisonError::into_inner);
        for chunk in bytes[12..].chunks_exact(record) {
            let key: Key = chunk[..32].try_into().unwrap();
            let vector: Arc<[f32]> =
                chunk[32..].chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect();
            memory.insert(key, vector);
        }
    }

    /// Append `fresh` to the cache file, or rewrite it with the vectors of
    /// `live` when the file holds mostly stale ones. Failures only cost
    /// speed, so they are logged, never returned.
    fn save(&self, fresh: &[(Key, Arc<[f32]>)], live: &[Key], total: usize) {
        let Some(path) = &self.file else { return };
        let result = if total > STALE_FACTOR * live.len().max(1000) {
            let memory = self.memory.lock().unwrap_or_else(PoisonError::into_inner);
            let records: Vec<(Key, Arc<[f32]>)> =
                live.iter().filter_map(|k| memory.get(k).map(|v| (*k, v.clone()))).collect();
            drop(memory);
            self.rewrite(path, &records)
        } else {
            self.append(path, fresh)
        };
        if let Err(error) = result {
            tracing::warn!(path = %path.display(), %error, "cannot write the embeddings cache; tools are embedded again next start");
        }
    }

    fn append(&self, path: &Path, records: &[(Key, Arc<[f32]>)]) -> std::io::Result<()> {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let mut file = std::fs::OpenOptions::new().create(true).append(true).open(path)?;
        let mut buffer = Vec::new();
        if file.metadata()?.len() == 0 {
            buffer.extend(self.header());
        }
        encode(records, &mut buffer);
        file.write_all(&buffer)
    }

    fn rewrite(&self, path: &Path, records: &[(Key, Arc<[f32]>)]) -> std::io::Result<()> {
        let mut buffer = self.header();
        encode(records, &mut buffer);
        let temp = path.with_extension(format!("tmp{}", std::process::id()));
        std::fs::write(&temp, &buffer)?;
        std::fs::rename(&temp, path)?;
        let live: std::collections::HashSet<&Key> = records.iter().map(|(k, _)| k).collect();
        self.memory.lock().unwrap_or_else(PoisonError::into_inner).retain(|k, _| live.contains(k));
        Ok(())
    }

    fn header(&self) -> Vec<u8> {
        let mut header = MAGIC.to_vec();
        header.extend((self.model.dim() as u32).to_le_bytes());
        header
    }
}

fn encode(records: &[(Key, Arc<[f32]>)], buffer: &mut Vec<u8>) {
    for (key, vector) in records {
        buffer.extend(key);
        vector.iter().for_each(|x| buffer.extend(x.to_le_bytes()));
    }
}
