//! What each document's text becomes for the two arms: its terms for BM25
//! and, with a model, its vector; each computed once per text and kept
//! (see [`store`](super::store)) in memory and under the cache folder, so a
//! reload redoes only the tools whose text changed and a restarted host
//! reads the rest back.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use super::lexical::{IdentTokenizer, Terms};
use super::model::StaticModel;
use super::rerank::Reranker;
use super::store::TextCache;
pub use super::store::Vector;

/// Which ranking answered a search.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Ranker {
    /// BM25 alone.
    Bm25,
    /// BM25 fused with the semantic arm.
    Hybrid,
    /// Either, its first hits re-ranked by the transformer
    /// ([`Reranker`]).
    Reranked,
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
    /// The re-ranker, loaded on first use like the model.
    reranker: OnceLock<Option<Arc<Reranker>>>,
    load_reranker: Mutex<Option<LoadReranker>>,
}

/// Loads the re-ranker, or says there is none to use.
pub type LoadReranker = Box<dyn FnOnce() -> Option<Arc<Reranker>> + Send>;

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
        Analyzer {
            tokenizer: IdentTokenizer::default(),
            terms,
            semantic,
            load: Mutex::new(load),
            dir,
            reranker: OnceLock::new(),
            load_reranker: Mutex::new(None),
        }
    }

    /// This analyzer with a re-ranker that `load` loads on first use.
    pub fn with_reranker(self, load: LoadReranker) -> Analyzer {
        *self.load_reranker.lock().unwrap_or_else(PoisonError::into_inner) = Some(load);
        self
    }

    /// The re-ranker, if one is configured and loads (loads it).
    pub fn reranker(&self) -> Option<&Arc<Reranker>> {
        self.reranker
            .get_or_init(|| {
                let load = self.load_reranker.lock().unwrap_or_else(PoisonError::into_inner).take();
                load.and_then(|load| load())
            })
            .as_ref()
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
        match (self.reranker(), self.semantic()) {
            (Some(_), _) => Ranker::Reranked,
            (None, Some(_)) => Ranker::Hybrid,
            (None, None) => Ranker::Bm25,
        }
    }

    /// The embedding model, if there is one (loads it).
    pub fn model(&self) -> Option<&StaticModel> {
        self.semantic().map(|(model, _)| &**model)
    }

    /// Whether the re-ranker has been loaded (or found missing) yet.
    pub fn reranker_loaded(&self) -> bool {
        self.reranker.get().is_some()
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
