//! The index one search runs over: each tool's and skill's text for BM25
//! and, with a model, its vector; and the two arms fused.

use std::collections::HashMap;
use std::sync::Arc;

use crate::catalog::{Catalog, Category, ToolRecord};

use super::analyzer::{Analyzer, Ranker};
use super::document::{Document, Entry};
use super::fuse;
use super::lexical::Lexical;
use super::rerank::{Reranker, Warming};

/// What ranks a search.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arm {
    /// BM25 alone.
    Lexical,
    /// The embedding's cosine similarity alone.
    Semantic,
    /// Both, fused.
    Fused,
    /// Both, fused, the semantic query first moved toward BM25's best
    /// hits (pseudo-relevance feedback, see [`fuse::feedback`]): the
    /// default without a re-ranker.
    Feedback,
    /// [`Feedback`](Arm::Feedback), its first hits re-ranked by the
    /// transformer ([`super::rerank`]): the default with one.
    Reranked,
}

/// A ranking, BM25's list and the semantic arm's (when one ran), each
/// best first.
type Ranked = (Vec<(u32, f32)>, Vec<(u32, f32)>, Option<Vec<(u32, f32)>>);

/// One hit of [`SearchIndex::explain`].
#[derive(Debug, Clone, serde::Serialize)]
pub struct Explained {
    /// The tool's, skill's or resource's name.
    pub name: String,
    /// Its category.
    pub category: Category,
    /// Its one line.
    pub summary: String,
    /// Its score in the fused ranking (BM25's without a model).
    pub score: f32,
    /// Its rank (from 1) in BM25's list, if it is in it.
    pub lexical_rank: Option<usize>,
    /// Its rank in the semantic arm's list, if one ran and it is in it.
    pub semantic_rank: Option<usize>,
}

/// An index over tools (and skills) for one or both arms.
pub struct SearchIndex {
    entries: Vec<Entry>,
    lexical: Lexical,
    semantic: Option<Semantic>,
    /// The entries of each [`kin`](Entry::kin) that has more than one, in
    /// order.
    kin: HashMap<u64, Vec<u32>>,
    /// The re-ranker and each entry's text for it, when configured.
    rerank: Option<Rerank>,
}

/// The re-ranker, each entry's text for it (the semantic arm's), and the
/// warm-up embedding them in the background while the index lives.
struct Rerank {
    reranker: Arc<Reranker>,
    texts: Arc<Vec<String>>,
    /// A catalog's index only: an index a turn makes of a few tools
    /// embeds what its queries need, no more.
    warming: Option<Warming>,
}

/// One hit of [`SearchIndex::search_collapsed`]: the best-ranked of a set
/// of equivalent entries, and the others.
#[derive(Debug, Clone)]
pub struct Collapsed<'a> {
    /// The best-ranked.
    pub entry: &'a Entry,
    /// Its score.
    pub score: f32,
    /// The equivalent entries that pass the filter, in catalog order.
    pub equivalents: Vec<&'a Entry>,
}

/// The semantic arm: the analyzer (for its model) and each entry's
/// vector, row after row in one matrix (scanned whole per query).
struct Semantic {
    analyzer: Arc<Analyzer>,
    matrix: Vec<f32>,
}

impl std::fmt::Debug for SearchIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SearchIndex").field("entries", &self.entries.len()).field("ranker", &self.ranker()).finish()
    }
}

impl SearchIndex {
    /// Index `documents` with what `analyzer` makes of them: for both arms
    /// when it has a model.
    pub fn new(documents: Vec<Document>, analyzer: &Arc<Analyzer>) -> SearchIndex {
        let texts: Vec<String> = documents.iter().map(|d| d.semantic.clone()).collect();
        let semantic = analyzer.vectors(&texts).map(|vectors| Semantic {
            analyzer: analyzer.clone(),
            matrix: vectors.iter().flat_map(|v| v.0.iter().copied()).collect(),
        });
        let rerank = analyzer.reranker().map(|reranker| Rerank {
            reranker: reranker.clone(),
            texts: Arc::new(texts),
            warming: None,
        });
        let (entries, texts): (Vec<Entry>, Vec<String>) = documents.into_iter().map(|d| (d.entry, d.lexical)).unzip();
        let mut kin: HashMap<u64, Vec<u32>> = HashMap::new();
        for (id, entry) in entries.iter().enumerate() {
            kin.entry(entry.kin).or_default().push(id as u32);
        }
        kin.retain(|_, ids| ids.len() > 1);
        SearchIndex { entries, lexical: Lexical::new(&analyzer.terms(&texts)), semantic, kin, rerank }
    }

    /// Index every tool, skill and resource of `catalog`. Plugins are
    /// indexed by their stubs only (name, summary), so the index does not
    /// depend on which plugins happen to be loaded; MCP tools with their
    /// full descriptions and parameters; resources by what is known of them
    /// without connecting to anything ([`super::resources`]).
    pub fn for_catalog(catalog: &Catalog, analyzer: &Arc<Analyzer>) -> SearchIndex {
        let mut documents: Vec<Document> = catalog
            .tools()
            .iter()
            .map(|entry| match catalog.record(entry).filter(|_| entry.category == Category::Mcp) {
                Some(record) => Document::of_record(&record),
                None => Document::of_entry(entry),
            })
            .collect();
        documents.extend(catalog.skills().map(Document::of_skill));
        documents.extend(super::resources::documents(catalog));
        let mut index = SearchIndex::new(documents, analyzer);
        // The catalog's texts are the ones in use: embedded in the
        // background while the index serves.
        if let Some(rerank) = &mut index.rerank {
            rerank.warming = Some(rerank.reranker.warm(rerank.texts.clone()));
        }
        index
    }

    /// Index tool records only.
    pub fn for_records(records: &[ToolRecord], analyzer: &Arc<Analyzer>) -> SearchIndex {
        SearchIndex::new(records.iter().map(Document::of_record).collect(), analyzer)
    }

    /// Embed every entry's text for the re-ranker now, on every core
    /// (benchmarks measure queries once it is done; a host warms in the
    /// background). Nothing without a re-ranker.
    pub fn warm_now(&self) {
        if let Some(rerank) = &self.rerank {
            rerank.reranker.vectors(&rerank.texts);
        }
    }

    /// Which ranking this index answers with.
    pub fn ranker(&self) -> Ranker {
        match (&self.rerank, &self.semantic) {
            (Some(_), _) => Ranker::Reranked,
            (None, Some(_)) => Ranker::Hybrid,
            (None, None) => Ranker::Bm25,
        }
    }

    /// The arm searches answer with: re-ranked when there is a re-ranker.
    fn best(&self) -> Arm {
        if self.rerank.is_some() { Arm::Reranked } else { Arm::Feedback }
    }

    /// The best `limit` entries for `query` that pass `keep`, best first,
    /// with their scores (BM25's, or the fused one). Entries neither sharing
    /// a term with the query nor near it in meaning are left out.
    pub fn search(&self, query: &str, limit: usize, keep: impl Fn(&Entry) -> bool) -> Vec<(&Entry, f32)> {
        self.search_with(self.best(), query, limit, keep)
    }

    /// [`search`](Self::search) with one arm alone, or both fused (for
    /// measuring what each contributes). An index without a model ranks
    /// with BM25 whatever is asked.
    pub fn search_with(
        &self,
        arm: Arm,
        query: &str,
        limit: usize,
        keep: impl Fn(&Entry) -> bool,
    ) -> Vec<(&Entry, f32)> {
        self.hits(self.arms(arm, query, &keep, false).0, limit)
    }

    /// [`search`](Self::search) with equivalent entries (one tool several
    /// servers serve) shown once: the best-ranked, with the others that
    /// pass `keep`, so they do not fill every place.
    pub fn search_collapsed(&self, query: &str, limit: usize, keep: impl Fn(&Entry) -> bool) -> Vec<Collapsed<'_>> {
        let mut seen = std::collections::HashSet::new();
        let mut hits = Vec::with_capacity(limit);
        for (id, score) in self.arms(self.best(), query, &keep, true).0 {
            if hits.len() == limit {
                break;
            }
            let entry = &self.entries[id as usize];
            if !seen.insert(entry.kin) {
                continue;
            }
            let others = self.kin.get(&entry.kin).map(Vec::as_slice).unwrap_or_default();
            let equivalents = others
                .iter()
                .filter(|other| **other != id)
                .map(|other| &self.entries[*other as usize])
                .filter(|other| keep(other))
                .collect();
            hits.push(Collapsed { entry, score, equivalents });
        }
        hits
    }

    /// [`search`](Self::search), each hit with its rank (from 1) in each
    /// arm before they were fused: why a tool wins.
    pub fn explain(&self, query: &str, limit: usize, keep: impl Fn(&Entry) -> bool) -> Vec<Explained> {
        let (ranked, lexical, semantic) = self.arms(self.best(), query, &keep, false);
        let rank_in = |list: &[(u32, f32)], id: u32| list.iter().position(|(i, _)| *i == id).map(|at| at + 1);
        ranked
            .into_iter()
            .take(limit)
            .map(|(id, score)| {
                let entry = &self.entries[id as usize];
                Explained {
                    name: entry.name.clone(),
                    category: entry.category,
                    summary: entry.summary.clone(),
                    score,
                    lexical_rank: rank_in(&lexical, id),
                    semantic_rank: semantic.as_deref().and_then(|list| rank_in(list, id)),
                }
            })
            .collect()
    }

    /// The ranking `arm` gives `query` over the entries that pass `keep`,
    /// with the lists it was made from: BM25's, and the semantic arm's
    /// when one ran. With `collapse`, each arm ranks every set of
    /// equivalent entries once, as its first visible member, before
    /// feedback and fusion: copies neither crowd BM25's top hits that
    /// feedback reads nor push other tools down either list.
    fn arms(&self, arm: Arm, query: &str, keep: &impl Fn(&Entry) -> bool, collapse: bool) -> Ranked {
        let (mut ranked, lexical, semantic) =
            self.fused(if arm == Arm::Reranked { Arm::Feedback } else { arm }, query, keep, collapse);
        if let (Arm::Reranked, Some(rerank)) = (arm, &self.rerank) {
            rerank.reranker.rerank(query, &mut ranked, |id| rerank.texts[id as usize].as_str());
        }
        (ranked, lexical, semantic)
    }

    /// [`arms`](Self::arms) before any re-ranking.
    fn fused(&self, arm: Arm, query: &str, keep: &impl Fn(&Entry) -> bool, collapse: bool) -> Ranked {
        let visible = |id: &u32| keep(&self.entries[*id as usize]);
        let once = |list: Vec<(u32, f32)>| if collapse { self.once_each(list, &visible) } else { list };
        let lexical = || once(self.lexical.rank(query).into_iter().filter(|(id, _)| visible(id)).collect::<Vec<_>>());
        match (&self.semantic, arm) {
            (None, _) | (_, Arm::Lexical) => {
                let lexical = lexical();
                (lexical.clone(), lexical, None)
            }
            (Some(semantic), arm) => {
                let Some(model) = semantic.analyzer.model() else { return (Vec::new(), Vec::new(), None) };
                let mut query = model.embed(query);
                if arm == Arm::Semantic {
                    let nearest = once(fuse::nearest(&query, &semantic.matrix, fuse::FLOOR, visible));
                    return (nearest.clone(), Vec::new(), Some(nearest));
                }
                let lexical = lexical();
                if arm == Arm::Feedback {
                    fuse::feedback(&mut query, &semantic.matrix, &lexical);
                }
                let nearest = once(fuse::nearest(&query, &semantic.matrix, fuse::FLOOR, visible));
                (fuse::reciprocal_rank(&lexical, &nearest), lexical, Some(nearest))
            }
        }
    }

    /// `list` with each set of equivalent entries once, at its best place,
    /// as the first of them `visible` keeps.
    fn once_each(&self, list: Vec<(u32, f32)>, visible: &impl Fn(&u32) -> bool) -> Vec<(u32, f32)> {
        let mut seen = std::collections::HashSet::new();
        list.into_iter()
            .filter_map(|(id, score)| {
                let kin = self.entries[id as usize].kin;
                let first = self.kin.get(&kin).and_then(|ids| ids.iter().copied().find(|i| visible(i))).unwrap_or(id);
                seen.insert(first).then_some((first, score))
            })
            .collect()
    }

    /// What to offer when nothing passes the relevance cut of
    /// [`search`](Self::search) (no shared term, and nothing near in
    /// meaning): the nearest entries all the same, with a model; without
    /// one, the resources there are (each says how it is reached). The
    /// caller marks them as weak.
    pub fn weak(&self, query: &str, limit: usize, keep: impl Fn(&Entry) -> bool) -> Vec<(&Entry, f32)> {
        let visible = |id: &u32| keep(&self.entries[*id as usize]);
        match self.semantic.as_ref().and_then(|s| Some((s.analyzer.model()?, s))) {
            Some((model, semantic)) => {
                self.hits(fuse::nearest(&model.embed(query), &semantic.matrix, f32::MIN, visible), limit)
            }
            None => {
                let resources = (0..self.entries.len() as u32).filter(|id| self.entries[*id as usize].resource);
                self.hits(resources.filter(visible).map(|id| (id, 0.0)).collect(), limit)
            }
        }
    }

    fn hits(&self, ranked: Vec<(u32, f32)>, limit: usize) -> Vec<(&Entry, f32)> {
        ranked.into_iter().take(limit).map(|(id, score)| (&self.entries[id as usize], score)).collect()
    }

    /// Number of indexed entries.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether nothing is indexed.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(name: &str, description: &str) -> ToolRecord {
        ToolRecord {
            name: name.into(),
            origin: "t".into(),
            action: name.into(),
            summary: description.into(),
            description: description.into(),
            category: Category::Builtin,
            access: crate::contract::Access::Read,
            input_schema: None,
            output_schema: None,
        }
    }

    #[test]
    fn equivalent_tools_take_one_place_but_two_databases_never_do() {
        let mut records = vec![record("a__read_file", "Read a file"), record("b__read_file", "Read a file")];
        for (name, origin) in [("shop__query", "shop"), ("crm__query", "crm")] {
            let mut query = record(name, "Run a read-only SQL query");
            (query.origin, query.action, query.category) = (origin.into(), "query".into(), Category::Database);
            records.push(query);
        }
        for record in &mut records[..2] {
            record.action = "read_file".into();
        }
        let index = SearchIndex::for_records(&records, &Arc::new(Analyzer::bm25()));
        let hits = index.search_collapsed("read a file", 5, |_| true);
        let files: Vec<_> = hits.iter().filter(|h| h.entry.name.ends_with("read_file")).collect();
        assert_eq!(files.len(), 1, "{hits:?}");
        assert_eq!(hits[0].entry.name, "a__read_file");
        assert_eq!(hits[0].equivalents.iter().map(|e| e.name.as_str()).collect::<Vec<_>>(), ["b__read_file"]);
        // The second copy hidden: the first is the only one, naming none.
        let hits = index.search_collapsed("read a file", 5, |e| e.name != "b__read_file");
        assert!(hits[0].equivalents.is_empty());
        // Hidden the first: the second stands for the set.
        let hits = index.search_collapsed("read a file", 5, |e| e.name != "a__read_file");
        assert_eq!(hits[0].entry.name, "b__read_file");
        let hits = index.search_collapsed("sql query", 5, |_| true);
        let queries = hits.iter().filter(|h| h.entry.name.ends_with("__query")).count();
        assert_eq!(queries, 2, "two databases are two places: {hits:?}");
    }

    #[test]
    fn ranks_by_name_and_description() {
        let records = vec![
            record("get_weather_forecast", "Weather forecast for a city"),
            record("send_email", "Send an email message to a recipient"),
            record("convert_currency", "Convert an amount between currencies"),
        ];
        let index = SearchIndex::for_records(&records, &Arc::new(Analyzer::bm25()));
        let hits = index.search("what's the weather in Paris tomorrow", 3, |_| true);
        assert_eq!(hits[0].0.name, "get_weather_forecast");
        let hits = index.search("email my boss", 3, |_| true);
        assert_eq!(hits[0].0.name, "send_email");
        assert!(index.search("zzz qqq", 3, |_| true).is_empty());
        let none = index.search("email", 3, |e| e.name != "send_email");
        assert!(none.iter().all(|(e, _)| e.name != "send_email"));
    }
}
