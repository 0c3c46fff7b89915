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
    /// Held while the file is written: two writers (an index's warm-up
    /// and a query) never interleave their records.
    writing: Mutex<()>,
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
        TextCache {
            memory: Mutex::default(),
            file,
            header,
            loaded: OnceLock::new(),
            computed: AtomicUsize::new(0),
            writing: Mutex::new(()),
        }
    }

    /// How many texts it has computed (found neither in memory nor on disk).
    pub fn computed(&self) -> usize {
        self.computed.load(Ordering::Relaxed)
    }

    /// The records of `texts`, every text still in use, in order:
    /// remembered ones as they are, the others computed now on every core
    /// (and written to the file). Records of other texts are stale: the
    /// file is rewritten without them when they outnumber the live ones.
    pub fn get_all(&self, texts: &[String], compute: impl Fn(&str) -> R + Sync) -> Vec<Arc<R>> {
        self.get(texts, compute, true)
    }

    /// [`get_all`](Self::get_all) for some of the texts in use (a query's
    /// candidates, a step of a warm-up): nothing else is taken for stale.
    pub fn get_some(&self, texts: &[String], compute: impl Fn(&str) -> R + Sync) -> Vec<Arc<R>> {
        self.get(texts, compute, false)
    }

    fn get(&self, texts: &[String], compute: impl Fn(&str) -> R + Sync, all: bool) -> Vec<Arc<R>> {
        self.loaded.get_or_init(|| self.load());
        let keys: Vec<Key> = texts.iter().map(|t| Sha256::digest(t.as_bytes()).into()).collect();
        let mut records: Vec<Option<Arc<R>>> = {
            let memory = self.memory.lock().unwrap_or_else(PoisonError::into_inner);
            keys.iter().map(|k| memory.get(k).cloned()).collect()
        };
        let missing: Vec<usize> = (0..texts.len()).filter(|&i| records[i].is_none()).collect();
        if missing.is_empty() {
            if all {
                let total = self.memory.lock().unwrap_or_else(PoisonError::into_inner).len();
                self.save(&[], Some(&keys), total);
            }
            return records.into_iter().flatten().collect();
        }
        let computed = in_parallel(&missing, |&i| Arc::new(compute(&texts[i])));
        let fresh: Vec<(Key, Arc<R>)> = missing.iter().zip(&computed).map(|(&i, r)| (keys[i], r.clone())).collect();
        for (&i, record) in missing.iter().zip(computed) {
            records[i] = Some(record);
        }
        let total = {
            let mut memory = self.memory.lock().unwrap_or_else(PoisonError::into_inner);
            memory.extend(fresh.iter().cloned());
            memory.len()
        };
        // Counted once in memory: a reader who sees the count sees them.
        self.computed.fetch_add(missing.len(), Ordering::Relaxed);
        self.save(&fresh, all.then_some(keys.as_slice()), total);
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
        drop(memory);
        if !rest.is_empty() {
            // A record torn by a process that stopped mid-write: cut it
            // off, so the next record appended is not read as its end.
            let good = (bytes.len() - rest.len()) as u64;
            let cut = std::fs::OpenOptions::new().write(true).open(path).and_then(|file| file.set_len(good));
            if let Err(error) = cut {
                tracing::warn!(path = %path.display(), %error, "cannot cut a torn record off a search cache");
            }
        }
    }

    /// Append `fresh` to the file, or rewrite it with the records of `live`
    /// (every text in use, when known) when it holds mostly stale ones.
    fn save(&self, fresh: &[(Key, Arc<R>)], live: Option<&[Key]>, total: usize) {
        let Some(path) = &self.file else { return };
        let _writing = self.writing.lock().unwrap_or_else(PoisonError::into_inner);
        let result = if let Some(live) = live.filter(|live| total > STALE_FACTOR * live.len().max(1000)) {
            let memory = self.memory.lock().unwrap_or_else(PoisonError::into_inner);
            let records: Vec<(Key, Arc<R>)> =
                live.iter().filter_map(|k| memory.get(k).map(|r| (*k, r.clone()))).collect();
            drop(memory);
            self.rewrite(path, &records)
        } else if fresh.is_empty() {
            return;
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

#[cfg(test)]
mod tests {
    use super::*;

    impl Record for u32 {
        fn encode(&self, out: &mut Vec<u8>) {
            out.extend(self.to_le_bytes());
        }

        fn decode(bytes: &[u8]) -> Option<u32> {
            Some(u32::from_le_bytes(bytes.try_into().ok()?))
        }
    }

    /// Some of the texts in use (a query's few candidates) are never taken
    /// for every text in use: the thousands kept before stay, in memory and
    /// on disk. All the texts in use drop the stale ones.
    #[test]
    fn a_few_texts_never_prune_the_rest() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("cache.bin");
        let cache = || TextCache::<u32>::new(Some(file.clone()), b"TEST".to_vec());
        let texts = |range: std::ops::Range<u32>| range.map(|i| format!("text {i}")).collect::<Vec<_>>();
        let length = |text: &str| text.len() as u32;
        let first = cache();
        first.get_all(&texts(0..5000), length);
        first.get_some(&texts(5000..5010), length);
        first.get_some(&texts(5010..5020), length);
        assert_eq!(first.memory.lock().unwrap().len(), 5020);
        let second = cache();
        second.get_some(&texts(0..5020), length);
        assert_eq!(second.computed(), 0, "every record was read back");
        second.get_all(&texts(6000..6010), length);
        assert_eq!(second.memory.lock().unwrap().len(), 10, "all texts in use: the rest was stale");
        // All in use and all known: the stale ones go all the same.
        let third = cache();
        third.get_some(&texts(0..5020), length);
        third.get_all(&texts(6000..6010), length);
        assert_eq!((third.computed(), third.memory.lock().unwrap().len()), (5020, 10));
    }

    /// A record torn mid-write is cut off when the file is read, so what is
    /// appended after it reads back whole.
    #[test]
    fn a_torn_record_is_cut_off_before_anything_is_appended() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("cache.bin");
        let cache = || TextCache::<u32>::new(Some(file.clone()), b"TEST".to_vec());
        let length = |text: &str| text.len() as u32;
        cache().get_some(&["one".to_owned(), "three".to_owned()], length);
        let whole = std::fs::metadata(&file).unwrap().len();
        std::fs::OpenOptions::new().write(true).open(&file).unwrap().set_len(whole - 2).unwrap();
        let second = cache();
        second.get_some(&["one".to_owned(), "three".to_owned(), "four".to_owned()], length);
        assert_eq!(second.computed(), 2, "the torn record and the new one");
        let third = cache();
        third.get_some(&["one".to_owned(), "three".to_owned(), "four".to_owned()], length);
        assert_eq!(third.computed(), 0, "everything appended after the cut reads back");
    }
}
