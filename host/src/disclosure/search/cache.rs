//! The search index of the catalog version searched last, shared by every
//! session.

use std::sync::Arc;

use super::analyzer::Analyzer;
use super::index::SearchIndex;
use crate::catalog::Catalog;

/// The search index of the latest catalog version searched, built once
/// per version and shared by every session.
#[derive(Debug)]
pub struct SearchCache {
    analyzer: Arc<Analyzer>,
    latest: std::sync::Mutex<Option<(u64, Arc<SearchIndex>)>>,
}

impl SearchCache {
    /// A cache whose indexes are built with `analyzer`.
    pub fn new(analyzer: Arc<Analyzer>) -> SearchCache {
        SearchCache { analyzer, latest: std::sync::Mutex::default() }
    }

    /// What its indexes are built with.
    pub fn analyzer(&self) -> &Arc<Analyzer> {
        &self.analyzer
    }

    /// The index of `catalog`.
    pub fn index(&self, catalog: &Catalog) -> Arc<SearchIndex> {
        let mut latest = self.latest.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some((version, index)) = latest.as_ref()
            && *version == catalog.version()
        {
            return index.clone();
        }
        let index = Arc::new(SearchIndex::for_catalog(catalog, &self.analyzer));
        *latest = Some((catalog.version(), index.clone()));
        index
    }
}
