//! What each text becomes, computed once per text: in memory, and in a
//! file under the cache folder that a restarted host reads back.
//!
//! A record is keyed by the SHA-256 of its text; the file's name says what
//! made it (the model's id, the tokenizer's version), so a reload redoes
//! only the texts that changed. The file is a header and length-prefixed
//! records, appended to; a torn last record is ignored, and the file is
//! rewritten with only the live records when stale ones outnumber them.
//! Failures to read or write it only cost time: they are logged, never
//! returned.

use std::collections::{HashMap, HashSet};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use sha2::{Digest, Sha256};

/// The digest a record is kept under.
pub type Key = [u8; 32];

/// What a text is turned into, and how it is written to disk.
pub trait Record: Send + Sync + Sized {
    /// Append its bytes to `out`.
    fn encode(&self, out: &mut Vec<u8>);
    /// Read it back; `None` for bytes it did not write.
    fn decode(bytes: &[u8]) -> Option<Self>;
}

/// A text's embedding.
#[derive(Debug, Clone, PartialEq)]
pub struct Vector(pub Box<[f32]>);

impl Record for Vector {
    fn encode(&self, out: &mut Vec<u8>) {
        self.0.iter().for_each(|x| out.extend(x.to_le_bytes()));
    }

    fn decode(bytes: &[u8]) -> Option<Vector> {
        bytes
            .len()
            .is_multiple_of(4)
            .then(|| Vector(bytes.chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect()))
    }
}

/// Records by the digest of their text.
pub struct TextCache<R> {
    memory: Mutex<HashMap<Key, Arc<R>>>,
    file: Option<PathBuf>,
    header: Vec<u8>,
    loaded: OnceLock<()>,
    computed: AtomicUsize,
}

impl<R> std::fmt::Debug for TextCache<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TextCache").field("file", &self.file).finish()
    }
}

/// Stale records allowed on disk, as a multiple of live ones, before the
/// file is rewritten.
const STALE_FACTOR: usize = 4;

impl<R: Record> TextCache<R> {
    /// A cache kept in `file` (memory only without one), whose header must
    /// be `header` (a file with another is ignored, then replaced).
    pub fn new(file: Option<PathBuf>, header: Vec<u8>) -> TextCache<R> {
        TextCache { memory: Mutex::default(), file, header, loaded: OnceLock::new(), computed: AtomicUsize::new(0) }
    }

    /// How many texts it has computed (found neither in memory nor on disk).
    pub fn computed(&self) -> usize {
        self.computed.load(Ordering::Relaxed)
    }

    /// The records of `texts`, in order: remembered ones as they are, the
    /// others computed now on every core (and written to the file).
    pub fn get_all(&self, texts: &[String], compute: impl Fn(&str) -> R + Sync) -> Vec<Arc<R>> {
        self.loaded.get_or_init(|| self.load());
        let keys: Vec<Key> = texts.iter().map(|t| Sha256::digest(t.as_bytes()).into()).collect();
        let mut records: Vec<Option<Arc<R>>> = {
            let memory = self.memory.lock().unwrap_or_else(PoisonError::into_inner);
            keys.iter().map(|k| memory.get(k).cloned()).collect()
        };
        let missing: Vec<usize> = (0..texts.len()).filter(|&i| records[i].is_none()).collect();
        if missing.is_empty() {
            return records.into_iter().flatten().collect();
        }
        let computed = in_parallel(&missing, |&i| Arc::new(compute(&texts[i])));
        self.computed.fetch_add(missing.len(), Ordering::Relaxed);
        let fresh: Vec<(Key, Arc<R>)> = missing.iter().zip(&computed).map(|(&i, r)| (keys[i], r.clone())).collect();
        for (&i, record) in missing.iter().zip(computed) {
            records[i] = Some(record);
        }
        let total = {
            let mut memory = self.memory.lock().unwrap_or_else(PoisonError::into_inner);
            memory.extend(fresh.iter().cloned());
            memory.len()
        };
        self.save(&fresh, &keys, total);
        records.into_iter().flatten().collect()
    }

    /// Read the file into memory (once; a missing or foreign file is empty).
    fn load(&self) {
        let Some(path) = &self.file else { return };
        let Ok(bytes) = std::fs::read(path) else { return };
        let Some(mut rest) = bytes.strip_prefix(self.header.as_slice()) else {
            tracing::debug!(path = %path.display(), "ignoring a search cache of another format");
            return;
        };
        let mut memory = self.memory.lock().unwrap_or_else(PoisonError::into_inner);
        while rest.len() >= 36 {
            let length = u32::from_le_bytes(rest[32..36].try_into().unwrap()) as usize;
            let Some(payload) = rest.get(36..36 + length) else { break };
            let key: Key = rest[..32].try_into().unwrap();
            if let Some(record) = R::decode(payload) {
                memory.insert(key, Arc::new(record));
            }
            rest = &rest[36 + length..];
        }
    }

    /// Append `fresh` to the file, or rewrite it with the records of `live`
    /// when it holds mostly stale ones.
    fn save(&self, fresh: &[(Key, Arc<R>)], live: &[Key], total: usize) {
        let Some(path) = &self.file else { return };
        let result = if total > STALE_FACTOR * live.len().max(1000) {
            let memory = self.memory.lock().unwrap_or_else(PoisonError::into_inner);
            let records: Vec<(Key, Arc<R>)> =
                live.iter().filter_map(|k| memory.get(k).map(|r| (*k, r.clone()))).collect();
            drop(memory);
            self.rewrite(path, &records)
        } else {
            self.append(path, fresh)
        };
        if let Err(error) = result {
            tracing::warn!(path = %path.display(), %error, "cannot write a search cache; its texts are redone next start");
        }
    }

    fn append(&self, path: &Path, records: &[(Key, Arc<R>)]) -> std::io::Result<()> {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let mut file = std::fs::OpenOptions::new().create(true).append(true).open(path)?;
        let mut buffer = Vec::new();
        if file.metadata()?.len() == 0 {
            buffer.extend(&self.header);
        }
        encode(records, &mut buffer);
        file.write_all(&buffer)
    }

    fn rewrite(&self, path: &Path, records: &[(Key, Arc<R>)]) -> std::io::Result<()> {
        let mut buffer = self.header.clone();
        encode(records, &mut buffer);
        let temp = path.with_extension(format!("tmp{}", std::process::id()));
        std::fs::write(&temp, &buffer)?;
        std::fs::rename(&temp, path)?;
        let live: HashSet<&Key> = records.iter().map(|(k, _)| k).collect();
        self.memory.lock().unwrap_or_else(PoisonError::into_inner).retain(|k, _| live.contains(k));
        Ok(())
    }
}

fn encode<R: Record>(records: &[(Key, Arc<R>)], buffer: &mut Vec<u8>) {
    for (key, record) in records {
        buffer.extend(key);
        let at = buffer.len();
        buffer.extend([0; 4]);
        record.encode(buffer);
        let length = (buffer.len() - at - 4) as u32;
        buffer[at..at + 4].copy_from_slice(&length.to_le_bytes());
    }
}

/// `f` of each item, in order, spread over the machine's cores.
pub fn in_parallel<T: Sync, U: Send>(items: &[T], f: impl Fn(&T) -> U + Sync) -> Vec<U> {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).min(8);
    if threads == 1 || items.len() < 256 {
        return items.iter().map(f).collect();
    }
    let f = &f;
    std::thread::scope(|scope| {
        let parts: Vec<_> = items
            .chunks(items.len().div_ceil(threads))
            .map(|part| scope.spawn(move || part.iter().map(f).collect::<Vec<U>>()))
            .collect();
        parts.into_iter().flat_map(|part| part.join().expect("computing a record does not panic")).collect()
    })
}
