//! The paraphrase set over the real MCP corpus
//! (`tests/data/retrieval/mcp_paraphrases.jsonl`), for tests and benchmarks:
//! requests in a user's own words, written from the tools' names only (never
//! their descriptions), some in other languages, some needing two or three
//! tools. Each need is met by any of its alternatives (servers overlap: a
//! screenshot is Playwright's, Chrome DevTools' or Puppeteer's).

use std::collections::BTreeSet;

use serde::Deserialize;

/// One request and the tools it needs.
#[derive(Debug, Clone, Deserialize)]
pub struct Paraphrase {
    /// The request.
    pub query: String,
    /// Its language (ISO 639-1).
    pub lang: String,
    /// The tools it needs: for each need, its alternatives (model-facing names).
    pub expected: Vec<Vec<String>>,
    /// It was reported ranked wrong before the set was written.
    #[serde(default)]
    pub known: bool,
}

/// Every row of the set.
pub fn paraphrases() -> Vec<Paraphrase> {
    rows("mcp_paraphrases.jsonl")
}

/// Every row of the everyday set (`everyday.jsonl`): requests in everyday
/// words over the bundled tools and the demo database.
pub fn everyday() -> Vec<Paraphrase> {
    rows("everyday.jsonl")
}

fn rows(file: &str) -> Vec<Paraphrase> {
    let text = std::fs::read_to_string(crate::data("retrieval").join(file)).unwrap();
    text.lines().filter(|l| !l.trim().is_empty()).map(|l| serde_json::from_str(l).unwrap()).collect()
}

/// How well a ranker meets the needs of the set.
#[derive(Debug, Clone, Copy)]
pub struct Scores {
    /// Needs met at rank 1, within 3, 6 and 10.
    pub recall: [f64; 4],
    /// Mean reciprocal rank of each need's first alternative found (within 10).
    pub mrr: f64,
    /// Requests whose every need is met within the top 6.
    pub complete_at_6: f64,
    /// Needs of requests not in English met within the top 6.
    pub other_languages_at_6: f64,
}

/// Score `ranked` (the top 10 names for a query) on `rows`.
pub fn score(rows: &[Paraphrase], mut ranked: impl FnMut(&str) -> Vec<String>) -> Scores {
    score_sets(rows, |query| ranked(query).into_iter().map(|name| BTreeSet::from([name])).collect())
}

/// [`score`] where each place holds several names (a hit and the
/// equivalents it stands for): a need is met where any of them is one of
/// its alternatives.
pub fn score_sets(rows: &[Paraphrase], mut ranked: impl FnMut(&str) -> Vec<BTreeSet<String>>) -> Scores {
    let (mut needs, mut hits, mut rr, mut complete) = (0usize, [0usize; 4], 0.0, 0usize);
    let (mut other, mut other_hits) = (0usize, 0usize);
    for row in rows {
        let places = ranked(&row.query);
        let mut all = true;
        for need in &row.expected {
            let rank = places.iter().position(|names| need.iter().any(|name| names.contains(name)));
            needs += 1;
            for (i, k) in [1, 3, 6, 10].into_iter().enumerate() {
                hits[i] += usize::from(rank.is_some_and(|r| r < k));
            }
            rr += rank.map_or(0.0, |r| 1.0 / (r + 1) as f64);
            all &= rank.is_some_and(|r| r < 6);
            if row.lang != "en" {
                other += 1;
                other_hits += usize::from(rank.is_some_and(|r| r < 6));
            }
        }
        complete += usize::from(all);
    }
    Scores {
        recall: hits.map(|h| h as f64 / needs as f64),
        mrr: rr / needs as f64,
        complete_at_6: complete as f64 / rows.len() as f64,
        other_languages_at_6: other_hits as f64 / other.max(1) as f64,
    }
}

/// One multi-need request of the set split into its needs
/// (`mcp_paraphrases_needs.jsonl`, written before any run): the queries a
/// model would give `search_tools` at once.
#[derive(Debug, Deserialize)]
pub struct Split {
    /// The request, as in the set.
    pub query: String,
    /// One query per need.
    pub needs: Vec<String>,
}

/// Every split of the set's multi-need requests.
pub fn splits() -> Vec<Split> {
    let text = std::fs::read_to_string(crate::data("retrieval").join("mcp_paraphrases_needs.jsonl")).unwrap();
    text.lines().filter(|l| !l.trim().is_empty()).map(|l| serde_json::from_str(l).unwrap()).collect()
}

/// complete@k of the multi-need requests of `rows` asked both ways: as
/// one query (its top `k`), and as its split needs (the top `per_need`
/// of each). A request is complete when every need is met in what it got.
pub fn complete_both_ways(
    rows: &[Paraphrase],
    splits: &[Split],
    k: usize,
    per_need: impl Fn(usize) -> usize,
    mut ranked: impl FnMut(&str) -> Vec<BTreeSet<String>>,
) -> (f64, f64) {
    let (mut whole, mut split, mut asked) = (0usize, 0usize, 0usize);
    for row in rows.iter().filter(|row| row.expected.len() > 1) {
        let needs = &splits
            .iter()
            .find(|s| s.query == row.query)
            .unwrap_or_else(|| panic!("no split of `{}`", row.query))
            .needs;
        let met = |places: &[BTreeSet<String>]| {
            row.expected.iter().all(|need| places.iter().any(|names| need.iter().any(|name| names.contains(name))))
        };
        asked += 1;
        let one: Vec<_> = ranked(&row.query).into_iter().take(k).collect();
        whole += usize::from(met(&one));
        let each = per_need(needs.len());
        let several: Vec<_> = needs.iter().flat_map(|need| ranked(need).into_iter().take(each)).collect();
        split += usize::from(met(&several));
    }
    (whole as f64 / asked as f64, split as f64 / asked as f64)
}
