//! Retrieval quality and prompt cost on real corpora (`tests/data/corpus`):
//! the BFCL queries against their pooled tools, and the token cost of the
//! 950 real MCP tools in each mode.

use quiver::disclosure::search::SearchIndex;
use quiver_tests::bfcl::{bfcl, recall};
use quiver_tests::paraphrases::{paraphrases, score};
use quiver_tests::{TestHost, corpus};

/// Recall@6 measured on `live_multiple.jsonl` pooled, minus a margin; see
/// BENCHMARKS.md for the measured figures. A change that lowers it fails.
const RECALL_AT_6_FLOOR: f64 = 0.89;

#[test]
fn bfcl_live_multiple_pooled_recall_at_6_holds_its_floor() {
    let (queries, tools) = bfcl("live_multiple.jsonl");
    assert!(tools.len() > 900, "{} tools pooled", tools.len());
    let index = SearchIndex::for_records(&tools);
    let ([r1, r3, r6, r10], mrr) = recall(&index, &queries);
    eprintln!("recall@1 {r1:.3} @3 {r3:.3} @6 {r6:.3} @10 {r10:.3} MRR {mrr:.3} over {} queries", queries.len());
    assert!(r6 >= RECALL_AT_6_FLOOR, "recall@6 fell to {r6:.3} (floor {RECALL_AT_6_FLOOR})");
}

#[tokio::test]
async fn progressive_disclosure_saves_99_percent_of_the_mcp_corpus_tokens() {
    let t = TestHost::builder().mcp(corpus("mcp-tools")).build();
    let catalog = t.host.catalog();
    assert_eq!(catalog.mcp_servers().count(), 28);
    assert_eq!(catalog.tools().len(), 950);
    // Every model-facing name is valid for every provider, and unique.
    let names: std::collections::BTreeSet<String> = catalog.tools().iter().map(|r| r.name.clone()).collect();
    assert_eq!(names.len(), 950);
    assert!(names.iter().all(|n| quiver::catalog::names::is_valid(n)));

    let report = t.host.token_report(None).await.unwrap();
    let saved = report.progressive.reduction_from(&report.full);
    eprintln!(
        "full {} -> progressive {} tokens (o200k): {saved:.2}% saved",
        report.full.o200k, report.progressive.o200k
    );
    assert!(saved >= 99.0, "only {saved:.2}% saved");
    assert!(report.full.o200k > 200_000, "the corpus costs {} tokens in full", report.full.o200k);
}

/// Floors of the paraphrase set, measured with BM25 (see BENCHMARKS.md)
/// minus a margin: a change that lowers them fails.
const PARAPHRASE_NEED_RECALL_AT_6_FLOOR: f64 = 0.58;
const PARAPHRASE_COMPLETE_AT_6_FLOOR: f64 = 0.54;

/// The paraphrase set over the 950 real MCP tools (see
/// `quiver_tests::paraphrases`): every expected name exists, there are
/// enough requests in other languages and with several needs, and search
/// holds its floors.
#[tokio::test]
async fn mcp_paraphrases_name_real_tools_and_search_finds_them() {
    let t = TestHost::builder().mcp(corpus("mcp-tools")).build();
    let catalog = t.host.catalog();
    let rows = paraphrases();
    assert!(rows.len() >= 150, "{} queries", rows.len());
    assert!(rows.iter().filter(|r| r.lang != "en").count() >= 15);
    assert!(rows.iter().filter(|r| r.expected.len() > 1).count() >= 20);
    for row in &rows {
        for name in row.expected.iter().flatten() {
            assert!(catalog.tool(name).is_some(), "`{}` expects `{name}`, which is not a tool", row.query);
        }
    }
    let scores = score(&rows, |query| t.host.search(query, 10, None).unwrap().into_iter().map(|hit| hit.0).collect());
    eprintln!("paraphrases: {scores:?}");
    let [_, _, recall6, _] = scores.recall;
    assert!(recall6 >= PARAPHRASE_NEED_RECALL_AT_6_FLOOR, "need recall@6 fell to {recall6:.3}");
    assert!(scores.complete_at_6 >= PARAPHRASE_COMPLETE_AT_6_FLOOR, "complete@6 fell to {:.3}", scores.complete_at_6);
}
