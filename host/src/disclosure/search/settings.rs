//! The `[search]` table: which ranking search uses, and with which model.
//!
//! ```toml
//! [search]
//! ranker = "hybrid"        # default; "bm25" ranks with BM25 alone
//! model = "models/custom"  # a folder with table.safetensors + tokenizer.json
//! ```
//!
//! `hybrid` uses the model built into the binary unless `model` names
//! another. When there is none (a build without the `bundled-model`
//! feature) or it cannot be read, search ranks with BM25 and says so in one
//! log line, never an error: search still works, only less well.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::Deserialize;

use super::analyzer::Analyzer;
use super::model::StaticModel;

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
    /// there is no model to use (logged once).
    pub fn analyzer(&self, cache_dir: Option<&Path>) -> Arc<Analyzer> {
        Arc::new(Analyzer::new(self.model(), cache_dir))
    }

    fn model(&self) -> Option<Arc<StaticModel>> {
        if self.ranker == RankerChoice::Bm25 {
            return None;
        }
        let model = match &self.model {
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
}
