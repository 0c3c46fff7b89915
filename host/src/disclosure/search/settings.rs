//! The `[search]` table: which ranking search uses, and with which model.
//!
//! ```toml
//! [search]
//! ranker = "hybrid"        # default; "bm25" ranks with BM25 alone
//! model = "models/custom"  # a folder with table.safetensors + tokenizer.json
//! rerank_model = "target/minilm"  # the quality mode: all-MiniLM-L6-v2 re-ranks
//! ```
//!
//! `hybrid` uses the model built into the binary unless `model` names
//! another. It is loaded by the first search (or the first turn ranked by
//! the `rank` selector), never at start-up. When there is none (a build
//! without the `bundled-model` feature) or it cannot be read, search ranks
//! with BM25 and says so in one log line, never an error: search still
//! works, only less well.
//!
//! `rerank_model` turns on the quality mode ([`super::rerank`]): a folder
//! holding all-MiniLM-L6-v2 (`models/minilm/fetch.sh` fetches it), in a
//! build with the `minilm` feature. Both are checked when the file is read
//! (a missing file or feature is a configuration error that says how to
//! get it); the weights are loaded by the first search.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::Deserialize;

use super::analyzer::{Analyzer, LoadModel, LoadReranker};
use super::model::StaticModel;
use super::rerank::Reranker;

/// The `[search]` table of the config file.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SearchSettings {
    /// `hybrid` (default) or `bm25`.
    #[serde(default)]
    pub ranker: RankerChoice,
    /// A folder holding another static model (`table.safetensors`,
    /// `tokenizer.json`), relative to the config file.
    pub model: Option<PathBuf>,
    /// A folder holding all-MiniLM-L6-v2 (`model.safetensors`,
    /// `tokenizer.json`, `config.json`), relative to the config file: the
    /// transformer re-ranks each search's first hits.
    pub rerank_model: Option<PathBuf>,
}

/// The ranking asked for.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RankerChoice {
    /// BM25 fused with the semantic arm, when a model is there.
    #[default]
    Hybrid,
    /// BM25 alone.
    Bm25,
}

impl SearchSettings {
    /// The analyzer these settings ask for, keeping what it computes under
    /// `cache_dir`: with the model, or BM25 alone when asked for or when
    /// there is no model to use (logged once). The model is loaded by the
    /// first search, never at start-up.
    pub fn analyzer(&self, cache_dir: Option<&Path>) -> Arc<Analyzer> {
        let load = (self.ranker == RankerChoice::Hybrid).then(|| {
            let dir = self.model.clone();
            Box::new(move || load_model(dir.as_deref())) as LoadModel
        });
        let analyzer = Analyzer::lazy(load, cache_dir);
        let Some(dir) = self.rerank_model.clone() else { return Arc::new(analyzer) };
        let cache_dir = cache_dir.map(Path::to_owned);
        let load = Box::new(move || match Reranker::load(&dir, cache_dir.as_deref()) {
            Ok(reranker) => Some(Arc::new(reranker)),
            Err(error) => {
                tracing::warn!(%error, "search runs without its re-ranker");
                None
            }
        }) as LoadReranker;
        Arc::new(analyzer.with_reranker(load))
    }

    /// What serde cannot check: a re-ranker's folder holds a model this
    /// build can run.
    pub fn validate(&self) -> Result<(), String> {
        self.rerank_model.as_deref().map_or(Ok(()), super::rerank::check)
    }
}

/// The model in `dir`, else the bundled one; `None` (logged) when there is
/// none to use.
fn load_model(dir: Option<&Path>) -> Option<Arc<StaticModel>> {
    let model = match dir {
        Some(dir) => StaticModel::from_dir(dir).map(Arc::new).map_err(|error| error.to_string()),
        None => StaticModel::bundled().ok_or_else(|| "this build has no bundled model".to_owned()),
    };
    match model {
        Ok(model) => Some(model),
        Err(error) => {
            tracing::warn!(%error, "search ranks with BM25 alone: no embedding model");
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_model_is_loaded_by_the_first_search_not_before() {
        let analyzer = SearchSettings::default().analyzer(None);
        assert!(!analyzer.model_loaded(), "made with its model already loaded");
        let terms = analyzer.terms(&["get forecast".to_owned()]);
        assert_eq!(terms.len(), 1);
        assert!(!analyzer.model_loaded(), "BM25's terms loaded the model");
        let vectors = analyzer.vectors(&["get forecast".to_owned()]);
        assert!(analyzer.model_loaded());
        assert_eq!(vectors.is_some(), cfg!(feature = "bundled-model"));

        let bm25 = SearchSettings { ranker: RankerChoice::Bm25, ..SearchSettings::default() }.analyzer(None);
        assert!(bm25.vectors(&["get forecast".to_owned()]).is_none());
        assert_eq!(bm25.ranker(), super::super::Ranker::Bm25);
    }
}
