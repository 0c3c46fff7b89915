//! What each document's text becomes for the two arms: its terms for BM25
//! and, with a model, its vector; each computed once per text and kept
//! (see [`store`](super::store)) in memory and under the cache folder, so a
//! reload redoes only the tools whose text changed and a restarted host
//! reads the rest back.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use super::lexical::{IdentTokenizer, Terms};
use super::model::StaticModel;
use super::store::{Record, TextCache};

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

/// Which ranking answered a search.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Ranker {
    /// BM25 alone.
    Bm25,
    /// BM25 fused with the semantic arm.
    Hybrid,
}

/// Turns texts into terms and vectors, remembering each.
///
/// The model is loaded on first use, not when the analyzer is made: a host
/// that never searches never parses the tokenizer or touches the table.
pub struct Analyzer {
    tokenizer: IdentTokenizer,
    terms: TextCache<Terms>,
    semantic: OnceLock<Option<Semantic>>,
    /// How to load the model, taken by the first use.
    load: Mutex<Option<LoadModel>>,
    /// Where each model's vectors are kept.
    dir: Option<PathBuf>,
}

/// Loads the model, or says there is none to use.
pub type LoadModel = Box<dyn FnOnce() -> Option<Arc<StaticModel>> + Send>;

/// The model and what it has made of each text.
type Semantic = (Arc<StaticModel>, TextCache<Vector>);

impl std::fmt::Debug for Analyzer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let model = self.semantic.get().map(|s| s.as_ref().map(|(model, _)| model.id()));
        f.debug_struct("Analyzer").field("model", &model).finish()
    }
}

/// Names the terms' format: bump it when the tokenizing changes.
const TERMS_FORMAT: &[u8; 8] = b"QTRM\x02\0\0\0";

/// Names the vectors' format.
const VECTORS_FORMAT: &[u8; 8] = b"QVEC\x02\0\0\0";

impl Analyzer {
    /// An analyzer embedding with `model` (BM25 alone without one),
    /// keeping what it computes under `cache_dir/search` when given.
    pub fn new(model: Option<Arc<StaticModel>>, cache_dir: Option<&Path>) -> Analyzer {
        let load = model.map(|model| Box::new(move || Some(model)) as LoadModel);
        let analyzer = Analyzer::lazy(load, cache_dir);
        // The model is already in memory: nothing is left to load lazily.
        analyzer.semantic();
        analyzer
    }

    /// An analyzer whose model `load` loads on first use (BM25 alone
    /// without `load`, or when it finds none).
    pub fn lazy(load: Option<LoadModel>, cache_dir: Option<&Path>) -> Analyzer {
        let dir = cache_dir.map(|dir| dir.join("search"));
        let terms = TextCache::new(dir.as_ref().map(|d| d.join("terms.bin")), TERMS_FORMAT.to_vec());
        let semantic = OnceLock::new();
        if load.is_none() {
            let _ = semantic.set(None);
        }
        Analyzer { tokenizer: IdentTokenizer::default(), terms, semantic, load: Mutex::new(load), dir }
    }

    fn semantic_of(&self, model: Arc<StaticModel>) -> Semantic {
        let mut header = VECTORS_FORMAT.to_vec();
        header.extend((model.dim() as u32).to_le_bytes());
        let file = self.dir.as_ref().map(|d| d.join(format!("{}.bin", model.id())));
        (model, TextCache::new(file, header))
    }

    /// The model and its vectors, loading the model on first use.
    fn semantic(&self) -> Option<&Semantic> {
        self.semantic
            .get_or_init(|| {
                let load = self.load.lock().unwrap_or_else(PoisonError::into_inner).take();
                load.and_then(|load| load()).map(|model| self.semantic_of(model))
            })
            .as_ref()
    }

    /// BM25 alone, remembering in memory only.
    pub fn bm25() -> Analyzer {
        Analyzer::new(None, None)
    }

    /// Which ranking indexes built with it answer with (loads the model).
    pub fn ranker(&self) -> Ranker {
        if self.semantic().is_some() { Ranker::Hybrid } else { Ranker::Bm25 }
    }

    /// The embedding model, if there is one (loads it).
    pub fn model(&self) -> Option<&StaticModel> {
        self.semantic().map(|(model, _)| &**model)
    }

    /// Whether the model has been loaded (or found missing) yet.
    pub fn model_loaded(&self) -> bool {
        self.semantic.get().is_some()
    }

    /// The terms of each text.
    pub fn terms(&self, texts: &[String]) -> Vec<Arc<Terms>> {
        self.terms.get_all(texts, |text| Terms::of(&self.tokenizer, text))
    }

    /// The vector of each text, when there is a model.
    pub fn vectors(&self, texts: &[String]) -> Option<Vec<Arc<Vector>>> {
        let (model, cache) = self.semantic()?;
        Some(cache.get_all(texts, |text| Vector(model.embed(text).into())))
    }

    /// How many texts it has tokenized and embedded (found neither in
    /// memory nor on disk).
    pub fn computed(&self) -> (usize, usize) {
        let vectors = self.semantic.get().and_then(Option::as_ref).map_or(0, |(_, cache)| cache.computed());
        (self.terms.computed(), vectors)
    }
}
